"""Is softswitch-p4c's output as lean as p4c's? Instructions per packet of the same program
compiled by both.

    python softswitch/bench/lean.py [--out softswitch/bench/LEAN.md]

For each program of softswitch/tests/p4c_reference (real p4c's BMv2 JSON kept beside its
source), compiles the source with softswitch-p4c and counts p4core's instructions per
packet on both JSONs, compiled pipeline and interpreter (`instructions.py`: callgrind on
the `p4bench` example, the same packets and table entries for both; exact and
independent of the machine's load). A program whose JSON from softswitch-p4c costs more
than p4c's has extra work in the lowering (tables, conditionals, copies, jumps).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import instructions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REFERENCE = ROOT / "softswitch" / "tests" / "p4c_reference"


def compile_ours(source: Path, outdir: Path) -> Path:
    compiler = shutil.which("softswitch-p4c") or str(Path(sys.executable).parent / "softswitch-p4c")
    subprocess.run([compiler, str(source), "-o", str(outdir)], check=True, capture_output=True)
    return outdir / f"{source.stem}.json"


def measure(packets: int) -> list[dict]:
    """One row per reference program: (engine -> instructions/packet) for each JSON."""
    with tempfile.TemporaryDirectory(prefix="lean") as tmp:
        programs = {}
        for source in sorted(REFERENCE.glob("*.p4")):
            programs[f"{source.stem} (softswitch-p4c)"] = compile_ours(source, Path(tmp))
            programs[f"{source.stem} (p4c)"] = source.with_suffix(".json")
        counts = {r["program"]: r for r in instructions.measure(programs, packets)}
    rows = []
    for source in sorted(REFERENCE.glob("*.p4")):
        ours, theirs = counts[f"{source.stem} (softswitch-p4c)"], counts[f"{source.stem} (p4c)"]
        rows.append({"program": source.stem, "ours": ours, "p4c": theirs})
    return rows


def report(rows: list[dict], packets: int) -> list[str]:
    lines = ["# softswitch-p4c's output against p4c's: instructions per packet", "",
             f"`python softswitch/bench/lean.py` at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
             f"p4core's instructions per packet (callgrind, {packets} packets of 64 and of 1500 bytes "
             "minus the load; exact, independent of the machine's load) on the BMv2 JSON that "
             "softswitch-p4c and real p4c (softswitch/tests/p4c_reference) make of the same source, "
             "with the same packets and table entries (`p4bench`). Ratio = softswitch-p4c / p4c; "
             "at most 1.00 means the front-end adds no work.", "",
             "| program | compiled: softswitch-p4c | compiled: p4c | ratio | interpreter: softswitch-p4c | interpreter: p4c | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = []
        for engine in instructions.ENGINES:
            ours, theirs = r["ours"][engine], r["p4c"][engine]
            cells += [f"{ours:,}", f"{theirs:,}", f"{ours / theirs:.2f}"]
        lines.append(f"| {r['program']} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "LEAN.md")
    ap.add_argument("--packets", type=int, default=instructions.PACKETS)
    args = ap.parse_args()
    try:
        rows = measure(args.packets)
    except instructions.CallgrindMissing as e:
        sys.exit(f"lean: {e}")
    text = "\n".join(report(rows, args.packets)) + "\n"
    args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
