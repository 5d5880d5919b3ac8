"""Runs the engine crate's Rust unit tests (the traffic manager's virtual-time
queue logic, src/tm.rs) so `make test` covers them."""

import os
import re
import shutil
import subprocess
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "engine"


def test_engine_crate_unit_tests_pass():
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    run = subprocess.run([cargo, "test", "--release", "-q", "-p", "softswitch_engine", "--lib"],
                         cwd=ENGINE, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    passed = re.search(r"test result: ok\. (\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= 5, run.stdout[-4000:]
