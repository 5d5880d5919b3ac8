"""`softswitch-p4c PROG.p4 -o OUTDIR [--p4runtime-files F.p4info.txtpb] [-I DIR] [-D N=V]`."""
import argparse
import json
import os
import sys

from .errors import CompileError
from google.protobuf import json_format

from .driver import TOFINO_TARGET, check_tna_file, compile_to_objects, compile_tna_to_objects
from .p4info import to_text


def build_argparser():
    ap = argparse.ArgumentParser(prog="softswitch-p4c",
                                 description="Compile a P4-16 v1model (or TNA/T2NA) program to "
                                             "BMv2 JSON and a P4Info (aqmlab built-in target).")
    ap.add_argument("program", help="the P4-16 source file")
    ap.add_argument("-o", "--output", dest="outdir", default=".",
                    help="output directory for PROG.json (default: current directory)")
    ap.add_argument("--p4runtime-files", dest="p4info",
                    help="write the P4Info here (.json: JSON, .bin: binary, else text)")
    ap.add_argument("-I", dest="includes", action="append", default=[],
                    help="add a directory to the #include search path")
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="define a preprocessor macro NAME[=VALUE]")
    ap.add_argument("--target", choices=["bmv2", "tofino", "tofino2"], default=None,
                    help="bmv2 (default for v1model); tofino/tofino2 (default for tna/t2na): "
                         "lint against Tofino's limits")
    ap.add_argument("--arch", choices=["v1model", "tna", "t2na"], default="v1model",
                    help="v1model: compile to BMv2 JSON; tna/t2na: type-check, lint against "
                         "Tofino's limits, then lower to the built-in target's BMv2 JSON "
                         "(hw/tofino/README.md)")
    ap.add_argument("--std", choices=["p4-16"], default="p4-16", help="(p4c compatibility)")
    return ap


def main(argv=None):
    args = build_argparser().parse_args(argv)
    try:
        if args.arch in TOFINO_TARGET:
            return check_tofino(args)
        if args.target not in (None, "bmv2"):
            raise CompileError(None, f"--target {args.target} needs --arch tna or t2na")
        warnings = []
        bmv2_json, p4info = compile_to_objects(args.program, args.includes, args.defines,
                                               warnings)
        print_warnings(warnings)
        write_outputs(args, bmv2_json, p4info)
    except CompileError as e:
        if e.loc is None:       # errors about the program as a whole
            print(f"{args.program}:1:1: error: {e.message}", file=sys.stderr)
        else:
            print(e.render(), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{args.program}:1:1: error: {e.strerror}: {e.filename}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{args.program}:1:1: error: program nesting too deep", file=sys.stderr)
        return 1
    except Exception as e:  # a compiler bug must still be one clear line, never a traceback
        print(f"{args.program}:1:1: error: internal compiler error: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


def check_tofino(args):
    """--arch tna|t2na: lint problems print as file:line:col lines (exit 1, nothing written);
    a clean program is lowered to the built-in target and written like a v1model one."""
    target = args.target or TOFINO_TARGET[args.arch]
    if target != TOFINO_TARGET[args.arch]:
        raise CompileError(None, f"--arch {args.arch} runs on --target {TOFINO_TARGET[args.arch]}, "
                                 f"not {target}")
    problems = check_tna_file(args.program, args.arch, target, args.includes, args.defines)
    for p in problems:
        print(p.render(), file=sys.stderr)
    if problems:
        return 1
    warnings = []
    bmv2_json, p4info = compile_tna_to_objects(args.program, args.arch, args.includes, args.defines,
                                               warnings)
    print_warnings(warnings)
    write_outputs(args, bmv2_json, p4info)
    return 0


def print_warnings(warnings):
    """A compiled program's warnings, as p4c prints them: on stderr, exit status still 0."""
    for w in warnings:
        print(w.render(), file=sys.stderr)


def serialize_p4info(info, path):
    """Format by extension, as p4c does: .json JSON, .bin binary, otherwise text."""
    if path.endswith(".json"):
        return json_format.MessageToJson(info).encode()
    if path.endswith(".bin"):
        return info.SerializeToString()
    return to_text(info).encode()


def write_outputs(args, bmv2_json, p4info):
    os.makedirs(args.outdir, exist_ok=True)
    base = os.path.splitext(os.path.basename(args.program))[0]
    with open(os.path.join(args.outdir, base + ".json"), "w") as f:
        json.dump(bmv2_json, f, indent=2)
        f.write("\n")
    if args.p4info:
        d = os.path.dirname(args.p4info)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(args.p4info, "wb") as f:
            f.write(serialize_p4info(p4info, args.p4info))


if __name__ == "__main__":
    sys.exit(main())
