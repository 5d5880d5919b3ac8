"""redmodel.lpf_sample: the TNA program's Lpf average (p4src/README.md "TNA profile")."""
import math

from redctl import redmodel


def test_one_time_constant_closes_1_minus_1_over_e_of_the_gap():
    assert redmodel.lpf_sample(0, 1_000_000, 10, 10_000) == 632_121
    assert redmodel.lpf_sample(1_000_000, 0, 10, 10_000) == 1_000_000 - 632_121


def test_a_step_of_one_packet_time_weighs_1_minus_e_to_the_minus_wq():
    """tau = s / wq: one sample s after the last weighs the new depth by 1 - e^-wq."""
    s_us, wq = 2000, 2.0 ** -3
    got = redmodel.lpf_sample(0, 1 << 20, s_us, round(s_us * 1000 / wq))
    assert got == round((1 << 20) * -math.expm1(-wq))
    assert abs(got / (1 << 20) - wq) <= wq * wq / 2      # the profile's EWMA error bound


def test_idle_time_decays_by_e_to_the_minus_t_over_tau():
    tau_ns, idle_us = 160_000_000, 200_000
    assert redmodel.lpf_sample(40_000, 0, idle_us, tau_ns) == round(40_000 * math.exp(-1.25))


def test_no_time_keeps_the_average_a_long_gap_takes_the_sample_and_no_tau_passes_it():
    assert redmodel.lpf_sample(777, 5_000, 0, 1_000) == 777
    assert redmodel.lpf_sample(777, 5_000, -3, 1_000) == 777
    assert redmodel.lpf_sample(777, 5_000, 1_000_000, 1_000) == 5_000
    assert redmodel.lpf_sample(777, 5_000, 3, 0) == 5_000


def test_halves_round_away_from_zero_both_ways():
    tau = round(1000 / math.log(2))            # dt = 1 us: weight 1/2 (to double precision)
    assert redmodel.lpf_sample(0, 3, 1, tau) in (1, 2)
    up, down = redmodel.lpf_sample(0, 3, 1, tau), redmodel.lpf_sample(3, 0, 1, tau)
    assert up + down == 3, "rising and falling steps are mirror images"
