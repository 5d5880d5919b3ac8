"""The RFC 889 reproduction: its files' paths against the published table, the
delay-vs-length fits and the calibration verdict on known volleys, the
retransmission-timeout estimators on known series, the report; and `aqmlab
study rfc889 --quick` through the lab (~1 min)."""

import csv
import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from aqmlab.config import load_experiment
from aqmlab.reproductions import rfc889
from aqmlab.reproductions.rfc889 import (ETHERNET_HEADER, Volley, calibration_lines,
                                         configured_path, fit_delay, fit_robust, mills, rfc6298,
                                         rsre, simulate)
from labhelpers import run_quick_study

FILES = rfc889.EXPERIMENTS


def scenarios(part):
    return {s.name: s for s in load_experiment(FILES / f"{part}.toml").scenarios}


# ---------------------------------------------------------------- the files

def test_paths_model_the_published_table():
    """Six RFC hosts and ISID-H, each line at the RFC's fitted rate, its
    propagation giving the RFC's delay at 40 octets (ISID-H: ISID's line, its
    cross traffic makes the rest)."""
    published = json.loads(rfc889.PUBLISHED.read_text())["paths"]
    paths = scenarios("paths")
    assert set(paths) == set(published) and len(paths) >= 6
    for name, scenario in paths.items():
        cells = published[name.removesuffix("-h")]["delay"]
        cells = cells.get("single", cells)
        rate, propagation = configured_path(scenario)
        assert rate == pytest.approx(cells["rate"], rel=0.01), name
        at_40 = propagation + 8 * (40 + ETHERNET_HEADER) / rate
        assert at_40 * 1e3 == pytest.approx(cells["d40"], abs=0.5), name
    assert any(w.kind == "bulk" for w in paths["isid-h"].workloads)
    assert paths["ucl"].topology.bottleneck.loss and paths["tanum"].topology.bottleneck.glitch


def test_calibration_paths_are_the_paths_without_impairments_or_cross_traffic():
    clean, paths = scenarios("calibration"), scenarios("paths")
    assert set(clean) == {rfc889.LAB_PATH} | (set(paths) - {"isid-h"})
    for name, scenario in clean.items():
        link = scenario.topology.bottleneck
        assert (link.jitter_s, link.loss, link.glitch) == (0.0, "", ""), name
        assert [w.kind for w in scenario.workloads] == ["echo"], name
        if name in paths:
            assert configured_path(scenario) == configured_path(paths[name]), name


# ---------------------------------------------------------------- fits

def line_volleys(rate, propagation, processing=0.0, n=400, seed=1, noise=0.0):
    """Volleys exactly on the configured line (plus optional noise), lengths 40..256."""
    rng = np.random.default_rng(seed)
    volleys = []
    for i, length in enumerate(rng.integers(40, 257, n)):
        one_way = propagation + processing + 8 * (length + ETHERNET_HEADER) / rate
        volleys.append(Volley(float(i), int(length), 2 * one_way + rng.exponential(noise)
                              if noise else 2 * one_way))
    return volleys


def test_least_squares_recovers_the_line_and_the_rfc_rate():
    fit = fit_delay(line_volleys(9600, 0.05))
    assert fit.rate_bps == pytest.approx(9600, rel=1e-9)
    assert fit.intercept == pytest.approx(0.05, abs=1e-12)
    assert fit.delay_at(40) == pytest.approx(0.05 + 8 * 54 / 9600)


def test_the_robust_fit_ignores_a_few_descheduled_volleys():
    volleys = line_volleys(45200, 0.0124)
    spoiled = [Volley(v.sent, v.length, v.rtt + (0.02 if i % 10 == 0 else 0.0))
               for i, v in enumerate(volleys)]            # 10 % delayed by 10 ms one way
    robust, least = fit_robust(spoiled), fit_delay(spoiled)
    assert robust.rate_bps == pytest.approx(45200, rel=1e-6)
    assert robust.intercept == pytest.approx(0.0124, abs=1e-9)
    assert abs(least.intercept - 0.0124) > 0.5e-3       # least squares moves by ~1 ms


def test_fits_skip_lost_volleys_and_need_two_lengths():
    volleys = line_volleys(9600, 0.05, n=50) + [Volley(99.0, 100, math.nan)]
    assert fit_delay(volleys).n == 50
    assert fit_delay([Volley(0, 40, 0.1)] * 5) is None


# ---------------------------------------------------------------- calibration verdict

def fake_part(tmp_path, runs):
    """A loaded part whose runs hold the given volleys: [(scenario, volleys)]."""
    found = []
    for i, (scenario, volleys) in enumerate(runs):
        folder = tmp_path / f"p{i:02d}-r0"
        folder.mkdir()
        with (folder / "transfers.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["workload", "kind", "start", "delay", "bytes", "complete"])
            for v in volleys:
                writer.writerow(["probe", "echo", v.sent, v.rtt, v.length, not v.lost])
        found.append(SimpleNamespace(run_id=folder.name, scenario=scenario))
    loaded = SimpleNamespace(folder=tmp_path, runs=found, results={r.run_id: {} for r in found})
    return rfc889.Part(loaded)


def calibration_runs(processing, rate_factor=1.0, extra=0.0):
    clean = scenarios("quick")
    runs = []
    for name, scenario in clean.items():
        rate, propagation = configured_path(scenario)
        if name != rfc889.LAB_PATH:
            rate, propagation = rate * rate_factor, propagation + extra
        runs.append((scenario, line_volleys(rate, propagation, processing, n=200, noise=2e-5)))
    return runs


def test_calibration_passes_on_the_configured_lines(tmp_path):
    lines, ok = calibration_lines(fake_part(tmp_path, calibration_runs(0.08e-3)))
    assert ok, "\n".join(lines)
    assert "**0.08" in lines[0]


@pytest.mark.parametrize("rate_factor, extra", [(1.03, 0.0), (1.0, 0.3e-3)])
def test_calibration_fails_on_a_wrong_rate_or_intercept(tmp_path, rate_factor, extra):
    lines, ok = calibration_lines(fake_part(tmp_path, calibration_runs(0.08e-3, rate_factor,
                                                                        extra)))
    assert not ok and any(line.endswith("| NO |") for line in lines)


# ---------------------------------------------------------------- estimators

def series(rtts):
    return [Volley(float(i), 100, r) for i, r in enumerate(rtts)]


def test_a_steady_path_costs_nothing():
    for estimator in (rsre(), mills(), rfc6298()):
        run = simulate(series([0.2] * 50), estimator)
        assert (run.lost, run.rtx, run.efficiency) == (0, 0, 1.0), estimator.name
        assert run.total == pytest.approx(50 * 0.1) and run.mean == pytest.approx(0.1)


def test_mills_filter_follows_a_rise_sooner_than_rfc_793():
    """Delay steps from 1 to 3 s: both time out on the first 3 s volley
    (timeout 2 E = 2 s); Mills' F2 = 3/4 lifts E to 1.5 (timeout 3 s), RFC
    793's F = 7/8 only to 1.25 (2.5 s), so RFC 793 retransmits again."""
    volleys = series([1.0] * 10 + [3.0] * 3)
    classic, asymmetric = simulate(volleys, rsre()), simulate(volleys, mills())
    assert asymmetric.rtx == 1 and classic.rtx == 3
    assert classic.rtx_time == pytest.approx((1.0 + 0.5 + (3 - 2 * (7 / 8 * 1.25 + 3 / 8))) / 2)
    assert asymmetric.efficiency > classic.efficiency


def test_lost_volleys_wait_out_doubling_timeouts():
    run = simulate(series([1.0, 1.0, math.nan, math.nan, 1.0]), rsre())
    assert run.lost == 2 and run.lost_time == pytest.approx((2.0 + 4.0) / 2)
    assert run.total == pytest.approx(1.5) and run.efficiency == pytest.approx(1.5 / 4.5)


def test_rfc6298_keeps_its_one_second_minimum():
    estimator = rfc6298()
    state = estimator.first(0.1)
    assert estimator.timeout(state) == pytest.approx(1.0)      # 0.1 + 4 x 0.05 < 1 s
    state = estimator.first(0.5)
    assert estimator.timeout(state) == pytest.approx(0.5 + 4 * 0.25)


# ---------------------------------------------------------------- report and command

def test_report_has_both_rfc_tables_for_every_path(tmp_path):
    paths = scenarios("paths")
    runs = []
    for name, scenario in paths.items():
        rate, propagation = configured_path(scenario)
        volleys = line_volleys(rate, propagation, 1e-4, n=100, noise=0.01)
        runs.append((scenario, volleys[:50] + [Volley(50.0, 100, math.nan)] + volleys[50:]))
    part = fake_part(tmp_path, runs)
    table = rfc889.delay_lines(part, rfc889.published())
    assert sum(line.startswith("| isid (ISID-L)") for line in table) == 2   # single, multi
    assert sum(line.startswith("| dcn8 (DCN8)") for line in table) == 1
    results = rfc889.timeout_results(part)
    text = "\n".join(rfc889.timeout_lines(results, rfc889.published()))
    for name in paths:
        assert f"| {name} | **published**" in text
        assert all(f"| {name} | {e.name} |" in text for e in rfc889.ESTIMATORS)
    assert all(r.lost == 1 for by in results.values() for r in by.values())
    assert rfc889.mills_gain_lines(results)[0].startswith("Mills' filter minus RFC 793's")
    impaired = "\n".join(rfc889.impairment_lines(part))
    assert "| ucl | jitter 300 ms normal, loss 0.9%, glitch 120s 3s | 1.79% | 1 of 101 [" in impaired
    assert "| isid-h |" in impaired and "bulk TCP cross traffic" in impaired
    assert rfc889.linux_lines(part) == []
    run = next(r for r in part.loaded.runs if r.scenario.name == "isid-h")
    part.loaded.results[run.run_id] = {"flow_stats": {"cross/cross.0.0": {
        "data_segments": 200, "retransmits": 5, "rtt_ms": 1234.0}}}
    assert "- isid-h, cross/cross.0.0 (reno): 200 data segments, 5 retransmitted (2.5%); " \
           "Linux's smoothed RTT 1234 ms." in rfc889.linux_lines(part)
    part.loaded.results[run.run_id]["flow_stats"]["cross/cross.0.0"].update(
        dsack_dups=2, rto_timeouts=3)
    assert "- isid-h, cross/cross.0.0 (reno): 200 data segments, 5 retransmitted (2.5%), " \
           "2 of them spurious (DSACK), 3 retransmission timeouts; Linux's smoothed RTT " \
           "1234 ms." in rfc889.linux_lines(part)


def test_echo_loss_is_two_crossings_of_the_configured_loss():
    assert rfc889.echo_loss("") == 0.0
    assert rfc889.echo_loss("1%") == pytest.approx(1 - 0.99 ** 2)
    # Gilbert-Elliott: in the bad state p / (p + r) of the time, losing everything there
    assert rfc889.echo_loss("gemodel 1% 9%") == pytest.approx(1 - 0.9 ** 2)


def test_unknown_part_is_a_one_line_error(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aqmlab", "study", "rfc889", "--out",
                          str(tmp_path), "--parts", "nope"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == ("aqmlab study rfc889: error: --parts: unknown part 'nope' "
                                  "(parts: calibration, paths)")


def test_quick_variant_passes_the_calibration_through_the_lab(tmp_path):
    stdout, report = run_quick_study("rfc889", tmp_path / "study")
    assert "passed: calibration of the quick part" in stdout
    assert "## The quick CI variant" in report and "| NO |" not in report
