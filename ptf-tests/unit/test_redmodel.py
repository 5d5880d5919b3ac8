"""Unit tests of the PTF suite's reference model (tests/redmodel.py)."""
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redctl.convert import RedConfig, red_pb  # noqa: E402
from redmodel import (burst_depths, check_marked_fractions, detection_power,  # noqa: E402
                      ewma, fixed_point_ewma, idle_decay_factor, selection_probabilities)


def simulate(cfg, avgs, runs, rng):
    """Monte Carlo of the specification's stored-random count law."""
    hits = [0] * len(avgs)
    for _ in range(runs):
        count, r = 0, None
        for i, avg in enumerate(avgs):
            pb = red_pb(cfg, avg)
            if pb is None or avg < cfg.minth:
                hits[i] += pb is None
                count = 0
                continue
            if count == 0:
                r = rng.random()
            count += 1
            if count * pb > r:
                hits[i] += 1
                count = 0
    return [h / runs for h in hits]


def test_constant_pb_spaces_marks_uniformly():
    """p_b = 1/4 constant: gaps uniform on 1..4, so the long-run marked
    fraction is 1 / E[gap] = 1 / 2.5, and the first packet's chance is p_b."""
    cfg = RedConfig(minth=0, maxth=4, maxp=1.0, wq_log=0)
    probs, forced = selection_probabilities(cfg, [1.0] * 400)
    assert not any(forced)
    assert probs[0] == pytest.approx(0.25)
    assert sum(probs[200:]) / 200 == pytest.approx(0.4, abs=1e-3)


@pytest.mark.parametrize("gentle", [False, True])
def test_exact_probabilities_match_simulation(gentle):
    """Exact DP vs 20000 simulated bursts of a varying average; the
    tolerance is 4.5 standard errors per position (false alarm < 1e-4)."""
    cfg = RedConfig(minth=2, maxth=7, maxp=0.3, wq_log=0, gentle=gentle)
    rng = random.Random(7)
    avgs = [rng.uniform(0, 15 if gentle else 8) for _ in range(25)]
    exact, _ = selection_probabilities(cfg, avgs)
    observed = simulate(cfg, avgs, 20000, rng)
    for p, q in zip(exact, observed):
        assert abs(p - q) <= 4.5 * max(p * (1 - p), 1e-9) ** 0.5 / 20000 ** 0.5 + 1e-12


def test_ewma_recursions_agree():
    depths = burst_depths(120)
    for k in (0, 2, 6, 9):
        real, fixed = ewma(depths, k), fixed_point_ewma(depths, k)
        assert max(abs(a - b) for a, b in zip(real, fixed)) <= 2.0 ** (k - 16) * 2 + 1e-12


def test_bands_accept_truth_and_reject_doubled_maxp():
    cfg = RedConfig(minth=2, maxth=14, maxp=0.3, wq_log=0)
    probs, _ = selection_probabilities(cfg, burst_depths(14))
    assert check_marked_fractions([round(p * 200) for p in probs], 200, probs) == []
    doubled, _ = selection_probabilities(RedConfig(minth=2, maxth=14, maxp=0.6, wq_log=0),
                                         burst_depths(14))
    assert check_marked_fractions([round(p * 200) for p in doubled], 200, probs) != []
    assert detection_power(100, probs, doubled) > 1 - 1e-9


def test_idle_decay_factor():
    assert idle_decay_factor(500, 1000, 3) == 1.0          # shorter than one frame
    assert idle_decay_factor(11000, 1000, 1) == pytest.approx(0.5 ** 10)
