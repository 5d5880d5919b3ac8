"""Statistics of studies: exact values on known inputs, and the coverage of
the 95 % intervals on samples from known distributions."""

import math
import random

import pytest

from aqmlab import stats


def test_estimate_on_known_values():
    e = stats.estimate([1, 2, 3, 4, 5])
    # sd = sqrt(2.5); t(0.975, 4) = 2.776445
    assert (e.mean, e.n) == (3, 5) and e.sd == pytest.approx(math.sqrt(2.5))
    assert e.half_width == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert e.excludes_zero()


def test_estimate_leaves_out_missing_values_and_has_no_interval_below_two():
    assert stats.estimate([2.0, math.nan, None]).n == 1
    one = stats.estimate([2.0])
    assert one.mean == 2.0 and math.isnan(one.low) and not one.excludes_zero()
    assert stats.estimate([]).n == 0


def coverage(draw, truth, n, trials, rng):
    hits = 0
    for _ in range(trials):
        e = stats.estimate([draw(rng) for _ in range(n)])
        hits += e.low <= truth <= e.high
    return hits / trials


@pytest.mark.parametrize("n", [3, 5, 10])
def test_t_interval_covers_a_normal_mean_95_percent_of_the_time(n):
    """4000 intervals from N(10, 2): coverage 0.95 +- 4 standard errors
    (4 x 0.0034; a false alarm below 1e-4 per case)."""
    rate = coverage(lambda rng: rng.gauss(10, 2), 10, n, 4000, random.Random(n))
    assert abs(rate - 0.95) < 4 * math.sqrt(0.95 * 0.05 / 4000)


def test_paired_difference_removes_the_noise_two_seeds_share():
    """Per-seed noise (sd 3) common to both arms, effect 0.5 with sd 0.1:
    paired, the interval excludes zero; as unpaired means the intervals overlap."""
    rng = random.Random(1)
    noise = {seed: rng.gauss(0, 3) for seed in range(5)}
    a = {s: 10.5 + noise[s] + rng.gauss(0, 0.1) for s in noise}
    b = {s: 10.0 + noise[s] + rng.gauss(0, 0.1) for s in noise}
    difference = stats.paired_difference(a, b)
    assert difference.n == 5 and difference.low < 0.5 < difference.high
    assert difference.excludes_zero()
    ea, eb = stats.estimate(a.values()), stats.estimate(b.values())
    assert ea.low < eb.high and eb.low < ea.high
    assert "significant: the 95% interval" in stats.verdict(difference)


def test_paired_difference_uses_only_seeds_both_arms_have():
    d = stats.paired_difference({1: 5.0, 2: 7.0, 3: 1.0}, {2: 6.0, 3: 0.0, 4: 9.0})
    assert (d.n, d.mean, d.sd) == (2, 1.0, 0.0)


def test_paired_difference_of_equal_means_is_significant_about_5_percent_of_the_time():
    """No effect: the 95 % interval excludes zero in 5 % of 4000 studies of 5
    seed pairs (+- 4 standard errors)."""
    rng = random.Random(2)
    false_alarms = 0
    for _ in range(4000):
        a = {s: rng.gauss(0, 1) for s in range(5)}
        b = {s: rng.gauss(0, 1) for s in range(5)}
        false_alarms += stats.paired_difference(a, b).excludes_zero()
    assert abs(false_alarms / 4000 - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 4000)
