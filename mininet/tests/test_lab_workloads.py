"""Every workload on a real two-host link (10 Mb/s tbf on the sender), with
the metrics applied to what it recorded."""

import math
import random
import statistics

import pytest

from aqmlab import agent, metrics
from aqmlab.workloads import Run
from labhelpers import direct_link, make_pairs

RATE = 10_000_000
FAST_THINK = {"dist": "uniform", "low": 0.2, "high": 0.4}


def run(lab, seconds, **workload):
    server, client = direct_link(lab, RATE)
    job = Run(lab, make_pairs(server, client, **workload), seconds, seed=7)
    job.wait()
    return job, job.records()


def test_unlimited_bulk_reaches_the_link_rate_and_samples_progress(lab):
    job, records = run(lab, 4, kind="bulk")
    window = (job.epoch + 1, job.epoch + 4)
    goodput = metrics.flow_goodputs(records, window)[("w", "w.0.0")]
    assert 0.85 * RATE < goodput < 1.02 * RATE
    samples = [r for r in records if r["kind"] == "sample"]
    assert len(samples) >= 6
    assert all(b["bytes"] >= a["bytes"] for a, b in zip(samples, samples[1:]))
    summary = metrics.workload_summary(records, window)["w"]
    assert summary["flows"] == 1 and summary["jain_index"] == pytest.approx(1.0)


def test_fixed_size_bulk_repeats_back_to_back_and_records_each_transfer(lab):
    job, records = run(lab, 4, kind="bulk", size="200KB", repeat=True)
    transfers = [r for r in records if r["kind"] == "bulk" and r["complete"]]
    assert len(transfers) >= 10
    assert all(r["bytes"] == 200_000 for r in transfers)
    assert all(b["start"] >= a["end"] for a, b in zip(transfers, transfers[1:]))
    delay = statistics.median(r["end"] - r["start"] for r in transfers)
    assert 200_000 * 8 / RATE < delay < 3 * 200_000 * 8 / RATE


def test_single_fixed_size_transfer_stops_after_one(lab):
    _, records = run(lab, 3, kind="bulk", size="500KB")
    transfers = [r for r in records if r["kind"] == "bulk"]
    assert len(transfers) == 1 and transfers[0]["complete"] and transfers[0]["bytes"] == 500_000


def test_http10_fetches_primary_then_embedded_in_parallel(lab):
    """200 KB objects take >= 160 ms each at 10 Mb/s (320 ms for two sharing the
    link), so fetched in parallel every embedded object starts before any other
    one ends unless a thread starts 0.3 s late (a 50 ms wall-clock margin on
    small objects failed under load); think times are sleeps, so only their
    lower bound is exact."""
    job, records = run(lab, 4, kind="http10", think=FAST_THINK,
                       object_size={"dist": "fixed", "value": 200_000})
    pages = [r for r in records if r["kind"] == "page" and r["complete"]]
    assert len(pages) >= 2, pages
    for page in pages:
        objects = sorted((r for r in records if r["kind"] == "object" and r["page"] == page["page"]),
                         key=lambda r: r["object"])
        assert [o["object"] for o in objects] == [0, 1, 2, 3]
        embedded = objects[1:]
        assert all(o["start"] >= objects[0]["end"] for o in embedded)
        assert max(o["start"] for o in embedded) < min(o["end"] for o in embedded), objects
        assert page["bytes"] == sum(o["bytes"] for o in objects) == 800_000
    gaps = [b["start"] - a["end"] for a, b in zip(pages, pages[1:])]
    assert all(gap >= 0.2 for gap in gaps), gaps
    summary = metrics.workload_summary(records, (job.epoch, job.end))["w"]
    assert summary["delay_kind"] == "page" and summary["delay_s"]["median"] > 0
    assert summary["network_power"] == pytest.approx(
        summary["goodput_bps"] / summary["delay_s"]["median"])


def test_http11_fetches_a_page_on_one_connection(lab):
    _, records = run(lab, 4, kind="http11", think=FAST_THINK)
    pages = [r for r in records if r["kind"] == "page" and r["complete"]]
    assert len(pages) >= 4
    assert all(r["objects"] == 4 and r["bytes"] == r["size"] for r in pages)
    assert not [r for r in records if r["kind"] == "object"]


def test_crr_transactions_per_second(lab):
    """The metric counts transactions that end inside the window; the one a
    connection has in flight at the deadline ends after it and is not counted
    (counting every complete record instead raced with that last one)."""
    job, records = run(lab, 3, kind="crr", size="5KB")
    done = [r for r in records if r["kind"] == "transaction" and r["complete"]]
    assert all(r["bytes"] == 5000 for r in done)
    assert all(r["start"] < job.end for r in done), "no transaction starts after the deadline"
    inside = [r for r in done if job.epoch <= r["end"] <= job.end]
    assert len(done) - len(inside) <= 1, "only the one in flight at the deadline ends after it"
    rate = metrics.transactions_per_second(records, (job.epoch, job.end))
    assert rate == pytest.approx(len(inside) / 3) and rate > 20


def test_surge_transfers_follow_their_idle_times(lab):
    _, records = run(lab, 5, kind="surge", think={"dist": "pareto", "k": 0.1, "alpha": 1.5})
    transfers = [r for r in records if r["kind"] == "surge" and r["complete"]]
    assert len(transfers) >= 3
    assert all(b["start"] - a["end"] >= 0.1 for a, b in zip(transfers, transfers[1:]))


def test_surge_size_distribution():
    """20000 draws; bounds are ~4 standard errors (false alarm < 1e-4)."""
    spec = {"dist": "surge", "mu": 9.357, "sigma": 1.318, "k": 133_000, "alpha": 1.1}
    draw = agent.make_sampler(spec, random.Random(3))
    sizes = [draw() for _ in range(20000)]
    tail_mass = 0.5 * math.erfc((math.log(133_000) - 9.357) / (1.318 * math.sqrt(2)))
    tail = sum(s > 133_000 for s in sizes) / len(sizes)
    assert abs(tail - tail_mass) < 4 * math.sqrt(tail_mass * (1 - tail_mass) / len(sizes))
    median = statistics.median(sizes)
    assert abs(math.log(median) - 9.357) < 0.05
    body = [math.log(s) for s in sizes if s <= 133_000]
    assert max(body) <= math.log(133_000)


def test_pareto_request_interval_distribution():
    draw = agent.make_sampler({"dist": "pareto", "k": 1.0, "alpha": 1.5}, random.Random(5))
    values = [draw() for _ in range(20000)]
    assert min(values) >= 1.0
    # median of Pareto(k, a) is k 2^(1/a); the sample median is within 3%
    assert statistics.median(values) == pytest.approx(2 ** (1 / 1.5), rel=0.03)


def test_iperf3_bulk_records_each_stream_and_reaches_the_link_rate(lab):
    """iperf3's own 0.5 s intervals follow its bursty reads, so the rate is
    checked over each stream's whole transfer."""
    job, records = run(lab, 6, kind="bulk", tool="iperf3", connections=2)
    finals = [r for r in records if r["kind"] == "bulk"]
    assert sorted(r["flow"] for r in finals) == ["w.0.0", "w.0.1"]
    assert all(abs(r["start"] - job.epoch) < 0.5 and r["end"] - r["start"] > 5.5 for r in finals)
    rate = sum(8 * r["bytes"] / (r["end"] - r["start"]) for r in finals)
    assert 0.85 * RATE < rate < 1.0 * RATE
    samples = [r for r in records if r["kind"] == "sample"]
    assert len(samples) >= 20


def test_a_stopped_sender_logs_the_tcp_info_of_flows_still_sending(tmp_path):
    """An unlimited flow still running when the run stops its sender (SIGTERM)
    is logged then: its connection would otherwise never report."""
    import json
    import signal
    import socket
    import subprocess
    import sys
    import time
    ready, log = tmp_path / "ready", tmp_path / "tcp_info.jsonl"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "aqmlab.agent", "serve", "--bind", "127.0.0.1",
                               "--port", str(port), "--ready-file", str(ready), "--log", str(log)])
    try:
        deadline = time.time() + 30
        while not (ready.exists() and ready.read_text()) and time.time() < deadline:
            time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.sendall(f"{agent.UNLIMITED} cross cross.0.0 x\n".encode())
            got = sum(len(conn.recv(65536)) for _ in range(20))
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["kind"], r["workload"], r["flow"]) for r in records] == [("tcp_info", "cross", "cross.0.0")]
    assert got > 0 and records[0]["bytes_acked"] > 0


def test_senders_log_every_connection_once_its_close_arrived(lab):
    """The run stops its senders once their clients' closes have reached them
    (not after a fixed grace): every complete transaction's connection has its
    sender's tcp_info, with all its bytes acknowledged."""
    job, records = run(lab, 2, kind="crr", size="5KB")
    done = [r for r in records if r["kind"] == "transaction" and r["complete"]]
    infos = [r for r in records if r["kind"] == "tcp_info"]
    assert done and all(i["workload"] == "w" for i in infos)
    assert sum(i["bytes_acked"] >= 5000 for i in infos) >= len(done)


def test_clients_launched_past_their_common_start_fail_the_run(lab, monkeypatch):
    """A machine too busy to launch every client before the epoch would give
    the late ones a shorter run and the window a wrong start: refused."""
    from aqmlab import workloads

    server, client = direct_link(lab, RATE)
    monkeypatch.setattr(workloads, "START_LEAD", -0.5)     # the epoch already passed
    with pytest.raises(RuntimeError, match=r"starting 1 client\(s\) took .* past their common "
                                           r"start: the machine is too busy"):
        Run(lab, make_pairs(server, client, kind="bulk"), 2, seed=7)
