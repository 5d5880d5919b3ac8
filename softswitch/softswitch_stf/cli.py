"""`softswitch-stf PROG.p4|PROG.json TEST.stf ...`: run STF packet tests on the built-in target."""
import argparse
import json
import os
import sys

import softswitch_engine as se
from softswitch_p4c.driver import compile_file
from softswitch_p4c.errors import CompileError

from .runner import run
from .stf import StfError, parse_file


def build_argparser():
    ap = argparse.ArgumentParser(
        prog="softswitch-stf",
        description="Run STF packet tests (p4c's BMv2 test format) against a P4 program on the "
                    "built-in target. Exit 0 when every test passes, 1 otherwise.")
    ap.add_argument("program", help="a v1model P4-16 program (.p4), or its BMv2 JSON (.json)")
    ap.add_argument("stf", nargs="+", help="STF test files, each run on a fresh switch")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                    help="include directory for the P4 preprocessor")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                    help="preprocessor define")
    ap.add_argument("--seed", type=int, default=0, help="seed of the engine's random() (default 0)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every packet that came out")
    return ap


def load_program(args):
    if args.program.endswith(".json"):
        with open(args.program) as f:
            return json.load(f)
    bmv2_json, _ = compile_file(args.program, args.include_dirs, args.defines)
    return bmv2_json


def run_one(bmv2_json, path, args):
    """Run one STF file; print its verdict; return True when it passed."""
    result = run(bmv2_json, parse_file(path), seed=args.seed)
    if args.verbose:
        for where, port, frame in result.log:
            print(f"  {where}: out port {port}: {frame.hex().upper()}")
    verdict = "PASS" if result.passed else "FAIL"
    print(f"{verdict} {path}: {result.packets_in} packets in, {result.expected} expected out")
    for failure in result.failures:
        print(f"  {failure}")
    return result.passed


def main(argv=None):
    args = build_argparser().parse_args(argv)
    try:
        bmv2_json = load_program(args)
        passed = failed = 0
        for path in args.stf:
            ok = run_one(bmv2_json, path, args)
            passed, failed = passed + ok, failed + (not ok)
    except CompileError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except (StfError, se.PipelineError) as e:
        print(f"softswitch-stf: error: {args.program}: {e}" if isinstance(e, se.PipelineError) else e,
              file=sys.stderr)
        return 1
    except BrokenPipeError:   # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:
        print(f"softswitch-stf: error: {e.filename or args.program}: {e.strerror}", file=sys.stderr)
        return 1
    except json.JSONDecodeError as e:
        print(f"softswitch-stf: error: {args.program}:{e.lineno}: not JSON: {e.msg}", file=sys.stderr)
        return 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
