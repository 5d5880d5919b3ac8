"""`aqmlab study buffers` (the buffer-sizing thesis): its experiment files,
the drop-synchronisation index, the scale-limit rule and the verdict words."""

import math

import pytest

from aqmlab import stats, study
from aqmlab.config import load_experiment
from aqmlab.reproductions import buffers

ALL = buffers.PARTS + (buffers.QUICK,)


@pytest.mark.parametrize("part", ALL)
def test_every_part_is_a_valid_experiment_at_the_thesis_path(part):
    experiment = load_experiment(buffers.EXPERIMENTS / f"{part}.toml")
    for scenario in experiment.scenarios:
        topology = scenario.topology
        # the thesis's access links: rate C, 5 ms each side
        for access in (topology.server_access, topology.client_access):
            assert access.rate_bps == topology.bottleneck.rate_bps
            assert access.delay_s == pytest.approx(0.005)
        assert scenario.aqm.mode == "droptail"
        assert {buffers.pacing_of(w.tcp) for w in scenario.workloads} <= {
            "unpaced", "paced", "linuxpaced"}


def test_paced_means_the_thesis_ratios():
    experiment = load_experiment(buffers.EXPERIMENTS / "p2p.toml")
    paced = [s for s in experiment.scenarios if buffers.setting(s) == "normal-paced"]
    assert paced and all(s.workloads[0].tcp.pacing_ss_ratio == 100 and
                         s.workloads[0].tcp.pacing_ca_ratio == 100 for s in paced)
    sysctls = paced[0].workloads[0].tcp.sysctls()
    assert sysctls["net.ipv4.tcp_pacing_ss_ratio"] == sysctls["net.ipv4.tcp_pacing_ca_ratio"] == 100


def test_mixed_shares_and_population_sizes():
    experiment = load_experiment(buffers.EXPERIMENTS / "mixed.toml")
    found = {(buffers.buffer_rule(s), buffers.flows(s), buffers.paced_share(s))
             for s in experiment.scenarios}
    assert found == {(rule, n, share) for rule in ("normal", "sqrtn") for n in (100, 1000)
                     for share in (0.2, 0.5, 0.8)}


def test_quick_variant_fits_ci():
    experiment = load_experiment(buffers.EXPERIMENTS / "quick.toml")
    assert study.estimated_seconds(experiment, study.expand(experiment)) < 300
    assert experiment.drop_records


def rows(*pairs):
    return [{"t": str(t), "flow": f} for t, f in pairs]


def test_sync_index_is_the_mean_fraction_of_flows_per_loss_event():
    # Two events 1 s apart (gap 0.1 s): flows a, b then a alone, of 4 flows.
    assert buffers.sync_index(rows((1.0, "a"), (1.01, "b"), (2.0, "a")), 4, 0.1) == \
        pytest.approx((2 / 4 + 1 / 4) / 2)
    # Every flow in every event: fully synchronised.
    everyone = rows(*[(t + i * 0.001, f"f{i}") for t in (1.0, 2.0) for i in range(3)])
    assert buffers.sync_index(everyone, 3, 0.1) == 1.0
    assert math.isnan(buffers.sync_index([], 3, 0.1))


def scale_row(n, ok, pacing="unpaced", kind="bulk"):
    return {"n": n, "ok": ok, "pacing": pacing, "kind": kind}


def test_largest_faithful_n_stops_at_the_first_unfaithful_configuration():
    found = buffers.largest_faithful([scale_row(16, True), scale_row(64, True),
                                      scale_row(256, False), scale_row(1000, True),
                                      scale_row(16, False, "paced")])
    assert found == {("bulk", "unpaced"): 64, ("bulk", "paced"): None}


def test_run_fidelity_checks_timing_cpu_and_a_full_link():
    result = {"bottleneck": {"utilisation": 0.97, "switch_timing": {
        "frames": 1000, "late_us_mean": 40.0, "late_us_max": 900, "late_over_1ms": 5,
        "cpu_share": 0.5}}, "workloads": {"p2p": {}}}
    values, ok = buffers.run_fidelity(result)
    assert ok and values["late_over_1ms"] == 0.005
    result["bottleneck"]["switch_timing"]["late_us_mean"] = 500.0
    assert not buffers.run_fidelity(result)[1]
    result["bottleneck"]["switch_timing"]["late_us_mean"] = 40.0
    result["bottleneck"]["utilisation"] = 0.5
    assert not buffers.run_fidelity(result)[1]


def test_verdict_words_follow_the_interval():
    assert buffers.word(stats.estimate([1.0, 1.2, 1.1])).startswith("holds (95 %")
    assert buffers.word(stats.estimate([-1.0, 2.0, 0.5])) == "holds in the mean only"
    assert buffers.word(stats.estimate([-1.0, -1.2, -1.1])) == "does not hold"
    assert buffers.word(stats.estimate([-1.0, -1.2, -1.1]), above=False).startswith("holds (95")
    assert buffers.word(stats.estimate([1.0])).startswith("not enough")


def test_transfer_sizes_fall_into_the_report_bins():
    assert [buffers.size_bin(s) for s in (0, 9_999, 10_000, 999_999, 5_000_000)] == \
        ["< 10 KB", "< 10 KB", "10-100 KB", "100 KB-1 MB", ">= 1 MB"]

