"""The switch's own per-packet drop records and timing error, for a run folder.

With `drop_records = true` R1 runs with `softswitch --pcap-drops DIR`: every
frame its queues tail-drop (buffer overflow) is written, headers only, at its
drop time to DIR/port<N>.drops.pcap. `drop_rows` turns the bottleneck port's
file into drops.csv rows: time after the run's epoch, the TCP flow
(sender:port>receiver:port), its workload, sequence number and payload
length (0: a segment without data, e.g. SYN-ACK or FIN).

The softswitch records them in every run (`drop_times`): they are the exact
count of the bottleneck's overflow drops between the counter snapshots, which
the counters alone can only estimate (runner.bottleneck_stats).

`switch_timing` reads the per-port timing line the softswitch prints when it
stops (how late frames went out against their due time)."""

import ipaddress
import re
from pathlib import Path

from scapy.utils import RawPcapReader

ETH_HEADER = 14
ETHERTYPE_IPV4 = b"\x08\x00"
TCP_PROTOCOL = 6
DROP_FIELDS = ("t", "flow", "workload", "seq", "payload")
TIMING = re.compile(r"softswitch: port (\d+) timing: (\d+) frames sent, ([\d.]+) us late on "
                    r"average, max (\d+) us, (\d+) more than 1 ms late")
CPU = re.compile(r"softswitch: cpu: ([\d.]+) s over ([\d.]+) s")


def drop_times(pcap_path):
    """Wall-clock time of every frame in a drops pcap (any protocol)."""
    path = Path(pcap_path)
    if not path.exists():
        return []
    reader = RawPcapReader(str(path))
    try:
        return [meta.sec + meta.usec / 1e6 for _, meta in reader]
    finally:
        reader.close()


def drop_rows(pcap_path, epoch, workload_of_client):
    """[{t, flow, workload, seq, payload}] of the TCP segments in a drops pcap,
    oldest first. workload_of_client: {client IPv4 text: workload name}. The
    payload length comes from the IP and TCP headers (the record keeps only
    the frame's first bytes)."""
    path = Path(pcap_path)
    if not path.exists():
        return []
    owner = {ipaddress.IPv4Address(ip).packed: w for ip, w in workload_of_client.items()}
    rows = []
    reader = RawPcapReader(str(path))
    try:
        for frame, meta in reader:
            if frame[12:14] != ETHERTYPE_IPV4 or frame[ETH_HEADER + 9] != TCP_PROTOCOL:
                continue
            ip = frame[ETH_HEADER:]
            ip_header = 4 * (ip[0] & 0x0F)
            tcp = ip[ip_header:]
            source, destination = ip[12:16], ip[16:20]
            rows.append({
                "t": meta.sec + meta.usec / 1e6 - epoch,
                "flow": f"{ipaddress.IPv4Address(source)}:{int.from_bytes(tcp[0:2], 'big')}>"
                        f"{ipaddress.IPv4Address(destination)}:{int.from_bytes(tcp[2:4], 'big')}",
                "workload": owner.get(destination, owner.get(source, "")),
                "seq": int.from_bytes(tcp[4:8], "big"),
                "payload": int.from_bytes(ip[2:4], "big") - ip_header - 4 * (tcp[12] >> 4)})
    finally:
        reader.close()
    return sorted(rows, key=lambda r: r["t"])


def switch_timing(log_path, port):
    """{frames, late_us_mean, late_us_max, late_over_1ms, cpu_share} of one
    port from a softswitch log (cpu_share: the switch process's CPU seconds
    per second of its life), or None if the switch did not print it (killed,
    or BMv2)."""
    path = Path(log_path)
    if not path.exists():
        return None
    text = path.read_text(errors="replace")
    cpu = CPU.search(text)
    for match in TIMING.finditer(text):
        if int(match.group(1)) == port:
            return {"frames": int(match.group(2)), "late_us_mean": float(match.group(3)),
                    "late_us_max": int(match.group(4)), "late_over_1ms": int(match.group(5)),
                    "cpu_share": (float(cpu.group(1)) / float(cpu.group(2))
                                  if cpu and float(cpu.group(2)) > 0 else None)}
    return None
