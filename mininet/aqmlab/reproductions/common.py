"""What every reproduction shares: the command (options, parts, plan and
progress, running each part resumably through `aqmlab run`, the report, the
CI verdict, exit codes), measured wall times, and the report's number format.

A reproduction module describes itself with a `Reproduction` and calls
`run_study(reproduction, argv)` from its `main`. One that gives `stages`
runs its grid in priority order (the runs behind the published statements
first, so a study stopped part-way already answers them): each stage is one
`aqmlab run --only RUN_IDS --resume`, and the rest of the grid gets fewer
repetitions (`--grid-repeat`).
"""

import argparse
import json
import math
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from aqmlab import fidelity, study
from aqmlab.config import ConfigError, load_experiment
from aqmlab.report import save_plot

WALL_TIMES = "wall_times.json"


class StudyError(Exception):
    """A bad option or study folder: one line for the user."""


@dataclass(frozen=True)
class Reproduction:
    name: str                   # `aqmlab study NAME`
    description: str
    experiments: Path           # its experiment files, <part>.toml
    parts: tuple                # the full study's parts, in run order
    quick: str                  # the CI variant's part
    prepare: Callable           # (root, parts, args, extra) -> {part: experiment file to run}
    write_report: Callable      # (root, report path) -> markdown text
    verdict: Callable           # (root) -> {"ok": bool, "text": str} of the quick variant
    add_options: Callable = None   # (parser) -> None: the module's own options
    select: Callable = None        # (args) -> [parts] or None for the shared rule
    seconds_of: Callable = study.estimated_seconds   # (experiment, runs) -> wall seconds, plan
    stages: Callable = None        # (sources, args) -> [Stage] in run order; None: whole parts


@dataclass(frozen=True)
class Stage:
    """Runs of one part run together, in this order (one `aqmlab run --only`)."""
    part: str
    label: str                  # what they answer, for the plan
    run_ids: tuple
    max_jobs: int = 0           # 0: the command's --jobs; else at most this many side by side


GRID_REPEAT = 2     # repetitions at points no published statement is about (the report says so)


# ---------------------------------------------------------------- the report's numbers

def fmt(estimate, digits=3, unit=""):
    """`mean [low, high] (n = N)` of a stats.Estimate; '—' without data."""
    if estimate.n == 0:
        return "—"
    if estimate.n == 1:
        return f"{estimate.mean:.{digits}g}{unit} (n = 1)"
    return (f"{estimate.mean:.{digits}g}{unit} [{estimate.low:.{digits}g}, "
            f"{estimate.high:.{digits}g}] (n = {estimate.n})")


def parts_present(parts):
    """'.** Parts present: ...' for a report's headline: runs complete per part."""
    return ".** Parts present: " + (", ".join(
        f"{n}{' (--quick)' if p.loaded.quick else ''}: {len(p.loaded.results)} of "
        f"{len(p.loaded.runs)} runs complete" for n, p in parts.items()) or "none") + "."


def load_lines(parts):
    """The machine's 1-minute load average when each run started (run.json);
    `parts`: {name: object with .loaded (report.load_study)}."""
    loads = [json.loads((p.loaded.folder / r / "run.json").read_text())
             ["load_average_at_start"][0] for p in parts.values() for r in p.loaded.results]
    if not loads:
        return []
    return ["", f"1-minute load average when the runs started: {min(loads):.1f} - "
                f"{max(loads):.1f} (2 cores shared with other work; each run's is in its "
                f"run.json)."] + fidelity_lines(parts)


def fidelity_lines(parts):
    """How many runs of each part kept faithful timing (aqmlab/fidelity.py)."""
    counts = []
    for name, part in parts.items():
        timed = fidelity.timings(part.loaded.folder, part.loaded.runs)
        if timed:
            ok = {level: sum(verdict[level] for _, verdict in timed.values())
                  for level in fidelity.LEVELS}
            counts.append(f"{name} {ok['rtt']} / {ok['packet']} of {len(timed)}")
    if not counts:
        return []
    return ["", "Timing fidelity of the bottleneck switch (aqmlab/fidelity.py), runs faithful at "
                "the RTT / packet time scale: " + "; ".join(counts) + ". Add `--redo-unfaithful "
                "rtt` to the study's command to run the others again on a quieter machine."]


# ---------------------------------------------------------------- wall times

def overhead_estimate(wall):
    """Mean seconds a run took beyond its traffic (lab set-up and teardown),
    from the measured wall times -> (seconds, runs measured) or (nan, 0): a
    part's slot-seconds (its runs' own wall seconds, see run_part) less its
    runs' measured traffic seconds; older entries without them: wall less runs
    x the file's duration."""
    runs = sum(w["runs"] for w in wall.values())
    if not runs:
        return math.nan, 0
    extra = sum(w["slot_seconds"] - w["traffic_seconds"] if "traffic_seconds" in w
                else w["seconds"] - w["runs"] * w["duration"] for w in wall.values())
    return extra / runs, runs


def traffic_seconds_of(run_folder, duration):
    """How long a complete run's traffic lasted (result.json: its window's end
    less its epoch; until_complete runs end before their duration), or
    `duration` for a result without them."""
    result = json.loads((Path(run_folder) / "result.json").read_text())
    window, epoch = result.get("window"), result.get("epoch")
    return window[1] - epoch if window and epoch is not None else duration


def run_wall_seconds(run_folder):
    """A complete run's own wall seconds, from its folder's creation to its
    files (the sum of result.json phase_seconds; a --jobs worker's interpreter
    start, ~1-2 s, is not in it), or None for a run made before they were kept."""
    result = json.loads((Path(run_folder) / "result.json").read_text())
    phases = result.get("phase_seconds")
    return sum(phases.values()) if phases else None


def read_wall(root):
    """root/wall_times.json ({part: {seconds, runs, duration}}), or {}."""
    path = Path(root) / WALL_TIMES
    return json.loads(path.read_text()) if path.exists() else {}


def measured_lines(wall):
    """The measured wall time of each part, as a sentence (none if nothing ran)."""
    if not wall:
        return []
    return ["Measured (wall clock of each part's `aqmlab run` as started by this command, this "
            "machine): " + ", ".join(f"{part} {w['seconds'] / 60:.1f} min for {w['runs']} runs "
                                     f"of {w['duration']:g} s traffic"
                                     for part, w in wall.items()) + "."]


def plot_estimates(ax, points, **style):
    """Means with their 95 % intervals as error bars; points: [(x, stats estimate)].
    A single run has no interval and gets no bar."""
    ax.errorbar([x for x, _ in points], [e.mean for _, e in points],
                yerr=[[e.mean - e.low if e.n > 1 else 0 for _, e in points],
                      [e.high - e.mean if e.n > 1 else 0 for _, e in points]], **style)


def save_figure(fig, folder, stem, title):
    """Writes FOLDER/STEM.png; returns the report's plot list entry [(file, title)]."""
    name = f"{stem}.png"
    save_plot(fig, Path(folder) / name)
    return [(name, title)]


def save_report(path, lines, figures, plots, heading):
    """Write the report's lines, then a `## heading` section showing each
    (file, caption) of `plots` from the folder `figures` -> the markdown text."""
    if plots:
        lines = lines + [f"## {heading}", ""] + [
            f"![{caption}]({Path(figures).name}/{name})" for name, caption in plots] + [""]
    text = "\n".join(lines)
    Path(path).write_text(text)
    return text


def jobs_option(extra):
    """`aqmlab run` options -> (their --jobs N, 1 without one; the options
    without --jobs N)."""
    if "--jobs" not in extra:
        return 1, list(extra)
    at = extra.index("--jobs")
    return int(extra[at + 1]), extra[:at] + extra[at + 2:]


def option_value(extra, name):
    """The value of `name V` or `name=V` among `aqmlab run` options, or None."""
    for at, item in enumerate(extra):
        if item == name and at + 1 < len(extra):
            return extra[at + 1]
        if item.startswith(f"{name}="):
            return item.split("=", 1)[1]
    return None


def filesystem_now(folder):
    """The time a file written now in `folder` gets as its mtime. The kernel
    stamps files with its coarse clock, up to a tick (4 ms) behind time.time(),
    so a marker written just after time.time() can look older than it."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / ".now"
    stamp.write_text("")
    try:
        return stamp.stat().st_mtime
    finally:
        stamp.unlink()


def run_part(root, part, source, extra):
    """`aqmlab run` of one file into root/part (resumed); its wall time, the
    runs it completed, their traffic seconds and the slot-seconds they used
    are added to root/wall_times.json -> exit code. Slot-seconds are the runs'
    own wall seconds (result.json phase_seconds: a slot left idle while the
    last runs finish is no run's overhead); for runs without them, wall x
    its --jobs."""
    out_dir = Path(root) / part
    command = [sys.executable, "-m", "aqmlab", "run", str(source), "--out", str(out_dir),
               "--resume"] + extra
    duration = tomllib.loads(Path(source).read_text())["duration"]
    jobs, _ = jobs_option(extra)
    since = filesystem_now(Path(root))   # runs completed from now on (redone ones too) are this call's
    started = time.monotonic()
    code = call_run(command)
    seconds = time.monotonic() - started
    new = [p.parent for p in out_dir.glob(f"*/{study.COMPLETE}") if p.stat().st_mtime >= since]
    if new:             # time that completed no run (all failed) measures nothing
        add_wall_time(Path(root) / WALL_TIMES, part, seconds, new, duration, jobs)
    if code == INTERRUPTED_EXIT:      # its runs were stopped by a signal: so is the study
        raise KeyboardInterrupt(f"aqmlab run of {part} was interrupted")
    return code


def add_wall_time(path, part, seconds, new, duration, jobs):
    """Adds one `aqmlab run` of `part` (its wall seconds, the run folders it
    completed) to the study's wall_times.json (run_part)."""
    wall = json.loads(path.read_text()) if path.exists() else {}
    entry = wall.setdefault(part, {"seconds": 0.0, "runs": 0, "slot_seconds": 0.0,
                                   "traffic_seconds": 0.0})
    if "traffic_seconds" not in entry:      # measured before slot-seconds were kept
        entry.update(slot_seconds=entry["seconds"],
                     traffic_seconds=entry["runs"] * entry.get("duration", duration))
    own = [run_wall_seconds(folder) for folder in new]
    slots = sum(own) if None not in own else seconds * max(1, min(jobs, len(new)))
    entry.update(seconds=entry["seconds"] + seconds, runs=entry["runs"] + len(new),
                 duration=duration, slot_seconds=entry["slot_seconds"] + slots,
                 traffic_seconds=entry["traffic_seconds"] + sum(
                     traffic_seconds_of(folder, duration) for folder in new))
    path.write_text(json.dumps(wall, indent=2))


INTERRUPTED_EXIT = 130                # `aqmlab run`'s exit status when interrupted (cli.py)


def call_run(command):
    """Run an `aqmlab run` child to its end -> its exit code. SIGTERM to the
    study (a scheduler, `kill`) reaches the child as SIGTERM, which marks its
    runs interrupted and removes its labs, then stops the study; without this
    the child would run its whole stage on, orphaned. (A terminal's Ctrl-C
    reaches both already.)"""
    def terminate(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, terminate)
    child = None
    try:
        child = subprocess.Popen(command)
        return child.wait()
    except KeyboardInterrupt:
        if child:
            child.send_signal(signal.SIGTERM)
            child.wait()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def plan_lines(name, sources, seconds_of=study.estimated_seconds):
    """What the command will run ({part: experiment file}): a total line, then
    one per part with its runs and a wall-time estimate (default: the lab's
    own, study.estimated_seconds, one run at a time)."""
    lines, total = [], 0.0
    for part, source in sources.items():
        experiment = load_experiment(source)
        runs = study.expand(experiment)
        seconds = seconds_of(experiment, runs)
        total += seconds
        lines.append(f"{part}: {len(runs)} runs of {experiment.duration:g} s, estimated "
                     f"{seconds / 3600:.1f} h one run at a time")
    return [f"aqmlab study {name}: {len(sources)} part(s), estimated {total / 3600:.1f} h one "
            f"run at a time (--jobs N / --executor slurm divide it); rerun the same command "
            f"to resume"] + lines


# ---------------------------------------------------------------- staged runs

def by_priority(runs, headline, grid_repeat, seconds_of):
    """(headline run ids, grid run ids) of a part's runs: every repetition of
    the points `headline(scenario)` marks, the first `grid_repeat` of the
    others; each list by repetition (so n grows evenly over the points), the
    longest runs first within a repetition (`seconds_of(run)`; shorter tails)."""
    def ordered(chosen):
        return tuple(r.run_id for r in sorted(chosen, key=lambda r: (r.repetition,
                                                                     -seconds_of(r), r.point)))
    return (ordered([r for r in runs if headline(r.scenario)]),
            ordered([r for r in runs if not headline(r.scenario)
                     and r.repetition < grid_repeat]))


def makespan(seconds, jobs):
    """Wall time of runs started in this order, `jobs` at a time, each as
    soon as a slot frees (the runner's pool)."""
    slots = [0.0] * max(1, jobs)
    for value in seconds:
        slots[slots.index(min(slots))] += value
    return max(slots) if seconds else 0.0


def rule_stages(experiment, part, label, runs, cores=None):
    """`runs` (study.expand's, in run order) as stages of `part`, split by how
    many side by side the --jobs rule allows for each run's hosts on `cores`
    (study.faithful_jobs), the most side by side first -> [Stage]."""
    allowed = {r.run_id: study.faithful_jobs(experiment, cores, [r]) for r in runs}
    return [Stage(part, label, tuple(r.run_id for r in runs if allowed[r.run_id] == jobs), jobs)
            for jobs in sorted(set(allowed.values()), reverse=True)]


def stage_jobs(stage, jobs):
    return min(jobs, stage.max_jobs) if stage.max_jobs else jobs


def plan_table(stages, seconds_of_run, jobs, done=frozenset()):
    """The run plan as report lines: per stage its runs, --jobs and hours, the
    cumulative hours (when its statements are answered), and the total;
    `seconds_of_run(part, run_id)`; `done`: {(part, run_id)} already complete."""
    lines = [f"| # | part | runs for | runs (done) | --jobs | hours | cumulative hours |",
             "|---|---|---|---|---|---|---|"]
    total = runs = 0
    for i, stage in enumerate(stages, 1):
        pending = [r for r in stage.run_ids if (stage.part, r) not in done]
        hours = makespan([seconds_of_run(stage.part, r) for r in pending],
                         stage_jobs(stage, jobs)) / 3600
        total += hours
        runs += len(stage.run_ids)
        lines.append(f"| {i} | {stage.part} | {stage.label} | {len(stage.run_ids)} "
                     f"({len(stage.run_ids) - len(pending)}) | {stage_jobs(stage, jobs)} | "
                     f"{hours:.1f} | {total:.1f} |")
    lines.append(f"| | total | | {runs} | | {total:.1f} | |")
    return lines, total


def serial_hours(stages, seconds_of_run, done=frozenset()):
    """Hours of the plan's runs not yet done, one at a time (what N machines
    of a cluster divide)."""
    return sum(seconds_of_run(stage.part, r) for stage in stages for r in stage.run_ids
               if (stage.part, r) not in done) / 3600


def complete_runs(root, parts):
    """{(part, run_id)} with a complete marker under root."""
    return {(part, folder.parent.name) for part in parts
            for folder in (Path(root) / part).glob(f"*/{study.COMPLETE}")}


def run_stages(root, stages, sources, jobs, extra):
    """Run each stage's runs that are not complete yet -> [parts that failed]."""
    failed = []
    level = extra[extra.index("--redo-unfaithful") + 1] if "--redo-unfaithful" in extra else None
    for i, stage in enumerate(stages, 1):
        redo = fidelity.unfaithful_in(Path(root) / stage.part, level) if level else set()
        pending = [r for r in stage.run_ids
                   if study.run_state(Path(root) / stage.part / r) != study.COMPLETE or r in redo]
        print(f"[{i}/{len(stages)}] {stage.part}: {stage.label}: {len(pending)} of "
              f"{len(stage.run_ids)} runs to do", flush=True)
        if not pending:
            continue
        options = ["--jobs", str(stage_jobs(stage, jobs)), "--only", ",".join(pending)]
        if run_part(root, stage.part, sources[stage.part], options + extra) != 0:
            failed.append(stage.part)
    return sorted(set(failed))


# ---------------------------------------------------------------- the command

def parse_args(reproduction, argv):
    parser = argparse.ArgumentParser(
        prog=f"aqmlab study {reproduction.name}", description=reproduction.description
        + " Other options (--jobs, --executor slurm, --slurm-*, --build-dir, --no-progress, "
        "--redo-unfaithful) "
        "go to every `aqmlab run`.")
    parser.add_argument("--out", required=True, help="study folder (created, or resumed)")
    parser.add_argument("--quick", action="store_true", help="the CI variant only (< 5 min)")
    parser.add_argument("--parts", default=None, help=f"comma list of "
                        f"{', '.join(reproduction.parts)} (default: all)")
    parser.add_argument("--report", default=None, help="report file (default OUT/report.md)")
    parser.add_argument("--report-only", action="store_true", help="rebuild the report only")
    if reproduction.stages:
        parser.add_argument("--jobs", type=int, default=1, help="runs side by side (as `aqmlab "
                            "run`; stages of runs the --jobs rule does not cover use fewer)")
        parser.add_argument("--grid-repeat", type=int, default=GRID_REPEAT, metavar="N",
                            help="repetitions at the points no published statement is about "
                            f"(default {GRID_REPEAT}; the files' repeat or more: the full grid)")
    if reproduction.add_options:
        reproduction.add_options(parser)
    args, extra = parser.parse_known_args(argv)
    if reproduction.stages and (args.jobs < 1 or args.grid_repeat < 0):
        raise StudyError(f"--jobs must be >= 1 and --grid-repeat >= 0 (got {args.jobs}, "
                         f"{args.grid_repeat})")
    return args, extra


def select_parts(reproduction, args):
    """--quick: the CI part; --parts: those (checked); else the module's own
    rule or every part."""
    if args.quick:
        return [reproduction.quick]
    chosen = reproduction.select(args) if reproduction.select else None
    if chosen:
        return chosen
    if not args.parts:
        return list(reproduction.parts)
    chosen = args.parts.split(",")
    unknown = [p for p in chosen if p not in reproduction.parts]
    if unknown:
        raise StudyError(f"--parts: unknown part {unknown[0]!r} "
                         f"(parts: {', '.join(reproduction.parts)})")
    return chosen


def run_study(reproduction, argv):
    """The whole command: prepare, run every part with progress (resumed),
    write the report; --quick exits 1 unless the CI verdict holds -> exit code
    (2: a bad option or study folder, with one line on stderr)."""
    try:
        args, extra = parse_args(reproduction, argv)
        root = Path(args.out)
        report = Path(args.report) if args.report else root / "report.md"
        parts = select_parts(reproduction, args)
        whole = extra + ["--jobs", str(args.jobs)] if reproduction.stages else extra
        failed = []
        if not args.report_only:
            from aqmlab.topology import check_build   # mininet's modules: only to run

            check_build(option_value(extra, "--build-dir"))
            root.mkdir(parents=True, exist_ok=True)
            sources = reproduction.prepare(root, parts, args, whole)
            plan = plan_lines(reproduction.name, sources, reproduction.seconds_of)
            print("\n".join(plan), flush=True)
            if reproduction.stages and not args.quick:
                failed = run_stages(root, reproduction.stages(sources, args), sources,
                                    args.jobs, extra)
            else:
                for i, (part, line) in enumerate(zip(sources, plan[1:]), 1):
                    print(f"[{i}/{len(sources)}] {line}", flush=True)
                    if run_part(root, part, sources[part], whole) != 0:
                        failed.append(part)
        reproduction.write_report(root, report)
        print(f"report: {report}")
        if args.quick:
            verdict = reproduction.verdict(root)
            print(verdict["text"])
            return 0 if verdict["ok"] and not failed else 1
        if failed:
            print(f"aqmlab study {reproduction.name}: error: runs failed in "
                  f"{', '.join(failed)}; rerun the same command to resume", file=sys.stderr)
            return 1
        return 0
    except (StudyError, ConfigError, OSError) as error:
        print(f"aqmlab study {reproduction.name}: error: {error}", file=sys.stderr)
        return 2
