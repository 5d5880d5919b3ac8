"""Runs the p4core crate's Rust tests (`cargo test --release -p p4core`) under pytest,
so `make test` covers the BMv2 JSON interpreter: program behaviour, JSON
validation and the one-million-frame fuzz test."""
import os
import pathlib
import re
import shutil
import subprocess

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
