"""Metrics over the agents' transfer records and the switch's counters.

Records are the agent's JSON lines. Times are wall-clock seconds; a run's
measurement window is [epoch + warmup, epoch + duration].
"""

import bisect
import math
import statistics
from collections import Counter, defaultdict

DELAY_KINDS = ("bulk", "object", "page", "transaction", "surge")
PERCENTILES = (10, 50, 90, 99)
MTU_BITS = 1500 * 8
# Transfer-size classes of results per transfer size (the buffer-sizing
# thesis's Fig. 9-11): (low, high, label, metric name suffix), low <= bytes < high.
SIZE_BINS = ((0, 10_000, "< 10 KB", "lt_10kb"), (10_000, 100_000, "10-100 KB", "10_100kb"),
             (100_000, 1_000_000, "100 KB-1 MB", "100kb_1mb"),
             (1_000_000, math.inf, ">= 1 MB", "ge_1mb"))


def jain_index(values):
    """(sum x)^2 / (n sum x^2); 1 = perfectly fair. Empty or all-zero -> nan."""
    values = list(values)
    square_sum = sum(v * v for v in values)
    if not values or square_sum == 0:
        return math.nan
    return sum(values) ** 2 / (len(values) * square_sum)


def percentile(values, q):
    """Linear-interpolated percentile q in [0, 100] (numpy's default method)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def delay_summary(delays):
    summary = {"count": len(delays), "mean": statistics.fmean(delays) if delays else math.nan}
    for q in PERCENTILES:
        summary[f"p{q}"] = percentile(delays, q)
    summary["median"] = summary["p50"]
    return summary


def network_power(goodput_bps, median_delay_s):
    """Goodput divided by median delay (RFC 2415), in bit/s per second."""
    if not median_delay_s or math.isnan(median_delay_s):
        return math.nan
    return goodput_bps / median_delay_s


def window_bytes(flow_records, window):
    """Bytes a flow received inside the window.

    Unlimited bulk flows log cumulative samples: interpolate at the window
    edges (a client stopped before its deadline, see until_complete, has
    no final record: its samples alone). Finite transfers count the bytes
    of transfers ending inside, and a bulk transfer cut off by the run's
    end (not complete) its partial bytes, never 0."""
    start, end = window
    samples = sorted((r["t"], r["bytes"]) for r in flow_records if r["kind"] == "sample")
    finals = [r for r in flow_records if r["kind"] == "bulk" and r.get("size") == -1]
    if finals or samples:
        points = samples
        if finals:
            # the final record counts bytes read; samples count bytes the kernel took
            # in (ahead of the reader), so it only extends a curve it does not lower
            final = (finals[0]["end"], finals[0]["bytes"])
            points = [(finals[0]["start"], 0)] + samples
            if not samples or final[1] >= samples[-1][1]:
                points.append(final)
        return _cumulative_at(points, end) - _cumulative_at(points, start)
    return sum(r["bytes"] for r in flow_records
               if r["kind"] in DELAY_KINDS and r["kind"] != "object" and
               (start <= r["end"] <= end or _cut_off(r, end)))


def _cut_off(record, end):
    """A fixed-size bulk transfer still running when the run ended."""
    return record["kind"] == "bulk" and record.get("complete") is False and record["end"] >= end


def _cumulative_at(points, t):
    if t <= points[0][0]:
        return 0
    for (t0, b0), (t1, b1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return b0 if t1 == t0 else b0 + (b1 - b0) * (t - t0) / (t1 - t0)
    return points[-1][1]


def flow_goodputs(records, window):
    """{(workload, flow): goodput in bit/s} over the window."""
    by_flow = defaultdict(list)
    for record in records:
        if "flow" in record and record["kind"] != "tcp_info":
            by_flow[(record["workload"], record["flow"])].append(record)
    seconds = window[1] - window[0]
    return {key: 8 * window_bytes(rs, window) / seconds for key, rs in sorted(by_flow.items())}


def transfer_delays(records, kind, window):
    """Delays (s) of the complete transfers of one kind (page, object, ...)
    ending inside the window, as goodput counts them."""
    start, end = window
    return [r["end"] - r["start"] for r in records if r["kind"] == kind and r.get("complete")
            and start <= r["end"] <= end]


def size_bin(size):
    """The label of the size class (SIZE_BINS) of a transfer of `size` bytes."""
    return next(label for low, high, label, _ in SIZE_BINS if low <= size < high)


def with_transfer_drops(records, drop_rows, epoch):
    """The records, each transfer that names its connection (a 4-tuple, as
    drops.csv names flows) with `drops`: its data segments the bottleneck's
    buffer overflowed (drops.csv rows with a payload, t after `epoch`; the
    switch does not record RED's drops), and `data_segments`: the data
    segments its sender sent, retransmissions included (the connection's
    tcp_info data_segs_out; None without one).
    A 4-tuple that carries transfers in turn, or comes back with a reused
    port, is split by time: a drop or tcp_info record at t belongs to the
    last transfer on it that started at or before t."""
    starts = defaultdict(list)
    for record in records:
        if _names_connection(record):
            starts[record["connection"]].append(record["start"])
    for times in starts.values():
        times.sort()
    drops, segments = Counter(), {}
    for row in drop_rows:
        owner = _owner(starts, row["flow"], epoch + float(row["t"]))
        if owner and int(row["payload"]) > 0:
            drops[owner] += 1
    for record in records:
        owner = record["kind"] == "tcp_info" and _owner(starts, record.get("connection"),
                                                        record["t"])
        if owner:
            segments[owner] = segments.get(owner, 0) + record["data_segs_out"]
    return [{**r, "drops": drops[(r["connection"], r["start"])],
             "data_segments": segments.get((r["connection"], r["start"]))}
            if _names_connection(r) else r for r in records]


def _names_connection(record):
    return bool(record.get("connection")) and record["kind"] != "tcp_info"


def _owner(starts, connection, t):
    """(connection, start) of the connection's last transfer started at or
    before t, or None."""
    times = starts.get(connection, ())
    index = bisect.bisect_right(times, t) - 1
    return (connection, times[index]) if index >= 0 else None


def drop_rate_by_size(records, window):
    """{workload: {size label: {transfers, drops, data_segments, drop_rate}}}:
    the bottleneck's drop rate per transfer-size class = the dropped data
    segments of the class's transfers / the data segments their senders
    sent. Over the transfers with_transfer_drops counted (those with their
    sender's count) that ended after the window's start, complete or cut
    off by the run's end, each over its whole life; class by requested size."""
    counts = defaultdict(lambda: defaultdict(Counter))
    for r in records:
        if r.get("data_segments") is not None and r["end"] >= window[0]:
            count = counts[r["workload"]][size_bin(r["size"])]
            count.update(transfers=1, drops=r["drops"], data_segments=r["data_segments"])
    return {workload: {label: {**c, "drop_rate": c["drops"] / c["data_segments"]
                               if c["data_segments"] else math.nan}
                       for label, c in by_size.items()}
            for workload, by_size in counts.items()}


def transactions_per_second(records, window):
    start, end = window
    done = [r for r in records if r["kind"] == "transaction" and r.get("complete")
            and start <= r["end"] <= end]
    return len(done) / (end - start)


def counter_rates(before, after):
    """Drop and mark rates at the bottleneck from two `port_counters` readings.

    `packets` counts the packets the port admitted; arrivals = admitted + dropped."""
    delta = {key: after[key] - before[key] for key in after}
    drops = delta["early_drops"] + delta["forced_drops"]
    arrivals = delta["packets"] + drops
    return {
        "arrivals": arrivals, "packets": delta["packets"], "bytes": delta["bytes"],
        "early_marks": delta["early_marks"], "early_drops": delta["early_drops"],
        "forced_drops": delta["forced_drops"],
        "drop_rate": drops / arrivals if arrivals else 0.0,
        "mark_rate": delta["early_marks"] / arrivals if arrivals else 0.0,
    }


def utilisation(bytes_sent, rate_bps, seconds):
    return 8 * bytes_sent / (rate_bps * seconds)


def queue_summary(samples, rate_bps, period_packets=1, red=None):
    """The bottleneck queue from its telemetry samples (dicts with time_us,
    qdepth, avg), one per `period_packets` packets leaving the port.

    Samples are packet-sampled, so their plain mean is what departing packets
    saw (`qdepth_mean`), and their delay percentiles are those of packets:
    queueing delay = depth x MTU serialisation time (the data direction's
    packets are full-size). `qdepth_time_avg` weights each sample by the time
    to the next one (time_average). With `red` = (minth, maxth), `red_region`
    is the time the average spent below, in and above the RED region
    (red_region_fractions), kept so a run's folder needs no queue.csv for it."""
    if not samples:
        return {"samples": 0}
    depths = [s["qdepth"] for s in samples]
    mtu_s = MTU_BITS / rate_bps
    delays_ms = [1e3 * d * mtu_s for d in depths]
    summary = {"samples": len(samples), "qdepth_mean": statistics.fmean(depths),
               "qdepth_max": max(depths), "avg_mean": statistics.fmean(s["avg"] for s in samples),
               "qdepth_time_avg": time_average(samples, mtu_s, period_packets),
               "delay_ms_mean": statistics.fmean(delays_ms)}
    for q in PERCENTILES:
        summary[f"delay_ms_p{q}"] = percentile(delays_ms, q)
    if red is not None:
        summary["red_region"] = red_region_fractions(
            [(s["time_us"] / 1e6, s["avg"]) for s in samples], *red)
    return summary


def red_region_fractions(samples, minth, maxth):
    """Fractions of the samples' span the RED average spent below minth, in
    [minth, maxth] and above maxth, from (time, average) pairs; each average
    holds until the next sample (it changes only when a packet arrives).
    None without two samples."""
    spent = {"below": 0.0, "region": 0.0, "above": 0.0}
    for (t0, avg), (t1, _) in zip(samples, samples[1:]):
        zone = "below" if avg < minth else "above" if avg > maxth else "region"
        spent[zone] += t1 - t0
    total = sum(spent.values())
    return {zone: value / total for zone, value in spent.items()} if total > 0 else None


def time_average(samples, mtu_s, period_packets):
    """Time-weighted mean depth of packet-triggered samples (switch clock).

    A sample of depth q holds until the next sample, but at most for the time
    the port needs to send q + period_packets MTU packets: a queue that was
    not refilled is empty by then, so the rest of a longer gap counts as 0
    (an idle port sends no packets and so triggers no samples)."""
    times = [s["time_us"] / 1e6 for s in samples]
    span = times[-1] - times[0]
    if span <= 0:
        return float(samples[0]["qdepth"])
    area = sum(s["qdepth"] * min(t1 - t0, (s["qdepth"] + period_packets) * mtu_s)
               for s, t0, t1 in zip(samples, times, times[1:]))
    return area / span


def flow_tcp_stats(records):
    """{(workload, flow): sender-side totals} from the senders' tcp_info
    records, one per connection, each over the connection's whole life:
    retransmitted and sent data segments, segments acknowledged with ECE
    (tcpi_delivered_ce), mean smoothed RTT over connections, last cwnd, and
    DSACKs received and RTO expiries (None when a kernel or an older run did
    not record them)."""
    by_flow = defaultdict(list)
    for record in records:
        if record["kind"] == "tcp_info":
            by_flow[(record["workload"], record["flow"])].append(record)
    return {key: {"connections": len(infos),
                  "retransmits": sum(i["total_retrans"] for i in infos),
                  "data_segments": sum(i["data_segs_out"] for i in infos),
                  "ece_acked": sum(i["delivered_ce"] for i in infos),
                  "rtt_ms": statistics.fmean(i["rtt_us"] for i in infos) / 1e3,
                  "cwnd": infos[-1]["snd_cwnd"],
                  "dsack_dups": _total(infos, "dsack_dups"),
                  "rto_timeouts": _total(infos, "total_rto")}
            for key, infos in sorted(by_flow.items())}


def _total(infos, field):
    """Sum of a tcp_info field over connections, None if any lacks it."""
    values = [i.get(field) for i in infos]
    return None if None in values else sum(values)


def tcp_summary(flow_stats):
    """Per-workload means of flow_tcp_stats (empty when no sender logged any)."""
    if not flow_stats:
        return {}
    stats = list(flow_stats.values())
    segments = sum(s["data_segments"] for s in stats)
    return {"retransmits_per_flow": statistics.fmean(s["retransmits"] for s in stats),
            "retransmit_ratio": sum(s["retransmits"] for s in stats) / segments
            if segments else math.nan,
            "ece_acked_per_flow": statistics.fmean(s["ece_acked"] for s in stats),
            "rtt_ms": statistics.fmean(s["rtt_ms"] for s in stats)}


def workload_summary(records, window, workloads=()):
    """Per-workload goodput, fairness, delays, transactions/s and power; every
    name in `workloads` appears even if it recorded nothing."""
    goodputs = flow_goodputs(records, window)
    tcp = flow_tcp_stats(records)
    summary = {}
    for workload in sorted({key[0] for key in goodputs} | set(workloads)):
        mine = [r for r in records if r.get("workload") == workload]
        flows = [g for (w, _), g in goodputs.items() if w == workload]
        delays_kind = _delay_kind(mine)
        delays = delay_summary(transfer_delays(mine, delays_kind, window)) if delays_kind else {}
        aggregate = sum(flows)
        summary[workload] = {
            "flows": len(flows), "goodput_bps": aggregate,
            "goodput_per_flow_bps": aggregate / len(flows) if flows else math.nan,
            "jain_index": jain_index(flows), "delay_kind": delays_kind, "delay_s": delays,
            "transactions_per_s": transactions_per_second(mine, window),
            "incomplete_transfers": sum(_cut_off(r, window[1]) for r in mine
                                        if r.get("size", -1) != -1),
            "network_power": network_power(aggregate, delays.get("median")),
            **tcp_summary({k: v for k, v in tcp.items() if k[0] == workload}),
        }
    return summary


def _delay_kind(records):
    """What a workload's delay means: page delay for web pages, else transfer delay."""
    kinds = {r["kind"] for r in records if r.get("complete")}
    for kind in ("page", "transaction", "surge", "bulk"):
        if kind in kinds and not (kind == "bulk" and all(r.get("size") == -1 for r in records
                                                          if r["kind"] == "bulk")):
            return kind
    return None


def red_idle_periods(samples, rate_bps, wq_log, minth, min_seconds=0.1, rel_tol=0.02):
    """RED's average across each period in which arriving packets found the
    bottleneck queue empty, against classic RED (Floyd & Jacobson 1993).

    `samples` are the pipeline's telemetry (time_us = enqueue time of the last
    packet dequeued, qdepth = the queue it found, avg = RED's average after it),
    one per arriving packet. A period starts when the last packet of the busy
    queue (enqueued at t with q ahead) has been sent, t + (q + 1) s at line rate
    (s the MTU time at the rate). Classic RED multiplies the average by
    (1 - wq)^m at each arrival, m = the time the queue was empty / s, then
    weighs in q = 0. The first arrival is predicted from the busy sample (so
    its error includes the line-rate drain estimate), the later ones from the
    first arrival's observed average (only the pipeline's decay between
    observed arrivals). Per period (at least `min_seconds` to its last arrival):
    both errors, and the time from the period's start until the average is
    below minth: classic RED's (continuous between arrivals) and observed (the
    first arrival below minth, `resolution` after the previous one). `agrees`:
    the prediction lies within the observation's resolution widened by the
    time classic RED takes to decay by `rel_tol` (with no crossing seen:
    after the last arrival, by that margin)."""
    s_us = MTU_BITS / rate_bps * 1e6
    keep = 1 - 2.0 ** -wq_log
    tolerance_s = s_us / 1e6 * math.log1p(rel_tol) / -math.log(keep)
    rows = [s for s in samples if s["time_us"] > 0]
    periods = []
    for busy, empty in _empty_runs(rows):
        start_us = busy["time_us"] + (busy["qdepth"] + 1) * s_us
        length_s = (empty[-1]["time_us"] - start_us) / 1e6
        if length_s >= min_seconds and busy["avg"] > 0:
            periods.append(_idle_period(busy["avg"], start_us, empty, length_s, minth,
                                        ClassicRed(s_us, keep, minth), tolerance_s))
    return periods


def _empty_runs(rows):
    """(last sample with a queue, the consecutive empty-queue samples after it)."""
    i = 1
    while i < len(rows):
        if rows[i]["qdepth"] or rows[i - 1]["qdepth"] == 0:
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j]["qdepth"] == 0:
            j += 1
        yield rows[i - 1], rows[i:j]
        i = j


class ClassicRed:
    """Classic RED's average over arrivals to an empty queue, and when it
    falls below minth (decaying continuously between arrivals)."""

    def __init__(self, s_us, keep, minth):
        self.s_us, self.keep, self.minth = s_us, keep, minth

    def run(self, avg, empty_since_us, arrivals_us):
        """-> (average after each arrival, time it is first below minth)."""
        averages, below_us = [], None
        for t in arrivals_us:
            decayed = avg * self.keep ** (max(0.0, t - empty_since_us) / self.s_us)
            if below_us is None and decayed < self.minth:
                below_us = self._below_at(avg, empty_since_us)
            avg = decayed * self.keep
            if below_us is None and avg < self.minth:
                below_us = t
            averages.append(avg)
            empty_since_us = t + self.s_us
        if below_us is None:
            below_us = self._below_at(avg, empty_since_us)
        return averages, below_us

    def _below_at(self, avg, empty_since_us):
        if avg < self.minth:
            return empty_since_us
        return empty_since_us + self.s_us * math.log(self.minth / avg) / math.log(self.keep)


def _idle_period(avg0, start_us, empty, length_s, minth, classic, tolerance_s):
    times = [e["time_us"] for e in empty]
    [first], below_us = classic.run(avg0, start_us, times[:1])
    rest, later_us = classic.run(empty[0]["avg"], times[0] + classic.s_us, times[1:])
    if below_us > times[0]:
        below_us = later_us
    predicted = (below_us - start_us) / 1e6
    offsets = [(t - start_us) / 1e6 for t in times]
    crossing = next((i for i, e in enumerate(empty) if e["avg"] < minth), None)
    if crossing is None:
        observed = resolution = None
        agrees = predicted >= offsets[-1] - tolerance_s
    else:
        observed = offsets[crossing]
        resolution = observed - (offsets[crossing - 1] if crossing else 0.0)
        agrees = observed - resolution - tolerance_s <= predicted <= observed + tolerance_s
    end = rest[-1] if rest else first
    return {"start_us": start_us, "seconds": length_s, "arrivals": len(empty),
            "avg_start": avg0, "avg_first": empty[0]["avg"], "classic_first": first,
            "first_error": empty[0]["avg"] / first - 1,
            "avg_end": empty[-1]["avg"], "classic_end": end,
            "end_error": empty[-1]["avg"] / end - 1 if end else math.nan,
            "below_minth_predicted_s": predicted, "below_minth_observed_s": observed,
            "resolution_s": resolution, "agrees": agrees}
