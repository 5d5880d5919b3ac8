"""hw/fpga/traces/record.py turns the switch's per-packet trace and port-0
capture into the queue trace the RTL tests replay."""
import importlib.util
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

RECORD = Path(__file__).resolve().parents[1] / "traces" / "record.py"
spec = importlib.util.spec_from_file_location("fpga_trace_record", RECORD)
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)

SENDER, RECEIVER = record.HOSTS[0][0], record.HOSTS[1][0]


def frame(src, dst, ecn):
    return Ether() / IP(src=src, dst=dst, tos=ecn) / UDP() / bytes(100)


def test_enqueues_are_paired_with_their_frames_ecn_and_fifo_wait(tmp_path):
    pcap = tmp_path / "port0.pcap"
    # port 0 sees: data (ECT0), an ACK going back out, data (not-ECT, tail-dropped), data (CE)
    wrpcap(str(pcap), [frame(SENDER, RECEIVER, 2), frame(RECEIVER, SENDER, 0),
                       frame(SENDER, RECEIVER, 0), frame(SENDER, RECEIVER, 3)])
    trace = "\n".join([
        "[softswitch        1.000 ms] port 0 rx 142 bytes",
        "[softswitch        1.000 ms] port 1 enqueue 1250 bytes, enq_qdepth 0",
        "[softswitch        1.200 ms] port 1 tx 142 bytes, 0 us after its due time",
        "[softswitch        1.500 ms] port 0 rx 142 bytes",
        "[softswitch        1.500 ms] port 1 buffer full: tail drop",
        "[softswitch        1.600 ms] port 0 rx 142 bytes",
        "[softswitch        1.600 ms] port 1 enqueue 1250 bytes, enq_qdepth 1",
    ])
    rows = record.parse(trace, pcap)
    # 1250 B at 10 Mb/s = 1000 us on the wire: the second waits until 2000 us
    assert rows == [
        {"enq_timestamp_us": 1000, "enq_qdepth": 0, "ecn": 2, "bytes": 1250, "deq_timedelta_us": 0},
        {"enq_timestamp_us": 1600, "enq_qdepth": 1, "ecn": 3, "bytes": 1250, "deq_timedelta_us": 400},
    ]
