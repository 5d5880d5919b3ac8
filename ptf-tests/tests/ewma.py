"""The average: EWMA convergence for wq = 2^-k and idle-time decay.

Both are observed on the wire through the forced-drop threshold: with
classic RED, minth = T and maxth = T + 1 (maxp tiny), a frame is dropped
exactly when the average it produced is >= T + 1, so the first dropped frame
of a burst tells where the average crossed T + 1.  The prediction is
the recursion avg <- (1 - wq) avg + wq q over the known burst depths.

Against the TNA program (ARCH=tna) the average is its Lpf with time constant
tau = s / wq (p4src/README.md "TNA profile"), sampled at each frame's
dequeue over the depths in cells; the predictions come from its model
(redstats.lpf_averages, redctl.redmodel.lpf_sample).  The built-in target's
dequeue times are exact to the microsecond it rounds them to, so a
prediction is the set of answers for frame gaps of tx - 1 .. tx + 1 us.
"""
import logging
import time

import numpy as np

from redctl import RedConfig, redmodel
from redctl.convert import AVG_ONE, tna_cells, tna_fixed, to_constants, to_tna_constants

from aqm import (BOTTLENECK, CE, DST, ECT0, SENDER, AqmTest, arch, ecn_of, param, seq_of,
                 tx_time_s, udp)
from redstats import (burst_depths, ewma, first_index_at_or_above, fixed_point_ewma,
                      idle_decay_factor, lpf_averages)

IDLE_ATTEMPTS = 10
# Slack around a send window for the built-in target's receive stamp (us rounding, clock reads).
STAMP_MARGIN_S = 0.0005
FRAME = 400          # 8 ms per frame at the bottleneck: long bursts stay clean
MAXP = 0.001         # early marks are rare and harmless (ECT frames are kept)


def threshold_config(level, wq_log):
    return RedConfig(minth=level - 1, maxth=level, maxp=MAXP, wq_log=wq_log)


class EwmaChecks:
    def first_drop(self, length, predicted, reset=None):
        burst = self.burst(length, ecn=ECT0, frame_len=FRAME, expect=predicted, reset=reset)
        missing = burst.missing()
        if missing:
            self.assertEqual(missing, list(range(missing[0], length)),
                             "the average rises through the burst: all later frames drop")
        return missing[0] if missing else None


class EwmaConvergence(AqmTest, EwmaChecks):
    """For wq = 2^-2, 2^-4, 2^-6 and two levels, the first frame dropped in
    a long burst is the one whose average, by the recursion, first reaches
    maxth (the integer recursion of p4src/README.md, or the real-valued one:
    they agree here).  Neighbouring k would move it by 2 to 16 frames.
    Deterministic: no random draw decides a forced drop."""

    def runTest(self):
        for wq_log in (2, 4, 6):
            for level in (6, 11):
                cfg = threshold_config(level, wq_log)
                self.fresh_red(cfg)
                predicted = self.predicted_first_drop(cfg, burst_depths(80))
                observed = self.first_drop(max(predicted) + 8, min(predicted),
                                           reset=lambda: self.fresh_red(cfg))
                self.assertIn(observed, predicted, f"wq = 2^-{wq_log}, maxth {level}")

    def predicted_first_drop(self, cfg, depths):
        """Indices where the average first reaches maxth: the integer and the
        real-valued recursion (v1model), the Lpf for gaps of tx -/+ 1 us (TNA)."""
        if arch() == "v1model":
            return {first_index_at_or_above(ewma(depths, cfg.wq_log), cfg.maxth),
                    first_index_at_or_above(fixed_point_ewma(depths, cfg.wq_log), cfg.maxth)}
        c = to_tna_constants(cfg, self.ctl.port_spec(BOTTLENECK))
        depth_cells = [d * tna_cells(FRAME) for d in depths]
        tx_us = round(tx_time_s(FRAME) * 1e6)
        return {first_index_at_or_above(lpf_averages(depth_cells, dt, c.lpf_tau_ns),
                                        tna_fixed(cfg.maxth, c.cells_per_packet))
                for dt in (tx_us - 1, tx_us, tx_us + 1)}


class IdleDecay(AqmTest):
    """After the queue empties, the average decays as if m small packets had
    been sent, m = idle time / typical transmission time (20 ms here).

    A burst leaves the average at A = 15.37 (by the recursion).  Gentle RED
    with maxp = 1, minth = 7, maxth = 8 marks a lone probe frame exactly when
    its average is >= 8 and passes it below 7.  After ~20 ms and ~85 ms of
    idle the probe must be marked; after 200 ms and 600 ms it must not be.
    The prediction is classic RED's (1 - wq)^m and the program's integer
    decay with the controller's table (redctl.redmodel), which agree within
    1.2 %; a probe is only judged where both give the same answer.

    The 85 ms probe catches the shift-only decay this replaced (issue 17):
    avg >>= round(m * -log2(1 - wq)) halved the average from 72 ms on, so at
    85 ms it gave 6.72 (no mark) where RED gives 8.7 (a mark).  The exact
    decay keeps the average >= 8 until ~97 ms.

    TNA: the Lpf's e^(-t/tau) (tau = s/wq, s = 2 ms: the suite's frame is the
    port's mean packet there) with wq = 2^-8 and a 27-frame build (400 B
    frames and their 6-byte bridged header: 6 cells each), which leaves 26.8
    cells (13.4 mean packets of 2 cells) and decays below maxth (16 cells) at
    ~265 ms and below minth at ~333 ms: probes after 20 and 200 ms must be
    marked, after 400 and 800 ms not; an Lpf without idle decay fails the
    last two, one decaying with tau/2 the 200 ms probe.

    The probe is sent on a timer started by the build's send, never by its
    collection.  Its idle time is bracketed: on the built-in target by the
    send windows (it stamps frames inside the send call and serialises in
    virtual time from the stamps: sub-millisecond brackets however busy the
    host), elsewhere by the line-rate schedule and the arrivals; a probe whose
    bracket spans a point where the prediction changes is repeated.
    Deterministic: no random draw decides.
    """

    CFG = {"v1model": RedConfig(minth=7, maxth=8, maxp=1.0, wq_log=3, gentle=True),
           "tna": RedConfig(minth=7, maxth=8, maxp=1.0, wq_log=8, gentle=True)}
    BUILD = {"v1model": 24, "tna": 27}
    PROBES = {"v1model": ((0.02, True), (0.085, True), (0.2, False), (0.6, False)),
              "tna": ((0.02, True), (0.2, True), (0.4, False), (0.8, False))}

    def runTest(self):
        self.cfg, self.build_len = self.CFG[arch()], self.BUILD[arch()]
        # the controller's typical frame time for the bottleneck (20 ms; TNA: 2 ms)
        self.tx_us = self.ctl.port_spec(BOTTLENECK).tx_time_us
        avg_after = self.average_after_build()
        for idle_target_s, expect_mark in self.PROBES[arch()]:
            self.assertEqual(self.probe_after_idle(avg_after, idle_target_s), expect_mark,
                             f"probe after ~{idle_target_s * 1e3:.0f} ms idle, avg was {avg_after:.2f}")

    def average_after_build(self):
        """The average the build burst leaves (packets; TNA: cells * 2^8), checked to stay
        below 2 maxth so the build drops nothing."""
        depths = burst_depths(self.build_len)
        if arch() == "v1model":
            avgs = ewma(depths, self.cfg.wq_log)
            self.assertLess(max(avgs), 2 * self.cfg.maxth, "set-up: the build burst must not drop")
            return avgs[-1]
        c = to_tna_constants(self.cfg, self.ctl.port_spec(BOTTLENECK))
        avgs = lpf_averages([d * tna_cells(FRAME) for d in depths],
                            round(tx_time_s(FRAME) * 1e6), c.lpf_tau_ns)
        self.assertLess(max(avgs), tna_fixed(2 * self.cfg.maxth, c.cells_per_packet),
                        "set-up: the build burst must not drop")
        return avgs[-1]

    def probe_after_idle(self, avg_after, idle_target_s):
        """Marked-or-not of a probe sent ``idle_target_s`` after the queue
        emptied.  Every probe must match the prediction for its measured idle
        time; only one that went out on time (within 15 ms) and away from a
        decision boundary answers for the target.

        The probe is timed from the build's send, not from its collection: a
        busy host delays what the test receives by tens of milliseconds, which
        must not delay the probe."""
        build_len, tx = self.build_len, tx_time_s(FRAME)
        sent = [udp(DST[BOTTLENECK], ecn=ECT0, seq=i, length=FRAME) for i in range(build_len + 1)]
        for _attempt in range(IDLE_ATTEMPTS):
            self.fresh_red(self.cfg)
            build_sent, took = self.send_frames(SENDER, sent[:build_len])
            if took < 0.8 * tx:   # else the depths are unknown: drain and start again
                schedule = build_sent[1] + (build_len - 1) * tx
                time.sleep(max(0.0, schedule + idle_target_s - time.time()))
                probe_sent, _ = self.send_frames(SENDER, sent[build_len:])
            probed = took < 0.8 * tx
            frames = self.collect_burst(BOTTLENECK, deadline=time.monotonic() + build_len * tx,
                                        quiet_s=0.05, expect=build_len + probed)
            if not probed:
                logging.info("idle build resent: sending took %.2f ms", took * 1e3)
                continue
            arrived = {seq_of(f): (f, t) for f, t in frames}
            self.assertEqual(sorted(arrived), list(range(build_len + 1)),
                             "build burst and probe (a probe below 2 maxth is never dropped)")
            build_arrival = max(arrived[i][1] for i in range(build_len))
            first_out, last_out = self.last_departure(build_sent, build_arrival)
            shortest, longest = self.idle_bracket_us(first_out, last_out, probe_sent,
                                                     arrived[build_len][1])
            logging.info("idle probe: bracket %.2f..%.2f ms (departure uncertainty %.2f ms)",
                         shortest / 1e3, longest / 1e3, (last_out - first_out) * 1e3)
            outcomes = {self.predicted_mark(avg_after, t)
                        for t in np.linspace(shortest, longest, 16)}
            if len(outcomes) != 1 or None in outcomes:
                continue
            predicted = outcomes.pop()
            self.assertEqual(ecn_of(arrived[build_len][0]) == CE, predicted,
                             f"idle {(shortest + longest) / 2e3:.1f} ms: expected "
                             f"{'a mark' if predicted else 'no mark'}")
            if shortest / 1e6 - idle_target_s < 0.015:
                return predicted
        raise AssertionError(f"no probe went out on time ({idle_target_s * 1e3:.0f} ms) "
                             "away from a decision boundary: host too busy")

    def last_departure(self, build_sent, build_arrival):
        """Earliest and latest wall time the build's last frame can have left the queue.

        The built-in target stamps a frame inside the send call that puts it on
        the veth and serialises in virtual time from those stamps: the last frame
        leaves exactly n - 1 frame times after the first one's send window.  On
        another target (BMv2) it left between that schedule and its arrival here."""
        schedule = (self.build_len - 1) * tx_time_s(FRAME)
        earliest = build_sent[0] + schedule
        if param("target") == "softswitch":
            return earliest - STAMP_MARGIN_S, build_sent[1] + schedule + STAMP_MARGIN_S
        return earliest, max(earliest, build_arrival)

    def idle_bracket_us(self, first_out, last_out, probe_sent, probe_arrival):
        """Shortest and longest idle time the probe can have seen, in us: from
        the build's departure window to the probe's arrival at the queue (within
        its send window on the built-in target; by its arrival here elsewhere)."""
        if param("target") == "softswitch":
            arrived_from, arrived_by = probe_sent[0] - STAMP_MARGIN_S, probe_sent[1] + STAMP_MARGIN_S
        else:
            arrived_from, arrived_by = probe_sent[0], probe_arrival
        return (arrived_from - last_out) * 1e6, (arrived_by - first_out) * 1e6

    def predicted_mark(self, avg, idle_us):
        """True/False when the predictions agree, else None.  v1model: classic RED
        and the program's integer decay; TNA: the Lpf's sample after idle_us."""
        spec = self.ctl.port_spec(BOTTLENECK)
        if arch() == "tna":
            c = to_tna_constants(self.cfg, spec)
            decayed = redmodel.lpf_sample(avg, 0, int(idle_us), c.lpf_tau_ns)
            return marked_for_certain(self.cfg, decayed / (c.cells_per_packet << 8))
        constants = to_constants(self.cfg, spec)
        avg_fixed = round(avg * AVG_ONE)
        decayed = redmodel.decayed(constants, avg_fixed, redmodel.idle_bucket(constants, int(idle_us)))
        program = redmodel.ewma(decayed, 0, self.cfg.wq_log) / AVG_ONE
        exact = avg * idle_decay_factor(idle_us, self.tx_us, self.cfg.wq_log) * (1 - 2.0 ** -self.cfg.wq_log)
        verdicts = {marked_for_certain(self.cfg, v) for v in (program, exact)}
        return verdicts.pop() if len(verdicts) == 1 else None


def marked_for_certain(cfg, avg):
    """True: p_b = 1 (maxp = 1, gentle region); False: below minth; None: chance."""
    if cfg.maxth <= avg < 2 * cfg.maxth:
        return True
    return False if avg < cfg.minth else None
