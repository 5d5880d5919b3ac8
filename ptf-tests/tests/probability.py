"""Marking probability per queue depth against RED's count-based p_a.

Method: wq = 1 makes the average equal the queue the frame saw; bursts into
the idle, rate-limited bottleneck give frame i the depth i - 1.  Every burst
starts below minth (count = 0, a fresh random draw), so bursts are
independent and the number of bursts in which frame i is marked is
Binomial(bursts, P_i), where P_i is the exact selection probability of the
specification's count law (redstats.selection_probabilities: uniform spacing,
p_a = p_b / (1 - count p_b)).  Each position must fall in its binomial band;
the bands are Bonferroni-corrected to a joint 99% level.  Against the TNA
program (ARCH=tna) P_i follows its profile: p_b per red_pb range and the
budget form of the count law (redstats.selection_probabilities).
"""
from redctl import RedConfig

from aqm import BOTTLENECK, CE, ECT0, AqmTest, red_model
from redstats import burst_depths, check_marked_fractions, selection_probabilities

BURSTS = 200
CLASSIC = (RedConfig(minth=2, maxth=14, maxp=0.3, wq_log=0), 14)
GENTLE = (RedConfig(minth=2, maxth=8, maxp=0.2, wq_log=0, gentle=True), 16)


class ProbabilityChecks:
    """Reusable check (broken.py runs it against a broken program)."""

    def check_marking_probability(self, cfg, length, bursts=BURSTS):
        problems, marks, probs = self.marking_problems(cfg, length, bursts)
        self.assertEqual(problems, [], f"{cfg}: marks per position {marks} "
                         f"vs expected {[round(p * bursts, 1) for p in probs]}")

    def marking_problems(self, cfg, length, bursts):
        """(positions outside their band, marks per position, P_i)."""
        self.ctl.set_red(BOTTLENECK, cfg)
        probs, forced = selection_probabilities(cfg, burst_depths(length), **red_model())
        assert not any(forced), "keep the probability bursts out of the forced region"
        marks = [0] * length
        for _ in range(bursts):
            burst = self.burst(length, ecn=ECT0, expect=length)
            self.assertEqual(burst.missing(), [], "ECT frames must be marked, not dropped")
            for i in burst.with_ecn(CE):
                marks[i] += 1
        return check_marked_fractions(marks, bursts, probs, confidence=0.99), marks, probs


class MarkingProbabilityClassic(AqmTest, ProbabilityChecks):
    """Classic curve, depths 0..12 with minth 2, maxth 14, maxp 0.3.

    A correct switch fails with probability <= 1% (joint 99% band,
    Bonferroni); the softswitch runs with a fixed --seed.  Power (simulated
    in unit/test_redstats.py): doubling maxp is rejected in every simulated
    run, even at 100 bursts.  A frame at depth minth has p_b = 0, so any
    error in the queue depth the switch reports shows up as a mark there.
    """

    def runTest(self):
        self.check_marking_probability(*CLASSIC)


class MarkingProbabilityGentle(AqmTest, ProbabilityChecks):
    """Gentle curve, depths 0..14 with minth 2, maxth 8, maxp 0.2: the
    region maxth..2 maxth where p_b rises from maxp to 1.  Same <= 1%
    false-failure bound as the classic test."""

    def runTest(self):
        self.check_marking_probability(*GENTLE)
