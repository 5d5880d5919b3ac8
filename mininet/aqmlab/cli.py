"""The `aqmlab` command: run, validate, report, compare, cleanup, study."""

import argparse
import faulthandler
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

from aqmlab.config import ConfigError, load_experiment
from aqmlab.reproductions import STUDIES

EXECUTORS = ("local", "slurm")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="aqmlab", description="Mininet lab for the P4 RED/ECN "
                                     "bottleneck: run studies, write results, reports and plots.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an experiment file (a study: points x repetitions)")
    run.add_argument("file", help="experiment TOML (see mininet/experiments/README.md)")
    run.add_argument("--quick", action="store_true", help="use the file's quick_duration")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--results", default="results", help="results root: the study goes to "
                       "ROOT/<experiment>/<UTC timestamp>/ (default: results)")
    where.add_argument("--out", default=None, help="the study folder itself (created or "
                       "reused; needed by --only and --resume)")
    run.add_argument("--only", default=None, metavar="RUN_ID[,RUN_ID...]",
                     help="run exactly these runs into --out and write nothing else there "
                     "(safe from several processes or machines at once)")
    run.add_argument("--resume", action="store_true",
                     help="run only the runs of --out without a `complete` marker")
    run.add_argument("--redo-unfaithful", choices=("packet", "rtt"), default=None,
                     help="with --resume: also run again the complete runs whose bottleneck "
                     "timing missed this time scale (aqmlab/fidelity.py)")
    run.add_argument("--jobs", type=int, default=1, help="runs side by side (default 1; see "
                     "mininet/README.md for when timing fidelity allows more)")
    run.add_argument("--executor", choices=EXECUTORS, default="local",
                     help="local (default) or slurm (a Slurm job array, see mininet/SLURM.md)")
    slurm = run.add_argument_group("--executor slurm (see mininet/SLURM.md)")
    slurm.add_argument("--slurm-partition", metavar="P", help="sbatch --partition")
    slurm.add_argument("--slurm-time", metavar="T", help="time limit per run (sbatch --time)")
    slurm.add_argument("--slurm-max-running", metavar="N", type=int,
                       help="runs at once over the whole cluster (array throttle %%N)")
    slurm.add_argument("--slurm-option", metavar="ARG", action="append", default=[],
                       help="any other sbatch option, e.g. --slurm-option=--account=net "
                       "(repeatable)")
    run.add_argument("--build-dir", default=None, help="where red_ecn.json/.p4info.txtpb are "
                     "(default: the repository's build/)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    check = sub.add_parser("validate", help="check an experiment file, list its runs and the "
                           "estimated wall time")
    check.add_argument("file")
    check.add_argument("--quick", action="store_true")
    check.add_argument("--jobs", type=int, default=1)
    report = sub.add_parser("report", help="rebuild a study's report from its run folders")
    report.add_argument("folder")
    compare = sub.add_parser("compare", help="two studies' metrics side by side with intervals")
    compare.add_argument("folder_a")
    compare.add_argument("folder_b")
    sub.add_parser("cleanup", help="remove what crashed runs left behind (labs whose aqmlab "
                   "process is gone)")
    reproduce = sub.add_parser("study", add_help=False, help="reproduce a published study in "
                               "one command (aqmlab/reproductions/; `aqmlab study NAME --help`)")
    reproduce.add_argument("name", choices=sorted(STUDIES))
    reproduce.add_argument("options", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


def cmd_run(args):
    from aqmlab import fidelity, slurm, study

    experiment = load_experiment(args.file)
    if args.jobs < 1:
        raise ConfigError(f"--jobs: must be >= 1, got {args.jobs}")
    slurm.check_cli_options(args)
    if args.redo_unfaithful and not args.resume:
        raise ConfigError("--redo-unfaithful: only with --resume (it reruns runs of a study folder)")
    if (args.only or args.resume) and not args.out:
        raise ConfigError("--only/--resume: need --out DIR (the study folder)")
    if args.quick:
        experiment = experiment.for_quick()
    runs = study.select(study.expand(experiment), args.only)
    warning = args.executor == "local" and study.jobs_warning(experiment, min(args.jobs, len(runs)),
                                                                  runs=runs)
    if warning:
        print(f"aqmlab run: warning: {warning}", file=sys.stderr)
    if not args.only:       # refuse before making a folder; a study's --only runs fail one by one
        from aqmlab.topology import check_build

        check_build(args.build_dir)
    if os.geteuid() != 0:
        raise SystemExit("aqmlab run: error: needs root (network namespaces)")
    clean_stale_labs()
    out_dir = Path(args.out) if args.out else Path(args.results) / experiment.name / \
        datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    study.prepare_study_folder(out_dir, Path(args.file).read_text(), args.quick,
                               owner=not args.only)
    if args.resume:
        redo = fidelity.unfaithful(out_dir, runs, args.redo_unfaithful) if args.redo_unfaithful else {}
        runs = [r for r in runs
                if study.run_state(out_dir / r.run_id) != study.COMPLETE or r.run_id in redo]
        print(f"aqmlab: resuming {out_dir}: {len(runs)} run(s) to do"
              + (f", {len(redo)} of them again for timing ({args.redo_unfaithful} scale)" if redo else ""))
    try:
        outcome = execute(args, experiment, out_dir, runs)
    except KeyboardInterrupt:
        print(f"aqmlab: the study in {out_dir} is unfinished; complete it with `aqmlab run "
              f"{args.file} --out {out_dir} --resume{' --quick' if args.quick else ''}`",
              file=sys.stderr)
        raise
    failed = {run_id: reason for run_id, reason in outcome.items() if reason}
    if not args.only:
        from aqmlab.report import build_report, comparison_lines, summary_table

        _, rows, found = build_report(out_dir)
        if rows:
            print(summary_table(rows))
        if found:
            print("\n" + "\n".join(comparison_lines(found)))
        print(f"\nresults: {out_dir}/ (report.md, summary.csv, plots)")
    else:
        for run in runs:
            state = f"failed: {failed[run.run_id]}" if run.run_id in failed else "complete"
            print(f"{run.run_id}: {state}")
    if failed:
        print(f"aqmlab run: error: {len(failed)} of {len(outcome)} run(s) failed: "
              f"{', '.join(sorted(failed))} (reasons in <run>/failed)", file=sys.stderr)
        return 1
    return 0


def execute(args, experiment, out_dir, runs):
    """-> {run_id: None or why it failed}."""
    if args.executor == "slurm":
        from aqmlab import slurm

        return slurm.run_study(args.file, out_dir, [r.run_id for r in runs], quick=args.quick,
                               build_dir=args.build_dir, jobs=args.jobs,
                               partition=args.slurm_partition, time_limit=args.slurm_time,
                               max_running=args.slurm_max_running, sbatch_args=args.slurm_option)
    from aqmlab.runner import run_study

    return run_study(experiment, args.file, out_dir, runs, args.quick, args.build_dir,
                     not args.no_progress, args.jobs)


def clean_stale_labs():
    from aqmlab.lab import cleanup_all_stale

    removed = cleanup_all_stale()
    if removed:
        print(f"aqmlab: removed {len(removed)} stale lab(s) left by a killed aqmlab: "
              f"{' '.join(removed)}", file=sys.stderr)


def cmd_validate(args):
    from aqmlab import study

    experiment = load_experiment(args.file)
    if args.quick:
        experiment = experiment.for_quick()
    runs = study.expand(experiment)
    for point, scenario in enumerate(experiment.scenarios):
        workloads = ", ".join(f"{w.name}({w.kind} x{w.pairs})" for w in scenario.workloads)
        ids = [r.run_id for r in runs if r.point == point]
        print(f"{ids[0].split('-')[0]}  {scenario.name}: {scenario.topology.kind}, "
              f"aqm {scenario.aqm.mode}, {workloads}")
    seconds = study.estimated_seconds(experiment, runs, args.jobs)
    print(f"{len(experiment.scenarios)} point(s) x {experiment.repeat} repetition(s) = "
          f"{len(runs)} runs ({runs[0].run_id} .. {runs[-1].run_id}), seeds "
          f"{experiment.seed}..{experiment.seed + experiment.repeat - 1}, "
          f"{experiment.duration:g} s each; estimated wall time {_duration(seconds)} "
          f"with --jobs {args.jobs}")
    warning = study.jobs_warning(experiment, min(args.jobs, len(runs)))
    if warning:
        print(f"warning: {warning}")
    return 0


def _duration(seconds):
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


def cmd_report(args):
    from aqmlab.report import build_report, comparison_lines, summary_table

    loaded, rows, found = build_report(args.folder)
    if rows:
        print(summary_table(rows))
    if found:
        print("\n" + "\n".join(comparison_lines(found)))
    done = sum(state == "complete" for state in loaded.states.values())
    print(f"\n{done} of {len(loaded.runs)} runs complete; report: {args.folder}/report.md")
    return 0


def cmd_compare(args):
    from aqmlab.report import compare_table

    try:
        print(compare_table(args.folder_a, args.folder_b))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return 0


def cmd_cleanup(args):
    from aqmlab.lab import cleanup_all_stale

    removed = cleanup_all_stale()
    print(f"removed {len(removed)} stale lab(s): {' '.join(removed)}" if removed else
          "nothing to clean up")
    return 0


def cmd_study(args):
    from importlib import import_module

    return import_module(STUDIES[args.name]).main(args.options)


def main(argv=None):
    # `kill -USR1 PID` prints every thread's stack to stderr: where a run that
    # seems stuck is (the tests send it before giving up on one). Not when
    # stderr is no file (main() called in-process with a captured stderr).
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError):   # io.UnsupportedOperation is a ValueError
        pass
    args = parse_args(sys.argv[1:] if argv is None else argv)
    handler = {"run": cmd_run, "validate": cmd_validate, "report": cmd_report,
               "compare": cmd_compare, "cleanup": cmd_cleanup, "study": cmd_study}[args.command]
    try:
        return handler(args)
    except ConfigError as error:
        print(f"aqmlab {args.command}: error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        print(f"aqmlab {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("aqmlab: interrupted; the lab was removed", file=sys.stderr)
        return 130
