"""Run an experiment: each scenario in a fresh lab network, then metrics,
results files, plots and the report under results/<experiment>/<timestamp>/."""

import dataclasses
import json
import math
import platform
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from aqmlab import __version__, metrics, report
from aqmlab.lab import LabNetwork
from aqmlab.topology import REPO, build
from aqmlab.workloads import Run

SAMPLES_PER_SECOND = 100     # target telemetry rate from the bottleneck port
MTU_BITS = 1500 * 8


class Progress:
    """A tqdm bar over the experiment's traffic seconds (silent when disabled)."""

    def __init__(self, total, enabled):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=round(total), unit="s", desc="aqmlab", leave=True, mininterval=1.0,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s "
                                       "[{elapsed}<{remaining}] {postfix}")
        self.base = 0.0

    def scenario(self, name):
        if self.bar:
            self.bar.set_postfix_str(name)

    def tick(self, elapsed):
        if self.bar:
            self.bar.n = min(self.bar.total, self.base + elapsed)
            self.bar.refresh()

    def done_scenario(self, duration):
        self.base += duration
        self.tick(0)

    def close(self):
        if self.bar:
            self.bar.close()


class TelemetryCollector(threading.Thread):
    """Collects the bottleneck's queue samples, stamped with run-relative time."""

    def __init__(self, controller, epoch):
        super().__init__(daemon=True)
        self.controller, self.epoch = controller, epoch
        self.samples, self.stopped = [], threading.Event()

    def run(self):
        while not self.stopped.is_set():
            sample = self.controller.poll_sample(timeout=0.2)
            if sample is not None:
                self.samples.append({"t": time.time() - self.epoch, "time_us": sample.time_us,
                                     "qdepth": sample.qdepth, "avg": sample.avg,
                                     "decision": sample.decision})

    def stop(self):
        self.stopped.set()
        self.join(timeout=2)


def snapshot(network):
    """Switch counters at the bottleneck and packets the servers sent."""
    counters = network.bottleneck_controller.port_counters(network.r1_bottleneck_port)
    counters["server_tx_packets"] = network.interface_counter(network.servers, "tx_packets")
    counters["time"] = time.time()
    return counters


def bottleneck_stats(before, after, rate_bps):
    """Drop/mark rates and utilisation over the window between two snapshots.

    The pipeline counts RED's drops; buffer-overflow drops happen in the
    traffic manager before it, so they are the arrivals (packets the servers
    sent) minus what the port sent or RED dropped; the error is at most the
    change in queue length between the snapshots."""
    stats = metrics.counter_rates(
        {k: before[k] for k in ("packets", "bytes", "early_marks", "early_drops", "forced_drops")},
        {k: after[k] for k in ("packets", "bytes", "early_marks", "early_drops", "forced_drops")})
    arrivals = after["server_tx_packets"] - before["server_tx_packets"]
    red_drops = stats["early_drops"] + stats["forced_drops"]
    overflow = max(0, arrivals - stats["packets"] - red_drops)
    seconds = after["time"] - before["time"]
    stats.update({
        "arrivals": arrivals, "overflow_drops": overflow,
        "drop_rate": (red_drops + overflow) / arrivals if arrivals else 0.0,
        "mark_rate": stats["early_marks"] / arrivals if arrivals else 0.0,
        "utilisation": metrics.utilisation(stats["bytes"], rate_bps, seconds),
        "seconds": seconds,
    })
    return stats


def run_scenario(experiment, scenario, index, workdir, progress, build_dir):
    """Build the network, run the workloads, measure; -> result dict."""
    progress.scenario(scenario.name)
    seed = experiment.seed + index
    rate = scenario.topology.bottleneck.rate_bps
    with LabNetwork(workdir=workdir) as lab:
        network = build(scenario, experiment.target, lab, build_dir, seed)
        try:
            network.enable_telemetry(max(1, rate // MTU_BITS // SAMPLES_PER_SECOND))
            run = Run(lab, network.pairs, experiment.duration, seed)
            collector = TelemetryCollector(network.bottleneck_controller, run.epoch)
            collector.start()
            snapshots = {}

            def on_tick(elapsed):
                progress.tick(elapsed)
                if elapsed >= experiment.warmup and "start" not in snapshots:
                    snapshots["start"] = snapshot(network)
            run.wait_until_end(on_tick)
            snapshots.setdefault("start", snapshot(network))
            snapshots["end"] = snapshot(network)
            run.finish()
            collector.stop()
            records = run.records()
        finally:
            network.close_controllers()
    progress.done_scenario(experiment.duration)
    window = (run.epoch + experiment.warmup, run.epoch + experiment.duration)
    return {
        "scenario": scenario.name, "epoch": run.epoch, "window": window,
        "bottleneck_buffer": network.bottleneck_buffer,
        "workloads": metrics.workload_summary(records, window,
                                              [w.name for w in scenario.workloads]),
        "seed": seed,
        "goodputs": {f"{w}/{f}": g for (w, f), g in metrics.flow_goodputs(records, window).items()},
        "bottleneck": bottleneck_stats(snapshots["start"], snapshots["end"], rate),
        "queue": metrics.queue_summary(collector.samples),
        "records": records, "samples": collector.samples,
    }


def versions(target):
    info = {"aqmlab": __version__, "python": sys.version.split()[0],
            "kernel": platform.release(), "target": target}
    for package in ("mininet", "p4runtime", "grpcio", "matplotlib"):
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[package] = _mininet_version() if package == "mininet" else "absent"
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    info["git_commit"] = commit or "unknown"
    return info


def _mininet_version():
    from mininet.net import VERSION
    return VERSION


def run_experiment(experiment, source_path, results_root="results", quick=False,
                   build_dir=None, show_progress=True):
    """Run every scenario; write results; -> (results dir, list of results)."""
    if quick:
        experiment = experiment.for_quick()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    outdir = Path(results_root) / experiment.name / stamp
    outdir.mkdir(parents=True, exist_ok=False)
    progress = Progress(experiment.duration * len(experiment.scenarios), show_progress)
    results = []
    try:
        for index, scenario in enumerate(experiment.scenarios):
            workdir = outdir / "scenarios" / scenario.name / "lab"
            results.append(run_scenario(experiment, scenario, index, workdir, progress, build_dir))
    finally:
        progress.close()
    write_results(outdir, experiment, source_path, quick, results)
    return outdir, results


def write_results(outdir, experiment, source_path, quick, results):
    parameters = {
        "experiment": experiment.name, "quick": quick, "seed": experiment.seed,
        "duration": experiment.duration, "warmup": experiment.warmup,
        "target": experiment.target, "versions": versions(experiment.target),
        "scenarios": [dataclasses.asdict(s) for s in experiment.scenarios],
        "scenario_seeds": {r["scenario"]: r["seed"] for r in results},
        "source_file": str(source_path),
    }
    (outdir / "parameters.json").write_text(json.dumps(parameters, indent=2, default=str))
    (outdir / "experiment.toml").write_text(Path(source_path).read_text())
    for result in results:
        report.write_scenario_files(outdir / "scenarios" / result["scenario"], result)
    summary = [{k: v for k, v in r.items() if k not in ("records", "samples")} for r in results]
    (outdir / "summary.json").write_text(json.dumps(_finite(summary), indent=2))
    report.write_summary_csv(outdir / "summary.csv", results)
    report.write_plots(outdir, experiment, results)
    report.write_report(outdir, experiment, parameters, results)


def _finite(value):
    """JSON has no NaN: write null instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
