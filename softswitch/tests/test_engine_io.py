"""The engine on real ports: AF_PACKET on veth pairs between two network
namespaces (prefix ``io``), Linux sockets at both ends, the traffic manager's
rate, buffer, delay and queue metadata. Needs root."""

import hashlib
import os
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP, ICMP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap
from scipy.stats import binom

import softswitch_engine as se

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import iolab  # noqa: E402

pytestmark = pytest.mark.root

UDP_PORT = 5001
# Frame bytes of one test datagram: payload + UDP 8 + IPv4 20 + Ethernet 14.
PAYLOAD = 1000
FRAME_BYTES = PAYLOAD + 42
CPU_PORT = 255
# Slow enough that a whole test burst is queued before the first frame is on
# the wire, even if the sending process is descheduled for tens of ms.
SLOW_BPS = 200_000


@pytest.fixture
def lab():
    with iolab.VethLab() as lab:
        yield lab


#: SOFTSWITCH_RX values: the receive ring (the default) and the recvmmsg path it falls back to.
RX_PATHS = ("ring", "recvmmsg")


@pytest.fixture
def rx_path(request, monkeypatch):
    """The receive path of the switches a test starts: the ring, unless the
    test is parametrised over RX_PATHS (indirect)."""
    path = getattr(request, "param", "ring")
    monkeypatch.setenv("SOFTSWITCH_RX", path)
    return path


@pytest.fixture
def switch(lab, tmp_path, rx_path):
    sw = se.Switch(ports=lab.ports, cpu_port=CPU_PORT, seed=1, pcap_dir=str(tmp_path / "pcap"))
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    sw.start()
    yield sw
    sw.stop()


def udp_burst(lab, count, size=PAYLOAD, timeout=3.0):
    """Sends `count` datagrams A -> B back to back; returns what B received."""
    a, b = lab.hosts["a"], lab.hosts["b"]
    rx = iolab.start_receiver(b, UDP_PORT, count, timeout)
    iolab.send_udp(a, b.ip, UDP_PORT, count, size)
    return iolab.finish_receiver(rx)["received"]


def ping_rtts_ms(lab, count=30, interval=0.02):
    a, b = lab.hosts["a"], lab.hosts["b"]
    out = a.run("ping", "-n", "-c", str(count), "-i", str(interval), "-W", "2", b.ip, check=False).stdout
    return [float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line]


def thread_named(name):
    """Native id of this process's thread called ``name``."""
    for tid in Path("/proc/self/task").iterdir():
        if (tid / "comm").read_text().strip() == name:
            return int(tid.name)
    raise AssertionError(f"no thread {name}")


def test_a_realtime_switch_runs_only_its_packet_thread_in_sched_fifo(lab, capfd):
    sw = se.Switch(ports=lab.ports, seed=1, realtime=7)
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    sw.configure_port(1, rate_bps=2_000_000, buffer_packets=1000)
    sw.start()
    try:
        got = udp_burst(lab, 100)
        packet_thread = thread_named("softswitch-io")
        assert os.sched_getscheduler(packet_thread) == os.SCHED_FIFO
        assert os.sched_getparam(packet_thread).sched_priority == 7
    finally:
        sw.stop()
    assert os.sched_getscheduler(0) == os.SCHED_OTHER, "the caller's thread keeps its scheduler"
    assert "realtime (SCHED_FIFO priority 7)" in capfd.readouterr().err
    assert len(got) == 100


@pytest.mark.parametrize("kwargs", [{"realtime": 100}, {"realtime": -1},
                                    {"realtime": 5, "busy_poll": True}])
def test_a_bad_realtime_priority_is_refused(lab, kwargs):
    with pytest.raises(ValueError, match="realtime"):
        se.Switch(ports=lab.ports, seed=1, **kwargs)


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_udp_crosses_the_switch_with_ttl_decremented(lab, switch):
    got = udp_burst(lab, 20, size=100)
    assert sorted(g["seq"] for g in got) == list(range(20))
    assert {g["ttl"] for g in got} == {63}  # Linux sends with TTL 64; the kernel checked IP and UDP checksums
    stats = switch.port_stats()
    assert stats[0]["rx"] >= 20 and stats[1]["tx"] >= 20


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_pcap_records_both_directions_with_rewritten_headers(lab, switch, tmp_path):
    assert len(ping_rtts_ms(lab, count=3, interval=0.05)) == 3
    switch.stop()  # flushes the captures
    a, b = lab.hosts["a"], lab.hosts["b"]
    port1 = [p for p in rdpcap(str(tmp_path / "pcap" / "port1.pcap")) if ICMP in p]
    requests = [p for p in port1 if p[ICMP].type == 8]
    replies = [p for p in port1 if p[ICMP].type == 0]
    assert len(requests) == 3 and len(replies) == 3  # tx and rx on port 1
    for p in requests:
        assert (p[Ether].src, p[Ether].dst, p[IP].ttl) == (iolab.ROUTER_MAC, b.mac, 63)
        checksum = p[IP].chksum
        del p[IP].chksum
        assert IP(bytes(p[IP]))[IP].chksum == checksum
    port0 = [p for p in rdpcap(str(tmp_path / "pcap" / "port0.pcap")) if ICMP in p]
    assert sum(p[Ether].dst == a.mac for p in port0) == 3


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_tcp_transfer_through_the_switch_is_complete_and_intact(lab, switch):
    a, b = lab.hosts["a"], lab.hosts["b"]
    nbytes = 4 << 20
    rx = iolab.start_receiver(b, 5201, 0, 30.0, mode="tcp-recv")
    iolab.send_tcp(a, b.ip, 5201, nbytes)
    got = iolab.finish_receiver(rx)
    assert got == {"bytes": nbytes, "sha256": hashlib.sha256(iolab.tcp_payload(nbytes)).hexdigest()}


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_start_reports_each_ports_receive_path(lab, rx_path, capfd):
    sw = se.Switch(ports=lab.ports)
    sw.start()
    sw.stop()
    line = next(line for line in capfd.readouterr().err.splitlines() if "packet I/O" in line)
    want = "PACKET_MMAP ring (TPACKET_V2" if rx_path == "ring" else "recvmmsg (SOFTSWITCH_RX=recvmmsg)"
    assert want in line and all(name in line for name in lab.ports.values()), line


def test_line_rate_is_kept_for_a_backlogged_queue(lab, switch):
    rate = 2_000_000  # 300 frames take 1.25 s: a few ms of wake-up jitter at the ends stay < 1%
    switch.configure_port(1, rate_bps=rate, buffer_packets=1000)
    got = udp_burst(lab, 300)
    assert len(got) == 300
    times = [g["t_ns"] for g in got]
    measured = (len(times) - 1) * FRAME_BYTES * 8 / ((times[-1] - times[0]) / 1e9)
    # Departures are scheduled in virtual time: only wake-up jitter at the two ends remains.
    assert measured == pytest.approx(rate, rel=0.02)


def test_a_busy_polling_switch_says_so_and_keeps_the_line_rate(lab, capfd):
    sw = se.Switch(ports=lab.ports, seed=1, busy_poll=True)
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    rate = 2_000_000
    sw.configure_port(1, rate_bps=rate, buffer_packets=1000)
    sw.start()
    try:
        got = udp_burst(lab, 300)
    finally:
        sw.stop()
    assert "busy-polling (the packet thread never sleeps)" in capfd.readouterr().err
    assert len(got) == 300
    times = [g["t_ns"] for g in got]
    assert (len(times) - 1) * FRAME_BYTES * 8 / ((times[-1] - times[0]) / 1e9) == pytest.approx(rate, rel=0.02)


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_full_buffer_tail_drops_and_counts(lab, switch):
    switch.configure_port(1, rate_bps=SLOW_BPS, buffer_packets=10)
    got = udp_burst(lab, 100)
    drops = switch.port_stats()[1]["drops"]
    assert drops > 0
    assert len(got) + drops == 100
    # Tail drop: the first frames of the burst get through, the last are lost.
    assert [g["seq"] for g in got] == list(range(len(got)))


def test_drop_capture_records_exactly_the_tail_dropped_frames(lab, tmp_path):
    sw = se.Switch(ports=lab.ports, cpu_port=CPU_PORT, seed=1, drop_pcap_dir=str(tmp_path / "drops"))
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    sw.start()
    try:
        sw.configure_port(1, rate_bps=SLOW_BPS, buffer_packets=10)
        got = udp_burst(lab, 100)
        drops = sw.port_stats()[1]["drops"]
    finally:
        sw.stop()  # flushes the captures
    dropped = [p for p in rdpcap(str(tmp_path / "drops" / "port1.drops.pcap")) if UDP in p]
    received = {g["seq"] for g in got}
    assert drops > 0 and len(dropped) == drops
    # Each record is a datagram that never arrived: headers only, with the frame's length.
    seqs = [int.from_bytes(bytes(p[UDP].payload)[:4], "big") for p in dropped]
    assert sorted(seqs) == sorted(set(range(100)) - received)
    assert {(len(p), p.wirelen) for p in dropped} == {(128, FRAME_BYTES)}
    assert [p.time for p in dropped] == sorted(p.time for p in dropped)
    assert not (tmp_path / "drops" / "port0.drops.pcap").stat().st_size > 24  # header only


def test_port_stats_account_how_late_frames_went_out(lab, switch):
    switch.configure_port(1, rate_bps=SLOW_BPS, buffer_packets=100)
    got = udp_burst(lab, 20)
    c = switch.port_stats()[1]
    assert c["tx"] >= len(got) == 20
    # Accounting only (how late depends on the machine): a mean within [0, max].
    assert 0 <= c["tx_late_us_total"] <= c["tx"] * c["tx_late_us_max"]
    assert 0 <= c["tx_late_over_1ms"] <= c["tx"]


@pytest.mark.parametrize("rx_path", RX_PATHS, indirect=True)
def test_enq_qdepth_seen_by_the_program_is_the_queue_the_burst_built(lab, switch, tmp_path):
    # Each 1042-byte frame takes 42 ms at SLOW_BPS, far longer than the burst takes to
    # arrive, so frame i finds i-1 frames waiting (frame 0 went straight to the wire).
    switch.configure_port(1, rate_bps=SLOW_BPS, buffer_packets=64)
    n = 30
    got = udp_burst(lab, n)
    switch.stop()
    assert len(got) == n
    frames = [p for p in rdpcap(str(tmp_path / "pcap" / "port1.pcap")) if UDP in p]
    stamped = [p[IP].id for p in frames if p[Ether].src == iolab.ROUTER_MAC]
    assert stamped == [0] + list(range(n - 1))


def test_propagation_and_ingress_delay_show_in_ping_rtt(lab, switch):
    base = min(ping_rtts_ms(lab))
    switch.configure_port(1, delay_us=4000, ingress_delay_us=3000)
    delayed = min(ping_rtts_ms(lab))
    # The 0.2 ms fidelity claim is measured by the benchmark (bench/RESULTS.md). Here the
    # fastest of 30 pings: a busy machine only adds to an RTT, so the minimum keeps the
    # check of "both delays are applied" robust where a median moved by 1.4 ms at load 11.
    assert delayed - base == pytest.approx(7.0, abs=0.5)


def test_priority_queues_serve_higher_priority_first(lab, switch):
    # The fixture program sets priority = IP precedence (diffserv >> 5).
    switch.configure_port(1, rate_bps=SLOW_BPS, buffer_packets=100, prio_queues=8)
    a, b = lab.hosts["a"], lab.hosts["b"]
    rx = iolab.start_receiver(b, UDP_PORT, 25, 3.0)
    iolab.send_udp(a, b.ip, UDP_PORT, 20, PAYLOAD, high=5)
    order = [g["seq"] for g in iolab.finish_receiver(rx)["received"]]
    assert sorted(order) == list(range(20)) + list(range(1000, 1005))
    # Frame 0 was on the wire before the rest arrived; then the 5 precedence-7 frames overtake.
    assert order[:6] == [0, 1000, 1001, 1002, 1003, 1004]


def test_cpu_port_packet_in_and_packet_out(lab, switch):
    a, b = lab.hosts["a"], lab.hosts["b"]
    # Frames for 10.77.0.99 go to the controller.
    switch.table_add("MyIngress.ipv4_lpm", [("lpm", iolab.ip_to_bytes("10.77.0.99"), 32)], "MyIngress.ipv4_forward",
                     [b"\x00" * 6, iolab.mac_to_bytes(iolab.ROUTER_MAC), CPU_PORT.to_bytes(2, "big")])
    a.run("ip", "neigh", "replace", "10.77.0.99", "lladdr", iolab.ROUTER_MAC, "dev", a.ifname, "nud", "permanent")
    iolab.send_udp(a, "10.77.0.99", UDP_PORT, 1, 50)
    frame = switch.poll_packet_in(2.0)
    assert frame is not None and Ether(frame)[IP].dst == "10.77.0.99"
    # A packet-out enters the pipeline as if received on the CPU port and is routed to B.
    rx = iolab.start_receiver(b, UDP_PORT, 1, 3.0)
    switch.packet_out(bytes(Ether(dst=iolab.ROUTER_MAC) / IP(src="10.77.0.1", dst=b.ip)
                            / UDP(sport=9, dport=UDP_PORT) / b"\x00\x00\x00\x07hello"))
    [got] = iolab.finish_receiver(rx)["received"]
    assert got["seq"] == 7


def test_red_ecn_program_carries_tcp_between_the_hosts(lab, tmp_path):
    """p4src/red_ecn.p4 compiled by softswitch-p4c, no RED entry (drop-tail), 10 Mb/s bottleneck."""
    sw = se.Switch(ports=lab.ports, seed=1)
    sw.load_pipeline(iolab.red_ecn_program())
    lab.install_routes(sw)
    sw.configure_port(1, rate_bps=10_000_000, buffer_packets=50)
    sw.start()
    try:
        a, b = lab.hosts["a"], lab.hosts["b"]
        nbytes = 1 << 20
        rx = iolab.start_receiver(b, 5201, 0, 30.0, mode="tcp-recv")
        iolab.send_tcp(a, b.ip, 5201, nbytes)
        got = iolab.finish_receiver(rx)
    finally:
        sw.stop()
    assert got == {"bytes": nbytes, "sha256": hashlib.sha256(iolab.tcp_payload(nbytes)).hexdigest()}
    assert sw.counter_read("MyEgress.port_tx", 1)[0] > nbytes // 1500


def test_trace_logs_every_step_of_a_packet(lab, capfd):
    sw = se.Switch(ports=lab.ports, trace=True)
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    sw.start()
    try:
        assert len(ping_rtts_ms(lab, count=1)) == 1
    finally:
        sw.stop()
    err = capfd.readouterr().err
    for step in ("port 0 rx 98 bytes", "port 1 enqueue 98 bytes, enq_qdepth 0", "port 1 tx 98 bytes",
                 "port 1 rx 98 bytes", "port 0 tx 98 bytes"):
        assert step in err


def test_control_plane_changes_while_packets_flow(lab, switch):
    """Routes are added and removed thousands of times during a UDP stream:
    nothing crashes, and the route that stays in place keeps forwarding."""
    import threading
    stop = threading.Event()

    def churn():
        ip = iolab.ip_to_bytes("10.77.5.0")
        args = [b"\x00" * 6, b"\x00" * 6, b"\x00\x01"]
        while not stop.is_set():
            h = switch.table_add("MyIngress.ipv4_lpm", [("lpm", ip, 24)], "MyIngress.ipv4_forward", args)
            switch.table_delete("MyIngress.ipv4_lpm", h)

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        got = udp_burst(lab, 2000, size=200)
    finally:
        stop.set()
        worker.join()
    assert len(got) == 2000


def test_frames_sent_after_a_pipeline_swap_meet_the_new_program(lab, switch):
    """P4Runtime's COMMIT promises that the next frame meets the new program:
    load_pipeline returns only once the packet thread runs it, so no frame
    sent afterwards is handled by the old program and then flushed with its queues."""
    for _ in range(10):
        switch.load_pipeline(iolab.forward_program())  # a fresh program: no routes until they are installed
        lab.install_routes(switch)
        got = udp_burst(lab, 20, size=100)
        assert sorted(g["seq"] for g in got) == list(range(20))


# Link loss on the wire. Counts are checked against exact two-sided 99.9 %
# binomial intervals (scipy.stats.binom.interval); the switch seed is fixed,
# so the outcome is repeatable up to the frame sequence the port sees.
LOSS_FRAMES = 3000
LOSS_RATE_BPS = 10_000_000  # paced, so the receiver's socket never overflows


def lossy_burst(lab, switch, **loss):
    switch.configure_port(1, rate_bps=LOSS_RATE_BPS, buffer_packets=LOSS_FRAMES + 100, **loss)
    got = udp_burst(lab, LOSS_FRAMES, size=200, timeout=4.0)
    stats = switch.port_stats()[1]
    # Every frame is accounted for: delivered or lost on the wire, none dropped in the queue.
    assert stats["drops"] == 0 and len(got) + stats["lost"] == LOSS_FRAMES
    received = {g["seq"] for g in got}
    return [seq not in received for seq in range(LOSS_FRAMES)]


def assert_in_binomial_interval(hits, n, p):
    low, high = binom.interval(0.999, n, p)
    assert low <= hits <= high, f"{hits} of {n}, 99.9 % interval for p={p}: [{low:.0f}, {high:.0f}]"


def test_random_loss_rate_on_the_wire(lab, switch):
    lost = lossy_burst(lab, switch, loss=0.1)
    assert_in_binomial_interval(sum(lost), LOSS_FRAMES, 0.1)


def test_gilbert_elliott_bursts_on_the_wire(lab, switch):
    # With 1-h = 100 % and 1-k = 0 % a frame is lost exactly in the bad state:
    # a burst starts after a delivered frame with probability p and ends after
    # a lost one with probability r (mean burst length 1/r = 2 frames).
    p, r = 0.05, 0.5
    lost = lossy_burst(lab, switch, loss_gemodel=(p, r, 1.0, 0.0))
    pairs = list(zip(lost, lost[1:]))
    delivered_then = [b for a, b in pairs if not a]
    lost_then = [b for a, b in pairs if a]
    assert_in_binomial_interval(sum(delivered_then), len(delivered_then), p)
    assert_in_binomial_interval(lost_then.count(False), len(lost_then), r)


def test_delay_variation_never_reorders_frames_on_the_wire(lab, switch):
    # Jitter (sd 20 ms) far above the frame spacing (~0.2 ms): without the FIFO
    # rule most neighbours would swap; with it every frame arrives, in order.
    switch.configure_port(1, rate_bps=LOSS_RATE_BPS, buffer_packets=1000, delay_us=30_000,
                          jitter_us=20_000, distribution="normal")
    got = udp_burst(lab, 300, size=200)
    assert [g["seq"] for g in got] == list(range(300))


def test_unknown_delay_distribution_is_refused(switch):
    with pytest.raises(ValueError, match="distribution 'paretonormal'"):
        switch.configure_port(1, delay_us=1000, jitter_us=100, distribution="paretonormal")


def test_a_distribution_table_goes_with_distribution_table_only(switch):
    switch.configure_port(1, delay_us=1000, jitter_us=100, distribution="table",
                          distribution_table=[-1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="distribution 'table' needs distribution_table"):
        switch.configure_port(1, delay_us=1000, jitter_us=100, distribution="table")
    with pytest.raises(ValueError, match="distribution_table needs distribution 'table'"):
        switch.configure_port(1, jitter_us=100, distribution="normal", distribution_table=[0.0])
    with pytest.raises(ValueError, match="1..=16384 finite entries"):
        switch.configure_port(1, jitter_us=100, distribution="table", distribution_table=[])


def test_an_empirical_delay_table_is_drawn_per_frame_on_the_wire(lab, switch):
    # Table [0, 2] x 10 ms jitter on a 30 ms delay: each echo request takes 30 or
    # 50 ms, each half the time; 50 ms between requests keeps the FIFO rule out.
    switch.configure_port(1, delay_us=30_000, jitter_us=10_000, distribution="table",
                          distribution_table=[0.0, 2.0])
    rtts = ping_rtts_ms(lab, count=80, interval=0.05)
    assert len(rtts) == 80 and min(rtts) >= 30.0
    assert_in_binomial_interval(sum(rtt > 40.0 for rtt in rtts), len(rtts), 0.5)


def test_a_glitch_holds_the_link_so_the_queue_fills(lab, switch):
    # Unlimited rate and a 10-frame buffer never drop a 100-frame burst by
    # themselves; a glitch (first one ~0.1 ms in, held 2 s) makes the burst
    # queue behind it and tail-drop, then the queued frames leave after it.
    switch.configure_port(1, buffer_packets=10, glitch_every_us=100, glitch_hold_us=2_000_000)
    got = udp_burst(lab, 100, size=200, timeout=4.0)
    drops = switch.port_stats()[1]["drops"]
    assert drops > 0 and len(got) + drops == 100
    assert [g["seq"] for g in got] == sorted(g["seq"] for g in got)
