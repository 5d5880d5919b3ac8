"""redctl.convert's TNA profile conversions (p4src/README.md "TNA profile")."""
import dataclasses

import pytest

from redctl.convert import (PROB_ONE, PortSpec, RedConfig, from_tna_constants, red_pb, tna_cells,
                            tna_pb, tna_pb_error_bound, to_tna_constants)


@pytest.mark.parametrize("target, cells", [("tofino", 19), ("tofino2", 9)])
def test_thresholds_are_packets_times_the_cells_of_a_mean_packet(target, cells):
    c = to_tna_constants(RedConfig(minth=5, maxth=15, maxp=0.1), PortSpec(), target)
    assert c.cells_per_packet == cells
    prob = [r for r in c.ranges if r.action == "set_pb"]
    assert prob[0].lo == 5 * cells * 256 and prob[-1].hi == 15 * cells * 256 - 1
    assert [r.action for r in c.ranges][-1] == "red_forced" and c.ranges[-1].lo == 15 * cells * 256
    assert all(a.hi + 1 == b.lo for a, b in zip(c.ranges, c.ranges[1:]))     # no gap, no overlap


@pytest.mark.parametrize("target, cell", [("tofino", 80), ("tofino2", 176)])
def test_a_frame_takes_the_cells_of_itself_and_its_bridged_header(target, cell):
    """The traffic manager buffers the 6-byte bridged header with the frame."""
    assert tna_cells(cell - 6, target) == 1 and tna_cells(cell - 5, target) == 2
    c = to_tna_constants(RedConfig(minth=5, maxth=15, maxp=0.1), PortSpec(mean_packet_bytes=cell - 5), target)
    assert c.cells_per_packet == 2


def test_gentle_ranges_reach_twice_maxth_and_end_at_probability_one():
    cfg = RedConfig(minth=5, maxth=15, maxp=0.1, gentle=True)
    c = to_tna_constants(cfg, PortSpec())
    forced = c.ranges[-1]
    assert forced.lo == 30 * c.cells_per_packet * 256
    assert len([r for r in c.ranges if r.action == "set_pb"]) == 128
    assert abs(c.ranges[-2].pb / PROB_ONE - 1) <= tna_pb_error_bound(cfg)


def test_lpf_time_constant_is_one_packet_time_over_wq():
    c = to_tna_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9),
                         PortSpec(rate_bps=10e6, mean_packet_bytes=1500))
    assert c.lpf_tau_ns == 1_200_000 * 512
    assert to_tna_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=0)).lpf_tau_ns == 0


def test_pb_at_every_average_is_within_the_bound():
    cfg = RedConfig(minth=3, maxth=40, maxp=0.25)
    c = to_tna_constants(cfg, PortSpec(buffer_packets=64))
    grid = c.cells_per_packet * 256
    for avg in range(2 * grid, 41 * grid, 13):
        exact, got = red_pb(cfg, avg / grid), tna_pb(c, avg)
        assert (got is None) == (exact is None)
        if got is not None:
            assert abs(got / PROB_ONE - exact) <= tna_pb_error_bound(cfg), avg


def test_thresholds_beyond_the_19_bit_cell_count_are_refused():
    with pytest.raises(ValueError, match="19-bit"):
        to_tna_constants(RedConfig(minth=5, maxth=30_000, maxp=0.1),
                         PortSpec(buffer_packets=60_000))


@pytest.mark.parametrize("target", ["tofino", "tofino2"])
@pytest.mark.parametrize("cfg", [RedConfig(minth=5, maxth=15, maxp=0.1),
                                 RedConfig(minth=0.5, maxth=60, maxp=0.02, wq_log=12, gentle=True),
                                 RedConfig(minth=1, maxth=2, maxp=1, wq_log=0, ecn=False)])
def test_installed_entries_read_back_as_the_config(cfg, target):
    port = PortSpec(buffer_packets=64, rate_bps=1e9)
    assert from_tna_constants(to_tna_constants(cfg, port, target), port, target) == cfg


def test_entries_no_config_produces_are_refused():
    c = to_tna_constants(RedConfig(minth=5, maxth=15, maxp=0.1))
    bent = dataclasses.replace(c, ranges=c.ranges[:3] + (dataclasses.replace(c.ranges[3], pb=7),)
                               + c.ranges[4:])
    with pytest.raises(ValueError, match="not written by redctl"):
        from_tna_constants(bent)
