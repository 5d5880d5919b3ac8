"""The fixed-point constants the controller installs reproduce RED's curve
within the error bound documented in p4src/README.md."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redctl.convert import (AVG_ONE, PROB_ONE, PortSpec, RedConfig, from_constants, idle_decay,
                            implied_pb, pb_error_bound, red_pb, to_constants, validate,
                            wq_log_from_wq)

BIG_BUFFER = PortSpec(buffer_packets=65535)


@st.composite
def red_configs(draw):
    """Thresholds on the 2^-4 grid (all integers included), any accepted maxp."""
    minth = draw(st.integers(0, 4000 * 16)) / 16
    maxth = minth + draw(st.integers(1, 4000 * 16)) / 16
    maxp = draw(st.floats(1e-6, 1.0))
    return RedConfig(minth=minth, maxth=maxth, maxp=maxp, wq_log=draw(st.integers(0, 16)),
                     gentle=draw(st.booleans()))


def _avg_grid(cfg: RedConfig):
    """Averages across all regions, on the data plane's 2^-16 grid."""
    top = 2.2 * cfg.maxth
    for i in range(0, 221):
        yield round(top * i / 220 * AVG_ONE)
    for edge in (cfg.minth, cfg.maxth, 2 * cfg.maxth):
        for d in (-1, 0, 1):
            yield max(0, round(edge * AVG_ONE) + d)


@settings(max_examples=300, deadline=None)
@given(red_configs())
def test_installed_curve_matches_red_within_documented_bound(cfg):
    c = to_constants(cfg, BIG_BUFFER)
    bound = pb_error_bound(cfg)
    for avg_fixed in _avg_grid(cfg):
        exact = red_pb(cfg, avg_fixed / AVG_ONE)
        got = implied_pb(c, avg_fixed)
        assert (got is None) == (exact is None), (avg_fixed, got, exact)
        if got is not None:
            assert abs(got / PROB_ONE - exact) <= bound, (avg_fixed, got / PROB_ONE, exact)


@settings(max_examples=200, deadline=None)
@given(red_configs())
def test_constants_fit_their_p4_widths(cfg):
    c = to_constants(cfg, BIG_BUFFER)
    widths = {"mode": 8, "ecn": 1, "gentle": 1, "wq_log": 8, "minth": 32, "maxth": 32,
              "maxp": 32, "slope": 48, "gentle_slope": 48, "idle_log": 8}
    for name, value in c.action_params().items():
        assert 0 <= value < 1 << widths[name], name
    # the data plane's 64-bit products cannot overflow inside their regions
    assert (c.maxth - c.minth) * c.slope < 1 << 64
    assert c.maxth * c.gentle_slope < 1 << 64
    assert all(0 < s <= 32 and 0 <= b < 256 for b, s in c.decay_shifts.items())


@settings(max_examples=200, deadline=None)
@given(red_configs(), st.sampled_from(["red", "droptail"]), st.booleans())
def test_read_back_recovers_the_settings(cfg, mode, ecn):
    cfg = RedConfig(minth=cfg.minth, maxth=cfg.maxth, maxp=round(cfg.maxp, 9) or 1e-9,
                    wq_log=cfg.wq_log, gentle=cfg.gentle, mode=mode, ecn=ecn)
    assert from_constants(to_constants(cfg, BIG_BUFFER)) == cfg


def test_floyd_defaults_give_the_expected_constants():
    c = to_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9), PortSpec(buffer_packets=100))
    assert (c.minth, c.maxth) == (5 * AVG_ONE, 15 * AVG_ONE)
    assert c.maxp == round(0.1 * PROB_ONE)
    assert implied_pb(c, 10 * AVG_ONE) == pytest.approx(0.05 * PROB_ONE, abs=2)
    assert implied_pb(c, 15 * AVG_ONE) is None          # classic: forced drop at maxth


@pytest.mark.parametrize("wq, k", [(1, 0), (0.5, 1), (0.002, 9), (2 ** -16, 16)])
def test_wq_rounds_to_nearest_power_of_two(wq, k):
    assert wq_log_from_wq(wq) == k


@pytest.mark.parametrize("wq", [0, -0.1, 1.5, 2 ** -18])
def test_wq_outside_range_is_rejected(wq):
    with pytest.raises(ValueError, match="wq"):
        wq_log_from_wq(wq)


@pytest.mark.parametrize("cfg, message", [
    (RedConfig(minth=15, maxth=5, maxp=0.1), "below maxth"),
    (RedConfig(minth=5, maxth=5, maxp=0.1), "below maxth"),
    (RedConfig(minth=5, maxth=150, maxp=0.1), "buffer"),
    (RedConfig(minth=5, maxth=15, maxp=0), "maxp"),
    (RedConfig(minth=5, maxth=15, maxp=1.01), "maxp"),
    (RedConfig(minth=-1, maxth=15, maxp=0.1), "minth"),
    (RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=17), "wq_log"),
    (RedConfig(minth=5, maxth=15, maxp=0.1, mode="codel"), "mode"),
])
def test_invalid_settings_are_rejected_with_the_reason(cfg, message):
    with pytest.raises(ValueError, match=message):
        validate(cfg, PortSpec(buffer_packets=100))


@pytest.mark.parametrize("wq_log", [1, 5, 9, 12, 16])
@pytest.mark.parametrize("tx_time_us", [12.0, 1200.0, 12000.0])
def test_idle_decay_shift_is_the_rounded_exponent(wq_log, tx_time_us):
    """Each bucket's shift is within 1/2 of -log2((1 - wq)^m) at its midpoint,
    i.e. the decay factor is within 2^±0.5 of RED's (shifts cap at 32 = zero)."""
    idle_log, shifts = idle_decay(wq_log, tx_time_us)
    per_packet = -math.log2(1 - 2.0 ** -wq_log)
    width = 1 << idle_log
    for bucket in range(255):
        m = max(0.0, bucket * width + width / 2 - tx_time_us) / tx_time_us
        assert abs(shifts.get(bucket, 0) - min(32.0, m * per_packet)) <= 0.5
    assert shifts.get(255) == 32 or idle_log == 24   # long idle periods empty the average
