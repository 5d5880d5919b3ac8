"""hw/tofino/red_ecn.p4 run by the built-in target (issue 14): forwarding,
intrinsic metadata, the RED regions, the Lpf average and the marking curve
against the v1model program within the TNA profile's bounds."""
import math
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tna_curve as tc  # noqa: E402
from redctl.convert import (PortSpec, RedConfig, tna_pb, tna_pb_error_bound,  # noqa: E402
                            to_tna_constants, red_pb)

import softswitch_engine as se  # noqa: E402  (always installed: make setup builds it)


@pytest.fixture(scope="module")
def program():
    return tc.compile_tna("tna")[0]


@pytest.fixture(scope="module")
def constants():
    return to_tna_constants(tc.CONFIG, tc.SPEC)


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_both_archs_compile_and_load_strictly(arch):
    program, p4info = tc.compile_tna(arch)
    se.Switch(ports={}, seed=1).verify_pipeline(program)
    for name in ("MyIngress.ipv4_lpm", "MyEgress.red_config", "MyEgress.red_pb",
                 "MyEgress.red_budget", "MyEgress.red_avg_lpf", "MyEgress.port_tx"):
        assert f'name: "{name}"' in p4info


def test_routed_packet_leaves_with_ttl_checksum_and_macs_and_no_bridged_header(program, constants):
    sw = tc.tna_switch(se, program, constants)
    sent = tc.frame(0)
    out = sw.process_packet(0, sent)
    assert [port for port, _ in out] == [tc.PORT]
    got = Ether(out[0][1])
    assert len(out[0][1]) == len(sent)
    assert got.dst == "02:00:00:00:00:0b" and got[IP].ttl == IP(sent[14:]).ttl - 1
    assert_checksum_valid(got[IP])


def assert_checksum_valid(ip):
    sent = ip.chksum
    ip = ip.copy()
    del ip.chksum
    assert IP(bytes(ip)).chksum == sent


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_the_queue_depth_in_cells_reaches_the_program_unchanged(arch):
    """The traffic manager counts cells for a TNA program (softswitch/tests/test_tna_lower.py
    runs it with mixed frame sizes); the program's 19-bit enq_qdepth is that count."""
    program = tc.compile_tna(arch)[0]
    sw = tc.tna_switch(se, program, to_tna_constants(tc.CONFIG, tc.SPEC))
    for depth in (0, 1, 19, 7 * 19, (1 << 19) - 1):
        sw.process_packet(0, tc.frame(0), enq_qdepth=depth, enq_timestamp=1000, deq_timedelta=0)
        assert sw.register_read("MyEgress.last_qdepth", tc.PORT) == depth


def test_unrouted_packet_is_dropped(program, constants):
    sw = tc.tna_switch(se, program, constants)
    frame = bytes(Ether(dst="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="192.0.2.1") / (b"x" * 20))
    assert sw.process_packet(0, frame) == []


def pinned(sw, constants, q_pkt, n, ecn=1):
    """n packets with the queue held at q_pkt packets; returns the decisions' counters."""
    sw.register_write("MyEgress.red_avg_lpf__avg", tc.PORT, q_pkt * constants.cells_per_packet << 8)
    t, sent = 1_000_000, tc.frame(ecn)
    for _ in range(n):
        t += 1200
        sw.process_packet(0, sent, enq_qdepth=q_pkt * constants.cells_per_packet,
                          enq_timestamp=t, deq_timedelta=0)
    return {name: sw.counter_read(f"MyEgress.{name}", tc.PORT)[0]
            for name in ("port_tx", "early_marks", "early_drops", "forced_drops")}


def test_regions_below_minth_pass_and_from_maxth_are_forced_drops(program, constants):
    sw = tc.tna_switch(se, program, constants)
    assert pinned(sw, constants, 4, 200) == {"port_tx": 200, "early_marks": 0, "early_drops": 0,
                                             "forced_drops": 0}
    assert pinned(sw, constants, 15, 200)["forced_drops"] == 200


def test_ect_packets_are_marked_and_not_ect_dropped_at_the_same_rate(program, constants):
    """q = 10: p_b ~ 0.05, marked fraction 2p/(1+p) ~ 0.095; 4000 packets each, 99.9 %."""
    pb = tna_pb(constants, 10 * constants.cells_per_packet << 8) / 2**32
    expect = tc.marked_fraction(pb)
    n = 4000
    # the count law's marks are more regular than Bernoulli draws (uniform gaps), so the
    # binomial standard deviation is a conservative bound; normal approximation at 99.9 %
    slack = tc.Z_999 * math.sqrt(n * expect * (1 - expect)) + 2
    ect = pinned(tc.tna_switch(se, program, constants, seed=11), constants, 10, n, ecn=1)
    not_ect = pinned(tc.tna_switch(se, program, constants, seed=12), constants, 10, n, ecn=0)
    assert ect["early_drops"] == 0 and not_ect["early_marks"] == 0
    assert abs(ect["early_marks"] - n * expect) <= slack, ect
    assert abs(not_ect["early_drops"] - n * expect) <= slack, not_ect
    assert ect["port_tx"] == n and not_ect["port_tx"] == n - not_ect["early_drops"]


def test_marked_packets_carry_ce_and_a_valid_checksum(program, constants):
    sw = tc.tna_switch(se, program, constants)
    sw.register_write("MyEgress.red_avg_lpf__avg", tc.PORT, 14 * constants.cells_per_packet << 8)
    seen = 0
    for i in range(400):
        out = sw.process_packet(0, tc.frame(2), enq_qdepth=14 * constants.cells_per_packet,
                                enq_timestamp=1_000_000 + 1200 * i, deq_timedelta=0)
        ip = IP(out[0][1][14:])
        if ip.tos & 3 == 3:
            seen += 1
            assert_checksum_valid(ip)
    assert seen > 0


def test_the_lpf_follows_a_step_with_time_constant_s_over_wq(program, constants):
    """From avg 0, q steps to 20 packets: after k packet times s, avg = q (1 - e^(-k s / tau))."""
    sw = tc.tna_switch(se, program, constants)
    q = 20 * constants.cells_per_packet
    t0, sent = 5_000_000, tc.frame(0)
    sw.register_write("MyEgress.red_avg_lpf__time", tc.PORT, t0)
    for k in range(1, 401):
        sw.process_packet(0, sent, enq_qdepth=q, enq_timestamp=t0 + 1200 * k, deq_timedelta=0)
        if k % 100 == 0:
            want = (q << 8) * -math.expm1(-k * 1200e3 / constants.lpf_tau_ns)
            got = sw.register_read("MyEgress.red_avg", tc.PORT)
            assert abs(got - want) <= k, (k, got, want)        # one rounding per sample


def test_idle_time_decays_the_average_as_e_to_the_minus_t_over_tau(program, constants):
    sw = tc.tna_switch(se, program, constants)
    start = 10 * constants.cells_per_packet << 8
    sw.register_write("MyEgress.red_avg_lpf__avg", tc.PORT, start)
    sw.register_write("MyEgress.red_avg_lpf__time", tc.PORT, 1_000_000)
    idle_us = 200_000
    sw.process_packet(0, tc.frame(0), enq_qdepth=0, enq_timestamp=1_000_000 + idle_us, deq_timedelta=0)
    want = start * math.exp(-idle_us * 1e3 / constants.lpf_tau_ns)
    assert abs(sw.register_read("MyEgress.red_avg", tc.PORT) - want) <= 1


def test_the_lpf_equals_the_reference_model_bit_for_bit(program, constants):
    """redctl.redmodel.lpf_sample (what the PTF suite predicts with) is the engine's Lpf:
    300 packets with random depths and gaps, the average compared after each."""
    import random
    from redctl import redmodel
    rng = random.Random(14)
    sw = tc.tna_switch(se, program, constants)
    avg, now, last = 0, 1_000_000, 0
    for _ in range(300):
        now += rng.choice((0, 1, 7, 1200, 50_000, 3_000_000))
        q = rng.randrange(0, 40 * constants.cells_per_packet)
        sw.process_packet(0, tc.frame(0), enq_qdepth=q, enq_timestamp=now, deq_timedelta=0)
        avg, last = redmodel.lpf_sample(avg, q << 8, now - last, constants.lpf_tau_ns), now
        assert sw.register_read("MyEgress.red_avg", tc.PORT) == avg


def test_pb_ranges_are_within_the_profile_bound_of_red():
    cfg = RedConfig(minth=5, maxth=15, maxp=0.1, gentle=True)
    c = to_tna_constants(cfg, PortSpec())
    bound = tna_pb_error_bound(cfg)
    grid = c.cells_per_packet << 8
    for avg in range(4 * grid, 31 * grid, 7):
        exact = red_pb(cfg, avg / grid)
        got = tna_pb(c, avg)
        assert (got is None) == (exact is None), avg
        if got is not None:
            assert abs(got / 2**32 - exact) <= bound, (avg, got / 2**32, exact)


def test_marking_curve_matches_the_v1model_program_within_the_profile_bounds():
    results, tna = tc.curves(4000, levels=(4, 7, 10, 13, 15))
    for q, (v1, t) in results.items():
        diff, allowed = tc.agreement(v1, t)
        assert diff <= allowed, (q, v1.fraction, t.fraction, allowed)
