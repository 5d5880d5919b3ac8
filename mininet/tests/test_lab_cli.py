"""The `aqmlab` command end to end: the quick default run (what `make run`
does, shortened), bad files, failures, Ctrl-C and a killed runner, each
checked for leftovers."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from labhelpers import REPO, leftovers

DEFAULT = REPO / "mininet/experiments/default.toml"


def aqmlab(args, state_dir, **kwargs):
    env = {**os.environ, "AQMLAB_STATE_DIR": str(state_dir)}
    return subprocess.Popen([sys.executable, "-m", "aqmlab", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def communicate_or_dump(proc, state_dir, timeout):
    """proc's stderr once it exits; if it has not within `timeout`, fail with
    where it is stuck (its threads' stacks, SIGUSR1) after removing its lab."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        err = proc.communicate()[1]
        aqmlab(["cleanup"], state_dir).communicate(timeout=60)
        raise AssertionError(f"aqmlab still running {timeout} s after the signal; its "
                             f"threads then:\n{err[-6000:]}") from None


def lab_tags(folder):
    return {p.name[:3] for p in folder.rglob("l*s1.log")}


def wait_for_running_lab(state_dir, processes=8, timeout=30):
    """The tag of a lab that has started this many processes (shells, switches, agents)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for state in state_dir.glob("*.json"):
            try:
                if len(json.loads(state.read_text())["pids"]) >= processes:
                    return state.stem
            except ValueError:
                pass                      # caught mid-write
        time.sleep(0.01)
    raise AssertionError("the run did not start its lab")


def test_quick_default_run_prints_the_summary_and_leaves_nothing(tmp_path):
    proc = aqmlab(["run", str(DEFAULT), "--quick", "--jobs", "2", "--results",
                   str(tmp_path / "r"), "--no-progress"], tmp_path / "state")
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert "goodput_per_flow_mbps" in out and "ECN vs non-ECN in red" in out
    for point in ("red", "droptail"):
        for workload in ("ecn", "non-ecn", "all"):
            assert any(line.split()[:2] == [point, workload] for line in out.splitlines())
    (outdir,) = (tmp_path / "r/default").iterdir()
    runs = {p.parent.name: json.loads(p.read_text()) for p in outdir.glob("*/run.json")}
    assert {k: (v["point_name"], v["seed"], v["quick"]) for k, v in runs.items()} == {
        "p00-r0": ("red", 1, True), "p00-r1": ("red", 2, True),
        "p01-r0": ("droptail", 1, True), "p01-r1": ("droptail", 2, True)}
    assert all((outdir / run_id / "complete").exists() for run_id in runs)
    report = (outdir / "report.md").read_text()
    assert "## Summary" in report and "## Comparisons" in report and "nan" not in report
    assert "(n 2)" in out
    assert len(lab_tags(outdir)) == 4
    for tag in lab_tags(outdir):
        assert leftovers(tag, tmp_path / "state") == []
    assert list((tmp_path / "state").glob("*.json")) == []


def test_bad_file_is_rejected_naming_the_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(DEFAULT.read_text().replace("maxp = 0.1", "maxp = 7"))
    proc = aqmlab(["run", str(bad), "--results", str(tmp_path / "r")], tmp_path / "state")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "aqm.maxp: must be <= 1, got 7" in err
    assert not (tmp_path / "r").exists()


def test_a_missing_compiled_program_is_refused_before_any_folder(tmp_path):
    missing = tmp_path / "nothing-built"
    proc = aqmlab(["run", str(DEFAULT), "--quick", "--results", str(tmp_path / "r"),
                   "--build-dir", str(missing), "--no-progress"], tmp_path / "state")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert f"{missing}/red_ecn.p4info.txtpb is missing: build it with" in err
    assert not (tmp_path / "r").exists()


def test_failure_during_setup_removes_the_lab(tmp_path):
    broken = tmp_path / "broken-build"      # present, but no switch can load it
    broken.mkdir()
    (broken / "red_ecn.p4info.txtpb").write_text("not a p4info\n")
    (broken / "red_ecn.json").write_text("{}\n")
    proc = aqmlab(["run", str(DEFAULT), "--quick", "--results", str(tmp_path / "r"),
                   "--build-dir", str(broken), "--no-progress"], tmp_path / "state")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    folders = sorted((tmp_path / "r/default").glob("*/p0*"))
    assert [f.name for f in folders] == ["p00-r0", "p00-r1", "p01-r0", "p01-r1"], \
        "a failed run does not stop the study"
    assert all("red_ecn.p4info.txtpb: not a P4Info in text format" in (f / "failed").read_text()
               for f in folders)
    assert "4 of 4 run(s) failed" in err
    tags = lab_tags(tmp_path / "r")
    assert len(tags) == 4
    for tag in tags:
        assert leftovers(tag, tmp_path / "state") == []


@pytest.mark.parametrize("processes", [3, 10, 14], ids=["hosts", "switches", "traffic"])
def test_ctrl_c_removes_the_lab(tmp_path, processes):
    state = tmp_path / "state"
    proc = aqmlab(["run", str(DEFAULT), "--results", str(tmp_path / "r"), "--no-progress"], state)
    tag = wait_for_running_lab(state, processes)
    proc.send_signal(signal.SIGINT)
    err = communicate_or_dump(proc, state, timeout=60)
    assert proc.returncode == 130, err
    if processes > 3:           # past creating the study folder
        assert "--resume`" in err
    assert leftovers(tag, state) == []


@pytest.mark.parametrize("processes", [3, 14], ids=["setup", "traffic"])
def test_a_second_signal_does_not_cut_the_removal_short(tmp_path, processes):
    """What a study's worker gets when the study is stopped: the terminal's
    SIGINT, then its parent's SIGTERM. Here SIGTERMs keep coming every 20 ms
    through the whole removal; the lab must still be removed entirely."""
    state = tmp_path / "state"
    proc = aqmlab(["run", str(DEFAULT), "--results", str(tmp_path / "r"), "--no-progress"], state)
    tag = wait_for_running_lab(state, processes)
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
    err = communicate_or_dump(proc, state, timeout=5)
    assert proc.returncode != 0, err
    assert leftovers(tag, state) == [], err


def test_signals_inside_interrupts_deferred_act_after_it():
    from aqmlab import lab

    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with lab.interrupts_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)                  # delivered by now, and held
            assert seen == []
        assert seen == [signal.SIGTERM], "the first held signal reaches its own handler"
        with pytest.raises(KeyboardInterrupt):      # SIGINT's default handler
            with lab.interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_killed_runner_is_cleaned_up_by_aqmlab_cleanup(tmp_path):
    state = tmp_path / "state"
    proc = aqmlab(["run", str(DEFAULT), "--results", str(tmp_path / "r"), "--no-progress"], state)
    tag = wait_for_running_lab(state)
    proc.kill()
    proc.communicate(timeout=30)
    assert leftovers(tag, state), "a SIGKILLed runner leaves its switches and agents running"
    cleanup = aqmlab(["cleanup"], state)
    out, _ = cleanup.communicate(timeout=60)
    assert cleanup.returncode == 0 and tag in out
    assert leftovers(tag, state) == []


def test_cleanup_removes_claims_whose_owner_died_and_old_unwritten_ones(tmp_path, monkeypatch):
    from aqmlab import lab

    state = tmp_path / "state"
    monkeypatch.setattr(lab, "STATE_DIR", state)
    tag = lab.claim_tag()
    assert json.loads((state / f"{tag}.json").read_text())["owner"][0] == os.getpid(), \
        "a claim names its owner at once"
    (state / f"{tag}.json").unlink()
    record = lab.state_record("lzw")                        # this process: alive
    (state / "lzw.json").write_text(json.dumps(record))
    (state / "lzx.json").write_text(json.dumps({**record, "tag": "lzx",
                                                "owner": [os.getpid(), -1]}))   # pid reused
    (state / "lzy.json").touch()                            # being written: left alone
    (state / "lzz.json").touch()                            # an unwritten claim, 2 min old
    os.utime(state / "lzz.json", (time.time() - 120, time.time() - 120))
    out, _ = aqmlab(["cleanup"], state).communicate(timeout=60)
    assert sorted(out.split(": ")[1].split()) == ["lzx", "lzz"], out
    assert sorted(p.stem for p in state.glob("*.json")) == ["lzw", "lzy"]
