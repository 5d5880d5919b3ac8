"""The ECN rules of RED (RFC 3168 as DESIGN.md states them), with counters.

The queue is built by bursts into the bottleneck with wq = 1 (avg = q) and a
gentle curve whose probability is exactly 0 up to the depth maxth - 1 and
exactly 1 from maxth to 2 maxth - 1, so which frames RED selects is known
frame by frame and every rule is checked without chance.  minth lies
between two depths so that both programs pass depth 9: the TNA program's
p_b is constant on ranges, and the range starting at minth has p_b > 0.
"""
from redctl import RedConfig

from aqm import BOTTLENECK, CE, ECT0, ECT1, NOT_ECT, AqmTest, red_model, route_for
from redstats import burst_depths, selection_probabilities

BURST = 16
# avg = q; p_b = 0 at depth 9, p_b = 1 at depths 10..19, forced from 20.
CERTAIN = dict(minth=9.5, maxth=10, maxp=1.0, wq_log=0, gentle=True, mode="red")


def expected_selection(cfg, length=BURST):
    """Positions RED must select, when the model says each is certain."""
    probs, _forced = selection_probabilities(cfg, burst_depths(length), **red_model())
    assert all(p in (0.0, 1.0) for p in probs), "configuration is not deterministic"
    return [i for i, p in enumerate(probs) if p == 1.0]


class EcnChecks:
    """Reusable checks (broken.py runs them against broken programs)."""

    def check_codepoint(self, ecn_on, codepoint):
        cfg = RedConfig(ecn=ecn_on, **CERTAIN)
        self.ctl.set_red(BOTTLENECK, cfg)
        selected = expected_selection(cfg)
        dropping = codepoint == NOT_ECT or not ecn_on
        burst = self.burst(BURST, ecn=codepoint, counters=True,
                           expect=BURST - len(selected) if dropping else BURST)
        marks, drops = burst.counted["early_marks"], burst.counted["early_drops"]
        what = f"ECN {codepoint:02b} with ECN {'on' if ecn_on else 'off'}"
        burst.assert_intact(self, route_for(BOTTLENECK))
        if codepoint == CE:
            self.assertEqual(burst.missing(), [], f"{what}: CE frames were dropped")
            self.assertEqual(burst.with_ecn(CE), list(range(BURST)), f"{what}: CE must stay CE")
        elif ecn_on and codepoint != NOT_ECT:
            self.assertEqual(burst.missing(), [], f"{what}: ECT frames must not be dropped")
            self.assertEqual(burst.changed(), selected, f"{what}: wrong frames marked")
            self.assertEqual(burst.with_ecn(CE), selected, f"{what}: marks must be CE")
        else:
            self.assertEqual(burst.changed(), [], f"{what}: frames must not be marked")
            self.assertEqual(burst.missing(), selected, f"{what}: wrong frames dropped")
        self.assertEqual(marks, len(burst.changed()) + (len(selected) if codepoint == CE else 0),
                         f"{what}: early_marks counter differs from the wire")
        self.assertEqual(drops, len(burst.missing()), f"{what}: early_drops counter differs")
        self.assertEqual(burst.counted["forced_drops"], 0)
        self.assertEqual(burst.counted["packets"], len(burst.arrived), "port_tx counter")

    def check_ecn_rules(self):
        for codepoint in (ECT0, ECT1, CE, NOT_ECT):
            self.check_codepoint(True, codepoint)
        self.check_codepoint(False, ECT0)


class EcnRules(AqmTest, EcnChecks):
    """ECT(0)/ECT(1) selected -> CE and forwarded; CE stays CE; Not-ECT
    selected -> dropped; a port with ECN off drops ECT frames instead of
    marking; the RED counters equal what the wire shows."""

    def runTest(self):
        self.check_ecn_rules()
