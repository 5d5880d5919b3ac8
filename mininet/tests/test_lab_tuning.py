"""Per-host TCP tuning, checked in the namespaces and on live sockets (ss)."""

import re
import time

import pytest

from aqmlab.config import parse_experiment
from aqmlab.topology import build
from aqmlab.tuning import TcpTuning, read_sysctl
from aqmlab.workloads import Run, prime_window_clamps, start_servers
from labhelpers import direct_link, make_pairs

TUNED = TcpTuning(ecn=True, cc="bbr", sack=False, initcwnd=4, initrwnd=8, mss=536,
                  pacing=True, window_clamp=6, rmem=500_000, wmem=400_000)


def sender_socket_info(server, job, port=5001):
    """`ss -tie` of the sender's established data socket, from one second into
    the run, polled until it shows (an agent started late under load has none
    yet at a fixed time)."""
    time.sleep(max(0.0, job.epoch + 1.0 - time.time()))
    while True:
        out = server.host.cmd(f"ss -tie state established '( sport = :{port} )' 2>/dev/null")
        if "cwnd:" in out or time.time() > job.end:
            return " ".join(out.split())
        time.sleep(0.05)


def test_namespace_sysctls_and_route_options(lab):
    server, client = direct_link(lab, tuning=TUNED)
    for endpoint in (server, client):
        host = endpoint.host
        assert read_sysctl(host, "net.ipv4.tcp_ecn") == "1"
        assert read_sysctl(host, "net.ipv4.tcp_sack") == "0"
        assert read_sysctl(host, "net.ipv4.tcp_tso_rtt_log") == "0"
        assert read_sysctl(host, "net.ipv4.tcp_min_tso_segs") == "1"
        assert read_sysctl(host, "net.ipv4.tcp_rmem").split()[-1] == "500000"
        assert read_sysctl(host, "net.ipv4.tcp_wmem").split()[-1] == "400000"
        route = host.cmd("ip route show 10.9.0.0/24")
        assert "initcwnd 4" in route and "initrwnd 8" in route and "advmss 536" in route
        assert "cwnd lock 6" in route
    assert read_sysctl(server.host, "net.ipv4.tcp_no_metrics_save") == "0"


def test_defaults_do_not_request_ecn_but_accept_it(lab):
    server, _ = direct_link(lab)
    assert read_sysctl(server.host, "net.ipv4.tcp_ecn") == "2"
    assert read_sysctl(server.host, "net.ipv4.tcp_sack") == "1"


def test_live_socket_has_ecn_cc_mss_pacing_and_maximum_window(lab):
    server, client = direct_link(lab, rate_bps=2_000_000, tuning=TUNED)
    job = Run(lab, make_pairs(server, client, kind="bulk"), 3, seed=1)
    info = sender_socket_info(server, job)
    job.wait()
    assert " ecn " in f" {info} " and " bbr " in f" {info} " and " sack " not in f" {info} "
    assert int(re.search(r" mss:(\d+)", info).group(1)) <= 536
    # pacing_rate CURRENT/MAX appears only when SO_MAX_PACING_RATE is set
    assert re.search(r"pacing_rate \S+/\S+", info)
    assert 1 <= int(re.search(r" cwnd:(\d+)", info).group(1)) <= 6


def test_unpaced_default_socket(lab):
    server, client = direct_link(lab, rate_bps=2_000_000)
    job = Run(lab, make_pairs(server, client, kind="bulk"), 2, seed=1)
    info = sender_socket_info(server, job)
    job.wait()
    assert " reno " in f" {info} " and " ecn " not in f" {info} " and " sack " in f" {info} "
    assert not re.search(r"pacing_rate \S+/\S+", info)


@pytest.mark.parametrize("kind", ["dumbbell", "rfc2884"])
def test_priming_pairs_at_once_seeds_every_senders_metrics_cache(lab, kind):
    """All pairs prime together (one server per pair, or one shared server):
    each sender's cache holds its client's locked cwnd, and the priming
    connections leave no tcp_info records."""
    scenario = parse_experiment({
        "name": "prime", "topology": {"kind": kind}, "aqm": {"mode": "droptail"},
        "workload": [{"name": "a", "kind": "bulk", "pairs": 4, "tcp": {"window_clamp": 7}},
                     {"name": "b", "kind": "bulk", "pairs": 2, "tcp": {"window_clamp": 9}}],
    }).scenarios[0]
    network = build(scenario, "softswitch", lab)
    start_servers(lab, network.pairs)
    prime_window_clamps(network.pairs, network.prime_spacing_s())
    for pair in network.pairs:
        cached = pair.server.host.cmd(f"ip tcp_metrics show {pair.client.ip}")
        assert re.search(rf"\bcwnd {pair.workload.tcp.window_clamp}\b", cached), \
            (pair.workload.name, pair.index, cached)
    assert not any(path.read_text() for path in lab.workdir.glob("tcpinfo-*.jsonl"))
