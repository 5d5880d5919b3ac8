"""The README's quick start, run as written in a private network namespace
(its own veth0/veth1 and loopback, so port 9559 is free whatever else runs).

It used to fail at `redctl set` with "no pipeline installed": softswitch
loaded the JSON without serving a P4Info.
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from softswitch_server import netlab

pytestmark = pytest.mark.root
REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
NS = f"sv-qs{os.getpid() % 100000}"


def quick_start_commands() -> list:
    """The lines of the README's "Quick start" code block, comments cut."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Quick start\n.*?^```\n(.*?)^```", text, re.S | re.M).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def argv(command: str) -> list:
    words = shlex.split(command.rstrip("& "))
    return [str(BIN / words[0])] + words[1:]


def make_build(workdir: pathlib.Path):
    """What `make build` does for red_ecn.p4: build/red_ecn.{json,p4info.txtpb}."""
    out = workdir / "build"
    subprocess.run([str(BIN / "softswitch-p4c"), str(REPO / "p4src" / "red_ecn.p4"), "-o", str(out),
                    "--p4runtime-files", str(out / "red_ecn.p4info.txtpb")], check=True)


def wait_until_listening(switch) -> str:
    """softswitch's stderr up to its "P4Runtime on" line (or its exit)."""
    lines = []
    for line in iter(switch.stderr.readline, ""):
        lines.append(line)
        if "P4Runtime on" in line:
            break
    return "".join(lines)


def test_the_readme_quick_start_works_as_written(tmp_path):
    commands = quick_start_commands()
    assert commands[0] == "make build" and commands[1].startswith("softswitch build/red_ecn.json")
    assert commands[1].endswith("&") and all(c.startswith("redctl ") for c in commands[2:])
    make_build(tmp_path)
    with netlab.Namespace(NS) as ns, \
            netlab.VethPair("veth0", "veth0p", ns=NS, peer_ns=NS), \
            netlab.VethPair("veth1", "veth1p", ns=NS, peer_ns=NS):
        switch = ns.popen(*argv(commands[1]), cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        try:
            started = wait_until_listening(switch)
            assert "P4Runtime on" in started, started
            results = [ns.run(*argv(c), check=False) for c in commands[2:]]
        finally:
            netlab.stop(switch)
    assert "serving build/red_ecn.json with P4Info build/red_ecn.p4info.txtpb" in started
    for command, done in zip(commands[2:], results):
        assert done.returncode == 0, f"{command}: {done.stderr}"
    set_out, show_out = results[0].stdout, results[-1].stdout
    assert "port 1: mode=red minth=5 maxth=15 maxp=0.1 wq=2^-9" in set_out
    assert "port 1: mode=red minth=5 maxth=15" in show_out
