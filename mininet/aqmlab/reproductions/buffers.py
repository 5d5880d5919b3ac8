"""The buffer-sizing thesis (K. Tada, Osaka University, 2007) reproduced:
C x RTT against C x RTT / sqrt(n) buffers, paced and unpaced TCP, P2P and
SURGE web traffic, at the largest scale this machine runs faithfully.

    aqmlab study buffers --out DIR [--parts p2p,web] [aqmlab run options]
    aqmlab study buffers --out DIR --parts scale,scale_web   # the scale limit (quiet machine)
    aqmlab study buffers --out DIR --quick                   # the CI variant (< 5 min)
    aqmlab study buffers --out DIR --report-only [--report FILE.md]

Every part is an experiment file in experiments/buffer_sizing/ run with
`aqmlab run FILE --out DIR/<part> --resume` (so the study resumes, and
`--jobs` / `--executor slurm` pass through). The report puts each figure
group's plot next to the thesis's description and checks each finding
(experiments/buffer_sizing/published.json) with per-seed intervals.
"""

import json
import math
import statistics
import sys
from pathlib import Path

from aqmlab import fidelity, stats, study
from aqmlab.metrics import SIZE_BINS, size_bin
from aqmlab.report import load_study, run_csv_rows
from aqmlab.reproductions.common import (Reproduction, fmt, load_lines, measured_lines,
                                         overhead_estimate, parts_present, plot_estimates,
                                         read_wall, run_study, save_figure, save_report)

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

NAME = "buffers"
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments" / "buffer_sizing"
PUBLISHED = EXPERIMENTS / "published.json"
SCALE_PARTS = ("scale", "scale_web")
SCALING = "scaling"       # scaled (C/s, n/s) against unscaled runs where both fit
FIGURE_PARTS = ("p2p", "mixed", "web", "load", "delay", "capacity")
PARTS = SCALE_PARTS + (SCALING,) + FIGURE_PARTS
SCALED_PAIRS = (("unscaled-normal", "scaled-normal"), ("unscaled-sqrtn", "scaled-sqrtn"))
QUICK = "quick"
# Faithful timing: aqmlab/fidelity.py (packet and RTT time scales). Transfer-size
# classes: aqmlab/metrics.py SIZE_BINS.


# ---------------------------------------------------------------- a run's setting

def flows(scenario):
    return sum(w.pairs * w.connections for w in scenario.workloads)


def pacing_of(tcp):
    if not tcp.pacing:
        return "unpaced"
    return "paced" if (tcp.pacing_ss_ratio, tcp.pacing_ca_ratio) == (100, 100) else "linuxpaced"


def setting(scenario):
    """'normal-paced', 'sqrtn-unpaced', ... (buffer rule and the first workload's pacing)."""
    rule = "sqrtn" if scenario.topology.bottleneck.buffer == "bdp/sqrtn" else "normal"
    return f"{rule}-{pacing_of(scenario.workloads[0].tcp)}"


def buffer_rule(scenario):
    return setting(scenario).split("-")[0]


def paced_share(scenario):
    paced = sum(w.pairs * w.connections for w in scenario.workloads
                if pacing_of(w.tcp) != "unpaced")
    return paced / flows(scenario)


def delay_ms(scenario):
    return round(scenario.topology.bottleneck.delay_s * 1000)


def rate_mbps(scenario):
    return scenario.topology.bottleneck.rate_bps / 1e6


# ---------------------------------------------------------------- per-run values

def utilisation_pct(result, folder=None):
    return 100 * result["bottleneck"]["utilisation"]


def drop_pct(result, folder=None):
    return 100 * result["bottleneck"]["drop_rate"]


def type_throughput_mbps(workload):
    """Mean goodput per flow of one workload (Fig. 6-7)."""
    def value(result, folder=None):
        found = result["workloads"].get(workload)
        return found["goodput_per_flow_bps"] / 1e6 if found else math.nan
    return value


def type_drop_pct(workload):
    """Dropped data segments of one workload (drops.csv rows with a payload;
    every row of a file recorded before the payload column) over the data
    segments its senders sent (tcp_info), whole run (Fig. 6-7)."""
    def value(result, folder):
        sent = sum(s.get("data_segments") or 0 for f, s in result["flow_stats"].items()
                   if f.startswith(f"{workload}/"))
        dropped = sum(r["workload"] == workload and int(r.get("payload") or 1) > 0
                      for r in run_csv_rows(folder, "drops.csv"))
        return 100 * dropped / sent if sent else math.nan
    return value


def sync_index(drop_rows, n_flows, gap_s):
    """Drop synchronisation: drops are grouped into loss events (a new event
    after a gap of more than gap_s, half the base RTT); the index is the mean
    fraction of all n flows that lose a packet in an event (1 = every flow
    loses in every event, fully synchronised). nan without drops."""
    times = sorted((float(r["t"]), r["flow"]) for r in drop_rows)
    if not times or not n_flows:
        return math.nan
    events, current, last = [], set(), None
    for t, flow in times:
        if last is not None and t - last > gap_s:
            events.append(current)
            current = set()
        current.add(flow)
        last = t
    events.append(current)
    return statistics.fmean(len(e) / n_flows for e in events)


def run_sync(part):
    def value(result, folder):
        scenario = part.scenario_of(result["run_id"])
        window = result["window"]
        rows = [r for r in run_csv_rows(folder, "drops.csv")
                if window[0] - result["epoch"] <= float(r["t"]) <= window[1] - result["epoch"]]
        return sync_index(rows, flows(scenario), scenario.topology.base_rtt_s / 2)
    return value


def transfer_delay_by_size(result, folder):
    """{size bin: median delay (s)} of the run's complete SURGE transfers
    that ended after the warm-up."""
    start = result["window"][0] - result["epoch"]
    by_bin = {}
    for r in run_csv_rows(folder, "transfers.csv"):
        if r["kind"] == "surge" and r["complete"] == "True" and float(r["end"]) >= start:
            by_bin.setdefault(size_bin(int(r["bytes"])), []).append(float(r["delay"]))
    return {b: statistics.median(d) for b, d in by_bin.items()}


def delay_in_bin(label):
    def value(result, folder):
        return transfer_delay_by_size(result, folder).get(label, math.nan)
    return value


def drop_pct_in_bin(label):
    """The run's drop rate (%) of transfers of one size class, over its
    workloads (metrics.drop_rate_by_size: dropped / sent data segments)."""
    def value(result, folder=None):
        counts = [w["drop_rate_by_size"][label] for w in result["workloads"].values()
                  if label in (w.get("drop_rate_by_size") or {})]
        sent = sum(c["data_segments"] for c in counts)
        return 100 * sum(c["drops"] for c in counts) / sent if sent else math.nan
    return value


# ---------------------------------------------------------------- a loaded part

class Part:
    """One part's study folder; values keyed by any function of the scenario."""

    def __init__(self, name, folder):
        self.name, self.loaded = name, load_study(folder)
        self.scenarios = {run.run_id: run.scenario for run in self.loaded.runs}

    def scenario_of(self, run_id):
        return self.scenarios[run_id]

    def complete(self):
        return [run for run in self.loaded.runs if run.run_id in self.loaded.results]

    def by_seed(self, select, value_of):
        """{seed: value} over the complete runs whose scenario `select` accepts."""
        found = {}
        for run in self.complete():
            if select(run.scenario):
                value = value_of(self.loaded.results[run.run_id], self.loaded.folder / run.run_id)
                if value is not None and math.isfinite(value):
                    found[run.seed] = value
        return found

    def estimate(self, select, value_of):
        return stats.estimate(self.by_seed(select, value_of).values())

    def values(self, key_of):
        return sorted({key_of(run.scenario) for run in self.loaded.runs})


def load_parts(root, names=PARTS + (QUICK,)):
    parts = {}
    for name in names:
        folder = Path(root) / name
        if folder.is_dir() and any(folder.glob(f"*/{study.COMPLETE}")):
            parts[name] = Part(name, folder)
    return parts


# ---------------------------------------------------------------- the scale limit

def scale_rows(part):
    rows = []
    for run in part.complete():
        result = part.loaded.results[run.run_id]
        values, ok = fidelity.run_timing(result, run.scenario.topology.base_rtt_s)
        load = json.loads((part.loaded.folder / run.run_id / "run.json").read_text())
        workload = result["workloads"][run.scenario.workloads[0].name]
        rows.append({"jain": workload.get("jain_index"), "rtt_ms": workload.get("rtt_ms"),
                     "base_rtt_ms": 1000 * run.scenario.topology.base_rtt_s, "run": run.run_id, "scenario": run.scenario, "n": flows(run.scenario),
                     "hosts": 2 * sum(w.pairs for w in run.scenario.workloads), "seed": run.seed,
                     "kind": run.scenario.workloads[0].kind,
                     "pacing": pacing_of(run.scenario.workloads[0].tcp), "ok": ok,
                     "load": (load["load_average_at_start"][0], result["load_average_at_end"][0]),
                     **values})
    return sorted(rows, key=lambda r: (r["kind"], r["pacing"], r["n"], r["seed"]))


def cell(value, spec):
    return "—" if value is None else format(value, spec)


def largest_faithful(rows, level):
    """{(kind, pacing): largest n such that every run (every seed) up to it is
    faithful at `level` ("packet" or "rtt")}."""
    limits = {}
    for key in sorted({(r["kind"], r["pacing"]) for r in rows}):
        faithful = {}
        for row in rows:
            if (row["kind"], row["pacing"]) == key:
                faithful[row["n"]] = faithful.get(row["n"], True) and row["ok"][level]
        limit = None
        for n in sorted(faithful):
            if not faithful[n]:
                break
            limit = n
        limits[key] = limit
    return limits


def scale_lines(parts):
    rows = [r for name in SCALE_PARTS if name in parts for r in scale_rows(parts[name])]
    if not rows:
        return ["Not measured yet: `aqmlab study buffers --out DIR --parts scale,scale_web` on a "
                "quiet machine (take /tmp/aqmlab-quiet on a shared one)."]
    lines = ["| workload | pacing | n (pairs x conn.) | seed | hosts | utilisation % | R1 late "
             "mean / max (us) | > 1 ms late % | R1 CPU (cores) | load avg start -> end | Jain | "
             "srtt ms (base) | faithful: packet / RTT scale |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w = r["scenario"].workloads[0]
        lines.append(f"| {r['kind']} | {r['pacing']} | {r['n']} ({w.pairs} x {w.connections}) | "
                     f"{r['seed']} | {r['hosts']} | {100 * r['utilisation']:.1f} | {r['late_us_mean']:.0f} / "
                     f"{r['late_us_max']:.0f} | {100 * r['late_over_1ms']:.2f} | "
                     f"{r['cpu_share']:.2f} | {r['load'][0]:.1f} -> {r['load'][1]:.1f} | "
                     f"{cell(r['jain'], '.2f')} | {cell(r['rtt_ms'], '.0f')} "
                     f"({r['base_rtt_ms']:.0f}) | {'yes' if r['ok']['packet'] else 'NO'} / "
                     f"{'yes' if r['ok']['rtt'] else 'NO'} |")
    lines.append("")
    for level, words in (("packet", "at the packet time scale"), ("rtt", "at the RTT time scale")):
        limits = largest_faithful(rows, level)
        lines.append(f"Largest faithful n at 100 Mb/s {words} (every configuration up to it "
                     "faithful): " + "; ".join(f"{kind} {pacing}: {'none' if n is None else n}"
                                               for (kind, pacing), n in limits.items()) + ".")
    return lines


def share_of_fair(result, folder=None):
    """Mean goodput per flow over the fair share C / n."""
    workload = next(iter(result["workloads"].values()))
    n = sum(w["flows"] for w in result["workloads"].values())
    return workload["goodput_per_flow_bps"] / (result["bottleneck_rate_bps"] / n)


def scaling_lines(part):
    if not part:
        return ["Not run yet: `aqmlab study buffers --out DIR --parts scaling` (12 runs, quiet "
                "machine)."]
    by_name = lambda name: (lambda s: s.name == name)
    sync = run_sync(part)
    lines = ["| scenario | C Mb/s | n | buffer (packets) | utilisation % | drop rate % | goodput "
             "per flow / (C/n) | drop-sync index |", "|---|---|---|---|---|---|---|---|"]
    for scenario in part.loaded.experiment.scenarios:
        runs = [r for r in part.complete() if r.scenario.name == scenario.name]
        packets = part.loaded.results[runs[0].run_id]["bottleneck_buffer"] if runs else "—"
        select = by_name(scenario.name)
        lines.append(f"| {scenario.name} | {rate_mbps(scenario):g} | {flows(scenario)} | "
                     f"{packets} | {fmt(part.estimate(select, utilisation_pct))} | "
                     f"{fmt(part.estimate(select, drop_pct))} | "
                     f"{fmt(part.estimate(select, share_of_fair))} | "
                     f"{fmt(part.estimate(select, sync))} |")
    lines += ["", "Per-seed differences, unscaled minus scaled (agree = the 95 % interval "
              "includes 0):", ""]
    for unscaled, scaled in SCALED_PAIRS:
        cells = []
        for label, value_of in (("utilisation", utilisation_pct), ("drop rate", drop_pct),
                                ("goodput / fair share", share_of_fair)):
            found = difference(part, by_name(unscaled), by_name(scaled), value_of)
            agree = ("too few seeds" if found.n < 2 else
                     "agree" if found.low <= 0 <= found.high else "DIFFER")
            cells.append(f"{label} {fmt(found)} ({agree})")
        lines.append(f"- {unscaled} vs {scaled}: " + "; ".join(cells) + ".")
    return lines


def scaling_scatter(part, figures):
    """The switch's drop records of the unscaled runs (n = 64, first seed)."""
    if not part:
        return []
    plots = plot_drop_scatter(part, figures, "scaling-drop-scatter",
                              "flow number vs drop time, n = 64 at 100 Mb/s (switch records)")
    return [f"![{caption}]({Path(figures).name}/{file})" for file, caption in plots] + [""]


# ---------------------------------------------------------------- plots

def plot_metric(part, folder, x_of, group_of, value_of, xlabel, ylabel, title, stem,
                logx=False, select=lambda s: True):
    """value_of against x_of, one line per group_of, 95 % intervals -> [(file, caption)]."""
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    drawn = False
    for group in part.values(group_of):
        points = []
        for x in part.values(x_of):
            found = part.estimate(lambda s: select(s) and group_of(s) == group and x_of(s) == x,
                                  value_of)
            if found.n:
                points.append((x, found))
        if not points:
            continue
        drawn = True
        plot_estimates(ax, points, marker="o", capsize=3, label=str(group))
    if not drawn:
        plt.close(fig)
        return []
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, folder, stem, title)


def plot_drop_scatter(part, folder, stem, title):
    """Thesis Fig. 4: flow number against drop time, from the switch's
    records, one panel per setting at the part's largest n (first seed)."""
    largest = max(part.values(flows))
    panels = []
    for run in part.complete():
        if flows(run.scenario) == largest and setting(run.scenario) not in [p[0] for p in panels]:
            panels.append((setting(run.scenario), run))
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4), sharey=True,
                             squeeze=False)
    for ax, (name, run) in zip(axes[0], sorted(panels, key=lambda p: p[0])):
        rows = run_csv_rows(part.loaded.folder / run.run_id, "drops.csv")
        index = {f: i for i, f in enumerate(sorted({r["flow"] for r in rows}))}
        ax.scatter([float(r["t"]) for r in rows], [index[r["flow"]] for r in rows], s=1)
        ax.set_title(f"{name} ({len(rows)} drops)", fontsize=8)
        ax.set_xlabel("time (s)")
    axes[0][0].set_ylabel("flow number")
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, folder, stem, title)


PER_SIZE = ((delay_in_bin, "median transfer delay (s)", "delay per size", "sizes"),
            (drop_pct_in_bin, "drop rate (%)", "drop rate per size", "size-drops"))


def plot_per_size(part, folder, x_of, xlabel, heading, stem, logx=False,
                  select=lambda s: True):
    """Transfer delay and drop rate per size class against x -> [(file, caption)]."""
    return [plot for value_in_bin, ylabel, what, suffix in PER_SIZE
            for plot in plot_sizes(part, folder, x_of, xlabel, f"{heading}: {what}",
                                   f"{stem}-{suffix}", value_in_bin, ylabel, logx, select)]


def plot_sizes(part, folder, x_of, xlabel, title, stem, value_in_bin, ylabel, logx, select):
    """value_in_bin(label) per size class against x (runs `select` accepts),
    one panel per class."""
    fig, axes = plt.subplots(1, len(SIZE_BINS), figsize=(3.0 * len(SIZE_BINS), 3.4),
                             squeeze=False)
    drawn = False
    for ax, (_, _, label, _) in zip(axes[0], SIZE_BINS):
        for group in part.values(setting):
            points = [(x, part.estimate(lambda s: select(s) and setting(s) == group
                                        and x_of(s) == x, value_in_bin(label)))
                      for x in part.values(x_of)]
            points = [(x, e) for x, e in points if e.n]
            if points:
                drawn = True
                plot_estimates(ax, points, marker="o", capsize=2, label=group)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel(xlabel)
        if logx:
            ax.set_xscale("log")
    if not drawn:
        plt.close(fig)
        return []
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, folder, stem, title)


# ---------------------------------------------------------------- findings

def difference(part, a, b, value_of):
    """Per-seed a - b (selectors) with its interval."""
    return stats.paired_difference(part.by_seed(a, value_of), part.by_seed(b, value_of))


def word(found, above=True):
    """holds / holds in the mean only / does not hold, for a difference
    expected above 0 (or below 0 when above is False)."""
    if found.n < 2:
        return "not enough seeds (n < 2)"
    sign = 1 if above else -1
    low = min(sign * found.low, sign * found.high)
    if low > 0:
        return "holds (95 % interval excludes 0)"
    return "holds in the mean only" if sign * found.mean > 0 else "does not hold"


def at(setting_name, n=None, share=None):
    return lambda s: (setting(s) == setting_name and (n is None or flows(s) == n)
                      and (share is None or abs(paced_share(s) - share) < 1e-9))


def p2p_findings(part):
    if not part:
        return ["- Fig. 3-4: not run."]
    small, large = min(part.values(flows)), max(part.values(flows))
    lines = []
    grow = difference(part, at("sqrtn-unpaced", large), at("sqrtn-unpaced", small), utilisation_pct)
    lines.append(f"- sqrtN unpaced utilisation rises with n (n = {large} minus n = {small}): "
                 f"{fmt(grow, unit=' pp')}: {word(grow)}.")
    gap = difference(part, at("sqrtn-unpaced", large), at("sqrtn-paced", large), utilisation_pct)
    lines.append(f"- sqrtN paced stays below sqrtN unpaced at n = {large}: {fmt(gap, unit=' pp')}:"
                 f" {word(gap)}.")
    for n in (small, large):
        cut = difference(part, at("normal-unpaced", n), at("normal-paced", n), drop_pct)
        lines.append(f"- pacing lowers drops with normal buffers at n = {n}: "
                     f"{fmt(cut, unit=' pp')}: {word(cut)}.")
    cut = difference(part, at("sqrtn-unpaced", large), at("sqrtn-paced", large), drop_pct)
    lines.append(f"- ... but not with sqrtN buffers (n = {large}; the thesis expects no "
                 f"reduction): {fmt(cut, unit=' pp')}: "
                 f"{'holds (interval includes 0 or is negative)' if cut.n >= 2 and cut.low <= 0 else word(cut)}.")
    sync = difference(part, at("sqrtn-paced", large), at("sqrtn-unpaced", large), run_sync(part))
    lines.append(f"- pacing synchronises drops (sqrtN, n = {large}; index = mean fraction of "
                 f"flows losing a packet per loss event, from the switch's records): "
                 f"{fmt(sync)}: {word(sync)}.")
    return lines


def mixed_findings(part):
    if not part:
        return ["- Fig. 5-7: not run."]
    lines = []
    n100 = [n for n in part.values(flows) if n <= 100]
    for n in n100:
        for rule in ("normal", "sqrtn"):
            select = lambda s, r=rule, n=n: buffer_rule(s) == r and flows(s) == n and \
                abs(paced_share(s) - 0.5) < 1e-9
            ratio = stats.estimate(
                [p / u for seed, p in part.by_seed(select, type_throughput_mbps("paced")).items()
                 for s2, u in part.by_seed(select, type_throughput_mbps("unpaced")).items()
                 if s2 == seed and u > 0])
            lines.append(f"- n = {n}, {rule}, half paced: paced / unpaced throughput per flow "
                         f"{fmt(ratio)} (thesis: about 1/2).")
    for n in [n for n in part.values(flows) if n > 100]:
        for rule, expect in (("normal", "paced overtake unpaced once they are the majority"),
                             ("sqrtn", "paced never overtake")):
            select = lambda s, r=rule, n=n: buffer_rule(s) == r and flows(s) == n and \
                paced_share(s) > 0.5
            edge = stats.paired_difference(part.by_seed(select, type_throughput_mbps("paced")),
                                           part.by_seed(select, type_throughput_mbps("unpaced")))
            lines.append(f"- n = {n}, {rule}, paced majority: paced - unpaced throughput per flow "
                         f"{fmt(edge, unit=' Mb/s')} (thesis: {expect}): "
                         f"{word(edge, above=rule == 'normal')}.")
    return lines


def web_findings(parts):
    lines = []
    web = parts.get("web")
    if web:
        n = min(web.values(flows))
        for name in ("sqrtn-unpaced", "sqrtn-paced"):
            found = web.estimate(at(name, n), drop_pct)
            lines.append(f"- Fig. 8: {name} drop rate above 0 even at the lowest load (n = {n}): "
                         f"{fmt(found, unit=' %')}: "
                         f"{'holds' if found.n >= 2 and found.low > 0 else 'not established'}.")
        spread = [web.estimate(at(name, n), utilisation_pct) for name in web.values(setting)]
        spread = [e for e in spread if e.n]
        if spread:
            lines.append(f"- Fig. 8: utilisation about equal across settings at n = {n}: means "
                         + ", ".join(f"{e.mean:.1f}" for e in spread) + " %.")
    capacity = parts.get("capacity")
    if capacity:
        top, low = max(capacity.values(rate_mbps)), min(capacity.values(rate_mbps))
        for name in ("normal-unpaced", "sqrtn-unpaced"):
            at_top = capacity.estimate(lambda s, m=name: setting(s) == m and rate_mbps(s) == top
                                       and delay_ms(s) == 90, drop_pct)
            lines.append(f"- Fig. 12-13: {name} drop rate at C = {top:g} Mb/s, D = 90 ms: "
                         f"{fmt(at_top, unit=' %')} (thesis: normal reaches ~0, sqrtN does not; "
                         f"the lab's C stops at {top:g} Mb/s, from {low:g}).")
    lines += delay_findings(parts.get("delay"), capacity)
    lines += size_drop_findings(parts)
    return lines or ["- Fig. 8-14: not run."]


SIZE_DROP_FIGURES = (("delay", "Fig. 9", delay_ms, "D = {} ms"),
                     ("load", "Fig. 10", flows, "n = {}"), ("web", "Fig. 11", flows, "n = {}"))


def size_drop_findings(parts):
    """Fig. 9-11: normal unpaced drops least at every transfer size (at the
    part's largest D or n): sqrtN unpaced minus normal unpaced, per size class."""
    lines = []
    for name, figure, x_of, where in SIZE_DROP_FIGURES:
        part = parts.get(name)
        if not part:
            continue
        x = max(part.values(x_of))
        cells = []
        for _, _, label, _ in SIZE_BINS:
            found = difference(part, lambda s: setting(s) == "sqrtn-unpaced" and x_of(s) == x,
                               lambda s: setting(s) == "normal-unpaced" and x_of(s) == x,
                               drop_pct_in_bin(label))
            cells.append(f"{label} {fmt(found, unit=' pp')}: {word(found)}")
        lines.append(f"- {figure}: sqrtN - normal (unpaced) drop rate per transfer size at "
                     f"{where.format(x)} (thesis: normal unpaced lowest at every size): "
                     + "; ".join(cells) + ".")
    return lines


def delay_findings(delay, capacity):
    """Transfer delay: sqrtN is faster only for small D or small transfers
    (Fig. 9); sqrtN paced is the slowest at large C (Fig. 14)."""
    lines = []
    small_bin, large_bin = SIZE_BINS[0][2], SIZE_BINS[2][2]
    if delay:
        low, high = min(delay.values(delay_ms)), max(delay.values(delay_ms))
        for d, label, above in ((low, small_bin, True), (high, large_bin, False)):
            found = difference(delay, lambda s, d=d: setting(s) == "normal-unpaced"
                               and delay_ms(s) == d,
                               lambda s, d=d: setting(s) == "sqrtn-unpaced" and delay_ms(s) == d,
                               delay_in_bin(label))
            expect = "sqrtN faster" if above else "normal faster"
            lines.append(f"- Fig. 9: D = {d} ms, transfers {label}: normal - sqrtN (unpaced) "
                         f"median transfer delay {fmt(found, unit=' s')} (thesis: {expect}): "
                         f"{word(found, above)}.")
    if capacity:
        top = max(capacity.values(rate_mbps))
        at_top = {name: capacity.estimate(lambda s, m=name: setting(s) == m and
                                          rate_mbps(s) == top and delay_ms(s) == 90,
                                          delay_in_bin(large_bin))
                  for name in capacity.values(setting)}
        at_top = {k: e for k, e in at_top.items() if e.n}
        if at_top:
            slowest = max(at_top, key=lambda k: at_top[k].mean)
            lines.append(f"- Fig. 14: at C = {top:g} Mb/s, D = 90 ms, transfers {large_bin}: the "
                         f"slowest setting is {slowest} ({fmt(at_top[slowest], unit=' s')}; "
                         f"thesis: sqrtn-paced): "
                         f"{'holds (in the means)' if slowest == 'sqrtn-paced' else 'does not hold'}.")
    return lines


def quick_verdict_of(part):
    """The CI check: the sqrtN buffer must not drop less than the normal one
    (same seeds): fails only if the 95 % interval of sqrtN - normal drop rate
    lies below 0 (one-sided 97.5 %); and the switch's drop records exist."""
    sqrtn = part.by_seed(lambda s: buffer_rule(s) == "sqrtn", drop_pct)
    normal = part.by_seed(lambda s: buffer_rule(s) == "normal", drop_pct)
    found = stats.paired_difference(sqrtn, normal)
    recorded = sum(len(run_csv_rows(part.loaded.folder / r.run_id, "drops.csv"))
                   for r in part.complete() if buffer_rule(r.scenario) == "sqrtn")
    ok = found.n >= 2 and not found.high < 0 and recorded > 0
    text = (f"{'passed' if ok else 'FAILED'}: sqrtN - normal drop rate = {fmt(found, unit=' pp')} "
            f"over {found.n} seeds; {recorded} per-packet drop records from the switch in the "
            f"sqrtN runs. The check fails only if the interval lies below zero or no drop was "
            f"recorded.")
    return {"ok": ok, "difference": found, "text": text}


# ---------------------------------------------------------------- the report

SCALING_NOTES = [
    "- n flows are `pairs x connections`: the thesis has one host per flow; here up to "
    "`connections` TCP connections share a host pair (same TCP settings, same access links, each "
    "at C so never the bottleneck). This keeps the number of flows, per-flow bandwidth C/n, RTT "
    "and buffer per flow; it does not keep per-host independence of timers and CPU scheduling "
    "(one agent process serves a host's connections).",
    "- C stops at 100 Mb/s (Fig. 12-14's larger C cannot run faithfully here). To go beyond the "
    "faithful n, scale C and n down together (C' = C/s, n' = n/s): this preserves per-flow "
    "bandwidth, RTT and, for the normal rule, buffer per flow (C'RTT/n' = CRTT/n); the sqrtN rule "
    "does not scale (C'RTT/sqrt(n') per flow is sqrt(s) times CRTT/sqrt(n) per flow), so a scaled "
    "sqrtN run must set the unscaled buffer divided by s as a packet count; packet times grow s "
    "times, so queueing delays and the transfer delays of small transfers do not scale.",
    "- RTT as the thesis computes it: 2 x (5 + D + 5) ms (access links 5 ms each side); B = C x RTT "
    "in 1500-byte packets + 1 (the packet's own transmission), and C x RTT / sqrt(n) rounded up "
    "(`topology.resolve_buffer`).",
    "- Pacing: Linux's internal TCP pacing (no fq qdisc here): SO_MAX_PACING_RATE on the sender's "
    "socket turns it on, per-packet (tcp_tso_rtt_log 0, tcp_min_tso_segs 1); `paced` sets "
    "tcp_pacing_ss_ratio = tcp_pacing_ca_ratio = 100 in the sender's namespace, so the next "
    "segment leaves srtt/cwnd after the previous one (the thesis's definition); `linuxpaced` "
    "keeps Linux's 200 %/120 % (extension). Verified on the wire by "
    "mininet/tests/test_buffer_sizing_lab.py (tcpdump on the sender, window 20, RTT 60 ms): the "
    "median gap between data segments is srtt/cwnd within 20 % when thesis-paced, half that with "
    "Linux's default ratios, and back to back (< 0.5 ms) unpaced.",
    "- TCP Reno (Linux's, with SACK, delayed ACKs, RACK/TLP), drop-tail; ns-2 in the thesis.",
    "- Drop rate = buffer-overflow drops / arrivals at the bottleneck over the window after the "
    "warm-up (counters); per-type drop rates and the scatter use the switch's per-packet records "
    "(`drop_records`, drops.csv). Drop rate per transfer size (Fig. 9-11), as the thesis derives "
    "it (section 3.2: the packets each transfer's sender sent until it ended, and those dropped "
    "in it) = the data segments of a size class's SURGE transfers that the bottleneck's buffer "
    "overflowed / the data segments their senders sent, retransmissions included, summed over "
    "the class, each transfer over its whole life (those ending after the "
    "warm-up, complete or cut off by the run's end; class by requested size, the bins of the delay "
    "per size). Each transfer is one TCP connection, named in transfers.csv by its 4-tuple; the "
    "numerator is the switch's drop records of that 4-tuple with a payload, the denominator the "
    "sender's tcp_info data_segs_out of it (the switch counts arrivals per port only). SYN-ACKs "
    "and FINs are in neither.",
]


def figure_sections(parts, figures):
    plots, lines = [], []
    pub = json.loads(PUBLISHED.read_text())["figures"]
    p2p, mixed = parts.get("p2p"), parts.get("mixed")
    specs = (("p2p", "Fig. 3-4: P2P, n varied (C = 100 Mb/s, D = 90 ms)"),
             ("mixed", "Fig. 5-7: mixed paced / unpaced populations"),
             ("web", "Fig. 8 and 11: web (SURGE), n varied, D = 90 ms"),
             ("load", "Fig. 10: web, n varied, D = 20 ms"),
             ("delay", "Fig. 9: web, D varied, n = 1500"),
             ("capacity", "Fig. 12-14: web, C varied, n = 1500"))
    for name, heading in specs:
        part = parts.get(name)
        lines += [f"## {heading}", "", f"Thesis: {pub[name]}", ""]
        if not part:
            lines += [f"Not run yet (`aqmlab study buffers --out DIR --parts {name}`).", ""]
            continue
        lines += [f"Runs complete: {len(part.complete())} of {len(part.loaded.runs)}.", ""]
        shown = len(plots)
        if name in ("p2p", "web", "load"):
            for value_of, ylabel, stem in ((utilisation_pct, "utilisation (%)", "util"),
                                           (drop_pct, "drop rate (%)", "drops")):
                plots += plot_metric(part, figures, flows, setting, value_of, "n (flows)", ylabel,
                                     f"{heading}: {ylabel}", f"{name}-{stem}", logx=True)
        if name == "p2p":
            plots += plot_drop_scatter(part, figures, "p2p-drop-scatter",
                                       "Fig. 4: flow number vs drop time (switch records)")
        if name == "mixed":
            for n in part.values(flows):
                for value_of, ylabel, stem in ((utilisation_pct, "utilisation (%)", "util"),
                                               (drop_pct, "drop rate (%)", "drops")):
                    plots += plot_metric(part, figures, paced_share, buffer_rule, value_of,
                                         "paced share", ylabel, f"Fig. 5, n = {n}: {ylabel}",
                                         f"mixed-n{n}-{stem}", select=lambda s, n=n: flows(s) == n)
                for kind in ("paced", "unpaced"):
                    plots += plot_metric(part, figures, paced_share, buffer_rule,
                                         type_throughput_mbps(kind), "paced share",
                                         "throughput per flow (Mb/s)",
                                         f"Fig. 6-7, n = {n}: {kind} flows' throughput",
                                         f"mixed-n{n}-{kind}-tput",
                                         select=lambda s, n=n: flows(s) == n)
                    plots += plot_metric(part, figures, paced_share, buffer_rule,
                                         type_drop_pct(kind), "paced share", "drop rate (%)",
                                         f"Fig. 6-7, n = {n}: {kind} flows' drop rate",
                                         f"mixed-n{n}-{kind}-drops",
                                         select=lambda s, n=n: flows(s) == n)
        if name in ("web", "load"):
            plots += plot_per_size(part, figures, flows, "n", heading, name, logx=True)
        if name == "delay":
            for value_of, ylabel, stem in ((drop_pct, "drop rate (%)", "drops"),):
                plots += plot_metric(part, figures, delay_ms, setting, value_of, "D (ms)", ylabel,
                                     f"{heading}: {ylabel}", f"delay-{stem}")
            plots += plot_per_size(part, figures, delay_ms, "D (ms)", heading, "delay")
        if name == "capacity":
            for d in part.values(delay_ms):
                for value_of, ylabel, stem in ((utilisation_pct, "utilisation (%)", "util"),
                                               (drop_pct, "drop rate (%)", "drops")):
                    plots += plot_metric(part, figures, rate_mbps, setting, value_of, "C (Mb/s)",
                                         ylabel, f"Fig. 12-13, D = {d} ms: {ylabel}",
                                         f"capacity-d{d}-{stem}",
                                         select=lambda s, d=d: delay_ms(s) == d)
                plots += plot_per_size(part, figures, rate_mbps, "C (Mb/s)",
                                       f"Fig. 12-14, D = {d} ms", f"capacity-d{d}",
                                       select=lambda s, d=d: delay_ms(s) == d)
        lines += [f"![{caption}]({Path(figures).name}/{file})" for file, caption in plots[shown:]]
        lines.append("")
    lines += ["## Findings, one by one", "",
              "Each finding of the thesis, checked at the sizes the lab ran (named in each "
              "line; the thesis's n goes to 1000-1500): where those are below the thesis's, "
              "\"holds\" means holds at the scaled size. Intervals are 95 % over seeds, per-seed "
              "paired.", "", *p2p_findings(p2p), *mixed_findings(mixed),
              *web_findings(parts), ""]
    return lines, plots


def quick_lines(parts, figures):
    part = parts.get(QUICK)
    if not part:
        return ["Not run."], []
    verdict = quick_verdict_of(part)
    rows = ["| buffer | packets | utilisation % | drop rate % | drop-sync index |",
            "|---|---|---|---|---|"]
    for rule in ("normal", "sqrtn"):
        select = lambda s, r=rule: buffer_rule(s) == r
        packets = next(part.loaded.results[r.run_id]["bottleneck_buffer"] for r in part.complete()
                       if buffer_rule(r.scenario) == rule) if any(
            buffer_rule(r.scenario) == rule for r in part.complete()) else "—"
        rows.append(f"| {rule} | {packets} | {fmt(part.estimate(select, utilisation_pct))} | "
                    f"{fmt(part.estimate(select, drop_pct))} | "
                    f"{fmt(part.estimate(select, run_sync(part)))} |")
    plots = plot_drop_scatter(part, figures, "quick-drop-scatter",
                              "quick variant: flow number vs drop time (switch records)")
    return ["16 unpaced Reno flows (4 pairs x 4), C = 10 Mb/s, D = 20 ms, "
            f"{len(part.complete())} runs of {part.loaded.experiment.duration:g} s.", "", *rows,
            "", f"Direction check: {verdict['text']}", "",
            *[f"![{caption}]({Path(figures).name}/{file})" for file, caption in plots]], plots


def wall_lines(root):
    wall = read_wall(root)
    lines = measured_lines(wall)
    overhead, runs = overhead_estimate(wall)
    rows = []
    for part in PARTS:
        experiment = study_file(part)
        planned = study.expand(experiment)
        seconds = (len(planned) * (experiment.duration + overhead) if runs
                   else study.estimated_seconds(experiment, planned))
        rows.append((part, len(planned), seconds / 3600))
    total = sum(h for _, _, h in rows)
    return lines + ["", "Full study, one run at a time (`--jobs 1`: 100 Mb/s runs must not share "
                    "the 2 cores), " + (f"each run its duration + {overhead:.0f} s measured "
                                        "overhead:" if runs else "the lab's own estimate:"), "",
                    "| part | runs | hours |", "|---|---|---|",
                    *[f"| {p} | {n} | {h:.1f} |" for p, n, h in rows],
                    f"| total | {sum(n for _, n, _ in rows)} | {total:.1f} |", "",
                    f"On N machines (`--executor slurm`): about {total:.0f} / N hours."]


def study_file(part):
    from aqmlab.config import load_experiment
    return load_experiment(EXPERIMENTS / f"{part}.toml")


def write_report(root, path):
    root, path = Path(root), Path(path)
    parts = load_parts(root)
    figures = path.parent / path.stem
    figures.mkdir(parents=True, exist_ok=True)
    sections, _ = figure_sections(parts, figures)
    quick, _ = quick_lines(parts, figures)
    full = [n for n in FIGURE_PARTS if n in parts]
    lines = [
        "# Buffer sizing with paced TCP reproduced: C x RTT vs C x RTT / sqrt(n)", "",
        "K. Tada, *TCP のバースト性およびその緩和手法がルータのバッファサイズ決定に与える影響* "
        "(The effect of TCP burstiness and its mitigation on router buffer sizing), special "
        "research report, Osaka University, 2007.", "",
        f"Generated by `aqmlab study buffers --out {root} --report-only --report {path}` "
        f"(aqmlab/reproductions/buffers.py) from the study folder `{root}`; the thesis's "
        f"findings are `mininet/experiments/buffer_sizing/published.json`.", "",
        "**Results in this report: " + (", ".join(full) + " (figure groups)" if full else
                                        "no figure group has run yet: every figure section "
                                        "below reads \"not run\"") + parts_present(parts), "",
        "Every number is a mean over repetitions (seeds) with its 95 % Student-t interval and n; "
        "comparisons are per-seed paired differences (runs with the same seed share their random "
        "streams).", "",
        "## The scale limit (committed measurement)", "",
        "How many flows this 2-core machine runs faithfully at C = 100 Mb/s, D = 90 ms: each row "
        "one run of `scale.toml` / `scale_web.toml` (25-30 s, BDP buffer; 3 seeds per "
        "configuration, each run on its own, a configuration faithful only if every seed is). "
        "The timing error is the "
        "traffic manager's own account (`softswitch` port timing: how late R1's bottleneck port "
        "sent each frame against its due time). Faithful at the packet time scale (what burst "
        "absorption in the buffer sees): late by at most one frame time (121 us at 100 Mb/s) on "
        "average and at most 1 % of frames more than 1 ms late; at the RTT time scale (what "
        "windows, synchronisation and utilisation see): at most 1 % of the base RTT on average "
        "(2 ms at 200 ms) and at most 5 % of frames more than 1 ms late. Both also need R1's "
        "process below 0.9 of a core and, for P2P with a BDP buffer, the link >= 90 % busy. The "
        "packet-scale rule was set first; that even 16 flows miss it led to stating the RTT-scale "
        "one as well.", "",
        *scale_lines(parts), "",
        "## Scaled against unscaled where both fit (`scaling.toml`)", "",
        "n = 64 unpaced flows at 100 Mb/s against n = 16 at 25 Mb/s (s = 4), D = 90 ms; the "
        "scaled sqrtN run keeps the unscaled buffer per flow (209 / 4 = 53 packets; the sqrtN rule "
        "applied to the scaled system would give 105, twice the per-flow buffer).", "",
        *scaling_lines(parts.get(SCALING)), "",
        *scaling_scatter(parts.get(SCALING), figures),
        "## How the thesis's testbed is reproduced, and every scaling", "",
        *SCALING_NOTES, "",
        *sections,
        "## The CI variant (`aqmlab study buffers --quick`)", "", *quick, "",
        "## Running the full study", "", "```",
        "aqmlab study buffers --out results/buffers --parts scale,scale_web   # quiet machine first",
        "aqmlab study buffers --out results/buffers        # every part; rerun to resume",
        "aqmlab study buffers --out /shared/buffers --executor slurm [--slurm-partition P]",
        "aqmlab study buffers --out results/buffers --report-only --report docs/reproductions/"
        "buffer-sizing.md", "```", "",
        "## Wall time", "", *wall_lines(root), *load_lines(parts), ""]
    return save_report(path, lines, figures, [], "Figures")


# ---------------------------------------------------------------- the command

def part_sources(root, parts, args, extra):
    return {part: EXPERIMENTS / f"{part}.toml" for part in parts}


def quick_verdict(root):
    return quick_verdict_of(Part(QUICK, Path(root) / QUICK))


REPRODUCTION = Reproduction(
    NAME, "The buffer-sizing thesis (C x RTT vs C x RTT / sqrt(n), paced vs unpaced TCP, P2P and "
    "SURGE web) reproduced: the scale limit, every figure group's grid, the report.",
    EXPERIMENTS, PARTS, QUICK, part_sources, write_report, quick_verdict)


def main(argv):
    return run_study(REPRODUCTION, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
