"""cocotb testbench of red_ecn_marker.

decisions_match_model configures the block over AXI4-Lite as redctl would,
streams a scenario's packets (one per clock, with the scenario's idle gaps),
and compares every decision, outgoing ECN field and average with the integer
RED model. Run by test_red_rtl.py, which passes the scenario as a pickle
(RED_TB_SCENARIO) and reads the summary this writes (RED_TB_SUMMARY).
register_map_reads_back checks the register map (test_register_map.py).
"""
import json
import os
import pickle

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

from red_scenario import Draws, Lfsr, expected_decisions

LATENCY = 7                     # clock edges from taking a packet to out_valid (red_core.v)
CLOCK_NS = 10
REG = {"seed": 0x08, "mode": 0x10, "ecn": 0x14, "gentle": 0x18, "wq_log": 0x1C,
       "minth": 0x20, "maxth": 0x24, "maxp": 0x28, "slope_lo": 0x2C, "slope_hi": 0x30,
       "gentle_slope_lo": 0x34, "gentle_slope_hi": 0x38, "idle_log": 0x3C,
       "commit": 0x40, "decay_index": 0x44, "decay_factor": 0x48, "decay_delete": 0x4C}
# the staging registers of set_red's parameters: (register, its bits of the parameter)
STAGING = {"mode": [("mode", 8)], "ecn": [("ecn", 1)], "gentle": [("gentle", 1)],
           "wq_log": [("wq_log", 8)], "minth": [("minth", 32)], "maxth": [("maxth", 32)],
           "maxp": [("maxp", 32)], "slope": [("slope_lo", 32), ("slope_hi", 16)],
           "gentle_slope": [("gentle_slope_lo", 32), ("gentle_slope_hi", 16)],
           "idle_log": [("idle_log", 8)]}
BUCKETS = 2048                  # red_idle_decay keys per port (11 bits)
ID = 0x5245_4431                # "RED1"


class AxiLite:
    """Single-beat AXI4-Lite writes and reads (bready/rready held high)."""

    def __init__(self, dut):
        self.dut = dut
        dut.s_axil_awvalid.value = 0
        dut.s_axil_wvalid.value = 0
        dut.s_axil_wstrb.value = 0xF
        dut.s_axil_bready.value = 1
        dut.s_axil_arvalid.value = 0
        dut.s_axil_rready.value = 1

    async def write(self, addr: int, data: int):
        d = self.dut
        d.s_axil_awaddr.value = addr
        d.s_axil_wdata.value = data & 0xFFFF_FFFF
        d.s_axil_awvalid.value = 1
        d.s_axil_wvalid.value = 1
        while True:
            await RisingEdge(d.clk)
            if d.s_axil_awready.value:
                break
        d.s_axil_awvalid.value = 0
        d.s_axil_wvalid.value = 0
        await RisingEdge(d.clk)        # bvalid is taken with bready high

    async def read(self, addr: int) -> int:
        d = self.dut
        d.s_axil_araddr.value = addr
        d.s_axil_arvalid.value = 1
        await RisingEdge(d.clk)
        d.s_axil_arvalid.value = 0
        while True:
            await ReadOnly()
            if d.s_axil_rvalid.value:
                value = int(d.s_axil_rdata.value)
                await RisingEdge(d.clk)
                return value
            await RisingEdge(d.clk)


async def install(bus: AxiLite, port: int, c):
    """What redctl writes for one port: the set_red entry (all zero = no entry,
    the table's default) and the red_idle_decay entries."""
    fields = {name: 0 for name in STAGING} if c is None else c.action_params()
    assert fields.keys() == STAGING.keys(), f"set_red parameters {list(fields)} vs registers {list(STAGING)}"
    for name, value in fields.items():
        for register, bits in STAGING[name]:
            await bus.write(REG[register], value & ((1 << bits) - 1))
            value >>= bits
    await bus.write(REG["commit"], port)
    factors = {} if c is None else c.decay_factors
    await bus.write(REG["decay_index"], port * BUCKETS)
    for bucket in range(BUCKETS):
        if bucket in factors:
            await bus.write(REG["decay_factor"], factors[bucket])
        else:
            await bus.write(REG["decay_delete"], 0)


async def collect(dut, results: list):
    """Record (time, port, decision, ecn, avg) for every out_valid."""
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if dut.out_valid.value:
            results.append((get_sim_time("ns"), int(dut.out_port.value),
                            int(dut.out_decision.value), int(dut.out_ecn.value),
                            int(dut.out_avg.value)))


async def feed_draws(dut, draws: list, used: list):
    """Drive rand_ext with the next unused draw; a draw is used at the clock
    edge ending a cycle in which rand_take is high."""
    dut.rand_ext.value = draws[0] if draws else 0
    while True:
        await ReadOnly()
        take = bool(dut.rand_take.value)
        await RisingEdge(dut.clk)
        if take:
            used[0] += 1
            dut.rand_ext.value = draws[used[0]] if used[0] < len(draws) else 0


@cocotb.test()
async def decisions_match_model(dut):
    with open(os.environ["RED_TB_SCENARIO"], "rb") as f:
        spec = pickle.load(f)
    phases, draw_spec = spec["phases"], spec["draws"]
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    bus = AxiLite(dut)
    dut.in_valid.value = 0
    dut.rand_ext_en.value = draw_spec[0] == "list"
    dut.rand_ext.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    if draw_spec[0] == "lfsr":
        await bus.write(REG["seed"], draw_spec[1])
    assert await bus.read(0x00) == ID

    results, sent, used = [], [], [0]
    cocotb.start_soon(collect(dut, results))
    if draw_spec[0] == "list":
        cocotb.start_soon(feed_draws(dut, draw_spec[1], used))
    for phase in phases:
        for port, constants in sorted(phase.configs.items()):
            await install(bus, port, constants)
        for p in phase.packets:
            for _ in range(p.gap):
                dut.in_valid.value = 0
                await RisingEdge(dut.clk)
            dut.in_valid.value = 1
            dut.in_port.value = p.port
            dut.in_qdepth.value = p.qdepth
            dut.in_timestamp.value = p.timestamp
            dut.in_deq_timedelta.value = p.deq_timedelta
            dut.in_ecn.value = p.ecn
            await RisingEdge(dut.clk)
            sent.append(get_sim_time("ns"))
        dut.in_valid.value = 0
        for _ in range(LATENCY + 2):
            await RisingEdge(dut.clk)
    if draw_spec[0] == "list":
        assert used[0] <= len(draw_spec[1]), "the RTL drew more values than the scenario holds"

    source = Draws(draw_spec[1]) if draw_spec[0] == "list" else Lfsr(draw_spec[1])
    expected = expected_decisions(phases, source)
    packets = [p for phase in phases for p in phase.packets]
    mismatches = []
    for i, (p, e) in enumerate(zip(packets, expected)):
        got = results[i] if i < len(results) else None
        if got is None or got[1:] != (p.port, e.decision, e.ecn, e.avg):
            mismatches.append({"packet": i, "input": p.__dict__, "expected": e.__dict__,
                               "rtl": None if got is None else
                               dict(zip(("port", "decision", "ecn", "avg"), got[1:]))})
    latencies = sorted({round((got[0] - s) / CLOCK_NS) for got, s in zip(results, sent)})
    summary = {"decisions": len(results), "packets": len(packets),
               "mismatches": len(mismatches), "first_mismatches": mismatches[:5],
               "latencies": latencies, "draws_used": used[0],
               "rtl_decisions": [got[2] for got in results], "rtl_ecn": [got[3] for got in results],
               "decision_counts": [sum(e.decision == d for e in expected) for d in range(4)]}
    with open(os.environ["RED_TB_SUMMARY"], "w") as f:
        json.dump(summary, f)
    assert len(results) == len(packets), f"{len(results)} decisions for {len(packets)} packets"
    assert latencies == [LATENCY], f"latencies {latencies}, expected always {LATENCY}"
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[0]}"


@cocotb.test()
async def register_map_reads_back(dut):
    """ID and PORTS read as documented; every staging register reads back what
    was written, cut to its parameter's width; DECAY_INDEX steps by one on each
    DECAY_FACTOR or DECAY_DELETE write (burst writes of a port's table)."""
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    bus = AxiLite(dut)
    dut.in_valid.value = 0
    dut.rand_ext_en.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    assert await bus.read(0x00) == ID
    assert await bus.read(0x04) == 1 << int(os.environ["RED_TB_PORT_BITS"])
    for pattern in (0xFFFF_FFFF, 0xA5A5_5A5A, 0):
        for parts in STAGING.values():
            for register, bits in parts:
                await bus.write(REG[register], pattern)
                got = await bus.read(REG[register])
                assert got == pattern & ((1 << bits) - 1), f"{register}: wrote {pattern:#x}, read {got:#x}"
    await bus.write(REG["decay_index"], 3 * BUCKETS + 2046)
    await bus.write(REG["decay_factor"], 0x8000_0000)
    assert await bus.read(REG["decay_index"]) == 3 * BUCKETS + 2047
    await bus.write(REG["decay_delete"], 0)
    assert await bus.read(REG["decay_index"]) == 4 * BUCKETS
