"""drops.py: the switch's per-packet drop records (drops.csv rows) and its
timing line, on files written here; the experiment key that turns them on."""

import struct

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from aqmlab.config import ConfigError, parse_experiment
from aqmlab.drops import drop_rows, drop_times, switch_timing
from aqmlab.runner import bottleneck_stats

EPOCH = 1000.0


def segment(t, source, destination, sport, dport, seq, payload=0):
    frame = Ether() / IP(src=source, dst=destination) / TCP(sport=sport, dport=dport, seq=seq)
    if payload:
        frame = frame / Raw(b"x" * payload)
    frame.time = t
    return frame


def test_each_dropped_segment_becomes_a_row_with_its_flow_workload_and_payload(tmp_path):
    frames = [segment(EPOCH + 2.5, "10.1.0.2", "10.2.0.2", 5002, 40000, 7, payload=1448),
              segment(EPOCH + 1.25, "10.1.0.1", "10.2.0.1", 5001, 41000, 3),
              Ether() / IP(src="10.1.0.1", dst="10.2.0.1") / UDP()]   # not TCP: ignored
    frames[2].time = EPOCH + 1.0
    wrpcap(str(tmp_path / "port9.drops.pcap"), frames)
    rows = drop_rows(tmp_path / "port9.drops.pcap", EPOCH,
                     {"10.2.0.1": "paced", "10.2.0.2": "unpaced"})
    assert rows == [
        {"t": pytest.approx(1.25), "flow": "10.1.0.1:5001>10.2.0.1:41000", "workload": "paced",
         "seq": 3, "payload": 0},
        {"t": pytest.approx(2.5), "flow": "10.1.0.2:5002>10.2.0.2:40000", "workload": "unpaced",
         "seq": 7, "payload": 1448}]


def test_payload_comes_from_the_headers_of_a_record_cut_to_128_bytes(tmp_path):
    frame = bytes(segment(0, "10.1.0.1", "10.2.0.1", 5001, 41000, 3, payload=1448))
    # pcap: global header (Ethernet, snaplen 128), one record kept to its first 128 bytes
    (tmp_path / "port9.drops.pcap").write_bytes(
        struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 128, 1)
        + struct.pack("<IIII", int(EPOCH) + 1, 0, 128, len(frame)) + frame[:128])
    [row] = drop_rows(tmp_path / "port9.drops.pcap", EPOCH, {"10.2.0.1": "web"})
    assert row["payload"] == 1448 and row["t"] == pytest.approx(1.0)


def test_no_drop_file_means_no_drops(tmp_path):
    assert drop_rows(tmp_path / "port1.drops.pcap", EPOCH, {}) == []


def test_overflow_drops_are_the_recorded_tail_drops_between_the_snapshots(tmp_path):
    """Every protocol counts, and only drops between the two counter reads; the
    servers' packet counts (which lag the switch's) no longer enter them."""
    frames = [segment(EPOCH + t, "10.1.0.1", "10.2.0.1", 5001, 41000, 1) for t in (0.5, 1.5, 2.5)]
    frames.append(Ether() / IP(src="10.1.0.1", dst="10.2.0.1") / UDP())
    frames[-1].time = EPOCH + 2.0
    wrpcap(str(tmp_path / "port2.drops.pcap"), frames)
    times = drop_times(tmp_path / "port2.drops.pcap")
    assert times == pytest.approx([EPOCH + 0.5, EPOCH + 1.5, EPOCH + 2.5, EPOCH + 2.0])
    counters = {"packets": 0, "bytes": 0, "early_marks": 0, "early_drops": 0, "forced_drops": 0}
    before = {**counters, "server_tx_packets": 0, "time": EPOCH + 1.0}
    after = {**counters, "packets": 90, "bytes": 135000, "early_drops": 4,
             "server_tx_packets": 150, "time": EPOCH + 3.0}
    exact = bottleneck_stats(before, after, 10e6, times)
    assert exact["overflow_drops"] == 3 and exact["drop_rate"] == pytest.approx(7 / 150)
    assert exact["overflow_drops_from"] == "tail-drop records"
    estimate = bottleneck_stats(before, after, 10e6)
    assert estimate["overflow_drops"] == 150 - 90 - 4 and estimate["overflow_drops_from"] == "estimate"
    assert drop_times(tmp_path / "none.drops.pcap") == []


def test_timing_line_of_one_port(tmp_path):
    log = tmp_path / "s1.log"
    log.write_text("softswitch: P4Runtime on 127.0.0.1:1\n"
                   "softswitch: port 1 timing: 10 frames sent, 3.5 us late on average, max 40 us,"
                   " 0 more than 1 ms late\n"
                   "softswitch: port 1000 timing: 99 frames sent, 12.0 us late on average, max "
                   "1500 us, 2 more than 1 ms late\n"
                   "softswitch: cpu: 12.5 s over 50.0 s\n")
    assert switch_timing(log, 1000) == {"frames": 99, "late_us_mean": 12.0, "late_us_max": 1500,
                                        "late_over_1ms": 2, "cpu_share": 0.25}
    assert switch_timing(log, 7) is None
    assert switch_timing(tmp_path / "missing.log", 1) is None


def test_drop_records_key_needs_the_softswitch():
    base = {"name": "t", "workload": [{"kind": "bulk"}]}
    assert parse_experiment({**base, "drop_records": True}).drop_records
    assert not parse_experiment(base).drop_records
    with pytest.raises(ConfigError, match="drop_records: needs target"):
        parse_experiment({**base, "drop_records": True, "target": "bmv2"})
    with pytest.raises(ConfigError, match="drop_records"):
        parse_experiment({**base, "drop_records": "yes"})
