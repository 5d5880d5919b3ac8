"""RFC 889 (D. L. Mills, Internet Delay Experiments, 1983) reproduced in one command.

    aqmlab study rfc889 --out DIR [--parts calibration,paths] [aqmlab run options]
    aqmlab study rfc889 --out DIR --quick      # the CI variant (~1 min): the calibration check
    aqmlab study rfc889 --out DIR --report-only [--report FILE.md]

Every part is an experiment file of experiments/rfc889/ whose scenarios are
modelled paths: a line of the RFC's rate and propagation delay in the
softswitch's traffic manager, with (paths.toml) per-direction jitter, delay
glitches, loss and bulk TCP cross traffic through R1's RED queue. An `echo`
workload is the RFC's PING: ICMP echoes with lengths uniform in 40..256 IP
octets, one in flight. Each part runs with `aqmlab run FILE --out DIR/<part>
--resume` (common.py), so the study resumes where it stopped.

The analysis follows the RFC: delays normalised to one way (round trip / 2);
section 2: a least-squares line of delay on length per path (scipy's
linregress; split at 126 octets into single- and multi-packet messages where
the RFC split its ARPANET paths), delay at 40, 125 and 256 octets and the
rate implied by the slope; section 3: the retransmission-timeout estimators
(E <- F E + (1 - F) R with timeout G E; Mills' asymmetric F1/F2; RFC 6298)
simulated on each path's series of volleys. The calibration part checks the
link emulation: fitted rate = configured rate within 2 %, intercept =
propagation + the lab's processing delay within 0.2 ms.
"""

import csv
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats
from softswitch_server.tm import parse_loss

from aqmlab import study
from aqmlab.report import load_study
from aqmlab.reproductions.common import (Reproduction, load_lines, measured_lines,
                                         parts_present, plan_lines, read_wall, run_study,
                                         save_report)

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

NAME = "rfc889"
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments" / "rfc889"
PUBLISHED = EXPERIMENTS / "published.json"
PARTS = ("calibration", "paths")
QUICK = "quick"
ETHERNET_HEADER = 14          # octets on the wire besides the IP datagram (veth: no FCS)
LAB_PATH = "lab"              # the calibration scenario that measures the lab's processing delay
SPLIT = 126                   # RFC 889: single-packet messages are shorter than 126 octets
RATE_TOLERANCE = 0.02
INTERCEPT_TOLERANCE_S = 0.2e-3
LENGTHS = (40, 125, 256)


# ---------------------------------------------------------------- volleys

@dataclass(frozen=True)
class Volley:
    sent: float               # s after the run's epoch
    length: int               # IP octets
    rtt: float                # s; nan = lost (no reply within the timeout)

    @property
    def lost(self):
        return math.isnan(self.rtt)


def read_volleys(folder):
    """A run's echo volleys in the order sent (transfers.csv, kind echo)."""
    path = Path(folder) / "transfers.csv"
    with path.open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["kind"] == "echo"]
    volleys = [Volley(float(r["start"]), int(r["bytes"]),
                      float(r["delay"]) if r["complete"] == "True" else math.nan) for r in rows]
    return sorted(volleys, key=lambda v: v.sent)


# ---------------------------------------------------------------- delay vs length

@dataclass(frozen=True)
class Fit:
    """One-way delay (s) = intercept + slope x frame octets."""
    slope: float
    intercept: float
    n: int
    rate_half: float = math.nan   # least squares: half-width of the rate's 95 % interval

    @property
    def rate_bps(self):
        return 8 / self.slope if self.slope > 0 else math.nan

    def delay_at(self, ip_octets):
        return self.intercept + self.slope * (ip_octets + ETHERNET_HEADER)


def answered_points(volleys, shortest=0, longest=10**6):
    """(frame octets, one-way delay = round trip / 2 as the RFC) of the answered
    volleys with lengths in [shortest, longest]; None if no line fits them."""
    chosen = [v for v in volleys if not v.lost and shortest <= v.length <= longest]
    if len(chosen) < 3 or len({v.length for v in chosen}) < 2:
        return None
    return (np.array([v.length + ETHERNET_HEADER for v in chosen], dtype=float),
            np.array([v.rtt / 2 for v in chosen]))


def fit_delay(volleys, shortest=0, longest=10**6):
    """The RFC's least-squares line of delay on length (scipy's linregress)."""
    points = answered_points(volleys, shortest, longest)
    if points is None:
        return None
    line = scipy_stats.linregress(*points)
    t = scipy_stats.t.ppf(0.975, len(points[0]) - 2)
    slope_half = t * line.stderr
    rate_half = (8 / (line.slope - slope_half) - 8 / (line.slope + slope_half)) / 2 \
        if line.slope > slope_half else math.inf
    return Fit(line.slope, line.intercept, len(points[0]), rate_half)


def fit_robust(volleys):
    """Siegel's repeated-medians line (scipy's siegelslopes; 50 % breakdown):
    the calibration's fit, so that the few volleys a busy host delays by
    milliseconds (descheduled agent or switch) do not move the emulation's
    line, as they move the least-squares one."""
    points = answered_points(volleys)
    if points is None:
        return None
    line = scipy_stats.siegelslopes(points[1], points[0])
    return Fit(line.slope, line.intercept, len(points[0]))


def configured_path(scenario):
    """(rate the slope should give, one-way propagation) of a scenario's path:
    a frame is serialised at the line rate in both directions and at the
    server's and client's access rates once each (their switch ports)."""
    topology = scenario.topology
    slope = 8 / topology.bottleneck.rate_bps + 4 / topology.server_access.rate_bps + \
        4 / topology.client_access.rate_bps
    return 8 / slope, topology.base_rtt_s / 2


@dataclass(frozen=True)
class Calibration:
    path: str
    rate_bps: float           # configured (the path's serialisation, as a rate)
    propagation: float        # configured, one way
    fit: Fit                  # robust (fit_robust)
    processing: float         # the lab's, one way, from the LAB_PATH scenario
    least_squares: Fit = None

    @property
    def rate_error(self):
        return self.fit.rate_bps / self.rate_bps - 1

    @property
    def intercept_error(self):
        return self.fit.intercept - (self.propagation + self.processing)

    @property
    def ok(self):
        return abs(self.rate_error) <= RATE_TOLERANCE and \
            abs(self.intercept_error) <= INTERCEPT_TOLERANCE_S


def calibrate(part):
    """Calibration rows of a part: every path against its configuration, the
    processing delay being the LAB_PATH's intercept less its propagation
    -> (processing, [Calibration]) or (None, []) without a LAB_PATH run."""
    fits = {name: (scenario, fit_robust(read_volleys(folder)), folder)
            for name, scenario, folder in part_runs(part)}
    if LAB_PATH not in fits or fits[LAB_PATH][1] is None:
        return None, []
    scenario, fit, _ = fits.pop(LAB_PATH)
    processing = fit.intercept - configured_path(scenario)[1]
    rows = [Calibration(name, *configured_path(scenario), fit, processing,
                        fit_delay(read_volleys(folder)))
            for name, (scenario, fit, folder) in fits.items() if fit is not None]
    return processing, rows


@dataclass(frozen=True)
class Part:
    """A part's study folder (report.load_study), as common.py's helpers take it."""
    loaded: object


def part_runs(part):
    """(path name, scenario, run folder) of a part's complete runs."""
    loaded = part.loaded
    return [(run.scenario.name, run.scenario, loaded.folder / run.run_id) for run in loaded.runs
            if run.run_id in loaded.results]


# ---------------------------------------------------------------- timeout estimators

@dataclass(frozen=True)
class Estimator:
    """A retransmission-timeout estimator: state from the first sample, the
    next state from a sample, and the timeout a state gives."""
    name: str
    first: object             # R -> state
    update: object            # (state, R) -> state
    timeout: object           # state -> seconds


def rsre(f=7 / 8, g=2.0):
    """RFC 793 / RFC 889: E <- F E + (1 - F) R, timeout G E."""
    return Estimator(f"RFC 793 (F = {f:g}, G = {g:g})", lambda r: r,
                     lambda e, r: f * e + (1 - f) * r, lambda e: g * e)


def mills(f1=15 / 16, f2=3 / 4, g=2.0):
    """RFC 889 section 3.3: F1 when R < E (slow to fall), F2 when R >= E (quick to rise)."""
    def update(e, r):
        f = f1 if r < e else f2
        return f * e + (1 - f) * r
    return Estimator(f"Mills (F1 = 15/16, F2 = 3/4, G = {g:g})", lambda r: r, update,
                     lambda e: g * e)


def rfc6298(alpha=1 / 8, beta=1 / 4, k=4, min_rto=1.0):
    """RFC 6298 (Jacobson/Karels): SRTT, RTTVAR; RTO = SRTT + K RTTVAR, at least 1 s."""
    def update(state, r):
        srtt, rttvar = state
        rttvar = (1 - beta) * rttvar + beta * abs(srtt - r)
        return (1 - alpha) * srtt + alpha * r, rttvar
    return Estimator("RFC 6298 (min RTO 1 s)", lambda r: (r, r / 2), update,
                     lambda s: max(min_rto, s[0] + k * s[1]))


ESTIMATORS = (rsre(), mills(), rfc6298())
INITIAL_RTO = 1.0             # RFC 6298 2.1: the timeout before any sample
MAX_RTO = 60.0                # RFC 6298 2.5: a maximum may be placed, at least 60 s


@dataclass(frozen=True)
class TimeoutRun:
    """The RFC's table columns (times normalised to one way, as the RFC):
    Total = sum of the answered volleys' delays; Lost: volleys never answered
    and the time waited for their timeouts; RTX: answered volleys whose delay
    exceeded the timeout (a superfluous retransmission) and the time by which
    it did; Mean and CoV of the answered delays; Efficiency = Total / (Total +
    Lost time + RTX time)."""
    total: float
    lost: int
    lost_time: float
    rtx: int
    rtx_time: float
    mean: float
    cov: float
    timeouts: tuple = field(default=(), repr=False)

    @property
    def volleys(self):
        return len(self.timeouts)   # the timeout each volley was judged by

    @property
    def efficiency(self):
        spent = self.total + self.lost_time + self.rtx_time
        return self.total / spent if spent > 0 else math.nan


def simulate(volleys, estimator):
    """Run an estimator over a path's volleys in order: each volley is judged
    against the timeout of the state before it; a lost volley waits out its
    timeout, doubling on consecutive losses (RFC 6298 5.5) and is no sample
    (Karn); the first answered volley only starts the estimator."""
    state, backoff = None, 1
    lost = rtx = 0
    lost_time = rtx_time = 0.0
    timeouts = []
    for volley in volleys:
        timeout = min(MAX_RTO, backoff * (INITIAL_RTO if state is None
                                          else estimator.timeout(state)))
        timeouts.append(timeout)
        if volley.lost:
            lost, lost_time, backoff = lost + 1, lost_time + timeout, backoff * 2
            continue
        backoff = 1
        if state is None:
            state = estimator.first(volley.rtt)
            continue
        if volley.rtt > timeout:
            rtx, rtx_time = rtx + 1, rtx_time + volley.rtt - timeout
        state = estimator.update(state, volley.rtt)
    answered = np.array([v.rtt / 2 for v in volleys if not v.lost])
    mean = float(answered.mean()) if answered.size else math.nan
    cov = float(answered.std(ddof=1) / mean) if answered.size > 1 else math.nan
    return TimeoutRun(float(answered.sum()), lost, lost_time / 2, rtx, rtx_time / 2, mean, cov,
                      tuple(timeouts))


# ---------------------------------------------------------------- wall time

def traffic_seconds(experiment, scenario):
    """Expected seconds of a run: its echo volleys at the configured round
    trip of a mean-length echo (cross traffic adds queueing: a lower bound)."""
    rate, propagation = configured_path(scenario)
    seconds = 0.0
    for workload in scenario.workloads:
        if workload.kind == "echo":
            spec = workload.object_size
            length = spec.get("value", (spec.get("low", 0) + spec.get("high", 0)) / 2)
            rtt = 2 * (propagation + 8 * (length + ETHERNET_HEADER) / rate)
            seconds = max(seconds, workload.volleys * rtt)
    return min(experiment.duration, seconds)


def planned_seconds(experiment, runs):
    overhead = study.estimated_seconds(experiment, runs[:1]) - experiment.duration \
        if runs else 0.0
    return sum(traffic_seconds(experiment, run.scenario) + overhead for run in runs)


# ---------------------------------------------------------------- the report

def published():
    return json.loads(PUBLISHED.read_text())


def load_parts(root):
    parts = {}
    for name in PARTS + (QUICK,):
        folder = Path(root) / name
        if folder.is_dir() and any(folder.glob(f"*/{study.COMPLETE}")):
            parts[name] = Part(load_study(folder))
    return parts


def ms(seconds, digits=1):
    return "—" if seconds is None or not math.isfinite(seconds) else \
        f"{seconds * 1e3:.{digits}f}"


def calibration_lines(part):
    """The calibration table -> (lines, every path within both tolerances)."""
    processing, rows = calibrate(part)
    if processing is None:
        return ["No `lab` run in this part: the processing delay is unknown."], False
    hold = next(configured_path(scenario)[1] for name, scenario, _ in part_runs(part)
                if name == LAB_PATH)
    lines = [f"The lab's processing delay (one way: the `lab` path's intercept less its "
             f"{ms(hold, 1)} ms hold): "
             f"**{processing * 1e3:.3f} ms**. Fit: Siegel's repeated medians (robust); the "
             f"RFC's least squares beside it.", "",
             "| path | configured rate (b/s) | fitted rate (b/s) | rate error | least squares "
             "(b/s) [95 %] | propagation (ms) | expected intercept (ms) | fitted intercept (ms) "
             "| intercept error (ms) | volleys | within 2 % and 0.2 ms |", "|---" * 11 + "|"]
    for row in rows:
        ls = row.least_squares
        lines.append(
            f"| {row.path} | {row.rate_bps:.0f} | {row.fit.rate_bps:.0f} | "
            f"{row.rate_error:+.2%} | {ls.rate_bps:.0f} ± {ls.rate_half:.0f} | "
            f"{ms(row.propagation, 2)} | {ms(row.propagation + row.processing, 3)} | "
            f"{ms(row.fit.intercept, 3)} | {row.intercept_error * 1e3:+.3f} | {row.fit.n} | "
            f"{'yes' if row.ok else 'NO'} |")
    return lines, bool(rows) and all(row.ok for row in rows)


def fits_of(volleys, split):
    """{"single": Fit, "multi": Fit} for the RFC's split paths, else {"one": Fit}."""
    if split:
        return {"single": fit_delay(volleys, longest=SPLIT - 1),
                "multi": fit_delay(volleys, shortest=SPLIT)}
    return {"one": fit_delay(volleys)}


def delay_lines(part, pub):
    lines = ["| path (RFC host) | what | characteristic | delay at 40 | at 125 | at 256 (ms) | "
             "rate (b/s) | configured rate (b/s) |", "|---" * 8 + "|"]
    for name, scenario, folder in part_runs(part):
        paper = pub["paths"].get(name)
        if paper is None:
            continue
        volleys = read_volleys(folder)
        split = "single" in paper["delay"]
        rate, _ = configured_path(scenario)
        for kind, fit in fits_of(volleys, split).items():
            cells = paper["delay"] if kind == "one" else paper["delay"][kind]
            shown = {"one": (40, 256), "single": (40, 125), "multi": (125, 256)}[kind]
            delays = [f"{cells[f'd{n}']} \\| {ms(fit.delay_at(n)) if fit else '—'}"
                      if n in shown else "" for n in LENGTHS]
            fitted = "—" if not fit else f"{fit.rate_bps:.0f}" if fit.slope > 0 else \
                "— (delay falls with length)"
            lines.append(f"| {name} ({paper['host']}) | {paper['what']} | "
                         f"{'one line' if kind == 'one' else kind + '-packet'} | "
                         + " | ".join(delays) + f" | {cells['rate']} \\| {fitted} | {rate:.0f} |")
    return lines


def timeout_results(part):
    """{path: {estimator name: TimeoutRun}} of a part."""
    return {name: {e.name: simulate(read_volleys(folder), e) for e in ESTIMATORS}
            for name, _, folder in part_runs(part)}


def timeout_lines(results, pub):
    lines = ["| path | estimator | volleys | Total (s) | Lost | Time (s) | RTX | Time (s) | "
             "Mean (ms) | CoV | Eff |", "|---" * 11 + "|"]
    for name, by_estimator in results.items():
        paper = pub["paths"].get(name)
        if paper:
            t = paper["timeout"]
            lines.append(f"| {name} | **published** (RFC 889, Mills' filter) | 512 | {t['total']} | "
                         f"{t['lost']} | {t['lost_time']} | {t['rtx']} | {t['rtx_time']} | "
                         f"{t['mean']} | {t['cov']} | {t['eff']} |")
        for estimator, run in by_estimator.items():
            lines.append(f"| {name} | {estimator} | {run.volleys} | {run.total:.1f} | {run.lost} | "
                         f"{run.lost_time:.1f} | {run.rtx} | {run.rtx_time:.1f} | "
                         f"{ms(run.mean, 0)} | {run.cov:.2f} | {run.efficiency:.3f} |")
    return lines


def mills_gain_lines(results):
    """Mills' efficiency against RFC 793's per path, and the RFC's claim."""
    classic, asymmetric = ESTIMATORS[0].name, ESTIMATORS[1].name
    gains = {name: 100 * (runs[asymmetric].efficiency - runs[classic].efficiency)
             for name, runs in results.items()}
    if not gains:
        return []
    better = [n for n, g in gains.items() if g > 0]
    worse = [n for n, g in gains.items() if g < 0]
    return ["Mills' filter minus RFC 793's efficiency, in percentage points: "
            + ", ".join(f"{n} {g:+.1f}" for n, g in gains.items()) + ".", "",
            f"Published: about 5 % better on most paths, ~10 % on FOE, ISID and ISIA, a few % "
            f"worse on FACC and UCL. Here: better on {len(better)} of {len(gains)} paths"
            f"{' (' + ', '.join(better) + ')' if better else ''}, worse on {len(worse)}"
            f"{' (' + ', '.join(worse) + ')' if worse else ''}, equal on the rest; "
            f"{sum(5 <= g <= 10 for g in gains.values())} path(s) gain 5-10 points."]


def echo_loss(loss_text):
    """The probability an echo is lost on a line with this loss on each direction
    (stationary Gilbert-Elliott loss for gemodel; directions independent)."""
    if not loss_text:
        return 0.0
    loss, gemodel = parse_loss(loss_text)
    if gemodel:
        p, r, loss_bad, loss_good = gemodel
        bad = p / (p + r) if p + r > 0 else 0.0
        loss = bad * loss_bad + (1 - bad) * loss_good
    return 1 - (1 - loss) ** 2


def jitter_sd(link):
    """Standard deviation of the one-way normalised delay that the jitter alone
    gives: two independent draws, halved; uniform +-J has sd J / sqrt(3)."""
    single = link.jitter_s / math.sqrt(3) if link.distribution == "uniform" else link.jitter_s
    return single / math.sqrt(2)


def impairment_lines(part):
    """Per path: lost volleys against the configured loss (95 % Clopper-Pearson
    interval) and the spread about the fitted line against the jitter's."""
    lines = ["| path | configured (each direction) | expected echo loss | lost volleys "
             "[95 %] | jitter's sd (ms) | sd about the line (ms) |", "|---" * 6 + "|"]
    for name, scenario, folder in part_runs(part):
        link = scenario.topology.bottleneck
        volleys = read_volleys(folder)
        lost = sum(v.lost for v in volleys)
        interval = scipy_stats.binomtest(lost, len(volleys)).proportion_ci(0.95)
        fit = fit_delay(volleys)
        spread = np.std([v.rtt / 2 - fit.delay_at(v.length) for v in volleys if not v.lost],
                        ddof=2) if fit else math.nan
        what = ", ".join(filter(None, (
            f"jitter {link.jitter_s * 1e3:g} ms {link.distribution}" if link.jitter_s else "",
            f"loss {link.loss}" if link.loss else "", f"glitch {link.glitch}" if link.glitch
            else "", "bulk TCP cross traffic" if len(scenario.workloads) > 1 else ""))) or "none"
        lines.append(f"| {name} | {what} | {echo_loss(link.loss):.2%} | {lost} of {len(volleys)} "
                     f"[{interval.low:.2%}, {interval.high:.2%}] | {ms(jitter_sd(link))} | "
                     f"{ms(spread)} |")
    return lines + ["", "The spread about the line also holds glitches and queueing behind "
                        "cross traffic, which the jitter column does not."]


def linux_lines(part):
    """Linux's own retransmissions on the paths with TCP cross traffic (the
    senders' tcp_info over each connection's life)."""
    lines = []
    for name, scenario, folder in part_runs(part):
        flows = part.loaded.results[folder.name].get("flow_stats", {})
        for flow, stats in sorted(flows.items()):
            lines.append(f"- {name}, {flow} ({scenario.tcp.cc}): {retransmission_text(stats)}; "
                         f"Linux's smoothed RTT {stats['rtt_ms']:.0f} ms.")
    if not lines:
        return []
    return ["## Linux's own retransmission timer on the same paths (extension)", "",
            "The bulk cross traffic is Linux TCP (RFC 6298 timer with a 200 ms minimum, RACK, "
            "TLP, F-RTO) on the same line; its sender's tcp_info:", ""] + lines + [
            "", "Spurious: retransmissions the receiver reported as duplicates with a DSACK "
            "(RFC 2883; tcpi_dsack_dups); timeouts: expiries of the retransmission timer "
            "(tcpi_total_rto, Linux 6.7 and later). Runs recorded before the agent logged "
            "them show only the total.", ""]


def retransmission_text(stats):
    """One flow's retransmissions from its flow_stats, spurious ones and
    timer expiries where tcp_info recorded them."""
    sent = stats["data_segments"]
    share = f" ({stats['retransmits'] / sent:.1%})" if sent else ""
    text = f"{sent} data segments, {stats['retransmits']} retransmitted{share}"
    if stats.get("dsack_dups") is not None:
        text += f", {stats['dsack_dups']} of them spurious (DSACK)"
    if stats.get("rto_timeouts") is not None:
        text += f", {stats['rto_timeouts']} retransmission timeouts"
    return text


def path_grid(paths):
    """One small plot per path, four to a row -> (figure, axes[rows][columns])."""
    columns = min(4, paths)
    rows = math.ceil(paths / columns)
    return plt.subplots(rows, columns, figsize=(3.6 * columns, 3.0 * rows), squeeze=False)


def plot_timelines(part, results, folder):
    """The RFC's display: each volley's delay in order, with the timeouts of
    RFC 793's and Mills' estimators (one way) -> [(file, caption)]."""
    runs = part_runs(part)
    if not runs:
        return []
    fig, axes = path_grid(len(runs))
    for ax, (name, _, run_folder) in zip(axes.flat, runs):
        volleys = read_volleys(run_folder)
        ax.plot([v.rtt / 2 * 1e3 for v in volleys], ".", markersize=2, label="delay")
        for estimator, style in zip(ESTIMATORS[:2], ("-", "--")):
            ax.plot([t / 2 * 1e3 for t in results[name][estimator.name].timeouts], style,
                    linewidth=0.8, label=estimator.name.split(" (")[0] + " timeout")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("volley", fontsize=8)
        ax.set_ylabel("one-way delay (ms)", fontsize=8)
    axes.flat[0].legend(fontsize=6)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    title = "paths: delay of each volley and the estimators' timeouts (RFC 889 section 3.1)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(folder) / "paths-timeouts.png", dpi=90)
    plt.close(fig)
    return [("paths-timeouts.png", title)]


def plot_paths(part, folder, stem, title, robust=False):
    """Delay against length per path, volleys and fitted line(s): the RFC's
    least squares (split as the RFC's table), or with `robust` the
    calibration's Siegel line -> [(file, caption)]."""
    runs = part_runs(part)
    if not runs:
        return []
    fig, axes = path_grid(len(runs))
    for ax, (name, scenario, run_folder) in zip(axes.flat, runs):
        volleys = read_volleys(run_folder)
        answered = [v for v in volleys if not v.lost]
        ax.scatter([v.length for v in answered], [v.rtt / 2 * 1e3 for v in answered], s=4,
                   alpha=0.5)
        split = name in {n for n, p in published()["paths"].items() if "single" in p["delay"]}
        fits = {"one": fit_robust(volleys)} if robust else fits_of(volleys, split)
        for kind, fit in fits.items():
            if fit is None:
                continue
            xs = {"one": (40, 256), "single": (40, SPLIT - 1), "multi": (SPLIT, 256)}[kind]
            ax.plot(xs, [fit.delay_at(x) * 1e3 for x in xs], color="C3")
        ax.set_title(f"{name}: line {scenario.topology.bottleneck.rate_bps / 1e3:g} kb/s, "
                     f"{scenario.topology.bottleneck.delay_s * 1e3:g} ms", fontsize=9)
        ax.set_xlabel("length (IP octets)", fontsize=8)
        ax.set_ylabel("one-way delay (ms)", fontsize=8)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(folder) / f"{stem}.png", dpi=90)
    plt.close(fig)
    return [(f"{stem}.png", title)]


def write_report(root, path):
    """The report of the study folder `root` into `path` (figures in
    <stem>/ next to it) -> the markdown text."""
    root, path = Path(root), Path(path)
    parts, pub = load_parts(root), published()
    figures = path.parent / path.stem
    figures.mkdir(parents=True, exist_ok=True)
    lines = ["# RFC 889 reproduced: delay against packet length, and retransmission timeouts",
             "", f"Generated by `aqmlab study rfc889 --out {root} --report-only --report {path}` "
             f"(aqmlab/reproductions/rfc889.py) from the study folder `{root}`; the published "
             f"numbers are `mininet/experiments/rfc889/published.json`.", "",
             "**Results in this report" + parts_present(parts), ""]
    lines += method_lines()
    plots = []
    for name, title in (("calibration", "Calibration: fitted rate and intercept against the "
                                        "configuration (clean paths)"),
                        (QUICK, "The quick CI variant: calibration on two clean paths")):
        if name in parts:
            lines += [f"## {title}", ""] + calibration_lines(parts[name])[0] + [""]
            plots += plot_paths(parts[name], figures, f"{name}-delay-length",
                                f"{name}: one-way delay against length, Siegel line",
                                robust=True)
    if "paths" in parts:
        results = timeout_results(parts["paths"])
        lines += ["## RFC 889 page 4: delay against length (published \\| aqmlab)", "",
                  "Delays in ms normalised to one way; rates in b/s from the fitted slope. "
                  "The RFC fitted two lines on paths through the ARPANET (single-packet "
                  "messages below 126 octets, multi-packet above); aqmlab fits the same two "
                  "ranges, over one serial line, so both give its rate.", ""]
        lines += delay_lines(parts["paths"], pub) + [""]
        lines += ["## RFC 889 pages 8-9: retransmission-timeout estimators", "",
                  "Published row: the RFC's table (Mills' filter, 512 volleys of the real "
                  "path); aqmlab rows: each estimator simulated on the same volleys of the "
                  "modelled path.", ""]
        lines += timeout_lines(results, pub) + [""] + mills_gain_lines(results) + [""]
        lines += ["## The impairments as the probe measured them", ""]
        lines += impairment_lines(parts["paths"]) + [""] + linux_lines(parts["paths"])
        plots += plot_paths(parts["paths"], figures, "paths-delay-length",
                            "paths: one-way delay against length, least-squares line(s)")
        plots += plot_timelines(parts["paths"], results, figures)
    lines += load_lines(parts)
    lines += [""] + measured_lines(read_wall(root)) + [""] + howto_lines()
    return save_report(path, lines, figures, plots, "Figures")


def howto_lines():
    """How to run the study, with the plan's wall-time estimate per part."""
    sources = {part: EXPERIMENTS / f"{part}.toml" for part in PARTS}
    plan = plan_lines(NAME, sources, planned_seconds)
    return ["## Running it", "", "```", "aqmlab study rfc889 --out DIR            # both parts; "
            "rerun to resume", "aqmlab study rfc889 --out DIR --quick    # the CI check (~1 min)",
            "aqmlab study rfc889 --out DIR --report-only --report FILE.md", "```", "",
            "Plan (estimated from each path's volleys at its configured round trip, one run at "
            "a time; queueing behind cross traffic adds to isid-h): " + "; ".join(plan[1:]) + ".",
            "Runs are timing-sensitive (the calibration resolves 0.2 ms): one at a time, not "
            "beside other heavy work.", ""]


def method_lines():
    return [
        "Method. Each path is a line in the softswitch's traffic manager between the two "
        "switches (rate and propagation delay from the RFC's table on page 4; hosts on "
        "10 Gb/s, 0 ms links). The probe is the RFC's: ICMP echoes, lengths uniform in "
        "40..256 IP octets, one in flight, the reply's kernel receive time; a volley without "
        "reply in 10 s is lost. Delay = round trip / 2 (the RFC's normalisation). The line is "
        "fitted on the frame length (IP + 14 octets of Ethernet header, which the traffic "
        "manager serialises), so its intercept is the propagation plus processing; rates are "
        "8 / slope. Estimators: RFC 793's E <- F E + (1 - F) R with timeout G E (F = 7/8, "
        "G = 2), Mills' asymmetric filter (F1 = 15/16 when R < E, F2 = 3/4 when R >= E, "
        "G = 2) and RFC 6298 (SRTT/RTTVAR, RTO = SRTT + 4 RTTVAR, at least 1 s), each over "
        "the volleys in order; a lost volley costs its timeout (doubling on consecutive "
        "losses), a superfluous retransmission the time by which the delay exceeded the "
        "timeout (the RFC does not define its Time columns further; this reading is "
        "consistent with its rows, e.g. UMD1's 2 RTX in 0.5 s at a 263 ms mean).", ""]


# ---------------------------------------------------------------- the command

def part_sources(root, parts, args, extra):
    return {part: EXPERIMENTS / f"{part}.toml" for part in parts}


def quick_verdict(root):
    """The CI check: on every clean path of the quick part the fitted rate is
    within 2 % of the configured one and the intercept within 0.2 ms of
    propagation + the lab's processing delay."""
    part = load_parts(root).get(QUICK)
    if part is None:
        return {"ok": False, "text": "FAILED: the quick part has no complete run"}
    lines, ok = calibration_lines(part)
    return {"ok": ok, "text": ("passed" if ok else "FAILED") + ": calibration of the quick "
            "part (rate within 2 %, intercept within 0.2 ms):\n" + "\n".join(lines)}


REPRODUCTION = Reproduction(
    NAME, "RFC 889 (Internet Delay Experiments) reproduced: delay against length on modelled "
    "paths (a calibration of the link emulation), the RFC's two tables, RTO estimators.",
    EXPERIMENTS, PARTS, QUICK, part_sources, write_report, quick_verdict,
    seconds_of=planned_seconds)


def main(argv):
    return run_study(REPRODUCTION, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
