"""The RTL (hw/fpga/rtl) against the integer RED model, decision by decision,
on Icarus Verilog through cocotb: randomised traffic and configurations, a
recorded trace with the P4 pipeline's own draws (RTL == model == pipeline),
deliberately broken variants that must be caught; and its register map
against the P4 action set_red."""
import json
import pickle
import re
import shutil
import sys
from pathlib import Path

import pytest
from cocotb_tools.runner import get_results, get_runner
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from red_scenario import random_scenario, trace_phase
from red_tb import STAGING
from redctl import compiler
from redctl.redmodel import MARK

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "control" / "tests"))   # the pipeline's trace replay
from red_target_rig import TRACE_RED, read_trace, replay_trace  # noqa: E402
RTL = HERE.parent / "rtl"
SOURCES = ["red_ecn_marker.v", "red_core.v", "red_lfsr.v"]
PORT_BITS = 3


def simulate(tmp_path: Path, testcase: str, env: dict, rtl_dir: Path = RTL, parameters=None) -> tuple:
    """Build red_ecn_marker from rtl_dir and run one cocotb test of red_tb;
    returns (tests run, tests failed)."""
    runner = get_runner("icarus")
    runner.build(sources=[rtl_dir / s for s in SOURCES], includes=[rtl_dir],
                 hdl_toplevel="red_ecn_marker", build_dir=tmp_path / "build", timescale=("1ns", "1ps"),
                 parameters={"PORT_BITS": PORT_BITS, **(parameters or {})})
    results_xml = tmp_path / "results.xml"
    try:
        runner.test(hdl_toplevel="red_ecn_marker", test_module="red_tb", testcase=testcase,
                    test_dir=tmp_path, build_dir=tmp_path / "build", results_xml=str(results_xml),
                    extra_env=env)
    except SystemExit:             # the runner exits when a cocotb test fails
        pass
    return get_results(results_xml)


def run_rtl(tmp_path: Path, phases, draws, rtl_dir: Path = RTL, parameters=None) -> dict:
    """Run red_tb's decisions_match_model on the scenario, return the
    testbench's summary (decisions, mismatches, latencies, failed)."""
    scenario = tmp_path / "scenario.pkl"
    summary = tmp_path / "summary.json"
    with open(scenario, "wb") as f:
        pickle.dump({"phases": phases, "draws": draws}, f)
    _, failed = simulate(tmp_path, "decisions_match_model",
                         {"RED_TB_SCENARIO": str(scenario), "RED_TB_SUMMARY": str(summary)},
                         rtl_dir, parameters)
    result = json.loads(summary.read_text())
    result["failed"] = failed
    return result


def test_register_map_has_set_red_fields(tmp_path):
    """The configuration word (red_cfg.vh) and the AXI4-Lite staging registers
    hold exactly the parameters of MyEgress.set_red in p4src/red_ecn.p4's
    P4Info: same names, order and widths (a parameter added to the program
    fails here until the block carries it)."""
    p4info_path, _ = compiler.compile_program(HERE.parents[2] / "p4src" / "red_ecn.p4", tmp_path)
    p4info = text_format.Parse(Path(p4info_path).read_text(), p4info_pb2.P4Info())
    set_red = next(a for a in p4info.actions if a.preamble.name == "MyEgress.set_red")
    program = [(p.name, p.bitwidth) for p in set_red.params]
    layout = re.findall(r"`define CFG_(\w+)\s+(\d+)(?::(\d+))?", (RTL / "red_cfg.vh").read_text())
    fields = [(name.lower(), int(hi) - int(lo or hi) + 1) for name, hi, lo in layout]
    assert fields == program
    assert int(re.search(r"`define RED_CFG_BITS\s+(\d+)", (RTL / "red_cfg.vh").read_text())[1]) == \
        sum(bits for _, bits in program)
    assert [(name, sum(bits for _, bits in STAGING[name])) for name in STAGING] == program


def test_register_map_reads_back(tmp_path):
    """ID, PORTS, every staging register (cut to its parameter's width) and the
    DECAY_INDEX burst stepping read back over AXI4-Lite as documented."""
    tests, failed = simulate(tmp_path, "register_map_reads_back", {"RED_TB_PORT_BITS": str(PORT_BITS)})
    assert (tests, failed) == (1, 0)


def test_randomised_decisions_match_model(tmp_path):
    """>= 100,000 randomised decisions over 8 ports and 4 configuration phases
    (controller-made and raw settings, idle decay, back-to-back packets of one
    port, the 32-bit clock wrapping), hardware LFSR draws mirrored in the test."""
    phases = random_scenario(seed=13, ports=1 << PORT_BITS, phases=4, packets_per_phase=25_500)
    result = run_rtl(tmp_path, phases, ("lfsr", 0x1234_5678))
    assert result["decisions"] >= 100_000
    assert result["mismatches"] == 0, result["first_mismatches"]
    assert result["latencies"] == [7]
    counts = result["decision_counts"]
    assert all(n > 500 for n in counts), f"every decision kind exercised: {counts}"
    assert result["failed"] == 0


def test_narrow_pb_matches_model_on_controller_settings(tmp_path):
    """The PB_BITS=33 variant (p_b saturated at 2^33 - 1, count * p_b exact in
    65 bits) decides exactly as the model on every setting redctl installs,
    which is the precision it declares (hw/fpga/README.md)."""
    phases = random_scenario(seed=22, ports=1 << PORT_BITS, phases=3, packets_per_phase=7_000,
                             raw=False)
    result = run_rtl(tmp_path, phases, ("lfsr", 0x0bad_cafe), parameters={"PB_BITS": 33})
    assert result["decisions"] == 21_000
    assert result["mismatches"] == 0, result["first_mismatches"]
    counts = result["decision_counts"]
    assert all(n > 100 for n in counts), f"every decision kind exercised: {counts}"
    assert result["failed"] == 0


def test_recorded_trace_rtl_model_and_pipeline_agree(tmp_path):
    """The queue trace of a real lab run (2 ECN TCP flows + not-ECT UDP through a
    10 Mb/s RED bottleneck) replayed through p4src/red_ecn.p4 on the built-in
    target (which checks it against the model fed the program's draws), then
    through the RTL with exactly the draws the pipeline made injected: the RTL
    uses all of them, and its decision and outgoing ECN field equal the model's
    and the pipeline's on every packet."""
    import softswitch_engine as se     # the built-in target (make setup installs it): no skip in CI
    rows = read_trace()
    pipeline = replay_trace(se, tmp_path / "p4", rows)
    result = run_rtl(tmp_path, [trace_phase(rows, TRACE_RED, port=1)], ("list", pipeline.draws))
    assert result["decisions"] == len(rows) >= 2000
    assert result["mismatches"] == 0, result["first_mismatches"]
    assert result["draws_used"] == len(pipeline.draws) > 10
    differing = [(i, s.decision, s.ecn, d, e) for i, (s, d, e)
                 in enumerate(zip(pipeline.steps, result["rtl_decisions"], result["rtl_ecn"]))
                 if d != s.decision or (d <= MARK and e != s.ecn)]
    assert not differing, f"{len(differing)} packets differ (packet, pipeline decision/ecn, RTL): {differing[:5]}"
    pass_, mark, early_drop, _ = result["decision_counts"]
    assert mark > 10 and early_drop > 10 and pass_ > 1000, result["decision_counts"]
    assert result["failed"] == 0


MUTANTS = {
    "pb_off_by_one_bit": ("wire [63:0] s5_pb = {32'd0, s5_offset} + (s5_product >> 16);",
                          "wire [63:0] s5_pb = {32'd0, s5_offset} + (s5_product >> 15);"),
    "not_ect_marked": ("wire s6_mark = s6_selected && s6_ecn_on && s6_ecn != 2'b00;",
                       "wire s6_mark = s6_selected && s6_ecn_on;"),
    "no_forwarding": ("s2_follows ? s3_avg : s2_avg_ram",
                      "s2_avg_ram"),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_broken_rtl_is_caught(tmp_path, mutant):
    """A copy of the RTL with one deliberate bug fails the comparison."""
    broken = tmp_path / "rtl"
    shutil.copytree(RTL, broken)
    core = broken / "red_core.v"
    original, replacement = MUTANTS[mutant]
    text = core.read_text()
    assert text.count(original) == 1, f"mutant {mutant} no longer applies to red_core.v"
    core.write_text(text.replace(original, replacement))
    phases = random_scenario(seed=7, ports=1 << PORT_BITS, phases=3, packets_per_phase=3_000)
    result = run_rtl(tmp_path, phases, ("lfsr", 99), rtl_dir=broken)
    assert result["failed"] == 1
    assert result["mismatches"] > 0
