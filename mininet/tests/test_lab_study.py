"""Studies without a lab: sweep expansion, zip, repetitions and seeds, run
ids, `aqmlab validate`, study folders, and reports rebuilt from run folders
(runs written here with known metrics)."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tomli_w

from aqmlab import report, study
from aqmlab.config import ConfigError, load_experiment, parse_experiment
from labhelpers import REPO

BASE = {"name": "s", "duration": 10, "workload": [{"name": "web", "kind": "crr"}]}


def experiment(**extra):
    return parse_experiment({**BASE, **extra})


def test_sweep_is_a_cartesian_product_in_file_order():
    e = experiment(sweep={"aqm.maxp": [0.02, 0.1], "tcp.ecn": [True, False, True]})
    labels = [s.name for s in e.scenarios]
    assert len(labels) == 6
    assert labels[:3] == ["base:aqm.maxp=0.02,tcp.ecn=true", "base:aqm.maxp=0.02,tcp.ecn=false",
                          "base:aqm.maxp=0.02,tcp.ecn=true"]
    assert [s.aqm.maxp for s in e.scenarios] == [0.02] * 3 + [0.1] * 3
    assert [s.workloads[0].tcp.ecn for s in e.scenarios] == [True, False, True] * 2


def test_zip_moves_paths_together_and_dotted_toml_keys_work():
    text = """name = "z"
[[workload]]
kind = "bulk"
[sweep]
aqm.minth = [3, 5]
aqm.maxth = [9, 15]
"workload.bulk.tcp.initcwnd" = [1, 4]
zip = [["aqm.minth", "aqm.maxth"]]
"""
    import tomllib
    e = parse_experiment(tomllib.loads(text))
    got = [(s.aqm.minth, s.aqm.maxth, s.workloads[0].tcp.initcwnd) for s in e.scenarios]
    assert got == [(3, 9, 1), (3, 9, 4), (5, 15, 1), (5, 15, 4)]


def test_sweep_times_scenarios_and_repeat_give_stable_run_ids_and_seeds():
    e = experiment(seed=7, repeat=3, scenario=[{"name": "a"}, {"name": "b"}],
                   sweep={"aqm.maxp": [0.05, 0.2]})
    runs = study.expand(e)
    assert [r.run_id for r in runs][:4] == ["p00-r0", "p00-r1", "p00-r2", "p01-r0"]
    assert len(runs) == 12 and len({r.run_id for r in runs}) == 12
    assert [r.scenario.name for r in runs[::3]] == [
        "a:aqm.maxp=0.05", "a:aqm.maxp=0.2", "b:aqm.maxp=0.05", "b:aqm.maxp=0.2"]
    # repetition r of every point has seed 7 + r: distinct per repetition, paired across points
    assert {r.seed for r in runs if r.repetition == 1} == {8}
    assert sorted({r.seed for r in runs}) == [7, 8, 9]
    assert study.expand(e) == runs
    assert [r.run_id for r in study.select(runs, "p03-r2,p00-r0")] == ["p03-r2", "p00-r0"]
    with pytest.raises(ConfigError, match="--only: no run 'p09-r0'"):
        study.select(runs, "p09-r0")


def test_a_file_without_sweep_keeps_its_scenarios():
    e = load_experiment(REPO / "mininet/experiments/default.toml")
    assert [r.run_id for r in study.expand(e)][:2] == ["p00-r0", "p00-r1"]
    assert [r.run_id for r in study.expand(e.for_quick())] == ["p00-r0", "p00-r1", "p01-r0",
                                                               "p01-r1"]
    assert [s.name for s in e.scenarios] == ["red", "droptail"]


@pytest.mark.parametrize("sweep, message", [
    ({"aqm.bogus": [1]}, "sweep point base:aqm.bogus=1: aqm.bogus: unknown field"),
    ({"aqm.maxp": [0.1, 7]}, "sweep point base:aqm.maxp=7: aqm.maxp: must be <= 1, got 7"),
    ({"aqm.maxp": 0.1}, "sweep.aqm.maxp: must be a non-empty list"),
    ({"bogus.x": [1]}, "sweep.bogus.x: must start with one of"),
    ({"workload.nope.size": ["1KB"]}, "sweep.workload.nope.size: no workload named 'nope'"),
    ({"aqm.minth": [1, 2], "aqm.maxth": [9], "zip": [["aqm.minth", "aqm.maxth"]]},
     "sweep.zip[0]: zipped lists must have the same length"),
    ({"aqm.minth": [1], "zip": [["aqm.maxth"]]}, "sweep.zip[0]: 'aqm.maxth' is not a swept path"),
])
def test_bad_sweeps_name_the_field(sweep, message):
    with pytest.raises(ConfigError) as error:
        experiment(sweep=sweep)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_repeat_must_be_a_positive_integer():
    with pytest.raises(ConfigError, match="^repeat: must be >= 1, got 0"):
        experiment(repeat=0)


def test_validate_lists_points_runs_and_wall_time(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps({**BASE, "repeat": 5, "sweep": {"aqm.maxp": [0.02, 0.1]}}))
    out = subprocess.run([sys.executable, "-m", "aqmlab", "validate", str(path), "--jobs", "2"],
                         capture_output=True, text=True, check=True).stdout
    assert "p00  base:aqm.maxp=0.02" in out and "p01  base:aqm.maxp=0.1" in out
    assert "2 point(s) x 5 repetition(s) = 10 runs (p00-r0 .. p01-r4), seeds 1..5" in out
    seconds = study.estimated_seconds(load_experiment(path), study.expand(load_experiment(path)), 2)
    assert seconds == pytest.approx(10 * (10 + study.STOP_SECONDS + study.SETUP_SECONDS +
                                          2 * study.SETUP_SECONDS_PER_HOST) / 2)
    assert f"estimated wall time {seconds // 60:.0f} min" in out


def test_jobs_rule_allows_by_bottleneck_rate_hosts_and_cores_and_warns_above(tmp_path):
    def at(rate, pairs=1):
        return experiment(topology={"bottleneck": {"rate": rate, "delay": "10ms"}},
                          workload=[{"kind": "bulk", "pairs": pairs}])
    assert [study.faithful_jobs(at(r), cores=2) for r in ("1.5mbit", "10mbit", "100mbit")] == \
        [4, 2, 1]
    # More hosts per run: fewer side by side (RFC 2884's 24-host runs: 4 on 2 cores;
    # RFC 2415's 40- to 70-host runs: 2; its 128-host runs: 1).
    assert [study.faithful_jobs(at("1.5mbit", pairs), cores=2) for pairs in (12, 13, 35, 36)] == \
        [4, 2, 2, 1]
    assert study.faithful_jobs(at("10mbit", 9), cores=2) == 1
    assert study.jobs_warning(at("1.5mbit"), 4, cores=2) is None
    assert study.jobs_warning(at("10mbit"), 3, cores=2) == (
        "--jobs 3 exceeds the measured rule for a 10 Mb/s bottleneck and 2 hosts per run on 2 "
        "cores (at most 2; mininet/bench/JOBS.md): the runs' timing may differ from --jobs 1")
    path = tmp_path / "fast.toml"
    path.write_text(tomli_w.dumps({**BASE, "repeat": 4, "topology": {
        "bottleneck": {"rate": "100mbit", "delay": "10ms"}}}))
    out = subprocess.run([sys.executable, "-m", "aqmlab", "validate", str(path), "--jobs", "2"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == ("warning: --jobs 2 exceeds the measured rule for a 100 Mb/s "
                                    f"bottleneck and 2 hosts per run on {os.cpu_count()} cores "
                                    "(at most 1; "
                                    "mininet/bench/JOBS.md): the runs' timing may differ from "
                                    "--jobs 1")
    fast_point = experiment(topology={"bottleneck": {"rate": "1.5mbit", "delay": "10ms"}},
                            scenario=[{"name": "slow"}, {"name": "fast", "topology": {
                                "bottleneck": {"rate": "100mbit", "delay": "10ms"}}}])
    assert study.faithful_jobs(fast_point, cores=8) == 1


# ----------------------------------------------------- reports from run folders
STUDY = {"name": "fake", "duration": 10, "repeat": 4,
         "topology": {"bottleneck": {"rate": "10mbit", "delay": "10ms", "buffer": 100}},
         "aqm": {"minth": 5, "maxth": 15},
         "workload": [{"name": "ecn", "kind": "bulk", "tcp": {"ecn": True}},
                      {"name": "plain", "kind": "bulk"}],
         "scenario": [{"name": "red"}, {"name": "droptail", "aqm": {"mode": "droptail"}}]}


def fake_result(ecn_mbps, plain_mbps, utilisation):
    def workload(mbps):
        return {"flows": 1, "goodput_bps": mbps * 1e6, "goodput_per_flow_bps": mbps * 1e6,
                "jain_index": 1.0, "delay_kind": None, "delay_s": {}, "transactions_per_s": 0.0,
                "network_power": None}
    return {"scenario": "x", "seed": 1, "goodputs": {"ecn/f": ecn_mbps * 1e6,
                                                     "plain/f": plain_mbps * 1e6},
            "workloads": {"ecn": workload(ecn_mbps), "plain": workload(plain_mbps)},
            "bottleneck": {"utilisation": utilisation, "drop_rate": 0.01, "mark_rate": 0.0},
            "queue": {"samples": 0}, "versions": {"aqmlab": "test"}}


def write_fake_study(folder, values, skip=(), fail=(), **extra):
    """values(point, repetition) -> (ecn Mb/s, plain Mb/s, utilisation)."""
    path = folder.parent / f"{folder.name}.toml"
    path.write_text(tomli_w.dumps({**STUDY, **extra}))
    text = path.read_text()
    e = load_experiment(path)
    study.prepare_study_folder(folder, text, quick=False, owner=True)
    for run in study.expand(e):
        if run.run_id in skip:
            continue
        run_folder = study.start_run_folder(folder, run, e, text, quick=False)
        if run.run_id in fail:
            study.mark_failed(run_folder, "softswitch ls1 (pid 1) died (killed by signal 9)")
            continue
        (run_folder / "result.json").write_text(json.dumps(fake_result(
            *values(run.point, run.repetition))))
        study.mark_complete(run_folder)
    return folder


def test_report_gives_mean_sd_n_and_t_interval_per_point(tmp_path):
    folder = write_fake_study(tmp_path / "a", lambda p, r: (4 + r, 3 + r, 0.9 + 0.01 * r))
    loaded, rows, found = report.build_report(folder)
    row = next(r for r in rows if (r["point_name"], r["workload"], r["metric"]) ==
               ("red", "ecn", "goodput_mbps"))
    # 4, 5, 6, 7: mean 5.5, sd 1.291, t(0.975, 3) = 3.182
    assert (row["mean"], row["n"]) == (5.5, 4)
    assert row["sd"] == pytest.approx(1.2910, abs=1e-4)
    assert row["ci_high"] - row["mean"] == pytest.approx(3.1824 * 1.2910 / 2, abs=1e-3)
    summary = json.loads((folder / "summary.json").read_text())
    assert {r["state"] for r in summary["runs"].values()} == {"complete"}
    text = (folder / "report.md").read_text()
    assert "nan" not in text and "delays.png" not in text
    assert "## Runs not in this report" not in text
    assert (folder / "goodput.png").exists() and not (folder / "queue_delay.png").exists()


def test_comparisons_are_paired_by_seed_and_say_whether_significant(tmp_path):
    # ECN is exactly 1 Mb/s above plain in every seed, though seeds vary a lot:
    # paired, the interval is [1, 1]; RED and drop-tail differ by noise only.
    folder = write_fake_study(tmp_path / "a", lambda p, r: (3 + 2 * r + 1, 3 + 2 * r,
                                                            0.9 + 0.01 * (-1) ** (r + p)))
    _, _, found = report.build_report(folder)
    ecn = next(c for c in found if c["comparison"] == "ECN vs non-ECN in red"
               and c["metric"] == "goodput_per_flow_mbps")
    assert ecn["difference"].mean == pytest.approx(1.0) and ecn["difference"].excludes_zero()
    red = next(c for c in found if c["comparison"] == "RED vs drop-tail (red vs droptail)"
               and c["metric"] == "utilisation")
    assert red["difference"].n == 4 and not red["difference"].excludes_zero()
    text = (folder / "report.md").read_text()
    assert "ECN vs non-ECN in red, goodput_per_flow_mbps: difference 1 ± 0 (n 4)" in text
    assert "significant: the 95% interval [1, 1] excludes zero (higher)" in text
    assert "not significant" in text


def test_report_marks_failed_incomplete_and_missing_runs(tmp_path):
    folder = write_fake_study(tmp_path / "a", lambda p, r: (4, 3, 0.9), skip={"p01-r3"},
                              fail={"p00-r1"})
    (folder / "p01-r2" / "complete").unlink()            # interrupted: folder, no marker
    loaded, rows, _ = report.build_report(folder)
    assert loaded.states["p00-r1"] == "failed" and loaded.states["p01-r2"] == "incomplete"
    assert loaded.states["p01-r3"] == "missing"
    n = {(r["point_name"], r["metric"]): r["n"] for r in rows if r["workload"] == "all"}
    assert n[("red", "utilisation")] == 3 and n[("droptail", "utilisation")] == 2
    text = (folder / "report.md").read_text()
    assert "| p00-r1 | red | failed | softswitch ls1 (pid 1) died (killed by signal 9) |" in text
    assert "| p01-r2 | droptail | incomplete | - |" in text
    assert "| p01-r3 | droptail | missing" in text


def test_compare_puts_two_studies_side_by_side(tmp_path):
    a = write_fake_study(tmp_path / "a", lambda p, r: (4 + r, 3, 0.9))
    b = write_fake_study(tmp_path / "b", lambda p, r: (10 + r, 3, 0.9))
    out = subprocess.run([sys.executable, "-m", "aqmlab", "compare", str(a), str(b)],
                         capture_output=True, text=True, check=True).stdout
    assert "| red | ecn | goodput_mbps | 5.5 ± 2.1 (n 4) | 11.5 ± 2.1 (n 4) | no |" in out
    assert "| red | plain | goodput_mbps | 3 ± 0 (n 4) | 3 ± 0 (n 4) | yes |" in out


def test_a_study_folder_refuses_another_experiment(tmp_path):
    folder = write_fake_study(tmp_path / "a", lambda p, r: (4, 3, 0.9))
    with pytest.raises(ConfigError, match="holds a study run with another experiment file"):
        study.prepare_study_folder(folder, "name = 'other'", quick=False, owner=False)
    with pytest.raises(ConfigError, match="holds a study run with --quick"):
        study.prepare_study_folder(folder, (tmp_path / "a.toml").read_text(), quick=True,
                                   owner=False)


def test_a_numeric_sweep_is_plotted_along_its_axis_with_bands(tmp_path):
    folder = write_fake_study(tmp_path / "a", lambda p, r: (4 + p, 3, 0.9 + 0.01 * r),
                              sweep={"aqm.maxp": [0.02, 0.05, 0.1]})
    loaded, rows, found = report.build_report(folder)
    assert len(loaded.runs) == 2 * 3 * 4
    assert (folder / "sweep.png").exists() and "![Along the sweep](sweep.png)" in \
        (folder / "report.md").read_text()
    # RED points differ from drop-tail ones in aqm.mode alone only at equal maxp
    pairs = {c["comparison"] for c in found if c["comparison"].startswith("RED vs drop-tail")}
    assert pairs == {f"RED vs drop-tail (red:aqm.maxp={v} vs droptail:aqm.maxp={v})"
                     for v in (0.02, 0.05, 0.1)}


def test_run_csv_rows_reads_a_compressed_committed_file(tmp_path):
    (tmp_path / "transfers.csv").write_text("kind,delay\npage,0.5\n")
    assert report.run_csv_rows(tmp_path, "transfers.csv") == [{"kind": "page", "delay": "0.5"}]
    with gzip.open(tmp_path / "flows.csv.gz", "wt") as handle:
        handle.write("flow,goodput_bps\nf,1e6\n")
    assert report.run_csv_rows(tmp_path, "flows.csv") == [{"flow": "f", "goodput_bps": "1e6"}]
    assert report.run_csv_rows(tmp_path, "queue.csv") == []


def test_sigterm_to_a_study_stops_its_aqmlab_run_child(tmp_path):
    """`aqmlab study` runs each stage as an `aqmlab run` child: a SIGTERM to
    the study (a scheduler, `kill`) must reach the child, not orphan it."""
    pidfile = tmp_path / "child.pid"
    child = ("import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
             "time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c",
                               "import sys; from aqmlab.reproductions import common; "
                               f"common.call_run([sys.executable, '-c', {child!r}, {str(pidfile)!r}])"],
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=10) != 0
    with pytest.raises(ProcessLookupError):   # terminated and reaped by the study
        os.kill(pid, 0)
