"""Unit tests of the PTF suite's reference model (tests/redstats.py), and
the error rates the PTF docstrings state, estimated by simulation."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redctl.convert import PortSpec, RedConfig, red_pb, tna_cells, tna_pb, to_tna_constants  # noqa: E402
from redstats import (TNA, V1MODEL, burst_depths, check_marked_fractions, ewma,  # noqa: E402
                      fixed_point_ewma, idle_decay_factor, program_pb, selection_probabilities,
                      simulate_marks)

CLASSIC = (RedConfig(minth=2, maxth=14, maxp=0.3, wq_log=0), 14)
GENTLE = (RedConfig(minth=2, maxth=8, maxp=0.2, wq_log=0, gentle=True), 16)
# the PTF bottleneck with ARCH=tna: the suite's 100-byte frame is the mean packet (2 cells)
TNA_SPEC = PortSpec(buffer_packets=200, rate_bps=400_000, mean_packet_bytes=100)
MODELS = {V1MODEL: {"arch": V1MODEL}, TNA: {"arch": TNA, "spec": TNA_SPEC}}


def test_constant_pb_spaces_marks_uniformly():
    """p_b = 1/4 constant: gaps uniform on 1..4, so the long-run marked
    fraction is 1 / E[gap] = 1 / 2.5, and the first packet's chance is p_b."""
    cfg = RedConfig(minth=0, maxth=4, maxp=1.0, wq_log=0)
    probs, forced = selection_probabilities(cfg, [1.0] * 400)
    assert not any(forced)
    assert probs[0] == pytest.approx(0.25)
    assert sum(probs[200:]) / 200 == pytest.approx(0.4, abs=1e-3)


@pytest.mark.parametrize("arch", [V1MODEL, TNA])
@pytest.mark.parametrize("gentle", [False, True])
def test_exact_probabilities_match_simulation(gentle, arch):
    """Exact DP vs 50000 simulated bursts of a varying average; tolerance
    4.5 standard errors per position (false alarm < 1e-4)."""
    cfg = RedConfig(minth=2, maxth=7, maxp=0.3, wq_log=0, gentle=gentle)
    rng = np.random.default_rng(7)
    avgs = list(rng.uniform(0, 15 if gentle else 8, size=25))
    exact, _ = selection_probabilities(cfg, avgs, **MODELS[arch])
    observed = simulate_marks(cfg, avgs, 50000, rng, **MODELS[arch]) / 50000
    for p, q in zip(exact, observed):
        assert abs(p - q) <= 4.5 * (p * (1 - p) / 50000) ** 0.5 + 1e-12


def test_ewma_recursions_agree():
    depths = burst_depths(120)
    for k in (0, 2, 6, 9):
        real, fixed = ewma(depths, k), fixed_point_ewma(depths, k)
        assert max(abs(a - b) for a, b in zip(real, fixed)) <= 2.0 ** (k - 16) * 2 + 1e-12


def rejection_rates(cfg, length, truth, bursts, runs, seed, arch=V1MODEL):
    """Over ``runs`` simulated experiments of a switch following ``truth``:
    fraction rejected by the bands built for ``cfg``, and the distribution of
    the number of positions out of band."""
    probs, _ = selection_probabilities(cfg, burst_depths(length), **MODELS[arch])
    rng = np.random.default_rng(seed)
    outs = [len(check_marked_fractions(simulate_marks(truth, burst_depths(length), bursts, rng,
                                                      **MODELS[arch]),
                                       bursts, probs)) for _ in range(runs)]
    return np.mean([o > 0 for o in outs]), np.array(outs)


@pytest.mark.parametrize("arch", [V1MODEL, TNA])
@pytest.mark.parametrize("cfg,length", [CLASSIC, GENTLE])
def test_correct_switch_rarely_fails(cfg, length, arch):
    """The stated false-failure bound (<= 1%, Bonferroni) holds: 400
    simulated 200-burst runs of a correct switch fail at most 4% of the time
    (a 1% true rate exceeds that with probability < 0.001)."""
    rate, _ = rejection_rates(cfg, length, cfg, 200, 400, seed=11, arch=arch)
    assert rate <= 0.04


@pytest.mark.parametrize("arch", [V1MODEL, TNA])
def test_doubled_maxp_is_caught(arch):
    """The broken variant (maxp doubled; TNA: p_b doubled in set_pb, the same
    since the ranges' p_b are linear in maxp) on the classic curve: at 100
    bursts, every one of 500 simulated runs has >= 3 positions out of band
    (broken.py's criterion; a correct switch has even one out <= 1%)."""
    cfg, length = CLASSIC
    doubled = dataclasses.replace(cfg, maxp=2 * cfg.maxp)
    _, outs = rejection_rates(cfg, length, doubled, 100, 500, seed=12, arch=arch)
    assert outs.min() >= 3


def test_tna_pb_is_the_installed_ranges_real_middle():
    """program_pb for TNA is the controller's red_pb entry for the average
    (to 2^-32 rounding), 0 below minth, None in the forced region."""
    for cfg, length in (CLASSIC, GENTLE):
        c = to_tna_constants(cfg, TNA_SPEC)
        for depth in burst_depths(2 * length):
            got = program_pb(cfg, depth, TNA, TNA_SPEC)
            installed = tna_pb(c, depth * c.cells_per_packet << 8)
            assert (got is None) == (installed is None)
            if got is not None:
                assert abs(got - installed / 2**32) <= 2**-32


def test_tna_count_law_differs_from_v1model_when_pb_rises():
    """Within a burst p_b rises frame by frame: v1model selects on count x p_b(now),
    TNA on the sum of the p_b seen (TNA profile), so frame 4 of the classic burst
    (first p_b > 0 step) is selected with about half v1model's chance."""
    cfg, length = CLASSIC
    v1, _ = selection_probabilities(cfg, burst_depths(length))
    tna, _ = selection_probabilities(cfg, burst_depths(length), **MODELS[TNA])
    assert tna[4] == pytest.approx(v1[4] / 2, rel=0.1)


def test_depth_error_at_minth_is_caught():
    """A frame at exactly minth has p_b = 0: any mark there fails the band."""
    cfg, length = CLASSIC
    probs, _ = selection_probabilities(cfg, burst_depths(length))
    assert probs[3] == 0.0
    marks = [round(p * 200) for p in probs]
    marks[3] = 1
    assert check_marked_fractions(marks, 200, probs) != []


def test_idle_decay_factor():
    assert idle_decay_factor(500, 1000, 3) == 1.0          # shorter than one frame
    assert idle_decay_factor(11000, 1000, 1) == pytest.approx(0.5 ** 10)


@pytest.mark.parametrize("cfg,length", [CLASSIC, GENTLE])
def test_geometric_marking_is_caught(cfg, length):
    """Marking with p_b itself (no count, geometric spacing) is rejected in
    at least 99% of 300 simulated 200-burst runs."""
    probs, _ = selection_probabilities(cfg, burst_depths(length))
    pb = [red_pb(cfg, a) if a >= cfg.minth else 0.0 for a in burst_depths(length)]
    rng = np.random.default_rng(13)
    rejected = [check_marked_fractions(rng.binomial(200, pb), 200, probs) != []
                for _ in range(300)]
    assert np.mean(rejected) >= 0.99


def test_idle_probe_at_85_ms_separates_exact_from_shift_decay():
    """ewma.IdleDecay's claim: after the 24-frame build burst (wq = 2^-3,
    20 ms frames) an 85 ms idle leaves RED's average in the marking region
    [8, 16) while the replaced shift-only table (avg >> round(m * -log2(1 - wq)))
    left it below minth 7; the program's integer decay agrees with RED."""
    from redctl import PortSpec, RedConfig, redmodel
    from redctl.convert import AVG_ONE, to_constants
    wq_log, tx_us, idle_us = 3, 20000.0, 85000
    cfg = RedConfig(minth=7, maxth=8, maxp=1.0, wq_log=wq_log, gentle=True)
    c = to_constants(cfg, PortSpec(buffer_packets=200, rate_bps=400_000, mean_packet_bytes=1000))
    avg = ewma(burst_depths(24), wq_log)[-1]
    m = (idle_us - tx_us) / tx_us
    exact = avg * idle_decay_factor(idle_us, tx_us, wq_log) * (1 - 2 ** -wq_log)
    shift = avg * 2.0 ** -round(m * -np.log2(1 - 2 ** -wq_log)) * (1 - 2 ** -wq_log)
    fixed = round(avg * AVG_ONE)
    program = redmodel.ewma(redmodel.decayed(c, fixed, redmodel.idle_bucket(c, idle_us)), 0, wq_log)
    assert 8 <= exact < 16 and shift < 7
    assert program / AVG_ONE == pytest.approx(exact, rel=0.012)


@pytest.mark.parametrize("cfg,length", [CLASSIC, GENTLE])
def test_integer_model_marks_with_the_exact_probabilities(cfg, length):
    """The bridge between the program and the PTF bands for queue depths > 0:
    redctl.redmodel.decide (the program's integer semantics, equal to the
    built-in target packet by packet, control/tests/test_redmodel_target.py)
    run over 20000 bursts with uniform 32-bit draws selects each burst
    position with the probability redstats.selection_probabilities gives,
    within 4.5 standard errors (false alarm < 1e-4 over all positions)."""
    from redctl import PortSpec, redmodel
    from redctl.convert import to_constants
    c = to_constants(cfg, PortSpec(buffer_packets=200))
    depths = burst_depths(length)
    probs, _ = selection_probabilities(cfg, depths)
    rng = np.random.default_rng(21)
    bursts = 20000
    draws = rng.integers(0, 1 << 32, size=(bursts, length), dtype=np.uint64)
    selected = np.zeros(length)
    for b in range(bursts):
        state = redmodel.PortState()
        for i, q in enumerate(depths):
            step = redmodel.decide(c, state, q, 1000 * (i + 1), 10**6, redmodel.ECT0, int(draws[b, i]))
            state = step.state
            selected[i] += step.decision in (redmodel.MARK, redmodel.FORCED_DROP)
    for p, k in zip(probs, selected):
        assert abs(k / bursts - p) <= 4.5 * (p * (1 - p) / bursts) ** 0.5 + 1e-9, (p, k / bursts)


def test_tna_idle_probes_separate_the_lpf_from_no_or_faster_decay():
    """ewma.IdleDecay's TNA claim: after the 27-frame build (400 B and the 6-byte
    bridged header = 6 cells, 8 ms apart, tau = 2 ms / 2^-8) the Lpf leaves the average in [maxth, 2 maxth) at
    20 and 200 ms idle and below minth at 400 and 800 ms; without idle decay the
    late probes would be marked, with tau / 2 the 200 ms probe would not."""
    from redctl import redmodel
    from redstats import lpf_averages
    cfg = RedConfig(minth=7, maxth=8, maxp=1.0, wq_log=8, gentle=True)
    c = to_tna_constants(cfg, TNA_SPEC)
    grid = c.cells_per_packet << 8
    avgs = lpf_averages([d * tna_cells(400) for d in burst_depths(27)], 8000, c.lpf_tau_ns)
    assert max(avgs) < 2 * cfg.maxth * grid, "the build drops nothing"
    for idle_ms, marked in ((20, True), (200, True), (400, False), (800, False)):
        avg = redmodel.lpf_sample(avgs[-1], 0, idle_ms * 1000, c.lpf_tau_ns) / grid
        assert (cfg.maxth <= avg < 2 * cfg.maxth) if marked else avg < cfg.minth, idle_ms
    assert avgs[-1] / grid >= cfg.maxth                                  # no decay: 400 ms marked
    assert redmodel.lpf_sample(avgs[-1], 0, 200_000, c.lpf_tau_ns // 2) / grid < cfg.minth
