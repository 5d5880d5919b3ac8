"""RFC 2884 (ECN vs non-ECN TCP through RED) reproduced in one command.

    aqmlab study rfc2884 --out DIR [--parts bulk,crr] [--report FILE.md] [aqmlab run options]
    aqmlab study rfc2884 --out DIR --quick      # the CI variant (< 5 min)
    aqmlab study rfc2884 --out DIR --report-only

Steps: (1) the calibration of RFC 2884 section 4.4 (experiments/rfc2884/
calibration.toml): per congestion level, the candidate minth/maxth/wq whose
RED average stays in [minth, maxth] the largest fraction of the time;
(2) every part's file with those values written into its sweep, run with
`aqmlab run FILE --out DIR/<part> --resume` (common.py, shared with the other
reproductions: a study resumes where it stopped, and `--jobs` / `--executor
slurm` options pass straight through);
(3) the report: each published statement of sections 5.1-5.3 and 6 next to
aqmlab's number with its 95 % interval, whether the trend holds, and plots in
the style of the RFC's figures.
"""

import csv
import json
import math
import re
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from aqmlab import metrics, stats, study
from aqmlab.config import load_experiment, measured_transfer
from aqmlab.report import load_study, run_csv_rows
from aqmlab.reproductions.common import (GRID_REPEAT, WALL_TIMES, Reproduction, StudyError,
                                         by_priority, complete_runs, fmt, load_lines,
                                         measured_lines, overhead_estimate, parts_present,
                                         plot_estimates, plan_table, rule_stages, serial_hours,
                                         run_study, save_figure, traffic_seconds_of)
from aqmlab.reproductions import common

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments" / "rfc2884"
CALIBRATION = "calibration"
PARTS = ("fairness", "bulk", "crr", "bulk_modern", "crr_modern", "crr_ablation")
QUICK = "quick"
LEVELS = {2: "low", 5: "moderate", 10: "high"}
LEVEL_KEY = "workload.background.pairs"
RED_KEYS = ("aqm.minth", "aqm.maxth", "aqm.wq_log")
REGION_MIN = 0.5          # "most of the time": a run below this left the RED region
CALIBRATION_FILE = "calibration.json"
REGION_FILE = "red_region.json"   # a run's time below / in / above the RED region


# ---------------------------------------------------------------- the RED region

def read_queue(folder):
    """[(t seconds after the epoch, RED average in packets)] of a run's telemetry."""
    path = Path(folder) / "queue.csv"
    if not path.exists():
        return []
    with path.open() as handle:
        return [(float(row["t"]), float(row["avg"])) for row in csv.DictReader(handle)]


def run_region(loaded, run):
    """The RED-region fractions of one complete run over its measurement window:
    from its result.json (runs since the lab kept them there), else from the
    REGION_FILE an earlier report kept, else from queue.csv (about 1 MB a run)
    into REGION_FILE, so that a committed study needs no queue.csv."""
    kept = loaded.results[run.run_id].get("queue", {}).get("red_region")
    if kept is not None:
        return kept
    cached = loaded.folder / run.run_id / REGION_FILE
    if cached.exists():
        return json.loads(cached.read_text())
    experiment = loaded.experiment
    window = (experiment.warmup, experiment.duration)
    samples = [(t, avg) for t, avg in read_queue(loaded.folder / run.run_id)
               if window[0] <= t <= window[1]]
    found = metrics.red_region_fractions(samples, run.scenario.aqm.minth,
                                         run.scenario.aqm.maxth)
    if found is not None:
        cached.write_text(json.dumps(found))
    return found


def choose_red(loaded):
    """Per congestion level, the calibration candidate whose average spent the
    largest mean fraction of time in the RED region (ties: the smaller maxth,
    less queueing delay, then the smaller wq), as the RFC's authors tuned by hand ->
    {level: {"minth", "maxth", "wq_log", "region", "n", "candidates"}}."""
    by_level = defaultdict(lambda: defaultdict(list))
    for run in loaded.runs:
        if run.run_id not in loaded.results:
            continue
        fractions = run_region(loaded, run)
        if fractions is None:
            continue
        aqm = run.scenario.aqm
        key = (aqm.minth, aqm.maxth, aqm.wq_log)
        by_level[background_flows(run.scenario)][key].append(fractions["region"])
    choice = {}
    for level, candidates in sorted(by_level.items()):
        scored = {key: stats.estimate(values) for key, values in candidates.items()}
        best = max(scored, key=lambda key: (scored[key].mean, -key[1], -key[0], key[2]))
        choice[level] = {"minth": best[0], "maxth": best[1], "wq_log": best[2],
                         "region": scored[best].mean, "n": scored[best].n,
                         "candidates": [{"minth": k[0], "maxth": k[1], "wq_log": k[2],
                                         "region": e.mean, "n": e.n}
                                        for k, e in sorted(scored.items())]}
    return choice


def materialise(template_text, choice):
    """The part's experiment text with each congestion level's RED values
    (`choice` from choose_red) in its zipped sweep lists."""
    sweep = tomllib.loads(template_text).get("sweep", {})
    levels = sweep.get(LEVEL_KEY)
    if not levels or not all(key in sweep for key in RED_KEYS):
        raise StudyError(f"experiment has no zipped sweep of {LEVEL_KEY} and {', '.join(RED_KEYS)}")
    missing = [level for level in levels if level not in choice]
    if missing:
        raise StudyError(f"calibration has no congestion level {missing[0]} "
                         f"(background flows); it has {sorted(choice)}")
    text = template_text
    for key in RED_KEYS:
        values = ", ".join(str(choice[level][key.split(".")[1]]) for level in levels)
        text, count = re.subn(rf'^"{re.escape(key)}" = \[.*\]$', f'"{key}" = [{values}]', text,
                              flags=re.MULTILINE)
        if count != 1:
            raise StudyError(f"experiment's sweep must set {key} on one line, found {count}")
    return text


# ---------------------------------------------------------------- per-run values

def background_flows(scenario):
    return next(w.pairs for w in scenario.workloads if w.name == "background")


def variant(scenario):
    return scenario.name.split(":")[0]


def response_size(scenario):
    return next((w.size for w in scenario.workloads if w.kind == "crr"), None)


def point_key(scenario):
    return (variant(scenario), background_flows(scenario), scenario.aqm.maxp,
            response_size(scenario))


@dataclass(frozen=True)
class Transfer:
    goodput_bps: float     # size (or, if it did not complete, its bytes) over its duration
    complete: bool
    bytes: int


def bulk_transfer(folder, workload):
    """The fixed-size transfer of a bulk workload: goodput = size / completion
    time (what the user saw; retransmitted bytes are not counted). One that
    did not complete keeps its partial bytes and is flagged."""
    rows = [r for r in run_csv_rows(folder, "transfers.csv") if r["workload"] == workload
            and r["kind"] == "bulk" and int(r["size"]) > 0]
    if not rows:
        return None
    row = rows[0]
    seconds = float(row["delay"])
    complete = row["complete"] == "True"
    done = int(row["size"]) if complete else int(row["bytes"])
    return Transfer(8 * done / seconds if seconds > 0 else math.nan, complete, done)


def retransmits(result, workload):
    """(retransmitted segments, data segments) of a workload's senders."""
    flows = [s for key, s in result.get("flow_stats", {}).items()
             if key.split("/")[0] == workload]
    return (sum(s["retransmits"] for s in flows), sum(s["data_segments"] for s in flows))


def transactions(result, workload):
    return result["workloads"][workload]["transactions_per_s"]


def jain(result):
    return metrics.jain_index(result["goodputs"].values())


# ---------------------------------------------------------------- a loaded part

@dataclass
class Part:
    """One part's study folder, indexed by (variant, level, maxp, response size)."""
    name: str
    loaded: object
    points: dict = field(default_factory=dict)       # key -> point index

    @classmethod
    def load(cls, name, folder):
        loaded = load_study(folder)
        points = {point_key(s): i for i, s in enumerate(loaded.experiment.scenarios)}
        return cls(name, loaded, points)

    def runs(self, key):
        point = self.points.get(key)
        return [r for r in self.loaded.runs if r.point == point and r.run_id in self.loaded.results]

    def by_seed(self, key, value_of):
        """{seed: value_of(folder, result)} over the point's complete runs."""
        return {r.seed: value_of(self.loaded.folder / r.run_id, self.loaded.results[r.run_id])
                for r in self.runs(key)}

    def keys(self):
        return sorted(self.points, key=lambda k: (k[0], k[1], k[2], k[3] or 0))


def ecn_metric(part_name):
    """(ECN value_of(folder, result), non-ECN value_of, unit) of a part."""
    if part_name.startswith("bulk"):
        def goodput(workload):
            def value_of(folder, result):
                transfer = bulk_transfer(folder, workload)
                return transfer.goodput_bps / 1e6 if transfer else math.nan
            return value_of
        return goodput("ecn-on"), goodput("ecn-off"), "Mb/s"
    return (lambda f, r: transactions(r, "crr-ecn"), lambda f, r: transactions(r, "crr-noecn"),
            "transactions/s")


def advantage(part, key):
    """ECN's relative advantage in % per seed pair ((ECN - non-ECN) / non-ECN,
    both in the same run) -> ({seed: %}, Estimate)."""
    ecn_of, non_of, _ = ecn_metric(part.name)
    ecn, non = part.by_seed(key, ecn_of), part.by_seed(key, non_of)
    per_seed = {s: 100 * (ecn[s] - non[s]) / non[s] for s in ecn
                if s in non and non[s] and math.isfinite(ecn[s]) and math.isfinite(non[s])}
    return per_seed, stats.estimate(per_seed.values())


# ---------------------------------------------------------------- published statements

@dataclass(frozen=True)
class Statement:
    section: str
    text: str                 # what the RFC says
    part: str
    variant: str
    a: tuple                  # (level, maxp, size) of the first point
    b: tuple                  # ... and the second: the advantage moves from a to b
    published: tuple          # (% at a, % at b)
    why: str                  # why today's magnitude can differ


RENO_WHY = ("Linux 6's Reno with SACK off is NewReno (RFC 6582) with proportional rate reduction "
            "(RFC 6937), so several losses in one window cost one recovery, not the repeated "
            "halvings or timeouts of the 2000 Reno that gave ECN its edge; F-RTO and a 200 ms "
            "minimum RTO shorten the rest.")
SACK_WHY = ("With SACK both flows recover every loss of a window in one round trip, so ECN "
            "saves only the retransmitted bytes and the loss-detection delay, as in the RFC; "
            "today's SACK adds DSACK and lost-retransmission detection.")
CRR_WHY = ("A 5 KB response is 4 segments: without ECN a lost segment near its end cannot get "
           "3 duplicate ACKs and waits for the retransmission timeout, and a lost SYN for the "
           "initial RTO (1 s today, 3 s in 2000), so the gain depends on how often each happens "
           "against a transaction's duration; magnitudes also move with the RED values the "
           "calibration chose and today's NewReno/PRR recovery; the RFC ran about an hour per "
           "test, 3 minutes here.")

STATEMENTS = (
    Statement("5.2 (1)", "Bulk, Reno, maxp 0.1: ECN's relative advantage grows from low to high "
              "congestion", "bulk", "reno", (2, 0.1, None), (10, 0.1, None), (23, 50), RENO_WHY),
    Statement("5.2 (2)", "Bulk, Reno, high congestion: the advantage grows with maxp 0.02 -> 0.5",
              "bulk", "reno", (10, 0.02, None), (10, 0.5, None), (10, 60), RENO_WHY),
    Statement("5.2 SACK", "Bulk, SACK, maxp 0.1: low -> high congestion", "bulk", "reno-sack",
              (2, 0.1, None), (10, 0.1, None), (5, 15), SACK_WHY),
    Statement("5.2 SACK", "Bulk, SACK, high congestion: maxp 0.02 -> 0.5", "bulk", "reno-sack",
              (10, 0.02, None), (10, 0.5, None), (10, 40), SACK_WHY),
    Statement("5.3", "Transactions, 5 KB, Reno, maxp 0.1: moderate -> high congestion", "crr",
              "reno", (5, 0.1, 5000), (10, 0.1, 5000), (42, 62), CRR_WHY),
    Statement("5.3", "Transactions, 5 KB, Reno, high congestion: maxp 0.02 -> 0.5 "
              "(0.8 -> 2.2 transactions/s)", "crr", "reno", (10, 0.02, 5000), (10, 0.5, 5000),
              (20, 140), CRR_WHY),
    Statement("5.3 SACK", "Transactions, 5 KB, SACK, maxp 0.1: moderate -> high congestion",
              "crr", "reno-sack", (5, 0.1, 5000), (10, 0.1, 5000), (47, 80), CRR_WHY),
    Statement("5.3 SACK", "Transactions, 5 KB, SACK, high congestion: maxp 0.02 -> 0.5", "crr",
              "reno-sack", (10, 0.02, 5000), (10, 0.5, 5000), (15, 120), CRR_WHY),
    Statement("5.3 / 6", "Transactions, Reno, high congestion, maxp 0.1: the gain shrinks as "
              "the response grows (5 KB vs 20 KB)", "crr", "reno", (10, 0.1, 5000),
              (10, 0.1, 20000), (None, None), CRR_WHY),
)
STATEMENT_N = 5               # repetitions the issue asks for at a statement's points
FAIRNESS_LOW = 0.979          # the published table's lowest index
FAIRNESS_PUBLISHED = {0.02: (0.996888, 0.991946), 0.05: (0.995987, 0.988286),
                      0.1: (0.985403, 0.989726), 0.2: (0.979368, 0.983342)}


FORCED_NOTE = 50              # % of drops forced above which a point's row says so


def run_forced_share(result):
    """% of a run's bottleneck drops that were forced (the average above
    maxth, or a full buffer), NaN without drops. RED drops those packets
    whether or not they are ECN-capable, so ECN can only change the rest."""
    b = result["bottleneck"]
    forced = b.get("forced_drops", 0) + b.get("overflow_drops", 0)
    drops = forced + b.get("early_drops", 0)
    return 100 * forced / drops if drops else math.nan


def forced_share(part, key):
    """run_forced_share per seed of a point -> Estimate."""
    values = part.by_seed(key, lambda folder, result: run_forced_share(result)).values()
    return stats.estimate(values)              # NaN (no drops) left out


def forced_note(statement, part):
    """A sentence on each of the statement's points where most drops were
    forced, from the runs' counters (empty if none)."""
    notes = []
    for name, (level, maxp, size) in (("first", statement.a), ("second", statement.b)):
        found = forced_share(part, (statement.variant, level, maxp, size))
        if found.n and found.mean >= FORCED_NOTE:
            notes.append(f"At the {name} point ({LEVELS[level]} congestion, maxp {maxp}) "
                         f"{fmt(found, unit=' %')} of the drops were forced (the average above "
                         "maxth or a full buffer), which ECN-capable packets take as drops "
                         "too, so ECN can change only the rest.")
    return " ".join(notes)


def trend_verdict(first, second, difference, expect_rise):
    """Does the sign (ECN ahead at both points) and the ordering hold?"""
    if first.n == 0 or second.n == 0:
        return "no data"
    ahead = first.mean > 0 and second.mean > 0
    rises = difference.mean > 0 if expect_rise else difference.mean < 0
    if ahead and rises:
        loose = [name for name, firm in (("first point", first.low > 0),
                                         ("second point", second.low > 0),
                                         ("change", difference.excludes_zero())) if not firm]
        return "holds" if not loose else \
            f"holds in the means (interval includes 0: {', '.join(loose)})"
    if not ahead:
        return "does not hold: ECN not ahead at both points"
    return "sign holds, ordering does not"


def evaluate(statement, parts):
    part = parts.get(statement.part)
    if part is None:
        return None
    keys = [(statement.variant, level, maxp, size) for level, maxp, size in (statement.a,
                                                                             statement.b)]
    (seeds_a, first), (seeds_b, second) = advantage(part, keys[0]), advantage(part, keys[1])
    difference = stats.paired_difference(seeds_b, seeds_a)
    low, high = statement.published
    expect_rise = low is not None and high > low      # None: the gain shrinks from a to b
    return {"first": first, "second": second, "difference": difference,
            "verdict": trend_verdict(first, second, difference, expect_rise)}


# ---------------------------------------------------------------- wall time

def traffic_seconds(experiment, scenario):
    """How long a run's traffic lasts: its duration, or with until_complete
    until its fixed-size transfers are done, estimated at a fair share of the
    bottleneck among all flows (at most the duration)."""
    if not experiment.until_complete:
        return experiment.duration
    flows = sum(w.pairs * w.connections for w in scenario.workloads)
    rate = scenario.topology.bottleneck.rate_bps
    done = max(w.start + 8 * w.size * flows / rate for w in scenario.workloads
               if measured_transfer(w))
    return min(experiment.duration, done)


def run_seconds(experiment, run, overhead=None, traffic=None):
    """A run's planned wall seconds: its traffic (`traffic` measured, else
    traffic_seconds) plus the measured overhead per run, or without one the
    lab's model of set-up and teardown (study.estimated_seconds)."""
    expected = traffic_seconds(experiment, run.scenario) if traffic is None else traffic
    if overhead is None:
        return planned_seconds(experiment, [run]) - traffic_seconds(experiment,
                                                                    run.scenario) + expected
    return expected + overhead


def measured_traffic(root):
    """{(bulk part, congestion level): mean traffic seconds of its complete
    runs} under root: how long 20 MB really took, for the plan's remaining runs."""
    found = defaultdict(list)
    for part in ("bulk", "bulk_modern"):
        folder = Path(root) / part
        if not any(folder.glob(f"*/{study.COMPLETE}")):
            continue
        loaded = load_study(folder)
        for run in (r for r in loaded.runs if r.run_id in loaded.results):
            found[(part, background_flows(run.scenario))].append(
                traffic_seconds_of(folder / run.run_id, loaded.experiment.duration))
    return {key: sum(values) / len(values) for key, values in found.items()}


# Which points each part's published statements are about (all repetitions
# run there, first); the rest of a part's grid gets --grid-repeat repetitions.
MODERN_OF = {"bulk_modern": "bulk", "crr_modern": "crr"}
ABLATION_MAXP = (0.02, 0.1, 0.5)      # the RFC's range ends and its usual maxp
STAGE_ORDER = ("crr", "bulk", "fairness", "crr_modern", "crr_ablation", "bulk_modern")
HEADLINE_LABEL = {"crr": "5.3 statements", "bulk": "5.2 statements and retransmissions",
                  "fairness": "5.1 published table", "crr_modern": "5.3 points, today's TCP",
                  "bulk_modern": "5.2 points, today's TCP",
                  "crr_ablation": f"ablation at maxp {', '.join(map(str, ABLATION_MAXP))}"}


def headline(part):
    """scenario -> True when a published statement (or, for the parts beyond
    the RFC, the comparison at the statements' points) is about its point."""
    if part == "fairness":
        return lambda s: s.aqm.maxp in FAIRNESS_PUBLISHED
    if part == "crr_ablation":
        return lambda s: s.aqm.maxp in ABLATION_MAXP
    if part in MODERN_OF:      # one TCP: the statements' (level, maxp, size), any variant
        where = {w for st in STATEMENTS if st.part == MODERN_OF[part] for w in (st.a, st.b)}
        return lambda s: point_key(s)[1:] in where
    points = {(st.variant, *w) for st in STATEMENTS if st.part == part for w in (st.a, st.b)}
    return lambda s: point_key(s) in points


def part_stages(sources, grid_repeat, overhead=None, cores=None):
    """The study's runs in priority order: every part's headline points with
    all their repetitions (the statements' parts first), then the rest of
    each grid with `grid_repeat` repetitions -> [common.Stage], each split by
    the --jobs rule for its runs' hosts on `cores`."""
    head, tail = [], []
    for part in sorted(sources, key=lambda p: STAGE_ORDER.index(p) if p in STAGE_ORDER else 99):
        experiment = load_experiment(sources[part])
        runs = {r.run_id: r for r in study.expand(experiment)}
        first, rest = by_priority(list(runs.values()), headline(part), grid_repeat,
                                  lambda run: run_seconds(experiment, run, overhead))
        head += rule_stages(experiment, part, HEADLINE_LABEL[part], [runs[r] for r in first],
                            cores)
        tail += rule_stages(experiment, part, f"rest of the grid, n = {grid_repeat}",
                            [runs[r] for r in rest], cores)
    return head + tail


PLAN_CORES = 2      # the plan is this machine's: 2 cores


def plan_lines(root, overhead):
    """The run plan of the full study (the repository's files; runs already
    complete in root are counted as done) at the --jobs rule's limit."""
    sources = {part: EXPERIMENTS / f"{part}.toml" for part in (CALIBRATION,) + PARTS}
    calibration = load_experiment(sources[CALIBRATION])
    stages = rule_stages(calibration, CALIBRATION, "RED region per congestion level (runs first)",
                         study.expand(calibration), PLAN_CORES)
    stages += part_stages({p: sources[p] for p in PARTS}, GRID_REPEAT, overhead, PLAN_CORES)
    experiments = {part: load_experiment(path) for part, path in sources.items()}
    runs = {part: {r.run_id: r for r in study.expand(e)} for part, e in experiments.items()}
    # the command's --jobs: the rule's largest, which each stage lowers for its hosts
    jobs = max(stage.max_jobs for stage in stages)
    measured = measured_traffic(root)

    def seconds_of_run(part, run_id):
        run = runs[part][run_id]
        return run_seconds(experiments[part], run, overhead,
                           measured.get((part, background_flows(run.scenario))))
    done = complete_runs(root, (CALIBRATION,) + PARTS)
    table, total = plan_table(stages, seconds_of_run, jobs, done)
    serial = serial_hours(stages, seconds_of_run, done)
    full = sum(sum(seconds_of_run(p, r) for r in runs[p]) for p in runs) / 3600
    longest = max(seconds_of_run(p, r) for p in runs for r in runs[p])
    return [
        f"Every published statement's points run with all their repetitions (n = 5; fairness "
        f"n = 10 as the RFC), first, in the order below, so a study stopped part-way already "
        f"answers them; the other points of each grid (the figures' remaining maxp and "
        f"congestion levels) get n = {GRID_REPEAT} (`--grid-repeat`; 10, the files' largest "
        f"repeat, runs the full grid: {full:.0f} h one run at a time). Hours at --jobs "
        f"{jobs}, which each stage lowers to the measured --jobs rule for its runs' hosts at "
        f"1.5 Mb/s on this 2-core machine (study.JOBS_RULE, mininet/bench/JOBS.md), each "
        f"run's traffic plus "
        + (f"the measured {overhead:.1f} s per run" if overhead is not None else
           "the lab's set-up/teardown model")
        + "; a bulk run lasts until both 20 MB transfers are done, "
        + (", ".join(f"measured {seconds:.0f} s of traffic for {part} at {LEVELS[level]} "
                     f"congestion" for (part, level), seconds in sorted(measured.items()))
           + " (mean of its complete runs); elsewhere " if measured else "")
        + "estimated at a fair share of 1.5 Mb/s among all its flows:", "", *table, "",
        "Run (and resume: rerun the same command; complete runs are kept) on this machine, "
        "then commit the study folder without its bulky per-run files (each run keeps its "
        "RED-region fractions in its result.json, so queue.csv can stay behind) and "
        "rebuild this report:", "",
        "```",
        f"aqmlab study rfc2884 --out results/rfc2884 --jobs {jobs}",
        "tar -C results/rfc2884 --exclude lab --exclude '*.png' --exclude report.md \\",
        "    --exclude queue.csv --exclude 'drops*.csv' -cf - . |",
        "    tar -C docs/reproductions/rfc2884/study -xf -",
        "aqmlab study rfc2884 --out docs/reproductions/rfc2884/study --report-only --report "
        "docs/reproductions/rfc2884.md",
        "```", "",
        f"On N machines (`aqmlab study rfc2884 --out /shared/rfc2884 --executor slurm`, one run "
        f"per machine, each stage one job array): about {serial:.0f} / N hours of the "
        f"plan above ({serial / 10:.1f} h on 10, {serial / 50:.1f} h on 50), never "
        f"below the calibration plus one run per stage (the longest, a high-congestion bulk "
        f"run, {longest / 60:.0f} min)."]


# ---------------------------------------------------------------- the report

def load_parts(root):
    parts = {}
    for name in PARTS + (QUICK,):
        folder = Path(root) / name
        if folder.is_dir() and any(folder.glob("*/complete")):
            parts[name] = Part.load(name, folder)
    return parts


def statement_rows(parts):
    lines = ["| RFC | statement | published | aqmlab (first point) | aqmlab (second point) | "
             "change (paired) | trend | why the magnitude differs |", "|---" * 8 + "|"]
    for s in STATEMENTS:
        found = evaluate(s, parts)
        published = "—" if s.published[0] is None else f"{s.published[0]} % -> {s.published[1]} %"
        if found is None:
            lines.append(f"| {s.section} | {s.text} | {published} | not run | not run | — | "
                         f"— | {s.why} |")
            continue
        n = min(found["first"].n, found["second"].n)
        partial = (f" (partial: n = {n} < {STATEMENT_N}, the study is still running)"
                   if 0 < n < STATEMENT_N else "")
        lines.append(f"| {s.section} | {s.text} | {published} | {fmt(found['first'], unit=' %')} "
                     f"| {fmt(found['second'], unit=' %')} | "
                     f"{fmt(found['difference'], unit=' pts')} | {found['verdict']}{partial} | "
                     f"{' '.join(filter(None, (forced_note(s, parts[s.part]), s.why)))} |")
    return lines


def absolute_crr_lines(parts):
    """Section 5.3's statement in transactions/s: 5 KB, high congestion,
    Reno, maxp 0.02 -> 0.5, "from 0.8 to 2.2" (the ECN client's)."""
    part = parts.get("crr")
    cells = []
    for maxp in (0.02, 0.5):
        key = ("reno", 10, maxp, 5000)
        ecn_of, non_of, _ = ecn_metric("crr")
        found = [stats.estimate(part.by_seed(key, f).values()) if part else None
                 for f in (ecn_of, non_of)]
        cells.append(f"maxp {maxp}: ECN {fmt(found[0]) if part else 'not run'}, non-ECN "
                     f"{fmt(found[1]) if part else 'not run'}")
    return ["5.3 in transactions/s (5 KB, high congestion, Reno; the RFC: \"the number of "
            "transactions per second increases from 0.8 to 2.2\"): " + "; ".join(cells) + "."]


def fairness_lines(parts):
    part = parts.get("fairness")
    lines = ["| maxp | published, BG ECN / BG non-ECN | aqmlab, BG non-ECN | aqmlab, BG ECN |",
             "|---|---|---|---|"]
    reached = []
    for maxp in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5):
        published = FAIRNESS_PUBLISHED.get(maxp)
        cells = []
        for bg in ("bg-nonecn", "bg-ecn"):
            values = part.by_seed((bg, 2, maxp, None), lambda f, r: jain(r)) if part else {}
            found = stats.estimate(values.values())
            cells.append(fmt(found, 4))
            if published and found.n >= 2:
                reached.append(found.high >= FAIRNESS_LOW)
        text = f"{published[0]} / {published[1]}" if published else "—"
        lines.append(f"| {maxp} | {text} | {cells[0]} | {cells[1]} |")
    if reached:
        lines += ["", f"Trend (fair, as published): the 95 % interval reaches the published "
                      f"range (>= {FAIRNESS_LOW}) at {sum(reached)} of {len(reached)} points "
                      f"with maxp 0.02-0.2."]
    return lines


def retransmission_lines(parts):
    """Retransmitted segments of the ECN and the non-ECN 20 MB transfer, per
    part and TCP, apart for the points where RED's early drops dominate and
    those where most drops were forced (forced_share): RED drops ECN-capable
    packets there too, which is not the RED the RFC's claim is about."""
    lines = ["| part | TCP | points | ECN flow retransmits per 20 MB | non-ECN | "
             "difference (paired) | trend |", "|---|---|---|---|---|---|---|"]
    for name in ("bulk", "bulk_modern"):
        part = parts.get(name)
        if not part:
            continue
        for tcp in sorted({k[0] for k in part.points}):
            regimes = defaultdict(list)
            for key in (k for k in part.points if k[0] == tcp and part.runs(k)):
                forced = forced_share(part, key)
                regimes[bool(forced.n) and forced.mean >= FORCED_NOTE].append(key)
            for mostly_forced, keys in sorted(regimes.items()):
                lines.append(retransmission_row(part, tcp, keys, mostly_forced))
    return lines if len(lines) > 2 else ["Not run (`bulk`, `bulk_modern`)."]


def retransmission_row(part, tcp, keys, mostly_forced):
    ecn, non = {}, {}
    for key in keys:
        for run in part.runs(key):
            result = part.loaded.results[run.run_id]
            ecn[(key, run.seed)] = retransmits(result, "ecn-on")[0]
            non[(key, run.seed)] = retransmits(result, "ecn-off")[0]
    difference = stats.paired_difference(ecn, non)
    holds = difference.excludes_zero() and difference.mean < 0
    points = ", ".join(f"{LEVELS[level]} {maxp}" for _, level, maxp, _ in sorted(keys))
    regime = (f"most drops forced (>= {FORCED_NOTE} %): {points}" if mostly_forced else
              f"early drops dominate: {points}")
    return (f"| {part.name} | {tcp} | {regime} | {fmt(stats.estimate(ecn.values()))} | "
            f"{fmt(stats.estimate(non.values()))} | {fmt(difference)} | "
            f"{'holds: ECN fewer' if holds else stats.verdict(difference)} |")


def untimed_region(loaded, run_id):
    """Why a run has no region fractions, and what its result.json still says:
    the packet-sampled mean RED average against the run's [minth, maxth]."""
    run = next(r for r in loaded.runs if r.run_id == run_id)
    mean = loaded.results[run_id].get("queue", {}).get("avg_mean")
    if mean is None:
        return "no queue telemetry"
    aqm = run.scenario.aqm
    where = "inside" if aqm.minth <= mean <= aqm.maxth else "outside"
    return (f"its queue.csv was not kept, so no time fractions; its packet-sampled mean "
            f"RED average, {mean:.1f} packets, lies {where} [{aqm.minth}, {aqm.maxth}]")


def region_lines(parts):
    """Each part's time in the RED region; runs flagged for less than
    REGION_MIN of it, or for most of their drops forced (run_forced_share):
    either way RED was not the early-dropping queue the RFC operated."""
    lines = [f"| part | runs | mean time in the RED region | runs below {REGION_MIN:.0%} in "
             f"the region | runs with most drops forced (>= {FORCED_NOTE} %) |",
             "|---|---|---|---|---|"]
    flagged = []
    for name, part in parts.items():
        fractions, forced = {}, {}
        for run in part.loaded.runs:
            if run.run_id in part.loaded.results:
                found = run_region(part.loaded, run)
                fractions[run.run_id] = found["region"] if found else math.nan
                forced[run.run_id] = run_forced_share(part.loaded.results[run.run_id])
        outside = {r for r, f in fractions.items() if not f >= REGION_MIN}
        mostly_forced = {r for r, f in forced.items() if f >= FORCED_NOTE}
        for r in sorted(outside | mostly_forced):
            why = [f"{fractions[r]:.0%} in region" if fractions[r] >= 0 else
                   untimed_region(part.loaded, r)]
            if r in mostly_forced:
                why.append(f"{forced[r]:.0f} % of its drops forced")
            flagged.append(f"{name}/{r} ({'; '.join(why)})")
        lines.append(f"| {name} | {len(fractions)} | {fmt(stats.estimate(fractions.values()))} "
                     f"| {len(outside)} | {len(mostly_forced)} |")
    if flagged:
        lines += ["", "Flagged runs (not left out of the figures above; read them with this in "
                  "mind): " + ", ".join(flagged) + "."]
    return lines


def modern_lines(parts):
    """ECN's relative advantage at each statement's points with the RFC's TCP
    and with today's defaults (CUBIC, SACK, RACK-TLP, IW10), side by side."""
    lines = ["| RFC | point (congestion, maxp, size) | RFC's TCP (statement's variant) | "
             "today's defaults |", "|---|---|---|---|"]
    seen = set()
    for st in STATEMENTS:
        rfc, modern = parts.get(st.part), parts.get(f"{st.part}_modern")
        for level, maxp, size in (st.a, st.b):
            if (st.variant, level, maxp, size) in seen:
                continue
            seen.add((st.variant, level, maxp, size))
            ours = advantage(rfc, (st.variant, level, maxp, size))[1] if rfc else None
            now = [advantage(modern, k)[1] for k in modern.points
                   if k[1:] == (level, maxp, size)] if modern else []
            where = (f"{LEVELS[level]}, {maxp}" + (f", {size // 1000} KB" if size else ""))
            lines.append(f"| {st.section} | {where} | "
                         f"{fmt(ours, unit=' %') if ours else 'not run'} ({st.variant}) | "
                         f"{fmt(now[0], unit=' %') if now else 'not run'} |")
    return lines


ABLATION_BASE = "neither"


def ablation_lines(parts):
    """ECN's advantage for 5 KB transactions at high congestion with RACK and
    TLP each on/off, and how each mechanism changes it from neither (per seed:
    the same seeds run every scenario)."""
    part = parts.get("crr_ablation")
    if not part:
        return ["Not run (`crr_ablation`)."]
    scenarios = ("rack-tlp", "rack-only", "tlp-only", ABLATION_BASE)
    lines = ["| maxp | " + " | ".join(f"{v}: ECN advantage" for v in scenarios) + " | "
             + " | ".join(f"{v} - {ABLATION_BASE} (paired)" for v in scenarios[:-1]) + " |",
             "|---" * (1 + 2 * len(scenarios) - 1) + "|"]
    for maxp in sorted({k[2] for k in part.points}):
        gains = {v: advantage(part, (v, 10, maxp, 5000)) for v in scenarios}
        changes = [stats.paired_difference(gains[v][0], gains[ABLATION_BASE][0])
                   for v in scenarios[:-1]]
        lines.append(f"| {maxp} | " + " | ".join(fmt(gains[v][1], unit=" %") for v in scenarios)
                     + " | " + " | ".join(
                         fmt(c, unit=" pts") + ("" if c.n < 2 else " *" if c.excludes_zero()
                                                else "") for c in changes) + " |")
    return lines + ["", "\\* the 95 % interval of the change excludes 0: that mechanism "
                        "changes ECN's advantage at that maxp. Without RACK and TLP a lost last "
                        "segment of a 4-segment response waits for a retransmission timeout "
                        "unless ECN avoided the loss; TLP probes after about 2 RTT and RACK "
                        "marks losses by time, so a shrinking advantage with them on is the "
                        "expected sign."]


def incomplete_lines(parts):
    flagged = []
    for name in ("bulk", "bulk_modern"):
        part = parts.get(name)
        for run in part.loaded.runs if part else ():
            if run.run_id not in part.loaded.results:
                continue
            for workload in ("ecn-on", "ecn-off"):
                transfer = bulk_transfer(part.loaded.folder / run.run_id, workload)
                if transfer and not transfer.complete:
                    flagged.append(f"{name}/{run.run_id} {workload}: {transfer.bytes} bytes of "
                                   f"20 MB")
    if not flagged:
        return ["Every measured 20 MB transfer completed."] if any(
            n in parts for n in ("bulk", "bulk_modern")) else []
    return ["Transfers that did not complete within the run's cap (goodput = their bytes over "
            "their time, flagged): " + "; ".join(flagged) + "."]


def quick_lines(parts):
    part = parts.get(QUICK)
    if not part:
        return []
    key = part.keys()[0]
    verdict = main_effect(part)
    ecn_of, non_of, unit = ecn_metric(QUICK)
    ecn, non = part.by_seed(key, ecn_of), part.by_seed(key, non_of)
    return [f"Point: {LEVELS.get(key[1], key[1])} congestion ({key[1]} background flows), "
            f"maxp {key[2]}, {key[3]} B responses, Reno SACK off, "
            f"{part.loaded.experiment.duration:g} s runs.", "",
            "| | transactions/s |", "|---|---|",
            f"| ECN | {fmt(stats.estimate(ecn.values()))} |",
            f"| non-ECN | {fmt(stats.estimate(non.values()))} |",
            f"| ECN - non-ECN (paired per seed) | {fmt(verdict['difference'])} |",
            f"| ECN's relative advantage | {fmt(advantage(part, key)[1], unit=' %')} |", "",
            "Published at this point (section 5.3, 5 KB, high congestion, maxp 0.5, Reno): "
            "ECN ahead by about 140 % (the RFC's figure: 0.8 -> 2.2 transactions/s as maxp goes "
            "0.02 -> 0.5); 3-minute runs there, "
            f"{part.loaded.experiment.duration - part.loaded.experiment.warmup:g} s of "
            "transactions here, so only the direction is checked.", "",
            f"Direction check: {verdict['text']}"]


def main_effect(part):
    """The CI check: ECN's transactions/s (or goodput) must not be below
    non-ECN's: fails only if the 95 % interval of the paired difference lies
    below 0 (a false failure when ECN truly equals non-ECN: 2.5 %)."""
    key = part.keys()[0]
    ecn_of, non_of, _ = ecn_metric(part.name)
    difference = stats.paired_difference(part.by_seed(key, ecn_of), part.by_seed(key, non_of))
    ok = difference.n >= 2 and not difference.high < 0
    text = (f"{'passed' if ok else 'FAILED'}: ECN - non-ECN = {fmt(difference)} over "
            f"{difference.n} seed pairs; {stats.verdict(difference)}. The check fails only if "
            f"the 95 % interval lies below zero (one-sided 97.5 % confidence that ECN is worse).")
    return {"ok": ok, "difference": difference, "text": text}


def plot_part(part, folder):
    """RFC-style figures: the metric against maxp, one panel per congestion
    level, ECN and non-ECN with 95 % intervals -> [(file, caption)]."""
    ecn_of, non_of, unit = ecn_metric(part.name)
    plots = []
    for tcp, size in sorted({(k[0], k[3]) for k in part.points}, key=lambda v: (v[0], v[1] or 0)):
        if not any(part.runs(k) for k in part.points if (k[0], k[3]) == (tcp, size)):
            continue
        levels = sorted({k[1] for k in part.points if k[0] == tcp and k[3] == size
                         and part.runs(k)})           # a level with no run yet gets no panel
        fig, axes = plt.subplots(1, len(levels), figsize=(4 * len(levels), 3.4), squeeze=False)
        for ax, level in zip(axes[0], levels):
            keys = sorted(k for k in part.points if k[:2] == (tcp, level) and k[3] == size)
            for label, value_of, marker in (("ECN", ecn_of, "o"), ("non-ECN", non_of, "s")):
                found = [(k[2], stats.estimate(part.by_seed(k, value_of).values())) for k in keys]
                found = [(x, e) for x, e in found if e.n]
                if not found:
                    continue
                plot_estimates(ax, found, marker=marker, capsize=3, label=label)
            ax.set_title(f"{LEVELS.get(level, level)} congestion ({level} background)", fontsize=9)
            ax.set_xlabel("maxp")
            ax.set_ylabel(unit)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
        stem = f"{part.name}-{tcp}" + (f"-{size // 1000}KB" if size else "")
        fig.suptitle(f"{part.name}, {tcp}" + (f", {size // 1000} KB responses" if size else "")
                     + ": means with 95 % intervals", fontsize=9)
        plots += save_figure(fig, folder, stem,
                             f"{part.name}, {tcp}" + (f", {size // 1000} KB" if size else ""))
    return plots


def write_report(root, path):
    """The side-by-side report of the study folder `root` into `path` (plots
    next to it in <stem>/) -> the markdown text."""
    root, path = Path(root), Path(path)
    parts = load_parts(root)
    figures = path.parent / path.stem
    figures.mkdir(parents=True, exist_ok=True)
    plots = [p for name, part in parts.items() if name != "fairness"   # a table in the RFC
             for p in plot_part(part, figures)]
    wall = json.loads((root / WALL_TIMES).read_text()) if (root / WALL_TIMES).exists() else {}
    full = [n for n in PARTS if n in parts and not parts[n].loaded.quick]
    lines = [
        "# RFC 2884 reproduced: ECN vs non-ECN TCP through RED",
        "",
        f"Generated by `aqmlab study rfc2884 --out {root} --report-only --report {path}` "
        f"(aqmlab/reproductions/rfc2884.py) from the study folder `{root}`.",
        "",
        "**Results in this report: " + (", ".join(full) + " (full grid)" if full else
                                        "NOT the full grid, only " + (", ".join(
                                            f"{n} (--quick)" if n != QUICK else
                                            "the quick CI variant" for n in parts) or "none")
                                        + ": published statements without data read "
                                          "\"not run\" or \"no data\"")
        + parts_present(parts),
        "",
        "Intervals are 95 % Student-t intervals over repetitions (seeds); ECN's relative "
        "advantage is (ECN - non-ECN) / non-ECN per run (both clients share the run), then "
        "averaged over seeds; a change between two points is the per-seed paired difference.",
        "",
        "How to run the full study (the statements' points first) and how long it takes: "
        "\"Run plan\" under \"Wall time\" below.",
        "",
        "The experiment files and every TCP deviation from the RFC's testbed: "
        "mininet/experiments/rfc2884/README.md.",
        "",
        "## Published statements (sections 5.1-5.3 and 6) side by side",
        "",
        *statement_rows(parts),
        "",
        *absolute_crr_lines(parts),
        "",
        "### 5.1 Fairness: Jain's index of 2 background + 2 competing flows",
        "",
        *fairness_lines(parts),
        "",
        "### 5.2 \"ECN flows had almost no retransmissions\"",
        "",
        *retransmission_lines(parts),
        "",
        *incomplete_lines(parts),
        "",
        "## Beyond the RFC: today's Linux defaults at the statements' points",
        "",
        "ECN's relative advantage (goodput or transactions/s) at each point a published "
        "statement is about, with the RFC's TCP (Reno, IW 2, no RACK/TLP; SACK as the "
        "statement) and with today's defaults (`bulk_modern`, `crr_modern`: CUBIC, SACK, "
        "RACK-TLP, IW 10):",
        "",
        *modern_lines(parts),
        "",
        "### Which modern mechanism changes ECN's advantage for short transactions",
        "",
        "`crr_ablation`: 5 KB responses, high congestion, today's defaults with RACK "
        "(`tcp.recovery`) and TLP (`tcp.early_retrans`) each on or off:",
        "",
        *ablation_lines(parts),
        "",
        "## The CI variant (`aqmlab study rfc2884 --quick`)",
        "",
        *quick_lines(parts),
        "",
        "## Calibration and the RED region (RFC 2884 section 4.4)",
        "",
        *calibration_lines(root),
        "",
        *region_lines(parts),
        "",
        "## Wall time",
        "",
        *wall_lines(root, wall),
        *load_lines(parts),
        "",
    ]
    if plots:
        lines += ["## Figures (RFC style: metric against maxp per congestion level)", ""]
        lines += [f"![{caption}]({figures.name}/{name})" for name, caption in plots] + [""]
    text = "\n".join(lines)
    path.write_text(text)
    return text


def calibration_lines(root):
    path = Path(root) / CALIBRATION_FILE
    if not path.exists():
        return ["No calibration in this study folder: the runs used the files' RED values "
                "(minth 5, maxth 15, wq 2^-9); the RED region of each run is measured below."]
    choice = json.loads(path.read_text())
    ran = Path(root) / CALIBRATION / "experiment.toml"      # the file as the study ran it
    source = ran if ran.exists() else EXPERIMENTS / f"{CALIBRATION}.toml"
    maxp = load_experiment(source).scenarios[0].aqm.maxp
    lines = [f"Candidates run at maxp {maxp} (`{CALIBRATION}.toml`); ties go to the smaller "
             "maxth, then the smaller wq. At another maxp the same values can hold the average "
             "less well (a weaker maxp lets it climb above maxth): the runs' own time in the "
             "region and share of forced drops follow the table.", "",
             "| congestion | chosen minth / maxth / wq | time in region (mean, runs) | "
             "candidates (minth/maxth/wq_log: fraction) |", "|---|---|---|---|"]
    for level, c in sorted(choice.items(), key=lambda item: int(item[0])):
        others = "; ".join(f"{k['minth']}/{k['maxth']}/{k['wq_log']}: {k['region']:.2f}"
                           for k in c["candidates"])
        lines.append(f"| {LEVELS.get(int(level), level)} ({level} flows) | {c['minth']} / "
                     f"{c['maxth']} / 2^-{c['wq_log']} | {c['region']:.2f} ({c['n']}) | "
                     f"{others} |")
    return lines


def wall_lines(root, wall):
    overhead, runs = overhead_estimate(wall)
    lines = measured_lines(wall)
    if runs:
        lines += ["", f"A run took its traffic duration plus {overhead:.1f} s (lab set-up and "
                      f"teardown; mean over the {runs} runs measured)."]
    return lines + ["", "### Run plan", "", *plan_lines(root, overhead if runs else None)]


# ---------------------------------------------------------------- the command

def calibrate(root, extra):
    """Run (or resume) the calibration and keep its choice in root."""
    path = root / CALIBRATION_FILE
    if path.exists():
        return {int(k): v for k, v in json.loads(path.read_text()).items()}
    print("[calibration] RED region per congestion level", flush=True)
    source = EXPERIMENTS / f"{CALIBRATION}.toml"
    experiment = load_experiment(source)
    jobs, rest = common.jobs_option(extra)
    stages = rule_stages(experiment, CALIBRATION, "calibration", study.expand(experiment))
    failed = common.run_stages(root, stages, {CALIBRATION: source}, jobs, rest)
    choice = choose_red(load_study(root / CALIBRATION))
    if failed or set(choice) != set(LEVELS):
        raise StudyError(f"calibration incomplete (failed: {', '.join(failed) or 'none'}, levels "
                         f"{sorted(choice)}); rerun the same command to resume it")
    path.write_text(json.dumps(choice, indent=2))
    return choice


def planned_seconds(experiment, runs):
    """The lab's estimate (study.estimated_seconds) with each run's traffic as
    long as traffic_seconds expects (until_complete ends bulk runs early)."""
    return sum(study.estimated_seconds(experiment, [run]) - experiment.duration +
               traffic_seconds(experiment, run.scenario) for run in runs)


def prepare(root, parts, args, extra):
    """The calibration first (not for --quick), then each part's file with
    its chosen RED values in root -> {part: file to run}."""
    choice = None if args.quick else calibrate(root, extra)
    sources = {}
    for part in parts:
        template = (EXPERIMENTS / f"{part}.toml").read_text()
        source = root / f"{part}.toml"
        text = template if choice is None else materialise(template, choice)
        if not source.exists() or source.read_text() != text:
            source.write_text(text)
        sources[part] = source
    return sources


REPRODUCTION = Reproduction(
    name="rfc2884", description="RFC 2884 reproduced: calibration, the fairness / bulk / "
    "transactional grids (RFC TCP and today's), the report.", experiments=EXPERIMENTS,
    parts=PARTS, quick=QUICK, prepare=prepare, write_report=lambda root, path:
    write_report(root, path), verdict=lambda root: main_effect(Part.load(QUICK, root / QUICK)),
    seconds_of=planned_seconds,
    stages=lambda sources, args: part_stages(sources, args.grid_repeat))


def main(argv):
    return run_study(REPRODUCTION, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
