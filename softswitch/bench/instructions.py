"""Instructions per packet of p4core's two engines, counted by callgrind.

    python softswitch/bench/instructions.py PROGRAM.json...

Runs p4core's `p4bench` example (parser, checksum verification, ingress, egress,
checksum update and deparser per packet, no I/O) under `valgrind --tool=callgrind`
with PACKETS packets per frame size (64 and 1500 bytes) and with none, and
divides the difference by the packets: the program's load and the executor's
construction cancel out. Callgrind counts are exact and do not depend on the
machine's load, so they compare engines and builds where timings cannot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parents[1] / "engine"
ENGINES = ("compiled", "interpreter")
PACKETS = 2000


class CallgrindMissing(RuntimeError):
    """valgrind is not installed (requirements-apt.txt lists it)."""


def p4bench() -> Path:
    """Builds the p4bench example (release) and returns its path."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")  # rustup's place, as the Makefile's PATH
    subprocess.run([cargo, "build", "--release", "--quiet", "-p", "p4core", "--example", "p4bench"], cwd=ENGINE_DIR, check=True)
    return ENGINE_DIR / "target" / "release" / "examples" / "p4bench"


def count(binary: Path, program: Path, engine: str, packets: int) -> int:
    """Instructions callgrind counts for one p4bench run."""
    if shutil.which("valgrind") is None:
        raise CallgrindMissing("valgrind is not installed")
    env = dict(os.environ, P4BENCH_PACKETS=str(packets), P4CORE_ENGINE=engine)
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(binary), str(program)],
                          env=env, capture_output=True, text=True, check=True)
    found = re.search(r"refs:\s+([\d,]+)", done.stderr)
    if not found:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def per_packet(binary: Path, program: Path, engine: str, packets: int = PACKETS) -> int:
    """Instructions per packet (two frame sizes, `packets` each), load excluded."""
    return round((count(binary, program, engine, packets) - count(binary, program, engine, 0)) / (2 * packets))


def measure(programs: dict[str, Path], packets: int = PACKETS) -> list[dict]:
    """One row per program: instructions/packet on each engine."""
    binary = p4bench()
    return [{"program": name, "packets": 2 * packets,
             **{engine: per_packet(binary, path, engine, packets) for engine in ENGINES}}
            for name, path in programs.items()]


def table(rows: list[dict]) -> list[str]:
    lines = ["| program | compiled | interpreter | ratio |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['program']} | {r['compiled']:,} | {r['interpreter']:,} | {r['interpreter'] / r['compiled']:.2f}x |")
    return lines


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n".join(table(measure({Path(p).name: Path(p).resolve() for p in sys.argv[1:]}))))


if __name__ == "__main__":
    main()
