"""RED parameters <-> the fixed-point constants of p4src/red_ecn.p4.

This is the one place where the controller does RED's divisions. The formats
are specified in p4src/README.md ("Fixed point and quantisation"):

- queue lengths and thresholds: packets * 2^16 (``AVG_ONE``);
- probabilities: p * 2^32 (``PROB_ONE``), saturated to 32 bits;
- ``slope = maxp / (maxth - minth) * 2^32`` and
  ``gentle_slope = (1 - maxp) / maxth * 2^32`` per packet of average;
- ``wq = 2^-wq_log``;
- idle decay: per 2^idle_log-microsecond bucket of idle time, the factor
  ``(1 - wq)^m * 2^32`` the average is multiplied by (``DECAY_ONE``).

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
IDLE_BUCKETS = 1024          # coarse buckets 1..1023 (key 1024 + c) and fine buckets 0..1023
IDLE_FINE_LOG = 10           # fine buckets are 2^(idle_log - 10) us wide (at least 1 us)
IDLE_LOG_MAX = 22            # 1023 buckets * 2^22 us stays below the 32-bit clock wrap
DECAY_FRAC_BITS = 32
DECAY_ONE = 1 << DECAY_FRAC_BITS
DECAY_MAX = DECAY_ONE - 1
FULL_DECAY_LOG2 = 16         # "fully decayed": (1 - wq)^m <= 2^-16; the last bucket sets avg to 0
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
    """The action parameters of MyEgress.set_red plus the red_idle_decay entries
    ({bucket: factor}, factor = (1 - wq)^m * 2^32; missing buckets: no decay)."""
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
    decay_factors: dict[int, int] = field(default_factory=dict, compare=False)

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
    idle_log, factors = idle_decay(cfg.wq_log, port.tx_time_us)
    return RedConstants(
        mode=MODES[cfg.mode], ecn=int(cfg.ecn), gentle=int(cfg.gentle),
        wq_log=cfg.wq_log, minth=minth, maxth=maxth,
        maxp=min(round(cfg.maxp * PROB_ONE), PROB_MAX),
        slope=round(cfg.maxp * PROB_ONE * AVG_ONE / (maxth - minth)),
        gentle_slope=round((1 - cfg.maxp) * PROB_ONE * AVG_ONE / maxth),
        idle_log=idle_log, decay_factors=factors)


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
    """(idle_log, {bucket: factor}): the red_idle_decay entries of a port.

    Classic RED multiplies the average by (1 - wq)^m after `idle` us with an
    empty queue, m = max(0, idle - s) / s packets, s = tx_time_us (the previous
    packet is still on the wire for ~s after its dequeue, hence the '- s').
    Coarse buckets are w = 2^idle_log us wide, the finest that let 1023 of them
    reach full decay (key 1024 + idle // w); idle times below w use 1024 fine
    buckets (key idle // 2^(idle_log - 10)). Each bucket gets the factor at the
    middle of its integer idle times, so it is within decay_error_bound() of
    (1 - wq)^m (p4src/README.md). The last, open-ended coarse bucket empties the
    average. Factors that round to 1 are omitted (a miss is no decay)."""
    if wq_log == 0:
        return 0, {}               # wq = 1: avg = q, nothing to decay
    ln_keep = -math.log1p(-2.0 ** -wq_log)          # -ln(1 - wq) per packet
    idle_full = (FULL_DECAY_LOG2 * math.log(2) / ln_keep + 1) * tx_time_us
    idle_log = min(IDLE_LOG_MAX, max(0, math.ceil(math.log2(idle_full / (IDLE_BUCKETS - 1)))))
    width, fine = 1 << idle_log, 1 << max(0, idle_log - IDLE_FINE_LOG)
    middles = {b: b * fine + (fine - 1) / 2 for b in range(width // fine)}
    for c in range(1, IDLE_BUCKETS):
        middles[IDLE_BUCKETS + c] = c * width + (width - 1) / 2
    last = 2 * IDLE_BUCKETS - 1    # open-ended: full decay, or the decay at its start
    middles[last] = math.inf if (IDLE_BUCKETS - 1) * width >= idle_full else (IDLE_BUCKETS - 1) * width
    factors = {}
    for bucket, idle in middles.items():
        factor = min(DECAY_MAX, round(decay_factor(idle, tx_time_us, ln_keep) * DECAY_ONE))
        if factor < DECAY_MAX:
            factors[bucket] = factor
    return idle_log, factors


def decay_factor(idle_us: float, tx_time_us: float, ln_keep: float) -> float:
    """Classic RED's (1 - wq)^m after idle_us, ln_keep = -ln(1 - wq)."""
    m = max(0.0, idle_us - tx_time_us) / tx_time_us
    return math.exp(-m * ln_keep)


def decay_error_bound(wq_log: int, tx_time_us: float) -> float:
    """Relative error bound of the installed factor against (1 - wq)^m for idle
    times up to full decay: half a coarse bucket of decay (ln f changes by at
    most -ln(1 - wq) / s per us; fine buckets are 1024 times narrower) and the
    factor's rounding (< 2^-16 relative while f >= 2^-16); the product's
    truncation adds at most 2^-16 packets."""
    idle_log, _ = idle_decay(wq_log, tx_time_us)
    half_bucket = (1 << idle_log) / 2 * -math.log1p(-2.0 ** -wq_log) / tx_time_us
    return math.expm1(half_bucket) * (1 + 2.0 ** -16) + 2.0 ** -16


# -- TNA profile (hw/tofino/red_ecn.p4; p4src/README.md "TNA profile") ----------
TNA_AVG_FRAC_BITS = 8            # the Lpf runs on cells * 2^8
TNA_CELL_BYTES = {"tofino": 80, "tofino2": 176}
TNA_BRIDGED_BYTES = 6           # bridged_md_t: the traffic manager buffers it with the frame
TNA_PB_RANGES = 64               # red_pb ranges between minth and maxth (and in the gentle region)
TNA_AVG_MAX = (1 << 32) - 1
TNA_MODES = {"droptail": 0, "red": 1}
TNA_QDEPTH_CELLS = (1 << 19) - 1


@dataclass(frozen=True)
class TnaRange:
    """One red_pb entry: the average in [lo, hi] (cells * 2^8) -> action (pb: p_b * 2^32)."""
    lo: int
    hi: int
    action: str                  # "set_pb" or "red_forced"
    pb: int = 0


@dataclass(frozen=True)
class TnaConstants:
    """What the controller installs for one port of the TNA program: set_red's
    parameters, the red_pb ranges and the Lpf's time constant (ns)."""
    mode: int
    ecn: int
    cells_per_packet: int
    ranges: tuple[TnaRange, ...]
    lpf_tau_ns: int

    def action_params(self) -> dict[str, int]:
        return {"mode": self.mode, "ecn": self.ecn}


def tna_cells(frame_bytes: int, target: str = "tofino") -> int:
    """Cells a frame takes in Tofino's buffer: the frame and its bridged header."""
    return math.ceil((frame_bytes + TNA_BRIDGED_BYTES) / TNA_CELL_BYTES[target])


def tna_fixed(packets: float, cells_per_packet: int) -> int:
    """Packets of average -> cells * 2^8 (the TNA program's average scale)."""
    return round(packets * cells_per_packet * (1 << TNA_AVG_FRAC_BITS))


def to_tna_constants(cfg: RedConfig, port: PortSpec = PortSpec(), target: str = "tofino",
                     ranges: int = TNA_PB_RANGES) -> TnaConstants:
    """Validate cfg and compute the TNA program's entries (p4src/README.md "TNA profile"):
    thresholds in cells of the port's mean packet, p_b at the middle of each of `ranges`
    equal ranges (error <= maxp / (2 ranges)), tau = s / wq for a mean packet time s."""
    validate(cfg, port)
    cells = tna_cells(port.mean_packet_bytes, target)
    if cfg.maxth * (2 if cfg.gentle else 1) * cells > TNA_QDEPTH_CELLS:
        raise ValueError(f"maxth ({cfg.maxth}) is beyond the 19-bit queue depth in cells")
    minth, maxth = tna_fixed(cfg.minth, cells), tna_fixed(cfg.maxth, cells)
    entries = _pb_ranges(minth, maxth, ranges, lambda a: red_pb(cfg, a / (cells << TNA_AVG_FRAC_BITS)))
    top = maxth
    if cfg.gentle:
        entries += _pb_ranges(maxth, 2 * maxth, ranges,
                              lambda a: red_pb(cfg, a / (cells << TNA_AVG_FRAC_BITS)))
        top = 2 * maxth
    entries.append(TnaRange(top, TNA_AVG_MAX, "red_forced"))
    tau_ns = 0 if cfg.wq_log == 0 else round(port.tx_time_us * 1000 / cfg.wq)   # wq = 1: avg = q
    return TnaConstants(mode=TNA_MODES[cfg.mode], ecn=int(cfg.ecn), cells_per_packet=cells,
                        ranges=tuple(entries), lpf_tau_ns=tau_ns)


def _pb_ranges(lo: int, hi: int, n: int, pb_at) -> list[TnaRange]:
    """n (or fewer, if [lo, hi) is narrower) equal ranges covering [lo, hi), each set_pb
    with p_b at its real middle."""
    bounds = sorted({lo + (hi - lo) * i // n for i in range(n)} | {hi})
    out = []
    for a, b in zip(bounds, bounds[1:]):
        pb = pb_at((a + b - 1) / 2)   # the middle of the integer averages a..b-1
        out.append(TnaRange(a, b - 1, "set_pb", min(round(pb * PROB_ONE), PROB_MAX)))
    return out


def tna_pb(c: TnaConstants, avg_fixed: int) -> int | None:
    """p_b * 2^32 the TNA program uses at an average avg_fixed (cells * 2^8): 0 below
    minth (a red_pb miss), None in the forced region."""
    for r in c.ranges:
        if r.lo <= avg_fixed <= r.hi:
            return r.pb if r.action == "set_pb" else None
    return 0


def tna_pb_error_bound(cfg: RedConfig, ranges: int = TNA_PB_RANGES) -> float:
    """|p_b(TNA) - red_pb| within the probabilistic region (p4src/README.md "TNA profile"):
    half a range of slope, plus the 2^-8-cell grid of the bounds and the rounding of pb."""
    half_range = max(cfg.maxp, 1 - cfg.maxp if cfg.gentle else 0) / (2 * ranges)
    return half_range * (1 + 2 * ranges / (1 << TNA_AVG_FRAC_BITS)) + 1 / PROB_ONE


def from_tna_constants(c: TnaConstants, port: PortSpec = PortSpec(), target: str = "tofino") -> RedConfig:
    """Installed TNA entries -> the RedConfig that to_tna_constants turns into exactly them
    (thresholds to 3 decimals, maxp to 9, wq a power of two); ValueError if none does."""
    modes = {v: k for k, v in TNA_MODES.items()}
    prob = [r for r in c.ranges if r.action == "set_pb"]
    forced = [r for r in c.ranges if r.action == "red_forced"]
    if c.mode not in modes or not prob or len(forced) != 1:
        raise ValueError("the installed red_pb entries are not a RED configuration")
    grid = c.cells_per_packet << TNA_AVG_FRAC_BITS
    wq_log = 0 if c.lpf_tau_ns == 0 else round(math.log2(c.lpf_tau_ns / (port.tx_time_us * 1000)))
    minth = round(prob[0].lo / grid, 3)
    for gentle, top in ((False, forced[0].lo), (True, forced[0].lo / 2)):
        maxth = round(top / grid, 3)
        last = max((r for r in prob if r.hi < round(top)), key=lambda r: r.lo, default=None)
        if last is None or maxth <= minth:
            continue
        middle = (last.lo + last.hi) / 2 / grid
        maxp = round(last.pb / PROB_ONE * (maxth - minth) / (middle - minth), 9)
        try:
            cfg = RedConfig(minth=minth, maxth=maxth, maxp=maxp, wq_log=wq_log, gentle=gentle,
                            mode=modes[c.mode], ecn=bool(c.ecn))
            if to_tna_constants(cfg, port, target) == c:
                return cfg
        except ValueError:
            continue
    raise ValueError("the installed red_pb entries were not written by redctl for one RedConfig")
