"""Statistics over a study's repetitions: mean, sd, n and a Student-t
confidence interval per metric, and paired (same-seed) differences."""

import math
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """Mean of n values with its sample standard deviation and a two-sided
    Student-t confidence interval (nan bounds when n < 2)."""
    mean: float
    sd: float
    n: int
    low: float
    high: float

    @property
    def half_width(self):
        return (self.high - self.low) / 2

    def excludes_zero(self):
        return bool(self.n >= 2 and (self.low > 0 or self.high < 0))

    def as_dict(self):
        return {"mean": self.mean, "sd": self.sd, "n": self.n, "ci_low": self.low,
                "ci_high": self.high}


def estimate(values, confidence=CONFIDENCE):
    """Estimate of the mean of finite values (nan and None are left out)."""
    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if n == 0:
        return Estimate(math.nan, math.nan, 0, math.nan, math.nan)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, math.nan, 1, math.nan, math.nan)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    from scipy import stats as scipy_stats   # here: 1 s of imports a run's worker never needs

    half = float(scipy_stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, sd, n, mean - half, mean + half)


def paired_difference(a_by_seed, b_by_seed, confidence=CONFIDENCE):
    """Estimate of mean(a - b) over the seeds both have a finite value for."""
    seeds = sorted(set(a_by_seed) & set(b_by_seed))
    return estimate([a_by_seed[s] - b_by_seed[s] for s in seeds
                     if _finite(a_by_seed[s]) and _finite(b_by_seed[s])], confidence)


def _finite(value):
    return value is not None and math.isfinite(value)


def verdict(difference, unit=""):
    """The sentence a report says about a paired difference."""
    if difference.n < 2:
        return f"only {difference.n} seed pair(s): no interval"
    side = "higher" if difference.mean > 0 else "lower"
    if difference.excludes_zero():
        return (f"significant: the {CONFIDENCE:.0%} interval "
                f"[{difference.low:.4g}, {difference.high:.4g}]{unit} excludes zero ({side})")
    return (f"not significant: the {CONFIDENCE:.0%} interval "
            f"[{difference.low:.4g}, {difference.high:.4g}]{unit} includes zero")
