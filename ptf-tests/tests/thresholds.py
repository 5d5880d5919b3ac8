"""Below minth, above maxth (classic and gentle) and drop-tail, with counters.

Bursts into the bottleneck with wq = 1 (avg = q) give every frame a known
average, so each region of the RED curve is checked frame by frame.
"""
from redctl import RedConfig

from aqm import BOTTLENECK, CE, ECT0, NOT_ECT, AqmTest, param, red_model, route_for, tx_time_s
from redstats import burst_depths, selection_probabilities


def regions(cfg, length):
    """(forced positions, early positions that must be selected, positions
    that may be selected) for a burst of ``length`` under ``cfg``."""
    probs, forced = selection_probabilities(cfg, burst_depths(length), **red_model())
    must = [i for i, p in enumerate(probs) if p == 1.0 and not forced[i]]
    may = [i for i, p in enumerate(probs) if 0.0 < p < 1.0]
    return [i for i, f in enumerate(forced) if f], must, may


class NothingBelowMinth(AqmTest):
    """With the average below minth nothing is marked or dropped, for ECT
    and Not-ECT frames, and the RED counters stay at zero."""

    def runTest(self):
        self.ctl.set_red(BOTTLENECK, RedConfig(minth=20, maxth=40, maxp=1.0, wq_log=0))
        for codepoint in (ECT0, NOT_ECT):
            burst = self.burst(16, ecn=codepoint, counters=True, expect=16)
            self.assertEqual(burst.missing(), [])
            self.assertEqual(burst.changed(), [])
            burst.assert_intact(self, route_for(BOTTLENECK))
            counted = burst.counted
            self.assertEqual((counted["early_marks"], counted["early_drops"],
                              counted["forced_drops"]), (0, 0, 0))
            self.assertEqual(counted["packets"], 16)


class AboveMaxth(AqmTest):
    """Classic: avg >= maxth drops every frame, ECT ones too.  Gentle: from
    maxth to 2 maxth p_b rises from maxp (here 1: every ECT frame is marked,
    none dropped), from 2 maxth every frame is dropped.  forced_drops and
    early_marks equal what the wire shows."""

    def runTest(self):
        for gentle in (False, True):
            cfg = RedConfig(minth=3, maxth=6, maxp=1.0, wq_log=0, gentle=gentle)
            self.ctl.set_red(BOTTLENECK, cfg)
            forced, must, may = regions(cfg, 16)
            self.assertTrue(forced, "configuration must reach the forced region")
            burst = self.burst(16, ecn=ECT0, counters=True, expect=16 - len(forced))
            counted = burst.counted
            mode = "gentle" if gentle else "classic"
            self.assertEqual(burst.missing(), forced, f"{mode}: forced drops")
            marked = burst.with_ecn(CE)
            self.assertTrue(set(must) <= set(marked) <= set(must) | set(may),
                            f"{mode}: marked {marked}, must {must}, may {may}")
            self.assertEqual(counted["forced_drops"], len(forced))
            self.assertEqual(counted["early_marks"], len(marked))
            self.assertEqual(counted["early_drops"], 0)
            burst.assert_intact(self, route_for(BOTTLENECK))


class DropTail(AqmTest):
    """Drop-tail (mode droptail, and the default of a port without RED
    configuration): no marks, no early drops, only the full buffer drops the
    tail of a burst; port_tx counts exactly the frames that left."""

    FRAME = 1000     # 20 ms per frame at the bottleneck

    def runTest(self):
        buffer = int(param("bottleneck_buffer"))
        for configure in (False, True):
            if configure:
                self.ctl.set_red(BOTTLENECK, RedConfig(minth=1, maxth=2, maxp=1.0,
                                                       wq_log=0, mode="droptail"))
            burst = self.burst(buffer + 10, ecn=ECT0, frame_len=self.FRAME, max_send_s=0.2,
                               counters=True, expect=buffer + 1)
            counted = burst.counted
            arrived = sorted(burst.arrived)
            self.assertEqual(arrived, list(range(len(arrived))), "drop-tail keeps a prefix")
            # the head frame leaves at once and the queue holds `buffer` more;
            # frames that left while the burst was being sent made room
            left_meanwhile = int(burst.took / tx_time_s(self.FRAME)) + 2
            self.assertTrue(buffer + 1 <= len(arrived) <= buffer + 1 + left_meanwhile,
                            f"{len(arrived)} frames passed a {buffer}-frame buffer")
            self.assertEqual(burst.changed(), [])
            self.assertEqual((counted["early_marks"], counted["early_drops"],
                              counted["forced_drops"]), (0, 0, 0))
            self.assertEqual(counted["packets"], len(arrived))
            self.assertEqual(counted["bytes"], sum(len(f) for f in burst.arrived.values()))
