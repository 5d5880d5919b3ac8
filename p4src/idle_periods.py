"""RED's average across the empty-queue periods of a lab run, against classic RED.

    .venv/bin/python p4src/idle_periods.py RESULTS/scenarios/base/queue.csv [--rate 1.5e6]

Reads the bottleneck telemetry of an `aqmlab run` (one row per sampled
packet: enq_timestamp `time_us`, `qdepth`, RED `avg`) and prints, for every
period of at least 0.15 s in which arriving packets found the queue empty,
the average before and after it and what classic RED predicts: the average
is multiplied by (1 - wq)^m per idle gap, m = (gap - s) / s with s the
transmission time of a 1500-byte packet, and by (1 - wq) per arriving packet
(q = 0). The period starts when the last queued packet left (its enqueue time
plus its queue drained at line rate). Also prints the time classic RED needs
to bring the average below minth, and the time-weighted mean queue and
average. Used for p4src/RESULTS.md.
"""
from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

MIN_PERIOD_S = 0.15


def load(path: Path) -> list[tuple[int, int, float]]:
    with open(path) as f:
        return [(int(r["time_us"]), int(r["qdepth"]), float(r["avg"])) for r in csv.DictReader(f)]


def empty_periods(rows, s_us: float):
    """(start_us, row index of the first and one past the last empty-queue sample)."""
    i = 1
    while i < len(rows):
        if rows[i][1] != 0:
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j][1] == 0:
            j += 1
        yield rows[i - 1][0] + rows[i - 1][1] * s_us, i, j
        i = j


def classic_red(avg: float, start_us: float, times_us, s_us: float, wq: float) -> float:
    last = start_us
    for t in times_us:
        avg *= (1 - wq) ** (max(0.0, t - last - s_us) / s_us) * (1 - wq)
        last = t
    return avg


def time_weighted_means(rows) -> tuple[float, float]:
    """Mean queue and mean average over time (each sample holds until the next)."""
    span = rows[-1][0] - rows[0][0]
    q = sum(a[1] * (b[0] - a[0]) for a, b in zip(rows, rows[1:])) / span
    avg = sum(a[2] * (b[0] - a[0]) for a, b in zip(rows, rows[1:])) / span
    return q, avg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queue_csv", type=Path)
    ap.add_argument("--rate", type=float, default=1.5e6, help="bottleneck rate, b/s")
    ap.add_argument("--wq-log", type=int, default=9)
    ap.add_argument("--minth", type=float, default=5)
    args = ap.parse_args()
    rows = load(args.queue_csv)
    s_us, wq = 1500 * 8 / args.rate * 1e6, 2.0 ** -args.wq_log
    for start, i, j in empty_periods(rows, s_us):
        before, after = rows[i - 1][2], rows[j - 1][2]
        length = (rows[j - 1][0] - start) / 1e6
        if length < MIN_PERIOD_S or before <= 0:
            continue
        predicted = classic_red(before, start, [r[0] for r in rows[i:j]], s_us, wq)
        to_minth = max(0.0, (math.log(args.minth / before) / math.log(1 - wq) + 1) * s_us / 1e6)
        print(f"empty from {start / 1e6:7.3f} s for {length:5.2f} s ({j - i:2d} packets): "
              f"avg {before:5.2f} -> {after:5.2f}, classic RED {predicted:5.2f} "
              f"({(after / predicted - 1) * 100:+.1f} %); classic RED below minth after {to_minth:.2f} s")
    q, avg = time_weighted_means(rows)
    print(f"time-weighted mean: queue {q:.1f} packets, RED average {avg:.1f} packets")


if __name__ == "__main__":
    main()
