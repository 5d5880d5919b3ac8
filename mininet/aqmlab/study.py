"""A study: the independent runs of an experiment file (every point of its
[[scenario]] x [sweep] grid, `repeat` times) and their folders.

Run ids are `p<point>-r<repetition>` (both from 0, zero-padded to the
study's width), stable for a given file. Repetition r of every point uses
seed `seed + r`, so two points' runs with the same r are a seed pair.

A study folder holds `experiment.toml` + `study.json` (written by the process
that owns the whole study) and one folder per run:

    <run_id>/run.json       the run's point, resolved parameters, seed, quick flag
    <run_id>/lab/           switch, agent and client logs and records
    <run_id>/result.json    its metrics (what `aqmlab report` aggregates)
    <run_id>/complete       marker: the run finished and its files are written
    <run_id>/failed         marker: why it did not (error, interrupt)

A process that runs only some runs (`--only`) writes nothing but their folders,
so several processes or machines can share one study folder.
"""

import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from aqmlab.config import ConfigError, Experiment, Scenario

COMPLETE, FAILED = "complete", "failed"
# Per-run overhead besides the traffic: a run's `aqmlab run --only` process
# (what --jobs and Slurm start per run) less its 10 s of traffic, measured on
# 2 cores shared with other work (mininet/README.md, "Where a run's time goes"):
# RFC 2884 quick point (24 model hosts, 2 per pair) 10.8 s, RFC 2415 quick point
# (34) 8.3 s (load 3.5-7), 65 RFC 2415 pairs (130) 24 s (load 12).
SETUP_SECONDS = 4.0           # process start, lab build, pipeline push, agents, start lead
SETUP_SECONDS_PER_HOST = 0.12
STOP_SECONDS = 2.0            # clients' and senders' last records, teardown, files


@dataclass(frozen=True)
class StudyRun:
    run_id: str
    point: int              # index into experiment.scenarios
    repetition: int
    seed: int
    scenario: Scenario

    @property
    def point_name(self):
        return self.scenario.name


def expand(experiment: Experiment):
    """Every run of the experiment, point-major: p00-r0, p00-r1, ..., p01-r0, ..."""
    point_width = max(2, len(str(len(experiment.scenarios) - 1)))
    rep_width = len(str(experiment.repeat - 1))
    return [StudyRun(f"p{point:0{point_width}d}-r{rep:0{rep_width}d}", point, rep,
                     experiment.seed + rep, scenario)
            for point, scenario in enumerate(experiment.scenarios)
            for rep in range(experiment.repeat)]


def select(runs, only):
    """The runs named in `only` ("p00-r1,p02-r0"); an unknown id is an error."""
    if not only:
        return list(runs)
    by_id = {run.run_id: run for run in runs}
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in by_id]
    if unknown:
        raise ConfigError(f"--only: no run {unknown[0]!r} in this study (runs "
                          f"{runs[0].run_id} .. {runs[-1].run_id}; `aqmlab validate` lists them)")
    return [by_id[name] for name in wanted]


def estimated_seconds(experiment, runs, jobs=1):
    """Wall time of the runs: traffic + set-up + teardown, `jobs` at a time."""
    total = 0.0
    for run in runs:
        hosts = run_hosts(run.scenario)
        total += experiment.duration + STOP_SECONDS + SETUP_SECONDS + \
            SETUP_SECONDS_PER_HOST * hosts
    return total / max(1, min(jobs, len(runs)))


# The --jobs rule: runs side by side per core, by the highest bottleneck rate
# and the most hosts of one run among the runs concerned; beyond the last row,
# one run. Measured (mininet/bench/JOBS.md): at 1.5 Mb/s with 8 hosts every
# metric of a point agrees with --jobs 1 at 4 runs on 2 cores; at 10 Mb/s with
# 8 hosts, at 2 runs; RFC 2884's 24-host runs at 4. Beyond that the switch's
# timing decided (at most 5 % of frames over 1 ms late: fidelity.py's RTT scale)
# until its packet thread ran in SCHED_FIFO (p4switch.SWITCH_PRIORITY, at
# bottlenecks up to 10 Mb/s); since,
# the hosts do: 70-host runs agree at 2 (0.01-0.63 % late), 48-host runs at 4
# lose 2 % of their goodput.
JOBS_RULE = ((1.5e6, 24, 2), (1.5e6, 70, 1), (10e6, 16, 1))   # (rate <=, hosts <=, per core)


def run_hosts(scenario):
    """Hosts of one run of the scenario (each pair a server and a client)."""
    return 2 * sum(w.pairs for w in scenario.workloads)


def faithful_jobs(experiment, cores=None, runs=None):
    """The most runs side by side that the measured --jobs rule vouches for,
    for `runs` (default: every scenario of the experiment)."""
    rate, hosts = _rule_inputs(experiment, runs)
    cores = cores or os.cpu_count() or 1
    return next((per_core * cores for max_rate, max_hosts, per_core in JOBS_RULE
                 if rate <= max_rate and hosts <= max_hosts), 1)


def _rule_inputs(experiment, runs):
    scenarios = [r.scenario for r in runs] if runs else experiment.scenarios
    return (max(s.topology.bottleneck.rate_bps for s in scenarios),
            max(run_hosts(s) for s in scenarios))


def jobs_warning(experiment, jobs, cores=None, runs=None):
    """One line when --jobs exceeds the rule for these runs, else None."""
    allowed = faithful_jobs(experiment, cores, runs)
    if jobs <= allowed:
        return None
    rate, hosts = _rule_inputs(experiment, runs)
    return (f"--jobs {jobs} exceeds the measured rule for a {rate / 1e6:g} Mb/s bottleneck and "
            f"{hosts} hosts per run on {cores or os.cpu_count()} cores (at most {allowed}; "
            f"mininet/bench/JOBS.md): the runs' timing may differ from --jobs 1")


def identity(source_text, quick):
    """What makes two invocations the same study: the file's text and --quick."""
    return {"experiment_sha256": hashlib.sha256(source_text.encode()).hexdigest(),
            "quick": quick}


# ------------------------------------------------------------- run folders
def run_state(folder):
    """'complete', 'failed' or 'incomplete' (started, never finished) or 'missing'."""
    folder = Path(folder)
    if (folder / COMPLETE).exists():
        return COMPLETE
    if (folder / FAILED).exists():
        return FAILED
    return "incomplete" if folder.exists() else "missing"


def failure_reason(folder):
    path = Path(folder) / FAILED
    return path.read_text().strip() if path.exists() else ""


def start_run_folder(out_dir, run, experiment, source_text, quick):
    """A fresh folder for the run (a previous attempt's files are removed)."""
    folder = Path(out_dir) / run.run_id
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "run_id": run.run_id, "point": run.point, "point_name": run.point_name,
        "repetition": run.repetition, "seed": run.seed,
        "sweep": experiment.sweep[run.point % len(experiment.sweep)],
        "experiment": experiment.name, "duration": experiment.duration,
        "load_average_at_start": os.getloadavg(), "host": os.uname().nodename,
        "warmup": experiment.warmup, **identity(source_text, quick),
        "scenario": dataclasses.asdict(run.scenario),
    }, indent=2, default=str))
    (folder / "experiment.toml").write_text(source_text)
    return folder


def mark_complete(folder):
    (Path(folder) / COMPLETE).write_text("")


def mark_failed(folder, reason):
    (Path(folder) / FAILED).write_text(reason.strip() + "\n")


def prepare_study_folder(out_dir, source_text, quick, owner):
    """Check that the folder holds this study (or nothing); the owner of the
    whole study (not an `--only` worker) records its experiment there."""
    out_dir = Path(out_dir)
    mine = identity(source_text, quick)
    recorded = out_dir / "study.json"
    if recorded.exists():
        theirs = json.loads(recorded.read_text())
        if theirs != mine:
            what = "--quick" if theirs["experiment_sha256"] == mine["experiment_sha256"] \
                else "another experiment file (or an edited one)"
            raise ConfigError(f"--out {out_dir}: holds a study run with {what}; use a new folder")
    else:
        for run_json in out_dir.glob("*/run.json"):
            theirs = json.loads(run_json.read_text())
            if {k: theirs.get(k) for k in mine} != mine:
                raise ConfigError(f"--out {out_dir}: {run_json.parent.name} belongs to another "
                                  "experiment file or --quick setting; use a new folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    if owner:
        recorded.write_text(json.dumps(mine, indent=2))
        (out_dir / "experiment.toml").write_text(source_text)


def study_source(out_dir):
    """(experiment text, quick) of a study folder, from study.json or any run."""
    out_dir = Path(out_dir)
    if (out_dir / "experiment.toml").exists() and (out_dir / "study.json").exists():
        quick = json.loads((out_dir / "study.json").read_text())["quick"]
        return (out_dir / "experiment.toml").read_text(), quick
    for run_json in sorted(out_dir.glob("*/run.json")):
        toml = run_json.parent / "experiment.toml"
        if toml.exists():
            return toml.read_text(), json.loads(run_json.read_text())["quick"]
    raise ConfigError(f"{out_dir}: not a study folder (no experiment.toml or run folders)")
