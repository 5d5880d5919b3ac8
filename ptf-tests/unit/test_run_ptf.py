"""run_ptf.py's prerequisite checks: without BMv2 or the configured compiler
the harness (and `make ptf`) prints one line and exits non-zero, before any
namespace or process is made."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent
REPO = HERE.parent
BMV2_MISSING = ("make ptf TARGET=bmv2: simple_switch_grpc not found on PATH; "
                "install BMv2 or use TARGET=softswitch")


def check(tmp_path, *args, **env):
    environ = {k: v for k, v in os.environ.items() if k != "P4C"}
    environ.update(PATH=f"{tmp_path}:/usr/bin:/bin", **env)
    return subprocess.run([sys.executable, str(HERE / "run_ptf.py"), "--check", *args],
                          capture_output=True, text=True, env=environ)


def fake_tools(directory, *names):
    for name in names:
        tool = directory / name
        tool.write_text("#!/bin/sh\nexit 1\n")
        tool.chmod(0o755)


@pytest.mark.parametrize("present, missing", [
    ((), "simple_switch_grpc"),
    (("simple_switch_grpc",), "simple_switch_CLI"),
])
def test_bmv2_missing_is_one_line(tmp_path, present, missing):
    fake_tools(tmp_path, *present)
    done = check(tmp_path, "--target", "bmv2")
    assert done.returncode != 0
    assert done.stderr == BMV2_MISSING.replace("simple_switch_grpc", missing, 1) + "\n"


def test_bmv2_present_passes_the_check(tmp_path):
    fake_tools(tmp_path, "simple_switch_grpc", "simple_switch_CLI")
    artifacts = tmp_path / "red_ecn.p4info.txtpb", tmp_path / "red_ecn.json"
    for f in artifacts:
        f.write_text("")
    done = check(tmp_path, "--target", "bmv2", "--p4info", str(artifacts[0]), "--json", str(artifacts[1]))
    assert (done.returncode, done.stderr) == (0, "")


def test_missing_compiler_is_one_line(tmp_path):
    done = check(tmp_path, P4C="p4c-bm2-ss")
    assert done.returncode != 0
    assert done.stderr == ("make ptf: P4C=p4c-bm2-ss: p4c-bm2-ss not found on PATH; "
                           "install p4c or use P4C=softswitch-p4c\n")


def test_make_ptf_bmv2_stops_at_the_check(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k != "P4C"}
    environ["PATH"] = f"{tmp_path}:/usr/bin:/bin"
    done = subprocess.run(["make", "-s", "ptf", "TARGET=bmv2"], cwd=REPO, capture_output=True,
                          text=True, env=environ)
    assert done.returncode != 0
    assert done.stderr.splitlines()[0] == BMV2_MISSING
    assert "Traceback" not in done.stderr and "passed" not in done.stdout  # unit tests not run


@pytest.mark.parametrize("target", ["bmv2", "external"])
def test_tna_runs_on_the_built_in_target_only(tmp_path, target):
    fake_tools(tmp_path, "simple_switch_grpc", "simple_switch_CLI")
    done = check(tmp_path, "--target", target, "--arch", "tna")
    assert done.returncode != 0
    assert done.stderr == ("make ptf ARCH=tna: the TNA program runs on the built-in target only "
                           "(TARGET=softswitch); Tofino needs bf-p4c and bf_switchd "
                           "(hw/tofino/README.md)\n")


def test_tna_without_its_build_names_the_make_target(tmp_path):
    done = check(tmp_path, "--arch", "tna", "--json", str(tmp_path / "none.json"),
                 "--p4info", str(tmp_path / "none.txtpb"))
    assert done.returncode != 0
    assert done.stderr.endswith("is missing: run `make -C ptf-tests build-tna` first\n")
