"""Record a queue trace from a small real lab run, for the RTL trace replay.

Two network namespaces (sender, receiver) joined by the built-in softswitch
running p4src/red_ecn.p4; port 1 is a 10 Mb/s, 100-packet bottleneck with RED
(minth 5, maxth 15, maxp 0.1, wq 2^-4, ECN) set by redctl. Two ECN-capable
Reno/CUBIC iperf3 TCP flows and one unresponsive, not-ECT UDP flow share it
for a few seconds. The switch's per-packet trace (--log-console) gives every
packet's enqueue time and enq_qdepth on port 1; its pcap of port 0 gives the
packet's ECN field.

Written columns (CSV, one row per packet that reached the bottleneck queue):
enq_timestamp_us, enq_qdepth, deq_timedelta_us, ecn, bytes. deq_timedelta is
the packet's wait in the FIFO at the port rate (the trace has no dequeue
line): dequeue_i = max(enq_i, dequeue_{i-1} + 8 * bytes_{i-1} / rate).

Needs root. Usage: python hw/fpga/traces/record.py OUT.csv [--seconds 3]
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scapy.layers.inet import IP
from scapy.utils import PcapReader

from redctl import Controller, PortSpec, RedConfig
from softswitch_server import netlab

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
TAG = f"fx{os.getpid() % 10000}"
RATE_BPS = 10_000_000
RED = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=4, ecn=True)
HOSTS = {0: ("10.79.0.1", "02:00:00:00:02:00"), 1: ("10.79.1.1", "02:00:00:00:02:01")}
SWITCH_MAC = {0: "02:00:00:00:03:00", 1: "02:00:00:00:03:01"}
ENQUEUE = re.compile(r"\[softswitch\s+([\d.]+) ms\] port 1 enqueue (\d+) bytes, enq_qdepth (\d+)")
RX0 = re.compile(r"\[softswitch\s+[\d.]+ ms\] port 0 rx \d+ bytes")
TAIL_DROP = re.compile(r"\[softswitch\s+[\d.]+ ms\] port 1 buffer full")


def lab():
    """Namespaces h0/h1 with one veth each into the root namespace (the switch's ports)."""
    parts = [netlab.Namespace(f"{TAG}h{p}") for p in HOSTS]
    parts += [netlab.VethPair(f"{TAG}s{p}", f"{TAG}p{p}", peer_ns=f"{TAG}h{p}", peer_rename="eth0")
              for p in HOSTS]
    return parts


def configure_hosts():
    for p, (ip, mac) in HOSTS.items():
        other_ip, _ = HOSTS[1 - p]
        ns = netlab.Namespace(f"{TAG}h{p}")
        ns.run("ip", "link", "set", "eth0", "address", mac)
        ns.run("ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        ns.run("ip", "route", "add", f"{other_ip}/32", "dev", "eth0")
        ns.run("ip", "neigh", "replace", other_ip, "lladdr", SWITCH_MAC[p], "dev", "eth0")
        ns.run("sysctl", "-qw", "net.ipv4.tcp_ecn=1")


def run_traffic(seconds: float):
    """iperf3: two ECN TCP flows and a 3 Mb/s not-ECT UDP flow, host 0 -> host 1."""
    h0, h1 = netlab.Namespace(f"{TAG}h0"), netlab.Namespace(f"{TAG}h1")
    servers = [h1.popen("iperf3", "-s", "-1", "-p", str(5201 + i), stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL) for i in range(3)]
    time.sleep(0.5)
    dst = HOSTS[1][0]
    clients = [h0.popen("iperf3", "-c", dst, "-p", str(5201 + i), "-t", str(seconds), *extra,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for i, extra in enumerate([["-C", "reno"], ["-C", "cubic"], ["-u", "-b", "3M"]])]
    for c in clients:
        c.wait(timeout=seconds + 20)
    for s in servers:
        netlab.stop(s)


def parse(trace: str, pcap: Path) -> list[dict]:
    """Pair each port-1 enqueue with its frame's ECN field (port-0 rx order)."""
    ecns = [pkt[IP].tos & 3 for pkt in PcapReader(str(pcap))
            if IP in pkt and pkt[IP].dst == HOSTS[1][0]]
    rows, rx = [], -1
    for line in trace.splitlines():
        if RX0.search(line):
            rx += 1
        elif m := ENQUEUE.search(line):
            rows.append({"enq_timestamp_us": round(float(m[1]) * 1000),
                         "enq_qdepth": int(m[3]), "ecn": ecns[rx], "bytes": int(m[2])})
    dequeue = 0.0
    for i, r in enumerate(rows):
        start = max(r["enq_timestamp_us"], dequeue)
        r["deq_timedelta_us"] = round(start - r["enq_timestamp_us"])
        dequeue = start + 8 * r["bytes"] / RATE_BPS * 1e6
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="record a bottleneck queue trace")
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fpga-trace-"))
    parts, proc = lab(), None
    try:
        for part in parts:
            part.create()
        configure_hosts()
        address = "127.0.0.1:50719"
        log = open(work / "switch.log", "w")
        proc = subprocess.Popen(
            [str(BIN / "softswitch"), "-i", f"0@{TAG}s0", "-i", f"1@{TAG}s1",
             "--grpc-server-addr", address, "--tm", f"1:rate={RATE_BPS // 1_000_000}mbit,buffer=100",
             "--seed", "1", "--log-console", "--pcap", str(work)],
            stdout=subprocess.DEVNULL, stderr=log)
        from redctl.controller import wait_for_server
        wait_for_server(address, timeout_s=20)
        ctl = Controller(address, ports={0: PortSpec(), 1: PortSpec(buffer_packets=100)})
        subprocess.run([str(BIN / "softswitch-p4c"), str(ROOT / "p4src/red_ecn.p4"), "-o", str(work),
                        "--p4runtime-files", str(work / "red_ecn.p4info.txtpb")], check=True)
        ctl.push_pipeline(str(work / "red_ecn.p4info.txtpb"), str(work / "red_ecn.json"))
        for p, (ip, mac) in HOSTS.items():
            ctl.add_route(f"{ip}/32", p, dst_mac=mac, src_mac=SWITCH_MAC[p])
        ctl.set_red(1, RED)
        run_traffic(args.seconds)
        ctl.close()
    finally:
        if proc is not None:
            netlab.stop(proc)
        for part in reversed(parts):
            part.delete()
    rows = parse((work / "switch.log").read_text(), work / "port0.pcap")
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, ["enq_timestamp_us", "enq_qdepth", "deq_timedelta_us", "ecn", "bytes"])
        w.writeheader()
        w.writerows(rows)
    print(f"{args.out}: {len(rows)} packets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
