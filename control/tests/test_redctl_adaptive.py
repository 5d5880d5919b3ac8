"""Adaptive RED's maxp rule (Floyd, Gummadi & Shenker 2001)."""
import pytest

from redctl.adaptive import adapt_maxp, target_band
from redctl.convert import RedConfig

CFG = RedConfig(minth=5, maxth=15, maxp=0.1)


def test_target_band_is_40_to_60_percent_between_the_thresholds():
    assert target_band(CFG) == pytest.approx((9.0, 11.0))


def test_above_the_band_maxp_increases_by_min_of_001_and_a_quarter():
    assert adapt_maxp(CFG, 12) == pytest.approx(0.11)
    assert adapt_maxp(RedConfig(5, 15, 0.02), 12) == pytest.approx(0.025)


def test_below_the_band_maxp_decreases_by_a_tenth():
    assert adapt_maxp(CFG, 8) == pytest.approx(0.09)


def test_inside_the_band_maxp_is_kept():
    assert adapt_maxp(CFG, 10) == 0.1


def test_maxp_stays_within_the_papers_limits():
    assert adapt_maxp(RedConfig(5, 15, 0.51), 14) == 0.51
    assert adapt_maxp(RedConfig(5, 15, 0.009), 6) == 0.009
