"""Timing fidelity: each run's verdict from the switch's own lateness record,
the report's section, and `--redo-unfaithful` picking exactly the runs that
missed the chosen time scale."""

import subprocess
import sys
from types import SimpleNamespace

from aqmlab import fidelity, study
from aqmlab.report import build_report, load_study
from aqmlab.reproductions import common
from test_rfc2884 import result as base_result, write_study

STUDY = """
name = "fidelity"
duration = 10
repeat = 3
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10mbit"
delay = "20ms"
[[workload]]
kind = "bulk"
"""
# Late mean per run id: p00-r1 misses the RTT scale (> 1 % of the base RTT),
# p00-r2 only the packet scale (more than 1 % of frames over 1 ms late).
TIMING = {"p00-r0": (50.0, 2), "p00-r1": (5000.0, 2), "p00-r2": (300.0, 30)}


def result(run):
    mean, over = TIMING[run.run_id]
    r = base_result(bulk=None)
    r["bottleneck_rate_bps"] = 10e6
    r["bottleneck"]["switch_timing"] = {"frames": 1000, "late_us_mean": mean, "late_us_max": 4000,
                                        "late_over_1ms": over, "cpu_share": 0.2}
    return r


def test_unfaithful_runs_by_time_scale_and_the_report_lists_them(tmp_path):
    folder = write_study(tmp_path / "s", STUDY, result)
    assert fidelity.unfaithful_in(folder, "rtt") == {"p00-r1"}
    assert fidelity.unfaithful_in(folder, "packet") == {"p00-r1", "p00-r2"}
    build_report(folder)
    text = (folder / "report.md").read_text()
    assert "2 of 3 runs with a timing record faithful at the RTT scale, 1 at the packet scale" in text
    assert "| p00-r1 | 5000 | 4000 | 0.20 % | 0.20 |" in text


def test_runs_without_a_timing_record_are_not_judged(tmp_path):
    def old(run):
        r = result(run)
        del r["bottleneck"]["switch_timing"]
        return r
    folder = write_study(tmp_path / "s", STUDY, old)
    assert fidelity.unfaithful_in(folder, "packet") == set()
    build_report(folder)
    assert "Timing fidelity" not in (folder / "report.md").read_text()


def test_study_stages_redo_the_unfaithful_runs(tmp_path, monkeypatch):
    folder = write_study(tmp_path / "part", STUDY, result)
    calls = []
    monkeypatch.setattr(common, "run_part", lambda root, part, source, options: calls.append(options) or 0)
    stage = common.Stage("part", "all", ["p00-r0", "p00-r1", "p00-r2"])
    common.run_stages(tmp_path, [stage], {"part": tmp_path / "part.toml"}, 1, [])
    assert calls == []                                  # all complete: nothing to do
    common.run_stages(tmp_path, [stage], {"part": tmp_path / "part.toml"}, 1,
                      ["--redo-unfaithful", "rtt"])
    assert calls[-1][calls[-1].index("--only") + 1] == "p00-r1"
    assert study.run_state(folder / "p00-r0") == study.COMPLETE


def test_redo_unfaithful_needs_resume(tmp_path):
    done = subprocess.run([sys.executable, "-m", "aqmlab", "run", "mininet/experiments/default.toml",
                           "--out", str(tmp_path / "x"), "--redo-unfaithful", "rtt"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "aqmlab run: error: --redo-unfaithful: only with --resume (it reruns runs of a study folder)")
    assert not (tmp_path / "x").exists()


def test_a_run_is_judged_at_the_packet_and_the_rtt_time_scale():
    result = {"bottleneck_rate_bps": 100e6, "workloads": {"p2p": {}}, "bottleneck": {
        "utilisation": 0.97, "switch_timing": {"frames": 1000, "late_us_mean": 100.0,
                                               "late_us_max": 900, "late_over_1ms": 5,
                                               "cpu_share": 0.5}}}
    values, ok = fidelity.run_timing(result, 0.2)
    assert ok == {"packet": True, "rtt": True} and values["late_over_1ms"] == 0.005
    timing = result["bottleneck"]["switch_timing"]
    timing.update(late_us_mean=500.0, late_over_1ms=30)     # 0.5 ms, 3 %: RTT scale only
    assert fidelity.run_timing(result, 0.2)[1] == {"packet": False, "rtt": True}
    timing.update(late_us_mean=2500.0)                      # > 1 % of 200 ms
    assert fidelity.run_timing(result, 0.2)[1] == {"packet": False, "rtt": False}
    timing.update(late_us_mean=100.0, late_over_1ms=5)
    result["bottleneck"]["utilisation"] = 0.5               # P2P left the link idle
    assert fidelity.run_timing(result, 0.2)[1] == {"packet": False, "rtt": False}




def test_reproduction_reports_count_faithful_runs_per_part(tmp_path):
    folder = write_study(tmp_path / "s", STUDY, result)
    line = common.fidelity_lines({"crr": SimpleNamespace(loaded=load_study(folder))})[-1]
    assert "RTT / packet time scale: crr 2 / 1 of 3." in line
