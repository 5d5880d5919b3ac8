"""Engine benchmarks (`make bench`): speed and link fidelity of the softswitch.

    python softswitch/bench/run.py [--quick] [--out softswitch/bench/RESULTS.md]

Speed: packets/s for 64- and 1500-byte frames through a P4 program (p4src's
RED program from build/red_ecn.json when `make build` has made it, else the
hand-written forwarding fixture), the packet thread pinned to one CPU, next
to a minimal C AF_PACKET forwarder (afp_tool.c) on the same CPU, same veths,
same generator, same run; and ping RTTs at low load through both.
Fidelity: a TCP flow (iperf3) through a port set to 1.5, 10 and 100 Mb/s,
rate measured from the bytes the receiving host's interface counted;
configured delay against the median ping RTT. Needs root.
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
def engine(name: str):
    """Runs the switches started inside on p4core's `name` engine (P4CORE_ENGINE, read at pipeline load)."""
    old = os.environ.get("P4CORE_ENGINE")
    os.environ["P4CORE_ENGINE"] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ["P4CORE_ENGINE"]
        else:
            os.environ["P4CORE_ENGINE"] = old


def compile_tool(workdir: Path) -> Path:
    exe = workdir / "afp_tool"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(HERE / "afp_tool.c")], check=True)
    return exe


class Forwarder:
    """Either the softswitch (in this process, its packet thread on SWITCH_CPU)
    or the C forwarder (a child pinned to SWITCH_CPU) between the lab's ports."""

    def __init__(self, kind: str, lab: iolab.VethLab, tool: Path, program: str, seconds: float, sink: bool,
                 pin: bool = True):
        self.kind, self.lab, self.tool, self.pin = kind, lab, tool, pin
        self.program, self.seconds, self.sink = program, seconds, sink
        self.sw = self.proc = None

    def __enter__(self):
        if self.kind == "softswitch":
            if self.pin:
                iolab.pin_to_cpu(SWITCH_CPU)  # the packet thread inherits it
            self.sw = se.Switch(ports=self.lab.ports, seed=1)
            self.sw.load_pipeline(self.program)
            self.lab.install_routes(self.sw, {"b": SINK_MAC} if self.sink else None)
            self.sw.start()
            os.sched_setaffinity(0, set(range(os.cpu_count())))
        else:
            self.lab.address_hosts_directly()
            p = self.lab.ports
            self.proc = subprocess.Popen(["taskset", "-c", str(SWITCH_CPU), str(self.tool), "forward", p[0], p[1],
                                          str(self.seconds)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)
        return self

    def configure_port(self, port: int, **kw) -> None:
        self.sw.configure_port(port, **kw)

    def __exit__(self, *exc):
        if self.sw is not None:
            self.sw.stop()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def udp_frame(lab: iolab.VethLab, size: int) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    a, b = lab.hosts["a"], lab.hosts["b"]
    pkt = Ether(src=a.mac, dst=iolab.ROUTER_MAC) / IP(src=a.ip, dst=b.ip) / UDP(sport=1234, dport=9)
    return bytes(pkt / bytes(max(0, size - len(pkt))))


def measure_pps(kind: str, size: int, tool: Path, program: str, seconds: float) -> dict:
    with iolab.VethLab() as lab, Forwarder(kind, lab, tool, program, seconds + 5, sink=True):
        a, b = lab.hosts["a"], lab.hosts["b"]
        frame = udp_frame(lab, size).hex()
        before, t0 = b.rx_stats()[0], time.monotonic()
        out = subprocess.run(["taskset", "-c", str(GENERATOR_CPU), "ip", "netns", "exec", a.ns, str(tool), "blast",
                              a.ifname, str(seconds), frame], check=True, capture_output=True, text=True).stdout
        time.sleep(0.1)
        delivered, elapsed = b.rx_stats()[0] - before, time.monotonic() - t0
        offered = int(out)
    return {"forwarder": kind, "frame_bytes": size, "offered_pps": round(offered / seconds),
            "delivered_pps": round(delivered / elapsed), "seconds": seconds}


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


def write_results(out: Path, results: dict) -> None:
    lines = [
        "# softswitch engine benchmarks",
        "",
        f"Run: `{results['command']}` at {results['when']} on {results['machine']}.",
        f"Load: before {results['load_before']}; after {results['load_after']}.",
        "The machine's 2 CPUs are shared with other work; absolute numbers vary with that load, ratios count.",
        f"Program: {results['program']}.",
        "",
        "## Speed: frames/s through the switch, packet thread pinned to one CPU",
        "",
        "Generator (C, sendmmsg) on CPU 0 in host A's namespace; forwarder on CPU 1; delivered = frames host B's",
        "interface received. Frame bytes exclude the Ethernet FCS (veth has none).",
        "",
        "Two programs: the benchmark program above, and the minimal forwarding fixture",
        "(`programs/forward_stamp.json`: one LPM table, MAC/TTL rewrite, checksum), which shows the",
        "switch's own I/O and traffic-manager cost apart from the cost of executing the program.",
        "",
        "Softswitch runs p4core's compiled pipeline, and for comparison its interpreter (P4CORE_ENGINE=interpreter).",
        "",
        "| frame bytes | C AF_PACKET forwarder (no P4) | softswitch, benchmark program | ratio | same, interpreter | ratio "
        "| softswitch, minimal program | ratio | same, interpreter | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, runs in results["pps"].items():
        c = runs["c"]["delivered_pps"]
        cells = [f"{runs[k]['delivered_pps']:,} pps | {runs[k]['delivered_pps'] / c:.2f}" for k in
                 ("softswitch", "softswitch-interpreter", "softswitch-minimal", "softswitch-minimal-interpreter")]
        lines.append(f"| {size} | {c:,} pps | " + " | ".join(cells) + " |")
    lines += ["", "## Instructions per packet (callgrind)", "",
              "p4core alone (no I/O): parser, checksum verification, ingress, egress, checksum update and deparser, "
              f"counted by callgrind over {results['instructions'][0]['packets'] // 2 if results['instructions'] else 0} packets of 64 and "
              "of 1500 bytes minus the load "
              "(`python softswitch/bench/instructions.py PROGRAM.json`); exact, independent of the machine's load.", ""]
    lines += instructions.table(results["instructions"]) if results["instructions"] else [results["instructions_note"]]
    lines += ["", "## Latency at low load: ping RTT host A -> B -> A (two switch traversals)", "",
              "| forwarder | median ms | p99 ms |", "|---|---|---|"]
    for r in results["latency"]:
        lines.append(f"| {r['forwarder']} | {r['rtt_median_ms']:.3f} | {r['rtt_p99_ms']:.3f} |")
    lat = {r["forwarder"]: r for r in results["latency"]}
    added = (lat["softswitch"]["rtt_median_ms"] - lat["c"]["rtt_median_ms"]) / 2 * 1000
    added99 = (lat["softswitch"]["rtt_p99_ms"] - lat["c"]["rtt_p99_ms"]) / 2 * 1000
    lines += ["", f"Added per traversal vs the C forwarder: median {added:.0f} us, p99 {added99:.0f} us.", "",
              "## Link fidelity: one TCP flow (iperf3, cubic) through a rate-limited port", "",
              "Packet thread not pinned; 100-packet buffer on both ports, no delay. Wire rate = Ethernet-frame",
              "bytes the switch sent towards B per second, from 1.5 s after the start to 1 s before the end;",
              "goodput = what iperf3's receiver got over the whole run, slow start included; it is at most",
              "1448/1514 = 95.6% of the wire rate (MSS 1448 in 1514-byte frames). The TCP endpoints share the",
              "two loaded CPUs.", "",
              "| configured Mb/s | wire Mb/s | utilisation | TCP goodput Mb/s | retransmits |", "|---|---|---|---|---|"]
    for r in results["rate"]:
        lines.append(f"| {r['rate_mbps']} | {r['wire_mbps']} | {r['utilisation_pct']}% | {r['tcp_goodput_mbps']} | {r['retransmits']} |")
    lines += ["", "## Delay fidelity: median ping RTT with vs without configured delay (port 1)", "",
              "| configured RTT added ms | measured ms | error ms |", "|---|---|---|"]
    for r in results["delay"]:
        lines.append(f"| {r['configured_rtt_add_ms']} | {r['measured_rtt_add_ms']} | {r['error_ms']} |")
    lines += ["", "enq_qdepth against the queue a burst builds is checked exactly by",
              "`softswitch/tests/test_engine_io.py::test_enq_qdepth_seen_by_the_program_is_the_queue_the_burst_built`.",
              "", "## Raw", "", "```json", json.dumps(results, indent=1), "```", ""]
    out.write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI-sized run (seconds instead of minutes)")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (network namespaces, raw sockets)")
    program, program_note = pipeline_json()
    secs = 2.0 if args.quick else 8.0
    results = {"command": "python softswitch/bench/run.py" + (" --quick" if args.quick else ""),
               "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
               "load_before": load_note(), "program": program_note, "pps": {}, "latency": [], "rate": [], "delay": []}
    with tempfile.TemporaryDirectory(prefix="iobench") as tmp:
        tool = compile_tool(Path(tmp))
        for size in (64, 1500):
            runs = results["pps"][size] = {k: measure_pps(k, size, tool, program, secs) for k in ("c", "softswitch")}
            runs["softswitch-minimal"] = measure_pps("softswitch", size, tool, iolab.forward_program(), secs)
            with engine("interpreter"):
                runs["softswitch-interpreter"] = measure_pps("softswitch", size, tool, program, secs)
                runs["softswitch-minimal-interpreter"] = measure_pps("softswitch", size, tool, iolab.forward_program(), secs)
            print("pps", size, runs, flush=True)
        pings = 100 if args.quick else 500
        results["latency"] = [measure_latency(k, tool, program, pings) for k in ("c", "softswitch")]
        print("latency", results["latency"], flush=True)
        flow_secs = 5.0 if args.quick else 15.0
        for rate in (1_500_000, 10_000_000, 100_000_000):
            results["rate"].append(measure_link_rate(rate, tool, program, flow_secs))
            print("rate", results["rate"][-1], flush=True)
        for d, i in ((1000, 1000), (10_000, 10_000)):
            results["delay"].append(measure_delay(d, i, tool, program, 50 if args.quick else 200))
            print("delay", results["delay"][-1], flush=True)
        results["instructions"], results["instructions_note"] = measure_instructions(Path(tmp), program, 200 if args.quick else instructions.PACKETS)
        print("instructions", results["instructions"] or results["instructions_note"], flush=True)
    results["load_after"] = load_note()
    write_results(args.out, results)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
