"""Per-workload drops and CE marks at the bottleneck, from the packet
captures R1 (the softswitch) writes with `--pcap` when an experiment sets
`capture = true`.

Each of R1's ports has one pcap file holding both directions. Data packets
(destination: a client) are counted where they enter R1 (the server ports)
and where they leave it (the bottleneck port) inside the measurement window;
a workload is the set of its client hosts' addresses. drops = entered -
left (RED drops and buffer overflow; the error is at most the change in that
workload's queued packets across the window edges), marks = packets that
left with ECN = CE (11)."""

import ipaddress
from collections import Counter
from pathlib import Path

from scapy.utils import RawPcapReader

ETH_HEADER = 14
ETHERTYPE_IPV4 = b"\x08\x00"
CE = 3


def _data_packets(path, clients, window):
    """(client address, ECN field) of the IPv4 frames to a client inside the window."""
    start, end = window
    reader = RawPcapReader(str(path))
    try:
        for frame, meta in reader:
            t = meta.sec + meta.usec / 1e6
            if not start <= t <= end or frame[12:14] != ETHERTYPE_IPV4:
                continue
            destination = frame[ETH_HEADER + 16:ETH_HEADER + 20]
            if destination in clients:
                yield destination, frame[ETH_HEADER + 1] & 3
    finally:
        reader.close()


def workload_packets(pcap_dir, server_ports, bottleneck_port, workload_clients, window):
    """{workload: {entered, left, drops, ce_marked, drop_rate, mark_rate}}.

    workload_clients: {workload: [client IPv4 address, ...]}; window: wall-clock
    seconds (the pcap timestamps are the switch's wall clock)."""
    owner = {ipaddress.IPv4Address(ip).packed: workload
             for workload, ips in workload_clients.items() for ip in ips}
    entered, left, marked = Counter(), Counter(), Counter()
    for port in sorted(set(server_ports)):
        for destination, _ in _data_packets(Path(pcap_dir) / f"port{port}.pcap", owner, window):
            entered[owner[destination]] += 1
    bottleneck = Path(pcap_dir) / f"port{bottleneck_port}.pcap"
    for destination, ecn in _data_packets(bottleneck, owner, window):
        left[owner[destination]] += 1
        marked[owner[destination]] += ecn == CE
    summary = {}
    for workload in workload_clients:
        drops = max(0, entered[workload] - left[workload])
        summary[workload] = {
            "entered": entered[workload], "left": left[workload], "drops": drops,
            "ce_marked": marked[workload],
            "drop_rate": drops / entered[workload] if entered[workload] else 0.0,
            "mark_rate": marked[workload] / entered[workload] if entered[workload] else 0.0}
    return summary
