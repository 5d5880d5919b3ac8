"""p4src/red_ecn.p4 on the built-in target makes the reference model's
decisions, packet by packet.

The engine runs the compiled program synchronously (``process_packet``),
where every packet sees an empty queue (enq_qdepth 0, deq_timedelta 0) and
enq_timestamp = the switch clock. Before each packet the test writes the
port's RED registers (average, count, stored draw, last departure) to random
values, so one packet exercises any region, count and idle time; afterwards
it reads the registers, the decision and the frame back and compares them
with ``redctl.redmodel.decide`` run on the same inputs. The draw the model
uses is the one the program stored (the engine's random source is not
replayed here). Queue depths above 0 cannot be injected this way (noted in
control/README.md); the PTF suite covers them statistically.
"""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from redctl import compiler
from redctl.convert import AVG_ONE, PortSpec, RedConfig, to_constants
from redctl.redmodel import CE, NOT_ECT, PortState, decide, idle_bucket

se = pytest.importorskip("softswitch_engine")

REPO = Path(__file__).resolve().parents[2]
PORT = 1
MAC = "02:00:00:00:00:0b"
CONFIGS = [   # (RED settings, port rate): coarse idle buckets of 2..8 ms, longer than a call
    (RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=6), 1.5e6),
    (RedConfig(minth=2, maxth=8, maxp=0.3, wq_log=9, gentle=True), 10e6),
    (RedConfig(minth=1, maxth=3, maxp=1.0, wq_log=5, gentle=True, ecn=False), 1.5e6),
    (RedConfig(minth=3, maxth=9, maxp=0.05, wq_log=7), 10e6),
]
PACKETS_PER_CONFIG = 400


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> str:
    _, json_path = compiler.compile_program(REPO / "p4src" / "red_ecn.p4", tmp_path_factory.mktemp("red_ecn"))
    return Path(json_path).read_text()


def _bytes(value: int, bits: int) -> bytes:
    return value.to_bytes((bits + 7) // 8, "big")


def _switch(program: str, constants) -> se.Switch:
    sw = se.Switch(ports={}, seed=7)
    sw.load_pipeline(program)
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", bytes([10, 0, 1, 0]), 24)], "MyIngress.ipv4_forward",
                 [bytes.fromhex(MAC.replace(":", "")), bytes(6), _bytes(PORT, 9)])
    widths = {"mode": 8, "ecn": 1, "gentle": 1, "wq_log": 8, "minth": 32, "maxth": 32,
              "maxp": 32, "slope": 48, "gentle_slope": 48, "idle_log": 8}
    sw.table_add("MyEgress.red_config", [("exact", _bytes(PORT, 9))], "MyEgress.set_red",
                 [_bytes(v, widths[k]) for k, v in constants.action_params().items()])
    for bucket, factor in constants.decay_factors.items():
        sw.table_add("MyEgress.red_idle_decay", [("exact", _bytes(PORT, 9)), ("exact", _bytes(bucket, 11))],
                     "MyEgress.set_decay_factor", [_bytes(factor, 32)])
    return sw


def _frame(ecn: int) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.1.2", tos=ecn)
                 / UDP(sport=1, dport=2) / bytes(20))


REGISTERS = {"avg": "red_avg", "count": "MyEgress.red_count", "rand": "MyEgress.red_rand",
             "last_departure": "MyEgress.last_departure"}


def _random_state(rng: random.Random, cfg: RedConfig, now_us: int, width_us: int) -> PortState:
    avg = rng.randrange(0, round(3 * cfg.maxth / (1 - cfg.wq) * AVG_ONE))  # forced drops too
    # the previous packet departs after this one's enqueue (no decay), or an
    # idle time in the fine buckets (< 1 coarse bucket), or up to 2 full tables
    idle = rng.choice([-10**6, rng.randrange(width_us), rng.randrange(2048 * width_us)])
    return PortState(avg=avg, count=rng.choice([0, 0, rng.randrange(1, 40)]),
                     rand=rng.getrandbits(32), last_departure=max(0, now_us - idle))


@pytest.mark.parametrize("cfg, rate", CONFIGS)
def test_target_decides_like_the_model(program, cfg, rate):
    port = PortSpec(buffer_packets=1000, rate_bps=rate, mean_packet_bytes=1500)
    constants = to_constants(cfg, port)
    sw = _switch(program, constants)
    rng = random.Random(f"{cfg}{rate}")
    now = 0
    seen, idle_buckets = set(), set()
    for _ in range(PACKETS_PER_CONFIG):
        before = _random_state(rng, cfg, now, 1 << constants.idle_log)
        for field, name in REGISTERS.items():
            sw.register_write(name, PORT, getattr(before, field))
        ecn = rng.randrange(4)
        out = sw.process_packet(0, _frame(ecn))
        now = sw.register_read("last_sample_time", PORT)
        after = PortState(**{f: sw.register_read(n, PORT) for f, n in REGISTERS.items()})
        step = decide(constants, before, 0, now, 0, ecn, rand32=after.rand)
        assert after == step.state, (before, now)
        assert sw.register_read("last_decision", PORT) == step.decision, (before, now)
        assert step.drew or after.rand == before.rand
        sent_ecn = [Ether(f)[IP].tos & 3 for _, f in out]
        assert sent_ecn == ([] if step.decision >= 2 else [step.ecn]), (before, now, step)
        seen.add(step.decision)
        idle_buckets.add(idle_bucket(constants, (now - before.last_departure) & 0xFFFFFFFF))
    assert 0 in seen and 3 in seen and seen & {1, 2}, seen     # pass, forced drop, a selection
    assert len(idle_buckets) > 50                                # decay across the table
    assert min(idle_buckets) < 1024 < max(idle_buckets)          # fine and coarse buckets


def test_model_marks_ect_and_drops_not_ect():
    """Sanity of the model's ECN rule on its own: p_b = 1 (gentle, maxp 1)."""
    c = to_constants(RedConfig(minth=1, maxth=2, maxp=1.0, wq_log=0, gentle=True), PortSpec())
    state = PortState()
    assert decide(c, state, 2, 10, 0, 2, rand32=0).ecn == CE
    assert decide(c, state, 2, 10, 0, NOT_ECT, rand32=0).decision == 2


@pytest.mark.parametrize("idle_log", [31, 32, 40, 255])
def test_idle_bucket_follows_the_program_beyond_32_bit_shifts(program, idle_log):
    """Raw idle_log >= 32 (redctl never installs it): 32w1 << idle_log is 0, so
    every idle time takes the coarse branch with bucket 0, key 1024."""
    constants = dataclasses.replace(to_constants(CONFIGS[0][0], PortSpec(rate_bps=1.5e6)),
                                    idle_log=idle_log, decay_factors={1024: 1 << 31, 1023: 1 << 30})
    sw = _switch(program, constants)
    sw.register_write("red_avg", PORT, 40 * AVG_ONE)
    sw.register_write("MyEgress.last_departure", PORT, 0)
    sw.process_packet(0, _frame(0))
    now = sw.register_read("last_sample_time", PORT)
    expected = decide(constants, PortState(avg=40 * AVG_ONE), 0, now, 0, 0, rand32=0).state.avg
    assert sw.register_read("red_avg", PORT) == expected
    assert idle_bucket(constants, now) == (1024 if idle_log >= 32 else now >> 21)
