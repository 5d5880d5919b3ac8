"""Live RED parameter changes, with unrelated traffic flowing meanwhile."""
import threading
import time

from redctl import RedConfig

from aqm import (BOTTLENECK, CE, DST, ECT0, FAST, SENDER, AqmTest, ecn_of, forwarded,
                 route_for, seq_of, udp)
from ecn import CERTAIN, expected_selection

STREAM_FRAMES = 300
STREAM_GAP_S = 0.002
DROPTAIL = RedConfig(minth=1, maxth=2, maxp=1.0, wq_log=0, mode="droptail")


class Stream(threading.Thread):
    """Frames to the fast port at a steady pace, from a second thread."""

    def __init__(self, test):
        super().__init__(daemon=True)
        self.test = test
        self.frames = [bytes(udp(DST[FAST], ecn=ECT0, seq=i)) for i in range(STREAM_FRAMES)]

    def run(self):
        for frame in self.frames:
            self.test.dataplane.send(0, SENDER, frame)
            time.sleep(STREAM_GAP_S)


class LiveParameterChange(AqmTest):
    """Each set_red on the bottleneck takes effect on the very next burst
    (drop-tail -> RED with ECN -> RED without ECN -> drop-tail), while a
    stream to the fast port (its own RED configuration, queue always empty)
    arrives complete, in order and unmarked; the fast port's configuration
    and counters are untouched by the changes."""

    def runTest(self):
        fast_cfg = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9)
        self.ctl.set_red(FAST, fast_cfg)
        installed = self.ctl.get_red(FAST)
        steps = (DROPTAIL, RedConfig(ecn=True, **CERTAIN), RedConfig(ecn=False, **CERTAIN),
                 DROPTAIL)
        stream = Stream(self)
        stream.start()
        try:
            for cfg in steps:
                self.ctl.set_red(BOTTLENECK, cfg)
                self.check_burst(cfg)
        finally:
            stream.join()
        self.check_stream()
        self.assertEqual(self.ctl.get_red(FAST), installed)

    def check_burst(self, cfg):
        selected = expected_selection(cfg) if cfg.mode == "red" else []
        burst = self.burst(16, ecn=ECT0, expect=16 if cfg.ecn else 16 - len(selected))
        label = f"after set_red({cfg})"
        if cfg.ecn:
            self.assertEqual(burst.missing(), [], label)
            self.assertEqual(burst.with_ecn(CE), selected, label)
        else:
            self.assertEqual(burst.missing(), selected, label)
            self.assertEqual(burst.changed(), [], label)

    def check_stream(self):
        frames = self.receive_all(FAST, quiet_s=0.3)
        self.assertEqual([seq_of(f) for f in frames], list(range(STREAM_FRAMES)),
                         "stream frames lost or reordered")
        self.assertTrue(all(ecn_of(f) == ECT0 for f in frames), "stream frames were marked")
        self.assertEqual(self.receive_all(BOTTLENECK, quiet_s=0.05), [], "stray frames")
        route = route_for(FAST)
        for seq, frame in enumerate(frames):
            self.assertEqual(frame, bytes(forwarded(udp(DST[FAST], ecn=ECT0, seq=seq), route)))
        counted = self.ctl.port_counters(FAST)
        self.assertEqual((counted["packets"], counted["early_marks"], counted["early_drops"],
                          counted["forced_drops"]), (STREAM_FRAMES, 0, 0, 0))

