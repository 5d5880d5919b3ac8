"""Was a run's timing faithful? The bottleneck switch (R1) accounts for how
late it sent each frame against its due time (`switch_timing` in
result.json); a loaded machine shows there first. Two time scales:

- packet scale (what burst absorption in the buffer sees): late on average by
  at most one frame time at the bottleneck rate, at most 1 % of frames more
  than 1 ms late;
- RTT scale (what TCP's windows, synchronisation and utilisation see): late on
  average by at most 1 % of the base RTT, at most 5 % of frames more than
  1 ms late.

Both also need R1's process below 0.9 of a core and, for P2P transfers with a
BDP buffer, the link at least 90 % busy. `aqmlab run --resume --redo-unfaithful
rtt` runs again the complete runs that miss a scale; reports list them.
"""

import json
import math
import tomllib
from pathlib import Path

from aqmlab import study
from aqmlab.config import parse_experiment

LEVELS = ("packet", "rtt")
FAITHFUL = {"packet": {"late_over_1ms": 0.01}, "rtt": {"late_over_1ms": 0.05},
            "cpu_share": 0.9, "p2p_utilisation": 0.9, "rtt_fraction": 0.01}
FRAME_BITS = 1514 * 8


def run_timing(result, base_rtt_s):
    """({late_us_mean, late_us_max, late_over_1ms (fraction), cpu_share,
    utilisation}, {"packet": ok, "rtt": ok}) of one run's result.json. A run
    without the switch's timing line (an older engine) counts as not faithful."""
    timing = result["bottleneck"].get("switch_timing") or {}
    values = {"late_us_mean": timing.get("late_us_mean", math.nan),
              "late_us_max": timing.get("late_us_max", math.nan),
              "late_over_1ms": (timing["late_over_1ms"] / timing["frames"]
                                if timing.get("frames") else math.nan),
              "cpu_share": timing.get("cpu_share") or math.nan,
              "utilisation": result["bottleneck"]["utilisation"]}
    common = values["cpu_share"] <= FAITHFUL["cpu_share"] and (
        "p2p" not in result["workloads"] or values["utilisation"] >= FAITHFUL["p2p_utilisation"])
    mean_limit = {"packet": 1e6 * FRAME_BITS / result["bottleneck_rate_bps"],
                  "rtt": 1e6 * FAITHFUL["rtt_fraction"] * base_rtt_s}
    return values, {level: common and values["late_us_mean"] <= mean_limit[level]
                    and values["late_over_1ms"] <= FAITHFUL[level]["late_over_1ms"]
                    for level in LEVELS}


def timings(folder, runs):
    """{run_id: (values, ok)} of the complete runs among `runs` (study.Run)
    whose result has the switch's timing record."""
    found = {}
    for run in runs:
        path = Path(folder) / run.run_id
        if study.run_state(path) != study.COMPLETE:
            continue
        result = json.loads((path / "result.json").read_text())
        if result.get("bottleneck", {}).get("switch_timing"):
            found[run.run_id] = run_timing(result, run.scenario.topology.base_rtt_s)
    return found


def unfaithful(folder, runs, level):
    """{run_id: values} of the complete runs whose timing misses `level`."""
    return {run_id: values for run_id, (values, ok) in timings(folder, runs).items()
            if not ok[level]}


def unfaithful_in(folder, level):
    """The run ids of a study folder (its own experiment) whose timing misses `level`."""
    if not any(Path(folder).glob(f"*/{study.COMPLETE}")):
        return set()
    text, quick = study.study_source(folder)
    experiment = parse_experiment(tomllib.loads(text))
    runs = study.expand(experiment.for_quick() if quick else experiment)
    return set(unfaithful(folder, runs, level))


def report_lines(folder, runs):
    """The report's "Timing fidelity" section (empty when no run has a timing record)."""
    timed = timings(folder, runs)
    if not timed:
        return []
    missed = {level: {r: v for r, (v, ok) in timed.items() if not ok[level]} for level in LEVELS}
    lines = ["", "## Timing fidelity", "",
             f"From R1's own account of how late it sent each frame (aqmlab/fidelity.py): "
             f"{len(timed) - len(missed['rtt'])} of {len(timed)} runs with a timing record "
             f"faithful at the RTT scale, {len(timed) - len(missed['packet'])} at the packet "
             "scale."]
    if missed["rtt"]:
        lines += ["", "Not faithful at the RTT scale (`aqmlab run FILE --out DIR --resume "
                  "--redo-unfaithful rtt` runs them again):", "",
                  "| run | late mean (us) | late max (us) | > 1 ms late | R1 CPU |",
                  "|---|---|---|---|---|"]
        for run_id, v in sorted(missed["rtt"].items()):
            lines.append(f"| {run_id} | {v['late_us_mean']:.0f} | {v['late_us_max']:.0f} | "
                         f"{100 * v['late_over_1ms']:.2f} % | {v['cpu_share']:.2f} |")
    return lines
