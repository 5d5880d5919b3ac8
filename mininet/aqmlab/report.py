"""Results files: a run's CSVs and plots, and the study report rebuilt from
whatever run folders are complete (summary.csv/json, report.md, plots),
with every metric as mean, sd, n and 95 % interval over repetitions, and
the study's comparisons as per-seed differences."""

import csv
import gzip
import dataclasses
import json
import math
import tomllib
from collections import defaultdict
from pathlib import Path

import matplotlib

from aqmlab import drops, fidelity, metrics, stats, study
from aqmlab.config import parse_experiment

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

TRANSFER_FIELDS = ("workload", "host", "flow", "kind", "transfer", "page", "object", "start",
                   "end", "delay", "bytes", "size", "complete", "connection", "drops",
                   "data_segments")
FLOW_FIELDS = ("flow", "goodput_bps", "retransmits", "data_segments", "rtt_ms", "ece_acked",
               "cwnd", "connections", "dsack_dups", "rto_timeouts")
ALL = "all"   # the workload column of run-wide metrics

# (key, unit, what, per-run statistic) -- the per-run statistic says what one
# run contributes: a median means the study reports the mean of per-run medians.
WORKLOAD_METRICS = (
    ("goodput_mbps", "Mb/s", "aggregate goodput", "total"),
    ("goodput_per_flow_mbps", "Mb/s", "goodput per flow", "mean over flows"),
    ("jain_index", "", "Jain's fairness index", "over flows"),
    ("delay_median_s", "s", "transfer/page delay", "median"),
    ("delay_p90_s", "s", "transfer/page delay", "90th percentile"),
    ("transactions_per_s", "1/s", "transactions per second", "total"),
    ("network_power", "bit/s^2", "goodput / median delay", "median-based"),
    ("retransmits_per_flow", "segments", "retransmitted segments per flow (sender tcp_info)",
     "mean over flows"),
    ("retransmit_ratio", "", "retransmitted / sent data segments (sender tcp_info)", "total"),
    ("rtt_ms", "ms", "smoothed RTT at the end of each connection (sender tcp_info)",
     "mean over connections"),
    ("ece_acked_per_flow", "segments", "segments acknowledged with ECE (sender tcp_info "
     "delivered_ce)", "mean over flows"),
    ("drop_rate", "", "this workload's packets dropped at the bottleneck / entered (pcap)",
     "total"),
    ("mark_rate", "", "this workload's packets CE-marked at the bottleneck / entered (pcap)",
     "total"),
    *((f"drop_rate_{suffix}", "", f"data segments of transfers of {label} the bottleneck's "
       "buffer overflowed (switch drop records) / sent (sender tcp_info)", "total")
      for _, _, label, suffix in metrics.SIZE_BINS),
)
RUN_METRICS = (
    ("goodput_mbps", "Mb/s", "total goodput", "total"),
    ("utilisation", "", "bottleneck utilisation", "total"),
    ("drop_rate", "", "drops / arrivals at the bottleneck", "total"),
    ("mark_rate", "", "CE marks / arrivals at the bottleneck", "total"),
    ("queue_time_avg_pkts", "packets", "time-averaged queue", "time average"),
    ("red_avg_mean_pkts", "packets", "RED average queue", "mean of samples"),
    ("red_region_time", "", "time the RED average spent in [minth, maxth]", "time fraction"),
    ("queue_delay_p50_ms", "ms", "queueing delay of departing packets", "median"),
    ("queue_delay_p90_ms", "ms", "queueing delay of departing packets", "90th percentile"),
    ("queue_delay_p99_ms", "ms", "queueing delay of departing packets", "99th percentile"),
)
# What a comparison is about: the differing parameter's last path component.
COMPARISONS = {"ecn": "ECN vs non-ECN", "initcwnd": "IW {a} vs IW {b}",
               "pacing": "paced vs non-paced", "mode": "RED vs drop-tail"}
COMPARED_RUN_METRICS = ("goodput_mbps", "utilisation", "drop_rate", "queue_time_avg_pkts",
                        "queue_delay_p50_ms")
COMPARED_WORKLOAD_METRICS = ("goodput_per_flow_mbps", "delay_median_s", "retransmits_per_flow",
                             "rtt_ms", "drop_rate", "mark_rate")


def _write_csv(path, fields, rows):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def run_csv_rows(folder, name):
    """The rows of a run's CSV file NAME, or of NAME.gz (a committed study keeps
    its larger per-run files compressed); [] when neither exists."""
    path = Path(folder) / name
    if path.exists():
        handle = path.open(newline="")
    elif path.with_name(name + ".gz").exists():
        handle = gzip.open(path.with_name(name + ".gz"), "rt", newline="")
    else:
        return []
    with handle:
        return list(csv.DictReader(handle))


def _finite(value):
    return isinstance(value, (int, float)) and math.isfinite(value)


# ---------------------------------------------------------------- one run
def write_run_files(folder, result, aqm):
    """transfers.csv, flows.csv, queue.csv and the run's plots."""
    folder = Path(folder)
    epoch = result["epoch"]
    transfers = [{**r, "start": r["start"] - epoch, "end": r["end"] - epoch,
                  "delay": r["end"] - r["start"]} for r in result["records"] if "start" in r]
    _write_csv(folder / "transfers.csv", TRANSFER_FIELDS, transfers)
    flows = result.get("flow_stats", {})
    _write_csv(folder / "flows.csv", FLOW_FIELDS,
               [{"flow": f, "goodput_bps": g, **flows.get(f, {})}
                for f, g in result["goodputs"].items()])
    if result.get("drops") is not None:
        _write_csv(folder / "drops.csv", drops.DROP_FIELDS, result["drops"])
    if result["samples"]:
        _write_csv(folder / "queue.csv", ("t", "time_us", "qdepth", "avg", "decision"),
                   result["samples"])
        plot_queue(folder / "queue.png", result, aqm)
    if any(r["kind"] == "sample" for r in result["records"]):
        plot_flow_goodput(folder / "goodput_time.png", result)


def plot_queue(path, result, aqm):
    """Instantaneous queue (on top, so drop-tail's is never hidden), RED's
    average where RED runs, and the queueing delay scale on the right."""
    samples = result["samples"]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    times = [s["t"] for s in samples]
    if aqm.mode == "red":
        ax.plot(times, [s["avg"] for s in samples], lw=1.2, label="RED average",
                color="tab:red", zorder=2)
        for value, name in ((aqm.minth, "minth"), (aqm.maxth, "maxth")):
            ax.axhline(value, ls="--", lw=0.8, color="black")
            ax.annotate(name, (0, value), fontsize=7)
    ax.plot(times, [s["qdepth"] for s in samples], lw=0.6, label="instantaneous queue",
            color="tab:blue", zorder=3)
    ms_per_packet = 1e3 * 1500 * 8 / result["bottleneck_rate_bps"]
    right = ax.secondary_yaxis("right", functions=(lambda q: q * ms_per_packet,
                                                   lambda ms: ms / ms_per_packet))
    right.set_ylabel("queueing delay (ms)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets")
    ax.set_title(f"Bottleneck queue — {result['scenario']} (seed {result['seed']})")
    ax.legend(fontsize=7, loc="upper left")
    save_plot(fig, path)


def plot_flow_goodput(path, result):
    """Goodput over time of each unlimited bulk flow (from its 0.5 s samples)."""
    by_flow = defaultdict(list)
    for record in result["records"]:
        if record["kind"] == "sample":
            by_flow[f"{record['workload']}/{record['flow']}"].append(record)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for flow, samples in sorted(by_flow.items()):
        samples.sort(key=lambda r: r["t"])
        rates = [8 * (b["bytes"] - a["bytes"]) / (b["t"] - a["t"]) / 1e6
                 for a, b in zip(samples, samples[1:])]
        ax.plot([s["t"] - result["epoch"] for s in samples[1:]], rates, lw=0.8, label=flow)
    ax.axhline(result["bottleneck_rate_bps"] / 1e6, ls="--", lw=0.8, color="black",
               label="bottleneck rate")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title(f"Per-flow goodput — {result['scenario']} (seed {result['seed']})")
    ax.legend(fontsize=6, loc="upper right", ncol=2)
    save_plot(fig, path)


def idle_decay_table(run_folder, min_seconds=0.1):
    """Markdown lines: RED's average across a RED run's empty-queue periods
    against classic RED (metrics.red_idle_periods on queue.csv and run.json);
    times in the run's clock."""
    folder = Path(run_folder)
    scenario = json.loads((folder / "run.json").read_text())["scenario"]
    aqm, rate = scenario["aqm"], scenario["topology"]["bottleneck"]["rate_bps"]
    if aqm["mode"] != "red":
        raise ValueError(f"{folder}: not a RED run (aqm.mode = {aqm['mode']})")
    with open(folder / "queue.csv") as f:
        samples = [{"t": float(r["t"]), "time_us": int(r["time_us"]),
                    "qdepth": int(r["qdepth"]), "avg": float(r["avg"])}
                   for r in csv.DictReader(f)]
    clock = min(s["t"] - s["time_us"] / 1e6 for s in samples if s["time_us"])
    periods = metrics.red_idle_periods(samples, rate, aqm["wq_log"], aqm["minth"], min_seconds)
    lines = ["| empty from (s) | for (s) | arrivals | avg before | 1st arrival: avg (classic "
             "RED, error) | last arrival: avg (classic RED from the 1st, error) | below minth: "
             "classic RED after (s) | observed after (s) | agree |", "|" + "---|" * 9]
    for p in periods:
        seen = p["below_minth_observed_s"]
        lines.append(
            f"| {p['start_us'] / 1e6 + clock:.3f} | {p['seconds']:.3f} | {p['arrivals']} | "
            f"{p['avg_start']:.2f} | {_vs(p['avg_first'], p['classic_first'], p['first_error'])} | "
            f"{_vs(p['avg_end'], p['classic_end'], p['end_error'])} | "
            f"{p['below_minth_predicted_s']:.3f} | "
            + (f"{seen:.3f} (± {p['resolution_s']:.3f})" if seen is not None else
               f"not within {p['seconds']:.3f}")
            + f" | {'yes' if p['agrees'] else 'NO'} |")
    return lines


def _vs(observed, predicted, error):
    return f"{observed:.2f} ({predicted:.2f}, {0.0 if abs(error) < 5e-4 else error:+.1%})"


def save_plot(fig, path):
    """Lays out, writes and closes a figure (every plot of a report goes through here)."""
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------- metrics of a run
def run_metrics(result):
    """{(workload or ALL, metric): value} of one run's result.json (finite values only)."""
    values = {}
    for workload, s in result["workloads"].items():
        delay = s.get("delay_s") or {}
        values.update({
            (workload, "goodput_mbps"): s["goodput_bps"] / 1e6,
            (workload, "goodput_per_flow_mbps"): _scaled(s["goodput_per_flow_bps"], 1e-6),
            (workload, "jain_index"): s["jain_index"],
            (workload, "delay_median_s"): delay.get("median"),
            (workload, "delay_p90_s"): delay.get("p90"),
            (workload, "network_power"): s["network_power"],
        })
        if s["transactions_per_s"]:
            values[(workload, "transactions_per_s")] = s["transactions_per_s"]
        for key in ("retransmits_per_flow", "retransmit_ratio", "rtt_ms", "ece_acked_per_flow",
                    "drop_rate", "mark_rate"):
            values[(workload, key)] = s.get(key)
        for _, _, label, suffix in metrics.SIZE_BINS:
            by_size = (s.get("drop_rate_by_size") or {}).get(label, {})
            values[(workload, f"drop_rate_{suffix}")] = by_size.get("drop_rate")
    b, q = result["bottleneck"], result["queue"]
    values.update({
        (ALL, "goodput_mbps"): sum(result["goodputs"].values()) / 1e6,
        (ALL, "utilisation"): b["utilisation"], (ALL, "drop_rate"): b["drop_rate"],
        (ALL, "mark_rate"): b["mark_rate"],
        (ALL, "queue_time_avg_pkts"): q.get("qdepth_time_avg"),
        (ALL, "red_avg_mean_pkts"): q.get("avg_mean"),
        (ALL, "red_region_time"): (q.get("red_region") or {}).get("region"),
        (ALL, "queue_delay_p50_ms"): q.get("delay_ms_p50"),
        (ALL, "queue_delay_p90_ms"): q.get("delay_ms_p90"),
        (ALL, "queue_delay_p99_ms"): q.get("delay_ms_p99"),
    })
    return {key: value for key, value in values.items() if _finite(value)}


def _scaled(value, factor):
    return value * factor if _finite(value) else None


METRIC_INFO = {**{key: rest for key, *rest in WORKLOAD_METRICS},
               **{(ALL, key): rest for key, *rest in RUN_METRICS}}


def metric_info(workload, metric):
    """(unit, what, per-run statistic) of a metric key."""
    return METRIC_INFO.get((workload, metric)) or METRIC_INFO[metric]


# --------------------------------------------------------------- a study
@dataclasses.dataclass
class Study:
    """A study folder read back: its experiment, runs, their states and metrics."""
    folder: Path
    experiment: object
    quick: bool
    runs: list
    states: dict                     # run_id -> complete/failed/incomplete/missing
    results: dict                    # run_id -> result.json of complete runs
    metrics: dict                    # run_id -> run_metrics

    def point_values(self, point, workload, metric):
        """{seed: value} over the point's complete runs."""
        return {run.seed: self.metrics[run.run_id][(workload, metric)] for run in self.runs
                if run.point == point and run.run_id in self.metrics
                and (workload, metric) in self.metrics[run.run_id]}


def load_study(folder):
    folder = Path(folder)
    text, quick = study.study_source(folder)
    experiment = parse_experiment(tomllib.loads(text))
    if quick:
        experiment = experiment.for_quick()
    runs = study.expand(experiment)
    states = {run.run_id: study.run_state(folder / run.run_id) for run in runs}
    results = {run_id: json.loads((folder / run_id / "result.json").read_text())
               for run_id, state in states.items() if state == study.COMPLETE}
    return Study(folder, experiment, quick, runs, states, results,
                 {run_id: run_metrics(r) for run_id, r in results.items()})


def point_summary(loaded):
    """Rows (point, name, workload, metric, unit, per_run, mean, sd, n, ci_low, ci_high)."""
    rows = []
    for point, scenario in enumerate(loaded.experiment.scenarios):
        keys = sorted({key for run in loaded.runs if run.point == point
                       for key in loaded.metrics.get(run.run_id, {})}, key=_metric_order)
        for workload, metric in keys:
            value = stats.estimate(loaded.point_values(point, workload, metric).values())
            unit, _, per_run = metric_info(workload, metric)
            rows.append({"point": point, "point_name": scenario.name, "workload": workload,
                         "metric": metric, "unit": unit, "per_run": per_run,
                         **value.as_dict()})
    return rows


def _metric_order(key):
    workload, metric = key
    names = [m[0] for m in (RUN_METRICS if workload == ALL else WORKLOAD_METRICS)]
    return (workload != ALL, workload, names.index(metric))


def comparisons(loaded):
    """The study's comparisons: workload pairs inside a point and point pairs
    that differ in exactly one compared parameter, as per-seed differences."""
    found = []
    scenarios = loaded.experiment.scenarios
    for point, scenario in enumerate(scenarios):
        for a, b in _one_factor_pairs(scenario.workloads, lambda w: w.tcp):
            title = _title(a.tcp, b.tcp)
            for metric in COMPARED_WORKLOAD_METRICS:
                found.append(_difference(loaded, f"{title} in {scenario.name}",
                                         (point, a.name), (point, b.name), metric, of=None))
    flat = [_flatten(dataclasses.asdict(s), ignore=("name",)) for s in scenarios]
    for i in range(len(scenarios)):
        for j in range(i + 1, len(scenarios)):
            factor = _single_factor(flat[i], flat[j])
            if factor is None:
                continue
            a, b = (i, j) if _treatment_first(factor, flat[i], flat[j]) else (j, i)
            title = _factor_title(factor, flat[a], flat[b])
            where = f"{scenarios[a].name} vs {scenarios[b].name}"
            for metric in COMPARED_RUN_METRICS:
                found.append(_difference(loaded, f"{title} ({where})", (a, ALL), (b, ALL),
                                         metric))
            for workload in scenarios[a].workloads:
                found.append(_difference(loaded, f"{title} ({where})", (a, workload.name),
                                         (b, workload.name), "goodput_per_flow_mbps"))
    return [c for c in found if c["difference"].n > 0]


def _difference(loaded, title, a, b, metric, of=""):
    """a, b: (point, workload or ALL); `of` names the workload a point
    comparison's metric belongs to (None: the workloads are what is compared)."""
    diff = stats.paired_difference(loaded.point_values(a[0], a[1], metric),
                                   loaded.point_values(b[0], b[1], metric))
    return {"comparison": title, "a": a, "b": b, "metric": metric,
            "of": a[1] if of == "" and a[1] != ALL else None,
            "unit": metric_info(a[1], metric)[0], "difference": diff}


def _flatten(value, prefix="", ignore=()):
    if isinstance(value, dict):
        flat = {}
        for key, item in value.items():
            if key not in ignore:
                flat.update(_flatten(item, f"{prefix}{key}.", ignore))
        return flat
    if isinstance(value, (list, tuple)):
        flat = {}
        for index, item in enumerate(value):
            flat.update(_flatten(item, f"{prefix}{index}.", ignore))
        return flat
    return {prefix.rstrip("."): value}


def _single_factor(a, b):
    """The compared parameter (ecn, mode, ...) if a and b differ only in it."""
    differing = {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}
    factors = {key.rsplit(".", 1)[-1] for key in differing}
    if len(factors) == 1 and (factor := factors.pop()) in COMPARISONS:
        if factor != "mode" or differing == {"aqm.mode"}:
            return factor
    return None


def _one_factor_pairs(workloads, tuning_of):
    for i, a in enumerate(workloads):
        for b in workloads[i + 1:]:
            wa = _flatten(dataclasses.asdict(a), ignore=("name",))
            wb = _flatten(dataclasses.asdict(b), ignore=("name",))
            factor = _single_factor(wa, wb)
            if factor:
                yield (a, b) if _treatment_first(factor, wa, wb) else (b, a)


def _values_of(flat, factor):
    return [v for k, v in sorted(flat.items()) if k.rsplit(".", 1)[-1] == factor]


def _treatment_first(factor, a, b):
    """ECN on, pacing on, the larger IW, RED: the first of a difference."""
    va, vb = _values_of(a, factor), _values_of(b, factor)
    if factor == "mode":
        return va == ["red"]
    return va > vb


def _title(tcp_a, tcp_b):
    return _factor_title(_single_factor(_flatten(dataclasses.asdict(tcp_a)),
                                        _flatten(dataclasses.asdict(tcp_b))),
                         _flatten(dataclasses.asdict(tcp_a)), _flatten(dataclasses.asdict(tcp_b)))


def _factor_title(factor, a, b):
    return COMPARISONS[factor].format(a=_values_of(a, factor)[0], b=_values_of(b, factor)[0])


# ---------------------------------------------------------------- writing
def build_report(folder):
    """Rebuild summary.csv/json, report.md and the plots of a study folder
    from its complete runs -> (loaded study, summary rows, comparisons)."""
    loaded = load_study(folder)
    rows = point_summary(loaded)
    found = comparisons(loaded)
    folder = Path(folder)
    _write_csv(folder / "summary.csv", tuple(rows[0]) if rows else ("point",), rows)
    (folder / "summary.json").write_text(json.dumps(_json_safe({
        "experiment": loaded.experiment.name, "quick": loaded.quick,
        "runs": {run.run_id: {"point": run.point, "point_name": run.point_name,
                              "seed": run.seed, "state": loaded.states[run.run_id],
                              "reason": study.failure_reason(folder / run.run_id)}
                 for run in loaded.runs},
        "points": rows,
        "comparisons": [{**{k: v for k, v in c.items() if k != "difference"},
                         **c["difference"].as_dict(),
                         "significant": c["difference"].excludes_zero()} for c in found],
    }), indent=2))
    plots = write_study_plots(folder, loaded, rows)
    (folder / "report.md").write_text(report_markdown(loaded, rows, found, plots))
    return loaded, rows, found


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def interval_text(row_or_estimate, digits=3):
    """`4.52 ± 0.31 (n 5)` with the 95 % half-width; `4.52 (n 1)` without one."""
    e = row_or_estimate
    mean, n = (e["mean"], e["n"]) if isinstance(e, dict) else (e.mean, e.n)
    low, high = (e["ci_low"], e["ci_high"]) if isinstance(e, dict) else (e.low, e.high)
    if n < 2:
        return f"{mean:.{digits}g} (n {n})"
    return f"{mean:.{digits}g} ± {(high - low) / 2:.2g} (n {n})"


def summary_table(rows, metrics=("goodput_per_flow_mbps", "goodput_mbps", "utilisation",
                                 "drop_rate", "mark_rate", "queue_delay_p50_ms")):
    """The text table `aqmlab run` and `aqmlab report` print."""
    shown = [r for r in rows if r["metric"] in metrics and
             (r["workload"] != ALL or r["metric"] != "goodput_per_flow_mbps")]
    by_row = defaultdict(dict)
    for r in shown:
        by_row[(r["point_name"], r["workload"])][r["metric"]] = interval_text(r)
    columns = [m for m in metrics if any(m in v for v in by_row.values())]
    header = ["point", "workload"] + columns
    table = [header] + [[p, w] + [v.get(m, "") for m in columns] for (p, w), v in by_row.items()]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)) for line in table]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def comparison_lines(found):
    return [f"- {c['comparison']}, {c['metric']}"
            f"{' of ' + c['of'] if c['of'] else ''}: difference "
            f"{interval_text(c['difference'])} {c['unit']} — {stats.verdict(c['difference'])}"
            for c in found]


def report_markdown(loaded, rows, found, plots):
    e = loaded.experiment
    total = len(loaded.runs)
    done = sum(state == study.COMPLETE for state in loaded.states.values())
    lines = [f"# {e.name}", "", e.description or "", "",
             f"- {len(e.scenarios)} point(s) x {e.repeat} repetition(s) = {total} runs, "
             f"{done} complete; {e.duration:g} s each (warm-up {e.warmup:g} s excluded)"
             f"{', quick' if loaded.quick else ''}; seeds {e.seed}..{e.seed + e.repeat - 1} "
             "(repetition r of every point uses seed + r)",
             f"- every value: mean ± half-width of the {stats.CONFIDENCE:.0%} Student-t "
             "interval over repetitions (n runs); `per_run` in summary.csv says what one run "
             "contributes (e.g. a median: the value is then the mean of per-run medians)"]
    loads = [r["load_average_at_end"][0] for r in loaded.results.values()
             if "load_average_at_end" in r]
    if loads:
        lines.append(f"- machine load (1-min load average at the end of each run): "
                     f"{min(loads):.2f} .. {max(loads):.2f}")
    versions = next(iter(loaded.results.values()), {}).get("versions")
    if versions:
        lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    lines += _unfinished_section(loaded)
    lines += fidelity.report_lines(loaded.folder, loaded.runs)
    if rows:
        lines += ["", "## Summary", "", "```", summary_table(rows), "```"]
        lines += ["", "## All metrics", "", "| point | workload | metric | per run | mean | sd "
                  "| n | 95 % CI |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            ci = f"[{r['ci_low']:.4g}, {r['ci_high']:.4g}]" if r["n"] > 1 else "-"
            sd = f"{r['sd']:.3g}" if r["n"] > 1 else "-"
            lines.append(f"| {r['point_name']} | {r['workload']} | {r['metric']} "
                         f"({r['unit'] or '-'}) | {r['per_run']} | {r['mean']:.4g} | {sd} | "
                         f"{r['n']} | {ci} |")
    if found:
        lines += ["", "## Comparisons (per-seed differences, first minus second)", ""]
        lines += comparison_lines(found)
    for name, title in plots:
        lines += ["", f"## {title}", "", f"![{title}]({name})"]
    runs_with_plots = [run for run in loaded.runs if loaded.states[run.run_id] == study.COMPLETE
                       and run.repetition == 0]
    if runs_with_plots:
        lines += ["", "## First repetition of each point", ""]
        for run in runs_with_plots:
            lines.append(f"### {run.point_name} (`{run.run_id}`)")
            for png in ("queue.png", "goodput_time.png"):
                if (loaded.folder / run.run_id / png).exists():
                    lines.append(f"![{png}]({run.run_id}/{png})")
            lines.append("")
    lines += ["", "Per run: `<run_id>/run.json` (parameters, seed), `result.json`, "
              "`transfers.csv`, `flows.csv`, `queue.csv`, `lab/` logs. Study numbers: "
              "`summary.csv`, `summary.json`.", ""]
    return "\n".join(lines)


def _unfinished_section(loaded):
    unfinished = [(run, loaded.states[run.run_id]) for run in loaded.runs
                  if loaded.states[run.run_id] != study.COMPLETE]
    if not unfinished:
        return []
    lines = ["", "## Runs not in this report", "",
             "`aqmlab run FILE --out DIR --resume` runs them; `incomplete` = started and "
             "interrupted without a marker, `missing` = never started.", "",
             "| run | point | state | reason |", "|---|---|---|---|"]
    for run, state in unfinished:
        reason = study.failure_reason(loaded.folder / run.run_id).replace("|", "/")
        lines.append(f"| {run.run_id} | {run.point_name} | {state} | {reason or '-'} |")
    return lines


def write_study_plots(folder, loaded, rows):
    """-> [(file, title)] of the plots that have something to show."""
    plots = []
    goodput = [r for r in rows if r["metric"] == "goodput_mbps"]
    if goodput:
        rates = {s.name: s.topology.bottleneck.rate_bps / 1e6 for s in loaded.experiment.scenarios}
        _bar_plot(folder / "goodput.png", goodput, "goodput (Mb/s)",
                  "Goodput per point and workload (all = total) with 95 % intervals", rates)
        plots.append(("goodput.png", "Goodput"))
    delay = [r for r in rows if r["metric"] in ("queue_delay_p50_ms", "queue_delay_p90_ms")]
    if delay:
        _bar_plot(folder / "queue_delay.png", delay, "queueing delay (ms)",
                  "Bottleneck queueing delay (p50, p90) with 95 % intervals")
        plots.append(("queue_delay.png", "Queueing delay"))
    if sweep_plot(folder / "sweep.png", loaded, rows):
        plots.append(("sweep.png", "Along the sweep"))
    transfer = [r for r in rows if r["metric"] == "delay_median_s"]
    if transfer:
        _bar_plot(folder / "delays.png", transfer, "median delay (s)",
                  "Transfer/page delay (mean of per-run medians) with 95 % intervals")
        plots.append(("delays.png", "Transfer and page delays"))
    return plots


SWEEP_PANELS = (("goodput_mbps", "total goodput (Mb/s)"), ("utilisation", "utilisation"),
                ("queue_delay_p50_ms", "median queueing delay (ms)"))


def sweep_plot(path, loaded, rows):
    """Run-wide metrics against the swept value, one line (with its 95 %
    band) per scenario, when the sweep has one numeric axis -> drawn?"""
    sweep = loaded.experiment.sweep
    axis = list(sweep[0])[0] if sweep[0] else None
    values = [point.get(axis) for point in sweep]
    if axis is None or len({tuple(p) for p in sweep}) != 1 or len(sweep) < 2 or \
            len({tuple(_axis_values(sweep, k)) for k in sweep[0]}) != 1 or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return False
    by = {(r["point"], r["metric"]): r for r in rows if r["workload"] == ALL}
    panels = [(m, label) for m, label in SWEEP_PANELS if any(k[1] == m for k in by)]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.5), squeeze=False)
    scenarios = len(loaded.experiment.scenarios) // len(sweep)
    for ax, (metric, label) in zip(axes[0], panels):
        for s in range(scenarios):
            found = [(values[j], by[(s * len(sweep) + j, metric)]) for j in range(len(sweep))
                     if (s * len(sweep) + j, metric) in by]
            if not found:
                continue
            name = loaded.experiment.scenarios[s * len(sweep)].name.split(":")[0]
            xs = [x for x, _ in found]
            ax.plot(xs, [r["mean"] for _, r in found], marker="o", label=name)
            bands = [(x, r) for x, r in found if r["n"] > 1]
            if bands:
                ax.fill_between([x for x, _ in bands], [r["ci_low"] for _, r in bands],
                                [r["ci_high"] for _, r in bands], alpha=0.25)
        if metric == "goodput_mbps":
            rate = loaded.experiment.scenarios[0].topology.bottleneck.rate_bps / 1e6
            ax.axhline(rate, ls="--", lw=0.8, color="black", label="link capacity")
        ax.set_xlabel(axis)
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle("Means with 95 % bands along the sweep", fontsize=9)
    save_plot(fig, path)
    return True


def _axis_values(sweep, key):
    """Positions where a path changes value: zipped paths change together."""
    return [i for i in range(1, len(sweep)) if sweep[i][key] != sweep[i - 1][key]]


def _bar_plot(path, rows, ylabel, title, capacity=None):
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4))
    x = range(len(rows))
    means = [r["mean"] for r in rows]
    errors = [(r["ci_high"] - r["ci_low"]) / 2 if r["n"] > 1 else 0 for r in rows]
    ax.bar(x, means, yerr=errors, capsize=4, color="tab:blue", alpha=0.8)
    labels = [f"{r['point_name']}\n{r['workload']}" +
              (f"\n{r['metric'].rsplit('_', 2)[-2]}" if "queue_delay" in r["metric"] else "")
              for r in rows]
    ax.set_xticks(list(x), labels, fontsize=7, rotation=30 if len(rows) > 6 else 0)
    if capacity:
        for i, r in enumerate(rows):
            if r["workload"] == ALL:
                ax.hlines(capacity[r["point_name"]], i - 0.45, i + 0.45, colors="black",
                          linestyles="--", label="link capacity" if i == 0 else None)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    save_plot(fig, path)


# ---------------------------------------------------------------- compare
def compare_table(folder_a, folder_b):
    """Markdown: every metric the two studies share, side by side with intervals."""
    rows_a = {(r["point_name"], r["workload"], r["metric"]): r
              for r in point_summary(load_study(folder_a))}
    rows_b = {(r["point_name"], r["workload"], r["metric"]): r
              for r in point_summary(load_study(folder_b))}
    shared = [key for key in rows_a if key in rows_b]
    if not shared:
        raise ValueError(f"{folder_a} and {folder_b} have no point/workload/metric in common")
    lines = [f"A = {folder_a}", f"B = {folder_b}", "",
             "| point | workload | metric | A | B | intervals overlap |",
             "|---|---|---|---|---|---|"]
    for key in shared:
        a, b = rows_a[key], rows_b[key]
        overlap = "-" if a["n"] < 2 or b["n"] < 2 else \
            ("yes" if a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"] else "no")
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {interval_text(a)} | "
                     f"{interval_text(b)} | {overlap} |")
    only = sorted(set(rows_a) ^ set(rows_b))
    if only:
        lines += ["", f"{len(only)} point/workload/metric(s) are in only one of the studies."]
    return "\n".join(lines)
