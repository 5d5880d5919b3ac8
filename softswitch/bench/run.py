"""Engine benchmarks (`make bench`): speed and link fidelity of the softswitch.

    python softswitch/bench/run.py [--quick] [--out softswitch/bench/RESULTS.md]

Speed: packets/s for 64- and 1500-byte frames through a P4 program (p4src's
RED program from build/red_ecn.json when `make build` has made it, else the
hand-written forwarding fixture), the packet thread pinned to one CPU, next
to a minimal C AF_PACKET forwarder (afp_tool.c) on the same CPU, same veths,
same generator, same run. Latency at low load through both: one traversal
time-stamped on the wire, and ping RTTs. The machine's floor: how late a
pinned thread meets a deadline, sleeping or spinning (afp_tool deadlines).
Fidelity: a TCP flow (iperf3) through a port set to 1.5, 10 and 100 Mb/s,
rate measured from the bytes the receiving host's interface counted;
configured delay against the median ping RTT. Link timing: each frame's
departure, time-stamped on the wire, against an ideal serialiser at 10, 100
and 1000 Mb/s, with and without a propagation delay. Needs root.
`--parts timing,latency` runs only those parts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import instructions  # noqa: E402
import iolab  # noqa: E402
import softswitch_engine as se  # noqa: E402

GENERATOR_CPU, SWITCH_CPU = 0, 1
SINK_MAC = "02:00:00:00:00:99"  # frames forwarded to B carry a MAC B's kernel ignores cheaply


def pipeline_json() -> tuple[str, str]:
    try:
        return iolab.red_ecn_program(), "p4src/red_ecn.p4 (softswitch-p4c), no RED entry: drop-tail"
    except subprocess.CalledProcessError as e:
        print(f"bench: red_ecn.p4 does not compile ({e.stderr[-300:]!r}); using the fixture", file=sys.stderr)
        return iolab.forward_program(), "bench/programs/forward_stamp.json (red_ecn.p4 did not compile)"


@contextlib.contextmanager
def environ(name: str, value: str):
    """Runs the switches started inside with `name`=`value` in the environment:
    P4CORE_ENGINE (p4core's engine, read at pipeline load) or SOFTSWITCH_RX
    (the ports' receive path, read when the switch opens them)."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def compile_tool(workdir: Path) -> Path:
    exe = workdir / "afp_tool"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(HERE / "afp_tool.c")], check=True)
    return exe


class Forwarder:
    """Either the softswitch (in this process, its packet thread on SWITCH_CPU)
    or the C forwarder (a child pinned to SWITCH_CPU) between the lab's ports:
    kind "c" receives with recvmmsg, "c-ring" from a PACKET_MMAP ring as softswitch does;
    "-busy" (softswitch) and "-spin" (C ring) never sleep."""

    def __init__(self, kind: str, lab: iolab.VethLab, tool: Path, program: str, seconds: float, sink: bool,
                 pin: bool = True):
        self.kind, self.lab, self.tool, self.pin = kind, lab, tool, pin
        self.program, self.seconds, self.sink = program, seconds, sink
        self.sw = self.proc = None

    def __enter__(self):
        if self.kind.startswith("softswitch"):
            if self.pin:
                iolab.pin_to_cpu(SWITCH_CPU)  # the packet thread inherits it
            self.sw = se.Switch(ports=self.lab.ports, seed=1, busy_poll=self.kind.endswith("-busy"))
            self.sw.load_pipeline(self.program)
            self.lab.install_routes(self.sw, {"b": SINK_MAC} if self.sink else None)
            self.sw.start()
            os.sched_setaffinity(0, set(range(os.cpu_count())))
        else:
            self.lab.address_hosts_directly()
            p = self.lab.ports
            mode = {"c-ring": "forward-ring", "c-ring-spin": "forward-ring-spin"}.get(self.kind, "forward")
            self.proc = subprocess.Popen(["taskset", "-c", str(SWITCH_CPU), str(self.tool), mode, p[0], p[1],
                                          str(self.seconds)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)
        return self

    def cpu_ns(self) -> int:
        """CPU time the forwarding has used so far: the packet thread's, or the C forwarder's."""
        if self.proc is not None:
            return schedstat_ns(Path(f"/proc/{self.proc.pid}/schedstat"))
        thread = next(t for t in Path("/proc/self/task").iterdir() if (t / "comm").read_text().strip() == "softswitch-io")
        return schedstat_ns(thread / "schedstat")

    def configure_port(self, port: int, **kw) -> None:
        self.sw.configure_port(port, **kw)

    def __exit__(self, *exc):
        if self.sw is not None:
            self.sw.stop()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def schedstat_ns(path: Path) -> int:
    """Time on a CPU (ns) of the task whose /proc schedstat this is."""
    return int(path.read_text().split()[0])


def udp_frame(lab: iolab.VethLab, size: int, dport: int = 9) -> bytes:
    """A frame from A to B of `size` bytes; UDP checksum 0 (none), so a generator may rewrite the payload."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    a, b = lab.hosts["a"], lab.hosts["b"]
    pkt = Ether(src=a.mac, dst=iolab.ROUTER_MAC) / IP(src=a.ip, dst=b.ip) / UDP(sport=1234, dport=dport, chksum=0)
    return bytes(pkt / bytes(max(0, size - len(pkt))))


def measure_pps(kind: str, size: int, tool: Path, program: str, seconds: float) -> dict:
    with iolab.VethLab() as lab, Forwarder(kind, lab, tool, program, seconds + 5, sink=True) as fwd:
        a, b = lab.hosts["a"], lab.hosts["b"]
        frame = udp_frame(lab, size).hex()
        before, t0, cpu0 = b.rx_stats()[0], time.monotonic(), fwd.cpu_ns()
        out = subprocess.run(["taskset", "-c", str(GENERATOR_CPU), "ip", "netns", "exec", a.ns, str(tool), "blast",
                              a.ifname, str(seconds), frame], check=True, capture_output=True, text=True).stdout
        time.sleep(0.1)
        delivered, elapsed, cpu = b.rx_stats()[0] - before, time.monotonic() - t0, fwd.cpu_ns() - cpu0
        offered = int(out)
    return {"forwarder": kind, "frame_bytes": size, "offered_pps": round(offered / seconds),
            "delivered_pps": round(delivered / elapsed), "seconds": seconds,
            # load-independent: what each frame cost the forwarder, whoever else ran on its CPU
            "cpu_ns_per_frame": round(cpu / max(1, delivered), 1)}


def ping_ms(lab: iolab.VethLab, count: int, interval: float) -> list[float]:
    a, b = lab.hosts["a"], lab.hosts["b"]
    out = a.run("ping", "-n", "-c", str(count), "-i", str(interval), "-W", "2", b.ip, check=False).stdout
    return [float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure_latency(kind: str, tool: Path, program: str, count: int) -> dict:
    with iolab.VethLab() as lab, Forwarder(kind, lab, tool, program, count * 0.01 + 30, sink=False):
        rtts = ping_ms(lab, count, 0.01)
    return {"forwarder": kind, "pings": len(rtts), "rtt_median_ms": statistics.median(rtts),
            "rtt_p99_ms": percentile(rtts, 0.99)}


TRAVERSAL_FRAME_BYTES = 98      # a ping's frame
TRAVERSAL_GAP_NS = 1_000_000    # low load: every frame finds the forwarder idle
TRAVERSAL_UDP_PORT = 7700


def measure_traversal(kind: str, tool: Path, program: str, count: int) -> dict:
    """One switch traversal at low load, on the wire: each frame's kernel
    receive stamp on B's veth minus the one where it entered the forwarder
    (port 0's veth). No host's scheduling is in it, unlike a ping's RTT.
    Unshaped port; both forwarders pinned to SWITCH_CPU, the sender to GENERATOR_CPU."""
    seconds = count * TRAVERSAL_GAP_NS / 1e9 + 10
    with iolab.VethLab() as lab, Forwarder(kind, lab, tool, program, seconds, sink=True):
        frame_hex = udp_frame(lab, TRAVERSAL_FRAME_BYTES, dport=TRAVERSAL_UDP_PORT).hex()
        captures = [iolab.start_capture(lab.hosts["a"].switch_if, TRAVERSAL_UDP_PORT),
                    iolab.start_capture(lab.hosts["b"].ifname, TRAVERSAL_UDP_PORT, ns=lab.hosts["b"].ns)]
        sent = send_train(lab, tool, frame_hex, count, TRAVERSAL_GAP_NS)
        time.sleep(0.5)
        ingress, egress = (iolab.finish_capture(c) for c in captures)
    arrived = {seq: t for seq, t, _ in ingress["frames"]}
    took = [(t - arrived[seq]) / 1000 for seq, t, _ in egress["frames"] if seq in arrived]
    return {"forwarder": kind, "sent": sent, "delivered": len(took),
            "us": quantiles_us(took)}


#: (softswitch, the C forwarder it is compared with): both sleeping between frames, both never sleeping
TRAVERSAL_PAIRS = (("softswitch", "c-ring"), ("softswitch-busy", "c-ring-spin"))
TRAVERSAL_KINDS = tuple(kind for pair in TRAVERSAL_PAIRS for kind in pair)


def added_traversal_us(traversal: list[dict]) -> dict:
    """Per traversal, softswitch minus the C forwarder on the same receive path
    and wait (TRAVERSAL_PAIRS), at each quantile (us)."""
    by = {r["forwarder"]: r["us"] for r in traversal}
    return {switch: {name: round(by[switch][name] - by[c][name], 2) for name, _ in TIMING_QUANTILES}
            for switch, c in TRAVERSAL_PAIRS}


def tx_bytes(ifname: str) -> int:
    """Bytes the switch's interface sent (root namespace: read directly, no subprocess)."""
    return int(Path(f"/sys/class/net/{ifname}/statistics/tx_bytes").read_text())


def measure_link_rate(rate_bps: int, tool: Path, program: str, seconds: float) -> dict:
    with iolab.VethLab() as lab, Forwarder("softswitch", lab, tool, program, 0, sink=False, pin=False) as fwd:
        for port in (0, 1):
            fwd.configure_port(port, rate_bps=rate_bps, buffer_packets=100)
        a, b = lab.hosts["a"], lab.hosts["b"]
        to_b = lab.ports[1]
        server = b.popen("iperf3", "-s", "-1", "-B", b.ip, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        client = a.popen("iperf3", "-c", b.ip, "-t", str(seconds), "-J", stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)  # connection set-up and slow start
        bytes0, t0 = tx_bytes(to_b), time.monotonic()
        time.sleep(seconds - 2.5)
        bytes1, t1 = tx_bytes(to_b), time.monotonic()
        report = json.loads(client.communicate()[0])
        server.wait(timeout=10)
    wire = (bytes1 - bytes0) * 8 / (t1 - t0)
    goodput = report["end"]["sum_received"]["bits_per_second"]
    return {"rate_mbps": rate_bps / 1e6, "wire_mbps": round(wire / 1e6, 3), "utilisation_pct": round(100 * wire / rate_bps, 2),
            "tcp_goodput_mbps": round(goodput / 1e6, 3),
            "retransmits": report["end"]["sum_sent"].get("retransmits"), "seconds": seconds}


def measure_delay(delay_us: int, ingress_delay_us: int, tool: Path, program: str, count: int) -> dict:
    with iolab.VethLab() as lab, Forwarder("softswitch", lab, tool, program, 0, sink=False, pin=False) as fwd:
        base = statistics.median(ping_ms(lab, count, 0.02))
        fwd.configure_port(1, delay_us=delay_us, ingress_delay_us=ingress_delay_us)
        delayed = ping_ms(lab, count, 0.02)
    configured = (delay_us + ingress_delay_us) / 1000
    added = statistics.median(delayed) - base
    return {"configured_rtt_add_ms": configured, "measured_rtt_add_ms": round(added, 3),
            "error_ms": round(added - configured, 3), "pings": len(delayed)}


LINK_RATES_BPS = (10_000_000, 100_000_000, 1_000_000_000)
LINK_DELAY_US = 5000
TRAIN_FRAME_BYTES = 1514  # full-size frames, as TCP sends them
TRAIN_UDP_PORT = 7777  # the first train's; each train the next one
#: (pattern, offered load as a multiple of the rate, propagation delay us)
TRAINS = (("saturating", 2.0, 0), ("paced", 0.5, 0), ("paced", 0.5, LINK_DELAY_US))
TIMING_QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))


def quantiles_us(values: list[float]) -> dict:
    """TIMING_QUANTILES of `values` (us), rounded; {} for none."""
    return {name: round(percentile(values, q), 2) for name, q in TIMING_QUANTILES} if values else {}


def quantile_table(first: str, rows: list[tuple[str, dict]]) -> list[str]:
    """A markdown table: the `first` columns (" | "-separated), then
    TIMING_QUANTILES in us; each row its leading cells and its quantiles."""
    width = len(first.split(" | ")) + len(TIMING_QUANTILES)
    return (["| " + first + " | " + " | ".join(f"{name} us" for name, _ in TIMING_QUANTILES) + " |", "|" + "---|" * width]
            + [f"| {lead} | {quantile_cells(values)} |" for lead, values in rows])


def quantile_cells(values: dict) -> str:
    return " | ".join(str(values.get(name, "-")) for name, _ in TIMING_QUANTILES)


def ideal_deliveries_ns(arrivals: list[tuple[int, int]], rate_bps: int, delay_ns: int) -> list[int]:
    """When each frame (arrival ns, bytes), in arrival order, reaches the far
    end of an ideal link: it starts serialising when it arrives or when the
    link frees, whichever is later, and is delivered `delay_ns` after its last bit.
    Integer ns, as the traffic manager counts (tm.rs `serialisation_ns`): the
    stamps are ~1.8e18 ns since the epoch, where a float steps by 256 ns, and a
    float sum lost 32 ns per 1514-byte frame at 100 Mb/s, 64 us over a saturating train."""
    free, out = 0, []
    for t, nbytes in arrivals:
        free = max(t, free) + nbytes * 8 * 10**9 // rate_bps
        out.append(free + delay_ns)
    return out


def timing_errors_us(ingress: dict, egress: dict, rate_bps: int, delay_us: int) -> list[float]:
    """Wire time at B minus the ideal serialiser's, per delivered frame (us).
    Frames that never reached B (dropped) never occupied the link: left out."""
    arrived = {seq: t for seq, t, _ in ingress["frames"]}
    out = sorted((arrived[seq], nbytes, t) for seq, t, nbytes in egress["frames"] if seq in arrived)
    ideal = ideal_deliveries_ns([(t_in, nbytes) for t_in, nbytes, _ in out], rate_bps, delay_us * 1000)
    return [(t_out - want) / 1000 for (_, _, t_out), want in zip(out, ideal)]


def send_train(lab: iolab.VethLab, tool: Path, frame_hex: str, count: int, gap_ns: int) -> int:
    a = lab.hosts["a"]
    out = subprocess.run(["taskset", "-c", str(GENERATOR_CPU), "ip", "netns", "exec", a.ns, str(tool), "train",
                          a.ifname, str(count), str(gap_ns), frame_hex], check=True, capture_output=True, text=True)
    return int(out.stdout)


def wait_until_sent(sw, frames: int, quiet_s: float = 1.0) -> None:
    """Until port 1 has sent (or dropped) `frames` more frames than now, or made no progress for `quiet_s`."""
    def done():
        stats = sw.port_stats()[1]
        return stats["tx"] + stats["drops"] + stats["lost"]
    target, last, since = done() + frames, -1, time.monotonic()
    while (now := done()) < target and time.monotonic() - since < quiet_s:
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(0.01)


def measure_train(fwd: Forwarder, tool: Path, frame_hex: str, udp_port: int, rate_bps: int, load: float,
                  delay_us: int, count: int) -> dict:
    """One train through port 1 shaped at `rate_bps`, time-stamped by the kernel
    where it enters the switch (port 0's veth) and where it leaves the link (B's veth).
    Each train has its own UDP port, so a late frame of one never counts in the next."""
    lab = fwd.lab
    fwd.configure_port(1, rate_bps=rate_bps, buffer_packets=count, delay_us=delay_us)
    serialisation_ns = TRAIN_FRAME_BYTES * 8e9 / rate_bps
    captures = [iolab.start_capture(lab.hosts["a"].switch_if, udp_port),
                iolab.start_capture(lab.hosts["b"].ifname, udp_port, ns=lab.hosts["b"].ns)]
    before = fwd.sw.port_stats()[1]
    sent = send_train(lab, tool, frame_hex, count, int(serialisation_ns / load))
    wait_until_sent(fwd.sw, sent)
    after = fwd.sw.port_stats()[1]
    ingress, egress = (iolab.finish_capture(c) for c in captures)
    errors = timing_errors_us(ingress, egress, rate_bps, delay_us)
    transmitted = max(1, after["tx"] - before["tx"])
    return {"rate_mbps": rate_bps / 1e6, "offered_load": load, "delay_us": delay_us, "frame_bytes": TRAIN_FRAME_BYTES,
            "sent": sent, "at_switch": len(ingress["frames"]), "delivered": len(errors),
            "capture_drops": ingress["kernel_drops"] + egress["kernel_drops"],
            # the switch's own count: how late its sends were against its due times (no kernel path)
            "switch_late_us_mean": round((after["tx_late_us_total"] - before["tx_late_us_total"]) / transmitted, 2),
            "error_us": quantiles_us(errors),
            "error_min_us": round(min(errors), 2) if errors else None}


TIMING_KINDS = ("softswitch", "softswitch-busy")   # the packet thread sleeping between events, and never


def measure_link_timing(tool: Path, program: str, count: int) -> list[dict]:
    """Every train of TRAINS at every rate, through one switch per TIMING_KINDS
    (packet thread pinned, as in the speed part)."""
    results = []
    for kind in TIMING_KINDS:
        with iolab.VethLab() as lab, Forwarder(kind, lab, tool, program, 0, sink=True) as fwd:
            for rate in LINK_RATES_BPS:
                for pattern, load, delay_us in TRAINS:
                    udp_port = TRAIN_UDP_PORT + len(results)
                    frame_hex = udp_frame(lab, TRAIN_FRAME_BYTES, dport=udp_port).hex()
                    r = {"switch": kind, "pattern": pattern} | measure_train(fwd, tool, frame_hex, udp_port, rate, load,
                                                                              delay_us, count)
                    print("timing", r, flush=True)
                    results.append(r)
    return results


def measure_instructions(workdir: Path, program: str, packets: int) -> tuple[list[dict], str]:
    """Instructions/packet of both engines on the benchmark and the minimal program; ([], why) without valgrind."""
    bench = workdir / "benchmark.json"
    bench.write_text(program)
    try:
        programs = {"benchmark program": bench, "minimal program": HERE / "programs" / "forward_stamp.json"}
        return instructions.measure(programs, packets), ""
    except instructions.CallgrindMissing as e:
        return [], f"Not measured: {e}."


def load_note() -> str:
    return f"loadavg {Path('/proc/loadavg').read_text().split()[:3]}, {os.cpu_count()} CPUs"


def pps_section(results: dict) -> list[str]:
    lines = [
        "## Speed: frames/s through the switch, packet thread pinned to one CPU",
        "",
        "Generator (C, sendmmsg) on CPU 0 in host A's namespace; forwarder on CPU 1; delivered = frames host B's",
        "interface received. Frame bytes exclude the Ethernet FCS (veth has none).",
        "",
        "Two programs: the benchmark program above, and the minimal forwarding fixture",
        "(`programs/forward_stamp.json`: one LPM table, MAC/TTL rewrite, checksum), which shows the",
        "switch's own I/O and traffic-manager cost apart from the cost of executing the program.",
        "",
        "Softswitch runs p4core's compiled pipeline, and for comparison its interpreter (P4CORE_ENGINE=interpreter);",
        "its ports receive from PACKET_MMAP rings, and for comparison with recvmmsg (SOFTSWITCH_RX=recvmmsg).",
        "",
        "Ratios are against the C forwarder receiving with recvmmsg; the last column sets softswitch on the",
        "benchmark program against the C forwarder receiving from a ring (the same I/O path).",
        "",
        "| frame bytes | C AF_PACKET forwarder (no P4) | " + " | ".join(f"{label} | ratio" for label in PPS_RUNS.values())
        + " | softswitch / C ring |",
        "|---|---|" + "---|---|" * len(PPS_RUNS) + "---|",
    ]
    for size, runs in results["pps"].items():
        c = runs["c"]["delivered_pps"]
        cells = [f"{runs[k]['delivered_pps']:,} pps | {runs[k]['delivered_pps'] / c:.2f}" for k in PPS_RUNS]
        same_path = runs["softswitch"]["delivered_pps"] / runs["c-ring"]["delivered_pps"]
        lines.append(f"| {size} | {c:,} pps | " + " | ".join(cells) + f" | {same_path:.2f} |")
    lines += ["", "CPU time of the forwarder (the packet thread; the C process) per delivered frame, ns, and the C",
              "forwarder's over it (frames per CPU-second against C's). Unlike frames/s this does not depend on how",
              "much of its CPU the forwarder got from the machine's other work. The kernel's delivery into the",
              "switch's socket or ring runs on the generator's CPU (softirq) and is not counted: copying into the",
              "ring happens there, copying out of the socket in the switch's recvmmsg.", "",
              "| frame bytes | C | " + " | ".join(f"{label} | ratio" for label in PPS_RUNS.values())
              + " | C ring / softswitch |",
              "|---|---|" + "---|---|" * len(PPS_RUNS) + "---|"]
    for size, runs in results["pps"].items():
        c = runs["c"]["cpu_ns_per_frame"]
        cells = [f"{runs[k]['cpu_ns_per_frame']:,.0f} | {c / runs[k]['cpu_ns_per_frame']:.2f}" for k in PPS_RUNS]
        same_path = runs["c-ring"]["cpu_ns_per_frame"] / runs["softswitch"]["cpu_ns_per_frame"]
        lines.append(f"| {size} | {c:,.0f} | " + " | ".join(cells) + f" | {same_path:.2f} |")
    return lines


#: the softswitch runs of the speed part and their columns, in order
PPS_RUNS = {"c-ring": "C forwarder, ring receive", "softswitch": "softswitch, benchmark program", "softswitch-recvmmsg": "same, recvmmsg",
            "softswitch-interpreter": "same, interpreter", "softswitch-minimal": "softswitch, minimal program",
            "softswitch-minimal-interpreter": "same, interpreter"}


def instructions_section(results: dict) -> list[str]:
    packets = results["instructions"][0]["packets"] // 2 if results["instructions"] else 0
    lines = ["## Instructions per packet (callgrind)", "",
             "p4core alone (no I/O): parser, checksum verification, ingress, egress, checksum update and deparser, "
             f"counted by callgrind over {packets} packets of 64 and of 1500 bytes minus the load "
             "(`python softswitch/bench/instructions.py PROGRAM.json`); exact, independent of the machine's load.", ""]
    return lines + (instructions.table(results["instructions"]) if results["instructions"] else [results["instructions_note"]])


def latency_section(results: dict) -> list[str]:
    lines = ["## Latency at low load", "",
             f"One traversal on the wire: {TRAVERSAL_FRAME_BYTES}-byte UDP frames from A, one every "
             f"{TRAVERSAL_GAP_NS // 1000} us, unshaped port, forwarder pinned to CPU {SWITCH_CPU}; each frame's kernel",
             "receive stamp on B's veth minus its stamp entering the forwarder (port 0's veth), us. The C",
             "forwarders' figures are this machine's floor: their kernel path and, sleeping between frames,",
             "the wake-up of a sleeping thread. `-busy` (softswitch's busy_poll) and `-spin` never sleep.", ""]
    lines += quantile_table("forwarder | frames", [(f"{r['forwarder']} | {r['delivered']} of {r['sent']}", r["us"])
                                                   for r in results["traversal"]])
    lines += ["", "Added latency per traversal, softswitch minus the C ring forwarder waiting the same way:", ""]
    lines += quantile_table("softswitch | against", [(f"{switch} | {c}", results["traversal_added_us"][switch])
                                                     for switch, c in TRAVERSAL_PAIRS])
    lines += ["",
              "Ping RTT host A -> B -> A (two traversals, plus both hosts' scheduling):", "",
              "| forwarder | median ms | p99 ms |", "|---|---|---|"]
    for r in results["latency"]:
        lines.append(f"| {r['forwarder']} | {r['rtt_median_ms']:.3f} | {r['rtt_p99_ms']:.3f} |")
    return lines


def floor_section(results: dict) -> list[str]:
    lines = ["## The machine's floor: how late a thread pinned to a CPU meets a deadline", "",
             f"`afp_tool deadlines` on CPU {SWITCH_CPU}, the packet thread's: deadlines {FLOOR_PERIOD_NS // 1000} us apart "
             "(a paced 100 Mb/s train's frame spacing),",
             "slept to on a timerfd (1 ns slack) until the spin margin before each, then spun; lateness = the first",
             "clock read at or past the deadline. Margin 0 is a timer wake-up alone; a margin of the whole period",
             "never sleeps, so only preemption (other tasks, interrupts, the hypervisor) makes it late. No",
             "forwarder can send on time more often than this.", ""]
    lines += quantile_table("spin margin us | deadlines", [(f"{r['spin_us']:g} | {r['deadlines']}", r["late_us"])
                                                           for r in results["floor"]])
    send = results.get("send_floor")
    if send:
        lines += ["", f"The send path's own part: `afp_tool send-on-time`, a C sender on CPU {SWITCH_CPU} that spins to "
                  f"each deadline ({send['gap_us']:g} us apart, a full-size frame's time at 100 Mb/s) and sends a "
                  f"{TRAIN_FRAME_BYTES}-byte frame on a veth at once; the kernel's receive stamp at the veth's far end "
                  "minus the deadline. No sender on this machine puts frames on a veth more punctually; the "
                  "switch's sends to B take the same path.", ""]
        lines += quantile_table("sender | frames", [(f"C, spinning | {send['delivered']} of {send['sent']}", send["late_us"])])
    return lines


FLOOR_PERIOD_NS = 240_000
FLOOR_SPINS_NS = (0, 20_000, 60_000, FLOOR_PERIOD_NS)


SEND_FLOOR_UDP_PORT = 7800


def measure_send_floor(tool: Path, count: int) -> dict:
    """The departure error of a sender that is never late itself: afp_tool
    send-on-time (pinned to SWITCH_CPU) spins to each deadline, a full-size
    frame's time at 100 Mb/s apart, and sends on A's veth; the kernel's stamp
    where the frame arrives (the veth's far end) minus its deadline is what the
    send path adds, the same path the switch's sends to B take."""
    gap_ns = TRAIN_FRAME_BYTES * 8 * 10**9 // 100_000_000
    with iolab.VethLab() as lab:
        a = lab.hosts["a"]
        frame_hex = udp_frame(lab, TRAIN_FRAME_BYTES, dport=SEND_FLOOR_UDP_PORT).hex()
        capture = iolab.start_capture(a.switch_if, SEND_FLOOR_UDP_PORT)
        out = subprocess.run(["taskset", "-c", str(SWITCH_CPU), "ip", "netns", "exec", a.ns, str(tool), "send-on-time",
                              a.ifname, str(count), str(gap_ns), frame_hex], check=True, capture_output=True, text=True)
        time.sleep(0.2)
        got = iolab.finish_capture(capture)
    sent, first = map(int, out.stdout.split())
    late = [(t - (first + seq * gap_ns)) / 1000 for seq, t, _ in got["frames"]]
    return {"sent": sent, "delivered": len(late), "gap_us": gap_ns / 1000, "late_us": quantiles_us(late)}


def measure_floor(tool: Path, count: int) -> list[dict]:
    results = []
    for spin in FLOOR_SPINS_NS:
        out = subprocess.run(["taskset", "-c", str(SWITCH_CPU), str(tool), "deadlines", str(count),
                              str(FLOOR_PERIOD_NS), str(spin)], check=True, capture_output=True, text=True).stdout
        late = [int(v) / 1000 for v in out.split()]
        results.append({"spin_us": spin / 1000, "deadlines": len(late),
                        "late_us": quantiles_us(late)})
    return results


def rate_section(results: dict) -> list[str]:
    lines = ["## Link fidelity: one TCP flow (iperf3, cubic) through a rate-limited port", "",
             "Packet thread not pinned; 100-packet buffer on both ports, no delay. Wire rate = Ethernet-frame",
             "bytes the switch sent towards B per second, from 1.5 s after the start to 1 s before the end;",
             "goodput = what iperf3's receiver got over the whole run, slow start included; it is at most",
             "1448/1514 = 95.6% of the wire rate (MSS 1448 in 1514-byte frames). The TCP endpoints share the",
             "two loaded CPUs.", "",
             "| configured Mb/s | wire Mb/s | utilisation | TCP goodput Mb/s | retransmits |", "|---|---|---|---|---|"]
    for r in results["rate"]:
        lines.append(f"| {r['rate_mbps']} | {r['wire_mbps']} | {r['utilisation_pct']}% | {r['tcp_goodput_mbps']} | {r['retransmits']} |")
    return lines


def delay_section(results: dict) -> list[str]:
    lines = ["## Delay fidelity: median ping RTT with vs without configured delay (port 1)", "",
             "| configured RTT added ms | measured ms | error ms |", "|---|---|---|"]
    for r in results["delay"]:
        lines.append(f"| {r['configured_rtt_add_ms']} | {r['measured_rtt_add_ms']} | {r['error_ms']} |")
    return lines


def timing_section(results: dict) -> list[str]:
    lines = ["## Link timing: each frame on the wire against an ideal serialiser", "",
             f"Trains of {TRAIN_FRAME_BYTES}-byte UDP frames from A (afp_tool train, CPU 0) through port 1 shaped at the rate,",
             "packet thread pinned to CPU 1. Each frame is time-stamped by the kernel (AF_PACKET, SO_TIMESTAMPNS)",
             "where it enters the switch (port 0's veth: the same receive timestamp the switch takes as its",
             "arrival time) and where it comes off the link (B's veth, received during the switch's send). The",
             "ideal serialiser takes the frames at those arrival times: a frame starts when it arrives or when",
             "the link frees, lasts bytes*8/rate, and reaches B the configured delay after its last bit.",
             "Error = B's timestamp minus the ideal one (positive: late). Saturating: offered at twice the rate",
             "(the queue grows through the train, no drops); paced: at half the rate, each frame finds the link",
             f"idle. With a delay, the error is that of the configured propagation delay ({LINK_DELAY_US} us).",
             "Last column: the switch's own mean lateness against its due times (port_stats: the clock read",
             "before its send); the rest of the mean error is the send itself and the kernel's path to B.", "",
             "| packet thread | Mb/s | train | delay us | frames delivered | p50 us | p90 us | p99 us | p99.9 us | max us "
             "| switch late, mean us |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["timing"]:
        thread = "busy-polling" if r.get("switch", "softswitch").endswith("-busy") else "sleeping"
        lines.append(f"| {thread} | {r['rate_mbps']:g} | {r['pattern']} | {r['delay_us']} | {r['delivered']} of {r['sent']} | "
                     f"{quantile_cells(r['error_us'])} | {r['switch_late_us_mean']} |")
    return lines


#: part name -> (results key, section writer), in the order they run and are written
PARTS = {"pps": ("pps", pps_section), "instructions": ("instructions", instructions_section),
         "latency": ("latency", latency_section), "floor": ("floor", floor_section), "rate": ("rate", rate_section), "delay": ("delay", delay_section),
         "timing": ("timing", timing_section)}


def write_results(out: Path, results: dict) -> None:
    lines = [
        "# softswitch engine benchmarks",
        "",
        f"Run: `{results['command']}` at {results['when']} on {results['machine']}.",
        f"Load: before {results['load_before']}; after {results['load_after']}.",
        "The machine's 2 CPUs are shared with other work; absolute numbers vary with that load, ratios count.",
        f"Program: {results['program']}.",
    ]
    for key, section in PARTS.values():
        if key in results:
            lines += [""] + section(results)
    lines += ["", "enq_qdepth against the queue a burst builds is checked exactly by",
              "`softswitch/tests/test_engine_io.py::test_enq_qdepth_seen_by_the_program_is_the_queue_the_burst_built`.",
              "", "## Raw", "", "```json", json.dumps(results, indent=1), "```", ""]
    out.write_text("\n".join(lines))


def run_parts(parts: list[str], quick: bool, tool: Path, workdir: Path, program: str, results: dict) -> None:
    secs = 2.0 if quick else 8.0
    if "pps" in parts:
        results["pps"] = {}
        for size in (64, 1500):
            runs = results["pps"][size] = {k: measure_pps(k, size, tool, program, secs) for k in ("c", "c-ring", "softswitch")}
            with environ("SOFTSWITCH_RX", "recvmmsg"):
                runs["softswitch-recvmmsg"] = measure_pps("softswitch", size, tool, program, secs)
            runs["softswitch-minimal"] = measure_pps("softswitch", size, tool, iolab.forward_program(), secs)
            with environ("P4CORE_ENGINE", "interpreter"):
                runs["softswitch-interpreter"] = measure_pps("softswitch", size, tool, program, secs)
                runs["softswitch-minimal-interpreter"] = measure_pps("softswitch", size, tool, iolab.forward_program(), secs)
            print("pps", size, runs, flush=True)
    if "latency" in parts:
        pings = 100 if quick else 500
        results["latency"] = [measure_latency(k, tool, program, pings) for k in ("c", "softswitch")]
        results["traversal"] = [measure_traversal(k, tool, program, 10 * pings) for k in TRAVERSAL_KINDS]
        results["traversal_added_us"] = added_traversal_us(results["traversal"])
        print("latency", results["latency"], results["traversal"], results["traversal_added_us"], flush=True)
    if "floor" in parts:
        results["floor"] = measure_floor(tool, 2000 if quick else 20000)
        results["send_floor"] = measure_send_floor(tool, 200 if quick else 5000)
        print("floor", results["floor"], results["send_floor"], flush=True)
    if "rate" in parts:
        flow_secs = 5.0 if quick else 15.0
        results["rate"] = [measure_link_rate(rate, tool, program, flow_secs) for rate in (1_500_000, 10_000_000, 100_000_000)]
        print("rate", results["rate"], flush=True)
    if "delay" in parts:
        results["delay"] = [measure_delay(d, i, tool, program, 50 if quick else 200) for d, i in ((1000, 1000), (10_000, 10_000))]
        print("delay", results["delay"], flush=True)
    if "timing" in parts:
        results["timing"] = measure_link_timing(tool, program, 200 if quick else 2000)
    if "instructions" in parts:
        results["instructions"], results["instructions_note"] = measure_instructions(workdir, program, 200 if quick else instructions.PACKETS)
        print("instructions", results["instructions"] or results["instructions_note"], flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI-sized run (seconds instead of minutes)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated parts to run (default: all of {','.join(PARTS)})")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args()
    parts = args.parts.split(",")
    if unknown := set(parts) - PARTS.keys():
        ap.error(f"unknown parts {sorted(unknown)}: choose from {','.join(PARTS)}")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (network namespaces, raw sockets)")
    program, program_note = pipeline_json()
    command = "python softswitch/bench/run.py" + (" --quick" if args.quick else "") + \
        (f" --parts {args.parts}" if set(parts) != PARTS.keys() else "")
    results = {"command": command, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": platform.platform(), "load_before": load_note(), "program": program_note}
    with tempfile.TemporaryDirectory(prefix="iobench") as tmp:
        run_parts(parts, args.quick, compile_tool(Path(tmp)), Path(tmp), program, results)
    results["load_after"] = load_note()
    write_results(args.out, results)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
