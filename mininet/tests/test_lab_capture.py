"""Per-workload drops and CE marks from R1's port captures (capture.py), on
pcaps written here with known packets."""

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from aqmlab.capture import workload_packets


def segment(destination, index, t, ecn=0, source="10.1.0.1"):
    packet = Ether() / IP(src=source, dst=destination, tos=ecn, id=index) / \
        TCP(seq=1000 * index) / (b"x" * 100)
    packet.time = t
    return packet


def test_each_entering_packet_is_followed_to_the_bottleneck(tmp_path):
    """a: 10 segments enter inside the window; 8 leave (2 with CE, 3 with
    ECT(0), which is no mark), 2 are dropped; one of those leaving does so
    after the window ends, and still counts as delivered. b: 5 enter, all
    leave. Packets entering before the window, ACKs towards the server and a
    leaving packet that never entered in the window are not counted."""
    entering = [segment("10.2.0.1", i, 100 + 0.01 * i) for i in range(10)] + \
        [segment("10.2.0.2", 100 + i, 100.5) for i in range(5)] + \
        [segment("10.2.0.1", 500 + i, 50.0) for i in range(3)] + \
        [segment("10.1.0.1", 700 + i, 100.2, source="10.2.0.1") for i in range(4)]
    leaving = [segment("10.2.0.1", i, 100.3, ecn=3) for i in (0, 1)] + \
        [segment("10.2.0.1", i, 100.3, ecn=2) for i in (2, 3, 4)] + \
        [segment("10.2.0.1", i, 100.4) for i in (5, 6)] + \
        [segment("10.2.0.1", 9, 102.0)] + \
        [segment("10.2.0.2", 100 + i, 100.6, ecn=1) for i in range(5)] + \
        [segment("10.2.0.1", 500, 100.1), segment("10.1.0.1", 700, 100.2, source="10.2.0.1")]
    wrpcap(str(tmp_path / "port1.pcap"), entering)
    wrpcap(str(tmp_path / "port1000.pcap"), leaving)
    counts = workload_packets(tmp_path, [1], 1000, {"a": ["10.2.0.1", "10.2.0.9"],
                                                    "b": ["10.2.0.2"]}, (99.0, 101.0))
    assert counts["a"] == {"entered": 10, "left": 8, "drops": 2, "ce_marked": 2,
                           "drop_rate": 0.2, "mark_rate": 0.2}
    assert counts["b"] == {"entered": 5, "left": 5, "drops": 0, "ce_marked": 0,
                           "drop_rate": 0.0, "mark_rate": 0.0}
