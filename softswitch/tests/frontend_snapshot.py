"""Snapshot of everything softswitch-p4c writes, for restructuring it without changing output.

    python softswitch/tests/frontend_snapshot.py write DIR     # record
    python softswitch/tests/frontend_snapshot.py compare DIR   # exit 1 on any difference

Covers p4src/*.p4, hw/tofino/*.p4 (--arch tna and t2na), the corpus (positive: JSON +
P4Info; negative: the error line), the STF programs, the p4c reference programs and the
Tofino lint corpus (lint problems, and the lowered JSON of clean programs). Each program
gives one text file; paths inside the outputs are repository-relative.
"""
import json
import os
import pathlib
import sys

from softswitch_p4c.driver import check_tna_file, compile_to_objects, compile_tna_to_objects
from softswitch_p4c.errors import CompileError
from softswitch_p4c.p4info import to_text
from softswitch_p4c.preprocess import INCLUDE_DIR

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "softswitch" / "tests"
# The compiler names its bundled includes (core.p4, v1model.p4) by absolute path;
# the root of the checkout it runs from is cut so that a snapshot written from
# another worktree compares equal.
COMPILER_ROOT = str(pathlib.Path(INCLUDE_DIR).resolve().parents[2]) + "/"


def v1model_programs():
    for pattern in ("p4src/*.p4", "softswitch/tests/corpus/positive/*.p4",
                    "softswitch/tests/corpus/negative/*.p4", "softswitch/tests/stf/*.p4",
                    "softswitch/tests/p4c_reference/*.p4"):
        yield from sorted(ROOT.glob(pattern))


def tna_programs():
    for path in sorted(ROOT.glob("hw/tofino/*.p4")):
        yield path, "tna"
        yield path, "t2na"
    for path in sorted(ROOT.glob("softswitch/tests/tofino_lint/*/*.p4")):
        first = path.read_text().splitlines()[0]
        yield path, "t2na" if "target: tofino2" in first else "tna"


def rendered(bmv2_json, info):
    return json.dumps(bmv2_json, indent=2) + "\n" + to_text(info)


def v1model_output(rel):
    try:
        return rendered(*compile_to_objects(rel))
    except CompileError as e:
        return "error: " + e.render() + "\n"


def tna_output(rel, arch):
    target = "tofino2" if arch == "t2na" else "tofino"
    try:
        problems = check_tna_file(rel, arch, target)
        if problems:
            return "".join("lint: " + p.render() + "\n" for p in problems)
        return rendered(*compile_tna_to_objects(rel, arch))
    except CompileError as e:
        return "error: " + e.render() + "\n"


def snapshot():
    """{output file name: text} for every program."""
    os.chdir(ROOT)
    out = {}
    for path in v1model_programs():
        rel = str(path.relative_to(ROOT))
        out[rel.replace("/", "__") + ".out"] = v1model_output(rel)
    for path, arch in tna_programs():
        rel = str(path.relative_to(ROOT))
        out[f"{rel.replace('/', '__')}.{arch}.out"] = tna_output(rel, arch)
    return {name: text.replace(COMPILER_ROOT, "") for name, text in out.items()}


def main(argv):
    mode, folder = argv[1], pathlib.Path(argv[2])
    current = snapshot()
    if mode == "write":
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in current.items():
            (folder / name).write_text(text)
        print(f"{len(current)} outputs written to {folder}")
        return 0
    recorded = {p.name: p.read_text() for p in folder.glob("*.out")}
    differ = sorted(n for n in current.keys() | recorded.keys()
                    if current.get(n) != recorded.get(n))
    for name in differ:
        print("differs:", name)
    print(f"{len(current)} outputs, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
