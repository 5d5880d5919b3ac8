"""Does `--jobs N` change what a study measures? The same study (default
jobs_fidelity.toml: 1.5 Mb/s, 6 repetitions) is run with --jobs 1 and
--jobs N (the same seeds); for each point and metric, the per-seed
difference (jobs N - jobs 1) and its 95 % interval. The runs agree when
every interval includes zero. Adds the measurement to jobs.json (one entry
per study and N, replacing an earlier one) and rewrites JOBS.md from it,
with the load average of every run and the uptime before each study.

Take the quiet lock (/tmp/aqmlab-quiet) around it on a shared machine.
Usage: python mininet/bench/jobs.py [--study FILE] [--jobs N] [--repeat R]
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from aqmlab import stats, study
from aqmlab.config import load_experiment
from aqmlab.report import ALL, interval_text, load_study

HERE = Path(__file__).resolve().parent
STUDY = HERE / "jobs_fidelity.toml"
METRICS = [(ALL, "goodput_mbps"), (ALL, "utilisation"), (ALL, "drop_rate"), (ALL, "mark_rate"),
           (ALL, "queue_time_avg_pkts"), (ALL, "queue_delay_p50_ms"),
           ("ecn", "goodput_per_flow_mbps"), ("non-ecn", "goodput_per_flow_mbps"),
           ("ecn", "rtt_ms"), ("non-ecn", "retransmits_per_flow"),
           # the web studies' (RFC 2415's workloads); a study without them skips them
           ("web", "delay_median_s"), ("ftp", "goodput_per_flow_mbps")]


def run_study(study_file, jobs, folder):
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.time()
    subprocess.run([sys.executable, "-m", "aqmlab", "run", str(study_file), "--out", str(folder),
                    "--jobs", str(jobs), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    loaded = load_study(folder)
    results = [loaded.results[r.run_id] for r in loaded.runs if r.run_id in loaded.results]
    return loaded, {"jobs": jobs, "wall_s": time.time() - started, "uptime_before": uptime,
                    "load_average_per_run": [r["load_average_at_end"][0] for r in results],
                    "late_over_1ms_pct_per_run": [late_share(r) for r in results]}


def late_share(result):
    """% of the bottleneck switch's frames sent over 1 ms late in one run
    (aqmlab/fidelity.py's RTT-scale measure), None when not recorded."""
    timing = result.get("bottleneck", {}).get("switch_timing") or {}
    if not timing.get("frames"):
        return None
    return round(100 * timing["late_over_1ms"] / timing["frames"], 2)


def compare(one, other):
    rows = []
    for point, scenario in enumerate(one.experiment.scenarios):
        for workload, metric in METRICS:
            a = one.point_values(point, workload, metric)
            b = other.point_values(point, workload, metric)
            if not a:
                continue
            difference = stats.paired_difference(b, a)
            rows.append({"point": scenario.name, "workload": workload, "metric": metric,
                         "jobs1": stats.estimate(a.values()).as_dict(),
                         "jobsN": stats.estimate(b.values()).as_dict(),
                         "difference": difference.as_dict(),
                         "agree": not difference.excludes_zero()})
    return rows


def measurement_lines(m):
    n = m["jobs"]
    lines = [f"## {m['study']} ({m['rate_bps'] / 1e6:g} Mb/s): --jobs 1 vs --jobs {n}", "",
             f"Measured {m['measured']} on {m['cpus']} vCPU, kernel {m['kernel']} by "
             f"`{m['command']}` ({m['repeat']} repetitions of {m['duration_s']:g} s per point, "
             f"seeds {m['seeds']}), holding the quiet lock.", ""]
    for run in m["runs"]:
        loads = ", ".join(f"{x:.2f}" for x in run["load_average_per_run"])
        before = f"; before: `{run['uptime_before']}`" if run.get("uptime_before") else ""
        late = ", ".join("-" if x is None else f"{x:g}" for x in run.get("late_over_1ms_pct_per_run", []))
        late = f"; % of the switch's frames over 1 ms late per run: {late}" if late else ""
        lines.append(f"- --jobs {run['jobs']}: wall time {run['wall_s']:.0f} s; 1-min load "
                     f"average at the end of each run: {loads}{before}{late}")
    lines += ["", f"Difference = jobs {n} - jobs 1 per seed, mean ± 95 % half-width "
              "(Student t).", "",
              f"| point | workload | metric | --jobs 1 | --jobs {n} | difference "
              "| agree (CI includes 0) |", "|---|---|---|---|---|---|---|"]
    for r in m["metrics"]:
        lines.append(f"| {r['point']} | {r['workload']} | {r['metric']} | "
                     f"{interval_text(r['jobs1'])} | {interval_text(r['jobsN'])} | "
                     f"{interval_text(r['difference'])} | {'yes' if r['agree'] else 'NO'} |")
    agree = sum(r["agree"] for r in m["metrics"])
    total = len(m["metrics"])
    return lines + ["", f"{agree} of {total} metrics agree within their 95 % intervals (with "
                    f"{total} independent metrics, ~{0.05 * total:.1f} would disagree by "
                    "chance alone).", ""]


def rule_lines():
    rule = "; ".join(f"up to {per_core} run{'s' if per_core > 1 else ''} per core when the "
                     f"fastest bottleneck is at most {rate / 1e6:g} Mb/s and a run has at most "
                     f"{hosts} hosts" for rate, hosts, per_core in study.JOBS_RULE)
    return ["# --jobs fidelity: the same study with --jobs 1 and --jobs N", "",
            f"The rule (`study.JOBS_RULE`; `aqmlab run` and `aqmlab validate` warn when "
            f"--jobs exceeds it, `aqmlab study` lowers each stage's --jobs to it): {rule}; "
            "otherwise --jobs 1. It rests on the measurements below, on a 2-core machine: "
            "with N runs side by side, every metric of every point agrees with --jobs 1 (same "
            "seeds) within its 95 % interval, at 1.5 Mb/s with 8 hosts up to N = 4 (the "
            "largest N measured), at 1.5 Mb/s with 24 hosts with N = 4 and 70 hosts with N = 2, "
            "and at 10 Mb/s "
            "(`make run`'s study, 8 hosts) with N = 2.", "",
            "With more hosts per run the bottleneck switch's timing sets the limit first "
            "(aqmlab/fidelity.py, RTT scale: at most 5 % of its frames over 1 ms late). "
            "Measured 2026-11-28 with RFC 2415's drop-tail thread runs (16 webs and 4 FTPs, "
            "40 hosts, 130 s; a compiler test suite at nice 19 beside them): 4 side by side "
            "left 6.4-6.6 % of R1's frames over 1 ms late, 2 side by side 3.5-3.7 %; its "
            "HTTP/1.0 runs with 32 webs and 3 FTPs (70 hosts) 5.3-6.0 % at 2 side by side. "
            "(Before the switch stopped spinning on links slower than 12 Mb/s the 40-host "
            "runs had 14 % at 4.) On the quiet machine (2026-11-29, nothing else running, "
            "below): RFC 2884's high congestion (24 hosts) left 1.1-2.2 % at 4 side by side "
            "(0.2-4.8 % one at a time), every metric agreeing, so up to 24 hosts run 2 per "
            "core; RFC 2415's thread point with 8 FTPs (48 hosts) 0.9-8.4 % at 4, 3 of 6 runs "
            "above 5 %.", "",
            "Since 2026-11-29 the labs run the switch's packet thread in SCHED_FIFO "
            "(`softswitch --realtime 10`) behind bottlenecks up to 10 Mb/s, so it no longer waits behind the hosts: the same "
            "48-host measurement left 0-0.03 % of R1's frames over 1 ms late at 4 side by "
            "side and 0-0.15 % one at a time (below). The hosts then set the limit: total "
            "goodput at 4 side by side was 2 % below --jobs 1's (-0.033 ± 0.030 Mb/s, the one "
            "metric outside its interval; -0.029 ± 0.045 without the realtime switch), so 48 "
            "hosts stay at 1 per core. RFC 2415's HTTP/1.0 point with 32 webs and 3 FTPs (70 "
            "hosts) at 2 side by side: 0.01-0.63 % late (5.3-6.0 % before), every metric "
            "agreeing, so up to 70 hosts run 1 per core.", ""]


def write(measurements):
    (HERE / "jobs.json").write_text(json.dumps(measurements, indent=2) + "\n")
    lines = rule_lines()
    for m in measurements:
        lines += measurement_lines(m)
    (HERE / "JOBS.md").write_text("\n".join(lines))


def study_copy(path, repeat, folder):
    """The study file, with `repeat = R` when given."""
    text = Path(path).read_text()
    if repeat:
        text, found = re.subn(r"(?m)^repeat = \d+", f"repeat = {repeat}", text)
        if not found:
            raise SystemExit(f"{path}: no `repeat = N` line to set --repeat in")
    copy = folder / Path(path).name
    copy.write_text(text)
    return copy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", default=str(STUDY))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, help="repetitions per point (default: the file's)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="aqmlab-jobs-"))
    study_file = study_copy(args.study, args.repeat, tmp)
    experiment = load_experiment(study_file)
    one, run1 = run_study(study_file, 1, tmp / "jobs1")
    other, run_n = run_study(study_file, args.jobs, tmp / f"jobs{args.jobs}")
    command = "python mininet/bench/jobs.py" + "".join(
        f" --{k} {v}" for k, v in (("study", os.path.relpath(args.study, HERE.parent.parent)),
                                   ("jobs", args.jobs), ("repeat", args.repeat)) if v)
    measurement = {
        "study": experiment.name, "jobs": args.jobs, "command": command,
        "rate_bps": max(s.topology.bottleneck.rate_bps for s in experiment.scenarios),
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(), "kernel": platform.release(), "repeat": experiment.repeat,
        "duration_s": experiment.duration,
        "seeds": f"{experiment.seed}..{experiment.seed + experiment.repeat - 1}",
        "runs": [run1, run_n], "metrics": compare(one, other)}
    path = HERE / "jobs.json"
    earlier = json.loads(path.read_text()) if path.exists() else []
    write([m for m in earlier if (m["study"], m["jobs"]) != (experiment.name, args.jobs)]
          + [measurement])
    print("\n".join(measurement_lines(measurement)))
    print(f"studies kept in {tmp}/jobs1 and {tmp}/jobs{args.jobs} (`aqmlab compare` them)")


if __name__ == "__main__":
    main()
