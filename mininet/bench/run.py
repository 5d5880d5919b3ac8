"""Lab benchmarks (`make bench`): link fidelity and scale of the single
bottleneck. Writes mininet/bench/RESULTS.md and results.json next to this file.

Fidelity: one long CUBIC flow (the Linux default) through a bottleneck of rate R with a BDP buffer
and 40 ms configured RTT, R = 1.5, 10, 100 Mb/s: goodput / R over the last
part of the run (the target is >= 95 %; a 1514-byte frame carries 1448
payload bytes, so 95.6 % is the ceiling), and ping RTT versus the configured
RTT (the target is within 0.5 ms), reported raw and net of the ping frames'
own serialisation on the bottleneck, which is part of any real link's RTT.

Scale: n sender/receiver pairs (and m connections per pair) sharing a
100 Mb/s bottleneck: set-up time, aggregate goodput, Jain's index.

Usage: python mininet/bench/run.py [--only fidelity|scale]
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from aqmlab import metrics
from aqmlab.config import parse_experiment
from aqmlab.lab import LabNetwork
from aqmlab.topology import build
from aqmlab.workloads import Run

HERE = Path(__file__).resolve().parent
RTT_MS = 40.0
PING_PAYLOAD = 16                     # the smallest ping that still reports RTTs
PING_FRAME_BITS = (14 + 20 + 8 + PING_PAYLOAD) * 8
FIDELITY = [(1.5e6, 40), (10e6, 25), (100e6, 20)]   # (rate, seconds of traffic)
WARMUP_S = 8
SCALE = [(8, 1), (32, 1), (64, 1), (128, 1), (250, 1), (16, 16), (16, 40), (16, 100)]   # (pairs, connections per pair)
SCALE_SECONDS = 15


def scenario(rate_bps, pairs=1, connections=1, buffer="bdp"):
    return parse_experiment({
        "name": "bench", "tcp": {"cc": "cubic"}, "aqm": {"mode": "droptail"},
        "topology": {"kind": "single_bottleneck",
                     "bottleneck": {"rate": rate_bps, "delay": f"{RTT_MS / 2}ms", "buffer": buffer},
                     "server_access": {"rate": "1gbit", "delay": "0ms"},
                     "client_access": {"rate": "1gbit", "delay": "0ms"}},
        "workload": [{"kind": "bulk", "pairs": pairs, "connections": connections}],
    }).scenarios[0]


def ping_rtts(network, count=20):
    client, server = network.clients[0], network.servers[0]
    out = client.host.cmd(f"ping -c {count} -i 0.2 -s {PING_PAYLOAD} {server.ip}")
    return [float(v) for v in re.findall(r"time=([\d.]+) ms", out)]


def fidelity(rate_bps, seconds):
    with LabNetwork() as lab:
        network = build(scenario(rate_bps), "softswitch", lab)
        try:
            rtts = ping_rtts(network)
            job = Run(lab, network.pairs, seconds, seed=1)
            job.wait()
            records = job.records()     # before close: the lab removes its logs
        finally:
            network.close_controllers()
    window = (job.epoch + WARMUP_S, job.end)
    goodput = sum(metrics.flow_goodputs(records, window).values())
    serialisation_ms = 2 * PING_FRAME_BITS / rate_bps * 1e3
    median = statistics.median(rtts)
    return {
        "rate_mbps": rate_bps / 1e6, "buffer_packets": network.bottleneck_buffer,
        "goodput_mbps": goodput / 1e6, "goodput_share": goodput / rate_bps,
        "rtt_configured_ms": RTT_MS, "rtt_min_ms": min(rtts), "rtt_median_ms": median,
        "rtt_serialisation_ms": serialisation_ms,
        "rtt_error_raw_ms": median - RTT_MS,
        "rtt_error_net_ms": median - RTT_MS - serialisation_ms,
        "seconds": seconds,
    }


def scale(pairs, connections):
    started = time.time()
    with LabNetwork() as lab:
        network = build(scenario(100e6, pairs, connections), "softswitch", lab)
        setup_s = time.time() - started
        try:
            job = Run(lab, network.pairs, SCALE_SECONDS, seed=1)
            job.wait()
            records = job.records()     # before close: the lab removes its logs
        finally:
            network.close_controllers()
    goodputs = list(metrics.flow_goodputs(records, (job.epoch + 5, job.end)).values())
    return {"pairs": pairs, "hosts": 2 * pairs, "connections": pairs * connections,
            "setup_s": setup_s, "total_s": time.time() - started,
            "flows_reporting": len(goodputs), "goodput_mbps": sum(goodputs) / 1e6,
            "jain_index": metrics.jain_index(goodputs)}


def load_text(results, key):
    load = results.get(key)
    return " / ".join(f"{v:.2f}" for v in load) if load else "not recorded"


def write_results(results):
    (HERE / "results.json").write_text(json.dumps(results, indent=2))
    lines = ["# Lab benchmark results", "",
             f"Measured {results['date']} on {results['machine']} by `make bench` "
             "(`mininet/bench/run.py`); the machine was shared with other jobs.",
             "", f"Load average (1/5/15 min) at the start: {load_text(results, 'load_start')}; "
             f"at the end: {load_text(results, 'load_end')}.", ""]
    if results.get("fidelity"):
        lines += ["## Fidelity: one CUBIC flow, BDP buffer, 40 ms configured RTT", "",
                  f"Goodput over the run after {WARMUP_S} s of warm-up; ping: 20 probes of "
                  f"{PING_PAYLOAD}-byte payload on the idle path. `net` subtracts the ping "
                  "frames' serialisation on the bottleneck (both directions).", "",
                  "| rate (Mb/s) | buffer (pkts) | goodput (Mb/s) | goodput / rate | "
                  "RTT min / median (ms) | serialisation (ms) | RTT error raw / net (ms) |",
                  "|---|---|---|---|---|---|---|"]
        for f in results["fidelity"]:
            lines.append(
                f"| {f['rate_mbps']:g} | {f['buffer_packets']} | {f['goodput_mbps']:.3f} | "
                f"{f['goodput_share']:.1%} | {f['rtt_min_ms']:.2f} / {f['rtt_median_ms']:.2f} | "
                f"{f['rtt_serialisation_ms']:.2f} | {f['rtt_error_raw_ms']:+.2f} / "
                f"{f['rtt_error_net_ms']:+.2f} |")
    if results.get("scale"):
        lines += ["", "## Scale: n pairs x m connections through one 100 Mb/s bottleneck", "",
                  f"{SCALE_SECONDS} s of unlimited CUBIC bulk per row, BDP buffer, drop-tail; "
                  "goodput after 5 s.", "",
                  "| pairs (hosts) | connections | set-up (s) | goodput (Mb/s) | Jain | "
                  "flows reporting |", "|---|---|---|---|---|---|"]
        for s in results["scale"]:
            lines.append(f"| {s['pairs']} ({s['hosts']}) | {s['connections']} | "
                         f"{s['setup_s']:.1f} | {s['goodput_mbps']:.1f} | "
                         f"{s['jain_index']:.3f} | {s['flows_reporting']} |")
    (HERE / "RESULTS.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("fidelity", "scale"))
    parser.add_argument("--rates", type=float, nargs="*", help="fidelity rates in Mb/s")
    args = parser.parse_args(argv)
    previous = json.loads((HERE / "results.json").read_text()) \
        if (HERE / "results.json").exists() else {}
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": "2 vCPU Debian 12 VM, kernel " + Path("/proc/sys/kernel/osrelease")
               .read_text().strip(),
               "fidelity": previous.get("fidelity"), "scale": previous.get("scale"),
               "load_start": os.getloadavg()}
    if args.only in (None, "fidelity"):
        results["fidelity"] = []
        for rate, seconds in FIDELITY:
            if args.rates and rate / 1e6 not in args.rates:
                continue
            results["fidelity"].append(fidelity(rate, seconds))
            print(results["fidelity"][-1], flush=True)
    if args.only in (None, "scale"):
        results["scale"] = []
        for pairs, connections in SCALE:
            results["scale"].append(scale(pairs, connections))
            print(results["scale"][-1], flush=True)
    results["load_end"] = os.getloadavg()
    write_results(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
