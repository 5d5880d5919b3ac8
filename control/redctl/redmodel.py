"""The integer reference model of red_ecn.p4's egress RED decision.

This is where the P4 program's semantics (p4src/README.md, "RED as
implemented") are written as code, bit for bit: the controller's conversion
tests, the PTF expectations, the comparison with the built-in target and the
FPGA's RTL tests all take their expected values from ``decide``.

One call is one IPv4 packet reaching egress on a port:

    state = PortState()
    step = decide(constants, state, enq_qdepth=3, enq_timestamp=1_000,
                  deq_timedelta=40, ecn=ECT0, rand32=0x1234_5678)
    step.decision, step.ecn, step.drew, step.state

``constants`` is what the controller installs for the port
(``redctl.convert.to_constants``; None = no red_config entry: drop-tail,
wq = 1, no decay entries). ``rand32`` is the value the program's
``random<bit<32>>`` returns if this packet draws (``step.drew`` says whether
it did, so a caller replaying a random stream advances it only then).
Timestamps are microseconds on the 32-bit clock of ``enq_timestamp``.

The TNA program (hw/tofino/red_ecn.p4, "TNA profile" of p4src/README.md)
averages with Tofino's ``Lpf`` instead: ``lpf_sample`` is one sample of it as
the built-in target runs it (the engine's ``tna_lpf_sample``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .convert import (AVG_FRAC_BITS, DECAY_FRAC_BITS, IDLE_BUCKETS, IDLE_FINE_LOG, QDEPTH_MAX,
                      RedConstants, implied_pb)

PASS, MARK, EARLY_DROP, FORCED_DROP = 0, 1, 2, 3      # DECISION_* of headers.p4
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3                  # RFC 3168 codepoints
MODE_RED = 1
MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
NO_RED = RedConstants(mode=0, ecn=0, gentle=0, wq_log=0, minth=0, maxth=0, maxp=0,
                      slope=0, gentle_slope=0, idle_log=0)


@dataclass(frozen=True)
class PortState:
    """The per-port registers the decision reads and writes."""
    avg: int = 0              # red_avg: packets * 2^16
    count: int = 0            # MyEgress.red_count: packets since the last selection
    rand: int = 0             # MyEgress.red_rand: the draw kept since count was 0
    last_departure: int = 0   # MyEgress.last_departure: previous packet's dequeue time, us


@dataclass(frozen=True)
class Step:
    decision: int             # PASS, MARK, EARLY_DROP or FORCED_DROP
    ecn: int                  # the packet's ECN field on the way out
    drew: bool                # True if the packet consumed rand32
    state: PortState


def decayed(constants: RedConstants, avg: int, idle_bucket: int) -> int:
    """avg after the red_idle_decay look-up for idle_bucket (a miss: unchanged)."""
    factor = constants.decay_factors.get(idle_bucket)
    return avg if factor is None else (avg * factor) >> DECAY_FRAC_BITS


def idle_bucket(constants: RedConstants, idle_us: int) -> int:
    """red_idle_decay's key for an idle time: fine bucket below 2^idle_log us,
    else 1024 + the coarse bucket (saturated at 1023)."""
    if idle_us < (1 << constants.idle_log) & MASK32:     # 32w1 << idle_log: 0 from 32 on
        return idle_us >> max(0, constants.idle_log - IDLE_FINE_LOG)
    return IDLE_BUCKETS + min(idle_us >> constants.idle_log, IDLE_BUCKETS - 1)


def ewma(avg: int, q: int, wq_log: int) -> int:
    """avg += (q - avg) * 2^-wq_log, truncating in each unsigned branch."""
    q_fixed = q << AVG_FRAC_BITS
    if q_fixed >= avg:
        return avg + ((q_fixed - avg) >> wq_log)
    return avg - ((avg - q_fixed) >> wq_log)


def decide(constants: RedConstants | None, state: PortState, enq_qdepth: int,
           enq_timestamp: int, deq_timedelta: int, ecn: int, rand32: int) -> Step:
    """One packet through MyEgress's RED block (see the module docstring)."""
    c = constants or NO_RED
    q = min(enq_qdepth, QDEPTH_MAX)
    now = enq_timestamp & MASK32
    avg = state.avg
    if q == 0 and now > state.last_departure:
        avg = decayed(c, avg, idle_bucket(c, now - state.last_departure))
    departure = (now + deq_timedelta) & MASK32
    avg = ewma(avg, q, c.wq_log)
    state = replace(state, avg=avg, last_departure=departure)
    if c.mode != MODE_RED:
        return Step(PASS, ecn, False, state)
    return _red(c, state, ecn, rand32)


def _red(c: RedConstants, state: PortState, ecn: int, rand32: int) -> Step:
    pb = implied_pb(c, state.avg)
    if pb is None:
        return Step(FORCED_DROP, ecn, False, replace(state, count=0))
    if state.avg < c.minth:
        return Step(PASS, ecn, False, replace(state, count=0))
    drew = state.count == 0
    rand = rand32 & MASK32 if drew else state.rand
    count = (state.count + 1) & MASK32
    if rand < (count * pb) & MASK64:
        selected = replace(state, count=0, rand=rand)
        if c.ecn == 1 and ecn != NOT_ECT:
            return Step(MARK, CE, drew, selected)
        return Step(EARLY_DROP, ecn, drew, selected)
    return Step(PASS, ecn, drew, replace(state, count=count, rand=rand))


def lpf_sample(avg: int, sample: int, dt_us: int, tau_ns: int) -> int:
    """The TNA program's average after one sample of its Lpf (SAMPLE mode):
    avg + (sample - avg)(1 - e^(-dt/tau)) in double precision, rounded half away
    from zero, dt the microseconds since the index's previous sample (negative:
    0); tau_ns = 0 (no time constant written) passes the sample through. The
    same arithmetic as the built-in target (p4core tna.rs), so equal bit for bit."""
    if tau_ns <= 0:
        return sample
    weight = -math.expm1(-float(max(dt_us, 0)) * 1000.0 / float(tau_ns))
    step = float(sample - avg) * weight
    return avg + int(math.copysign(math.floor(abs(step) + 0.5), step))
