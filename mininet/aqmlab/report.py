"""Results files: per-scenario CSVs, the summary table, PNG plots and report.md."""

import csv
import math
from pathlib import Path

import matplotlib

from aqmlab import metrics

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

TRANSFER_FIELDS = ("workload", "host", "flow", "kind", "transfer", "page", "object", "start",
                   "end", "delay", "bytes", "size", "complete")
SUMMARY_FIELDS = ("scenario", "workload", "flows", "goodput_mbps", "goodput_per_flow_mbps",
                  "jain_index", "delay_kind", "delay_median_s", "delay_p90_s",
                  "transactions_per_s", "network_power", "utilisation", "drop_rate",
                  "mark_rate", "queue_avg_mean")


def _write_csv(path, fields, rows):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_scenario_files(folder, result):
    """transfers.csv (every transfer), flows.csv (goodput per flow), queue.csv."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    epoch = result["epoch"]
    transfers = [{**r, "start": r["start"] - epoch, "end": r["end"] - epoch,
                  "delay": r["end"] - r["start"]} for r in result["records"] if "start" in r]
    _write_csv(folder / "transfers.csv", TRANSFER_FIELDS, transfers)
    _write_csv(folder / "flows.csv", ("flow", "goodput_bps"),
               [{"flow": f, "goodput_bps": g} for f, g in result["goodputs"].items()])
    _write_csv(folder / "queue.csv", ("t", "time_us", "qdepth", "avg", "decision"),
               result["samples"])


def summary_rows(results):
    rows = []
    for result in results:
        bottleneck = result["bottleneck"]
        for workload, s in result["workloads"].items():
            rows.append({
                "scenario": result["scenario"], "workload": workload, "flows": s["flows"],
                "goodput_mbps": s["goodput_bps"] / 1e6,
                "goodput_per_flow_mbps": s["goodput_per_flow_bps"] / 1e6,
                "jain_index": s["jain_index"], "delay_kind": s["delay_kind"] or "",
                "delay_median_s": s["delay_s"].get("median", math.nan),
                "delay_p90_s": s["delay_s"].get("p90", math.nan),
                "transactions_per_s": s["transactions_per_s"],
                "network_power": s["network_power"],
                "utilisation": bottleneck["utilisation"], "drop_rate": bottleneck["drop_rate"],
                "mark_rate": bottleneck["mark_rate"],
                "queue_avg_mean": result["queue"]["avg_mean"],
            })
    return rows


def write_summary_csv(path, results):
    _write_csv(path, SUMMARY_FIELDS, summary_rows(results))


def goodput_table(results):
    """The table `aqmlab run` prints: goodput per scenario and workload."""
    header = f"{'scenario':<16}{'workload':<14}{'flows':>6}{'goodput Mb/s':>14}" \
             f"{'per flow':>10}{'Jain':>7}{'util':>7}{'drops':>8}{'marks':>8}"
    lines = [header, "-" * len(header)]
    for row in summary_rows(results):
        lines.append(f"{row['scenario']:<16}{row['workload']:<14}{row['flows']:>6}"
                     f"{row['goodput_mbps']:>14.3f}{row['goodput_per_flow_mbps']:>10.3f}"
                     f"{row['jain_index']:>7.3f}{row['utilisation']:>7.1%}"
                     f"{row['drop_rate']:>8.2%}{row['mark_rate']:>8.2%}")
    return "\n".join(lines)


# ------------------------------------------------------------------- plots
def write_plots(outdir, experiment, results):
    plot_goodput(outdir / "goodput.png", results)
    for result in results:
        folder = outdir / "scenarios" / result["scenario"]
        scenario = next(s for s in experiment.scenarios if s.name == result["scenario"])
        plot_queue(folder / "queue.png", result, scenario.aqm)
        plot_flow_goodput(folder / "goodput_time.png", result)
    plot_delays(outdir / "delays.png", results)


def plot_goodput(path, results):
    rows = summary_rows(results)
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{r['scenario']}\n{r['workload']}" for r in rows]
    ax.bar(range(len(rows)), [r["goodput_per_flow_mbps"] for r in rows], color="tab:blue")
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel("goodput per flow (Mb/s)")
    ax.set_title("Goodput per flow by scenario and workload")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_queue(path, result, aqm):
    samples = result["samples"]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    if samples:
        ax.plot([s["t"] for s in samples], [s["qdepth"] for s in samples], lw=0.6,
                label="instantaneous queue", color="tab:gray")
        ax.plot([s["t"] for s in samples], [s["avg"] for s in samples], lw=1.2,
                label="RED average", color="tab:red")
    if aqm.mode == "red":
        for value, name in ((aqm.minth, "minth"), (aqm.maxth, "maxth")):
            ax.axhline(value, ls="--", lw=0.8, color="black")
            ax.annotate(name, (0, value), fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets")
    ax.set_title(f"Bottleneck queue — {result['scenario']}")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_flow_goodput(path, result):
    """Goodput over time of each unlimited bulk flow (from its 0.5 s samples)."""
    by_flow = {}
    for record in result["records"]:
        if record["kind"] == "sample":
            by_flow.setdefault(f"{record['workload']}/{record['flow']}", []).append(record)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for flow, samples in sorted(by_flow.items()):
        samples.sort(key=lambda r: r["t"])
        times = [s["t"] - result["epoch"] for s in samples]
        rates = [8 * (b["bytes"] - a["bytes"]) / (b["t"] - a["t"]) / 1e6
                 for a, b in zip(samples, samples[1:])]
        ax.plot(times[1:], rates, lw=0.8, label=flow)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title(f"Per-flow goodput — {result['scenario']}")
    if by_flow:
        ax.legend(fontsize=6, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_delays(path, results):
    """CDF of transfer/page delays per scenario and workload."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for result in results:
        for workload, s in result["workloads"].items():
            kind = s["delay_kind"]
            if not kind:
                continue
            delays = sorted(r["end"] - r["start"] for r in result["records"]
                            if r.get("workload") == workload and r["kind"] == kind
                            and r.get("complete"))
            if delays:
                ax.plot(delays, [(i + 1) / len(delays) for i in range(len(delays))],
                        label=f"{result['scenario']}/{workload} ({kind})")
    ax.set_xscale("log")
    ax.set_xlabel("delay (s)")
    ax.set_ylabel("CDF")
    ax.set_title("Transfer and page delays")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------------------ report
def write_report(outdir, experiment, parameters, results):
    lines = [f"# {experiment.name}", "", experiment.description or "", "",
             f"- duration {experiment.duration:g} s per scenario (warm-up {experiment.warmup:g} s "
             f"excluded), seed {experiment.seed}, target `{experiment.target}`"
             f"{', quick run' if parameters['quick'] else ''}",
             f"- versions: " + ", ".join(f"{k} {v}" for k, v in parameters["versions"].items()),
             "", "## Goodput", "", "```", goodput_table(results), "```", "",
             "![goodput](goodput.png)", "", "## Bottleneck", "",
             "| scenario | buffer (pkts) | total goodput (Mb/s) | Jain (all flows) | utilisation | "
             "arrivals | marks | RED drops | overflow drops | drop rate | mark rate | "
             "mean avg queue | max queue |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        b, q = result["bottleneck"], result["queue"]
        flows = list(result["goodputs"].values())
        lines.append(
            f"| {result['scenario']} | {result['bottleneck_buffer']} | {sum(flows) / 1e6:.3f} | "
            f"{metrics.jain_index(flows):.3f} | {b['utilisation']:.1%} | "
            f"{b['arrivals']} | {b['early_marks']} | {b['early_drops'] + b['forced_drops']} | "
            f"{b['overflow_drops']} | {b['drop_rate']:.2%} | {b['mark_rate']:.2%} | "
            f"{q['avg_mean']:.1f} | {q['qdepth_max']} |")
    lines += ["", "## Delays", "", "| scenario | workload | kind | n | median (s) | p90 (s) | "
              "p99 (s) | transactions/s | network power |", "|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        for workload, s in result["workloads"].items():
            d = s["delay_s"]
            lines.append(f"| {result['scenario']} | {workload} | {s['delay_kind'] or '-'} | "
                         f"{d.get('count', 0)} | {d.get('median', math.nan):.3f} | "
                         f"{d.get('p90', math.nan):.3f} | {d.get('p99', math.nan):.3f} | "
                         f"{s['transactions_per_s']:.2f} | {s['network_power']:.3g} |")
    lines += ["", "![delays](delays.png)", "", "## Per scenario", ""]
    for result in results:
        name = result["scenario"]
        lines += [f"### {name}", "", f"![queue](scenarios/{name}/queue.png)",
                  f"![goodput over time](scenarios/{name}/goodput_time.png)", "",
                  f"Files: `scenarios/{name}/transfers.csv`, `flows.csv`, `queue.csv`.", ""]
    lines += ["All parameters, versions and seeds: `parameters.json`; numbers: `summary.json`, "
              "`summary.csv`.", ""]
    (Path(outdir) / "report.md").write_text("\n".join(lines))
