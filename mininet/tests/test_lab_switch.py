"""The lab through the P4 switch (softswitch + build/red_ecn.*): link
emulation, forwarding, RED marking/dropping, drop-tail, telemetry and the
counter-based metrics."""

import json
import re

import pytest
import tomli_w

from aqmlab import metrics
from aqmlab.config import load_experiment, parse_experiment
from aqmlab.report import build_report
from aqmlab.runner import run_study
from aqmlab.study import expand, prepare_study_folder
from aqmlab.topology import build
from aqmlab.workloads import Run
from labhelpers import leftovers

LINKS = {"bottleneck": {"rate": "10mbit", "delay": "5ms", "buffer": 100},
         "server_access": {"rate": "100mbit", "delay": "1ms"},
         "client_access": {"rate": "100mbit", "delay": "1ms"}}
CONFIGURED_RTT_MS = 2 * (1 + 5 + 1)


def scenario(**extra):
    return parse_experiment({"name": "t", "topology": LINKS, **extra}).scenarios[0]


def test_ping_rtt_is_the_configured_rtt_and_one_flow_fills_the_link(lab):
    network = build(scenario(workload=[{"kind": "bulk"}], aqm={"mode": "droptail"}),
                    "softswitch", lab)
    try:
        client, server = network.clients[0], network.servers[0]
        out = client.host.cmd(f"ping -c 5 -i 0.2 -s 16 {server.ip}")
        rtt_min = float(re.search(r"= ([\d.]+)/", out).group(1))
        assert abs(rtt_min - CONFIGURED_RTT_MS) < 0.5, out
        job = Run(lab, network.pairs, 4, seed=1)
        job.wait()
        goodputs = metrics.flow_goodputs(job.records(), (job.epoch + 1, job.end))
        assert 0.85 * 10e6 < sum(goodputs.values()) < 10e6
    finally:
        network.close_controllers()


@pytest.fixture(scope="module")
def red_results(tmp_path_factory):
    """One experiment, three scenarios: ECN flows, non-ECN flows through RED,
    and non-ECN flows through a short drop-tail buffer."""
    folder = tmp_path_factory.mktemp("red")
    spec = {"name": "red-check", "duration": 6, "warmup": 1, "topology": LINKS, "capture": True,
            "aqm": {"mode": "red", "minth": 5, "maxth": 15, "maxp": 0.2, "wq_log": 6},
            "workload": [{"name": "bulk", "kind": "bulk", "pairs": 2}],
            "scenario": [
                {"name": "ecn", "tcp": {"ecn": True}},
                {"name": "drop", "tcp": {"ecn": False}},
                {"name": "droptail", "aqm": {"mode": "droptail"},
                 "topology": {"bottleneck": {"buffer": 8}}}]}
    path = folder / "red.toml"
    path.write_text(tomli_w.dumps(spec))
    experiment = load_experiment(path)
    outdir = folder / "results"
    prepare_study_folder(outdir, path.read_text(), quick=False, owner=True)
    outcome = run_study(experiment, path, outdir, expand(experiment), show_progress=False)
    assert outcome == {"p00-r0": None, "p01-r0": None, "p02-r0": None}
    build_report(outdir)
    results = [json.loads(p.read_text()) for p in sorted(outdir.glob("*/result.json"))]
    return outdir, {r["scenario"]: r for r in results}


def test_ecn_flows_are_marked_not_dropped(red_results):
    bottleneck = red_results[1]["ecn"]["bottleneck"]
    assert bottleneck["early_marks"] > 0 and bottleneck["early_drops"] == 0
    assert bottleneck["mark_rate"] == pytest.approx(bottleneck["early_marks"] / bottleneck["arrivals"])


def test_non_ecn_flows_are_dropped_not_marked(red_results):
    bottleneck = red_results[1]["drop"]["bottleneck"]
    assert bottleneck["early_marks"] == 0 and bottleneck["early_drops"] > 0
    assert bottleneck["drop_rate"] > 0


def test_droptail_drops_only_on_overflow(red_results):
    bottleneck = red_results[1]["droptail"]["bottleneck"]
    assert bottleneck["early_marks"] == bottleneck["early_drops"] == bottleneck["forced_drops"] == 0
    assert bottleneck["overflow_drops"] > 0
    assert red_results[1]["droptail"]["queue"]["qdepth_max"] <= 8


def test_goodput_utilisation_and_fairness(red_results):
    for result in red_results[1].values():
        summary = result["workloads"]["bulk"]
        assert 6e6 < summary["goodput_bps"] <= 10e6
        assert 0.7 < result["bottleneck"]["utilisation"] <= 1.05
        assert summary["jain_index"] > 0.7


def test_red_keeps_the_average_queue_between_the_thresholds(red_results):
    queue = red_results[1]["ecn"]["queue"]
    assert queue["samples"] > 100
    assert 2 < queue["avg_mean"] < 20
    # the run keeps its time in the region itself; a drop-tail run has no region
    assert sum(queue["red_region"].values()) == pytest.approx(1.0)
    assert "red_region" not in red_results[1]["droptail"]["queue"]


def test_senders_tcp_info_attributes_marks_and_losses_to_flows(red_results):
    """ECN flows see ECE-acknowledged segments and (almost) no retransmissions;
    dropped non-ECN flows retransmit and never see ECE."""
    ecn, drop = red_results[1]["ecn"], red_results[1]["drop"]
    assert set(ecn["flow_stats"]) == set(ecn["goodputs"]) == {"bulk/bulk.0.0", "bulk/bulk.1.0"}
    assert all(s["ece_acked"] > 0 and s["connections"] == 1 for s in ecn["flow_stats"].values())
    assert all(s["retransmits"] > 0 and s["ece_acked"] == 0 for s in drop["flow_stats"].values())
    ratio = {name: r["workloads"]["bulk"]["retransmit_ratio"] for name, r in
             (("ecn", ecn), ("drop", drop))}
    assert ratio["ecn"] < ratio["drop"]
    for result in (ecn, drop):
        # smoothed RTT: the 14 ms path plus queueing, below the 100-packet buffer's 120 ms
        assert 14 <= result["workloads"]["bulk"]["rtt_ms"] < 14 + 120


def test_captures_attribute_the_ports_marks_and_drops_to_the_workload(red_results):
    """One workload: its pcap-counted marks and drops are the port's counters
    (up to the few packets the two windows' edges see differently)."""
    for name in ("ecn", "drop", "droptail"):
        b, w = red_results[1][name]["bottleneck"], red_results[1][name]["workloads"]["bulk"]
        port_drops = b["early_drops"] + b["forced_drops"] + b["overflow_drops"]
        assert abs(w["ce_marked"] - b["early_marks"]) <= 0.1 * b["early_marks"] + 10, name
        assert abs(w["drops"] - port_drops) <= 0.1 * port_drops + 10, name
        assert abs(w["entered"] - b["arrivals"]) <= 0.05 * b["arrivals"], name
    assert red_results[1]["ecn"]["workloads"]["bulk"]["ce_marked"] > 0
    assert red_results[1]["drop"]["workloads"]["bulk"]["ce_marked"] == 0
    outdir = red_results[0]
    assert not list(outdir.glob("*/lab/pcap")), "captures are removed once counted"


def test_queue_delay_and_time_average(red_results):
    """Queueing delay = depth x 1.2 ms at 10 Mb/s; drop-tail with 8 packets
    never queues more than 8 x 1.2 ms."""
    for result in red_results[1].values():
        queue = result["queue"]
        assert 0 <= queue["delay_ms_p50"] <= queue["delay_ms_p90"] <= queue["delay_ms_p99"]
        assert 0 < queue["qdepth_time_avg"] <= queue["qdepth_max"]
    assert red_results[1]["droptail"]["queue"]["delay_ms_p99"] <= 8 * 1.2 + 1e-9


def test_results_folder_and_cleanup(red_results):
    outdir, _ = red_results
    for name in ("report.md", "summary.csv", "summary.json", "study.json", "goodput.png",
                 "queue_delay.png", "experiment.toml", "p00-r0/transfers.csv", "p00-r0/run.json",
                 "p00-r0/result.json", "p00-r0/queue.csv", "p00-r0/queue.png", "p00-r0/flows.csv",
                 "p00-r0/complete"):
        assert (outdir / name).exists(), name
    assert not (outdir / "delays.png").exists(), "bulk-only studies have no delay plot"
    report = (outdir / "report.md").read_text()
    assert "nan" not in report and "ECN vs non-ECN (ecn vs drop)" in report
    tags = {p.name[:3] for p in outdir.glob("*/lab/l*s1.log")}
    assert len(tags) == 3
    for tag in tags:
        assert leftovers(tag) == []


def test_maximum_window_caps_goodput_at_window_over_rtt(lab):
    """window_clamp = 4 packets on a 14 ms path: goodput <= 4 x 1448 B / RTT
    (without the clamp this flow reaches ~9.5 Mb/s, see the test above)."""
    clamp = 4
    network = build(scenario(workload=[{"kind": "bulk", "tcp": {"window_clamp": clamp}}],
                             aqm={"mode": "droptail"}), "softswitch", lab)
    try:
        job = Run(lab, network.pairs, 4, seed=1)
        job.wait()
        goodput = sum(metrics.flow_goodputs(job.records(), (job.epoch + 1, job.end)).values())
        ceiling = clamp * 1448 * 8 / (CONFIGURED_RTT_MS / 1000)
        assert 0.5 * ceiling < goodput < 1.02 * ceiling
    finally:
        network.close_controllers()


def test_a_switch_that_exits_at_start_fails_the_build_naming_its_log(lab, monkeypatch):
    """Both switches start side by side; the one that exits is named by its log."""
    from aqmlab.p4switch import SoftSwitch

    command_line = SoftSwitch.command_line
    monkeypatch.setattr(SoftSwitch, "command_line", lambda switch: command_line(switch) + (
        ["--no-such-option"] if switch.name == f"{lab.tag}s2" else []))
    with pytest.raises(RuntimeError, match=rf"switch exited with code \d+; log \S*{lab.tag}s2\.log"):
        build(scenario(workload=[{"kind": "bulk"}]), "softswitch", lab)


def test_the_packet_thread_is_realtime_only_behind_a_slow_bottleneck():
    """SCHED_FIFO where the slowest shaped port (the bottleneck, which bounds
    the switch's packets) is at most 10 Mb/s: the 1.5 Mb/s studies, RFC 889's
    slow lines behind 10 Gb/s access links; at 100 Mb/s the thread needs most
    of a core and must share it."""
    from aqmlab.p4switch import SWITCH_PRIORITY, PortQueue, packet_thread_priority

    rfc2415 = {1: PortQueue(rate_bps=1_500_000), 2: PortQueue(rate_bps=10_000_000), 3: PortQueue()}
    assert packet_thread_priority(rfc2415) == SWITCH_PRIORITY
    assert packet_thread_priority({1: PortQueue(rate_bps=268_000),
                                   2: PortQueue(rate_bps=10_000_000_000)}) == SWITCH_PRIORITY
    assert packet_thread_priority({1: PortQueue(rate_bps=100_000_000), 2: PortQueue()}) == 0
    assert packet_thread_priority({1: PortQueue()}) == SWITCH_PRIORITY
