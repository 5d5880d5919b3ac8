"""The RFC 2415 reproduction without a lab: its experiment files (the RFC's
and the thread's grids and TCP), the published numbers, per-seed % decreases,
the headline-trend checks, run-length convergence, the CI direction check and
the report, on study folders written here with known values. The lab test is
at the end (root)."""

import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import pytest

from aqmlab import study
from aqmlab.agent import size_sampler
from aqmlab.config import load_experiment
from aqmlab.reproductions import common, rfc2415
from aqmlab.reproductions import rfc2415_differences as differences
from labhelpers import REPO, run_quick_study
from test_rfc2884 import only_of, write_study

FILES = REPO / "mininet" / "experiments" / "rfc2415"


# ---------------------------------------------------------------- the experiment files

@pytest.mark.parametrize("name", rfc2415.PARTS + (rfc2415.CONVERGENCE,))
def test_every_part_is_the_rfc_dumbbell_and_tcp_with_five_repetitions(name):
    e = load_experiment(FILES / f"{name}.toml")
    assert e.repeat >= 5 and e.duration >= 360
    for s in e.scenarios:
        b = s.topology.bottleneck
        assert (b.rate_bps, b.delay_s) == (1.5e6, 0.05)
        assert s.topology.server_access.rate_bps == 10e6
        assert s.topology.server_access.delay_s == pytest.approx(100e-6)
        assert b.buffer == (22 if name.startswith("thread") else 25)
        assert s.aqm.mode == ("red" if name == "thread_red" else "droptail")
        for w in s.workloads:
            assert (w.tcp.window_clamp, w.tcp.mss) == (11, 1460)
            if w.kind.startswith("http"):
                assert w.embedded == 3 and w.think == {"dist": "uniform", "low": 1, "high": 5}
            else:
                assert (w.size, w.repeat) == (1_000_000, True)


def grid(name):
    part = rfc2415.Part("x", None)
    return {part.key(s) for s in load_experiment(FILES / f"{name}.toml").scenarios}


def test_rfc_grids_cover_every_published_cell_and_iw_10():
    published = rfc2415.published()["rfc2415"]
    for name, table in (("http10", "table1"), ("http11", "table4")):
        cells = {(r["webs"], r["ftps"]) for r in published[table]}
        assert grid(name) == {(w, f, iw) for w, f in cells for iw in (1, 2, 3, 4, 10)}
    assert grid("halves") == {(n, 0, iw) for n in (16, 32, 64) for iw in (1, 3, "split")}
    assert grid("thread_droptail") == {(16, f, iw) for f in (0, 1, 4, 6, 8)
                                       for iw in (1, 2, 3, 4, 10)}
    assert grid("thread_red") == {(16, f, iw) for f in (1, 4, 6, 8) for iw in (1, 2, 3, 4, 10)}
    assert grid("thread_mix") == {(32, 0, 1), (32, 0, 3), (32, 0, "split")}
    assert grid("thread_http11") == {(16, f, iw) for f in (0, 1, 4, 8) for iw in (1, 3)}


# ---------------------------------------------------------------- the web object sizes

Z_999 = 3.29    # two-sided 99.9 %: each statistical bound below fails for 1 seed in 1,000


def web_workloads(name):
    return [w for s in load_experiment(FILES / f"{name}.toml").scenarios for w in s.workloads
            if w.kind.startswith("http")]


def surge_moments(spec, cap):
    """Mean and sd of min(X, cap) for the agent's surge sizes, from their
    definition: the lognormal below k, above it a Pareto from k holding the
    lognormal's mass there."""
    mu, sigma, k, alpha = spec["mu"], spec["sigma"], spec["k"], spec["alpha"]
    below = NormalDist(mu, sigma).cdf(math.log(k))
    moment = [math.exp(i * mu + (i * sigma) ** 2 / 2)
              * NormalDist().cdf((math.log(k) - mu - i * sigma ** 2) / sigma) for i in (1, 2)]
    tail = [k * alpha / (alpha - 1) - k ** alpha * cap ** (1 - alpha) / (alpha - 1),
            alpha * k ** alpha * (cap ** (2 - alpha) - k ** (2 - alpha)) / (2 - alpha)
            + k ** alpha * cap ** (2 - alpha)]
    mean, second = (moment[i] + (1 - below) * tail[i] for i in (0, 1))
    return mean, math.sqrt(second - mean ** 2)


def test_every_web_workload_draws_the_same_heavy_tailed_sizes():
    found = {(json.dumps(w.object_size, sort_keys=True), w.max_size)
             for name in rfc2415.PARTS + (rfc2415.CONVERGENCE, rfc2415.QUICK)
             for w in web_workloads(name)}
    assert len(found) == 1
    spec, max_size = found.pop()
    assert json.loads(spec)["dist"] == "surge" and max_size == 1_000_000


def test_object_size_median_and_mean_at_999_confidence():
    """200,000 draws of the sampler as configured: the median within one
    segment (RFC 2415: within two packets) and the mean RFC 2415's load
    needs, each inside its 99.9 % sampling bound."""
    web = web_workloads("http10")[0]
    spec, n = web.object_size, 200_000
    draw = size_sampler(spec, random.Random(1), web.max_size)
    sizes = sorted(draw() for _ in range(n))
    low, high = (math.exp(spec["mu"] + spec["sigma"] * NormalDist().inv_cdf(
        0.5 + side * Z_999 / (2 * math.sqrt(n)))) for side in (-1, 1))
    assert low - 1 <= sizes[n // 2] <= high <= 1448       # int() truncates: 1 B of slack
    mean, sd = surge_moments(spec, web.max_size)
    assert 6_500 <= mean <= 7_000
    assert abs(statistics.fmean(sizes) - mean) <= Z_999 * sd / math.sqrt(n) + 1


def test_pages_offer_rfc2415s_utilisation_at_8_webs():
    """A page's object bytes at 99.9 %, and the 34 % of the link RFC 2415
    Table 2 measured with 8 webs (IW 1) inside the loss-free model's range
    (its slow-start rounds .. the link's rate) with 100,000 pages."""
    scenario = load_experiment(FILES / "http10.toml").scenarios[0]
    web = next(w for w in scenario.workloads if w.kind == "http10")
    objects = 1 + web.embedded
    pages = [sum(sizes) for sizes in differences.model_pages(web, 50_000)]
    mean, sd = surge_moments(web.object_size, web.max_size)
    assert abs(statistics.fmean(pages) - objects * mean) <= \
        Z_999 * math.sqrt(objects) * sd / math.sqrt(len(pages)) + objects
    load = differences.offered_load(web, 8, 1, scenario.topology, pages=100_000)
    assert 28e3 <= load["wire_bytes"] <= 31e3
    assert load["utilisation_pct"] <= 34 <= load["utilisation_high_pct"]


def test_heavy_tail_spread_sets_the_repetitions():
    """A run's offered bytes vary as the pages' spread over the root of its
    pages; the repetitions are the fewest whose t interval is narrow enough."""
    load = {"pages_per_s": 2.0, "wire_bytes": 30e3, "wire_sd_bytes": 90e3}
    assert differences.run_spread_pct(load, 450) == pytest.approx(10)
    assert (differences.repetitions_for(5.7, 2), differences.repetitions_for(0.6, 2)) == (34, 3)


def test_published_tables_are_complete():
    p = rfc2415.published()
    assert len(p["rfc2415"]["table1"]) == len(p["rfc2415"]["table4"]) == 12
    assert all(len(r["decrease_pct"]) == 3 for r in p["rfc2415"]["table1"])
    assert all(len(r["utilisation_pct"]) == len(r["drop_pct"]) == 4
               for r in p["rfc2415"]["table2"])
    assert len(p["rfc2415"]["table3"]) == len(p["rfc2415"]["table5"]) == 9
    assert [r["webs"] for r in p["rfc2415"]["table6"]] == [16, 32, 64]
    assert [r["ftps"] for r in p["thread"]["red"]] == [1, 4, 6, 8]


def test_quick_variant_fits_ci_budget():
    e = load_experiment(FILES / "quick.toml")
    assert e.repeat * (e.duration + 15) < 5 * 60
    assert {w.name: w.tcp.initcwnd for w in e.scenarios[0].workloads} == {
        "web-iw1": 1, "web-iw4": 4, "ftp": 1}


# ---------------------------------------------------------------- study folders with known values

def result(webs, bottleneck=(0.9, 0.01), ftp=None):
    """A result.json: {web workload: median page delay}, optional FTP (goodput, delay)."""
    workloads = {w: {"flows": 1, "goodput_bps": 2e5, "goodput_per_flow_bps": 2e5,
                     "jain_index": 1.0, "delay_kind": "page", "delay_s": {"median": d},
                     "transactions_per_s": 0, "network_power": None}
                 for w, d in webs.items()}
    if ftp:
        workloads["ftp"] = {"flows": 1, "goodput_bps": ftp[0], "goodput_per_flow_bps": ftp[0],
                            "jain_index": 1.0, "delay_kind": "bulk",
                            "delay_s": {"median": ftp[1]}, "transactions_per_s": 0,
                            "network_power": None}
    return {"scenario": "x", "seed": 1, "goodputs": {f"{w}/f": 1e5 for w in workloads},
            "flow_stats": {}, "bottleneck": {"utilisation": bottleneck[0],
                                             "drop_rate": bottleneck[1], "mark_rate": 0},
            "queue": {"samples": 0}, "workloads": workloads}


def known_delay(scenario, seed, red=False):
    """IW 1 page delay 1 s (+ 0.1 s per FTP), falling by 10 % per extra
    packet of IW up to 4; RED takes 40 % off with FTPs; a little seed noise."""
    ftps, iw = rfc2415.ftps_of(scenario), rfc2415.iw_of(scenario)
    base = (1 + 0.1 * ftps) * (0.6 if red and ftps else 1.0)
    return base * (1 - 0.1 * (min(iw, 4) - 1)) + 0.01 * (seed % 3)


def thread_folder(root, name, red=False, only=None, text=None):
    def result_of(run):
        iw = rfc2415.iw_of(run.scenario)
        drop = 0.01 + 0.002 * iw * (1 if rfc2415.ftps_of(run.scenario) < 8 else 10)
        return result({"web": known_delay(run.scenario, run.seed, red)}, (0.95, drop),
                      ftp=(1e6, 9.0) if rfc2415.ftps_of(run.scenario) else None)
    return write_study(root / name, text or (FILES / f"{name}.toml").read_text(), result_of,
                       only=only)


def test_decrease_is_per_seed_and_the_trends_are_checked_in_words(tmp_path):
    thread_folder(tmp_path, "thread_droptail")
    part = rfc2415.Part.load("thread_droptail", tmp_path / "thread_droptail")
    found = rfc2415.decrease(part, (16, 4, 1), (16, 4, 3))
    assert found.n == 5 and found.mean == pytest.approx(20, abs=0.5)
    text = " ".join(rfc2415.iw_trend_lines(part, "thread"))
    assert "falls from IW 1 in 15 of 15" in text and "NOT" not in text
    drops = " ".join(rfc2415.drop_trend_lines(part, "thread", (16, 8)))
    assert "below 1 pp (interval) in 4 of 5" in drops
    assert "1 pp or more: 16w/8f: +6.00 pp" in drops and "most overloaded" in drops


def test_red_beats_the_larger_iw_when_it_saves_more_per_seed(tmp_path):
    thread_folder(tmp_path, "thread_droptail")
    thread_folder(tmp_path, "thread_red", red=True)
    lines = rfc2415.red_vs_iw_lines(rfc2415.load_parts(tmp_path))
    assert len(lines) == 3 and all("RED helps more (interval above 0)" in line for line in lines)


def test_direction_check_fails_only_when_iw4_is_significantly_slower(tmp_path):
    noise = random.Random(4)
    jitter = {s: noise.gauss(0, 0.02) for s in range(1, 6)}
    for name, iw4, ok in (("faster", 0.7, True), ("equal", 1.0, True), ("slower", 1.3, False)):
        folder = write_study(tmp_path / name, (FILES / "quick.toml").read_text(),
                             lambda run: result({"web-iw1": 1.0,
                                                 "web-iw4": iw4 + jitter[run.seed]}))
        verdict = rfc2415.main_effect(rfc2415.Part.load(rfc2415.QUICK, folder))
        assert verdict["ok"] is ok, name


def test_direction_check_false_alarm_rate_is_at_most_its_stated_level():
    """IW 4 truly equal to IW 1: the check fails in at most 2.5 % of 5-seed
    studies (2000 simulated; 4-sigma bound for p = 0.025 is 50 + 28)."""
    from aqmlab import stats
    rng = random.Random(12)
    failures = sum(stats.estimate([rng.gauss(0, 1) for _ in range(5)]).high < 0
                   for _ in range(2000))
    assert failures <= 78


def test_convergence_picks_the_shortest_length_whose_medians_stay_within_5_percent():
    pages = [(10 + t, 2.0 if t < 60 else 1.0) for t in range(1, 600)]
    medians = rfc2415.median_by_length(pages, 10, range(30, 601, 30))
    assert medians[30] == 2.0 and medians[600] == 1.0
    stable = rfc2415.stable_length(medians)
    assert stable is not None and all(abs(medians[L] - 1.0) <= 0.05 for L in medians if L >= stable)
    assert abs(medians[stable - 30] - 1.0) > 0.05
    assert rfc2415.stable_length({}) is None


def test_convergence_section_reports_each_runs_stable_length(tmp_path):
    """Pages of 2 s for the first 100 s after the warm-up, then 1 s: the
    medians settle within 5 % of the 720 s one from some length on."""
    def pages(run):
        return [{"workload": "web", "kind": "page", "end": 10 + t, "delay": 2.0 if t < 100 else 1.0,
                 "complete": True} for t in range(1, 711)]
    write_study(tmp_path / "convergence", (FILES / "convergence.toml").read_text(),
                lambda run: result({"web": 1.0}, ftp=(1e6, 10.0)), transfers_of=pages)
    part = rfc2415.load_parts(tmp_path)[rfc2415.CONVERGENCE]
    lines = rfc2415.convergence_lines(part)
    rows = [line for line in lines if line.startswith("| p0")]
    assert len(rows) == 10
    medians = rfc2415.median_by_length([(10 + t, 2.0 if t < 100 else 1.0) for t in range(1, 711)],
                                       10, range(30, 711, 30))
    expected = rfc2415.stable_length(medians)
    assert all(row.endswith(f"| {expected} |") for row in rows)
    assert f"largest {expected} s" in lines[-1]


def test_report_puts_published_cells_beside_aqmlab_and_labels_parts(tmp_path):
    def result_of(run):
        ftps = rfc2415.ftps_of(run.scenario)
        return result({"web": known_delay(run.scenario, run.seed)}, (0.9, 0.01),
                      ftp=(1e6, 10.0) if ftps else None)
    write_study(tmp_path / "http10", (FILES / "http10.toml").read_text(), result_of)
    text = rfc2415.write_report(tmp_path, tmp_path / "rfc2415.md")
    assert "http10 (full study parts)" in text
    assert ("| 16 | 1 | 1.04 \\| 1.11 [1.1, 1.12] (n = 5) | 17.3 \\| 9.89 [9.8, 9.99] (n = 5)"
            in text)
    assert "| 8 | 1 | 4.7 \\| 4.5 [4.5, 4.5] (n = 5) |" in text       # 45 MB / 10 s
    assert "Table 4 (HTTP/1.1): not run" in text
    assert (tmp_path / "rfc2415" / "http10-web-power.png").exists()


def settling_pages(run):
    """Pages of 2 s for the first 100 s after the 10 s warm-up, then 1 s: the
    median settles once the 1 s pages are the majority (210 s)."""
    return [{"workload": "web", "kind": "page", "end": 10 + t, "delay": 2.0 if t < 100 else 1.0,
             "complete": True} for t in range(1, 711)]


def fake_aqmlab_run(root, commands):
    """`aqmlab run FILE --out DIR ...` replaced by writing known study folders."""
    def call(command):
        commands.append(command + [load_experiment(command[4]).duration])  # before it is rewritten
        name = Path(command[6]).name
        if name == rfc2415.CONVERGENCE:
            write_study(root / name, (FILES / "convergence.toml").read_text(),
                        lambda run: result({"web": 1.0}, ftp=(1e6, 10.0)),
                        transfers_of=settling_pages)
        else:
            thread_folder(root, name, red=name == "thread_red", only=set(only_of(command)),
                          text=Path(command[4]).read_text())
        return 0
    return call


def test_one_command_chooses_the_run_length_then_runs_each_part_with_options_passed_through(
        tmp_path, monkeypatch, capsys):
    """main(): the convergence runs first, its run length goes into each
    part's copy in OUT, then the runs in priority order (the thread's
    RED-vs-IW points, the rest of the tables' cells with every repetition,
    IW 10 with --grid-repeat), each stage into OUT/<part> with --resume,
    --only and the options the command does not know (--executor slurm);
    wall times and the report follow."""
    root, commands = tmp_path / "s", []
    monkeypatch.setattr(common, "call_run", fake_aqmlab_run(root, commands))
    assert rfc2415.main(["--out", str(root), "--parts", "thread_droptail,thread_red",
                         "--jobs", "2", "--executor", "slurm"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("[convergence] run length first: convergence: 10 runs of 720 s")
    order = ["thread_droptail", "thread_red"] * 3
    assert [c[4] for c in commands] == [str(FILES / "convergence.toml")] + [
        str(root / f"{n}.toml") for n in order]
    assert [c[6] for c in commands] == [str(root / n) for n in ["convergence"] + order]
    assert commands[0][7:-1] == ["--resume", "--executor", "slurm", "--jobs", "2"]
    assert all(c[2:4] == ["aqmlab", "run"] and c[7:10] == ["--resume", "--jobs", "2"]
               and c[12:-1] == ["--executor", "slurm"] for c in commands[1:])
    droptail = {r.run_id: r for r in study.expand(load_experiment(FILES / "thread_droptail.toml"))}
    first = [droptail[i] for i in only_of(commands[1])]
    assert {(rfc2415.ftps_of(r.scenario), rfc2415.iw_of(r.scenario)) for r in first} == {
        (f, iw) for f in (4, 6, 8) for iw in (1, 3)} and len(first) == 30
    extension = [droptail[i] for i in only_of(commands[5])]
    assert {rfc2415.iw_of(r.scenario) for r in extension} == {10}
    assert {r.repetition for r in extension} == {0, 1}
    chosen = json.loads((root / rfc2415.RUN_LENGTH_FILE).read_text())
    assert chosen["length"] == 210 and chosen["duration"] == 220 and chosen["runs"] == 10
    assert [c[-1] for c in commands] == [720] + [220] * 6     # each file's duration when run
    assert "thread_droptail: 125 runs of 220 s, estimated " in "\n".join(printed)
    wall = json.loads((root / common.WALL_TIMES).read_text())
    assert wall["thread_droptail"]["runs"] == 100 + 2 * 5 and wall["convergence"]["runs"] == 10
    report = (root / "report.md").read_text()
    assert "thread_droptail, thread_red (full study parts)" in report
    assert report.count("RED helps more (interval above 0)") == 3
    assert "| 8 | drop-tail | 2.4-2.8 |" in report
    assert "| 4 | 19 \\| 9.92 [9.84, 9.99] (n = 5) | 28 \\| 19.8 [19.7, 20] (n = 5) |" in report
    assert "each run 220 s (the convergence's choice)" in report
    assert ("| 2 | thread_droptail | thread's conclusion: RED vs a larger IW (4/6/8 FTPs) | "
            "30 (30)") in report


def test_paper_length_skips_the_convergence_and_runs_the_repository_files(tmp_path, monkeypatch):
    root, commands = tmp_path / "s", []
    monkeypatch.setattr(common, "call_run", fake_aqmlab_run(root, commands))
    assert rfc2415.main(["--out", str(root), "--parts", "thread_red", "--paper-length"]) == 0
    assert [c[4] for c in commands] == [str(FILES / "thread_red.toml")] * 3
    assert not (root / rfc2415.RUN_LENGTH_FILE).exists()


def test_an_unfinished_convergence_stops_the_study_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(common, "call_run", lambda command: 1)
    assert rfc2415.main(["--out", str(tmp_path / "s"), "--parts", "thread_red"]) == 2
    assert capsys.readouterr().err.strip() == (
        "aqmlab study rfc2415: error: run-length convergence incomplete (exit 1); rerun the "
        "same command to resume it, or add --paper-length for the papers' 360 s")
    assert not (tmp_path / "s" / "thread_red.toml").exists()


def test_quick_command_runs_the_ci_file_and_exits_by_the_direction_check(tmp_path, monkeypatch,
                                                                         capsys):
    for name, iw4, code in (("faster", 0.7, 0), ("slower", 1.3, 1)):
        root, commands = tmp_path / name, []

        def call(command, iw4=iw4, root=root, commands=commands):
            commands.append(command)
            write_study(root / rfc2415.QUICK, (FILES / "quick.toml").read_text(),
                        lambda run: result({"web-iw1": 1.0, "web-iw4": iw4 + 0.01 * run.seed}))
            return 0
        monkeypatch.setattr(common, "call_run", call)
        assert rfc2415.main(["--out", str(root), "--quick", "--no-progress"]) == code, name
        assert [c[4:] for c in commands] == [[str(FILES / "quick.toml"), "--out",
                                              str(root / "quick"), "--resume", "--no-progress",
                                              "--jobs", "1"]]
        out = capsys.readouterr().out
        assert ("passed: IW 1 - IW 4" if code == 0 else "FAILED: IW 1 - IW 4") in out
        assert "quick CI variant only" in (root / "report.md").read_text()
        assert not (root / "report" / "quick-page-delay.png").exists()     # no pages recorded


def test_a_reproduction_can_bring_its_own_wall_time_estimate(tmp_path, monkeypatch, capsys):
    """Reproduction.seconds_of replaces study.estimated_seconds in the plan
    (RFC 2884's until_complete runs end before their cap)."""
    import dataclasses
    reproduction = dataclasses.replace(rfc2415.REPRODUCTION,
                                       seconds_of=lambda experiment, runs: 3600 * len(runs))
    root, commands = tmp_path / "s", []
    monkeypatch.setattr(common, "call_run", fake_aqmlab_run(root, commands))
    assert common.run_study(reproduction, ["--out", str(root), "--parts", "thread_red",
                                           "--paper-length"]) == 0
    assert "\nthread_red: 100 runs of 360 s, estimated 100.0 h one run at a time" in \
        capsys.readouterr().out


def test_plan_gives_every_table_cell_five_repetitions_and_runs_the_jobs_rule_allows():
    sources = {p: FILES / f"{p}.toml" for p in rfc2415.PARTS}
    stages = rfc2415.part_stages(sources, grid_repeat=2, length=130, cores=2)
    every = [(s.part, r) for s in stages for r in s.run_ids]
    assert len(every) == len(set(every))
    runs = {p: {r.run_id: r for r in study.expand(load_experiment(path))}
            for p, path in sources.items()}
    planned = {}
    for stage in stages:
        for run_id in stage.run_ids:
            run = runs[stage.part][run_id]
            key = (stage.part, run.point)
            planned[key] = planned.get(key, 0) + 1
            hosts = study.run_hosts(run.scenario)
            assert stage.max_jobs == (4 if hosts <= 24 else 2 if hosts <= 70 else 1), hosts
    for (part, point), n in planned.items():
        scenario = load_experiment(sources[part]).scenarios[point]
        assert n == (2 if rfc2415.iw_of(scenario) == 10 else 5), (part, scenario.name)
    assert len(planned) == sum(len(load_experiment(p).scenarios) for p in sources.values())


def test_stage_jobs_cap_reaches_aqmlab_run(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(common, "call_run", lambda c: commands.append(c) or 0)
    stages = [common.Stage("halves", "big", ("p06-r0",), max_jobs=1),
              common.Stage("halves", "small", ("p00-r0", "p01-r0"))]
    source = FILES / "halves.toml"
    assert common.run_stages(tmp_path, stages, {"halves": source}, 4, ["--no-progress"]) == []
    assert [c[7:] for c in commands] == [
        ["--resume", "--jobs", "1", "--only", "p06-r0", "--no-progress"],
        ["--resume", "--jobs", "4", "--only", "p00-r0,p01-r0", "--no-progress"]]


def fake_part_runs(monkeypatch, tmp_path, count, result):
    """run_part's `aqmlab run` replaced by writing `count` complete runs of the
    'halves' part, each with this result.json."""
    def call(command):
        for i in range(count):
            folder = tmp_path / "halves" / f"p0{i}-r0"
            folder.mkdir(parents=True)
            (folder / "result.json").write_text(json.dumps(result))
            (folder / "complete").write_text("")
        return 0
    monkeypatch.setattr(common, "call_run", call)


def test_run_part_keeps_slot_seconds_and_measured_traffic(tmp_path, monkeypatch):
    """4 runs of 100 s traffic side by side with --jobs 4 in 110 s of wall:
    10 s per run beyond its traffic (not 110 - 4 x 100 < 0)."""
    clock = iter([0.0, 110.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))

    fake_part_runs(monkeypatch, tmp_path, 4, {"epoch": 1000.0, "window": [1010.0, 1100.0]})
    assert common.run_part(tmp_path, "halves", FILES / "halves.toml", ["--jobs", "4"]) == 0
    wall = common.read_wall(tmp_path)
    assert wall["halves"] == {"seconds": 110.0, "runs": 4, "slot_seconds": 440.0,
                              "traffic_seconds": 400.0, "duration": 360}
    assert common.overhead_estimate(wall) == (10.0, 4)
    # an entry measured before slot-seconds were kept: one run at a time, the file's duration
    old = {"quick": {"seconds": 200.0, "runs": 5, "duration": 30}}
    assert common.overhead_estimate(old) == (10.0, 5)


def test_run_part_counts_each_runs_own_wall_seconds_not_idle_slots(tmp_path, monkeypatch):
    """6 runs of 100 s traffic with --jobs 4 take two rounds (220 s of wall),
    the second with 2 slots idle: each run's overhead is its own 10 s (its
    phase_seconds), not (4 x 220 - 600) / 6 = 47 s."""
    clock = iter([0.0, 220.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))

    fake_part_runs(monkeypatch, tmp_path, 6, {
        "epoch": 1000.0, "window": [1010.0, 1100.0],
        "phase_seconds": {"lab build": 6.0, "traffic": 100.0, "teardown": 4.0}})
    assert common.run_part(tmp_path, "halves", FILES / "halves.toml", ["--jobs", "4"]) == 0
    wall = common.read_wall(tmp_path)
    assert wall["halves"]["slot_seconds"] == 660.0 and wall["halves"]["traffic_seconds"] == 600.0
    assert common.overhead_estimate(wall) == (10.0, 6)


def test_an_interrupted_part_stops_the_study_after_keeping_its_wall_time(tmp_path, monkeypatch):
    """A stage's `aqmlab run` that was interrupted (exit 130: a signal to it, or to its
    process group while the study ignores SIGINT) ends the study instead of starting the
    next stage; the runs it completed still count."""
    clock = iter([0.0, 50.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    fake_part_runs(monkeypatch, tmp_path, 1, {"epoch": 1000.0, "window": [1010.0, 1040.0]})
    write_runs = common.call_run

    def interrupted(command):
        write_runs(command)             # one run completed before the signal
        return common.INTERRUPTED_EXIT
    monkeypatch.setattr(common, "call_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        common.run_part(tmp_path, "halves", FILES / "halves.toml", ["--jobs", "2"])
    assert common.read_wall(tmp_path)["halves"]["runs"] == 1


def test_a_part_whose_runs_all_failed_adds_no_wall_time(tmp_path, monkeypatch):
    """Seconds that completed no run would inflate the per-run overhead."""
    clock = iter([0.0, 35.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    fake_part_runs(monkeypatch, tmp_path, 0, {})
    assert common.run_part(tmp_path, "halves", FILES / "halves.toml", ["--jobs", "2"]) == 0
    assert common.read_wall(tmp_path) == {}


def test_a_study_without_the_compiled_program_refuses_before_any_folder(tmp_path, capsys):
    missing = tmp_path / "nothing-built"
    code = rfc2415.main(["--out", str(tmp_path / "s"), "--quick", "--build-dir", str(missing)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.endswith(f"{missing}/red_ecn.p4info.txtpb is missing: build it with "
                        f"`python -m redctl.compiler p4src/red_ecn.p4 -o {missing}`")
    assert not (tmp_path / "s").exists()
    assert common.option_value(["--jobs", "2", f"--build-dir={missing}"], "--build-dir") == \
        str(missing)


def test_makespan_is_the_runners_pool_in_order():
    assert common.makespan([10, 10, 10, 10, 10], 4) == 20
    assert common.makespan([30, 10, 10, 10], 2) == 30
    assert common.makespan([], 4) == 0


def test_bad_grid_repeat_is_one_line_and_exit_2(tmp_path, capsys):
    assert rfc2415.main(["--out", str(tmp_path / "s"), "--grid-repeat", "-1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "aqmlab study rfc2415: error: --jobs must be >= 1 and --grid-repeat >= 0 (got 1, -1)")
    assert not (tmp_path / "s").exists()


def test_unknown_part_is_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aqmlab", "study", "rfc2415", "--out",
                          str(tmp_path / "s"), "--parts", "nope"], capture_output=True, text=True)
    assert out.returncode == 2 and not (tmp_path / "s").exists()
    assert out.stderr.strip() == ("aqmlab study rfc2415: error: --parts: unknown part 'nope' "
                                  f"(parts: {', '.join(rfc2415.PARTS)})")


# ---------------------------------------------------------------- why the numbers differ

def test_loss_free_round_trips_of_objects_and_pages():
    assert [differences.slow_start_rounds(n, 1, 11) for n in (1, 2, 3, 4, 7, 8)] == [
        1, 2, 2, 3, 3, 4]
    assert differences.slow_start_rounds(30, 1, 4) == 9      # 1, 2, 4, then 4 a round trip
    assert differences.slow_start_rounds(4, 3, 11) == 2
    # the primary's 1 segment: 2 round trips; the largest embedded object's 2: 3 at IW 1,
    # 2 at IW 2; 5 packets of 8 ms
    sizes = [1448, 1448, 2896, 100]
    assert differences.loss_free_page_s(sizes, 1, 0.1, 0.008) == pytest.approx(0.54)
    assert differences.loss_free_page_s(sizes, 2, 0.1, 0.008) == pytest.approx(0.44)


def object_row(page, delay, end=20.0, size=1448, kind="object"):
    """A transfers.csv row as run_csv_rows returns it (strings)."""
    return {"workload": "web", "flow": "web.0.0", "kind": kind, "page": str(page),
            "size": str(size), "delay": str(delay), "end": str(end), "complete": "True"}


def web_pages(pages, warmup_page=False):
    """Rows of pages of four one-segment objects; `pages` lists (page delay,
    the delay of its last object), the others taking 0.2 s (two 0.1 s round trips)."""
    rows = []
    for page, (delay, last) in enumerate(pages):
        end = 5.0 if warmup_page and page == 0 else 20.0 + page
        rows += [object_row(page, 0.2, end) for _ in range(3)] + [object_row(page, last, end)]
        rows.append(object_row(page, delay, end, size=4 * 1448, kind="page"))
    return rows


def test_each_page_is_read_for_the_losses_its_objects_met():
    assert [differences.penalty(x) for x in (0.1, 0.6, 1.03, 2.0)] == [
        "none", "data", "synack", "several"]
    rows = web_pages([(0.4, 0.2), (0.4, 0.2), (1.4, 1.2), (1.0, 0.8)], warmup_page=True)
    pages = differences.run_pages(rows, iw=1, warmup=10)
    assert pages == [(0.4, set()), (1.4, {"synack"}), (1.0, {"data"})]   # the warm-up's left out
    assert differences.page_losses(pages) == pytest.approx(
        {"clean_pct": 100 / 3, "synack_pct": 100 / 3, "median_s": 1.0, "clean_median_s": 0.4})


def test_iw_gain_of_loss_free_pages_beside_all_pages(tmp_path):
    """IW 1: 2 loss-free pages of 1.0 s, 3 with a SYN-ACK timeout of 2.0 s; IW 3:
    0.75 s and 1.75 s: all pages 12.5 % faster, loss-free ones 25 %."""
    def transfers_of(run):
        clean, lossy = (1.0, 2.0) if rfc2415.iw_of(run.scenario) == 1 else (0.75, 1.75)
        return web_pages([(clean, 0.2)] * 2 + [(lossy, 1.2)] * 3)
    e = load_experiment(FILES / "thread_droptail.toml")
    key = rfc2415.Part("x", None).key
    only = {r.run_id for r in study.expand(e) if key(r.scenario) in {(16, 4, 1), (16, 4, 3)}}
    write_study(tmp_path / "thread_droptail", (FILES / "thread_droptail.toml").read_text(),
                lambda run: result({"web": 1.0}), transfers_of=transfers_of, only=only)
    part = rfc2415.Part.load("thread_droptail", tmp_path / "thread_droptail")
    lines = differences.page_loss_lines(part, rfc2415.published()["thread"]["droptail"])
    assert "| 4 | 1 | 40 | 60 | 2 \\| 1 | — |" in lines
    assert ("| 4 | 3 | 40 | 60 | 1.75 \\| 0.75 | 12.5 [12.5, 12.5] (n = 5) \\| "
            "25 [25, 25] (n = 5) \\| 28 |") in lines


def test_drop_rates_against_the_square_root_law_and_the_threads_own_floor():
    # the thread's 1 MB in 26.3 s is 26.3 packets/s; a full 22-packet queue makes the
    # round trip 100.4 + 176 ms: a window of 7.26 packets, 1.5 / 7.26^2 = 2.85 % (b = 1)
    assert differences.published_floor_pct(26.3, 1_000_000, 22, 1.5e6, 0.1004) == \
        pytest.approx(2.85, abs=0.01)
    assert differences.published_floor_pct(26.3, 1_000_000, 22, 1.5e6, 0.1004, b=2) == \
        pytest.approx(1.42, abs=0.01)
    assert (differences.sqrt_law_pct(5, 1), differences.sqrt_law_pct(5, 2)) == (6.0, 3.0)
    flows = {"ftp/ftp.0.0": {"retransmits": 5, "data_segments": 100},
             "web-iw1/web-iw1.0.0": {"retransmits": 10, "data_segments": 50},
             "web/web.1.0": {"retransmits": 10, "data_segments": 50}}
    assert differences.retransmit_shares({"flow_stats": flows}) == pytest.approx((5, 20, 80))
    # RFC 2415 Table 2: 34 % of 1.5 Mb/s over 8 webs, each a page per 0.56 + 3 s
    assert differences.implied_bytes_per_page(34, 8, 0.56, 3, 1.5e6) == pytest.approx(28368.75)


# ---------------------------------------------------------------- in the lab (root)

def test_quick_variant_runs_and_checks_the_direction_of_the_iw_effect(tmp_path):
    """`aqmlab study rfc2415 --quick` (~4 min): 5 runs, 8 IW 1 + 8 IW 4 web
    clients and 1 FTP; exit 0 means IW 4's median page delay is not above
    IW 1's at 95 % confidence."""
    stdout, report = run_quick_study("rfc2415", tmp_path / "s")
    assert "passed: IW 1 - IW 4" in stdout
    assert "quick CI variant only" in report and "Direction check: passed" in report
    assert (tmp_path / "s" / "report" / "quick-page-delay.png").exists()
    assert json.loads((tmp_path / "s" / "wall_times.json").read_text())["quick"]["runs"] == 5


def test_run_part_counts_runs_done_again_and_not_older_ones(tmp_path, monkeypatch):
    """--redo-unfaithful runs a complete run again: it counts as this call's
    run; a complete run the call did not touch does not."""
    clock = iter([0.0, 220.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    for run_id in ("p00-r0", "p05-r0"):       # complete before the call
        folder = tmp_path / "halves" / run_id
        folder.mkdir(parents=True)
        (folder / "complete").write_text("")
        os.utime(folder / "complete", (1.0, 1.0))

    def call(command):                        # p00-r0 again (its folder made anew), p01-r0 new
        shutil.rmtree(tmp_path / "halves" / "p00-r0")
        for run_id in ("p00-r0", "p01-r0"):
            folder = tmp_path / "halves" / run_id
            folder.mkdir()
            (folder / "result.json").write_text(json.dumps({
                "epoch": 1000.0, "window": [1010.0, 1100.0], "phase_seconds": {"traffic": 100.0}}))
            (folder / "complete").write_text("")
        return 0
    monkeypatch.setattr(common, "call_run", call)
    assert common.run_part(tmp_path, "halves", FILES / "halves.toml", ["--jobs", "2"]) == 0
    assert common.read_wall(tmp_path)["halves"]["runs"] == 2
