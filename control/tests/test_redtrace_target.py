"""The recorded RED bottleneck trace (hw/fpga/traces/bottleneck_red.csv: 2671
packets of a lab run, 2 ECN TCP flows + not-ECT UDP through 10 Mb/s) replayed
through p4src/red_ecn.p4 on the built-in target with each packet's recorded
queue metadata, and through the reference model with the draw the program
stored: registers, decision and ECN field equal packet by packet.
hw/fpga/tests/test_red_rtl.py checks the RTL against the same model on the
same trace, so together RTL == model == pipeline.
"""
from __future__ import annotations

import csv
from collections import Counter

import pytest
from red_target_rig import REPO, compile_red_ecn, red_switch, run_and_compare

from redctl.convert import PortSpec, RedConfig, to_constants
from redctl.redmodel import EARLY_DROP, MARK, PASS

se = pytest.importorskip("softswitch_engine")

TRACE = REPO / "hw" / "fpga" / "traces" / "bottleneck_red.csv"
# what hw/fpga/traces/record.py installed on the bottleneck port (hw/fpga/README.md)
TRACE_RED = to_constants(RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=4, ecn=True),
                         PortSpec(buffer_packets=100, rate_bps=10e6))


def test_recorded_trace_pipeline_decides_like_the_model(tmp_path):
    sw = red_switch(se, compile_red_ecn(tmp_path), TRACE_RED)
    with open(TRACE, newline="") as f:
        rows = [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]
    decisions = Counter(
        run_and_compare(sw, TRACE_RED, r["enq_qdepth"], r["enq_timestamp_us"], r["deq_timedelta_us"],
                        r["ecn"], r["bytes"]).decision
        for r in rows)
    assert sum(decisions.values()) == len(rows) == 2671
    assert decisions[MARK] > 10 and decisions[EARLY_DROP] > 10 and decisions[PASS] > 1000, decisions
    assert max(r["enq_qdepth"] for r in rows) > 15                # beyond maxth
