"""The TNA RED program (hw/tofino/red_ecn.p4) on the built-in target, and its
marking curve against the v1model program's (p4src/red_ecn.p4).

    .venv/bin/python hw/tofino/tna_curve.py [--packets N] [--write hw/tofino/RESULTS.md]

At each integer queue length q from below minth to beyond maxth, both programs
see N packets with the queue held at q (the average pinned at q), ECN-capable:
the fraction of packets marked is RED's marking curve. The TNA profile
(p4src/README.md) bounds the TNA p_b's distance from the exact one by
`tna_pb_error_bound`; the count law turns p_b into a marked fraction
2 p_b / (1 + p_b) (uniform gaps), whose slope is at most 2, so the two curves
may differ by 2 x that bound plus sampling noise. The noise is estimated from
batch means (20 batches per point) and the check is at 99.9 % per point.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO / "control"), str(REPO / "softswitch"), str(REPO / "control" / "tests")]

from redctl.convert import (PortSpec, RedConfig, TnaConstants, tna_pb, tna_pb_error_bound,  # noqa: E402
                            to_constants, to_tna_constants)
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

PROGRAM = HERE / "red_ecn.p4"
PORT = 1
MAC = bytes.fromhex("02000000000b")
BATCHES = 20
TOS_OFFSET = 15               # Ethernet header (14) + IPv4 version/IHL byte
Z_999 = 3.29                  # two-sided 99.9 % normal quantile
CONFIG = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9, ecn=True)
SPEC = PortSpec(buffer_packets=64, rate_bps=10e6, mean_packet_bytes=1500)


def compile_tna(arch: str = "tna"):
    """(BMv2 JSON text, P4Info text) of hw/tofino/red_ecn.p4 for the built-in target."""
    import json

    from softswitch_p4c.driver import compile_tna_to_objects
    from softswitch_p4c.p4info import to_text
    bmv2_json, p4info = compile_tna_to_objects(str(PROGRAM), arch)
    return json.dumps(bmv2_json), to_text(p4info)


def _bytes(value: int, bits: int) -> bytes:
    return value.to_bytes((bits + 7) // 8, "big")


def tna_switch(se, program: str, c: TnaConstants, seed: int = 7):
    """A switch running the TNA program, routing 10.0.1.0/24 to PORT with RED c."""
    sw = se.Switch(ports={}, seed=seed)
    sw.load_pipeline(program)
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", bytes([10, 0, 1, 0]), 24)], "MyIngress.ipv4_forward",
                 [MAC, bytes(6), _bytes(PORT, 9)])
    sw.table_add("MyEgress.red_config", [("exact", _bytes(PORT, 9))], "MyEgress.set_red",
                 [_bytes(c.mode, 8), _bytes(c.ecn, 1)])
    for r in c.ranges:
        args = [_bytes(r.pb, 32)] if r.action == "set_pb" else []
        sw.table_add("MyEgress.red_pb", [("exact", _bytes(PORT, 9)),
                                         ("range", _bytes(r.lo, 32), _bytes(r.hi, 32))],
                     f"MyEgress.{r.action}", args, 1)
    sw.register_write("MyEgress.red_avg_lpf", PORT, c.lpf_tau_ns)
    return sw


def frame(ecn: int) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.1.2", tos=ecn)
                 / UDP(sport=1, dport=2) / bytes(20))


@dataclass
class Point:
    q: int
    marked: list[float]          # marked fraction per batch

    @property
    def fraction(self) -> float:
        return statistics.fmean(self.marked)

    @property
    def stderr(self) -> float:
        return statistics.stdev(self.marked) / math.sqrt(len(self.marked))


def pinned_run(sw, q_pkt: int, packets: int, pin, queue_units: int) -> Point:
    """`packets` ECT packets with the queue (and average) held at q_pkt packets."""
    pin(sw, q_pkt)
    per_batch = packets // BATCHES
    marked, t, sent = [], 1_000_000, frame(1)
    for _ in range(BATCHES):
        hits = 0
        for _ in range(per_batch):
            t += 1200                                    # one 1500 B packet time at 10 Mb/s
            out = sw.process_packet(0, sent, enq_qdepth=q_pkt * queue_units,
                                    enq_timestamp=t, deq_timedelta=0)
            hits += bool(out) and out[0][1][TOS_OFFSET] & 3 == 3
        marked.append(hits / per_batch)
    return Point(q_pkt, marked)


def curves(packets: int, levels=None):
    """{q: (v1model Point, TNA Point)} over integer queue lengths."""
    import softswitch_engine as se
    from red_target_rig import compile_red_ecn, red_switch
    import tempfile

    levels = levels or range(CONFIG.minth - 1, CONFIG.maxth + 2)
    tna = to_tna_constants(CONFIG, SPEC)
    with tempfile.TemporaryDirectory() as tmp:
        v1_program = compile_red_ecn(Path(tmp))
    tna_program, _ = compile_tna("tna")

    def pin_v1(sw, q):
        sw.register_write("red_avg", PORT, q << 16)          # a global register in p4src

    def pin_tna(sw, q):
        sw.register_write("MyEgress.red_avg_lpf__avg", PORT, q * tna.cells_per_packet << 8)
    out = {}
    for q in levels:
        v1 = pinned_run(red_switch(se, v1_program, to_constants(CONFIG, SPEC)), q, packets, pin_v1, 1)
        t2 = pinned_run(tna_switch(se, tna_program, tna), q, packets, pin_tna, tna.cells_per_packet)
        out[q] = (v1, t2)
    return out, tna


def marked_fraction(pb: float | None) -> float:
    """Uniform count law: gaps uniform on 1..1/p_b, so 2 p_b / (1 + p_b) of packets are marked."""
    if pb is None:
        return 0.0                                       # forced region: dropped, not marked
    return 2 * pb / (1 + pb) if pb > 0 else 0.0


def agreement(v1: Point, tna: Point) -> tuple[float, float]:
    """(|difference|, allowed): 2 x the p_b bound + the 99.9 % noise of the difference."""
    allowed = 2 * tna_pb_error_bound(CONFIG) + Z_999 * math.hypot(v1.stderr, tna.stderr)
    return abs(v1.fraction - tna.fraction), allowed


def report(results, tna: TnaConstants, packets: int) -> str:
    rows = ["| q (packets) | v1model marked | TNA marked | TNA p_b | expected 2p/(1+p) | abs. diff | allowed | ok |",
            "|---|---|---|---|---|---|---|---|"]
    ok_all = True
    for q, (v1, t) in results.items():
        pb = tna_pb(tna, q * tna.cells_per_packet << 8)
        diff, allowed = agreement(v1, t)
        ok = diff <= allowed
        ok_all &= ok
        pb_text = "forced" if pb is None else f"{pb / 2**32:.5f}"
        rows.append(f"| {q} | {v1.fraction:.4f} | {t.fraction:.4f} | {pb_text} | "
                    f"{marked_fraction(None if pb is None else pb / 2**32):.4f} | {diff:.4f} | "
                    f"{allowed:.4f} | {'yes' if ok else 'NO'} |")
    head = (f"RED minth={CONFIG.minth} maxth={CONFIG.maxth} maxp={CONFIG.maxp} (ECN), "
            f"{packets} packets per point in {BATCHES} batches; TNA: {tna.cells_per_packet} cells "
            f"per 1500 B packet, {sum(r.action == 'set_pb' for r in tna.ranges)} p_b ranges. "
            f"All points within bounds: {'yes' if ok_all else 'NO'}.")
    return head + "\n\n" + "\n".join(rows) + "\n", ok_all


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20_000, help="packets per queue length")
    ap.add_argument("--write", type=Path, help="replace the measurement section of this file")
    args = ap.parse_args(argv)
    results, tna = curves(args.packets)
    text, ok = report(results, tna, args.packets)
    print(text)
    if args.write:
        write_section(args.write, text, args.packets)
    return 0 if ok else 1


MARK = "<!-- tna_curve.py output -->"


def write_section(path: Path, text: str, packets: int) -> None:
    old = path.read_text() if path.exists() else ""
    command = f"`.venv/bin/python hw/tofino/tna_curve.py --packets {packets} --write {path.resolve().relative_to(REPO)}`"
    body = f"{MARK}\nCommand: {command}\n\n{text}{MARK}\n"
    if MARK in old:
        before, _, rest = old.partition(MARK)
        _, _, after = rest.partition(MARK + "\n")
        path.write_text(before + body + after)
    else:
        path.write_text(old + body)


if __name__ == "__main__":
    sys.exit(main())
