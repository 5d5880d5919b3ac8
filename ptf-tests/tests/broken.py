"""The suite catches broken RED programs.

Each variant is a copy of p4src/red_ecn.p4 (ARCH=tna: hw/tofino/red_ecn.p4)
with one deliberate defect, compiled at test time with the target's compiler
and pushed over P4Runtime;
the suite's own checks (the same functions the other tests run on the real
program) must fail on it.
"""
import shutil
import tempfile
from pathlib import Path

from aqm import NOT_ECT, AqmTest, arch, compile_program, param
from ecn import EcnChecks
from probability import CLASSIC, ProbabilityChecks

MAXP_DOUBLED = "maxp doubled (p_b twice RED's between the thresholds)"
NOT_ECT_MARKED = "Not-ECT packets marked instead of dropped"
# arch -> name -> (text in red_ecn.p4, its broken replacement)
VARIANTS = {
    "v1model": {
        MAXP_DOUBLED: ("* (bit<64>) meta.red.slope)", "* ((bit<64>) meta.red.slope << 1))"),
        NOT_ECT_MARKED: ("hdr.ipv4.ecn != ECN_NOT_ECT", "true"),
    },
    "tna": {        # the ranges' p_b are linear in maxp: doubling set_pb's is doubling maxp
        MAXP_DOUBLED: ("meta.red.pb = pb;", "meta.red.pb = pb << 1;"),
        NOT_ECT_MARKED: ("hdr.ipv4.ecn != ECN_NOT_ECT", "true"),
    },
}
# Positions of the classic probability test that the doubled curve pushes out
# of their bands at 100 bursts: at least this many, so the catch is the
# defect's doing and not one stray position.
MIN_POSITIONS_OUT = 3


def build_variant(workdir, original, broken):
    """Copy the program (v1model: p4src/ with its includes) into workdir, apply
    the defect, compile; (p4info, json)."""
    if arch() == "v1model":
        copy = Path(workdir) / "p4src"
        shutil.copytree(Path(param("p4src")), copy)
        program = copy / "red_ecn.p4"
    else:
        program = Path(workdir) / "red_ecn.p4"
        shutil.copy(param("tna_program"), program)
    text = program.read_text()
    if text.count(original) != 1:
        raise RuntimeError(f"red_ecn.p4 changed: {original!r} must occur exactly once")
    program.write_text(text.replace(original, broken))
    out = Path(workdir) / "build"
    out.mkdir()
    return compile_program(program, out)


class BrokenVariantsAreCaught(AqmTest, EcnChecks, ProbabilityChecks):
    """maxp doubled in the data plane puts >= 3 positions of the classic
    marking-probability check out of their bands (500 of 500 simulated runs
    with 100 bursts, unit/test_redstats.py); marking Not-ECT frames fails the ECN-rules check
    for Not-ECT (deterministic).  The unmodified program passes both checks
    in probability.py and ecn.py."""

    def runTest(self):
        self.push_variant(MAXP_DOUBLED)
        problems, marks, _probs = self.marking_problems(*CLASSIC, bursts=100)
        self.assertGreaterEqual(len(problems), MIN_POSITIONS_OUT,
                                f"suite missed: {MAXP_DOUBLED} (marks {marks})")
        self.push_variant(NOT_ECT_MARKED)
        with self.assertRaisesRegex(AssertionError, "must not be marked",
                                    msg=f"suite missed: {NOT_ECT_MARKED}"):
            self.check_codepoint(True, NOT_ECT)

    def push_variant(self, name):
        original, broken = VARIANTS[arch()][name]
        with tempfile.TemporaryDirectory(prefix="pt-broken-") as workdir:
            p4info, json_path = build_variant(workdir, original, broken)
            self.push_pipeline(json_path, p4info)
