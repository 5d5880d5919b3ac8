"""p4src/red_ecn.p4 on the built-in target makes the reference model's
decisions, packet by packet.

The engine runs the compiled program synchronously (``process_packet``) with
queue metadata the test chooses: monotone enq_timestamps, queue depths from
0 to beyond maxth (and beyond the program's 16-bit saturation), and
deq_timedelta. Before each packet the test also writes the port's RED
registers (average, count, stored draw, last departure) to random values, so
one packet exercises any region, count and idle time; afterwards it reads the
registers, the decision and the frame back and compares them with
``redctl.redmodel.decide`` run on the same inputs (red_target_rig.py). The
draw the model uses is the one the program stored (the engine's random
source is not replayed here). Nothing depends on the wall clock: a seeded
test gives the same packets every run.
"""
from __future__ import annotations

import dataclasses
import random

import pytest
from red_target_rig import PORT, compile_red_ecn, frame, red_switch, run_and_compare, write_state

from redctl.convert import AVG_ONE, QDEPTH_MAX, PortSpec, RedConfig, to_constants
from redctl.redmodel import CE, NOT_ECT, PortState, decide, idle_bucket

import softswitch_engine as se

CONFIGS = [   # (RED settings, port rate): coarse idle buckets of 2..8 ms
    (RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=6), 1.5e6),
    (RedConfig(minth=2, maxth=8, maxp=0.3, wq_log=9, gentle=True), 10e6),
    (RedConfig(minth=1, maxth=3, maxp=1.0, wq_log=5, gentle=True, ecn=False), 1.5e6),
    (RedConfig(minth=3, maxth=9, maxp=0.05, wq_log=7), 10e6),
]
PACKETS_PER_CONFIG = 600
START_US = 1_000_000


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> str:
    return compile_red_ecn(tmp_path_factory.mktemp("red_ecn"))


def _random_state(rng: random.Random, cfg: RedConfig, now_us: int, idle_us: int) -> PortState:
    avg = rng.randrange(0, round(3 * cfg.maxth / (1 - cfg.wq) * AVG_ONE))  # forced drops too
    return PortState(avg=avg, count=rng.choice([0, 0, rng.randrange(1, 40)]),
                     rand=rng.getrandbits(32), last_departure=max(0, now_us - idle_us))


def _idle_us(i: int, rng: random.Random, width_us: int) -> int:
    """Cycles through: the previous packet departs after this one's enqueue
    (no decay), an idle time in the fine buckets (< 1 coarse bucket), and one
    across the coarse table (up to 2 full tables)."""
    return [-10**6, rng.randrange(width_us), rng.randrange(2048 * width_us)][i % 3]


def _queue_depth(i: int, rng: random.Random, cfg: RedConfig) -> int:
    """Even packets see an empty queue (idle decay applies); odd ones a queue
    up to 3 maxth, every 25th odd one beyond the program's saturation."""
    if i % 2 == 0:
        return 0
    if i % 50 == 1:
        return rng.randrange(QDEPTH_MAX, 1 << 19)
    return rng.randrange(1, 3 * cfg.maxth + 1)


@pytest.mark.parametrize("cfg, rate", CONFIGS)
def test_target_decides_like_the_model(program, cfg, rate):
    constants = to_constants(cfg, PortSpec(buffer_packets=1000, rate_bps=rate, mean_packet_bytes=1500))
    width_us = 1 << constants.idle_log
    sw = red_switch(se, program, constants)
    rng = random.Random(f"{cfg}{rate}")
    now = START_US
    seen, idle_buckets, depths = set(), set(), set()
    for i in range(PACKETS_PER_CONFIG):
        now += rng.randrange(width_us)
        q = _queue_depth(i, rng, cfg)
        before = _random_state(rng, cfg, now, _idle_us(i, rng, width_us))
        write_state(sw, before)
        step = run_and_compare(sw, constants, q, now, rng.randrange(4 * width_us), rng.randrange(4))
        seen.add(step.decision)
        depths.add(min(q, cfg.maxth + 1))
        if q == 0 and now > before.last_departure:
            idle_buckets.add(idle_bucket(constants, now - before.last_departure))
    assert now < 1 << 32
    assert seen == {0, 1, 2, 3} if cfg.ecn else seen == {0, 2, 3}, seen   # every decision kind
    assert depths == set(range(cfg.maxth + 2))                          # 0 .. beyond maxth
    assert len(idle_buckets) > 50                                        # decay across the table
    assert min(idle_buckets) < 1024 < max(idle_buckets)                  # fine and coarse buckets


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
    sw = red_switch(se, program, constants)
    sw.register_write("red_avg", PORT, 40 * AVG_ONE)
    sw.register_write("MyEgress.last_departure", PORT, 0)
    now = 2_000_000_000     # below 2^31: the fine branch for idle_log 31
    sw.process_packet(0, frame(0), enq_timestamp=now)
    expected = decide(constants, PortState(avg=40 * AVG_ONE), 0, now, 0, 0, rand32=0).state.avg
    assert sw.register_read("red_avg", PORT) == expected
    assert idle_bucket(constants, now) == (1024 if idle_log >= 32 else now >> 21)
