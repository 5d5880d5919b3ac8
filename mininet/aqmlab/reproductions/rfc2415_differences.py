"""Why aqmlab's RFC 2415 numbers differ from the published ones, measured from
the study's own runs (the report's "Why aqmlab's numbers differ" section):

- web load: bytes per page on the bottleneck and pages per second per client,
  against what RFC 2415 Table 2's utilisation implies, and the loss-free page
  delay that slow-start round trips give for the object sizes alone;
- web losses, read from each object's delay beyond its loss-free round trips
  (none, one lost data segment, Linux's 1 s SYN-ACK timeout, several), and the
  IW 1 -> k decrease of the pages without a loss against all pages;
- FTP losses against the square-root law at the FTPs' measured window, and
  what the law says at the thread's own FTP throughput.
"""

import math
import random
import statistics
from collections import defaultdict

from aqmlab import stats
from aqmlab.agent import size_sampler
from aqmlab.report import run_csv_rows
from aqmlab.reproductions.common import fmt

SEGMENT_BYTES = 1448      # MSS 1460 less the 12-byte timestamp option Linux sends
FRAME_BITS = 1500 * 8
WIRE_BYTES_PER_SEGMENT = 52     # the IPv4 and TCP headers with the timestamp option
# A connection's own packets on the bottleneck (SYN-ACK, FIN, ...), fitted to
# the committed lognormal runs: 14.5 KB there per page of 12.9 KB of objects.
WIRE_BYTES_PER_CONNECTION = 266
# An object's delay beyond its loss-free round trips (s) -> what it met:
# under 0.3 s nothing; to 0.9 s one lost data segment (TLP, fast retransmit or
# one RTO of ~3 srtt); to 1.25 s Linux's 1 s SYN-ACK timeout (its initial RTO);
# beyond, several losses or backed-off timeouts.
PENALTIES = ((0.3, "none"), (0.9, "data"), (1.25, "synack"), (math.inf, "several"))
# The square-root law: loss rate p = c / W^2 for a Reno window of W packets
# averaged over its sawtooth, losses recovered without timeouts; c = 3 / (2 b),
# the window growing one segment per b round trips: b = 1 for Linux (it counts
# acknowledged segments, RFC 3465) and for ns-2's tcp-full, whose receiver ACKs
# every segment by default (segsperack_ 1); b = 2 for a sender opening per ACK
# behind a receiver that ACKs every second segment.
SQRT_LAW = {1: 1.5, 2: 0.75}


def slow_start_rounds(segments, iw, clamp):
    """Round trips to send `segments` from a window of `iw` doubling up to `clamp`."""
    rounds, window, sent = 0, iw, 0
    while sent < segments:
        sent, rounds, window = sent + window, rounds + 1, min(2 * window, clamp)
    return rounds


def base_rtt_s(topology):
    """The dumbbell's round trip without queues: bottleneck and both access links, twice."""
    return 2 * (topology.bottleneck.delay_s + topology.server_access.delay_s
                + topology.client_access.delay_s)


def segments_of(size):
    return max(1, math.ceil(size / SEGMENT_BYTES))


def loss_free_object_s(size, iw, rtt_s, clamp=11):
    """One object on a new connection: the handshake, then its slow start."""
    return rtt_s * (1 + slow_start_rounds(segments_of(size), iw, clamp))


def loss_free_page_s(sizes, iw, rtt_s, packet_s, clamp=11):
    """An HTTP/1.0 page with no loss and no queue: the primary object, then the
    embedded ones in parallel, plus every packet's time on the bottleneck."""
    primary = loss_free_object_s(sizes[0], iw, rtt_s, clamp)
    embedded = max(loss_free_object_s(s, iw, rtt_s, clamp) for s in sizes[1:])
    return primary + embedded + packet_s * sum(segments_of(s) for s in sizes)


def model_pages(web, pages=20000, seed=1):
    """`pages` pages of an http10 workload, each its object sizes drawn as the
    agent draws them (its sampler, max_size and embedded count)."""
    draw = size_sampler(web.object_size, random.Random(seed), web.max_size)
    return [[draw() for _ in range(1 + web.embedded)] for _ in range(pages)]


def model_median_page_s(web, iw, rtt_s, packet_s, pages=20000, seed=1):
    """Median loss-free page delay of an http10 workload over `pages` pages
    drawn as the agent draws them."""
    clamp = web.tcp.window_clamp or 11
    return statistics.median(loss_free_page_s(sizes, iw, rtt_s, packet_s, clamp)
                             for sizes in model_pages(web, pages, seed))


def page_wire_bytes(sizes):
    """Bytes an HTTP/1.0 page puts on the bottleneck: its objects, a header
    per segment and each connection's own packets."""
    return sum(size + WIRE_BYTES_PER_SEGMENT * segments_of(size) + WIRE_BYTES_PER_CONNECTION
               for size in sizes)


def offered_load(web, webs, iw, topology, pages=20000, seed=1):
    """What an http10 workload offers the dumbbell with no loss and no queue:
    the loss-free model's median and mean page delay (s), bottleneck bytes
    per page, and the utilisation (%) when each client asks for a page every
    mean page delay + mean think time. The model's slow-start rounds overstate
    a large object's time (it runs at the link's rate once its window fills
    the path), so `utilisation_high_pct` takes each page at its lower bound
    instead, 4 round trips (two handshakes, two requests) plus its packets at
    the link's rate: the truth lies between the two."""
    b = topology.bottleneck
    rtt_s, packet_s = base_rtt_s(topology), FRAME_BITS / b.rate_bps
    drawn = model_pages(web, pages, seed)
    delays = [loss_free_page_s(sizes, iw, rtt_s, packet_s, web.tcp.window_clamp or 11)
              for sizes in drawn]
    floors = [4 * rtt_s + packet_s * sum(segments_of(s) for s in sizes) for sizes in drawn]
    wire = [page_wire_bytes(sizes) for sizes in drawn]
    think_s = mean_think_s(web.think)

    def utilisation(page_s):
        return 100 * webs * statistics.fmean(wire) * 8 / (page_s + think_s) / b.rate_bps
    return {"median_s": statistics.median(delays), "mean_s": statistics.fmean(delays),
            "wire_bytes": statistics.fmean(wire), "wire_sd_bytes": statistics.stdev(wire),
            "pages_per_s": webs / (statistics.fmean(delays) + think_s),
            "utilisation_pct": utilisation(statistics.fmean(delays)),
            "utilisation_high_pct": utilisation(statistics.fmean(floors))}


def run_spread_pct(load, seconds):
    """The seed-to-seed spread (coefficient of variation, %) of the bytes per
    page a run of `seconds` offers: the pages' spread over the root of the
    pages such a run holds (offered_load's dict)."""
    pages = load["pages_per_s"] * seconds
    return 100 * load["wire_sd_bytes"] / load["wire_bytes"] / math.sqrt(pages)


def repetitions_for(sd, half_width, confidence=0.95):
    """The fewest repetitions whose Student-t interval of the mean is at most
    +- half_width for a per-run standard deviation sd."""
    from scipy import stats as scipy_stats

    n = 2
    while scipy_stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n) > half_width:
        n += 1
    return n


def penalty(excess_s):
    return next(name for limit, name in PENALTIES if excess_s < limit)


def run_pages(rows, iw, warmup, clamp=11):
    """[(page delay s, set of penalties its objects met)] of the complete pages
    ending after the warm-up of one run's transfers.csv rows. The loaded round
    trip is half the lower quartile of the one-segment objects' delays."""
    objects = [r for r in rows if r["kind"] == "object" and r["complete"] == "True"]
    small = sorted(float(r["delay"]) for r in objects if int(r["size"]) <= SEGMENT_BYTES)
    if not small:
        return []
    rtt_s = small[len(small) // 4] / 2
    met = defaultdict(set)
    for r in objects:
        excess = float(r["delay"]) - loss_free_object_s(int(r["size"]), iw, rtt_s, clamp)
        met[(r["flow"], r["page"])].add(penalty(excess))
    return [(float(r["delay"]), met[(r["flow"], r["page"])] - {"none"}) for r in rows
            if r["kind"] == "page" and r["complete"] == "True" and float(r["end"]) >= warmup]


def page_losses(pages):
    """Shares (%) of pages without a loss and with the SYN-ACK timeout, and the
    median delay of all pages and of those without a loss."""
    clean = [d for d, met in pages if not met]
    return {"clean_pct": 100 * len(clean) / len(pages),
            "synack_pct": 100 * sum("synack" in met for _, met in pages) / len(pages),
            "median_s": statistics.median(d for d, _ in pages),
            "clean_median_s": statistics.median(clean) if clean else math.nan}


def losses_by_seed(part, key):
    """{seed: page_losses} over the complete runs of the point `key` (webs, ftps, iw)."""
    warmup, found = part.loaded.experiment.warmup, {}
    for run in part.loaded.runs:
        if part.key(run.scenario) == key and run.run_id in part.loaded.results:
            pages = run_pages(run_csv_rows(part.loaded.folder / run.run_id, "transfers.csv"),
                              key[2], warmup)
            if pages:
                found[run.seed] = page_losses(pages)
    return found


def decrease_pct(base, other, field):
    """Per-seed % decrease of `field` from base to other -> stats estimate."""
    return stats.estimate([100 * (base[s][field] - other[s][field]) / base[s][field]
                           for s in base if s in other and base[s][field] > 0])


def mean_text(values, digits=3):
    """The mean of finite values, or '—'."""
    found = stats.estimate(values)
    return f"{found.mean:.{digits}g}" if found.n else "—"


def page_loss_lines(part, published_rows):
    """Per FTP count and IW: pages without a loss, pages with a SYN-ACK
    timeout, and the IW 1 -> k decrease of all pages and of the loss-free ones
    beside the thread's."""
    if not part:
        return ["Not run."]
    published = {row["ftps"]: row["improvement_pct"] for row in published_rows}
    lines = ["| FTPs | IW | pages without a loss % | pages with a 1 s SYN-ACK timeout % | "
             "median page delay s: all \\| loss-free | IW 1 -> IW % decrease: all pages \\| "
             "loss-free pages \\| thread |", "|---|---|---|---|---|---|"]
    for webs, ftps, iw in part.keys():
        if not isinstance(iw, int):
            continue
        found = losses_by_seed(part, (webs, ftps, iw))
        if not found:
            continue
        gain = "—"
        if iw > 1:
            base = losses_by_seed(part, (webs, ftps, 1))
            thread = published.get(ftps, [None] * 5)
            thread = thread[iw - 1] if iw - 1 < len(thread) else None
            gain = (f"{fmt(decrease_pct(base, found, 'median_s'))} \\| "
                    f"{fmt(decrease_pct(base, found, 'clean_median_s'))} \\| "
                    f"{'—' if thread is None else thread}")

        def mean(field):
            return mean_text(v[field] for v in found.values())
        lines.append(f"| {ftps} | {iw} | {mean('clean_pct')} | {mean('synack_pct')} | "
                     f"{mean('median_s')} \\| {mean('clean_median_s')} | {gain} |")
    return lines


# ---------------------------------------------------------------- web load

def implied_bytes_per_page(utilisation_pct, webs, page_delay_s, think_s, rate_bps):
    """Bytes per page on the bottleneck that a utilisation implies when each
    client asks for a page every page delay + mean think time."""
    return utilisation_pct / 100 * rate_bps / 8 * (page_delay_s + think_s) / webs


def mean_think_s(spec):
    return (spec["low"] + spec["high"]) / 2 if spec["dist"] == "uniform" else spec["value"]


def run_load(rows, result, warmup, webs):
    """(bytes per page on the bottleneck, object bytes per page, pages per
    second per client) of the pages ending in one run's window; None for a
    run without pages or bottleneck bytes."""
    pages = [int(r["size"]) for r in rows if r["kind"] == "page" and r["complete"] == "True"
             and float(r["end"]) >= warmup]
    if not pages or "bytes" not in result["bottleneck"] or "window" not in result:
        return None
    seconds = result["window"][1] - result["window"][0]
    return (result["bottleneck"]["bytes"] / len(pages), statistics.fmean(pages),
            len(pages) / webs / seconds)


def web_load_lines(part, table1, table2):
    """For the web-only points: the load per page and per client against RFC
    2415's, and the median page delay against the loss-free model."""
    if not part:
        return ["Not run."]
    published = {(r["webs"], r["ftps"]): r for r in table2}
    delays = {(r["webs"], r["ftps"]): [r["iw1_s"]] + [r["iw1_s"] * (1 - d / 100)
                                                      for d in r["decrease_pct"]]
              for r in table1}
    lines = ["| webs | IW | bytes per page on the bottleneck, KB (RFC 2415 implied \\| aqmlab) "
             "| object KB per page | pages/s per client | median page delay s (RFC 2415 \\| "
             "aqmlab \\| loss-free model) |", "|---|---|---|---|---|---|"]
    for webs, ftps, iw in part.keys():
        if ftps or not isinstance(iw, int):
            continue
        runs = [r for r in part.loaded.runs if part.key(r.scenario) == (webs, 0, iw)
                and r.run_id in part.loaded.results]
        if not runs:
            continue
        scenario = runs[0].scenario
        web = next(w for w in scenario.workloads if w.kind == "http10")
        b = scenario.topology.bottleneck
        loads = [load for load in (
            run_load(run_csv_rows(part.loaded.folder / r.run_id, "transfers.csv"),
                     part.loaded.results[r.run_id], part.loaded.experiment.warmup, webs)
            for r in runs) if load]
        if not loads:
            continue
        model = model_median_page_s(web, iw, base_rtt_s(scenario.topology),
                                    FRAME_BITS / b.rate_bps)
        row, delay = published.get((webs, 0)), delays.get((webs, 0), [])
        implied = (implied_bytes_per_page(row["utilisation_pct"][iw - 1], webs,
                                          delay[iw - 1], mean_think_s(web.think), b.rate_bps)
                   if row and iw <= len(delay) else None)
        measured = mean_text(part.loaded.results[r.run_id]["workloads"]["web"]["delay_s"]
                             ["median"] for r in runs)
        lines.append(
            f"| {webs} | {iw} | {'—' if implied is None else f'{implied / 1e3:.1f}'} \\| "
            f"{mean_text(load[0] / 1e3 for load in loads)} | "
            f"{mean_text(load[1] / 1e3 for load in loads)} | "
            f"{mean_text(load[2] for load in loads)} | "
            f"{'—' if iw > len(delay) else f'{delay[iw - 1]:.2f}'} \\| {measured} \\| "
            f"{model:.3f} |")
    return lines


# ---------------------------------------------------------------- drop rates

def has_tcp_info(result):
    """A run whose FTP and web senders logged tcp_info (flow_stats)."""
    kinds = {flow.split("/")[0].split("-")[0] for flow, s in result.get("flow_stats", {}).items()
             if s.get("data_segments")}
    return {"ftp", "web"} <= kinds and "rtt_ms" in result["workloads"].get("ftp", {})


def ftp_window(result):
    """(packets/s per FTP, smoothed RTT s, window W = rate x RTT) from a run's
    FTP goodput and its senders' tcp_info."""
    ftp = result["workloads"]["ftp"]
    rate = ftp["goodput_per_flow_bps"] / (8 * SEGMENT_BYTES)
    return rate, ftp["rtt_ms"] / 1e3, rate * ftp["rtt_ms"] / 1e3


def retransmit_shares(result):
    """(FTP retransmitted / sent segments %, web %, web share of all retransmissions %)."""
    totals = defaultdict(lambda: [0, 0])
    for flow, s in result["flow_stats"].items():
        totals[flow.split("/")[0].split("-")[0]][0] += s["retransmits"]
        totals[flow.split("/")[0].split("-")[0]][1] += s["data_segments"]
    (ftp_re, ftp_seg), (web_re, web_seg) = totals["ftp"], totals["web"]
    return (100 * ftp_re / ftp_seg, 100 * web_re / web_seg,
            100 * web_re / (web_re + ftp_re) if web_re + ftp_re else math.nan)


def sqrt_law_pct(window, b):
    return 100 * SQRT_LAW[b] / window ** 2


def published_floor_pct(ftp_delay_s, file_bytes, buffer, rate_bps, base_rtt_s, b=1):
    """The square-root law's drop rate at the thread's own FTP throughput with
    the queue always full (the largest window that throughput allows): the
    least a Reno FTP loses there unless it idles in retransmission timeouts."""
    rate = file_bytes / SEGMENT_BYTES / ftp_delay_s
    return sqrt_law_pct(rate * (base_rtt_s + buffer * FRAME_BITS / rate_bps), b)


def drop_rate_lines(part, published_rows, ranges):
    """Per FTP count (IW 1 and 3): the FTPs' window and retransmissions against
    the square-root law, the webs' part, and the thread's drop range against
    what the law says at its own FTP delays."""
    if not part:
        return ["Not run."]
    published = {row["ftps"]: row.get("ftp_s") for row in published_rows}
    lines = ["| FTPs | IW | per FTP: packets/s \\| srtt ms \\| window | FTP retransmitted % | "
             "square-root law % (b = 1 \\| b = 2) | web retransmitted % \\| web share of all "
             "retransmissions % | drop rate %: aqmlab \\| thread \\| the law at the thread's "
             "FTP delay, full queue, b = 1 |", "|---|---|---|---|---|---|---|"]
    for webs, ftps, iw in part.keys():
        runs = [run for run in part.loaded.runs if part.key(run.scenario) == (webs, ftps, iw)
                and run.run_id in part.loaded.results
                and has_tcp_info(part.loaded.results[run.run_id])]
        if not ftps or iw not in (1, 3) or not runs:
            continue
        results = [part.loaded.results[run.run_id] for run in runs]
        rate, rtt, window = (statistics.fmean(ftp_window(r)[i] for r in results)
                             for i in range(3))
        shares = [retransmit_shares(r) for r in results]
        lines.append(
            f"| {ftps} | {iw} | {rate:.1f} \\| {1e3 * rtt:.0f} \\| {window:.2f} | "
            f"{mean_text(s[0] for s in shares)} | {sqrt_law_pct(window, 1):.2f} \\| "
            f"{sqrt_law_pct(window, 2):.2f} | {mean_text(s[1] for s in shares)} \\| "
            f"{mean_text(s[2] for s in shares)} | "
            f"{fmt(stats.estimate(100 * r['bottleneck']['drop_rate'] for r in results))} \\| "
            f"{ranges.get(str(ftps), '—')} \\| "
            f"{thread_floor(runs[0].scenario, published, ftps, iw)} |")
    return lines


def thread_floor(scenario, published, ftps, iw):
    """published_floor_pct for the point, as text ('—' without a published FTP delay)."""
    delay = (published.get(ftps) or [None] * 4)[min(iw, 4) - 1]
    if delay is None:
        return "—"
    b = scenario.topology.bottleneck
    size = next(w.size for w in scenario.workloads if w.name == "ftp")
    floor = published_floor_pct(delay, size, b.buffer, b.rate_bps, base_rtt_s(scenario.topology))
    return f"{floor:.1f}"
