"""Studies through the lab (root): a killed switch fails only its run and is
named; a study whose aqmlab is SIGKILLed half-way is resumed (stale lab
removed) to the same runs and report as one run straight through with
--jobs 2."""

import json
import os
import signal
import time

import tomli_w

from labhelpers import leftovers
from test_lab_cli import aqmlab, lab_tags, wait_for_running_lab

TINY = {"name": "tiny", "duration": 4, "warmup": 0.5, "repeat": 2,
        "topology": {"bottleneck": {"rate": "10mbit", "delay": "5ms", "buffer": 50},
                     "server_access": {"rate": "100mbit", "delay": "1ms"},
                     "client_access": {"rate": "100mbit", "delay": "1ms"}},
        "aqm": {"minth": 5, "maxth": 15},
        "workload": [{"name": "bulk", "kind": "bulk", "pairs": 1}]}


def write(tmp_path, **extra):
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps({**TINY, **extra}))
    return path


def finish(proc, timeout=180):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def switch_pid(tag, switch="s1"):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "softswitch" in cmdline and f"@{tag}{switch}-eth" in cmdline:
                return int(entry)
    raise AssertionError(f"no softswitch of {tag}{switch}")


def wait_for(path, timeout=60):
    deadline = time.time() + timeout
    while not path.exists():
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_killed_switch_fails_only_its_run_names_it_and_resume_reruns_it(tmp_path):
    path, out_dir, state = write(tmp_path), tmp_path / "study", tmp_path / "state"
    proc = aqmlab(["run", str(path), "--out", str(out_dir), "--no-progress"], state)
    tag = wait_for_running_lab(state, processes=8)
    time.sleep(1.5)                                   # traffic is flowing
    os.kill(switch_pid(tag), signal.SIGKILL)
    code, _, err = finish(proc)
    assert code == 1 and "1 of 2 run(s) failed: p00-r0" in err
    reason = (out_dir / "p00-r0" / "failed").read_text()
    assert f"softswitch {tag}s1 (pid" in reason and "died (killed by signal 9)" in reason
    log = reason.split("log: ")[1].split()[0]
    assert log.endswith(f"p00-r0/lab/{tag}s1.log") and os.path.exists(log)
    assert (out_dir / "p00-r1" / "complete").exists()
    assert "| p00-r0 | base | failed | softswitch" in (out_dir / "report.md").read_text()
    assert leftovers(tag, state) == []

    code, out, err = finish(aqmlab(["run", str(path), "--out", str(out_dir), "--resume",
                                    "--no-progress"], state))
    assert code == 0, err
    assert "1 run(s) to do" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert {r["state"] for r in summary["runs"].values()} == {"complete"}
    assert "Runs not in this report" not in (out_dir / "report.md").read_text()


def study_view(folder):
    """What a resumed study must share with a straight one: its runs with
    their parameters and seeds, and which metrics the report gives with what n."""
    runs = {p.parent.name: {k: v for k, v in json.loads(p.read_text()).items()
                            if k != "load_average_at_start"}
            for p in folder.glob("*/run.json")}
    summary = json.loads((folder / "summary.json").read_text())
    rows = {(r["point_name"], r["workload"], r["metric"], r["n"]) for r in summary["points"]}
    states = {k: v["state"] for k, v in summary["runs"].items()}
    return runs, rows, states


def test_killed_study_resumed_equals_one_run_straight_through(tmp_path):
    path, state = write(tmp_path, repeat=3), tmp_path / "state"
    resumed = tmp_path / "resumed"
    proc = aqmlab(["run", str(path), "--out", str(resumed), "--no-progress"], state)
    wait_for(resumed / "p00-r0" / "complete")
    wait_for(resumed / "p00-r1" / "run.json")
    tag = wait_for_running_lab(state, processes=3)
    proc.kill()                                       # no chance to clean up or mark
    proc.communicate(timeout=30)
    first = (resumed / "p00-r0" / "result.json").read_text()
    assert not (resumed / "p00-r1" / "complete").exists() and not (resumed / "report.md").exists()

    code, out, err = finish(aqmlab(["run", str(path), "--out", str(resumed), "--resume",
                                    "--no-progress"], state))
    assert code == 0, err
    assert f"removed 1 stale lab(s) left by a killed aqmlab: {tag}" in err
    assert "2 run(s) to do" in out
    assert (resumed / "p00-r0" / "result.json").read_text() == first, "complete runs are kept"
    assert leftovers(tag, state) == []

    straight = tmp_path / "straight"
    code, _, err = finish(aqmlab(["run", str(path), "--out", str(straight), "--jobs", "2",
                                  "--no-progress"], state))
    assert code == 0, err
    assert study_view(resumed) == study_view(straight)
    assert study_view(straight)[2] == {"p00-r0": "complete", "p00-r1": "complete",
                                       "p00-r2": "complete"}
    tags = lab_tags(straight)
    assert len(tags) == 3
    for tag in tags:
        assert leftovers(tag, state) == []
    assert list(state.glob("*.json")) == []
