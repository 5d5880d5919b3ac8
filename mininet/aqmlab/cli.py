"""The `aqmlab` command: run, validate, cleanup."""

import argparse
import os
import sys

from aqmlab.config import ConfigError, load_experiment


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="aqmlab", description="Mininet lab for the P4 RED/ECN "
                                     "bottleneck: run experiment files, write results and plots.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an experiment file")
    run.add_argument("file", help="experiment TOML (see mininet/experiments/README.md)")
    run.add_argument("--quick", action="store_true", help="use the file's quick_duration")
    run.add_argument("--results", default="results", help="results root (default: results)")
    run.add_argument("--build-dir", default=None, help="where red_ecn.json/.p4info.txtpb are "
                     "(default: the repository's build/)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    check = sub.add_parser("validate", help="check an experiment file and print its scenarios")
    check.add_argument("file")
    sub.add_parser("cleanup", help="remove what crashed runs left behind (their own tags only)")
    return parser.parse_args(argv)


def cmd_run(args):
    from aqmlab.report import goodput_table
    from aqmlab.runner import run_experiment

    experiment = load_experiment(args.file)
    if os.geteuid() != 0:
        raise SystemExit("aqmlab run: error: needs root (network namespaces)")
    outdir, results = run_experiment(experiment, args.file, args.results, args.quick,
                                     args.build_dir, not args.no_progress)
    print(goodput_table(results))
    print(f"\nresults: {outdir}/ (report.md, summary.csv, plots)")
    return 0


def cmd_validate(args):
    experiment = load_experiment(args.file)
    for scenario in experiment.scenarios:
        workloads = ", ".join(f"{w.name}({w.kind} x{w.pairs})" for w in scenario.workloads)
        print(f"{scenario.name}: {scenario.topology.kind}, aqm {scenario.aqm.mode}, {workloads}")
    return 0


def cmd_cleanup(args):
    from aqmlab.lab import cleanup_all_stale

    removed = cleanup_all_stale()
    print(f"removed {len(removed)} stale lab(s): {' '.join(removed)}" if removed else
          "nothing to clean up")
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    handler = {"run": cmd_run, "validate": cmd_validate, "cleanup": cmd_cleanup}[args.command]
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
