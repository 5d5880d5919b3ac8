"""RED's idle decay in the lab, against classic RED: runs
`aqmlab run mininet/experiments/rfc2884_crr.toml --quick` (the issue 17
lock-out case) and `aqmlab run mininet/bench/idle_decay.toml` (bursts, then
seconds of empty queue with sparse arrivals) and prints, per run, the load
average before it, utilisation and drop rate, and report.idle_decay_table:
every empty-queue period, the average at its end against classic RED's
(1 - wq)^m, and when the average fell below minth against when classic RED
says it does (p4src/RESULTS.md).

Take the quiet lock (/tmp/aqmlab-quiet) around it on a shared machine.
Usage: python mininet/bench/idle_decay.py [--out DIR]
       python mininet/bench/idle_decay.py --runs RUN_FOLDER...  (tables of runs made before)
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from aqmlab.report import idle_decay_table

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = (("rfc2884-crr", ["mininet/experiments/rfc2884_crr.toml", "--quick"]),
        ("idle-decay", ["mininet/bench/idle_decay.toml"]))


def run(name, arguments, out):
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    command = ["aqmlab", "run", *arguments, "--out", str(out / name)]
    subprocess.run([sys.executable, "-m", "aqmlab", *command[1:], "--no-progress"], cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL)
    folder = out / name / "p00-r0"
    bottleneck = json.loads((folder / "result.json").read_text())["bottleneck"]
    periods = idle_decay_table(folder)
    return [f"`{' '.join(command[:-2])}` (before it: `{uptime}`): utilisation "
            f"{bottleneck['utilisation']:.1%}, drop rate {bottleneck['drop_rate']:.1%} "
            f"({bottleneck['early_drops']} early / {bottleneck['forced_drops']} forced / "
            f"{bottleneck['overflow_drops']} overflow), {len(periods) - 2} empty-queue "
            "periods of at least 0.1 s:", "", *periods, ""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="where the runs go (default: a new temp dir)")
    parser.add_argument("--runs", type=Path, nargs="+", metavar="RUN_FOLDER",
                        help="print the tables of these run folders (pNN-rR) instead of running")
    args = parser.parse_args(argv)
    if args.runs:
        for folder in args.runs:
            print("\n".join([f"{folder}:", "", *idle_decay_table(folder), ""]))
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="aqmlab-idle-"))
    for name, arguments in RUNS:
        print("\n".join(run(name, arguments, out)))
    print(f"runs kept in {out}")


if __name__ == "__main__":
    main()
