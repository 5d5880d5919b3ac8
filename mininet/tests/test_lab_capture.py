"""Per-workload drops and CE marks from R1's port captures (capture.py), on
pcaps written here with known packets."""

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from aqmlab.capture import workload_packets


def frames(destination, count, t0, ecn=0, source="10.1.0.1"):
    packets = []
    for i in range(count):
        packet = Ether() / IP(src=source, dst=destination, tos=ecn) / TCP() / (b"x" * 100)
        packet.time = t0 + i * 0.01
        packets.append(packet)
    return packets


def test_drops_and_marks_are_counted_per_workload_inside_the_window(tmp_path):
    # server port 1: 10 packets to a's client, 5 to b's, ACKs to the server, and
    # 3 to a's client before the window; bottleneck port 1000: 8 of a's left
    # (2 of them CE-marked, ECT(0) = 2 is not a mark), all 5 of b's
    wrpcap(str(tmp_path / "port1.pcap"),
           frames("10.2.0.9", 3, 50.0) + frames("10.2.0.1", 10, 100.0) +
           frames("10.2.0.2", 5, 100.5) + frames("10.1.0.1", 7, 100.0, source="10.2.0.1"))
    wrpcap(str(tmp_path / "port1000.pcap"),
           frames("10.2.0.1", 6, 100.2, ecn=2) + frames("10.2.0.1", 2, 100.4, ecn=3) +
           frames("10.2.0.2", 5, 100.6, ecn=1) + frames("10.1.0.1", 4, 100.1, source="10.2.0.1"))
    counts = workload_packets(tmp_path, [1], 1000, {"a": ["10.2.0.1", "10.2.0.9"],
                                                    "b": ["10.2.0.2"]}, (99.0, 101.0))
    assert counts["a"] == {"entered": 10, "left": 8, "drops": 2, "ce_marked": 2,
                           "drop_rate": 0.2, "mark_rate": 0.2}
    assert counts["b"] == {"entered": 5, "left": 5, "drops": 0, "ce_marked": 0,
                           "drop_rate": 0.0, "mark_rate": 0.0}
