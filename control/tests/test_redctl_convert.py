"""The fixed-point constants the controller installs reproduce RED's curve
within the error bound documented in p4src/README.md."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redctl.convert import (AVG_ONE, DECAY_ONE, IDLE_BUCKETS, PROB_ONE, PortSpec, RedConfig,
                            decay_error_bound, from_constants, idle_decay, implied_pb,
                            pb_error_bound, red_pb, to_constants, validate, wq_log_from_wq)
from redctl.redmodel import decayed, idle_bucket

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
    assert all(0 <= f < DECAY_ONE and 0 <= b < 2 * IDLE_BUCKETS for b, f in c.decay_factors.items())


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


RATES_BPS = (1.5e6, 10e6, 100e6)
FULL_DECAY = 2.0 ** -16


def _classic_factor(cfg_wq_log: int, tx_us: float, idle_us: int) -> float:
    m = max(0.0, idle_us - tx_us) / tx_us
    return (1 - 2.0 ** -cfg_wq_log) ** m


def _full_decay_us(wq_log: int, tx_us: float) -> float:
    return (math.log(FULL_DECAY) / math.log1p(-2.0 ** -wq_log) + 1) * tx_us


@settings(max_examples=400, deadline=None)
@given(rate=st.sampled_from(RATES_BPS), wq_log=st.integers(1, 16),
       span=st.floats(0.0, 1.0), avg_packets=st.floats(0.5, 1000.0))
def test_idle_decay_is_classic_red_within_two_percent(rate, wq_log, span, avg_packets):
    """From one packet time to full decay ((1 - wq)^m = 2^-16), the data plane's
    avg * factor >> 32 (the reference model) is RED's (1 - wq)^m * avg within
    decay_error_bound (<= 1.2 %, stated in p4src/README.md) plus one 2^-16 unit;
    the idle time is spread log-uniformly over that range."""
    port = PortSpec(buffer_packets=65535, rate_bps=rate)
    c = to_constants(RedConfig(minth=1, maxth=2, maxp=0.1, wq_log=wq_log), port)
    tx_us = port.tx_time_us
    last_us = min(_full_decay_us(wq_log, tx_us), (IDLE_BUCKETS - 1) << c.idle_log)
    idle_us = round(tx_us * (last_us / tx_us) ** span)
    avg = round(avg_packets * AVG_ONE)
    got = decayed(c, avg, idle_bucket(c, idle_us))
    exact = _classic_factor(wq_log, tx_us, idle_us) * avg
    bound = decay_error_bound(wq_log, tx_us)
    assert bound <= 0.012
    assert abs(got - exact) <= bound * exact + 1, (idle_us, got / exact)


@settings(max_examples=200, deadline=None)
@given(rate=st.sampled_from(RATES_BPS), wq_log=st.integers(1, 16),
       gaps=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60))
def test_short_gaps_do_not_add_up_to_extra_decay(rate, wq_log, gaps):
    """Light traffic: packets meeting an empty queue after gaps shorter than
    one coarse bucket. Each gap uses a fine bucket (1/1024 of a coarse one),
    so even 60 of them in a row stay within 60 fine-bucket errors of RED's
    product of (1 - wq)^m; gaps below one packet time do not decay at all."""
    port = PortSpec(buffer_packets=65535, rate_bps=rate)
    c = to_constants(RedConfig(minth=1, maxth=2, maxp=0.1, wq_log=wq_log), port)
    tx_us, width = port.tx_time_us, 1 << c.idle_log
    avg = exact = 60000 * AVG_ONE
    for g in gaps:
        idle_us = int(g * (width - 1))
        avg = decayed(c, avg, idle_bucket(c, idle_us))
        exact *= _classic_factor(wq_log, tx_us, idle_us)
        if idle_us < tx_us:
            assert idle_bucket(c, idle_us) not in c.decay_factors or idle_us + (width >> 10) > tx_us
    fine_error = math.expm1(max(1, width >> 10) / 2 * -math.log1p(-2.0 ** -wq_log) / tx_us) + 2.0 ** -16
    assert abs(avg - exact) <= len(gaps) * (fine_error * exact + 1), (avg / exact)


@pytest.mark.parametrize("rate", RATES_BPS)
@pytest.mark.parametrize("wq_log", [1, 9, 16])
def test_long_idle_empties_the_average(rate, wq_log):
    """Past full decay the average is below 2^-16 of its value, and after the
    last bucket's start it is zero (unless the 32-bit clock limits the table)."""
    port = PortSpec(rate_bps=rate)
    c = to_constants(RedConfig(minth=1, maxth=2, maxp=0.1, wq_log=wq_log), port)
    avg = 60 * AVG_ONE
    full = math.ceil(_full_decay_us(wq_log, port.tx_time_us))
    last_start = (IDLE_BUCKETS - 1) << c.idle_log
    if last_start >= full:
        assert decayed(c, avg, idle_bucket(c, last_start)) == 0
        assert decayed(c, avg, idle_bucket(c, full)) <= avg * FULL_DECAY * 1.02 + 1
    else:                                 # wq 2^-16 at 1.5 Mb/s: > 71 min to decay
        assert c.idle_log == 22


def test_shift_decay_of_the_old_table_is_outside_the_bound():
    """The replaced table (avg >> round(m * -log2(1 - wq)), issue 17) left the
    average untouched after 1 s idle at 1.5 Mb/s, wq = 2^-9; RED and the new
    table multiply it by 0.78 (m = 124 packets of 8 ms)."""
    port = PortSpec(rate_bps=1.5e6)
    c = to_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9), port)
    avg = 16 * AVG_ONE
    exact = _classic_factor(9, port.tx_time_us, 1_000_000)
    old_shift = round((1_000_000 - port.tx_time_us) / port.tx_time_us * -math.log2(1 - 2 ** -9))
    assert old_shift == 0
    assert decayed(c, avg, idle_bucket(c, 1_000_000)) / avg == pytest.approx(exact, rel=0.012)
    assert exact == pytest.approx(0.785, abs=0.001)


@pytest.mark.parametrize("rate", RATES_BPS)
def test_average_falls_below_minth_when_classic_red_says(rate):
    """issue 17's lock-out: with avg 16.5 > maxth 15 when the queue empties,
    classic RED brings the average below minth 5 after t* = (ln(5/16.5) /
    ln(1 - wq) + 1) s (4.9 s at 1.5 Mb/s, wq = 2^-9). The data plane's
    average is still above minth 1.2 % before t* and below it 1.2 % after."""
    port = PortSpec(rate_bps=rate)
    c = to_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9), port)
    avg = round(16.5 * AVG_ONE)
    t_star = (math.log(5 / 16.5) / math.log1p(-2 ** -9) + 1) * port.tx_time_us
    assert decayed(c, avg, idle_bucket(c, int(t_star * 0.988))) > c.minth
    assert decayed(c, avg, idle_bucket(c, int(t_star * 1.012))) < c.minth
