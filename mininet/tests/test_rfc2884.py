"""The RFC 2884 reproduction without a lab: its experiment files (the RFC's
grid and TCP), the RED-region measure and calibration choice, the calibrated
files, goodput of fixed-size transfers (partial ones flagged), ECN's advantage
with intervals, the CI direction check and the report, on study folders
written here with known values. The lab tests are at the end (root)."""

import csv
import itertools
import json
import random
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from aqmlab import study
from aqmlab.config import load_experiment
from aqmlab.reproductions import common, rfc2884
from aqmlab.tuning import TcpTuning, read_sysctl
from labhelpers import REPO, direct_link, run_quick_study

FILES = REPO / "mininet" / "experiments" / "rfc2884"
MAXP = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5]


# ---------------------------------------------------------------- the experiment files

@pytest.mark.parametrize("name", rfc2884.PARTS)
def test_every_part_sweeps_the_rfc_maxp_with_five_or_more_repetitions(name):
    e = load_experiment(FILES / f"{name}.toml")
    assert e.repeat >= 5
    assert sorted({s.aqm.maxp for s in e.scenarios}) == MAXP
    assert all(s.topology.kind == "rfc2884" and s.aqm.mode == "red" and s.aqm.ecn
               for s in e.scenarios)
    assert all(s.topology.bottleneck.rate_bps == 1_500_000 for s in e.scenarios)


@pytest.mark.parametrize("name", ["bulk", "crr"])
def test_rfc_parts_use_the_rfcs_tcp_sack_off_and_on_at_three_congestion_levels(name):
    e = load_experiment(FILES / f"{name}.toml")
    tcp = {(rfc2884.variant(s), w.tcp) for s in e.scenarios for w in s.workloads}
    assert {t.cc for _, t in tcp} == {"reno"} and {t.initcwnd for _, t in tcp} == {2}
    assert {(v, t.sack) for v, t in tcp} == {("reno", False), ("reno-sack", True)}
    assert {(t.recovery, t.early_retrans) for _, t in tcp} == {(0, 0)}
    assert {rfc2884.background_flows(s) for s in e.scenarios} == {2, 5, 10}
    ecn = {w.name: w.tcp.ecn for s in e.scenarios for w in s.workloads}
    assert sorted(ecn.values()) == [False, False, True]   # background and one client non-ECN


def test_transactional_grid_has_5_10_20_kb_responses_for_3_minutes():
    e = load_experiment(FILES / "crr.toml")
    assert {rfc2884.response_size(s) for s in e.scenarios} == {5000, 10000, 20000}
    assert e.duration - e.warmup == 180


def test_bulk_transfers_are_20_mb_started_20_s_after_the_background():
    e = load_experiment(FILES / "bulk.toml")
    measured = [w for w in e.scenarios[0].workloads if w.name != "background"]
    assert [(w.size, w.start) for w in measured] == [(20_000_000, 20), (20_000_000, 20)]


def test_modern_parts_and_ablation_use_todays_defaults_and_switch_rack_tlp():
    for name in ("bulk_modern", "crr_modern"):
        tcp = {w.tcp for s in load_experiment(FILES / f"{name}.toml").scenarios
               for w in s.workloads}
        assert {(t.cc, t.sack, t.initcwnd, t.recovery, t.early_retrans) for t in tcp} == \
            {("cubic", True, 10, 1, 3)}
    ablation = load_experiment(FILES / "crr_ablation.toml")
    assert {(rfc2884.variant(s), s.workloads[0].tcp.recovery, s.workloads[0].tcp.early_retrans)
            for s in ablation.scenarios} == {("rack-tlp", 1, 3), ("rack-only", 1, 0),
                                              ("tlp-only", 0, 3), ("neither", 0, 0)}


def test_planned_time_of_bulk_runs_ends_with_their_transfers():
    e = load_experiment(FILES / "bulk.toml")
    runs = [r for r in study.expand(e) if r.repetition == 0]
    low = next(r for r in runs if rfc2884.background_flows(r.scenario) == 2)
    # 20 MB at a quarter of 1.5 Mb/s (2 background + 2 measured flows), from t = 20 s
    assert rfc2884.traffic_seconds(e, low.scenario) == pytest.approx(20 + 8 * 20e6 * 4 / 1.5e6)
    assert rfc2884.planned_seconds(e, [low]) == pytest.approx(
        study.estimated_seconds(e, [low]) - 1500 + 20 + 8 * 20e6 * 4 / 1.5e6)
    high = next(r for r in runs if rfc2884.background_flows(r.scenario) == 10)
    assert rfc2884.traffic_seconds(e, high.scenario) == pytest.approx(20 + 8 * 20e6 * 12 / 1.5e6)


def test_quick_variant_fits_ci_budget():
    e = load_experiment(FILES / "quick.toml")
    runs = study.expand(e)
    assert len(runs) >= 5 and study.estimated_seconds(e, runs) < 5 * 60


@pytest.mark.parametrize("tcp, message", [
    ({"recovery": 8}, "tcp.recovery: must be within 0..7 (net.ipv4.tcp_recovery), got 8"),
    ({"early_retrans": 5},
     "tcp.early_retrans: must be within 0..4 (net.ipv4.tcp_early_retrans), got 5"),
    ({"recovery": -1}, "tcp.recovery: must be >= 0, got -1")])
def test_bad_recovery_settings_name_the_field(tcp, message):
    from aqmlab.config import ConfigError, parse_experiment
    with pytest.raises(ConfigError) as error:
        parse_experiment({"name": "x", "tcp": tcp, "workload": [{"name": "w", "kind": "crr"}]})
    assert str(error.value) == message


def test_recovery_and_tlp_are_namespace_sysctls():
    values = TcpTuning(recovery=0, early_retrans=0).sysctls()
    assert values["net.ipv4.tcp_recovery"] == 0 and values["net.ipv4.tcp_early_retrans"] == 0
    defaults = TcpTuning().sysctls()
    assert defaults["net.ipv4.tcp_recovery"] == 1 and defaults["net.ipv4.tcp_early_retrans"] == 3


# ---------------------------------------------------------------- RED region and calibration

def write_study(folder, toml_text, result_of, queue_of=None, transfers_of=None, only=None):
    """A study folder of complete runs (`only`: those run ids): result_of(run)
    -> result.json, and optional queue.csv / transfers.csv rows per run."""
    path = folder.parent / f"{folder.name}.toml"
    path.write_text(toml_text)
    e = load_experiment(path)
    study.prepare_study_folder(folder, toml_text, quick=False, owner=True)
    for run in (r for r in study.expand(e) if only is None or r.run_id in only):
        run_folder = study.start_run_folder(folder, run, e, toml_text, quick=False)
        (run_folder / "result.json").write_text(json.dumps(result_of(run)))
        for name, rows_of in (("queue.csv", queue_of), ("transfers.csv", transfers_of)):
            if rows_of:
                rows = rows_of(run)
                with (run_folder / name).open("w", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                    writer.writeheader()
                    writer.writerows(rows)
        study.mark_complete(run_folder)
    return folder


def result(**workloads):
    """A result.json with the workloads' transactions/s (what load_study reads)."""
    return {"scenario": "x", "seed": 1, "goodputs": {f"{w}/f": 1e5 for w in workloads},
            "flow_stats": {}, "bottleneck": {"utilisation": 0.9, "drop_rate": 0.1,
                                             "mark_rate": 0.1}, "queue": {"samples": 0},
            "workloads": {w: {"flows": 1, "goodput_bps": 1e5, "goodput_per_flow_bps": 1e5,
                              "jain_index": 1.0, "delay_kind": None, "delay_s": {},
                              "transactions_per_s": tps, "network_power": None}
                          for w, tps in workloads.items()}}


def test_calibration_picks_per_level_the_candidate_longest_in_the_region(tmp_path):
    text = (FILES / "calibration.toml").read_text()

    def queue(run):
        # level 2 sits at avg 12 (in the region of 5/15 and 10/30); level 10 at
        # avg 25 (only 10/30 holds it); level 5 at 40 (only 15/45)
        avg = {2: 12, 5: 40, 10: 25}[rfc2884.background_flows(run.scenario)]
        return [{"t": t, "avg": avg} for t in range(20, 81)]
    folder = write_study(tmp_path / "cal", text, lambda run: result(), queue)
    choice = rfc2884.choose_red(rfc2884.load_study(folder))
    assert {level: (c["minth"], c["maxth"], c["region"]) for level, c in choice.items()} == {
        2: (5, 15, 1.0), 5: (15, 45, 1.0), 10: (10, 30, 1.0)}     # ties: the smaller maxth
    assert all(c["wq_log"] == 9 and c["n"] == 2 for c in choice.values())  # ... the smaller wq
    assert len(choice[2]["candidates"]) == 6
    # A committed study keeps each run's fractions, not its queue telemetry.
    for queue_csv in folder.glob("*/queue.csv"):
        queue_csv.unlink()
    assert rfc2884.choose_red(rfc2884.load_study(folder)) == choice


def test_a_runs_region_comes_from_its_result_before_its_queue_telemetry(tmp_path):
    """Runs since the lab kept the fractions in result.json need no queue.csv;
    older runs whose queue.csv went first are flagged with what result.json says."""
    text = (FILES / "calibration.toml").read_text()
    kept = {"below": 0.25, "region": 0.75, "above": 0.0}

    def result_of(run):
        queue = {"samples": 10, "avg_mean": 40.0}
        if run.run_id.endswith("r0"):
            queue["red_region"] = kept
        return {**result(), "queue": queue}
    folder = write_study(tmp_path / "cal", text, result_of)
    loaded = rfc2884.load_study(folder)
    runs = {r.run_id: r for r in loaded.runs}
    first = next(r for r in runs if r.endswith("r0"))
    assert rfc2884.run_region(loaded, runs[first]) == kept
    other = next(r for r in runs if r.endswith("r1"))
    assert rfc2884.run_region(loaded, runs[other]) is None
    aqm = runs[other].scenario.aqm
    assert rfc2884.untimed_region(loaded, other) == (
        "its queue.csv was not kept, so no time fractions; its packet-sampled mean RED "
        f"average, 40.0 packets, lies outside [{aqm.minth}, {aqm.maxth}]")


def test_materialise_writes_each_levels_values_into_the_zipped_sweep():
    choice = {2: {"minth": 5, "maxth": 15, "wq_log": 9}, 5: {"minth": 10, "maxth": 30,
                                                            "wq_log": 8},
              10: {"minth": 15, "maxth": 45, "wq_log": 7}}
    text = rfc2884.materialise((FILES / "bulk.toml").read_text(), choice)
    sweep = tomllib.loads(text)["sweep"]
    assert sweep["aqm.minth"] == [5, 10, 15] and sweep["aqm.maxth"] == [15, 30, 45]
    assert sweep["aqm.wq_log"] == [9, 8, 7]
    with pytest.raises(common.StudyError, match="no congestion level 10"):
        rfc2884.materialise((FILES / "bulk.toml").read_text(), {2: choice[2], 5: choice[5]})


# ---------------------------------------------------------------- values, advantage, check

def test_goodput_of_a_fixed_size_transfer_is_size_over_completion_time(tmp_path):
    rows = [{"workload": "ecn-on", "kind": "bulk", "size": 20_000_000, "bytes": 20_000_000,
             "delay": 400.0, "complete": True},
            {"workload": "ecn-off", "kind": "bulk", "size": 20_000_000, "bytes": 5_000_000,
             "delay": 1480.0, "complete": False},
            {"workload": "background", "kind": "bulk", "size": -1, "bytes": 9, "delay": 1.0,
             "complete": True}]
    with (tmp_path / "transfers.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = rfc2884.bulk_transfer(tmp_path, "ecn-on")
    assert done == rfc2884.Transfer(8 * 20_000_000 / 400.0, True, 20_000_000)
    partial = rfc2884.bulk_transfer(tmp_path, "ecn-off")
    assert not partial.complete and partial.bytes == 5_000_000
    assert partial.goodput_bps == pytest.approx(8 * 5_000_000 / 1480.0)   # never 0
    assert rfc2884.bulk_transfer(tmp_path, "background") is None


def quick_study(folder, ecn_tps, plain_tps):
    text = (FILES / "quick.toml").read_text()
    return write_study(folder, text, lambda run: result(**{
        "crr-ecn": ecn_tps(run.seed), "crr-noecn": plain_tps(run.seed)}))


def test_advantage_is_per_seed_relative_with_an_interval(tmp_path):
    folder = quick_study(tmp_path / "q", lambda s: 3.0 + s, lambda s: 2.0 + s)
    part = rfc2884.Part.load(rfc2884.QUICK, folder)
    per_seed, estimate = rfc2884.advantage(part, part.keys()[0])
    assert per_seed == {s: pytest.approx(100 / (2.0 + s)) for s in range(1, 7)}
    assert estimate.n == 6 and estimate.low < estimate.mean < estimate.high


def test_direction_check_fails_only_when_ecn_is_significantly_below(tmp_path):
    noise = random.Random(4)
    jitter = {s: noise.gauss(0, 0.05) for s in range(1, 7)}
    cases = {"ahead": (lambda s: 2.5 + jitter[s], True),
             "equal": (lambda s: 2.0 + jitter[s], True),
             "below": (lambda s: 1.5 + jitter[s], False)}
    for name, (ecn, ok) in cases.items():
        folder = quick_study(tmp_path / name, ecn, lambda s: 2.0)
        verdict = rfc2884.main_effect(rfc2884.Part.load(rfc2884.QUICK, folder))
        assert verdict["ok"] is ok, name


def test_direction_check_false_alarm_rate_is_at_most_its_stated_level():
    """With ECN truly equal to non-ECN the check fails in at most 2.5 % of
    studies (one-sided 97.5 %): 2000 simulated 6-seed studies; the count's
    4-sigma bound for p = 0.025 is 50 + 28."""
    from aqmlab import stats
    rng = random.Random(11)
    failures = sum(stats.estimate([rng.gauss(0, 1) for _ in range(6)]).high < 0
                   for _ in range(2000))
    assert failures <= 78


def test_trend_verdict_needs_sign_and_ordering():
    from aqmlab.stats import Estimate
    up = Estimate(30, 5, 5, 20, 40)
    low, high = Estimate(10, 5, 5, 4, 16), Estimate(50, 5, 5, 44, 56)
    assert rfc2884.trend_verdict(low, high, up, expect_rise=True) == "holds"
    assert rfc2884.trend_verdict(low, high, up, expect_rise=False).startswith("sign holds")
    behind = Estimate(-10, 5, 5, -16, -4)
    assert rfc2884.trend_verdict(behind, high, up, True).startswith("does not hold")
    assert rfc2884.trend_verdict(Estimate(0, 0, 0, 0, 0), high, up, True) == "no data"
    loose_first = Estimate(10, 5, 5, -2, 22)
    assert rfc2884.trend_verdict(loose_first, high, up, True) == \
        "holds in the means (interval includes 0: first point)"


def gain(scenario, seed):
    """A known ECN advantage: grows with congestion and maxp, shrinks with the
    response size, a little noise per seed (so intervals exist)."""
    size = rfc2884.response_size(scenario) or 5000
    return (rfc2884.background_flows(scenario) / 10 + scenario.aqm.maxp) * 5000 / size + \
        0.01 * (seed % 3)


def test_statements_on_a_transactional_grid_with_known_gains(tmp_path):
    root = tmp_path / "study"
    root.mkdir()
    write_study(root / "crr", (FILES / "crr.toml").read_text(), lambda run: result(**{
        "crr-ecn": 1 + gain(run.scenario, run.seed), "crr-noecn": 1.0}))
    parts = rfc2884.load_parts(root)
    found = {s.text: rfc2884.evaluate(s, parts) for s in rfc2884.STATEMENTS if s.part == "crr"}
    assert {f["verdict"] for f in found.values()} == {"holds"}
    moderate_to_high = found["Transactions, 5 KB, Reno, maxp 0.1: moderate -> high congestion"]
    assert moderate_to_high["first"].mean == pytest.approx(100 * (0.6 + 0.01), abs=1)
    assert moderate_to_high["second"].mean == pytest.approx(100 * (1.1 + 0.01), abs=1)
    assert moderate_to_high["first"].n == 5
    bulk = [s for s in rfc2884.STATEMENTS if s.part == "bulk"]
    assert all(rfc2884.evaluate(s, parts) is None for s in bulk)      # not run: said so
    text = rfc2884.write_report(root, tmp_path / "r.md")
    assert text.count("| holds |") == len(found) and "crr, reno, 5 KB" in text
    assert "partial" not in text                  # n = 5 at every statement's points
    # high congestion, maxp 0.5: ECN 1 + 1.5 + 0.01 x (seed % 3) over seeds 1-5 (mean 2.51)
    assert "maxp 0.5: ECN 2.51 [" in text and "non-ECN 1 [1, 1] (n = 5)." in text
    assert (tmp_path / "r" / "crr-reno-5KB.png").exists()


def test_statements_with_fewer_than_five_repetitions_say_partial(tmp_path):
    root = tmp_path / "study"
    root.mkdir()
    first_two = {r.run_id for r in study.expand(load_experiment(FILES / "crr.toml"))
                 if r.repetition < 2}
    write_study(root / "crr", (FILES / "crr.toml").read_text(), lambda run: result(**{
        "crr-ecn": 1 + gain(run.scenario, run.seed), "crr-noecn": 1.0}), only=first_two)
    text = "\n".join(rfc2884.statement_rows(rfc2884.load_parts(root)))
    assert text.count("(partial: n = 2 < 5, the study is still running)") == 5


def test_bulk_statements_use_size_over_completion_time(tmp_path):
    root = tmp_path / "study"
    root.mkdir()

    def transfers(run):
        ecn_seconds = 400 / (1 + gain(run.scenario, run.seed))
        return [{"workload": w, "kind": "bulk", "size": 20_000_000, "bytes": 20_000_000,
                 "delay": seconds, "complete": True}
                for w, seconds in (("ecn-on", ecn_seconds), ("ecn-off", 400.0))]
    write_study(root / "bulk", (FILES / "bulk.toml").read_text(), lambda run: result(),
                transfers_of=transfers)
    parts = rfc2884.load_parts(root)
    for s in (s for s in rfc2884.STATEMENTS if s.part == "bulk"):
        assert rfc2884.evaluate(s, parts)["verdict"] == "holds", s.text
    text = rfc2884.write_report(root, tmp_path / "r.md")
    assert "Every measured 20 MB transfer completed." in text
    assert "of the drops were forced" not in text      # result() counts no drops


def test_a_point_where_most_drops_are_forced_says_so(tmp_path):
    """At maxp 0.02 and high congestion RED's average sits above maxth, where
    it drops ECN-capable packets too: the statement's row gives the share."""
    def counted(run):
        found = result()
        low_maxp = run.scenario.aqm.maxp == 0.02
        found["bottleneck"].update(early_drops=100, forced_drops=500 if low_maxp else 0,
                                   overflow_drops=20 if low_maxp else 0)
        found["queue"] = {"red_region": {"below": 0.0, "region": 0.75, "above": 0.25}}
        found["flow_stats"] = {
            "ecn-on/e.0": {"retransmits": 400 if low_maxp else 0, "data_segments": 14000},
            "ecn-off/o.0": {"retransmits": 500 + run.seed, "data_segments": 14500}}
        return found
    root = tmp_path / "study"
    root.mkdir()
    write_study(root / "bulk", (FILES / "bulk.toml").read_text(), counted)
    parts = rfc2884.load_parts(root)
    reno = next(s for s in rfc2884.STATEMENTS if s.section == "5.2 (2)")
    assert rfc2884.forced_note(reno, parts["bulk"]).startswith(
        "At the first point (high congestion, maxp 0.02) 83.9 % [83.9, 83.9]")   # 520 / 620
    assert "second point" not in rfc2884.forced_note(reno, parts["bulk"])
    # "ECN flows had almost no retransmissions": true where RED's early drops rule
    rows = "\n".join(rfc2884.retransmission_lines(parts))
    assert "| bulk | reno | early drops dominate: low 0.05, low 0.1, " in rows
    assert ("| bulk | reno | most drops forced (>= 50 %): low 0.02, moderate 0.02, high 0.02 | "
            "400 [400, 400] (n = 15) | 503 [502, 504] (n = 15) |") in rows
    assert "| 0 [0, 0] (n = 75) | 503 [503, 503] (n = 75) |" in rows
    # such runs are flagged beside those that left the region
    region = "\n".join(rfc2884.region_lines(parts))
    assert "| bulk | 180 | 0.75 [0.75, 0.75] (n = 180) | 0 | 30 |" in region
    assert region.count("(75% in region; 84 % of its drops forced)") == 30


def test_fairness_is_jain_over_all_four_flows_per_maxp(tmp_path):
    root = tmp_path / "study"
    root.mkdir()

    def four_flows(run):
        unfair = 3.0 if run.scenario.aqm.maxp == 0.2 else 1.0      # one flow 3x the others
        found = result()
        found["goodputs"] = {"background/b.0": 1e5, "background/b.1": 1e5,
                             "ecn-on/e.0": 1e5, "ecn-off/o.0": unfair * 1e5}
        return found
    write_study(root / "fairness", (FILES / "fairness.toml").read_text(), four_flows)
    text = rfc2884.write_report(root, tmp_path / "r.md")
    assert "| 0.1 | 0.985403 / 0.989726 | 1 [1, 1] (n = 10) | 1 [1, 1] (n = 10) |" in text
    assert "| 0.2 | 0.979368 / 0.983342 | 0.75 [0.75, 0.75] (n = 10) |" in text  # 36 / (4 * 12)
    assert "reaches the published range (>= 0.979) at 6 of 8 points" in text


def test_report_labels_quick_results_and_lists_every_published_statement(tmp_path):
    root = tmp_path / "study"
    root.mkdir()
    quick_study(root / "quick", lambda s: 2.5 + s / 10, lambda s: 2.0)
    (root / common.WALL_TIMES).write_text(json.dumps(
        {"quick": {"seconds": 195.0, "runs": 6, "duration": 25}}))
    text = rfc2884.write_report(root, tmp_path / "rfc2884.md")
    assert "NOT the full grid, only the quick CI variant" in text
    for statement in rfc2884.STATEMENTS:
        assert statement.text in text
    assert "Direction check: passed" in text
    assert "quick/p00-r0 (no queue telemetry)" in text      # flagged, not dropped
    # the run plan from the measured 7.5 s per run beyond its traffic, at --jobs 4
    assert "plus 7.5 s" in text and "each run's traffic plus the measured 7.5 s" in text
    # each stage at the --jobs rule for its runs' hosts: every RFC 2884 run has at most
    # 24 hosts, so 4 side by side (test_rfc2415 checks stages split by hosts)
    assert "| 1 | calibration | RED region per congestion level (runs first) | 36 (0) | 4 |" \
        in text
    assert "| 2 | crr | 5.3 statements | 45 (0) | 4 |" in text
    assert "aqmlab study rfc2884 --out results/rfc2884 --jobs 4\n" in text


def only_of(command):
    """The run ids of an `aqmlab run ... --only IDS` command, or None."""
    return command[command.index("--only") + 1].split(",") if "--only" in command else None


def test_jobs_option_is_read_once_for_the_calibration_and_every_part():
    """run_part and the calibration split --jobs N from the run options the same way."""
    assert common.jobs_option(["--no-progress", "--jobs", "3", "--build-dir", "b"]) == (
        3, ["--no-progress", "--build-dir", "b"])
    assert common.jobs_option(["--no-progress"]) == (1, ["--no-progress"])


def test_one_command_calibrates_then_runs_each_part_with_the_chosen_red(tmp_path, monkeypatch):
    """main() with `aqmlab run` replaced by writing known study folders: the
    calibration's choice lands in every part's file, the statements' points
    run first (every repetition), then the rest of each grid with
    --grid-repeat repetitions; options pass through."""
    commands = []

    def fake_call(command):
        commands.append(command)
        source, out_dir = command[4], tmp_path / "s" / command[6].split("/")[-1]
        if out_dir.name == rfc2884.CALIBRATION:
            write_study(out_dir, (FILES / "calibration.toml").read_text(), lambda run: result(),
                        lambda run: [{"t": t, "avg": 12 + 4 * (rfc2884.background_flows(
                            run.scenario) == 10) * 5} for t in range(20, 81)])
        else:
            assert source == str(tmp_path / "s" / f"{out_dir.name}.toml")
            write_study(out_dir, Path(source).read_text(),
                        lambda run: result(**{"crr-ecn": 2.0, "crr-noecn": 1.0}),
                        only=set(only_of(command)))
        return 0
    monkeypatch.setattr(common, "call_run", fake_call)
    assert rfc2884.main(["--out", str(tmp_path / "s"), "--parts", "bulk,crr",
                         "--jobs", "2", "--executor", "slurm"]) == 0
    # consecutive commands of one part: one stage, split by the --jobs rule's hosts
    groups = [(part, list(group)) for part, group in
              itertools.groupby(commands, key=lambda c: c[6].split("/")[-1])]
    assert [part for part, _ in groups] == ["calibration", "crr", "bulk", "crr", "bulk"]
    assert all(c[2:4] == ["aqmlab", "run"] and c[7:10] == ["--resume", "--jobs", "2"]
               and c[10] == "--only" and c[12:] == ["--executor", "slurm"] for c in commands)
    bulk = {r.run_id: r for r in study.expand(load_experiment(FILES / "bulk.toml"))}
    first = [bulk[i] for c in groups[2][1] for i in only_of(c)]
    statement_points = {(s.variant,) + w for s in rfc2884.STATEMENTS if s.part == "bulk"
                        for w in (s.a, s.b)}
    assert {rfc2884.point_key(r.scenario) for r in first} == statement_points
    assert len(first) == 5 * len(statement_points) == 40
    for c in groups[2][1]:      # within each split, n grows evenly
        reps = [bulk[i].repetition for i in only_of(c)]
        assert reps == sorted(reps)
    rest = [bulk[i] for c in groups[4][1] for i in only_of(c)]
    assert {r.repetition for r in rest} == {0, 1} and len(rest) == 2 * (36 - 8)
    sweep = tomllib.loads((tmp_path / "s" / "bulk.toml").read_text())["sweep"]
    # avg 12 at 2 and 5 flows -> 5/15; avg 32 at 10 flows -> 15/45 (the only region holding it)
    assert (sweep["aqm.minth"], sweep["aqm.maxth"]) == ([5, 5, 15], [15, 15, 45])
    chosen = json.loads((tmp_path / "s" / rfc2884.CALIBRATION_FILE).read_text())
    assert chosen["10"]["region"] == 1.0 and set(chosen) == {"2", "5", "10"}
    report = (tmp_path / "s" / "report.md").read_text()
    assert "| high (10 flows) | 15 / 45 / 2^-9 | 1.00 (2) |" in report
    wall = json.loads((tmp_path / "s" / common.WALL_TIMES).read_text())
    assert wall["calibration"]["runs"] == 36 and wall["bulk"]["runs"] == 40 + 56


def test_ablation_shows_how_each_mechanism_changes_ecns_advantage(tmp_path):
    """Known gains: ECN ahead by 100 % without RACK/TLP, 60 % with TLP, 20 %
    with RACK (either on); the table's paired changes carry those sizes."""
    gains = {"neither": 1.0, "tlp-only": 0.6, "rack-only": 0.2, "rack-tlp": 0.2}
    root = tmp_path / "study"
    root.mkdir()
    write_study(root / "crr_ablation", (FILES / "crr_ablation.toml").read_text(),
                lambda run: result(**{"crr-ecn": 2 * (1 + gains[rfc2884.variant(run.scenario)])
                                      + 0.02 * run.seed, "crr-noecn": 2.0}))
    lines = rfc2884.ablation_lines(rfc2884.load_parts(root))
    row = next(line for line in lines if line.startswith("| 0.1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1].startswith("23 % [") and cells[4].startswith("103 % [")   # +3 % seed noise
    assert cells[5].startswith("-80 pts [") and cells[5].endswith("(n = 5) *")
    assert cells[7].startswith("-40 pts [") and cells[7].endswith(" *")


def test_todays_tcp_sits_beside_the_rfcs_at_each_statement_point(tmp_path):
    root = tmp_path / "study"
    root.mkdir()
    for part, ecn in (("crr", 3.0), ("crr_modern", 2.2)):
        write_study(root / part, (FILES / f"{part}.toml").read_text(),
                    lambda run, ecn=ecn: result(**{"crr-ecn": ecn + 0.01 * run.seed,
                                                   "crr-noecn": 2.0}))
    lines = rfc2884.modern_lines(rfc2884.load_parts(root))
    row = next(line for line in lines if line.startswith("| 5.3 | high, 0.5, 5 KB |"))
    assert "| 51.5 % [" in row and "(reno) | 11.5 % [" in row
    assert any("| 5.2 (1) | low, 0.1 | not run (reno) | not run |" in line for line in lines)


def test_plan_runs_every_statement_point_first_with_all_repetitions():
    sources = {p: FILES / f"{p}.toml" for p in rfc2884.PARTS}
    stages = rfc2884.part_stages(sources, grid_repeat=2, overhead=8.0)
    # a stage is split where the --jobs rule allows its runs' hosts different numbers
    assert [key for key, _ in itertools.groupby((s.part, s.label.startswith("rest"))
                                                for s in stages)] == \
        [(p, False) for p in rfc2884.STAGE_ORDER] + [(p, True) for p in rfc2884.STAGE_ORDER]
    counts = {}
    for s in stages:
        key = (s.part, s.label.startswith("rest"))
        counts[key] = counts.get(key, 0) + len(s.run_ids)
    assert counts[("fairness", False)] == 2 * 4 * 10       # the published maxp, n = 10 as the RFC
    assert counts[("crr_ablation", False)] == 4 * 3 * 5    # 4 settings x maxp 0.02/0.1/0.5
    assert counts[("crr_modern", False)] == 5 * 5          # the 5 KB points and 20 KB at 0.1
    every = [(s.part, r) for s in stages for r in s.run_ids]
    assert len(every) == len(set(every))
    full = rfc2884.part_stages(sources, grid_repeat=10, overhead=8.0)   # >= every file's repeat
    assert sum(len(s.run_ids) for s in full) == sum(
        len(study.expand(load_experiment(path))) for path in sources.values())


def test_plan_takes_bulk_traffic_time_from_complete_runs(tmp_path):
    """Two high-congestion bulk runs whose 20 MB took 1600 s: the plan's
    remaining high-congestion bulk runs take 1600 s, not the fair-share 1300 s."""
    root = tmp_path / "study"
    root.mkdir()
    text = (FILES / "bulk.toml").read_text()
    high = [r.run_id for r in study.expand(load_experiment(FILES / "bulk.toml"))
            if rfc2884.background_flows(r.scenario) == 10][:2]
    write_study(root / "bulk", text, lambda run: {**result(), "epoch": 0.0,
                                                  "window": [20.0, 1600.0]}, only=set(high))
    assert rfc2884.measured_traffic(root) == {("bulk", 10): 1600.0}
    text = "\n".join(rfc2884.plan_lines(root, 10.0))
    assert "measured 1600 s of traffic for bulk at high congestion (mean of its complete runs)" \
        in text
    assert "| 3 | bulk | 5.2 statements and retransmissions | 40 (2) |" in text
    e = load_experiment(FILES / "bulk.toml")
    run = next(r for r in study.expand(e) if rfc2884.background_flows(r.scenario) == 10)
    assert rfc2884.run_seconds(e, run, 10.0, 1600.0) == 1610.0
    assert rfc2884.run_seconds(e, run, 10.0) == pytest.approx(20 + 8 * 20e6 * 12 / 1.5e6 + 10)


def test_study_command_refuses_an_unknown_part(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aqmlab", "study", "rfc2884", "--out",
                          str(tmp_path / "s"), "--parts", "bulk,nope"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == ("aqmlab study rfc2884: error: --parts: unknown part 'nope' "
                                  "(parts: fairness, bulk, crr, bulk_modern, crr_modern, "
                                  "crr_ablation)")
    assert not (tmp_path / "s").exists()


# ---------------------------------------------------------------- in the lab (root)

def test_rack_and_tlp_settings_reach_each_namespace(lab):
    server, client = direct_link(lab, tuning=TcpTuning(recovery=0, early_retrans=0))
    for endpoint in (server, client):
        assert read_sysctl(endpoint.host, "net.ipv4.tcp_recovery") == "0"
        assert read_sysctl(endpoint.host, "net.ipv4.tcp_early_retrans") == "0"


def test_quick_variant_runs_and_checks_the_direction_of_the_main_effect(tmp_path):
    """`aqmlab study rfc2884 --quick` (~4 min): 6 runs of 5 KB transactions at
    high congestion; exit 0 means ECN's transactions/s is not below non-ECN's
    at 95 % confidence."""
    stdout, report = run_quick_study("rfc2884", tmp_path / "s")
    assert "passed: ECN - non-ECN" in stdout
    assert "NOT the full grid, only the quick CI variant" in report
    assert "Direction check: passed" in report
