"""Run a study's runs: each in a fresh lab network, into its own folder
(study.py) with its metrics, files and a complete/failed marker; one after
the other in this process, or `jobs` side by side as `--only` workers."""

import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

from aqmlab import __version__, capture, drops, metrics, report, study
from aqmlab.lab import LabNetwork, LabProcessDied
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


class PhaseClock:
    """Wall seconds of a run's phases in order (result.json `phase_seconds`):
    what a run costs besides its traffic, and where."""

    def __init__(self):
        self.seconds, self.last = {}, time.monotonic()

    def lap(self, phase, until=None):
        """The seconds since the last lap, or up to `until` (a time.time()), are `phase`'s."""
        now = time.monotonic()
        if until is not None:
            now = min(now, max(self.last, now - (time.time() - until)))
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self.last
        self.last = now


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
    """Switch counters at the bottleneck and packets the servers sent; `time`
    is the middle of the reads, the instant the counters stand for (a read can
    take a while on a loaded machine, and drops come in bursts)."""
    before = time.time()
    counters = network.bottleneck_controller.port_counters(network.r1_bottleneck_port)
    counters["server_tx_packets"] = network.interface_counter(network.servers, "tx_packets")
    counters["time"] = (before + time.time()) / 2
    return counters


def bottleneck_stats(before, after, rate_bps, tail_drops=None):
    """Drop/mark rates and utilisation over the window between two snapshots.

    The pipeline counts RED's drops; buffer-overflow drops happen in the
    traffic manager before it. The softswitch records each one (tail_drops:
    their wall-clock times), so they are counted exactly inside the window.
    Otherwise (BMv2) they are estimated as the arrivals (packets the servers
    sent) minus what the port sent or RED dropped, whose error is the change
    in the packets between the servers and the port (queue, socket backlog)
    from one snapshot to the other: tens of packets on a loaded machine."""
    stats = metrics.counter_rates(
        {k: before[k] for k in ("packets", "bytes", "early_marks", "early_drops", "forced_drops")},
        {k: after[k] for k in ("packets", "bytes", "early_marks", "early_drops", "forced_drops")})
    arrivals = after["server_tx_packets"] - before["server_tx_packets"]
    red_drops = stats["early_drops"] + stats["forced_drops"]
    if tail_drops is None:
        overflow = max(0, arrivals - stats["packets"] - red_drops)
    else:
        overflow = sum(1 for t in tail_drops if before["time"] <= t <= after["time"])
    seconds = after["time"] - before["time"]
    stats.update({
        "arrivals": arrivals, "overflow_drops": overflow,
        "overflow_drops_from": "estimate" if tail_drops is None else "tail-drop records",
        "drop_rate": (red_drops + overflow) / arrivals if arrivals else 0.0,
        "mark_rate": stats["early_marks"] / arrivals if arrivals else 0.0,
        "utilisation": metrics.utilisation(stats["bytes"], rate_bps, seconds),
        "seconds": seconds,
    })
    return stats


def run_scenario(experiment, scenario, seed, workdir, progress, build_dir, clock=None):
    """Build the network, run the workloads, measure; -> result dict, its
    phases timed on `clock` (a PhaseClock).

    A switch or traffic server that dies fails the run with a message naming
    it and its log (whatever error its death caused elsewhere)."""
    progress.scenario(scenario.name)
    rate = scenario.topology.bottleneck.rate_bps
    period = max(1, rate // MTU_BITS // SAMPLES_PER_SECOND)
    capture_dir = Path(workdir) / "pcap" if experiment.capture else None
    # the softswitch records its tail drops in every run: they count overflow exactly
    drops_dir = Path(workdir) / "drops" if experiment.target == "softswitch" else None
    clock = clock or PhaseClock()
    with LabNetwork(workdir=workdir) as lab:
        try:
            network = build(scenario, experiment.target, lab, build_dir, seed, capture_dir,
                            drops_dir)
            try:
                network.enable_telemetry(period)
                clock.lap("lab build")
                run = Run(lab, network.pairs, experiment.duration, seed,
                          prime_spacing_s=network.prime_spacing_s())
                clock.lap("servers and priming")
                collector = TelemetryCollector(network.bottleneck_controller, run.epoch)
                collector.start()
                snapshots = {}

                def on_tick(elapsed):
                    lab.check_alive()
                    progress.tick(elapsed)
                    if elapsed >= experiment.warmup and "start" not in snapshots:
                        snapshots["start"] = snapshot(network)
                run.wait_until_end(on_tick, experiment.until_complete)
                clock.lap("clients' start lead", until=run.epoch)
                clock.lap("traffic")
                lab.check_alive()
                snapshots.setdefault("start", snapshot(network))
                snapshots["end"] = snapshot(network)
                run.finish()
                collector.stop()
                records = run.records()
            finally:
                network.close_controllers()
                clock.lap("last records")
        except LabProcessDied:
            raise
        except Exception as error:
            dead = lab.dead_processes(grace_s=2.0)
            if dead:
                raise LabProcessDied(f"{'; '.join(dead)} (then: {_one_line(error)})") from error
            raise
    clock.lap("teardown")
    progress.done_scenario(experiment.duration)
    window = (run.epoch + experiment.warmup, run.ended)
    workloads = metrics.workload_summary(records, window, [w.name for w in scenario.workloads])
    if capture_dir:         # R1 has stopped: its pcaps are complete
        # the counters' window, not the nominal one: a workload's share of the
        # port's drops and marks must add up to the port's counts
        counted = (snapshots["start"]["time"], snapshots["end"]["time"])
        for name, counts in per_workload_packets(network, capture_dir, counted).items():
            workloads[name].update(counts)
    tail_drops, drop_rows = read_tail_drops(network, drops_dir, run.epoch,
                                            experiment.drop_records)
    if drop_rows is not None:     # each transfer's drops, and its workload's per size class
        records = metrics.with_transfer_drops(records, drop_rows, run.epoch)
        for name, by_size in metrics.drop_rate_by_size(records, window).items():
            workloads[name]["drop_rate_by_size"] = by_size
    bottleneck = bottleneck_stats(snapshots["start"], snapshots["end"], rate, tail_drops)
    bottleneck["switch_timing"] = drops.switch_timing(network.r1.log_path,
                                                      network.r1_bottleneck_port)
    return {
        "scenario": scenario.name, "epoch": run.epoch, "window": window,
        "bottleneck_buffer": network.bottleneck_buffer,
        "bottleneck_rate_bps": rate,
        "workloads": workloads,
        "seed": seed,
        "goodputs": {f"{w}/{f}": g for (w, f), g in metrics.flow_goodputs(records, window).items()},
        "flow_stats": {f"{w}/{f}": s for (w, f), s in metrics.flow_tcp_stats(records).items()},
        "bottleneck": bottleneck,
        "queue": metrics.queue_summary(
            [s for s in collector.samples if experiment.warmup <= s["t"]], rate, period,
            red=(scenario.aqm.minth, scenario.aqm.maxth) if scenario.aqm.mode == "red" else None),
        "records": records, "samples": collector.samples,
        "drops": drop_rows,
    }


def read_tail_drops(network, drops_dir, epoch, with_rows):
    """R1's bottleneck tail drops -> (their wall-clock times, drops.csv rows
    if with_rows else None); (None, None) without records. The pcaps go."""
    if not drops_dir:
        return None, None
    pcap = Path(drops_dir) / f"port{network.r1_bottleneck_port}.drops.pcap"
    clients = {pair.client.ip: pair.workload.name for pair in network.pairs}
    try:
        return drops.drop_times(pcap), drops.drop_rows(pcap, epoch, clients) if with_rows else None
    finally:
        shutil.rmtree(drops_dir, ignore_errors=True)


def per_workload_packets(network, capture_dir, window):
    """Drops and CE marks of each workload's packets from R1's pcaps (then removed)."""
    clients = {}
    for pair in network.pairs:
        clients.setdefault(pair.workload.name, []).append(pair.client.ip)
    try:
        return capture.workload_packets(capture_dir, [s.switch_port for s in network.servers],
                                        network.r1_bottleneck_port, clients, window)
    finally:
        shutil.rmtree(capture_dir, ignore_errors=True)


def _one_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


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


def run_study(experiment, source_path, out_dir, runs, quick=False, build_dir=None,
              show_progress=True, jobs=1):
    """Run `runs` (from study.expand) of an experiment whose quick form, if
    wanted, is already applied; each into out_dir/<run_id>/ with its marker.
    -> {run_id: None if complete, else the reason it failed}."""
    source_text = Path(source_path).read_text()
    if jobs > 1 and len(runs) > 1:
        return run_workers(source_path, out_dir, runs, quick, build_dir, show_progress, jobs,
                           experiment.duration)
    progress = Progress(experiment.duration * len(runs), show_progress)
    outcome = {}
    INTERRUPTED.clear()
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGINT,
                                                                       signal.SIGTERM)}
    try:
        for run in runs:
            outcome[run.run_id] = run_one(experiment, run, out_dir, source_text, quick,
                                          build_dir, progress)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        progress.close()
    return outcome


def run_one(experiment, run, out_dir, source_text, quick, build_dir, progress):
    """One run into its folder -> None when complete, else why it failed.
    An interrupt marks the folder failed ("interrupted") and propagates."""
    clock = PhaseClock()      # the run's own wall time starts with its folder
    folder = study.start_run_folder(out_dir, run, experiment, source_text, quick)
    try:
        result = run_scenario(experiment, run.scenario, run.seed, folder / "lab", progress,
                              build_dir, clock)
        result.update(run_id=run.run_id, point=run.point, repetition=run.repetition,
                      versions=versions(experiment.target),
                      load_average_at_end=os.getloadavg())
        report.write_run_files(folder, result, run.scenario.aqm)
        clock.lap("run files")
        result["phase_seconds"] = {phase: round(s, 3) for phase, s in clock.seconds.items()}
        (folder / "result.json").write_text(json.dumps(_finite(_summary(result)), indent=2))
        study.mark_complete(folder)
        return None
    except KeyboardInterrupt as interrupt:
        study.mark_failed(folder, f"interrupted ({interrupt or 'SIGINT'})")
        raise
    except Exception as error:     # one run's failure must not lose the study
        if INTERRUPTED.is_set():   # an error the interrupt caused (in a library's handler)
            study.mark_failed(folder, f"interrupted ({_one_line(error)})")
            raise KeyboardInterrupt("interrupted") from error
        reason = str(error).strip() if isinstance(error, RuntimeError) else _one_line(error)
        study.mark_failed(folder, reason)
        print(f"aqmlab: run {run.run_id} ({run.point_name}) failed: {reason}", file=sys.stderr)
        return reason


def _summary(result):
    return {k: v for k, v in result.items() if k not in ("records", "samples", "drops")}


def run_workers(source_path, out_dir, runs, quick, build_dir, show_progress, jobs, duration):
    """`jobs` runs side by side, each an `aqmlab run --only` process (its own
    lab, tag and folder; the same path a cluster executor takes)."""
    base = [sys.executable, "-m", "aqmlab", "run", str(source_path), "--out", str(out_dir),
            "--no-progress"] + (["--quick"] if quick else []) + \
        (["--build-dir", str(build_dir)] if build_dir else [])
    progress = Progress(duration * len(runs), show_progress)
    pending, running, outcome = list(runs), {}, {}
    INTERRUPTED.clear()
    # SIGINT too: a study started in the background inherits it ignored, and Python then
    # installs no handler of its own, so the runs it interrupts would be followed by more
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGINT,
                                                                       signal.SIGTERM)}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                run = pending.pop(0)
                output = tempfile.TemporaryFile()
                running[run.run_id] = (subprocess.Popen(base + ["--only", run.run_id],
                                                        stdout=output, stderr=output), output)
                progress.scenario(f"{len(running)} running")
            time.sleep(0.2)
            for run_id, (proc, output) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[run_id]
                reason = None if study.run_state(Path(out_dir) / run_id) == study.COMPLETE \
                    else study.failure_reason(Path(out_dir) / run_id) or _tail(output)
                if reason:
                    print(f"aqmlab: run {run_id} failed: {reason}", file=sys.stderr)
                outcome[run_id] = reason
                progress.done_scenario(duration)
    except KeyboardInterrupt:
        for proc, _ in running.values():      # they got the terminal's SIGINT too, or not
            proc.send_signal(signal.SIGTERM)  # each marks its run failed and removes its lab
        for proc, _ in running.values():
            proc.wait()
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        progress.close()
    return outcome


INTERRUPTED = threading.Event()


def _raise_interrupt(signum, frame):
    """SIGINT/SIGTERM: stop the study (remembered, so that an error the
    interrupt causes inside a library is not taken for a failed run)."""
    INTERRUPTED.set()
    raise KeyboardInterrupt(f"signal {signum}")


def _tail(output):
    output.seek(0)
    lines = output.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "the worker exited without a result"


def _finite(value):
    """JSON has no NaN: write null instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
