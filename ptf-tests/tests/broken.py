"""The suite catches broken RED programs.

Each variant is a copy of p4src/red_ecn.p4 with one deliberate defect,
compiled at test time with the target's compiler and pushed over P4Runtime;
the suite's own checks (the same functions the other tests run on the real
program) must fail on it.
"""
import shutil
import tempfile
from pathlib import Path

from aqm import AqmTest, compile_program, param
from ecn import EcnChecks
from probability import CLASSIC, ProbabilityChecks

# name -> (text in red_ecn.p4, its broken replacement, check that must fail)
VARIANTS = {
    "maxp doubled (p_b twice RED's between the thresholds)": (
        "* (bit<64>) meta.red.slope)", "* ((bit<64>) meta.red.slope << 1))",
        lambda test: test.check_marking_probability(*CLASSIC, bursts=100)),
    "Not-ECT packets marked instead of dropped": (
        "hdr.ipv4.ecn != ECN_NOT_ECT", "true",
        lambda test: test.check_ecn_rules()),
}


def build_variant(workdir, original, broken):
    """Copy p4src/ into workdir, apply the defect, compile; (p4info, json)."""
    source_dir = Path(param("p4src"))
    copy = Path(workdir) / "p4src"
    shutil.copytree(source_dir, copy)
    program = copy / "red_ecn.p4"
    text = program.read_text()
    if text.count(original) != 1:
        raise RuntimeError(f"red_ecn.p4 changed: {original!r} must occur exactly once")
    program.write_text(text.replace(original, broken))
    out = Path(workdir) / "build"
    out.mkdir()
    return compile_program(program, out)


class BrokenVariantsAreCaught(AqmTest, EcnChecks, ProbabilityChecks):
    """maxp doubled in the data plane fails the marking-probability check
    (power > 1 - 1e-9 with 100 bursts); marking Not-ECT frames fails the
    ECN-rules check (deterministic).  The unmodified program passes both
    checks in probability.py and ecn.py."""

    def runTest(self):
        for name, (original, broken, check) in VARIANTS.items():
            with tempfile.TemporaryDirectory(prefix="pt-broken-") as workdir:
                p4info, json_path = build_variant(workdir, original, broken)
                self.push_pipeline(json_path, p4info)
                with self.assertRaises(AssertionError, msg=f"suite missed: {name}"):
                    check(self)
