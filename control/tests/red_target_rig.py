"""The built-in target loaded with p4src/red_ecn.p4 and one port's RED
configuration, the packet-by-packet comparison with the reference model
(``redctl.redmodel.decide``) that test_redmodel_target.py and
test_redtrace_target.py share, and the recorded trace's replay through the
pipeline (``replay_trace``), whose decisions and draws hw/fpga/tests/test_red_rtl.py
also gives the RTL."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from redctl import compiler
from redctl.convert import QDEPTH_MAX, PortSpec, RedConfig, RedConstants, to_constants
from redctl.redmodel import PortState, Step, decide

REPO = Path(__file__).resolve().parents[2]
PORT = 1
MAC = "02:00:00:00:00:0b"
REGISTERS = {"avg": "red_avg", "count": "MyEgress.red_count", "rand": "MyEgress.red_rand",
             "last_departure": "MyEgress.last_departure"}
HEADERS = len(Ether() / IP() / UDP())
WIDTHS = {"mode": 8, "ecn": 1, "gentle": 1, "wq_log": 8, "minth": 32, "maxth": 32,
          "maxp": 32, "slope": 48, "gentle_slope": 48, "idle_log": 8}


def compile_red_ecn(out_dir: Path) -> str:
    _, json_path = compiler.compile_program(REPO / "p4src" / "red_ecn.p4", out_dir)
    return Path(json_path).read_text()


def _bytes(value: int, bits: int) -> bytes:
    return value.to_bytes((bits + 7) // 8, "big")


def red_switch(se, program: str, constants: RedConstants):
    """A switch routing 10.0.1.0/24 to PORT, whose RED settings are `constants`."""
    sw = se.Switch(ports={}, seed=7)
    sw.load_pipeline(program)
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", bytes([10, 0, 1, 0]), 24)], "MyIngress.ipv4_forward",
                 [bytes.fromhex(MAC.replace(":", "")), bytes(6), _bytes(PORT, 9)])
    sw.table_add("MyEgress.red_config", [("exact", _bytes(PORT, 9))], "MyEgress.set_red",
                 [_bytes(v, WIDTHS[k]) for k, v in constants.action_params().items()])
    for bucket, factor in constants.decay_factors.items():
        sw.table_add("MyEgress.red_idle_decay", [("exact", _bytes(PORT, 9)), ("exact", _bytes(bucket, 11))],
                     "MyEgress.set_decay_factor", [_bytes(factor, 32)])
    return sw


def frame(ecn: int, size: int = 0) -> bytes:
    """A UDP packet to PORT with the given ECN field, padded to `size` bytes."""
    return bytes(Ether(dst="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.1.2", tos=ecn)
                 / UDP(sport=1, dport=2) / bytes(max(20, size - HEADERS)))


def read_state(sw) -> PortState:
    return PortState(**{field: sw.register_read(name, PORT) for field, name in REGISTERS.items()})


def write_state(sw, state: PortState) -> None:
    for field, name in REGISTERS.items():
        sw.register_write(name, PORT, getattr(state, field))


def run_and_compare(sw, constants: RedConstants, enq_qdepth: int, enq_timestamp: int,
                    deq_timedelta: int, ecn: int, size: int = 0) -> Step:
    """One packet through the target with the given queue metadata; asserts
    that registers, decision and the ECN field sent equal the model's, which
    is fed the draw the program stored in MyEgress.red_rand."""
    before = read_state(sw)
    out = sw.process_packet(0, frame(ecn, size), enq_qdepth=enq_qdepth, enq_timestamp=enq_timestamp,
                            deq_timedelta=deq_timedelta)
    after = read_state(sw)
    step = decide(constants, before, enq_qdepth, enq_timestamp, deq_timedelta, ecn, rand32=after.rand)
    where = (before, enq_qdepth, enq_timestamp, deq_timedelta, ecn)
    assert after == step.state, where
    assert sw.register_read("last_decision", PORT) == step.decision, where
    assert sw.register_read("last_sample_time", PORT) == enq_timestamp, where
    assert sw.register_read("last_qdepth", PORT) == min(enq_qdepth, QDEPTH_MAX), where
    assert step.drew or after.rand == before.rand, where
    sent_ecn = [Ether(f)[IP].tos & 3 for _, f in out]
    assert sent_ecn == ([] if step.decision >= 2 else [step.ecn]), (where, step)
    return step


# The queue trace of a real lab run (2 ECN TCP flows + not-ECT UDP through a
# 10 Mb/s RED bottleneck) and what hw/fpga/traces/record.py installed on its port.
TRACE = REPO / "hw" / "fpga" / "traces" / "bottleneck_red.csv"
TRACE_RED = to_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=4, ecn=True),
                         PortSpec(buffer_packets=100, rate_bps=10e6))


def read_trace(path: Path = TRACE) -> list[dict[str, int]]:
    """A recorded queue trace: one dict per packet (enq_timestamp_us, enq_qdepth,
    deq_timedelta_us, ecn, bytes)."""
    with open(path, newline="") as f:
        return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]


@dataclass(frozen=True)
class Replay:
    steps: list[Step]    # per packet; decision and ECN are the pipeline's (run_and_compare asserts it)
    draws: list[int]     # the uniform R the pipeline drew, in order (one per step that drew)


def replay_trace(se, out_dir: Path, rows: list[dict[str, int]], constants: RedConstants = TRACE_RED) -> Replay:
    """The trace through p4src/red_ecn.p4 on the built-in target, each packet
    checked against the model fed the program's draw; returns the decisions
    and the draws, which the RTL replay (hw/fpga/tests) injects."""
    sw = red_switch(se, compile_red_ecn(out_dir), constants)
    steps = [run_and_compare(sw, constants, r["enq_qdepth"], r["enq_timestamp_us"], r["deq_timedelta_us"],
                             r["ecn"], r["bytes"])
             for r in rows]
    return Replay(steps, [s.state.rand for s in steps if s.drew])
