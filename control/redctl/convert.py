"""RED parameters <-> the fixed-point constants of p4src/red_ecn.p4.

This is the one place where the controller does RED's divisions. The formats
are specified in p4src/README.md ("Fixed point and quantisation"):

- queue lengths and thresholds: packets * 2^16 (``AVG_ONE``);
- probabilities: p * 2^32 (``PROB_ONE``), saturated to 32 bits;
- ``slope = maxp / (maxth - minth) * 2^32`` and
  ``gentle_slope = (1 - maxp) / maxth * 2^32`` per packet of average;
- ``wq = 2^-wq_log``;
- idle decay: per 2^idle_log-microsecond bucket of idle time, a right shift of
  the average approximating ``(1 - wq)^m``.

``implied_pb`` reproduces the data plane's integer arithmetic bit for bit, so
tests can compare the curve the switch really uses with RED's real-valued one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

AVG_FRAC_BITS = 16
AVG_ONE = 1 << AVG_FRAC_BITS
PROB_BITS = 32
PROB_ONE = 1 << PROB_BITS
PROB_MAX = PROB_ONE - 1
QDEPTH_MAX = 0xFFFF          # the program saturates q at 16 integer bits
WQ_LOG_MAX = 16              # beyond this, truncation would freeze the average
IDLE_BUCKETS = 256
IDLE_LOG_MAX = 24            # 255 buckets * 2^24 us stays below the 32-bit clock wrap
SHIFT_FULL_DECAY = 32        # avg >> 32 == 0 for a 32-bit average
MODES = {"droptail": 0, "red": 1}
DEFAULT_BUFFER_PACKETS = 64  # BMv2's and softswitch's default queue depth
DEFAULT_RATE_BPS = 10_000_000
DEFAULT_MEAN_PACKET_BYTES = 1500


@dataclass(frozen=True)
class RedConfig:
    """RED parameters of one egress port, in RED's own units (packets)."""
    minth: float
    maxth: float
    maxp: float
    wq_log: int = 9
    gentle: bool = False
    mode: str = "red"
    ecn: bool = True

    @property
    def wq(self) -> float:
        return 2.0 ** -self.wq_log


@dataclass(frozen=True)
class PortSpec:
    """What the controller must know about a port that P4Runtime cannot tell it:
    the traffic manager's buffer (to validate maxth) and the link rate (to turn
    idle time into 'packets that could have been sent')."""
    buffer_packets: int = DEFAULT_BUFFER_PACKETS
    rate_bps: float = DEFAULT_RATE_BPS
    mean_packet_bytes: int = DEFAULT_MEAN_PACKET_BYTES

    @property
    def tx_time_us(self) -> float:
        return self.mean_packet_bytes * 8 / self.rate_bps * 1e6


@dataclass(frozen=True)
class RedConstants:
    """The action parameters of MyEgress.set_red plus the red_idle_decay entries."""
    mode: int
    ecn: int
    gentle: int
    wq_log: int
    minth: int
    maxth: int
    maxp: int
    slope: int
    gentle_slope: int
    idle_log: int
    decay_shifts: dict[int, int] = field(default_factory=dict, compare=False)

    def action_params(self) -> dict[str, int]:
        """Parameter name -> value, named as in set_red's P4 signature."""
        return {"mode": self.mode, "ecn": self.ecn, "gentle": self.gentle,
                "wq_log": self.wq_log, "minth": self.minth, "maxth": self.maxth,
                "maxp": self.maxp, "slope": self.slope,
                "gentle_slope": self.gentle_slope, "idle_log": self.idle_log}


def wq_log_from_wq(wq: float) -> int:
    """Nearest power-of-two exponent: wq = 0.002 -> 9 (2^-9 = 0.00195)."""
    if not 0 < wq <= 1:
        raise ValueError(f"wq must be in (0, 1], got {wq}")
    k = round(-math.log2(wq))
    if k > WQ_LOG_MAX:
        raise ValueError(f"wq {wq} is below the smallest supported 2^-{WQ_LOG_MAX}")
    return k


def validate(cfg: RedConfig, port: PortSpec) -> None:
    """Raise ValueError with the reason if the data plane cannot run cfg."""
    if cfg.mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {cfg.mode!r}")
    if not (isinstance(cfg.wq_log, int) and 0 <= cfg.wq_log <= WQ_LOG_MAX):
        raise ValueError(f"wq_log must be an integer in [0, {WQ_LOG_MAX}], "
                         f"i.e. wq in [2^-{WQ_LOG_MAX}, 1]; got {cfg.wq_log!r}")
    if not 0 < cfg.maxp <= 1:
        raise ValueError(f"maxp must be in (0, 1], got {cfg.maxp}")
    if cfg.minth < 0:
        raise ValueError(f"minth must be >= 0, got {cfg.minth}")
    if _fixed(cfg.minth) >= _fixed(cfg.maxth):
        raise ValueError(f"minth ({cfg.minth}) must be below maxth ({cfg.maxth})")
    limit = min(port.buffer_packets, QDEPTH_MAX)
    if cfg.maxth > limit:
        raise ValueError(f"maxth ({cfg.maxth}) is above the port's buffer "
                         f"({port.buffer_packets} packets)")


def _fixed(packets: float) -> int:
    return round(packets * AVG_ONE)


def to_constants(cfg: RedConfig, port: PortSpec = PortSpec()) -> RedConstants:
    """Validate cfg and compute what the controller installs."""
    validate(cfg, port)
    minth, maxth = _fixed(cfg.minth), _fixed(cfg.maxth)
    idle_log, shifts = idle_decay(cfg.wq_log, port.tx_time_us)
    return RedConstants(
        mode=MODES[cfg.mode], ecn=int(cfg.ecn), gentle=int(cfg.gentle),
        wq_log=cfg.wq_log, minth=minth, maxth=maxth,
        maxp=min(round(cfg.maxp * PROB_ONE), PROB_MAX),
        slope=round(cfg.maxp * PROB_ONE * AVG_ONE / (maxth - minth)),
        gentle_slope=round((1 - cfg.maxp) * PROB_ONE * AVG_ONE / maxth),
        idle_log=idle_log, decay_shifts=shifts)


def from_constants(c: RedConstants) -> RedConfig:
    """Installed constants -> RedConfig. Rounding recovers the values given to
    to_constants when thresholds have <= 4 decimals and maxp <= 9 decimals."""
    modes = {v: k for k, v in MODES.items()}
    if c.mode not in modes:
        raise ValueError(f"installed mode {c.mode} is not one of {modes}")
    return RedConfig(minth=round(c.minth / AVG_ONE, 4), maxth=round(c.maxth / AVG_ONE, 4),
                     maxp=round(c.maxp / PROB_ONE, 9), wq_log=c.wq_log,
                     gentle=bool(c.gentle), mode=modes[c.mode], ecn=bool(c.ecn))


def implied_pb(c: RedConstants, avg_fixed: int) -> int | None:
    """p_b * 2^32 exactly as red_ecn.p4 computes it for an average avg_fixed
    (packets * 2^16); 0 below minth, None in the forced-drop region."""
    if avg_fixed < c.minth:
        return 0
    if avg_fixed < c.maxth:
        return ((avg_fixed - c.minth) * c.slope) >> AVG_FRAC_BITS
    if c.gentle and avg_fixed - c.maxth < c.maxth:
        return c.maxp + (((avg_fixed - c.maxth) * c.gentle_slope) >> AVG_FRAC_BITS)
    return None


def red_pb(cfg: RedConfig, avg: float) -> float | None:
    """RED's real-valued p_b (Floyd & Jacobson; gentle per Floyd); None = forced drop."""
    if avg < cfg.minth:
        return 0.0
    if avg < cfg.maxth:
        return cfg.maxp * (avg - cfg.minth) / (cfg.maxth - cfg.minth)
    if cfg.gentle and avg < 2 * cfg.maxth:
        return cfg.maxp + (1 - cfg.maxp) * (avg - cfg.maxth) / cfg.maxth
    return None


def pb_error_bound(cfg: RedConfig) -> float:
    """Documented bound on |implied_pb / 2^32 - red_pb| for thresholds on the
    2^-16 grid: slope rounding (half a unit per packet of avg - threshold),
    maxp rounding and the final truncation (one unit each)."""
    return (2 + max(cfg.maxth - cfg.minth, cfg.maxth) / 2) / PROB_ONE


def idle_decay(wq_log: int, tx_time_us: float) -> tuple[int, dict[int, int]]:
    """(idle_log, {bucket: shift}) so that avg >> shift ~ avg * (1 - wq)^m,
    m = max(0, idle - s) / s packets, s = tx_time_us; buckets with shift 0 are
    omitted (the table's default is no decay). The previous packet is still
    on the wire for ~s after its dequeue, hence the '- s'."""
    if wq_log == 0:
        return 0, {}               # wq = 1: avg = q, nothing to decay
    per_packet = -math.log2(1 - 2.0 ** -wq_log)
    idle_full = (SHIFT_FULL_DECAY / per_packet + 1) * tx_time_us
    idle_log = min(IDLE_LOG_MAX, max(0, math.ceil(math.log2(idle_full / (IDLE_BUCKETS - 1)))))
    shifts = {}
    for bucket in range(IDLE_BUCKETS):
        shift = decay_shift_for(bucket, idle_log, per_packet, tx_time_us)
        if shift:
            shifts[bucket] = shift
    return idle_log, shifts


def decay_shift_for(bucket: int, idle_log: int, per_packet: float, tx_time_us: float) -> int:
    """Shift for the idle bucket's midpoint (the last bucket: its start, it is open-ended)."""
    width = 1 << idle_log
    idle = bucket * width + (width / 2 if bucket < IDLE_BUCKETS - 1 else 0)
    m = max(0.0, idle - tx_time_us) / tx_time_us
    return min(SHIFT_FULL_DECAY, round(m * per_packet))
