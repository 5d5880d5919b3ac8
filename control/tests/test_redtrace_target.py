"""The recorded RED bottleneck trace (hw/fpga/traces/bottleneck_red.csv: 2671
packets of a lab run, 2 ECN TCP flows + not-ECT UDP through 10 Mb/s) replayed
through p4src/red_ecn.p4 on the built-in target with each packet's recorded
queue metadata, and through the reference model with the draw the program
stored: registers, decision and ECN field equal packet by packet.
hw/fpga/tests/test_red_rtl.py runs the same replay (red_target_rig.replay_trace)
and injects the pipeline's draws into the RTL: RTL == model == pipeline.
"""
from __future__ import annotations

from collections import Counter

from red_target_rig import read_trace, replay_trace

from redctl.redmodel import EARLY_DROP, MARK, PASS

import softswitch_engine as se


def test_recorded_trace_pipeline_decides_like_the_model(tmp_path):
    rows = read_trace()
    replay = replay_trace(se, tmp_path, rows)
    decisions = Counter(s.decision for s in replay.steps)
    assert sum(decisions.values()) == len(rows) == 2671
    assert decisions[MARK] > 10 and decisions[EARLY_DROP] > 10 and decisions[PASS] > 1000, decisions
    assert len(replay.draws) > 10                                 # the pipeline's own draws
    assert max(r["enq_qdepth"] for r in rows) > 15                # beyond maxth
