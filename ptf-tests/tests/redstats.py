"""What a correct switch shows on the wire: RED's expected statistics.

The PTF tests predict what a correct switch does with these functions and
compare the prediction with what they see on the wire.  p_b is RED's
real-valued curve (``redctl.convert.red_pb``), not the fixed-point constants
the controller installs, so an error in the data plane or in the conversion
shows up alike (the two differ by < 1e-6, far inside every band).  The
program's integer semantics live in one place, ``redctl.redmodel``.

``arch="tna"`` predicts hw/tofino/red_ecn.p4 instead (p4src/README.md "TNA
profile"): p_b is RED's curve at the middle of the controller's ``red_pb``
range holding the average, the count law is the budget form (select when
the sum of p_b since the last selection exceeds R), and the average is the
Lpf (``redmodel.lpf_sample``) over depths in cells.
"""
import functools

import numpy as np
from scipy.stats import binom

from redctl.convert import AVG_ONE, TNA_AVG_FRAC_BITS, red_pb, tna_fixed, to_tna_constants
from redctl import redmodel

V1MODEL, TNA = "v1model", "tna"


def ewma(depths, wq_log, avg=0.0):
    """avg after each arrival: avg <- (1 - wq) avg + wq q, wq = 2^-wq_log."""
    wq = 2.0 ** -wq_log
    out = []
    for q in depths:
        avg = (1 - wq) * avg + wq * q
        out.append(avg)
    return out


def idle_decay_factor(idle_us, tx_time_us, wq_log):
    """(1 - wq)^m with m = max(0, idle - s) / s small packets sent while idle."""
    m = max(0.0, idle_us - tx_time_us) / tx_time_us
    return (1 - 2.0 ** -wq_log) ** m


@functools.lru_cache(maxsize=64)
def _tna_constants(cfg, spec):
    return to_tna_constants(cfg, spec)


def program_pb(cfg, avg, arch=V1MODEL, spec=None):
    """p_b the program applies at average ``avg`` (packets); None: forced drop.
    v1model: RED's real-valued curve.  TNA: that curve at the real middle of
    the red_pb range holding the average (cells * 2^8 of ``spec``'s mean
    packet), 0 below the first range."""
    if arch == V1MODEL:
        return red_pb(cfg, avg)
    c = _tna_constants(cfg, spec)
    grid = c.cells_per_packet << TNA_AVG_FRAC_BITS
    fixed = tna_fixed(avg, c.cells_per_packet)
    for r in c.ranges:
        if r.lo <= fixed <= r.hi:
            return None if r.action == "red_forced" else red_pb(cfg, (r.lo + r.hi) / 2 / grid)
    return 0.0


def selection_probabilities(cfg, avgs, arch=V1MODEL, spec=None):
    """P(packet i is selected (marked or early-dropped)) and forced flags.

    Exact for the count law of the specification: after each selection (or
    a reset below minth / on a forced drop) a fresh R ~ U[0,1) is drawn at
    the next early-region packet, count counts early-region packets since,
    and a packet is selected when count * p_b > R.  Given no selection yet
    in a run, R is uniform above the largest count * p_b seen so far, so the
    state is (count, that maximum).  This is the law of Floyd & Jacobson's
    p_a = p_b / (1 - count p_b) when p_b is constant.  TNA's budget form
    selects when the sum of the p_b since the last selection exceeds R
    (the same while p_b is constant); the state is then that sum.
    """
    states = {(0, 0.0): 1.0}          # (count, max count*p_b / sum of p_b in the run) -> mass
    probs, forced = [], []
    for avg in avgs:
        pb = program_pb(cfg, avg, arch, spec)
        forced.append(pb is None)
        if pb is None or avg < cfg.minth:      # forced drop / pass: count = 0
            probs.append(0.0 if pb is not None else 1.0)
            states = {(0, 0.0): 1.0}
            continue
        selected, nxt = 0.0, {}
        for (count, seen), mass in states.items():
            count += 1
            reach = min(1.0, count * pb if arch == V1MODEL else seen + pb)
            p_sel = max(0.0, reach - seen) / (1.0 - seen)
            selected += mass * p_sel
            if p_sel < 1.0:
                key = (count, max(seen, reach))
                nxt[key] = nxt.get(key, 0.0) + mass * (1.0 - p_sel)
        nxt[(0, 0.0)] = nxt.get((0, 0.0), 0.0) + selected
        states = nxt
        probs.append(selected)
    return probs, forced


def binomial_band(trials, p, alpha):
    """Central (1 - alpha) acceptance interval for Binomial(trials, p)."""
    lo = int(binom.ppf(alpha / 2, trials, p))
    hi = int(binom.isf(alpha / 2, trials, p))
    return lo, hi


def check_marked_fractions(marks, trials, probs, confidence=0.99):
    """Compare marks per position with Binomial(trials, p) bands.

    The bands are Bonferroni-corrected so that a correct switch fails the
    whole comparison with probability <= 1 - confidence.  Returns a list of
    human-readable violations (empty when everything is inside its band).
    """
    tested = [i for i, p in enumerate(probs) if 0.0 < p < 1.0]
    alpha = (1 - confidence) / max(1, len(tested))
    problems = []
    for i, (k, p) in enumerate(zip(marks, probs)):
        if p <= 0.0 or p >= 1.0:
            if k != round(p * trials):
                problems.append(f"position {i}: {k}/{trials} selected, expected exactly {p:.0%}")
            continue
        lo, hi = binomial_band(trials, p, alpha)
        if not lo <= k <= hi:
            problems.append(f"position {i}: {k}/{trials} selected, p_a law gives "
                            f"{p:.4f} -> band [{lo}, {hi}]")
    return problems


def simulate_marks(cfg, avgs, bursts, rng, arch=V1MODEL, spec=None):
    """Marks per position over ``bursts`` independent bursts, drawn by the
    specification's stored-random count law itself (numpy ``rng``; TNA: its
    budget form); for estimating false-failure rates and power of the band
    checks."""
    marks = np.zeros(len(avgs), dtype=int)
    count = np.zeros(bursts, dtype=int)
    total = np.zeros(bursts)          # TNA: sum of p_b since the last selection
    draw = np.zeros(bursts)
    for i, avg in enumerate(avgs):
        pb = program_pb(cfg, avg, arch, spec)
        if pb is None or avg < cfg.minth:
            marks[i] = bursts if pb is None else 0
            count[:] = 0
            continue
        fresh = count == 0
        draw[fresh] = rng.random(int(fresh.sum()))
        total[fresh] = 0.0
        count += 1
        total += pb
        selected = (count * pb if arch == V1MODEL else total) > draw
        marks[i] = int(selected.sum())
        count[selected] = 0
    return marks


def burst_depths(length):
    """enq_qdepth of each packet of a burst sent faster than the port drains
    into an idle queue: the first goes straight to the wire, packet i then
    waits behind i - 1 others."""
    return [max(0, i - 1) for i in range(length)]


def fixed_point_ewma(depths, wq_log, avg=0):
    """The program's integer EWMA (redctl.redmodel.ewma), in packets."""
    out = []
    for q in depths:
        avg = redmodel.ewma(avg, q, wq_log)
        out.append(avg / AVG_ONE)
    return out


def first_index_at_or_above(values, threshold):
    return next((i for i, v in enumerate(values) if v >= threshold), None)


def lpf_averages(depths_cells, dt_us, tau_ns, avg=0):
    """The TNA program's average (cells * 2^8) after each packet of a burst whose
    packets see ``depths_cells`` and are sampled ``dt_us`` apart; the first
    sample comes long after any earlier one (it takes its depth)."""
    out = []
    for i, q in enumerate(depths_cells):
        avg = redmodel.lpf_sample(avg, q << TNA_AVG_FRAC_BITS, dt_us if i else 1 << 31, tau_ns)
        out.append(avg)
    return out
