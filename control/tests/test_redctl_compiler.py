"""The one compiler setting ($P4C, redctl.compiler): command lines of the three
compilers, the default compiles red_ecn.p4, and a missing or unknown compiler
is one line on stderr and a non-zero exit, from Python, `python -m` and make."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redctl import compiler

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "red_ecn.p4"


def _env(**extra):
    env = dict(os.environ)
    env.pop("P4C", None)
    env.update(extra)
    return env


def test_default_compiler_builds_the_artifact_pair(tmp_path, monkeypatch):
    monkeypatch.delenv("P4C", raising=False)
    p4info, json_path = compiler.compile_program(PROGRAM, tmp_path)
    assert Path(p4info) == tmp_path / "red_ecn.p4info.txtpb"
    assert "MyEgress.red_config" in Path(p4info).read_text()
    assert json.loads(Path(json_path).read_text())["pipelines"]


@pytest.mark.parametrize("kind, expected", [
    ("softswitch-p4c", ["X", "p.p4", "-o", "out", "--p4runtime-files", "out/p.p4info.txtpb"]),
    ("p4c-bm2-ss", ["X", "--p4v", "16", "p.p4", "-o", "out/p.json",
                    "--p4runtime-files", "out/p.p4info.txtpb"]),
    ("p4c", ["X", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
             "out/p.p4info.txtpb", "-o", "out", "p.p4"]),
])
def test_each_compiler_writes_json_and_p4info_with_the_same_names(kind, expected):
    assert compiler.command_line(kind, "X", Path("p.p4"), Path("out")) == expected


@pytest.mark.parametrize("setting, message", [
    ("p4c-bm2-ss", "P4C=p4c-bm2-ss: p4c-bm2-ss not found on PATH; install p4c or use P4C=softswitch-p4c"),
    ("/nonexistent/p4c", "P4C=/nonexistent/p4c: /nonexistent/p4c not found on PATH; install p4c"),
    ("gcc", "P4C=gcc: unknown compiler (expected one of softswitch-p4c, p4c-bm2-ss, p4c)"),
])
def test_missing_or_unknown_compiler_is_one_line(setting, message, tmp_path):
    env = _env(P4C=setting, PATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "redctl.compiler", str(PROGRAM), "-o", str(tmp_path)],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith(f"build: {message}") and done.stderr.count("\n") == 1
    assert not list(tmp_path.glob("*.json"))


def test_make_build_takes_the_compiler_from_p4c(tmp_path):
    done = subprocess.run(["make", "-s", "build", "P4C=p4c-bm2-ss"], cwd=REPO, capture_output=True,
                          text=True, env=_env(PATH=f"{tmp_path}:/usr/bin:/bin"))
    assert done.returncode != 0
    assert done.stderr.splitlines()[0] == ("build: P4C=p4c-bm2-ss: p4c-bm2-ss not found on PATH; "
                                           "install p4c or use P4C=softswitch-p4c")
    assert "Traceback" not in done.stderr
