"""TNA/T2NA front-end checks and the Tofino lint (issue 14).

`softswitch-p4c --arch tna|t2na` parses and type-checks a TNA program and runs
the `--target tofino|tofino2` lint (a clean program is then lowered to the
built-in target: test_tna_lower.py). The lint corpus (tofino_lint/) is data:
every reject/*.p4 marks the line the lint must name with `// LINT` (and no
other line may be named); every accept/*.p4 must pass. A first-line
`target: tofino2` selects T2NA.
"""
import json
import pathlib
import subprocess
import sys

import pytest

from softswitch_p4c.driver import check_tna_file, compile_to_objects
from softswitch_p4c.errors import CompileError

HERE = pathlib.Path(__file__).parent
CORPUS = HERE / "tofino_lint"
REJECT = sorted((CORPUS / "reject").glob("*.p4"))
ACCEPT = sorted((CORPUS / "accept").glob("*.p4"))
RED_TNA = HERE.parents[1] / "hw" / "tofino" / "red_ecn.p4"
P4C = pathlib.Path(sys.executable).parent / "softswitch-p4c"


def arch_of(path):
    first = path.read_text().splitlines()[0]
    return ("t2na", "tofino2") if "target: tofino2" in first else ("tna", "tofino")


def marked_line(path):
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1) if "// LINT" in text]
    assert len(lines) == 1, f"{path.name} must mark exactly one line with // LINT"
    return lines[0]


def test_corpus_has_the_promised_size():
    assert len(REJECT) >= 15 and len(ACCEPT) >= 10


@pytest.mark.parametrize("case", REJECT, ids=lambda p: p.stem)
def test_lint_rejects_at_the_marked_line(case):
    arch, target = arch_of(case)
    problems = check_tna_file(str(case), arch, target)
    assert problems, f"{case.name}: the lint accepted a program Tofino rejects"
    assert {(p.loc.file, p.loc.line) for p in problems} == {(str(case), marked_line(case))}, \
        [p.render() for p in problems]


@pytest.mark.parametrize("case", ACCEPT, ids=lambda p: p.stem)
def test_lint_accepts(case):
    arch, target = arch_of(case)
    assert [p.render() for p in check_tna_file(str(case), arch, target)] == []


def test_three_conditions_are_too_many_for_tofino1_only():
    case = CORPUS / "accept" / "t2na_three_conditions.p4"
    problems = check_tna_file(str(case), "tna", "tofino", defines=["ARCH_T2NA"])
    assert len(problems) == 1 and "at most 2" in problems[0].message


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_the_red_program_lints_clean_and_is_written_for_the_built_in_target(arch, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([str(P4C), "--arch", arch, str(RED_TNA), "-o", str(out),
                           "--p4runtime-files", str(out / "red_ecn.p4info.txtpb")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads((out / "red_ecn.json").read_text())["pipelines"]
    assert 'name: "MyEgress.red_pb"' in (out / "red_ecn.p4info.txtpb").read_text()


@pytest.mark.parametrize("old, new, line, words", [
    ("meta.red.pb = pb;", "meta.red.pb = (bit<16>) pb;", "meta.red.pb = (bit<16>) pb;",
     "type mismatch in assignment: expected bit<32>, got bit<16>"),
    ("hdr.ipv4.ecn = ECN_CE;", "hdr.ipv4.ecnx = ECN_CE;", "hdr.ipv4.ecnx", "no field or method 'ecnx' in header ipv4_t"),
    ("meta.red.rand = red_rng.get();", "meta.red.rand = red_rng.fetch();", "red_rng.fetch",
     "no method 'fetch'"),
    ("transition parse_ethernet;", "transition parse_eth;", "transition parse_eth;",
     "undeclared parser state 'parse_eth'"),
    ("in egress_intrinsic_metadata_t eg_intr_md,", "in ingress_intrinsic_metadata_t eg_intr_md,",
     "in ingress_intrinsic_metadata_t eg_intr_md,", "EgressT expects"),
    ("hdr.ipv4.ttl > 1", "hdr.ipv4.ttl + 1", "hdr.ipv4.ttl + 1",
     "right operand of '&&' must be bool, not bit<8>"),
    ("red_avg_lpf.execute(meta.red.q, eg_intr_md.egress_port)", "red_avg_lpf.execute(meta.red.q)",
     "red_avg_lpf.execute(meta.red.q)", "wrong number of arguments to 'execute': expected 2, got 1"),
    ("forced_drops.count(eg_intr_md.egress_port)", "forced_drops.count(hdr.ipv4.ecn)",
     "forced_drops.count(hdr.ipv4.ecn)", "argument 'index' of 'count' has type bit<2>, but"),
    ("            drop();\n        }\n        hdr.bridged.setValid();",
     "            drop(1);\n        }\n        hdr.bridged.setValid();", "drop(1);",
     "wrong number of arguments to 'drop': expected 0, got 1"),
])
def test_type_errors_name_their_line(tmp_path, old, new, line, words):
    text = RED_TNA.read_text()
    assert old in text
    bad = tmp_path / "red_ecn.p4"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(CompileError) as err:
        check_tna_file(str(bad), "tna", "tofino")
    want = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if line in t)
    assert err.value.loc.line == want and words in err.value.message, err.value.render()


def test_v1model_refuses_instance_initializers(tmp_path):
    prog = tmp_path / "p.p4"
    prog.write_text(RED_TNA.read_text())
    with pytest.raises(CompileError):
        compile_to_objects(str(prog))


def test_target_tofino_needs_a_tofino_arch():
    proc = subprocess.run([str(P4C), "--target", "tofino", str(RED_TNA)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith("--target tofino needs --arch tna or t2na")


def test_a_program_with_lint_problems_writes_nothing(tmp_path):
    bad = tmp_path / "red_ecn.p4"
    old = "                budget = budget - meta.red.pb;"
    assert old in RED_TNA.read_text()
    bad.write_text(RED_TNA.read_text().replace(old, "                budget = budget * meta.red.pb;"))
    proc = subprocess.run([str(P4C), "--arch", "tna", str(bad), "-o", str(tmp_path / "out"),
                           "--p4runtime-files", str(tmp_path / "p.txtpb")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and f"{bad}:" in proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "p.txtpb").exists()
