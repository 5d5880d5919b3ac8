"""Does `--jobs 2` change what a low-rate study measures? The same 1.5 Mb/s
point (jobs_fidelity.toml: 6 repetitions, seeds 1..6) is run with --jobs 1 and
--jobs 2; for each metric, the per-seed difference (jobs 2 - jobs 1) and its
95 % interval. The runs agree when every interval includes zero. Writes
JOBS.md and jobs.json next to this file, with the load average of every run.

Take the quiet lock (/tmp/aqmlab-quiet) around it on a shared machine.
Usage: python mininet/bench/jobs.py [--repeat N]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from aqmlab import stats
from aqmlab.report import ALL, interval_text, load_study

HERE = Path(__file__).resolve().parent
STUDY = HERE / "jobs_fidelity.toml"
METRICS = [(ALL, "goodput_mbps"), (ALL, "utilisation"), (ALL, "drop_rate"), (ALL, "mark_rate"),
           (ALL, "queue_time_avg_pkts"), (ALL, "queue_delay_p50_ms"),
           ("ecn", "goodput_per_flow_mbps"), ("non-ecn", "goodput_per_flow_mbps"),
           ("ecn", "rtt_ms"), ("non-ecn", "retransmits_per_flow")]


def run_study(study_file, jobs, folder):
    started = time.time()
    subprocess.run([sys.executable, "-m", "aqmlab", "run", str(study_file), "--out", str(folder),
                    "--jobs", str(jobs), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    loaded = load_study(folder)
    loads = [r["load_average_at_end"][0] for r in loaded.results.values()]
    return loaded, {"jobs": jobs, "wall_s": time.time() - started,
                    "load_average_per_run": loads}


def compare(one, two):
    rows = []
    for workload, metric in METRICS:
        a, b = one.point_values(0, workload, metric), two.point_values(0, workload, metric)
        difference = stats.paired_difference(b, a)
        rows.append({"workload": workload, "metric": metric,
                     "jobs1": stats.estimate(a.values()), "jobs2": stats.estimate(b.values()),
                     "difference": difference, "agree": not difference.excludes_zero()})
    return rows


def write(rows, runs, repeat):
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# --jobs fidelity: the same 1.5 Mb/s point with --jobs 1 and --jobs 2", "",
        f"Measured {stamp} on {os.cpu_count()} vCPU, kernel {platform.release()} by "
        f"`python mininet/bench/jobs.py` (`jobs_fidelity.toml`, {repeat} repetitions of "
        f"30 s, seeds 1..{repeat}), holding the quiet lock.", ""]
    for run in runs:
        loads = ", ".join(f"{x:.2f}" for x in run["load_average_per_run"])
        lines.append(f"- --jobs {run['jobs']}: wall time {run['wall_s']:.0f} s; 1-min load "
                     f"average at the end of each run: {loads}")
    lines += ["", "Difference = jobs 2 - jobs 1 per seed, mean ± 95 % half-width (Student t).",
              "", "| workload | metric | --jobs 1 | --jobs 2 | difference "
              "| agree (CI includes 0) |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['metric']} | {interval_text(r['jobs1'])} | "
                     f"{interval_text(r['jobs2'])} | {interval_text(r['difference'])} | "
                     f"{'yes' if r['agree'] else 'NO'} |")
    agree = sum(r["agree"] for r in rows)
    lines += ["", f"{agree} of {len(rows)} metrics agree within their 95 % intervals "
              f"(with {len(rows)} independent metrics, ~{0.05 * len(rows):.1f} would disagree "
              "by chance alone)."]
    (HERE / "JOBS.md").write_text("\n".join(lines) + "\n")
    (HERE / "jobs.json").write_text(json.dumps({
        "measured": stamp, "runs": runs,
        "metrics": [{"workload": r["workload"], "metric": r["metric"],
                     **{k: r[k].as_dict() for k in ("jobs1", "jobs2", "difference")},
                     "agree": r["agree"]} for r in rows]}, indent=2))
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=6)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="aqmlab-jobs-"))
    study_file = tmp / "study.toml"
    study_file.write_text(STUDY.read_text().replace("repeat = 6", f"repeat = {args.repeat}"))
    one, run1 = run_study(study_file, 1, tmp / "jobs1")
    two, run2 = run_study(study_file, 2, tmp / "jobs2")
    write(compare(one, two), [run1, run2], args.repeat)
    print(f"\nstudies kept in {tmp}/jobs1 and {tmp}/jobs2 (`aqmlab compare` them)")


if __name__ == "__main__":
    main()
