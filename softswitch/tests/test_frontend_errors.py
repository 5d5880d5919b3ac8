"""Bad P4 gets exactly one `file:line:col: error: message` line and a non-zero exit.

Unsupported-but-valid constructs fail loudly with their name and location, and
no input (including random corruptions of a valid program) produces a traceback.
"""
import random
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softswitch_p4c.cli import main
from softswitch_p4c.driver import compile_to_objects
from softswitch_p4c.errors import CompileError
from test_frontend_lowering import program

ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$")
WARNING_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): warning: (?P<msg>.+)$")


def compile_error(tmp_path, source, capsys, name="bad.p4"):
    path = tmp_path / name
    path.write_text(source)
    rc = main([str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc != 0
    assert len(lines) == 1, err
    m = ERROR_LINE.match(lines[0])
    assert m, lines[0]
    assert "Traceback" not in err and "internal compiler error" not in err
    assert not (tmp_path / "out" / (name[:-3] + ".json")).exists()
    return int(m["line"]), int(m["col"]), m["msg"], m["file"]


def line_of(source, needle):
    for i, text in enumerate(source.splitlines(), 1):
        if needle in text:
            return i, text.index(needle) + 1
    raise AssertionError(needle)


CASES = [
    # (description, program kwargs, text at the error position, words in the message)
    ("undeclared variable", dict(apply="meta.m8 = nosuch;"), "nosuch", "undeclared"),
    ("width mismatch", dict(apply="meta.m8 = hdr.ipv4.srcAddr;"), "meta.m8 =", "bit<32>"),
    ("bad argument count", dict(ingress="action a(bit<8> x) { meta.m8 = x; }",
                                apply="a(1, 2);"), "a(1, 2)", "arguments"),
    ("implementation not a profile", dict(ingress="""
        action a() { }
        register<bit<8>>(4) r;
        table t { key = { meta.m8: exact; } actions = { a; }
                  implementation = r; }""",
                             apply="t.apply();"), "implementation", "action_profile"),
    ("table applied twice", dict(ingress="""
        action a() { }
        table t { key = { meta.m8: exact; } actions = { a; } }""",
                                 apply="t.apply();\n t.apply(); /* twice */"), "t.apply(); /* twice */",
     "more than once"),
    ("switch on a bool", dict(apply="switch (meta.m8 == 1) { true: { } }"), "meta.m8 == 1",
     "switch expression"),
    ("two varbit fields", dict(decls="header opt_t { varbit<32> a; varbit<32> b; }",
                               headers="ethernet_t ethernet; ipv4_t ipv4; opt_t opt;"), "varbit<32> b",
     "varbit"),
    ("varbit extract without length", dict(
        decls="header opt_t { varbit<320> options; }",
        headers="ethernet_t ethernet; ipv4_t ipv4; opt_t opt;",
        states="state start { pkt.extract(hdr.opt); transition accept; }"),
     "pkt.extract(hdr.opt)", "length"),
    ("division at run time", dict(apply="meta.m8 = meta.m8 / 3;"), "meta.m8 / 3", "division"),
    ("missing semicolon", dict(apply="meta.m8 = 1 meta.m16 = 2;"), "meta.m16", "expected"),
    ("non-bool condition", dict(apply="if (meta.m8) { }"), "meta.m8)", "bool"),
    ("assignment to in parameter", dict(deparse="hdr.ethernet.etherType = 1;"),
     "hdr.ethernet.etherType = 1", "read-only"),
    ("out of range stack index", dict(apply="hdr.hops[7].setValid();"), "7]", "out of bounds"),
    ("bad default action", dict(ingress="""
        action a() { } action b() { }
        table t { key = { meta.m8: exact; } actions = { a; } default_action = b(); }""",
                                apply="t.apply();"), "b();", "not in the actions list"),
    ("undeclared local type", dict(apply="port_t p = 1;"), "port_t", "undeclared type"),
    ("undeclared instance type", dict(ingress="Sketch(4) s;"), "Sketch", "undeclared type"),
    ("select on a header", dict(states="state start { pkt.extract(hdr.ethernet); "
                                        "transition select(hdr.ethernet) { default: accept; } }"),
     "hdr.ethernet) {", "cannot select"),
    ("table without actions", dict(ingress="table t { key = { meta.m8: exact; } }",
                                   apply="t.apply();"), "t { key", "no actions property"),
    ("action listed twice", dict(ingress="action a() { } table t { actions = { a; a; } }",
                                 apply="t.apply();"), "a; }", "listed twice"),
    ("inout argument that is not storage", dict(decls="void f(inout bit<8> x) { x = 1; }",
                                                apply="f(hdr.ipv4.ttl + 1);"),
     "hdr.ipv4.ttl + 1", "not assignable"),
    ("member of an action", dict(ingress="action a() { }", apply="a.apply();"), "apply();",
     "has no member"),
    ("undeclared match kind", dict(ingress="""
        action a() { }
        table t { key = { meta.m8: fuzzy; } actions = { a; } }""", apply="t.apply();"),
     "fuzzy", "match kind"),
]


@pytest.mark.parametrize("desc,kw,needle,words", CASES, ids=[c[0] for c in CASES])
def test_error_points_at_the_defect(desc, kw, needle, words, tmp_path, capsys):
    source = program(**kw)
    line, col, msg, file = compile_error(tmp_path, source, capsys)
    assert (line, col) == line_of(source, needle)
    assert words.lower() in msg.lower()
    assert file.endswith("bad.p4")


def test_unsupported_constructs_are_named(tmp_path, capsys):
    source = program(decls="extern Sketch { Sketch(); }", ingress="Sketch() s;")
    _, _, msg, _ = compile_error(tmp_path, source, capsys)
    assert msg.startswith("unsupported construct:") and "Sketch" in msg


def test_error_in_an_included_file_names_that_file(tmp_path, capsys):
    (tmp_path / "inc.p4").write_text("header h_t {\n  bit<8> a;\n  bit<8> a;\n}\n")
    source = '#include "inc.p4"\n' + program()
    line, col, msg, file = compile_error(tmp_path, source, capsys)
    assert file.endswith("inc.p4") and (line, col) == (3, 10) and "duplicate" in msg


def test_program_without_main(tmp_path, capsys):
    _, _, msg, file = compile_error(tmp_path, "#include <v1model.p4>\n", capsys)
    assert "main" in msg and file.endswith("bad.p4")
    _, _, msg, _ = compile_error(tmp_path, "", capsys)
    assert "main" in msg


def test_missing_include_is_a_preprocessor_error(tmp_path, capsys):
    line, col, msg, _ = compile_error(tmp_path, '#include "nope.p4"\n', capsys)
    assert line == 1 and "nope.p4" in msg


def test_defines_and_include_dirs_from_the_command_line(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "sizes.p4").write_text("const bit<32> SIZE = TABLE_SIZE;\n")
    src = tmp_path / "prog.p4"
    src.write_text('#include "sizes.p4"\n' + program(
        ingress="action a() { } table t { key = { meta.m8: exact; } actions = { a; } "
                "size = SIZE; }", apply="t.apply();"))
    rc = main([str(src), "-o", str(tmp_path), "-I", str(inc), "-D", "TABLE_SIZE=77",
               "--p4runtime-files", str(tmp_path / "p.txtpb")])
    assert rc == 0
    assert "size: 77" in (tmp_path / "p.txtpb").read_text()


def test_p4info_format_follows_the_extension(tmp_path):
    from google.protobuf import json_format
    from p4.config.v1 import p4info_pb2
    src = tmp_path / "prog.p4"
    src.write_text(VALID)
    assert main([str(src), "-o", str(tmp_path), "--p4runtime-files", str(tmp_path / "p.json")]) == 0
    assert main([str(src), "-o", str(tmp_path), "--p4runtime-files", str(tmp_path / "p.bin")]) == 0
    from_json = json_format.Parse((tmp_path / "p.json").read_text(), p4info_pb2.P4Info())
    from_bin = p4info_pb2.P4Info.FromString((tmp_path / "p.bin").read_bytes())
    assert from_json == from_bin and from_bin.tables[0].preamble.name == "I.t"


def test_p4c_compatible_flags(tmp_path):
    src = tmp_path / "prog.p4"
    src.write_text(VALID)
    assert main([str(src), "-o", str(tmp_path), "--target", "bmv2", "--arch", "v1model",
                 "--std", "p4-16"]) == 0
    proc = subprocess.run([sys.executable, "-m", "softswitch_p4c.cli", str(src), "--arch", "psa"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "psa" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "softswitch_p4c.cli",
                           str(tmp_path / "none.p4"), "-o", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert ERROR_LINE.match(proc.stderr.strip()) and "Traceback" not in proc.stderr


DEPRECATED = program(
    decls='@deprecated("Use g.") bit<8> f() { return 1; }\n',
    controls="control Sub(inout bit<8> x) { apply { x = f(); } }",
    ingress='@deprecated("Use b.") action a() { }\n    action b() { }\n    Sub() sub;\n'
            '    table t { key = { meta.m8: exact; } actions = { a; b; } }',
    apply="mark_to_drop(sm); mark_to_drop(); a(); sub.apply(meta.m8); t.apply();")


def test_a_call_of_a_deprecated_declaration_warns_and_the_program_still_compiles(tmp_path,
                                                                                 capsys):
    """As p4c: each call of a `@deprecated("text")` declaration (v1model.p4's mark_to_drop()
    without an argument, not its other overload; a function, in a sub-control's body
    checked as declared and per instance; an action, also where a table lists it) is one
    `file:line:col: warning:` line on stderr with the text; exit 0, the JSON written. The
    API gives the same warnings (driver.compile_to_objects' `warnings` list)."""
    src = tmp_path / "old.p4"
    src.write_text(DEPRECATED)
    assert main([str(src), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "old.json").exists()
    lines = capsys.readouterr().err.strip().splitlines()
    got = [WARNING_LINE.match(x) for x in lines]
    assert all(got), lines
    mark = "Please use mark_to_drop(standard_metadata) instead."
    want = {line_of(DEPRECATED, "f(); }") + ("'f' is deprecated: Use g.",),
            line_of(DEPRECATED, "a; b; }") + ("'a' is deprecated: Use b.",),
            line_of(DEPRECATED, "mark_to_drop();") + (f"'mark_to_drop' is deprecated: {mark}",),
            line_of(DEPRECATED, "a(); sub") + ("'a' is deprecated: Use b.",)}
    assert {(int(m["line"]), int(m["col"]), m["msg"]) for m in got} == want
    assert len(lines) == len(want) and {m["file"] for m in got} == {str(src)}
    warnings = []
    compile_to_objects(str(src), warnings=warnings)
    assert [w.render() for w in warnings] == lines


VALID = program(ingress="""
    action fwd(bit<9> port) { sm.egress_spec = port; hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
    table t { key = { hdr.ipv4.dstAddr: lpm; } actions = { fwd; NoAction; } }""",
                apply="if (hdr.ipv4.isValid()) { t.apply(); }")
TOKENS = re.findall(r"\w+|[^\w\s]", VALID[VALID.index("struct headers"):])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, len(TOKENS) - 1), length=st.integers(1, 3),
       insert=st.sampled_from(["", "}", "(", ";", "bit<8>", "x", "0", "apply", "@name"]))
def test_corrupted_programs_never_crash(start, length, insert, tmp_path, capsys):
    """Deleting/replacing tokens of a valid program: success or one error line, no crash."""
    head = VALID[:VALID.index("struct headers")]
    body = " ".join(TOKENS[:start] + [insert] + TOKENS[start + length:])
    path = tmp_path / "fuzz.p4"
    path.write_text(head + body)
    rc = main([str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc in (0, 1), err
    if rc:
        assert len(err.strip().splitlines()) == 1 and ERROR_LINE.match(err.strip()), err


MUTATION_SEED = 29
MUTATIONS = 400
TESTS = Path(__file__).resolve().parent
CORPUS = sorted(TESTS.glob("stf/*.p4")) + sorted(TESTS.glob("corpus/positive/*.p4"))
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+w\d+|\d+|[{}()\[\];,.<>=+\-*&|^!~?:]")


def mutate(text, rng):
    """`text` with one token (outside comments and preprocessor lines) deleted, repeated
    or replaced by another of the program's tokens."""
    def in_code(m):
        line = text[:m.start()].rsplit("\n", 1)[-1].lstrip()
        return not line.startswith(("#", "//"))
    tokens = [m for m in TOKEN.finditer(text) if in_code(m)]
    t, other = rng.choice(tokens), rng.choice(tokens).group()
    return rng.choice([text[:t.start()] + text[t.end():],
                       text[:t.end()] + " " + t.group() + text[t.end():],
                       text[:t.start()] + other + text[t.end():]])


def test_mutated_programs_fail_with_an_error_not_a_crash(tmp_path):
    """One token of a program of the STF and acceptance corpora deleted, repeated or
    replaced (fixed seed): the program compiles or fails with CompileError (the
    command's one error line), never another exception (an internal compiler error)."""
    rng = random.Random(MUTATION_SEED)
    crashes = []
    for i in range(MUTATIONS):
        source = rng.choice(CORPUS)
        mutant = tmp_path / f"mutant{i}.p4"
        mutant.write_text(mutate(source.read_text(), rng))
        try:
            compile_to_objects(str(mutant), include_dirs=[str(source.parent)])
        except CompileError:
            pass
        except Exception as e:          # noqa: BLE001 -- the crash is what is looked for
            crashes.append(f"{source.name} -> {mutant.name}: "
                           f"{traceback.format_exception_only(e)[-1].strip()}")
            continue
        mutant.unlink()
    assert crashes == []
