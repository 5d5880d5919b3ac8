"""Metric formulas on exact inputs (the workload tests apply them to real runs)."""

import math

import pytest

from aqmlab import metrics


def test_jain_index():
    assert metrics.jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert metrics.jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert metrics.jain_index([1, 2]) == pytest.approx(9 / 10)
    assert math.isnan(metrics.jain_index([]))


def test_percentiles_match_linear_interpolation():
    values = [4, 1, 3, 2, 5]
    assert metrics.percentile(values, 50) == 3
    assert metrics.percentile(values, 90) == pytest.approx(4.6)
    summary = metrics.delay_summary([0.1, 0.2, 0.3])
    assert summary["median"] == pytest.approx(0.2) and summary["count"] == 3


def test_network_power_is_goodput_over_median_delay():
    assert metrics.network_power(1e6, 0.5) == pytest.approx(2e6)
    assert math.isnan(metrics.network_power(1e6, math.nan))


def test_counter_rates_count_arrivals_as_sent_plus_dropped():
    before = dict(packets=10, bytes=1000, early_marks=0, early_drops=0, forced_drops=0)
    after = dict(packets=110, bytes=151000, early_marks=5, early_drops=3, forced_drops=2)
    rates = metrics.counter_rates(before, after)
    assert rates["arrivals"] == 105
    assert rates["drop_rate"] == pytest.approx(5 / 105)
    assert rates["mark_rate"] == pytest.approx(5 / 105)
    assert metrics.utilisation(150000, 1.2e6, 1.0) == pytest.approx(1.0)


def test_window_bytes_interpolates_unlimited_flow_samples():
    records = [{"kind": "sample", "t": 1.0, "bytes": 100}, {"kind": "sample", "t": 2.0, "bytes": 300},
               {"kind": "bulk", "start": 0.0, "end": 3.0, "bytes": 400, "size": -1}]
    assert metrics.window_bytes(records, (1.5, 2.5)) == pytest.approx(350 - 200)


def test_window_bytes_counts_finite_transfers_ending_inside():
    records = [{"kind": "bulk", "start": 0, "end": 1, "bytes": 10, "size": 10},
               {"kind": "bulk", "start": 1, "end": 5, "bytes": 20, "size": 20}]
    assert metrics.window_bytes(records, (0.5, 2)) == 10


def test_queue_summary_delays_are_depth_times_mtu_time():
    samples = [{"time_us": 0, "qdepth": 2, "avg": 1.0},
               {"time_us": 10_000, "qdepth": 4, "avg": 3.0}]
    summary = metrics.queue_summary(samples, 12_000_000)      # 1 ms per 1500-byte packet
    assert (summary["qdepth_mean"], summary["qdepth_max"], summary["avg_mean"]) == (3, 4, 2.0)
    assert summary["delay_ms_p50"] == pytest.approx(3.0)
    assert summary["delay_ms_p99"] == pytest.approx(3.98)
    assert metrics.queue_summary([], 12_000_000) == {"samples": 0}


def test_time_average_weights_by_time_and_counts_idle_gaps_as_empty():
    # 5 packets for 1 s, then 1 packet for 3 s: packet mean 3, time average 2
    samples = [{"time_us": t, "qdepth": q} for t, q in ((0, 5), (1e6, 1), (4e6, 1))]
    assert metrics.time_average(samples, mtu_s=1.0, period_packets=2) == pytest.approx(2.0)
    # at 0.1 s per packet, 5 packets (+1 sampled) drain in 0.6 s and 1 (+1) in 0.2 s:
    # the rest of each gap is an idle port
    assert metrics.time_average(samples, mtu_s=0.1, period_packets=1) == pytest.approx(
        (5 * 0.6 + 1 * 0.2) / 4)
