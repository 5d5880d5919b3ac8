"""Stimulus for the RTL tests and its expected decisions from the one integer
RED model (redctl.redmodel).

A scenario is a list of phases; each phase installs a configuration on every
port (set_red entry + idle-decay entries, or none) and then sends packets.
Packets carry the metadata a P4 egress extern sees and the number of idle
clocks before them (0 = back-to-back), which is what exercises the RTL's
read-after-write forwarding.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from redctl.convert import PortSpec, RedConfig, RedConstants, to_constants
from redctl.redmodel import PortState, decide

MASK32 = (1 << 32) - 1
LFSR_TAPS = 0x8020_0003          # x^32 + x^22 + x^2 + x + 1, as hw/fpga/rtl/red_lfsr.v


@dataclass(frozen=True)
class Packet:
    port: int
    qdepth: int
    timestamp: int
    deq_timedelta: int
    ecn: int
    gap: int = 0                 # idle clocks before this packet


@dataclass
class Phase:
    configs: dict[int, RedConstants | None]
    packets: list[Packet] = field(default_factory=list)


@dataclass(frozen=True)
class Expected:
    decision: int
    ecn: int
    avg: int


class Lfsr:
    """The RTL's random source, step for step: `value` is the next draw."""

    def __init__(self, seed: int):
        self.value = seed & MASK32 or 1

    def advance(self) -> None:
        self.value = (self.value >> 1) ^ (LFSR_TAPS if self.value & 1 else 0)


class Draws:
    """A fixed list of draws (what a trace replay injects into every implementation).
    Past its end `value` is None, which the model cannot draw (TypeError)."""

    def __init__(self, values: list[int]):
        self.values, self.next = values, 0

    @property
    def value(self) -> int | None:
        return self.values[self.next] if self.next < len(self.values) else None

    def advance(self) -> None:
        self.next += 1


def expected_decisions(phases: list[Phase], draws) -> list[Expected]:
    """The model's decision for every packet of every phase, in order.
    `draws` is an Lfsr or Draws; it advances only when a packet draws."""
    states: dict[int, PortState] = {}
    out = []
    for phase in phases:
        for p in phase.packets:
            step = decide(phase.configs.get(p.port), states.get(p.port, PortState()),
                          enq_qdepth=p.qdepth, enq_timestamp=p.timestamp,
                          deq_timedelta=p.deq_timedelta, ecn=p.ecn, rand32=draws.value)
            if step.drew:
                draws.advance()
            states[p.port] = step.state
            out.append(Expected(step.decision, step.ecn, step.state.avg))
    return out


def random_config(rng: random.Random, raw: bool = True) -> RedConstants | None:
    """A port configuration: mostly what redctl installs for a random RED
    setting, sometimes no entry, sometimes (unless not `raw`) raw field values
    the controller would never choose (to pin the arithmetic's widths and
    wrap-around)."""
    kind = rng.random()
    if kind < 0.1:
        return None
    if kind < 0.25 and raw:
        return RedConstants(
            mode=rng.choice([0, 1, 1, 1, 2]), ecn=rng.getrandbits(1), gentle=rng.getrandbits(1),
            wq_log=rng.choice([0, 1, 3, 9, 17, 31, 32, 200]),
            minth=rng.getrandbits(rng.choice([16, 20, 24, 32])),
            maxth=rng.getrandbits(rng.choice([18, 21, 24, 32])),
            maxp=rng.getrandbits(32), slope=rng.getrandbits(48),
            gentle_slope=rng.getrandbits(48), idle_log=rng.choice([0, 4, 10, 11, 22, 31, 32, 40]),
            decay_factors={b: rng.getrandbits(32) for b in rng.sample(range(2048), 60)})
    minth = rng.choice([0, 0.5, 1, 2, 5, 7.25, 20])
    cfg = RedConfig(minth=minth, maxth=minth + rng.choice([0.25, 1, 3, 10, 30]),
                    maxp=rng.choice([0.01, 0.1, 0.5, 1.0, rng.random() or 0.5]),
                    wq_log=rng.choice([0, 1, 2, 4, 6, 9]), gentle=rng.random() < 0.5,
                    mode=rng.choice(["red", "red", "red", "droptail"]),
                    ecn=rng.random() < 0.7)
    port = PortSpec(buffer_packets=1000, rate_bps=rng.choice([1e6, 10e6, 100e6, 1e9]))
    return to_constants(cfg, port)


def random_packets(rng: random.Random, ports: int, count: int, start_us: int) -> list[Packet]:
    """Queue depths as per-port random walks pulled towards a per-port level
    (so averages settle between and around the thresholds), with bursts, idle
    periods, depths beyond the 16-bit saturation, timestamps that advance (and
    wrap the 32-bit clock), and every ECN value."""
    depth = [0] * ports
    level = [rng.choice([0, 2, 6, 12, 20, 40]) for _ in range(ports)]
    now = start_us
    packets = []
    for _ in range(count):
        port = rng.randrange(ports) if rng.random() < 0.6 else (packets[-1].port if packets else 0)
        r = rng.random()
        if r < 0.002:
            level[port] = rng.choice([0, 2, 6, 12, 20, 40])
        if r < 0.03:
            depth[port] = 0
            now += rng.choice([1, 50, 2_000, 100_000, 5_000_000])
        elif r < 0.035:
            depth[port] = rng.randrange(70_000)
        else:
            pull = (level[port] > depth[port]) - (level[port] < depth[port])
            depth[port] = max(0, depth[port] + pull + rng.choice([-2, -1, 0, 1, 2]))
        now = (now + rng.randrange(30)) & MASK32
        packets.append(Packet(port=port, qdepth=min(depth[port], (1 << 19) - 1), timestamp=now,
                              deq_timedelta=rng.choice([0, 10, 120, 1_200, rng.randrange(1 << 16)]),
                              ecn=rng.randrange(4),
                              gap=0 if rng.random() < 0.8 else rng.choice([1, 2, 3, 7])))
    return packets


def random_scenario(seed: int, ports: int, phases: int, packets_per_phase: int,
                    raw: bool = True) -> list[Phase]:
    """`raw`: whether configurations may hold field values redctl never installs."""
    rng = random.Random(seed)
    start = MASK32 - 2_000_000          # the 32-bit microsecond clock wraps during phase 1
    out = []
    for _ in range(phases):
        phase = Phase({p: random_config(rng, raw) for p in range(ports)})
        phase.packets = random_packets(rng, ports, packets_per_phase, start)
        start = phase.packets[-1].timestamp
        out.append(phase)
    return out


def trace_phase(rows: list[dict[str, int]], constants: RedConstants, port: int) -> Phase:
    """A recorded queue trace (rows of red_target_rig.read_trace) as one phase
    on `port`, packets back to back (the hardest case for the per-port state)."""
    packets = [Packet(port=port, qdepth=r["enq_qdepth"], timestamp=r["enq_timestamp_us"] & MASK32,
                      deq_timedelta=r["deq_timedelta_us"], ecn=r["ecn"])
               for r in rows]
    return Phase({port: constants}, packets)
