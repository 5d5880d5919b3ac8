"""Demonstration: one ECN and one non-ECN TCP flow through RED on a 10 Mb/s
softswitch port (minth 5, maxth 15, maxp 0.1, wq 2^-9).

    sudo .venv/bin/python control/demo/ecn_vs_drop.py [--duration 30] [--seed 1]

Builds three network namespaces (rd-h1: ECN sender, rd-h2: non-ECN sender,
rd-h3: receiver) joined by veths to a softswitch running p4src/red_ecn.p4,
configures it with redctl's Controller, runs two iperf3 flows, records the
switch's telemetry and counters and what the hosts sent and received, and
writes control/results/ecn_vs_drop.json, _samples.csv and .png. Namespaces and
veths come from softswitch_server.netlab; everything the demo creates is
removed at the end, also on failure.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from redctl import Controller, PortSpec, RedConfig
from redctl.controller import wait_for_server
from softswitch_server import netlab

ROOT = Path(__file__).resolve().parents[2]

RESULTS = ROOT / "control" / "results"
BIN = Path(sys.executable).parent
RED = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9, gentle=False, mode="red", ecn=True)
BOTTLENECK = PortSpec(buffer_packets=100, rate_bps=10e6)
BOTTLENECK_TM = "rate=10mbit,buffer=100,delay=10ms"
SAMPLING_PERIOD = 4
WARMUP_S = 5.0
PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class Host:
    ns: str
    port: int
    tcp_ecn: int

    @property
    def ip(self) -> str:
        return f"10.77.{self.port + 1}.1"

    @property
    def gateway(self) -> str:
        return f"10.77.{self.port + 1}.254"

    @property
    def mac(self) -> str:
        return f"02:00:00:00:01:{self.port:02x}"

    @property
    def switch_mac(self) -> str:
        return f"02:00:00:00:00:{self.port:02x}"

    @property
    def switch_if(self) -> str:
        return f"rd-s{self.port}"


ECN_SENDER, PLAIN_SENDER, RECEIVER = Host("rd-h1", 0, 1), Host("rd-h2", 1, 0), Host("rd-h3", 2, 2)
HOSTS = (ECN_SENDER, PLAIN_SENDER, RECEIVER)


def create_host(h: Host, lab: ExitStack) -> None:
    """The host's namespace, wired to its switch port by a veth (eth0 inside);
    `lab` deletes both when it closes."""
    ns = lab.enter_context(netlab.Namespace(h.ns))
    lab.enter_context(netlab.VethPair(h.switch_if, f"{h.ns}-e", peer_ns=h.ns, peer_rename="eth0"))
    ns.run("ip", "link", "set", "eth0", "address", h.mac)
    ns.run("ip", "addr", "add", f"{h.ip}/24", "dev", "eth0")
    ns.run("ip", "route", "add", "default", "via", h.gateway)
    ns.run("ip", "neigh", "add", h.gateway, "lladdr", h.switch_mac, "dev", "eth0")
    ns.run("sysctl", "-qw", f"net.ipv4.tcp_ecn={h.tcp_ecn}")


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_program(outdir: Path) -> tuple[Path, Path]:
    p4info = outdir / "red_ecn.p4info.txtpb"
    subprocess.run([str(BIN / "softswitch-p4c"), str(ROOT / "p4src" / "red_ecn.p4"), "-o", str(outdir),
                    "--p4runtime-files", str(p4info)], check=True)
    return p4info, outdir / "red_ecn.json"


def configure(ctl: Controller, red: RedConfig, p4info: Path, bmv2_json: Path) -> None:
    ctl.push_pipeline(str(p4info), str(bmv2_json))
    for h in HOSTS:
        ctl.add_route(f"{h.ip}/32", h.port, dst_mac=h.mac, src_mac=h.switch_mac)
    ctl.set_red(RECEIVER.port, red)
    ctl.set_sampling(RECEIVER.port, SAMPLING_PERIOD)


def tx_packets(h: Host) -> int:
    return int(netlab.sh("cat", "/sys/class/net/eth0/statistics/tx_packets", ns=h.ns).stdout)


def record(ctl: Controller, duration_s: float, started: float):
    """Telemetry samples and counter snapshots (every 0.5 s) until the deadline."""
    samples, counters = [], []
    next_poll = started
    while (now := time.monotonic()) < started + duration_s:
        if now >= next_poll:
            counters.append({"t": now - started, **ctl.port_counters(RECEIVER.port)})
            next_poll += 0.5
            if len(counters) % int(PROGRESS_EVERY_S / 0.5) == 0:
                _progress(counters[-1], samples)
        s = ctl.poll_sample(min(0.1, max(0.0, next_poll - time.monotonic())))
        if s is not None and s.port == RECEIVER.port:
            samples.append({"t_switch_us": s.time_us, "t": time.monotonic() - started,
                            "qdepth": s.qdepth, "avg": s.avg, "decision": s.decision})
    return samples, counters


def _progress(counters: dict, samples: list) -> None:
    avg = f"{samples[-1]['avg']:.1f}" if samples else "-"
    print(f"  t={counters['t']:5.1f}s avg={avg} marks={counters['early_marks']} "
          f"early_drops={counters['early_drops']} forced_drops={counters['forced_drops']}",
          file=sys.stderr, flush=True)


def run(red: RedConfig, cc: str, duration_s: float, seed: int, workdir: Path) -> dict:
    p4info, bmv2_json = compile_program(workdir)
    address = f"127.0.0.1:{free_tcp_port()}"
    procs, lab = [], ExitStack()

    def start(cmd, ns=None, **kw):
        procs.append(subprocess.Popen(netlab.netns_argv(ns, *cmd), **kw))
        return procs[-1]

    try:
        for h in HOSTS:
            create_host(h, lab)
        start([str(BIN / "softswitch"), *sum((["-i", f"{h.port}@{h.switch_if}"] for h in HOSTS), []),
               "--grpc-server-addr", address, "--seed", str(seed),
               "--tm", f"{RECEIVER.port}:{BOTTLENECK_TM}"], stdout=subprocess.DEVNULL)
        wait_for_server(address, timeout_s=20)
        ctl = Controller(address, ports={h.port: BOTTLENECK if h is RECEIVER else PortSpec()
                                         for h in HOSTS})
        configure(ctl, red, p4info, bmv2_json)
        counter_file = workdir / "receiver.json"
        counter = start([sys.executable, str(Path(__file__).with_name("flowcount.py")), "eth0",
                         str(counter_file)], ns=RECEIVER.ns, stdout=subprocess.PIPE, text=True)
        counter.stdout.readline()                      # "ready"
        servers = [start(["iperf3", "-s", "-1", "-J", "-p", str(5201 + i)], ns=RECEIVER.ns,
                         stdout=subprocess.PIPE, text=True) for i in range(2)]
        time.sleep(0.5)
        sent_before = {h.ns: tx_packets(h) for h in (ECN_SENDER, PLAIN_SENDER)}
        clients = [start(["iperf3", "-c", RECEIVER.ip, "-p", str(5201 + i), "-t", str(duration_s),
                          "-C", cc, "-J"], ns=h.ns, stdout=subprocess.PIPE, text=True)
                   for i, h in enumerate((ECN_SENDER, PLAIN_SENDER))]
        started = time.monotonic()
        samples, series = record(ctl, duration_s + 1.0, started)
        iperf = [json.loads(c.communicate(timeout=60)[0]) for c in clients]
        for srv in servers:
            srv.communicate(timeout=30)
        time.sleep(1.0)                                 # let the queue drain
        sent = {h.ns: tx_packets(h) - sent_before[h.ns] for h in (ECN_SENDER, PLAIN_SENDER)}
        final = ctl.port_counters(RECEIVER.port)
        counter.send_signal(signal.SIGTERM)
        counter.communicate(timeout=10)
        received = json.loads(counter_file.read_text())
        ctl.close()
        return summarise(red, cc, duration_s, seed, samples, series, final, sent, received, iperf)
    finally:
        for p in reversed(procs):
            netlab.stop(p)
        lab.close()


def summarise(red, cc, duration_s, seed, samples, series, final, sent, received, iperf) -> dict:
    steady = [s for s in samples if s["t"] >= WARMUP_S]
    avgs = sorted(s["avg"] for s in steady)
    flows = {}
    for (h, rep) in zip((ECN_SENDER, PLAIN_SENDER), iperf):
        rx = received["flows"].get(h.ip, {})
        flows[h.ns] = {
            "tcp_ecn": h.tcp_ecn, "sent_packets": sent[h.ns], "received_packets": rx.get("packets", 0),
            "lost_packets": sent[h.ns] - rx.get("packets", 0), "received_ce": rx.get("ce", 0),
            "received_ect": rx.get("ect", 0), "received_not_ect": rx.get("not_ect", 0),
            "goodput_mbps": rep["end"]["sum_received"]["bits_per_second"] / 1e6,
            "sender_retransmits": rep["end"]["sum_sent"]["retransmits"]}
    e, p = flows[ECN_SENDER.ns], flows[PLAIN_SENDER.ns]
    received_total = sum(f["packets"] for f in received["flows"].values())
    checks = {
        "avg_median_in_red_region": bool(avgs) and red.minth <= avgs[len(avgs) // 2] <= red.maxth,
        "ecn_flow_marked": e["received_ce"] > 0,
        "plain_flow_dropped_never_marked": p["lost_packets"] > 0 and p["received_ce"] == 0,
        "switch_marks_equal_receiver_ce": final["early_marks"] == e["received_ce"] + p["received_ce"],
        "switch_tx_equals_receiver_rx": final["packets"] == received_total,
        "switch_drops_equal_lost_packets":
            final["early_drops"] + final["forced_drops"] == e["lost_packets"] + p["lost_packets"],
    }
    return {
        "command": "control/demo/ecn_vs_drop.py", "duration_s": duration_s, "seed": seed,
        "congestion_control": cc,
        "red": {"minth": red.minth, "maxth": red.maxth, "maxp": red.maxp, "wq": red.wq,
                "wq_log": red.wq_log, "gentle": red.gentle, "ecn": red.ecn},
        "bottleneck": BOTTLENECK_TM, "sampling_period": SAMPLING_PERIOD, "warmup_s": WARMUP_S,
        "avg_queue": _stats(avgs, red),
        "qdepth": _stats(sorted(s["qdepth"] for s in steady), red),
        "switch_counters": final, "flows": flows, "capture_drops": received["capture_drops"],
        "checks": checks, "samples": samples, "counter_series": series}


def _stats(values: list, red: RedConfig) -> dict:
    if not values:
        return {}
    n = len(values)
    return {"n": n, "mean": sum(values) / n, "p10": values[n // 10], "median": values[n // 2],
            "p90": values[9 * n // 10],
            "fraction_in_red_region": sum(red.minth <= v <= red.maxth for v in values) / n,
            "fraction_above_maxth": sum(v > red.maxth for v in values) / n}


def write_results(result: dict, out: Path) -> None:
    """Summary + counter series as JSON, the telemetry samples as CSV."""
    samples = out.parent / (out.name + "_samples.csv")
    with samples.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "t_switch_us", "qdepth", "avg", "decision"])
        writer.writeheader()
        for row in result["samples"]:
            writer.writerow({**row, "t": f"{row['t']:.4f}", "avg": f"{row['avg']:.4f}"})
    summary = {k: v for k, v in result.items() if k != "samples"}
    summary["samples_file"] = samples.name
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    t = [s["t"] for s in result["samples"]]
    top.plot(t, [s["qdepth"] for s in result["samples"]], lw=0.5, color="0.6", label="queue (enq_qdepth)")
    top.plot(t, [s["avg"] for s in result["samples"]], lw=1.5, color="C0", label="RED average")
    red = result["red"]
    for y, name in ((red["minth"], "minth"), (red["maxth"], "maxth")):
        top.axhline(y, ls="--", color="C3", lw=1)
        top.text(0, y, name, color="C3", va="bottom")
    top.set_ylabel("packets")
    top.legend(loc="upper right")
    flows = result["flows"]
    top.set_title(f"RED minth {red['minth']:g}, maxth {red['maxth']:g}, maxp {red['maxp']:g}, "
                  f"wq 2^-{red['wq_log']}{', gentle' if red['gentle'] else ''}, {result['congestion_control']}, "
                  f"10 Mb/s; goodput "
                  f"ECN {flows[ECN_SENDER.ns]['goodput_mbps']:.2f}, "
                  f"non-ECN {flows[PLAIN_SENDER.ns]['goodput_mbps']:.2f} Mb/s", fontsize=10)
    series = result["counter_series"]
    ts = [c["t"] for c in series]
    for key, label in (("early_marks", "CE marks (ECN flow)"), ("early_drops", "early drops (Not-ECT packets)"),
                       ("forced_drops", "forced drops")):
        bottom.plot(ts, [c[key] for c in series], label=label)
    bottom.set_xlabel("time [s]")
    bottom.set_ylabel("packets (cumulative)")
    bottom.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="seconds per flow")
    ap.add_argument("--seed", type=int, default=1, help="seed of the switch's random extern")
    ap.add_argument("--cc", default="cubic",
                    help="TCP congestion control of both senders (BBR v1 ignores ECN and most loss)")
    ap.add_argument("--gentle", action="store_true", help="gentle RED instead of classic")
    ap.add_argument("--wq-log", type=int, default=RED.wq_log, help="wq = 2^-WQ_LOG")
    ap.add_argument("--out", type=Path, help="results path without suffix "
                    "(default control/results/ecn_vs_drop[_gentle])")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("ecn_vs_drop: needs root (network namespaces)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rd-demo-") as tmp:
        red = dataclasses.replace(RED, gentle=args.gentle, wq_log=args.wq_log)
        result = run(red, args.cc, args.duration, args.seed, Path(tmp))
    args.out = args.out or RESULTS / ("ecn_vs_drop_gentle" if args.gentle else "ecn_vs_drop")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_results(result, args.out)
    plot(result, args.out.with_suffix(".png"))
    print(json.dumps({k: result[k] for k in ("avg_queue", "switch_counters", "flows", "checks")}, indent=1))
    return 0 if all(result["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
