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


def test_delays_count_only_transfers_ending_inside_the_window():
    """As goodput: a page that ended during the warm-up is not measured."""
    pages = [{"workload": "web", "flow": "f", "kind": "page", "start": s, "end": e,
              "bytes": 10, "size": 10, "complete": True}
             for s, e in ((0, 5), (11, 11.2), (12, 12.4))]
    summary = metrics.workload_summary(pages, (10, 20))["web"]
    assert summary["delay_s"]["count"] == 2 and summary["delay_s"]["median"] == pytest.approx(0.3)


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


def test_red_region_weights_each_average_by_the_time_it_held():
    samples = [(10.0, 2.0), (11.0, 8.0), (14.0, 20.0), (15.0, 9.0), (16.0, 9.0), (20.0, 1.0)]
    got = metrics.red_region_fractions(samples, 5, 15)
    assert got == pytest.approx({"below": 0.1, "region": 0.8, "above": 0.1})
    assert metrics.red_region_fractions([(1.0, 3.0)], 5, 15) is None
    summary = metrics.queue_summary([{"time_us": 1e6 * t, "qdepth": 1, "avg": a}
                                     for t, a in samples], 12_000_000, red=(5, 15))
    assert summary["red_region"] == pytest.approx(got)
    assert "red_region" not in metrics.queue_summary(
        [{"time_us": 0, "qdepth": 1, "avg": 1.0}], 12_000_000)


def test_time_average_weights_by_time_and_counts_idle_gaps_as_empty():
    # 5 packets for 1 s, then 1 packet for 3 s: packet mean 3, time average 2
    samples = [{"time_us": t, "qdepth": q} for t, q in ((0, 5), (1e6, 1), (4e6, 1))]
    assert metrics.time_average(samples, mtu_s=1.0, period_packets=2) == pytest.approx(2.0)
    # at 0.1 s per packet, 5 packets (+1 sampled) drain in 0.6 s and 1 (+1) in 0.2 s:
    # the rest of each gap is an idle port
    assert metrics.time_average(samples, mtu_s=0.1, period_packets=1) == pytest.approx(
        (5 * 0.6 + 1 * 0.2) / 4)


# RED idle decay at 1.5 Mb/s (8 ms per 1500-byte packet), wq = 2^-9, minth 5
S_US, KEEP = 8000, 1 - 2.0 ** -9


def _idle_run(avg_of, arrivals_every_us=50_000, count=140):
    """A busy sample (q 10 at t 1 s, avg 16) then `count` packets finding the
    queue empty; the queue ran dry at 1 s + 11 packet times."""
    start = 1_000_000 + 11 * S_US
    busy = [{"time_us": 900_000, "qdepth": 12, "avg": 15.0},
            {"time_us": 1_000_000, "qdepth": 10, "avg": 16.0}]
    empty = [{"time_us": start + k * arrivals_every_us, "qdepth": 0,
              "avg": avg_of(k * arrivals_every_us)} for k in range(1, count + 1)]
    return busy + empty + [{"time_us": empty[-1]["time_us"] + 1000, "qdepth": 1, "avg": 1.0}]


def test_idle_periods_follow_classic_red_below_minth():
    # classic RED at an arrival x after the queue ran dry: avg0 (1 - wq)^(x/s) (1 - wq)
    samples = _idle_run(lambda x: 16.0 * KEEP ** (x / S_US + 1))
    [period] = metrics.red_idle_periods(samples, 1.5e6, 9, 5)
    # ... and avg0 (1 - wq)^(x/s) between arrivals: below 5 after 4.76 s
    crossing = S_US / 1e6 * math.log(5 / 16) / math.log(KEEP)
    assert period["below_minth_predicted_s"] == pytest.approx(crossing)
    assert period["below_minth_observed_s"] == pytest.approx(math.ceil(crossing / 0.05) * 0.05)
    assert period["resolution_s"] == pytest.approx(0.05)
    assert (period["arrivals"], period["seconds"]) == (140, pytest.approx(7.0))
    assert period["end_error"] == pytest.approx(0, abs=1e-9) and period["agrees"]


def test_idle_periods_catch_an_average_that_does_not_decay():
    # the old shift decay: halved per 1.57 s of idle, so below minth 1.4 s early
    samples = _idle_run(lambda x: 16.0 / 2 ** int(x / 1.57e6))
    [period] = metrics.red_idle_periods(samples, 1.5e6, 9, 5)
    assert period["below_minth_observed_s"] == pytest.approx(3.15)
    assert not period["agrees"] and period["end_error"] < -0.3
    locked = metrics.red_idle_periods(_idle_run(lambda x: 16.0), 1.5e6, 9, 5)
    assert locked[0]["below_minth_observed_s"] is None and not locked[0]["agrees"]


def test_idle_periods_skip_short_ones_and_report_no_crossing_before_it_is_due():
    samples = _idle_run(lambda x: 16.0 * KEEP ** (x / S_US + 1), count=10)   # 0.5 s
    [period] = metrics.red_idle_periods(samples, 1.5e6, 9, 5)
    assert period["below_minth_observed_s"] is None and period["agrees"]
    assert metrics.red_idle_periods(samples, 1.5e6, 9, 5, min_seconds=0.6) == []


def test_idle_decay_table_reads_a_run_folder(tmp_path):
    import csv
    import json

    from aqmlab import report

    samples = _idle_run(lambda x: 16.0 * KEEP ** (x / S_US + 1))
    (tmp_path / "run.json").write_text(json.dumps({"scenario": {
        "aqm": {"mode": "red", "minth": 5, "wq_log": 9},
        "topology": {"bottleneck": {"rate_bps": 1_500_000}}}}))
    with open(tmp_path / "queue.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, ("t", "time_us", "qdepth", "avg", "decision"))
        writer.writeheader()
        writer.writerows({**s, "t": s["time_us"] / 1e6 - 0.5, "decision": "pass"} for s in samples)
    header, rule, row = report.idle_decay_table(tmp_path)
    assert row == ("| 0.588 | 7.000 | 140 | 16.00 | 15.77 (15.77, +0.0%) | 2.89 (2.89, +0.0%) | "
                   "4.760 | 4.800 (± 0.050) | yes |")


def test_tcp_info_fields_an_older_kernel_does_not_fill_are_none():
    import struct
    from aqmlab import agent
    values = list(range(1, 60))
    full = struct.pack(agent.TCP_INFO_FORMAT, *values)
    fields = agent.tcp_info_fields(full)
    assert (fields["total_retrans"], fields["dsack_dups"], fields["total_rto"]) == (32, 51, 57)
    # Linux 6.1 stops after tcpi_snd_wnd (232 bytes): DSACKs yes, RTO expiries unknown.
    older = agent.tcp_info_fields(full[:232])
    assert older["dsack_dups"] == 51 and older["total_rto"] is None


def test_flow_tcp_stats_sum_dsacks_and_timeouts_when_every_connection_has_them():
    info = {"kind": "tcp_info", "workload": "w", "flow": "f", "total_retrans": 4, "data_segs_out": 50,
            "delivered_ce": 0, "rtt_us": 2000, "snd_cwnd": 10, "dsack_dups": 1, "total_rto": 2}
    both = metrics.flow_tcp_stats([info, dict(info, dsack_dups=3, total_rto=0)])[("w", "f")]
    assert (both["retransmits"], both["dsack_dups"], both["rto_timeouts"]) == (8, 4, 2)
    old = {k: v for k, v in info.items() if k not in ("dsack_dups", "total_rto")}
    mixed = metrics.flow_tcp_stats([info, old])[("w", "f")]
    assert mixed["dsack_dups"] is None and mixed["rto_timeouts"] is None


# Transfers mapped to their connections (SURGE: one connection per transfer).
EPOCH = 1000.0
A, B, C = (f"10.1.0.1:5001>10.2.0.1:{port}" for port in (40000, 40001, 40002))


def transfer(connection, start, end, size):
    record = {"workload": "web", "flow": "web.0.0", "kind": "surge", "start": EPOCH + start,
              "end": EPOCH + end, "bytes": size, "size": size, "complete": True}
    return {**record, "connection": connection} if connection else record


def sent(connection, t, segments):
    return {"kind": "tcp_info", "workload": "web", "flow": "web.0.0", "t": EPOCH + t,
            "connection": connection, "data_segs_out": segments}


def dropped(connection, t, payload=1448):
    return {"t": str(t), "flow": connection, "workload": "web", "seq": "1",
            "payload": str(payload)}


def test_each_transfer_gets_the_drops_and_segments_of_its_connection_split_by_time():
    # A's port comes back 9 s later for another transfer (a reused 4-tuple); C's
    # sender logged no tcp_info; the last transfer never connected.
    records = [transfer(A, 1.0, 1.5, 5_000), transfer(A, 10.0, 12.0, 200_000),
               transfer(B, 2.0, 3.0, 50_000), transfer(C, 4.0, 4.5, 3_000),
               transfer(None, 5.0, 5.1, 3_000),
               sent(A, 1.6, 5), sent(A, 12.1, 150), sent(B, 3.1, 40)]
    rows = [dropped(A, 0.5),                  # before A's first transfer: nobody's
            dropped(A, 1.2), dropped(A, 1.3, payload=0),   # a data segment; a SYN-ACK
            dropped(A, 10.5), dropped(A, 11.0), dropped(B, 2.5), dropped(C, 4.2),
            dropped("10.1.0.1:5001>10.2.0.1:49999", 3.0)]    # no transfer of this run
    out = metrics.with_transfer_drops(records, rows, EPOCH)
    assert [(r["drops"], r["data_segments"]) for r in out[:4]] == [(1, 5), (2, 150), (1, 40),
                                                                   (1, None)]
    assert "drops" not in out[4] and out[5:] == records[5:]
    assert "drops" not in records[0]          # the input records stay as they were


def test_drop_rate_per_size_class_is_dropped_over_sent_data_segments():
    records = [transfer(A, 1.0, 1.5, 5_000), transfer(A, 10.0, 12.0, 200_000),
               transfer(B, 2.0, 3.0, 50_000), transfer(C, 2.0, 3.5, 60_000),
               transfer(None, 5.0, 5.1, 3_000),
               sent(A, 1.6, 5), sent(A, 12.1, 150), sent(B, 3.1, 40), sent(C, 3.6, 60)]
    rows = [dropped(A, 1.2), dropped(A, 10.5), dropped(A, 11.0), dropped(B, 2.5),
            dropped(C, 2.6), dropped(C, 2.7), dropped(C, 2.8)]
    annotated = metrics.with_transfer_drops(records, rows, EPOCH)
    # the window starts after the first transfer ended: it does not count
    by_size = metrics.drop_rate_by_size(annotated, (EPOCH + 2.0, EPOCH + 20.0))["web"]
    assert by_size == {
        "10-100 KB": {"transfers": 2, "drops": 4, "data_segments": 100, "drop_rate": 0.04},
        "100 KB-1 MB": {"transfers": 1, "drops": 2, "data_segments": 150,
                        "drop_rate": pytest.approx(2 / 150)}}
    whole = metrics.drop_rate_by_size(annotated, (EPOCH, EPOCH + 20.0))["web"]
    assert whole["< 10 KB"] == {"transfers": 1, "drops": 1, "data_segments": 5, "drop_rate": 0.2}
    assert sum(c["drops"] for c in whole.values()) == len(rows)


def test_size_classes_are_the_per_size_report_bins():
    assert [metrics.size_bin(s) for s in (1, 9_999, 10_000, 999_999, 1_000_000)] == \
        ["< 10 KB", "< 10 KB", "10-100 KB", "100 KB-1 MB", ">= 1 MB"]


def test_a_runs_per_size_drop_rates_are_study_metrics():
    from aqmlab import report
    web = {"goodput_bps": 1e6, "goodput_per_flow_bps": 1e5, "jain_index": 1.0,
           "network_power": 1.0, "transactions_per_s": 0, "delay_s": {},
           "drop_rate_by_size": {"10-100 KB": {"transfers": 2, "drops": 4, "data_segments": 100,
                                               "drop_rate": 0.04}}}
    result = {"workloads": {"web": web}, "goodputs": {}, "queue": {},
              "bottleneck": {"utilisation": 0.9, "drop_rate": 0.01, "mark_rate": 0.0}}
    values = report.run_metrics(result)
    assert values[("web", "drop_rate_10_100kb")] == 0.04
    assert ("web", "drop_rate_lt_10kb") not in values       # no transfer of that size
    unit, what, per_run = report.metric_info("web", "drop_rate_10_100kb")
    assert "10-100 KB" in what and per_run == "total"


def test_a_red_runs_time_in_the_region_is_a_study_metric():
    from aqmlab import report
    result = {"workloads": {}, "goodputs": {}, "bottleneck": {"utilisation": 0.9,
              "drop_rate": 0.01, "mark_rate": 0.0},
              "queue": {"red_region": {"below": 0.1, "region": 0.85, "above": 0.05}}}
    assert report.run_metrics(result)[(report.ALL, "red_region_time")] == 0.85
    result["queue"] = {"samples": 0}                     # drop-tail, or no telemetry
    assert (report.ALL, "red_region_time") not in report.run_metrics(result)
