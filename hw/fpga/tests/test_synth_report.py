"""hw/fpga/synth/run.py reads Yosys' and nextpnr's reports into RESULTS.md:
the block's cells only (not the harness), both Yosys stat formats, nextpnr's
final Fmax or why there is none, and the Gowin DSP-timing conclusion only
when the probe shows it. No tools are run here."""
import importlib.util
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "synth" / "run.py"
spec = importlib.util.spec_from_file_location("fpga_synth_run", RUN)
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

STAT_023 = """
=== $paramod\\red_core\\PORT_BITS=3 ===
   Number of cells:               10
     LUT4                          7
     MULT18X18D                    3

=== fmax_harness ===
     LUT4                        400
     TRELLIS_FF                  300
     $paramod\\red_core\\PORT_BITS=3      1
"""
STAT_070 = """
=== red_ecn_marker ===

        +----------Local Count, excluding submodules.
        |
       40 wires
      200 wire bits
       21 ports
        5 cells
        4   TRELLIS_FF
        1   red_core
"""


def test_cell_counts_take_the_block_modules_in_both_stat_formats():
    assert run.cell_counts(STAT_023) == {"LUT4": 7, "MULT18X18D": 3}
    assert run.cell_counts(STAT_070) == {"TRELLIS_FF": 4}


def test_pnr_result_takes_the_final_fmax_or_the_failure():
    routed = ("Info: Max frequency for clock 'clk': 29.34 MHz (PASS at 10.00 MHz)\n"
              "Info: Max frequency for clock 'clk': 32.47 MHz (PASS at 10.00 MHz)\n")
    assert run.pnr_result(routed) == {"fmax_mhz": 32.47}
    full = "ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'SB_MAC16'\n"
    assert run.pnr_result(full) == {"pnr_error": "does not fit: out of SB_MAC16"}
    assert run.pnr_result("Info: nothing\n") == {"pnr_error": "nextpnr gave no Fmax"}


def probe(name: str, fmax: float) -> dict:
    return {"name": name, "probe": "gowin_dsp_probe", "LUT": 1, "FF": 1, "DSP": 0, "fmax_mhz": fmax}


def test_gowin_conclusion_only_when_the_probe_shows_untimed_dsps():
    untimed = "\n".join(run.probe_table([probe("gowin-dsp-probe", 375.1),
                                         probe("gowin-dsp-probe-nodsp", 72.2)]))
    assert "No: the multiply through the MULT36X36" in untimed and "375 MHz" in untimed
    timed = "\n".join(run.probe_table([probe("gowin-dsp-probe", 120.0),
                                       probe("gowin-dsp-probe-nodsp", 72.2)]))
    assert "No:" not in timed


def block(name: str, dsp: int, fmax: float) -> dict:
    return {"name": name, "ports": 8, "pb_bits": 64, "LUT": 1, "LUTRAM": 0, "FF": 1, "BRAM": 32,
            "DSP": dsp, "fmax_mhz": fmax}


def test_gowin_fmax_with_untimed_dsps_is_shown_as_a_bound():
    rows = "\n".join(run.family_table("Gowin", [block("gowin-gw2a18", 16, 99.9),
                                                block("gowin-gw2a18-nodsp", 0, 40.0)]))
    assert "| ≤ 99.9 | ≤ 99.9 |" in rows and "| 40.0 | 40.0 |" in rows
    assert "| 32.5 | 32.5 |" in "\n".join(run.family_table("ECP5", [block("ecp5-25k", 17, 32.5)]))
