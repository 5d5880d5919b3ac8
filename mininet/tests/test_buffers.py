"""`aqmlab study buffers` (the buffer-sizing thesis): its experiment files,
the drop-synchronisation index, the scale-limit rule and the verdict words."""

import csv
import gzip
import math
import subprocess
import sys

import pytest

from aqmlab import stats, study
from aqmlab.config import load_experiment
from aqmlab.reproductions import buffers, common
from test_rfc2884 import write_study

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


def scale_row(n, packet, rtt=True, pacing="unpaced", kind="bulk"):
    return {"n": n, "ok": {"packet": packet, "rtt": rtt}, "pacing": pacing, "kind": kind}


def test_largest_faithful_n_stops_at_the_first_unfaithful_configuration():
    rows = [scale_row(16, True), scale_row(64, True), scale_row(256, False),
            scale_row(1000, True, rtt=False), scale_row(16, False, False, "paced")]
    assert buffers.largest_faithful(rows, "packet") == {("bulk", "unpaced"): 64,
                                                        ("bulk", "paced"): None}
    assert buffers.largest_faithful(rows, "rtt") == {("bulk", "unpaced"): 256,
                                                     ("bulk", "paced"): None}


def test_a_configuration_is_faithful_only_if_every_seed_is():
    rows = [scale_row(16, True), scale_row(16, True), scale_row(64, True), scale_row(64, False),
            scale_row(256, True)]
    assert buffers.largest_faithful(rows, "packet") == {("bulk", "unpaced"): 16}


def test_verdict_words_follow_the_interval():
    assert buffers.word(stats.estimate([1.0, 1.2, 1.1])).startswith("holds (95 %")
    assert buffers.word(stats.estimate([-1.0, 2.0, 0.5])) == "holds in the mean only"
    assert buffers.word(stats.estimate([-1.0, -1.2, -1.1])) == "does not hold"
    assert buffers.word(stats.estimate([-1.0, -1.2, -1.1]), above=False).startswith("holds (95")
    assert buffers.word(stats.estimate([1.0])).startswith("not enough")


def test_transfer_sizes_fall_into_the_report_bins():
    assert [buffers.size_bin(s) for s in (0, 9_999, 10_000, 999_999, 5_000_000)] == \
        ["< 10 KB", "< 10 KB", "10-100 KB", "100 KB-1 MB", ">= 1 MB"]


def test_delay_per_size_reads_a_committed_runs_compressed_transfers(tmp_path):
    """A committed study keeps transfers.csv gzipped: the per-size delays must read it."""
    rows = [{"kind": "surge", "complete": "True", "end": "12.0", "bytes": "5000", "delay": "0.25"},
            {"kind": "surge", "complete": "True", "end": "3.0", "bytes": "5000", "delay": "9.0"}]
    with gzip.open(tmp_path / "transfers.csv.gz", "wt", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = {"window": [110.0, 140.0], "epoch": 100.0}   # warm-up ends 10 s after the epoch
    assert buffers.transfer_delay_by_size(result, tmp_path) == {"< 10 KB": 0.25}


def test_per_type_drop_rate_counts_dropped_data_segments_only(tmp_path):
    """A dropped SYN-ACK or FIN (payload 0) is not a data segment: numerator and
    denominator count the same thing."""
    rows = [{"t": "1.0", "flow": "a", "workload": "paced", "seq": "1", "payload": "1448"},
            {"t": "1.1", "flow": "a", "workload": "paced", "seq": "0", "payload": "0"},
            {"t": "1.2", "flow": "b", "workload": "unpaced", "seq": "5", "payload": "1448"}]
    with open(tmp_path / "drops.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = {"flow_stats": {"paced/0": {"data_segments": 50}, "unpaced/0": {"data_segments": 10}}}
    assert buffers.type_drop_pct("paced")(result, tmp_path) == 2.0


def size_counts(drops, segments):
    return {"transfers": 1, "drops": drops, "data_segments": segments,
            "drop_rate": drops / segments}


def test_drop_rate_per_size_pools_the_runs_workloads():
    result = {"workloads": {"a": {"drop_rate_by_size": {"< 10 KB": size_counts(1, 10)}},
                            "b": {"drop_rate_by_size": {"< 10 KB": size_counts(3, 30)}},
                            "c": {}}}
    assert buffers.drop_pct_in_bin("< 10 KB")(result) == pytest.approx(10.0)
    assert math.isnan(buffers.drop_pct_in_bin(">= 1 MB")(result))



def quick_result(run, drop_rate):
    workloads = {"p2p": {"flows": 16, "goodput_bps": 9e6, "goodput_per_flow_bps": 5.6e5,
                         "jain_index": 0.9, "delay_kind": "bulk", "delay_s": {},
                         "transactions_per_s": 0, "network_power": None}}
    return {"scenario": run.scenario.name, "seed": run.seed, "run_id": run.run_id,
            "epoch": 0.0, "window": [5.0, 20.0], "bottleneck_buffer": 13,
            "goodputs": {"p2p/p2p.0.0": 5.6e5}, "flow_stats": {},
            "bottleneck": {"utilisation": 0.95, "drop_rate": drop_rate, "mark_rate": 0},
            "queue": {"samples": 0}, "workloads": workloads}


def drops_of(run):
    return [{"t": 6.0 + i, "flow": f"10.1.0.1:5001>10.2.0.1:{40000 + i}", "workload": "p2p",
             "seq": i} for i in range(3)]


@pytest.mark.parametrize("sqrtn_more, code", ((0.01, 0), (-0.01, 1)))
def test_quick_command_exits_by_the_direction_check(tmp_path, monkeypatch, capsys, sqrtn_more,
                                                    code):
    root, commands = tmp_path / "s", []

    def call(command):
        commands.append(command)
        write_study(root / buffers.QUICK, (buffers.EXPERIMENTS / "quick.toml").read_text(),
                    lambda run: quick_result(run, 0.02 + 0.001 * run.seed + (
                        sqrtn_more if run.scenario.name == "sqrtn" else 0)),
                    transfers_of=None)
        for run_folder in (root / buffers.QUICK).glob("p*-r*"):
            with (run_folder / "drops.csv").open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=["t", "flow", "workload", "seq"])
                writer.writeheader()
                writer.writerows(drops_of(run_folder))
        return 0
    monkeypatch.setattr(common, "call_run", call)
    assert buffers.main(["--out", str(root), "--quick", "--no-progress"]) == code
    assert [c[4:] for c in commands] == [[str(buffers.EXPERIMENTS / "quick.toml"), "--out",
                                          str(root / "quick"), "--resume", "--no-progress"]]
    out = capsys.readouterr().out
    assert ("passed: sqrtN - normal" if code == 0 else "FAILED: sqrtN - normal") in out
    report = (root / "report.md").read_text()
    assert "no figure group has run yet" in report and "per-packet drop records" in report
    assert (root / "report" / "quick-drop-scatter.png").exists()


def web_result(run):
    result = quick_result(run, 0.01)
    result["workloads"] = {"web": {**result["workloads"]["p2p"], "drop_rate_by_size": {
        "< 10 KB": size_counts(run.seed, 40), "100 KB-1 MB": size_counts(2 * run.seed, 400)}}}
    return result


def web_transfers(run):
    return [{"kind": "surge", "complete": True, "end": 30.0, "bytes": size, "delay": delay}
            for size, delay in ((5_000, 0.3), (500_000, 2.0))]


def test_web_sections_plot_drop_rate_per_size_next_to_delay_per_size(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    write_study(root / "web", (buffers.EXPERIMENTS / "web.toml").read_text(), web_result,
                transfers_of=web_transfers)
    buffers.write_report(root, tmp_path / "report.md")
    figures = tmp_path / "report"
    assert (figures / "web-sizes.png").exists() and (figures / "web-size-drops.png").exists()
    report = (tmp_path / "report.md").read_text()
    assert "drop rate per size" in report and "(open)" not in report
    part = buffers.load_parts(root)["web"]
    small = part.estimate(buffers.at("normal-unpaced", 100), buffers.drop_pct_in_bin("< 10 KB"))
    assert small.n == 3 and small.mean == pytest.approx(100 * 2 / 40)   # seeds 1, 2, 3
    # every setting drops alike here: sqrtN - normal is 0 in every class that has transfers
    assert ("- Fig. 11: sqrtN - normal (unpaced) drop rate per transfer size at n = 1500 "
            "(thesis: normal unpaced lowest at every size): < 10 KB 0 pp [0, 0] (n = 3): does "
            "not hold; 10-100 KB —: not enough seeds (n < 2);") in report


@pytest.mark.filterwarnings("ignore:No artists")   # plot_estimates draws nothing here
def test_capacity_plots_per_size_keep_each_d_apart(tmp_path, monkeypatch):
    def result_of(run):       # 2 % of small transfers' segments dropped at D = 20 ms, 9 % at 90
        result = web_result(run)
        result["workloads"]["web"]["drop_rate_by_size"] = {
            "< 10 KB": size_counts(buffers.delay_ms(run.scenario) // 10, 100)}
        return result
    root = tmp_path / "s"
    root.mkdir()
    write_study(root / "capacity", (buffers.EXPERIMENTS / "capacity.toml").read_text(), result_of,
                transfers_of=web_transfers)
    drawn = []
    monkeypatch.setattr(buffers, "plot_estimates",
                        lambda ax, points, **style: drawn.extend(e.mean for _, e in points))
    part = buffers.load_parts(root)["capacity"]
    for d in (20, 90):
        drawn.clear()
        buffers.plot_sizes(part, tmp_path, buffers.rate_mbps, "C", "t", f"d{d}",
                           buffers.drop_pct_in_bin, "drop rate (%)", False,
                           lambda s, d=d: buffers.delay_ms(s) == d)
        assert drawn == [pytest.approx(d / 10)] * 12     # 4 settings x 3 capacities


def test_unknown_part_is_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aqmlab", "study", "buffers", "--out",
                          str(tmp_path / "s"), "--parts", "nope"], capture_output=True, text=True)
    assert out.returncode == 2 and not (tmp_path / "s").exists()
    assert out.stderr.strip() == ("aqmlab study buffers: error: --parts: unknown part 'nope' "
                                  f"(parts: {', '.join(buffers.PARTS)})")
