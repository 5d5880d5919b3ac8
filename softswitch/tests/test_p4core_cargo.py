"""Runs the p4core crate's Rust tests (`cargo test --release -p p4core`) under pytest,
so `make test` covers the BMv2 JSON interpreter: program behaviour, JSON
validation and the one-million-frame fuzz test."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

ENGINE = pathlib.Path(__file__).resolve().parents[1] / "engine"


def test_p4core_cargo_tests_pass():
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    run = subprocess.run(
        [cargo, "test", "--release", "-p", "p4core"],
        cwd=ENGINE, capture_output=True, text=True, timeout=1800,
    )
    log = run.stdout[-6000:] + run.stderr[-6000:]
    assert run.returncode == 0, log
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", run.stdout))
    assert passed >= 20, f"expected the p4core suite to run, {passed} passed\n{log}"
    assert "FAILED" not in run.stdout, log


def test_p4core_accepts_every_program_the_front_end_compiles(tmp_path):
    """The front-end's BMv2 JSON (corpus programs and p4src/) must load in the engine core."""
    repo = ENGINE.parents[1]
    sources = sorted((repo / "softswitch/tests/corpus/positive").glob("*.p4")) + sorted((repo / "p4src").glob("*.p4"))
    assert sources
    p4c = pathlib.Path(sys.executable).parent / "softswitch-p4c"
    for src in sources:
        info = tmp_path / f"{src.stem}.p4info.txtpb"
        run = subprocess.run([str(p4c), str(src), "-o", str(tmp_path), "--p4runtime-files", str(info)],
                             cwd=repo, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{src.name}: {run.stderr[-2000:]}"
    programs = sorted(str(p) for p in tmp_path.glob("*.json"))
    assert len(programs) == len(sources)
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    check = subprocess.run([cargo, "run", "-q", "--release", "-p", "p4core", "--example", "p4check", "--", *programs],
                           cwd=ENGINE, capture_output=True, text=True, timeout=1800)
    assert check.returncode == 0, check.stderr[-4000:]
    assert check.stdout.count(": ok") == len(programs), check.stdout
