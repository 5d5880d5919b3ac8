"""The P4 compiler setting: every part of aqmlab that compiles P4 goes through here.

The compiler comes from the environment variable ``P4C`` (``make build
P4C=p4c-bm2-ss`` exports it): a command name or path of

- ``softswitch-p4c`` (the default, installed by ``make setup``),
- ``p4c-bm2-ss`` (p4c's BMv2 back end), or
- ``p4c`` (p4c's driver, run with ``--target bmv2 --arch v1model``).

All three write the same artifact pair, ``OUT/NAME.json`` (BMv2 JSON) and
``OUT/NAME.p4info.txtpb`` (P4Info, text format), which the controller, the
PTF suite and the lab load on either target.

    python -m redctl.compiler p4src/red_ecn.p4 -o build      # what `make build` runs
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

DEFAULT = "softswitch-p4c"
KINDS = ("softswitch-p4c", "p4c-bm2-ss", "p4c")


class CompilerError(RuntimeError):
    """The compiler is unknown, missing or rejected the program (one-line message
    for the first two; the compiler's own output for the last)."""


def setting() -> str:
    """The configured compiler command (``$P4C``, default softswitch-p4c)."""
    return os.environ.get("P4C", "").strip() or DEFAULT


def resolve(command: str | None = None) -> tuple[str, str]:
    """(kind, executable path) of the compiler; CompilerError if unknown or absent.
    softswitch-p4c is looked up next to this Python first (the venv of `make setup`)."""
    command = command or setting()
    kind = Path(command).name
    if kind not in KINDS:
        raise CompilerError(f"P4C={command}: unknown compiler (expected one of {', '.join(KINDS)})")
    beside = Path(sys.executable).parent / kind
    if os.sep not in command and beside.exists():
        return kind, str(beside)
    found = shutil.which(command)
    if found is None:
        hint = ("run `make setup`" if kind == DEFAULT
                else f"install p4c or use P4C={DEFAULT}")
        raise CompilerError(f"P4C={command}: {command} not found on PATH; {hint}")
    return kind, found


def artifacts(source: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """(p4info, json) paths the compilers write for source into out_dir."""
    name = Path(source).stem
    return Path(out_dir) / f"{name}.p4info.txtpb", Path(out_dir) / f"{name}.json"


def command_line(kind: str, executable: str, source: Path, out_dir: Path) -> list[str]:
    p4info, json_path = artifacts(source, out_dir)
    if kind == "softswitch-p4c":
        return [executable, str(source), "-o", str(out_dir), "--p4runtime-files", str(p4info)]
    if kind == "p4c-bm2-ss":
        return [executable, "--p4v", "16", str(source), "-o", str(json_path),
                "--p4runtime-files", str(p4info)]
    return [executable, "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(p4info),
            "-o", str(out_dir), str(source)]


def compile_program(source: str | Path, out_dir: str | Path,
                    command: str | None = None) -> tuple[str, str]:
    """Compile a v1model program; returns (p4info path, json path)."""
    kind, executable = resolve(command)
    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = command_line(kind, executable, source, out_dir)
    done = subprocess.run(argv, capture_output=True, text=True)
    p4info, json_path = artifacts(source, out_dir)
    if done.returncode != 0 or not (p4info.is_file() and json_path.is_file()):
        raise CompilerError(f"{kind} failed on {source} (exit {done.returncode}):\n"
                            f"{done.stdout}{done.stderr}".rstrip())
    return str(p4info), str(json_path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m redctl.compiler",
                                 description="compile P4 programs with the compiler named by $P4C")
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("-o", "--out-dir", type=Path, default=Path("build"))
    args = ap.parse_args(argv)
    try:
        kind, _ = resolve()
        for source in args.sources:
            print(f"{kind} {source}", flush=True)
            compile_program(source, args.out_dir)
    except CompilerError as e:
        print(f"build: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
