"""Per-workload drops and CE marks at the bottleneck, from the packet
captures R1 (the softswitch) writes with `--pcap` when an experiment sets
`capture = true`.

Each of R1's ports has one pcap file holding both directions. Every data
packet (destination: a client) that enters R1 from a server inside the
window of the port counters' two snapshots (so that the workloads' drops and
marks add up to the port's) is looked for among the packets leaving on the bottleneck
port (at any time), by its IPv4 identification, addresses and TCP sequence
number: one that never leaves was dropped (RED or buffer overflow), one that
leaves with ECN = CE (11) was marked. A workload is the set of its client
hosts' addresses."""

import ipaddress
from collections import Counter
from pathlib import Path

from scapy.utils import RawPcapReader

ETH_HEADER = 14
ETHERTYPE_IPV4 = b"\x08\x00"
CE = 3


def _data_packets(path, clients, window=None):
    """(client address, packet key, ECN field) of the IPv4 frames to a client
    (inside the window, if given). key = IP id, addresses, TCP sequence number:
    unique per packet (Linux gives each segment sent a new IP id)."""
    reader = RawPcapReader(str(path))
    try:
        for frame, meta in reader:
            if frame[12:14] != ETHERTYPE_IPV4:
                continue
            if window and not window[0] <= meta.sec + meta.usec / 1e6 <= window[1]:
                continue
            destination = frame[ETH_HEADER + 16:ETH_HEADER + 20]
            if destination in clients:
                yield destination, _key(frame), frame[ETH_HEADER + 1] & 3
    finally:
        reader.close()


def _key(frame):
    tcp = ETH_HEADER + 4 * (frame[ETH_HEADER] & 0x0F)
    ip_id, addresses = frame[ETH_HEADER + 4:ETH_HEADER + 6], frame[ETH_HEADER + 12:ETH_HEADER + 20]
    return ip_id + addresses + frame[tcp + 4:tcp + 8]


def workload_packets(pcap_dir, server_ports, bottleneck_port, workload_clients, window):
    """{workload: {entered, left, drops, ce_marked, drop_rate, mark_rate}} over
    the packets that entered inside the window.

    workload_clients: {workload: [client IPv4 address, ...]}; window: wall-clock
    seconds (the pcap timestamps are the switch's wall clock)."""
    owner = {ipaddress.IPv4Address(ip).packed: workload
             for workload, ips in workload_clients.items() for ip in ips}
    entered = {}
    for port in sorted(set(server_ports)):
        for destination, key, _ in _data_packets(Path(pcap_dir) / f"port{port}.pcap", owner,
                                                 window):
            entered[key] = owner[destination]
    left = {key: ecn for _, key, ecn in
            _data_packets(Path(pcap_dir) / f"port{bottleneck_port}.pcap", owner)}
    counts = {w: Counter() for w in workload_clients}
    for key, workload in entered.items():
        counts[workload]["entered"] += 1
        if key in left:
            counts[workload]["left"] += 1
            counts[workload]["ce_marked"] += left[key] == CE
    summary = {}
    for workload, c in counts.items():
        drops = c["entered"] - c["left"]
        summary[workload] = {
            "entered": c["entered"], "left": c["left"], "drops": drops,
            "ce_marked": c["ce_marked"],
            "drop_rate": drops / c["entered"] if c["entered"] else 0.0,
            "mark_rate": c["ce_marked"] / c["entered"] if c["entered"] else 0.0}
    return summary
