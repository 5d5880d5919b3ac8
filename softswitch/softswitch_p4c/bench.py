"""Compile-time benchmark: `python -m softswitch_p4c.bench` times the `softswitch-p4c`
command (wall clock, median of 5 runs, a fresh process each) on p4src/ and the test
corpus and writes the table to softswitch/softswitch_p4c/BENCHMARK.md.
Budget (issue 2): under 2 s per program for `make build`."""
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RUNS = 5


def programs():
    return sorted(glob.glob(os.path.join(ROOT, "p4src", "*.p4"))) + \
        sorted(glob.glob(os.path.join(ROOT, "softswitch", "tests", "corpus", "positive", "*.p4")))


def time_compile(path, outdir):
    cmd = [sys.executable, "-m", "softswitch_p4c.cli", path, "-o", outdir,
           "--p4runtime-files", os.path.join(outdir, "p.txtpb")]
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), max(samples)


def main():
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for p in programs():
            med, worst = time_compile(p, out)
            lines = sum(1 for _ in open(p))
            rows.append((os.path.relpath(p, ROOT), lines, med, worst))
    report = ["# softswitch-p4c compile time", "",
              f"`python -m softswitch_p4c.bench` ({time.strftime('%Y-%m-%d')}, "
              f"{os.cpu_count()} CPUs, shared machine): wall clock of the whole command "
              f"(Python start-up, cpp, parse, lowering, P4Info), median and worst of {RUNS} runs.",
              "", "| program | lines | median s | worst s |", "|---|---:|---:|---:|"]
    report += [f"| {p} | {n} | {m:.3f} | {w:.3f} |" for p, n, m, w in rows]
    worst = max(r[3] for r in rows)
    report += ["", f"Slowest run: {worst:.3f} s (budget 2 s per program)."]
    with open(os.path.join(HERE, "BENCHMARK.md"), "w") as f:
        f.write("\n".join(report) + "\n")
    print("\n".join(report))
    return 0 if worst < 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
