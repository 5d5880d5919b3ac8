"""The typed IR (softswitch_p4c/ir.py) the checker (check.py) makes of a TNA program, and
the Tofino lint that walks it (issue 18): names resolve to their declarations, so a
parameter that shadows a global constant is a run-time value. Last: the checker against
the v1model corpora."""
import dataclasses
import json
import pathlib
import re

import pytest

from softswitch_p4c import ast as A, bind, check, desugar, exprs, inline, ir, validate
from softswitch_p4c.compiler import Compiler
from softswitch_p4c.driver import (check_tna_file, check_tna_to_ir, compile_source,
                                   compile_tna_to_objects, compile_to_objects)
from softswitch_p4c.errors import CompileError
from softswitch_p4c.parser import parse
from softswitch_p4c.preprocess import preprocess
from softswitch_p4c.types import Bits, ExternT, TypeVar, same_type
from test_frontend_errors import line_of
from test_frontend_lowering import program

PRELUDE = pathlib.Path(__file__).parent / "tofino_lint" / "prelude.p4"
PIPELINE = pathlib.Path(__file__).parent / "tofino_lint" / "pipeline.p4"


def tna_program(tmp_path, ingress):
    path = tmp_path / "prog.p4"
    path.write_text(f'#include "{PRELUDE}"\nconst bit<32> SCALE = 3;\n{ingress}\n'
                    f'EMPTY_EGRESS\n#include "{PIPELINE}"\n')
    return str(path)


def ingress_of(checked):
    return checked.pipelines[0]["ingress"]


def linted(path):
    """The Tofino lint's problems in the TNA program at `path`: (its line's text, message)."""
    lines = pathlib.Path(path).read_text().splitlines()
    return [(lines[p.loc.line - 1].strip(), p.message)
            for p in check_tna_file(path, "tna", "tofino")]


REGISTER_INGRESS = """
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    apply {
        bit<32> scaled = md.a * SCALE;
        md.c = inc.execute(ig_intr_md.ingress_port);
    }
}
"""


def test_every_name_resolves_to_its_declaration(tmp_path):
    checked = check_tna_to_ir(tna_program(tmp_path, REGISTER_INGRESS), "tna")
    refs = [n for n in ir.walk(ingress_of(checked)) if isinstance(n, ir.Ref)]
    assert refs and all(r.decl is not None for r in refs)
    scale = next(r for r in refs if r.name == "SCALE")
    assert scale.decl.extra["is_const"] and scale.type == Bits(32)
    md = next(r for r in refs if r.name == "md")
    assert isinstance(md.decl, ir.Variable) and md.decl.kind == "param"


def test_an_extern_call_has_its_method_instance_and_result_type(tmp_path):
    checked = check_tna_to_ir(tna_program(tmp_path, REGISTER_INGRESS), "tna")
    assign = ingress_of(checked).body.stmts[1]
    call = assign.rhs
    assert isinstance(call, ir.Call) and call.type == Bits(32)
    assert isinstance(call.callee, A.Method) and call.callee.name == "execute"
    action = call.func.base.decl
    assert isinstance(action, ir.Instance) and action.type.name == "RegisterAction"
    assert action.args[0].decl.name == "reg" and action.args[0].decl.type.name == "Register"
    assert [type(n).__name__ for n in ir.walk(action.methods[0].body)
            if isinstance(n, ir.Assign)] == ["Assign", "Assign"]


def test_the_lint_takes_a_shadowing_parameter_for_run_time_data(tmp_path):
    ingress = """
control Ing(ING_PARAMS) {
    action scale(bit<32> SCALE) { md.c = md.a * SCALE; }
    table t { key = { md.k: exact; } actions = { scale; } }
    apply { md.b = md.a * SCALE; t.apply(); }
}
"""
    assert [line for line, _ in linted(tna_program(tmp_path, ingress))] == \
        ["action scale(bit<32> SCALE) { md.c = md.a * SCALE; }"]


def test_the_lint_takes_folded_constants_for_constants(tmp_path):
    ingress = """
const bit<32> QUARTER = 4;
control Ing(ING_PARAMS) {
    apply {
        md.b = md.a * (SCALE + 1);
        md.c = md.a / QUARTER;
        md.b = md.a >> (bit<8>)SCALE;
        md.c = md.a / SCALE;
    }
}
"""
    problems = check_tna_file(tna_program(tmp_path, ingress), "tna", "tofino")
    assert [p.message for p in problems] == ["'/' by 3: Tofino divides only by powers of two "
                                         "(constant shifts)"]


@pytest.mark.parametrize("body, message", [
    ("action a(bit<32> x) { x = 1; } apply { a(1); }",
     "cannot assign to 'x': it is a read-only (in) parameter"),
    ("apply { ig_intr_md.ingress_port = 1; }",
     "cannot assign to 'ig_intr_md.ingress_port': it is a read-only (in) parameter"),
    ("apply { SCALE = 4; }", "cannot assign to constant 'SCALE'"),
    ("action a(out bit<32> x) { x = 1; } apply { a(SCALE); }",
     "cannot assign to constant 'SCALE'"),
    ("apply { switch (md.k == 1) { true: { } } }",
     "switch expression must be bit<>, int<>, an enum or error, not bool"),
    ("apply { ig_intr_md.setInvalid(); }",
     "cannot assign to 'ig_intr_md.setInvalid': it is a read-only (in) parameter"),
    ("action a(bit<8> x) { md.k = x; } "
     "table t { key = { md.k: exact; } actions = { a; } default_action = a(16w1); } "
     "apply { t.apply(); }",
     "argument 'x' of 'a' has type bit<16>, but bit<8> is expected (width mismatch)"),
    ("table t { key = { md.k: exact; } actions = { NoAction; } size = 4; size = 8; } "
     "apply { t.apply(); }", "duplicate table property 'size'"),
])
def test_the_checker_refuses_bad_writes_and_bad_tables(
        tmp_path, body, message):
    with pytest.raises(CompileError, match=re.escape(message)):
        check_tna_to_ir(tna_program(tmp_path, f"control Ing(ING_PARAMS) {{ {body} }}"), "tna")


def test_the_lint_reads_switch_case_bodies(tmp_path):
    ingress = """
control Ing(ING_PARAMS) {
    apply {
        switch (md.k) {
            1: { md.c = md.a * md.b; }
            default: { }
        }
    }
}
"""
    problems = check_tna_file(tna_program(tmp_path, ingress), "tna", "tofino")
    assert [("multiplication of two run-time values" in p.message, p.loc.line)
            for p in problems] == [(True, 7)]


TOP_LEVEL = """
Register<bit<32>, bit<9>>(512) reg;
RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
    void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
};
T twice<T>(in T x) { return x + x; }
action count_and_scale(inout meta_t md) {
    md.a = inc.execute(0);
    md.c = md.a * md.b;
}
control Ing(ING_PARAMS) {
    apply {
        count_and_scale(md);
        md.b = twice(md.b);
        md.k = twice<bit<8>>(md.k);
        md.b = inc.execute(1);
    }
}
"""


def test_top_level_actions_and_functions_are_checked_and_linted(tmp_path):
    path = tna_program(tmp_path, TOP_LEVEL)
    checked = check_tna_to_ir(path, "tna")
    assert set(checked.functions) == {"NoAction", "twice", "count_and_scale"}
    call = ingress_of(checked).body.stmts[0].call
    assert call.callee is checked.functions["count_and_scale"]
    problems = linted(path)
    assert [line for line, _ in problems] == ["md.c = md.a * md.b;", "md.b = inc.execute(1);"]
    assert "multiplication of two run-time values" in problems[0][1]
    assert "register 'reg' accessed twice for one packet" in problems[1][1]


def test_a_top_level_action_is_type_checked(tmp_path):
    path = tna_program(tmp_path, "action bad(inout meta_t md) { md.k = md.a; }\nEMPTY_INGRESS")
    with pytest.raises(CompileError) as err:
        check_tna_to_ir(path, "tna")
    assert err.value.message == "type mismatch in assignment: expected bit<8>, got bit<32>"


def test_the_checker_takes_errors_loops_and_undeclared_error_members(tmp_path):
    ingress = """
control Ing(ING_PARAMS) {
    error last = error.NoError;
    apply {
        for (bit<8> i = 0; i < 4; i = i + 1) {
            if (i == md.k) { break; }
            md.a = md.a + 1;
        }
        for (bit<8> j in 1 .. 3) { md.b = md.b + (bit<32>) j; }
        if (last == error.PacketTooShort) { md.c = 0; }
    }
}
"""
    checked = check_tna_to_ir(tna_program(tmp_path, ingress), "tna")
    loops = [n for n in ir.walk(ingress_of(checked)) if isinstance(n, ir.Loop)]
    assert [loop.init[0].name for loop in loops] == ["i", "j"]
    bad = tna_program(tmp_path, ingress.replace("error.PacketTooShort", "error.TooShort"))
    with pytest.raises(CompileError) as err:
        check_tna_to_ir(bad, "tna")
    assert err.value.message == "undeclared error 'error.TooShort'"


def test_walk_stays_inside_a_node(tmp_path):
    checked = check_tna_to_ir(tna_program(tmp_path, REGISTER_INGRESS), "tna")
    call = ingress_of(checked).body.stmts[1].rhs
    walked = list(ir.walk(call))
    assert walked[:3] == [call, call.func, call.func.base] and call.args[0] in walked
    action = call.func.base.decl
    assert not any(n is action or n in action.methods for n in walked)


TABLE_INGRESS = """
control Ing(ING_PARAMS) {
    action set_k(bit<8> k) { md.k = k; }
    table t {
        key = { md.a: exact; }
        actions = { set_k; NoAction; }
        const entries = { 1 : set_k(K_ONE); }
        default_action = set_k(0);
        size = 16;
    }
    apply { t.apply(); }
}
"""


def test_table_actions_default_and_entries_resolve(tmp_path):
    path = tna_program(tmp_path, "const bit<8> K_ONE = 1;\n" + TABLE_INGRESS)
    set_k, table = ingress_of(check_tna_to_ir(path, "tna")).locals
    assert [c.callee for c in table.actions][0] is set_k and isinstance(set_k, ir.Action)
    assert table.entries[0].action.callee is set_k
    assert table.entries[0].action.args[0].decl.extra["is_const"]
    assert table.default_action.callee is set_k
    assert [p.name for p in table.properties] == ["size"]


def test_undeclared_names_in_entries_and_default_actions(tmp_path):
    with_const = "const bit<8> K_ONE = 1;\n" + TABLE_INGRESS
    for text, message in ((TABLE_INGRESS, "undeclared identifier 'K_ONE'"),
                          (with_const.replace("set_k(0)", "set_j(0)"),
                           "undeclared action 'set_j'")):
        with pytest.raises(CompileError) as err:
            check_tna_to_ir(tna_program(tmp_path, text), "tna")
        assert err.value.message == message


# The checker on v1model programs (not run by the v1model path yet, README.md
# "Architecture: phases"): no false error on any valid program, and where it finds an
# error of a negative program, the BMv2 emitter's very line. The step that makes the
# emitter read its types from the IR relies on both.
ROOT = pathlib.Path(__file__).resolve().parents[2]
VALID_V1MODEL = sorted(p for pattern in ("p4src/*.p4", "softswitch/tests/corpus/positive/*.p4",
                                         "softswitch/tests/stf/*.p4",
                                         "softswitch/tests/p4c_reference/*.p4")
                       for p in ROOT.glob(pattern))
NEGATIVE_V1MODEL = sorted((ROOT / "softswitch/tests/corpus/negative").glob("*.p4"))


def check_v1model(path):
    """Declare the program's globals, then run the checker phase alone (raises the first
    CompileError)."""
    comp = declared(preprocess(str(path), (), ()), str(path))
    check.check_v1model(comp, comp.program)


def declared(text, name="top.p4"):
    """A Compiler of the program `text` with its top-level declarations declared."""
    comp = Compiler(parse(text, name), name)
    for d in comp.program.decls:
        comp.declare_global(d)
    return comp


def p4_file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def ast_nodes(node, copies=False):
    """Every AST node under `node`, expressions too, each before the nodes in it; with
    `copies`, inside the copies the inlining pass made (`A.Inlined`) too."""
    if isinstance(node, (list, tuple)):
        for x in node:
            yield from ast_nodes(x, copies)
    elif isinstance(node, A.Inlined):
        if copies:
            yield from ast_nodes(node.decl, copies)
    elif dataclasses.is_dataclass(node):
        yield node
        for fl in dataclasses.fields(node):
            if fl.name != "loc":
                yield from ast_nodes(getattr(node, fl.name), copies)


def decl_named(program, name):
    return next(d for d in program.decls if getattr(d, "name", None) == name)


def before_lowering(monkeypatch, look):
    """Have `look(program)` see the program as the passes left it, as lowering starts."""
    lower_main = Compiler.lower_main

    def look_then_lower(self, main):
        look(self.program)
        return lower_main(self, main)

    monkeypatch.setattr(Compiler, "lower_main", look_then_lower)


# What to patch out for the emitter to unroll the loops itself, as before the pass (bind.py
# still makes copies.py's decisions)
BIND_OFF = (bind.Binder, "unroll", lambda self, decl, unrolled: False)
CHECKER_UNROLL_OFF = (check.BlockChecker, "unroll", lambda self, s: None)


def assert_the_emitters_own_unrolling_gives(objects, monkeypatch, pass_off, compile_again):
    """A program's (BMv2 JSON, P4Info) `objects` are what `compile_again()` gives with
    `pass_off` patched out: the JSON to its keys' order."""
    monkeypatch.setattr(*pass_off)
    by_the_emitter = compile_again()
    assert json.dumps(objects[0]) == json.dumps(by_the_emitter[0])
    assert objects[1] == by_the_emitter[1]


def test_the_checker_folds_top_level_constants_widths_and_enum_values():
    comp = declared("""
const bit<8> WRAPPED = 300;
const int<4> NEG = -1;
const bit<16> SHIFTED = (bit<16>)WRAPPED << 4 | 16w0x3;
const bit<8> SATURATED = WRAPPED |+| 250;
const bool BIG = SHIFTED > 0x200 && !false;
typedef bit<(WRAPPED >> 2)> narrow_t;
enum bit<4> E { A = 2 + 3, B = (bit<4>)NEG }
const bit<12> JOINED = 4w0xa ++ 8w1;
const bit<4> PICKED = BIG ? 4w7 : 4w1;
const E CHOSEN = E.B;
""")
    values = {name: comp.globals.lookup(name).const for name in (
        "WRAPPED", "NEG", "SHIFTED", "SATURATED", "BIG", "JOINED", "PICKED", "CHOSEN")}
    assert values == {"WRAPPED": 44, "NEG": -1, "SHIFTED": 44 << 4 | 3, "SATURATED": 255,
                      "BIG": True, "JOINED": 0xa01, "PICKED": 7, "CHOSEN": 15}
    assert comp.globals.lookup("narrow_t").type == Bits(11)
    assert comp.globals.lookup("E").type.members == {"A": 5, "B": 15}


@pytest.mark.parametrize("text, message", [
    ("const bit<8> X = 8w1 + 16w1;", "operands of '+' have different types"),
    ("const bool X = 1;", "type mismatch in constant 'X': expected bool, got int"),
    ("const bit<8> X = 8w4 / 0;", "division by zero"),
    ("typedef bit<(3 > 2)> t;", "width must be a compile-time integer constant"),
])
def test_the_checker_refuses_bad_top_level_constants(text, message):
    with pytest.raises(CompileError, match=re.escape(message)):
        declared(text)


@pytest.mark.parametrize("path", VALID_V1MODEL, ids=lambda p: p.stem)
def test_the_checker_takes_every_valid_v1model_program(path):
    check_v1model(path)


def test_the_emitter_lowers_every_expression_with_the_checkers_type(monkeypatch):
    """Every value the emitter lowers, in every valid v1model program and in the Tofino
    programs' lowering, has the type of its typed IR node (ExprMixin.typed: the checker in
    the emitter's scope of the moment), so the emitter can take all its types from the IR
    (README.md, "Architecture: phases")."""
    lower = exprs.ExprMixin.eval_expr
    differ, count = [], [0]

    def eval_expr(self, e, ctx, expected=None):
        v = lower(self, e, ctx, expected)
        node = self.typed(e, ctx)
        if v.type is not None and not isinstance(node.type, TypeVar):
            count[0] += 1
            if not same_type(v.type, node.type):
                differ.append((e.loc, v.type, node.type))
        return v

    monkeypatch.setattr(exprs.ExprMixin, "eval_expr", eval_expr)
    for path in VALID_V1MODEL:
        compile_to_objects(str(path))
    for path in sorted(ROOT.glob("hw/tofino/*.p4")):
        compile_tna_to_objects(str(path), "tna")
    assert differ == [] and count[0] > 5000


def test_the_programs_ir_agrees_with_the_emitters_scope_wherever_the_passes_left_it(monkeypatch):
    """Where an expression the emitter lowers is still the one `check_v1model` checked (the
    passes left it, and every check of it agreed: `check.record`), its node in the
    program's IR has the type and the value (where it knows one) of the node checked in
    the emitter's scope of the moment (`typed`), and an index's and a slice's bounds too:
    so the emitter reads those from the program's IR (`ExprMixin.node`). Every valid
    v1model program; most of the expressions the emitter lowers are found there."""
    lower = exprs.ExprMixin.eval_expr
    differ, found, asked = [], [0], [0]

    def eval_expr(self, e, ctx, expected=None):
        v = lower(self, e, ctx, expected)
        hit = self.program_nodes.get(id(e))
        asked[0] += 1
        if hit is not None and hit[0] is e and hit[1] is not None:
            found[0] += 1
            ours, theirs = hit[1], self.typed(e, ctx)
            same = ours.type is None or isinstance(ours.type, ExternT) or \
                same_type(ours.type, theirs.type)     # an extern instance's: built per check
            if ours.value is not None and ours.value != theirs.value:
                same = False
            if isinstance(ours, ir.Untyped) and ours.form == "Index" and \
                    ours.parts[1].value is not None and \
                    ours.parts[1].value != theirs.parts[1].value:
                same = False
            if isinstance(ours, ir.Slice) and (ours.hi, ours.lo) != (theirs.hi, theirs.lo):
                same = False
            if not same:
                differ.append((e.loc, ours.type, theirs.type, ours.value, theirs.value))
        return v

    monkeypatch.setattr(exprs.ExprMixin, "eval_expr", eval_expr)
    for path in VALID_V1MODEL:
        compile_to_objects(str(path))
    assert differ == [] and found[0] > asked[0] // 2


def test_a_constant_index_is_read_from_the_programs_ir_only_when_settled(tmp_path):
    """`h.s[true ? 8w0 : 8w1 / n].a` has index 0 in the program's IR, but in a function
    inlined with `n` bound to 0 the emitter's scope checks `8w1 / n` as a division by zero
    (as it always has): a value whose expression the emitter does not lower is read from
    the program's IR only when every expression inside it has a value there
    (`ir.settled`); a loop's bound too (`check._LoopFolder.settled`)."""
    text = program(controls="""
bit<8> g(in headers h, in bit<8> n) { return h.ipv4.ttl + (bit<8>) h.hops[true ? 8w0 : 8w1 / n].port; }
""", apply="hdr.ipv4.protocol = g(hdr, 0);")
    with pytest.raises(CompileError, match="division by zero") as err:
        compile_source(text, tmp_path)
    assert err.value.loc.line == line_of(text, "8w1 / n")[0]
    # so is a loop bound: the checker leaves the loop to the emitter, which refuses it
    loop = program(controls="""
bit<8> f(in bit<8> n) {
    bit<8> s = 0;
    for (bit<8> i = 0; i < (true ? 8w2 : 8w1 / n); i = i + 1) { s = s + i; }
    return s;
}
""", apply="hdr.ipv4.protocol = f(0);")
    with pytest.raises(CompileError, match="division by zero") as err:
        compile_source(loop, tmp_path)
    assert err.value.loc.line == line_of(loop, "8w1 / n")[0]


# f(n) = 0 + 1 + ... + (n - 1): a loop its argument decides
SUM_BELOW = """
bit<8> f(in bit<8> n) {
    bit<8> s = 0;
    for (bit<8> i = 0; i < n; i = i + 1) { s = s + i; }
    return s;
}"""


def test_the_checker_unrolls_the_loops_its_scopes_decide_once_before_lowering(tmp_path, monkeypatch):
    """check_v1model unrolls a loop whose bounds and jumps the block's and the top level's
    constants decide (`BlockChecker.unroll`), and `unroll.replace_loops` puts its
    iterations in the program before lowering; a loop bound by a function's argument or
    a sub-control's constructor argument, and one in a parser state (which the emitter
    refuses), stay for the emitter. The JSON is the one the emitter's own unrolling gives."""
    path = p4_file(tmp_path, "loops.p4", program(controls=SUM_BELOW + """
control C(inout headers hdr)(bit<8> n) {
    apply { for (bit<8> i = 0; i < n; i = i + 1) { hdr.hops[i].port = (bit<7>) i; } }
}""", ingress="C(2) c2; const bit<8> K = 3;", apply="""
        for (bit<8> i in 0 .. K) {
            if (i == 2) { break; }
            for (bit<8> j = 0; j < 2; j = j + 1) { hdr.ipv4.ttl = hdr.ipv4.ttl - j; }
            hdr.hops[i].bos = 1;
        }
        hdr.ipv4.protocol = f(3);
        c2.apply(hdr);"""))
    comp = declared(preprocess(str(path), (), ()), str(path))
    comp.check_blocks()

    def loops(node):
        return [x for x in ast_nodes(node) if isinstance(x, (A.For, A.ForIn))]

    left = sorted(type(x).__name__ + str(x.loc.line) for x in loops(comp.program))
    assert left == sorted("For" + str(loops(decl_named(comp.program, name).body)[0].loc.line)
                          for name in ("f", "C"))      # the function's and the control's
    unrolled = decl_named(comp.program, "I").body.stmts[0]
    assert isinstance(unrolled, A.Block) and len(unrolled.stmts) == 3     # i = 0, 1, 2: break
    assert_the_emitters_own_unrolling_gives(compile_to_objects(str(path)), monkeypatch,
                                            CHECKER_UNROLL_OFF,
                                            lambda: compile_to_objects(str(path)))


def iterations(loop):
    """The values of an unrolled loop's variable, one a copy of its body."""
    assert isinstance(loop, A.Block)
    return [b.stmts[0].init.value for b in loop.stmts]


def test_a_sub_control_copy_has_the_loops_its_constructor_arguments_decide_unrolled(
        tmp_path, monkeypatch):
    """bind.bind_program checks each sub-control copy again with its constructor
    parameters bound to the instance's arguments (passed on through an enclosing copy's
    own constructor parameter too) and unrolls the loops that decides in the copy before
    lowering: each copy by its own arguments. A local that shadows the parameter is the
    local (an action's run-time loop stays one). The JSON is the one the emitter's own
    unrolling gives."""
    path = p4_file(tmp_path, "ctor_loops.p4", program(controls="""
control C(inout headers hdr, inout metadata meta)(bit<8> n) {
    action count() {
        bit<8> n = hdr.ipv4.ttl;
        for (bit<8> i = 0; i < n; i = i + 1) { meta.m8 = meta.m8 + 1; }
    }
    table t { actions = { count; } default_action = count(); }
    apply {
        for (bit<8> i = 0; i < n; i = i + 1) { hdr.hops[i].port = (bit<7>) i; }
        t.apply();
    }
}
control Outer(inout headers hdr, inout metadata meta)(bit<8> k) {
    C(k) inner;
    apply { inner.apply(hdr, meta); }
}""", ingress="C(2) two; Outer(3) three;", apply="two.apply(hdr, meta); three.apply(hdr, meta);"))
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(
        s.inlined.decl for s in decl_named(program, "I").body.stmts))
    bound = compile_to_objects(str(path))
    two, outer = met
    three = outer.body.stmts[0].inlined.decl
    assert iterations(two.body.stmts[0]) == [0, 1]
    assert iterations(three.body.stmts[0]) == [0, 1, 2]
    for copy in (two, three):
        action = next(d for d in copy.locals if isinstance(d, A.ActionDecl))
        assert isinstance(action.body.stmts[1], A.For)      # the local n: run time
    assert_the_emitters_own_unrolling_gives(bound, monkeypatch, BIND_OFF,
                                            lambda: compile_to_objects(str(path)))


COPY_DECISIONS = """
bit<8> set_one(out bit<8> d) { d = 1; return 8w2; }
void twice(inout bit<8> x, inout bit<8> y) { x = 1; y = x + 2; }
void twice7(inout bit<7> x, inout bit<7> y) { x = 1; y = x + 2; }
control Sub(inout bit<8> a, in bit<8> b) { apply { a = b; } }
"""


def test_copy_in_copy_out_is_decided_by_a_pass_over_the_ir(tmp_path, monkeypatch):
    """copies.py, inside bind.py's walk, decides which parameters of each call, sub-control
    application and table-bound action get a temporary (A.Inlined.copies,
    A.ActionRef.copies): only where the callee could reach the argument's storage under
    another name. Storage is compared by declaration, not by name (the caller's local
    `port` is not the callee's parameter `port`), a stack element with a run-time index
    may be any, and a call of a local action reaches what that action's body writes."""
    path = p4_file(tmp_path, "copies.p4", program(controls=COPY_DECISIONS, ingress="""
    Sub() sub;
    action bump() { hdr.ipv4.ttl = hdr.ipv4.ttl + 1; }
    action keep(in bit<8> before) { bump(); hdr.ipv4.protocol = before; }
    action reads(bit<8> port) { meta.m8 = port; }
    action top_only(inout bit<8> c) { c = set_one(c); }
    action bound(inout bit<8> v) { v = v + 1; hdr.ipv4.ttl = 0; }
    table t { actions = { bound(hdr.ipv4.ttl); } default_action = bound(hdr.ipv4.ttl); }
    bit<8> port = 3;""", apply="""
    reads(port);
    keep(hdr.ipv4.ttl);
    keep(meta.m8);
    twice(hdr.ipv4.ttl, hdr.ipv4.ttl);
    twice(hdr.ipv4.ttl, hdr.ipv4.protocol);
    twice7(hdr.hops[meta.m8].port, hdr.hops[0].port);
    twice7(hdr.hops[1].port, hdr.hops[0].port);
    top_only(hdr.ipv4.ttl);
    sub.apply(meta.m8, meta.m8);
    sub.apply(meta.m8, hdr.ipv4.ttl);
    t.apply();"""))
    decided = []

    def look(program):
        ingress = decl_named(program, "I")
        for s in ingress.body.stmts:
            decided.append(s.inlined.copies if isinstance(s, A.InlinedBlock)
                           else s.call.inlined.copies if s.call.inlined else None)
        table = next(d for d in ingress.locals if isinstance(d, A.TableDecl))
        decided.append(next(p.value for p in table.properties if p.name == "actions")[0].copies)

    before_lowering(monkeypatch, look)
    compile_to_objects(str(path))
    assert decided == [
        set(),                  # reads(port): the callee only reads; its `port` is its own
        {"before"},             # keep(ttl): bump() writes ttl before `before` is read
        set(),                  # keep(m8): bump() writes ttl, keep protocol
        {"x", "y"},             # twice(ttl, ttl): one storage, each written back
        set(),                  # twice(ttl, protocol)
        {"x", "y"},             # hops[m8] may be hops[0]
        set(),                  # hops[1] is not
        set(),                  # top_only(ttl): a top-level function reaches its arguments only
        {"a", "b"},             # sub.apply(m8, m8): two arguments, one storage
        set(),                  # sub.apply(m8, ttl)
        None,                   # t.apply(): a table, nothing to decide
        {"v"},                  # bound(ttl): its body also writes ttl by name
    ]


def test_a_call_copy_has_the_loops_its_constant_arguments_decide_unrolled(tmp_path,
                                                                          monkeypatch):
    """bind.bind_program checks each call's copy of its callee again with the call's
    constant arguments bound (a sub-control's constructor argument passed on, an
    action's parameter passed on to a function it calls, a loop's variable in each
    iteration, which has a copy of the loop's body of its own: unroll.separate_iterations)
    and unrolls the loops that decides in the copy. The JSON is the one the emitter's
    own unrolling gives."""
    path = p4_file(tmp_path, "call_loops.p4", program(controls=SUM_BELOW + """
control C(inout headers hdr, inout metadata meta)(bit<8> k) {
    action a(in bit<8> n) {
        for (bit<8> i = 0; i < n; i = i + 1) { meta.m8 = meta.m8 + i; }
        meta.m16 = (bit<16>) f(n);
    }
    apply { hdr.ipv4.ttl = f(k); a(2); }
}""", ingress="C(4) c;", apply="""
        c.apply(hdr, meta);
        for (bit<8> j in 1 .. 2) { hdr.ipv4.protocol = f(j); }"""))
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(decl_named(program, "I").body.stmts))

    def copy_called(node):
        found = [x for x in ast_nodes(node) if isinstance(x, A.Call) and x.inlined]
        return found[0].inlined.decl

    bound = compile_to_objects(str(path))
    applied, unrolled = met
    ttl, call_a = applied.inlined.decl.body.stmts
    assert iterations(copy_called(ttl).body.stmts[1]) == [0, 1, 2, 3]        # f(k), k = 4
    action = copy_called(call_a)
    assert iterations(action.body.stmts[0]) == [0, 1]                      # a(2)
    assert iterations(copy_called(action.body.stmts[1]).body.stmts[1]) == [0, 1]  # f(n)
    per_iteration = [copy_called(block) for block in unrolled.stmts]      # f(j), j = 1, 2
    assert per_iteration[0] is not per_iteration[1]
    assert [iterations(f.body.stmts[1]) for f in per_iteration] == [[0], [0, 1]]
    assert_the_emitters_own_unrolling_gives(bound, monkeypatch, BIND_OFF,
                                            lambda: compile_to_objects(str(path)))


def test_the_iterations_of_a_loop_bind_unrolls_are_bound_each_in_turn(tmp_path, monkeypatch):
    """A loop bind.py unrolls in a copy gives each iteration copies of its own (of the
    calls' and applications' copies too): the loops an iteration's variable decides
    (one nested in it, one in the copy of a function it calls) are unrolled in turn,
    and a sub-control applied in it gets its own copy per iteration. Only the loops
    with no iterations are left (the emitter's, as before). The JSON is the one the
    emitter's own unrolling gives."""
    path = p4_file(tmp_path, "nested_loops.p4", program(controls=SUM_BELOW + """
control Inner(inout headers hdr, inout metadata meta)(bit<8> w) {
    apply { for (bit<8> q = 0; q < w; q = q + 1) { meta.m8 = meta.m8 + q; } }
}
control C(inout headers hdr, inout metadata meta)(bit<8> n) {
    Inner(n) inner;
    apply {
        for (bit<8> i = 0; i < n; i = i + 1) {
            hdr.hops[i].port = (bit<7>) f(i);
            for (bit<8> j = 0; j < i; j = j + 1) { meta.m16 = meta.m16 + (bit<16>) j; }
            inner.apply(hdr, meta);
        }
    }
}""", ingress="C(3) c;", apply="c.apply(hdr, meta);"))
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(
        ast_nodes(decl_named(program, "I").body, copies=True)))
    bound = compile_to_objects(str(path))
    left = [x for x in met if isinstance(x, A.For)]
    # f(0) and `j < 0` in the first iteration: no iterations
    assert len(left) == 2 and all(isinstance(x.cond, A.Binary) for x in left)
    inner = [x.inlined.decl for x in met if isinstance(x, A.InlinedBlock)][1:]
    assert len(inner) == 3 and len({id(x) for x in inner}) == 3
    assert_the_emitters_own_unrolling_gives(bound, monkeypatch, BIND_OFF,
                                            lambda: compile_to_objects(str(path)))


def test_calls_in_parser_states_sub_parsers_and_top_level_actions_are_bound_too(
        tmp_path, monkeypatch):
    """bind.bind_program starts from V1Switch's parser too (a sub-parser's constructor
    argument passed to a function it calls in a state) and binds the calls in the
    top-level actions (a table's action lowers the declared one): no loop is left for
    the emitter to unroll, and the JSON is the one its own unrolling gives."""
    path = p4_file(tmp_path, "parser_calls.p4", program(controls=SUM_BELOW + """
action top(inout metadata meta) { meta.m8 = f(5); }
parser Sub(packet_in pkt, inout headers hdr, inout metadata meta)(bit<8> k) {
    state start { meta.m8 = f(k); transition accept; }
}""", states="""
        Sub(3) sp;
        state start {
            pkt.extract(hdr.ethernet);
            meta.m16 = (bit<16>) f(2);
            sp.apply(pkt, hdr, meta);
            transition accept;
        }""", ingress="""
    action setm() { meta.m32 = (bit<32>) f(4); top(meta); }
    table t { key = { hdr.ipv4.ttl: exact; } actions = { setm; NoAction; }
              default_action = NoAction(); }""", apply="t.apply();"))
    left = []
    before_lowering(monkeypatch, lambda program: left.extend(
        x for name in ("P", "I", "top")
        for x in ast_nodes(decl_named(program, name), copies=True) if isinstance(x, A.For)))
    bound = compile_to_objects(str(path))
    assert left == []
    assert_the_emitters_own_unrolling_gives(bound, monkeypatch, BIND_OFF,
                                            lambda: compile_to_objects(str(path)))


def test_value_switches_are_if_chains_written_once_before_lowering(tmp_path, monkeypatch):
    """desugar.switches_as_ifs runs once over the program after the check: the emitter
    meets every value switch (of a function, an action, an apply block, nested in a case)
    as the if-chain the pass wrote (`A.SwitchChain`), and only a control's switch on
    `t.apply().action_run` as a switch."""
    path = p4_file(tmp_path, "switches.p4", program(decls="""
bit<8> f(in bit<8> x) { bit<8> r = 0; switch (x) { 1: { r = 2; } default: { r = 3; } } return r; }
""", ingress="""
        action a() { switch (hdr.ipv4.ttl) { 1: 2: { meta.m8 = 1; } } }
        action b() { }
        table t { actions = { a; b; } }""", apply="""
        switch (t.apply().action_run) {
            a: { switch (hdr.ipv4.protocol) { 6: { meta.m16 = 1; } default: { b(); } } }
            b: { meta.m8 = f(hdr.ipv4.ttl); }
        }"""))
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(
        type(x).__name__ for x in ast_nodes(program.decls)
        if isinstance(x, (A.Switch, A.SwitchChain))))
    compile_to_objects(str(path))
    assert {kind: met.count(kind) for kind in met} == {"Switch": 1, "SwitchChain": 3}


def test_calls_in_conditions_are_hoisted_once_before_lowering_a_result_per_copy(tmp_path,
                                                                               monkeypatch):
    """order.py runs once over the program after the check: a function called in an apply
    block's `if` condition becomes a statement of its own before the `if` (an A.Temp), and
    the `if` tests its result, so the condition splitter (table applies only) meets none.
    The emitter gives each copy's and each unrolled iteration's call its own result, which
    the graph's condition reads (f_retval..f_retval_4: a sub-control applied twice, a loop
    of 2 iterations in it)."""
    path = p4_file(tmp_path, "split.p4", program(
        decls="bool f(in bit<8> x) { return x == 1; }", controls="""
control S(inout headers hdr, inout metadata meta)(bit<8> n) {
    apply {
        if (f(hdr.ipv4.ttl)) { meta.m8 = 1; }
        for (bit<8> i = 0; i < n; i = i + 1) { if (f(meta.m16[7:0] + i)) { meta.m32 = 1; } }
    }
}""", ingress="S(2) s;", apply="s.apply(hdr, meta); s.apply(hdr, meta);"))
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(
        type(x).__name__ for x in ast_nodes(program.decls, copies=True)
        if isinstance(x, (A.Temp, A.SplitStmt))))
    j, _ = compile_to_objects(str(path))
    assert met and set(met) == {"Temp"}
    tested = [c["expression"]["value"]["right"]["value"][1]
              for c in j["pipelines"][0]["conditionals"]]
    assert tested == ["f_retval"] + [f"f_retval_{i}" for i in range(5)]


def code(node):
    """Statements and expressions as P4-like text, calls with their arguments."""
    if isinstance(node, list):
        return "; ".join(code(x) for x in node)
    if isinstance(node, A.Temp):
        return f"{node.name} = {code(node.value)}"
    if isinstance(node, A.Assign):
        return f"{code(node.lhs)} = {code(node.rhs)}"
    if isinstance(node, A.VarDecl):
        return f"{node.type.name} {node.name}" + (f" = {code(node.init)}" if node.init else "")
    if isinstance(node, A.CallStmt):
        return code(node.call)
    if isinstance(node, A.If):
        other = f" else {{ {code(node.other)} }}" if node.other else ""
        return f"if ({code(node.cond)}) {{ {code(node.then)} }}{other}"
    if isinstance(node, A.Block):
        return code(node.stmts)
    if isinstance(node, A.SwitchChain):
        return code(node.chain)
    if isinstance(node, A.Call):
        return f"{code(node.func)}({', '.join(code(a) for a in node.args)})"
    if isinstance(node, A.Binary):
        return f"{code(node.left)} {node.op} {code(node.right)}"
    if isinstance(node, A.Unary):
        return f"{node.op}{code(node.expr)}"
    if isinstance(node, A.Member):
        return f"{code(node.expr)}.{node.name}"
    if isinstance(node, A.Ternary):
        return f"{code(node.cond)} ? {code(node.then)} : {code(node.other)}"
    return A.describe(node)


ORDER_DECLS = """
bit<8> inc(inout bit<8> x) { x = x + 1; return x; }
bit<8> dbl(inout bit<8> x) { x = x + x; return x; }
bit<16> join(in bit<8> a, in bit<8> b) { return a ++ b; }
void twice(out bit<8> y, in bit<8> v) { y = v + v; }
void set7(out bit<7> y, in bit<8> v) { y = (bit<7>)v; }
"""


def ordered(tmp_path, monkeypatch, body, **kw):
    """The statements of action `a` (`body`) as the passes left them, in text."""
    path = p4_file(tmp_path, "order.p4", program(
        decls=ORDER_DECLS, ingress=f"action a() {{ {body} }} table t {{ actions = {{ a; }} }}",
        apply="t.apply();", **kw))
    seen = []
    before_lowering(monkeypatch, lambda program: seen.extend(
        next(d for d in program.decls if isinstance(d, A.ControlDecl) and d.name == "I")
        .locals[0].body.stmts))
    compile_to_objects(str(path))
    return code(seen)


@pytest.mark.parametrize("body, statements", [
    # operands left to right, each call once, its result a temporary
    ("meta.m8 = inc(meta.m8) + dbl(meta.m8);",
     "tmp$0 = inc(meta.m8); tmp$1 = dbl(meta.m8); meta.m8 = tmp$0 + tmp$1"),
    # an operand read before a later call that may write it is read first, into a
    # variable of its type
    ("meta.m8 = meta.m8 + inc(meta.m8);",
     "bit tmp$0 = meta.m8; tmp$1 = inc(meta.m8); meta.m8 = tmp$0 + tmp$1"),
    # an `in` argument is read before a later argument's call; the call that is the whole
    # value stays the assignment's
    ("meta.m16 = join(meta.m8, inc(meta.m8));",
     "bit tmp$0 = meta.m8; tmp$1 = inc(meta.m8); meta.m16 = join(tmp$0, tmp$1)"),
    # an `out` argument names storage: not read ahead
    ("twice(meta.m8, inc(meta.m8));", "tmp$0 = inc(meta.m8); twice(meta.m8, tmp$0)"),
    # the right operand of && / || runs only when the left does not decide
    ("bool r = meta.m8 == 1 && inc(meta.m8) == 2;",
     "bool tmp$0 = meta.m8 == 1; if (tmp$0) { tmp$1 = inc(meta.m8); tmp$0 = tmp$1 == 2 }; "
     "bool r = tmp$0"),
    ("bool r = meta.m8 == 1 || inc(meta.m8) == 2;",
     "bool tmp$0 = meta.m8 == 1; if (!tmp$0) { tmp$1 = inc(meta.m8); tmp$0 = tmp$1 == 2 }; "
     "bool r = tmp$0"),
    # ?: runs one branch
    ("meta.m8 = meta.m16 == 0 ? inc(meta.m8) : dbl(meta.m8);",
     "bit tmp$0; if (meta.m16 == 0) { tmp$1 = inc(meta.m8); tmp$0 = tmp$1 } "
     "else { tmp$2 = dbl(meta.m8); tmp$0 = tmp$2 }; meta.m8 = tmp$0"),
    # a condition's call, a call in another call's argument
    ("if (inc(meta.m8) == 2) { meta.m16 = 1; }",
     "tmp$0 = inc(meta.m8); if (tmp$0 == 2) { meta.m16 = 1 }"),
    ("meta.m16 = join(inc(meta.m8), dbl(meta.m8));",
     "tmp$0 = inc(meta.m8); tmp$1 = dbl(meta.m8); meta.m16 = join(tmp$0, tmp$1)"),
    # a target's index is evaluated before the value, an `out` argument's before the later
    # arguments
    ("hdr.hops[meta.m8[1:0]].port = (bit<7>)inc(meta.m8);",
     "bit tmp$0 = meta.m8[1:0]; tmp$1 = inc(meta.m8); hdr.hops[tmp$0].port = (bit<7>)tmp$1"),
    ("set7(hdr.hops[meta.m8[1:0]].port, inc(meta.m8));",
     "bit tmp$0 = meta.m8[1:0]; tmp$1 = inc(meta.m8); set7(hdr.hops[tmp$0].port, tmp$1)"),
    # a switch's value is evaluated once, before its labels' tests read it
    ("switch (inc(meta.m8)) { 1: { meta.m16 = 1; } 2: 3: { meta.m16 = 2; } }",
     "tmp$0 = inc(meta.m8); if (tmp$0 == 1) { meta.m16 = 1 } "
     "else { if (tmp$0 == 2 || tmp$0 == 3) { meta.m16 = 2 } else {  } }"),
])
def test_calls_inside_expressions_become_statements_in_evaluation_order(tmp_path, monkeypatch,
                                                                        body, statements):
    """order.py, once over the program before lowering: each call with side effects inside
    an expression is a statement of its own, in P4-16's evaluation order (operands and
    arguments left to right, && / || and ?: as `if`s), so the emitter splices no call into
    an expression and decides no short-circuit."""
    assert ordered(tmp_path, monkeypatch, body) == statements


def test_a_select_key_call_runs_once_at_the_end_of_the_state(tmp_path, monkeypatch):
    """A call in a select key: a statement of its own at the end of the state, before the
    select reads its result (the state's `return`-ended function inlined without a jump,
    which a parser state does not have)."""
    path = p4_file(tmp_path, "select.p4", program(decls=ORDER_DECLS, states="""
        state start {
            pkt.extract(hdr.ethernet);
            transition select(inc(meta.m8), hdr.ethernet.etherType) {
                (1, 0x0800): accept;
                default: reject;
            }
        }"""))
    seen = []
    before_lowering(monkeypatch, lambda program: seen.extend(
        next(d for d in program.decls if isinstance(d, A.ParserDecl) and d.name == "P").states))
    j, _ = compile_to_objects(str(path))
    assert code(seen[0].stmts) == "pkt.extract(hdr.ethernet); tmp$0 = inc(meta.m8)"
    assert [code(k) for k in seen[0].transition.select] == ["tmp$0", "hdr.ethernet.etherType"]
    ops = j["parsers"][0]["parse_states"][0]["parser_ops"]
    assert [op["op"] for op in ops] == ["extract", "set", "set"]


def test_a_stack_read_before_a_call_is_expanded_by_hsindex_as_before(tmp_path):
    """An operand with a run-time stack index read before a later call is a variable's
    initializer, which hsindex expands into an if-chain over the indices (as it expanded
    the whole statement before the pass), not a run-time dereference."""
    j, _ = compile_source(program(decls="bit<7> inc(inout bit<7> x) { x = x + 1; return x; }",
                                  apply="""
        hdr.ipv4.ttl[6:0] = hdr.hops[meta.m16[1:0]].port + inc(hdr.ipv4.ttl[6:0]);"""),
        tmp_path)
    assert len(j["pipelines"][0]["conditionals"]) == 4
    assert "dereference_header_stack" not in json.dumps(j)


def test_a_parser_variables_initializer_calls_before_it_without_a_jump(tmp_path, monkeypatch):
    """A parser's variable initialized with a call inside an expression: its initializer
    is an assignment at the head of `start`, the call a statement before it, its
    `return` no parser op (a parser state has no jumps: the `_jump` it gave was an op
    BMv2 refuses)."""
    path = p4_file(tmp_path, "locals.p4", program(decls=ORDER_DECLS, states="""
        bit<8> v = meta.m8 + inc(meta.m8);
        state start { meta.m16 = (bit<16>)v; transition accept; }"""))
    seen = []
    before_lowering(monkeypatch, lambda program: seen.append(decl_named(program, "P")))
    j, _ = compile_to_objects(str(path))
    parser, = seen
    assert code(parser.locals) == "bit v"
    assert code(parser.states[0].stmts[:3]) == \
        "bit tmp$0 = meta.m8; tmp$1 = inc(meta.m8); v = tmp$0 + tmp$1"
    ops = j["parsers"][0]["parse_states"][0]["parser_ops"]
    assert {op["op"] for op in ops} == {"set"} and validate.problems(j) == []


def test_a_key_with_side_effects_is_computed_before_its_table_keeping_its_name(tmp_path):
    """p4c's KeySideEffect: a key that calls a function is evaluated by statements the
    table's apply runs first (STF `side_effect_order` checks the packets); the table
    matches on the value they leave, and the P4Info names the key as it was written."""
    j, p4info = compile_source(program(
        decls=ORDER_DECLS, ingress="table k { key = { inc(meta.m8): exact; meta.m8: exact; } "
                                   "actions = { NoAction; } }", apply="k.apply();"), tmp_path)
    table, = [t for t in p4info.tables if t.preamble.name.endswith(".k")]
    assert [m.name for m in table.match_fields] == ["inc(meta.m8)", "meta.m8"]
    assert [m.bitwidth for m in table.match_fields] == [8, 8]
    keys = next(t for p in j["pipelines"] for t in p["tables"] if t["name"].endswith(".k"))["key"]
    assert keys[0]["target"][1].startswith("inc_retval") and keys[1]["target"] == ["scalars", "metadata.m8"]
    assert validate.problems(j) == []


@pytest.mark.parametrize("states", [
    """bool b = meta.m16 == 0 && inc(meta.m8) == 1;
       state start { meta.m8 = b ? 8w1 : 8w2; transition accept; }""",
    """bit<8> v = meta.m16 == 0 ? inc(meta.m8) : 8w2;
       state start { meta.m8 = v; transition accept; }""",
])
def test_calls_in_a_parsers_initializers_are_ordered_in_start(tmp_path, states):
    """A parser's variable initializers are statements at the head of `start`
    (desugar.parser_initializers_in_start), so && / || / ?: with calls in them become
    `if`s there, splitting the state, as in any state (they were refused: nothing could
    go before `start`; STF side_effect_order, f1 == 14)."""
    j, _ = compile_source(program(decls=ORDER_DECLS, states=states), tmp_path)
    assert validate.problems(j) == []
    names = [s["name"] for s in j["parsers"][0]["parse_states"]]
    assert names[0] == "start" and len(names) > 1


def test_initializers_run_once_when_a_transition_reenters_start(tmp_path, monkeypatch):
    """When a transition goes back to `start`, the initializers get an entry state of
    their own (named `start`, BMv2's init_state) that continues in the old `start`,
    renamed, so they do not run again on each return."""
    states = """bit<8> seen = 7;
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x8100: start; default: accept; }
        }"""
    met = []
    before_lowering(monkeypatch, lambda program: met.extend(decl_named(program, "P").states))
    j, _ = compile_source(program(states=states), tmp_path)
    entry, body = met
    assert (entry.name, entry.transition.next, body.name) == ("start", "start_0", "start_0")
    assert isinstance(entry.stmts[0], A.Assign) and entry.stmts[0].lhs.name == "seen"
    assert [c[2] for c in body.transition.cases] == ["start_0", "accept"]
    assert j["parsers"][0]["init_state"] == "start" and validate.problems(j) == []


def test_a_loop_initialized_by_assignment_runs_only_at_run_time_in_an_action(tmp_path):
    """`for (x = e; ...)` writes a variable of the enclosing scope: an action lowers the
    loop at run time, where the variable is written (STF `side_effect_order`); an apply
    block, which unrolls every loop at compile time, refuses it at the initializer."""
    loop = "for (meta.m8 = 0; meta.m8 < 3; meta.m8 = meta.m8 + 1) { meta.m16 = meta.m16 + 1; }"
    compile_source(program(ingress=f"action a() {{ {loop} }} table t {{ actions = {{ a; }} }}",
                           apply="t.apply();"), tmp_path)
    with pytest.raises(CompileError, match="a for-loop initializer that is not a declaration"):
        compile_source(program(apply=loop), tmp_path)


def test_sub_controls_are_inlined_once_before_lowering_a_copy_per_application(tmp_path,
                                                                              monkeypatch):
    """inline.inline_program runs once over the program after the check: the emitter
    meets each application of a sub-control as the A.InlinedBlock the pass wrote, with
    a copy of its own (the applications of the copy, through a constructor parameter of
    a control type too, inlined in it), and lowers the copy; it names the copies as it
    reaches them (`I.s`, `I.s_0`) and the inner ones in each."""
    path = p4_file(tmp_path, "inlined.p4", program(controls="""
control Inner(inout headers hdr, inout metadata meta) {
    apply { meta.m8 = meta.m8 + 1; }
}
control S(inout headers hdr, inout metadata meta)(Inner c) {
    action bump() { meta.m16 = meta.m16 + 1; }
    apply { c.apply(hdr, meta); bump(); }
}""", ingress="Inner() inner; S(inner) s;", apply="s.apply(hdr, meta); s.apply(hdr, meta);"))
    met = []

    def keep_and_refuse_inlining(program):
        met.extend(decl_named(program, "I").body.stmts)
        monkeypatch.setattr(inline.Inliner, "inlined", None)

    before_lowering(monkeypatch, keep_and_refuse_inlining)
    j, _ = compile_to_objects(str(path))
    assert [type(s).__name__ for s in met] == ["InlinedBlock", "InlinedBlock"]
    copies = [s.inlined.decl for s in met]
    assert copies[0] is not copies[1] and copies[0].body is not copies[1].body
    inner = [c.body.stmts[0] for c in copies]
    assert all(isinstance(s, A.InlinedBlock) for s in inner)
    assert inner[0].inlined.decl is not inner[1].inlined.decl
    actions = [a["name"] for a in j["actions"]]
    assert "I.s.bump" in actions and "I.s_0.bump" in actions


def test_sub_parsers_are_inlined_once_before_lowering_a_copy_per_application(tmp_path,
                                                                             monkeypatch):
    """inline.inline_program writes each application of a sub-parser in V1Switch's
    parser as an A.InlinedBlock with a copy of its own; the emitter lowers the copy's
    states, named per application as it reaches them (`sp_<state>`, `sp_0_<state>`)."""
    path = p4_file(tmp_path, "subparsers.p4", program(controls="""
parser Sub(packet_in pkt, inout headers hdr) {
    state start { pkt.extract(hdr.ipv4); transition accept; }
}""", states="""
        Sub() sp;
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: one; default: two; }
        }
        state one { sp.apply(pkt, hdr); transition accept; }
        state two { sp.apply(pkt, hdr); transition accept; }"""))
    met = []

    def keep_and_refuse_inlining(program):
        met.extend(s for st in decl_named(program, "P").states for s in st.stmts)
        monkeypatch.setattr(inline.Inliner, "inlined", None)

    before_lowering(monkeypatch, keep_and_refuse_inlining)
    j, _ = compile_to_objects(str(path))
    applications = [s for s in met if isinstance(s, A.InlinedBlock)]
    assert len(applications) == 2
    assert applications[0].inlined.decl.states[0] is not applications[1].inlined.decl.states[0]
    names = [st["name"] for st in j["parsers"][0]["parse_states"]]
    assert "sp_start" in names and "sp_0_start" in names


def test_each_call_inlines_its_own_copy_of_the_callee_made_before_lowering(tmp_path,
                                                                           monkeypatch):
    """inline.inline_program gives every call of an action or function a copy of the
    callee for that call (`A.Call.inlined`), its own calls copied in turn; the emitter
    inlines the copy: with the declared functions' bodies gone once the pass has run,
    the JSON is the same."""
    path = p4_file(tmp_path, "calls.p4", program(decls="""
bit<8> twice(in bit<8> x) { return x + x; }
bit<8> quad(in bit<8> x) { return twice(twice(x)); }
action g(inout bit<8> v) { v = quad(v); }""", apply="meta.m8 = quad(meta.m8); g(hdr.ipv4.ttl);"))
    expected = compile_to_objects(str(path))
    calls = []

    def keep_calls_and_drop_declared_bodies(program):
        calls.extend(x for x in ast_nodes(program.decls, copies=True)
                     if isinstance(x, A.Call) and x.inlined is not None)
        for d in program.decls:
            if isinstance(d, A.FunctionDecl):
                d.body = None

    before_lowering(monkeypatch, keep_calls_and_drop_declared_bodies)
    assert compile_to_objects(str(path)) == expected
    copies = {id(c.inlined.decl) for c in calls}
    assert len(copies) == len(calls) >= 3


def test_an_expression_hsindex_rebuilds_around_a_constant_index_is_read_from_the_ir(
        tmp_path, monkeypatch):
    """hsindex copies `hdr.hops[meta.m8].port + 1` once per index; each copy stands for
    the expression checked (a stack's elements have one type), so the emitter reads it
    from the program's IR (`Compiler.keep_nodes`) instead of checking it again: only the
    expressions naming the constant index itself are checked in its scope."""
    path = p4_file(tmp_path, "hsindex.p4",
                   program(apply="hdr.hops[meta.m8].port = hdr.hops[meta.m8].port + 1;"))
    checked_again = []
    typed = exprs.ExprMixin.typed
    monkeypatch.setattr(exprs.ExprMixin, "typed",
                        lambda self, e, ctx: checked_again.append(e) or typed(self, e, ctx))
    compile_to_objects(str(path))
    assert checked_again and all(isinstance(e, A.Index) for e in checked_again)


def test_an_expression_the_splitter_rebuilds_is_read_from_the_programs_ir(monkeypatch):
    """The condition splitter, run before lowering, rebuilds `f(t.apply().hit ? 1 : 2)`'s
    operand and call around a bool temporary; each keeps the node of the expression it
    stands for (`Compiler.keep_nodes`), so the emitter checks none of operand_applies.p4's
    expressions again (it checked 3 when the splitter ran as it lowered)."""
    checked_again = []
    typed = exprs.ExprMixin.typed
    monkeypatch.setattr(exprs.ExprMixin, "typed",
                        lambda self, e, ctx: checked_again.append(e) or typed(self, e, ctx))
    compile_to_objects(str(ROOT / "softswitch/tests/stf/operand_applies.p4"))
    assert checked_again == []


def test_a_tna_program_has_its_loops_unrolled_by_the_tna_check_too(tmp_path, monkeypatch):
    """tna.check_program unrolls the loops its scopes decide as check_v1model does, before
    tna_lower; the lowered JSON and P4Info are the emitter's own unrolling's."""
    text = (ROOT / "hw/tofino/red_ecn.p4").read_text()
    anchor = "        eg_dprsr_md.drop_ctl = 0;\n"
    assert text.count(anchor) == 1
    path = p4_file(tmp_path, "red_loops.p4", text.replace(anchor, anchor + """
        for (bit<8> i in 0 .. 3) {
            if (i == 2) { break; }
            for (bit<8> j = 0; j < 2; j = j + 1) { meta.red.q = meta.red.q + (bit<32>) j; }
            meta.red.rand = meta.red.rand + (bit<32>) i;
        }
"""))
    checked = check_tna_to_ir(str(path), "tna")
    assert not any(isinstance(n, (A.For, A.ForIn)) for n in ast_nodes(checked.ast.decls))
    assert any(isinstance(n, ir.Loop) for b in checked.pipelines[0].values()
               for n in ir.walk(b))                     # the IR keeps the loop for the lint
    assert_the_emitters_own_unrolling_gives(
        compile_tna_to_objects(str(path), "tna"), monkeypatch, CHECKER_UNROLL_OFF,
        lambda: compile_tna_to_objects(str(path), "tna"))


# Negative programs whose error is a limit of the BMv2 target, not of P4-16: the back-end's
# to report (README.md, "Architecture: phases"); every other one is the checker's.
BMV2_LIMITS = {"unsupported_runtime_division", "unsupported_table_applied_twice",
               "unsupported_user_extern", "unsupported_wide_field_in_expression",
               "unsupported_header_not_whole_bytes"}


@pytest.mark.parametrize("path", NEGATIVE_V1MODEL, ids=lambda p: p.stem)
def test_the_checker_reports_the_compilers_error(path):
    with pytest.raises(CompileError) as compiler:
        compile_to_objects(str(path))
    if path.stem in BMV2_LIMITS:
        check_v1model(path)
        return
    with pytest.raises(CompileError) as checker:
        check_v1model(path)
    assert checker.value.render() == compiler.value.render()


TABLE_T = "action a() { } table t { key = { meta.m8: exact; } actions = { a; } }"
SUB = "control Sub(inout bit<8> x) { apply { x = 1; } }"
ARITY_ERRORS = [
    # (program kwargs, text at the error, message): the checker's alone (the emitter's
    # copies went), as the emitter said it (a direct `Sub.apply()` names the type, which
    # the emitter named by its generated instance, 'Sub_inst')
    (dict(apply="hdr.ipv4.setValid(1);"), "hdr.ipv4.setValid(1)",
     "wrong number of arguments to 'setValid': expected 0, got 1"),
    (dict(apply="if (hdr.ipv4.isValid(1)) { meta.m8 = 1; }"), "hdr.ipv4.isValid(1)",
     "wrong number of arguments to 'isValid': expected 0, got 1"),
    (dict(apply="hdr.hops.push_front();"), "hdr.hops.push_front()",
     "wrong number of arguments to 'push_front': expected 1, got 0"),
    (dict(ingress=TABLE_T, apply="t.apply(1);"), "t.apply(1)",
     "table apply() takes no arguments"),
    (dict(ingress=TABLE_T, apply="if (t.apply(1).hit) { meta.m8 = 1; }"), "t.apply(1)",
     "table apply() takes no arguments"),
    (dict(controls=SUB, ingress="Sub() s;", apply="s.apply();"), "s.apply()",
     "wrong number of arguments to 's': expected 1, got 0"),
    (dict(controls="control Sub(inout bit<8> x) { apply { x = 1; } }\n"
                   "control Outer(inout bit<8> y)(Sub s) { apply { s.apply(y, y); } }",
          ingress="Sub() s; Outer(s) o;", apply="o.apply(meta.m8);"), "s.apply(y, y)",
     "wrong number of arguments to 's': expected 1, got 2"),
    (dict(controls="parser Sub(packet_in p, out ethernet_t e) { state start { p.extract(e); "
                   "transition accept; } }",
          states="Sub() sp; state start { sp.apply(pkt); transition accept; }"), "sp.apply(pkt)",
     "wrong number of arguments to 'sp': expected 2, got 1"),
    (dict(controls=SUB, apply="Sub.apply(meta.m8, meta.m8);"), "Sub.apply(",
     "wrong number of arguments to 'Sub': expected 1, got 2"),
    (dict(controls="control Sub(inout bit<8> x)(bit<8> k) { apply { x = k; } }",
          ingress="Sub() s;", apply="s.apply(meta.m8);"), "Sub() s",
     "wrong number of arguments to 'Sub': expected 1, got 0"),
    (dict(ingress="register<bit<8>>() r;"), "register<bit<8>>() r",
     "wrong number of arguments to 'register': expected 1, got 0"),
    (dict(decls="counter(4, CounterType.packets, 1) c;"), "counter(4",
     "wrong number of arguments to 'counter': expected 2, got 3"),
    (dict(ingress=TABLE_T[:-1] + " implementation = action_profile(); }",
          apply="t.apply();"), "action_profile()",
     "wrong number of arguments to 'action_profile': expected 1, got 0"),
    (dict(states="state start { pkt.extract(); transition accept; }"), "pkt.extract()",
     "wrong number of arguments to 'extract': expected 1 or 2, got 0"),
    (dict(deparse="pkt.emit(hdr.ethernet, hdr.ipv4);"), "pkt.emit(",
     "wrong number of arguments to 'emit': expected 1, got 2"),
]



OPERATOR_ERRORS = [
    # (program kwargs, text at the error, message): the checker's alone, as the emitter's
    # unify / compare said it; generic results and lookahead<T>() are typed for it
    (dict(apply="meta.m8 = meta.m8 + hdr.ipv4.ttl + meta.m16[7:0] + (bit<8>)meta.m32 + "
                "hdr.ipv4.srcAddr[7:0] + meta.m16;"), "meta.m8 + hdr.ipv4.ttl",
     "operands of '+' have different types: bit<8> and bit<16>"),
    (dict(apply="meta.m8 = (bit<8>)(hdr.ipv4.isValid() & true);"), "hdr.ipv4.isValid() &",
     "operator '&' cannot be applied to bool"),
    (dict(apply="if (-hdr.ethernet == 8w1) { meta.m8 = 1; }"), "-hdr.ethernet",
     "operator '-' cannot be applied to header ethernet_t"),
    (dict(apply="if (hdr.ipv4.isValid() == 1) { meta.m8 = 1; }"), "1) {",
     "cannot compare bool with int using '=='"),
    (dict(apply="if (hdr.ipv4 == hdr.ethernet) { meta.m8 = 1; }"), "hdr.ethernet) {",
     "cannot compare header ipv4_t with header ethernet_t using '=='"),
    (dict(decls="enum Color { RED, GREEN }",
          apply="if (Color.RED < Color.GREEN) { meta.m8 = 1; }"), "Color.GREEN) {",
     "cannot compare enum Color with enum Color using '<'"),
    (dict(apply="if (sm.parser_error == 0) { meta.m8 = 1; }"), "0) {",
     "cannot compare error with int using '=='"),
    (dict(states="state start { meta.m8 = pkt.lookahead<bit<16>>() + meta.m8; "
                 "transition accept; }"), "pkt.lookahead<bit<16>>() +",
     "operands of '+' have different types: bit<16> and bit<8>"),
    (dict(decls="T pick<T>(in T a) { return a; }",
          apply="meta.m8 = pick(hdr.ipv4.srcAddr) + meta.m8;"), "pick(hdr",
     "operands of '+' have different types: bit<32> and bit<8>"),
    (dict(decls="T twice<T>(in T a) { return a + a; }",
          apply="if (twice(hdr.ipv4.isValid())) { meta.m8 = 1; }"), "a + a",
     "operator '+' cannot be applied to bool"),
    (dict(decls="T twice<T>(in T a) { return a + a; }",
          apply="if (twice<bool>(true)) { meta.m8 = 1; }"), "a + a",
     "operator '+' cannot be applied to bool"),
]



OPERAND_ERRORS = [
    # (program kwargs, text at the error, message): what casts, shifts, `++`, the
    # saturating operators and slices take, the checker's alone (the emitter reads the types it gave),
    # as the emitter said it (`6 |+| 2` crashed the checker's folding)
    (dict(apply="meta.m8 = (bit<8>)hdr.ethernet;"), "(bit<8>)hdr.ethernet",
     "cannot cast header ethernet_t to bit<8>"),
    (dict(apply="meta.m8 = (bit<8>)hdr.ipv4.isValid();"), "(bit<8>)hdr.ipv4",
     "cannot cast bool to bit<8>"),
    (dict(apply="bool b = (bool)meta.m8;"), "(bool)meta.m8", "cannot cast bit<8> to bool"),
    (dict(apply="meta.m8 = (bit<8>)(hdr.ipv4.isValid() << 1);"), "hdr.ipv4.isValid() <<",
     "cannot shift a value of type bool"),
    (dict(apply="meta.m8 = meta.m8 << (int<8>)1;"), "(int<8>)1",
     "shift amount must be unsigned, not int<8>"),
    (dict(apply="meta.m8 = 1 << meta.m8;"), "1 << meta.m8",
     "the left operand of a shift by a run-time amount needs a width"),
    (dict(apply="meta.m16 = meta.m8 ++ 7;"), "7;", "operands of '++' need a width, not int"),
    (dict(apply="meta.m8 = (bit<8>)(6 |+| 2);"), "6 |+| 2",
     "saturating '|+|' needs operands with a width"),
    (dict(apply="meta.m8 = (bit<8>)hdr.ipv4.isValid()[0:0];"), "hdr.ipv4.isValid()[0:0]",
     "cannot slice a value of type bool"),
    (dict(apply="meta.m8 = meta.m8[8:1];"), "meta.m8[8:1]",
     "slice [8:1] out of range for bit<8>"),
]



CONVERSION_ERRORS = [
    # (program kwargs, text at the error, message): what converts to what in assignments,
    # returns, arguments, `?:` branches and switch labels, the checker's alone (the emitter's
    # coerce only converts); as the emitter said it, but where its message named a later
    # place (random's arguments, a list passed to a struct parameter) or it had no rule (a
    # label of another width, which it compared as it was)
    (dict(apply="meta.m8 = (meta.m8 == 1) ? 8w1 : 16w2;"), "16w2",
     "type mismatch in '?:': expected bit<8>, got bit<16>"),
    (dict(decls="bit<8> f() { return 16w1; }", apply="meta.m8 = f();"), "16w1; }",
     "type mismatch in assignment: expected bit<8>, got bit<16>"),
    (dict(decls="struct s_t { bit<8> a; bit<16> b; }", apply="s_t s = {8w1, 8w2};"),
     "{8w1, 8w2}", "type mismatch in assignment: expected bit<16>, got bit<8>"),
    (dict(decls="struct s_t { bit<8> a; bit<16> b; }",
          ingress="action g(in s_t s) { meta.m8 = s.a; }", apply="g({8w1, 8w2});"),
     "{8w1, 8w2}", "type mismatch in argument 's' of 'g': expected bit<16>, got bit<8>"),
    (dict(decls="struct s_t { bit<8> a; bit<16> b; }", apply="s_t s = {8w1, 16w2, 8w3};"),
     "{8w1, 16w2, 8w3}", "expected 2 values for struct s_t, got 3"),
    (dict(apply="hdr.ethernet = {1, 2};"), "hdr.ethernet = {1, 2}",
     "expected 3 values for header ethernet_t"),
    (dict(decls="enum E1 { A } enum E2 { B }", apply="E1 e = E2.B;"), "E2.B;",
     "type mismatch in assignment: expected enum E1, got enum E2"),
    (dict(decls="enum bit<8> E8 { A = 1 }", apply="E8 e = meta.m8;"), "meta.m8;",
     "type mismatch in assignment: expected enum E8, got bit<8>"),
    (dict(ingress="action a(inout bit<8> x) { x = 1; } "
                  "table t { key = { meta.m8: exact; } actions = { a(meta.m16); } }",
          apply="t.apply();"), "meta.m16); }",
     "argument 'x' of 'a' has type bit<16>, but bit<8> is expected (width mismatch)"),
    (dict(controls=SUB, ingress="Sub() s;", apply="s.apply(meta.m16);"), "meta.m16);",
     "argument 'x' of 's' has type bit<16>, but bit<8> is expected (width mismatch)"),
    (dict(controls="control Sub(inout bit<8> x)(bit<8> k) { apply { x = k; } }",
          ingress="Sub(16w1) s;", apply="s.apply(meta.m8);"), "16w1) s",
     "argument 'k' of 'Sub' has type bit<16>, but bit<8> is expected (width mismatch)"),
    (dict(apply="hdr.hops.push_front(meta.m8);"), "meta.m8);",
     "type mismatch in argument 'count' of 'push_front': expected int, got bit<8>"),
    (dict(decls="T pick<T>(in T a) { return a; }", apply="meta.m8 = pick<bit<8>>(16w1);"),
     "16w1);", "argument 'a' of 'pick' has type bit<16>, but bit<8> is expected (width "
               "mismatch)"),
    (dict(ingress="register<bit<8>>(4) r;", apply="r.write(0, _);"), "_);",
     "don't care argument only allowed for out parameters"),
    (dict(ingress="action a(inout bit<8> x) { x = 1; } "
                  "table t { key = { meta.m8: exact; } actions = { a(_); } }",
          apply="t.apply();"), "_); }",
     "don't care argument only allowed for out parameters"),
    (dict(apply="switch (meta.m8) { 16w1: { meta.m16 = 1; } default: { } }"), "16w1:",
     "type mismatch in switch label: expected bit<8>, got bit<16>"),
    (dict(apply="assume(7);"), "7);",
     "type mismatch in argument 'check' of 'assume': expected bool, got int"),
    (dict(apply="random(meta.m8, 0, 16w7);"), "16w7",
     "argument 'hi' of 'random' has type bit<16>, but bit<8> is expected (width mismatch)"),
]



OPT_HEADER = dict(decls="header opt_t { varbit<320> options; }",
                  headers="ethernet_t ethernet; ipv4_t ipv4; opt_t opt;")
PACKET_ERRORS = [
    # (program kwargs, text at the error, message): what extract and lookahead take, the
    # checker's alone (the emitter reads lookahead's type from it), as the emitter said it
    (dict(OPT_HEADER, states="state start { pkt.extract(hdr.opt); transition accept; }"),
     "pkt.extract(hdr.opt)",
     "extract of a header with a varbit field needs its length in bits as second argument"),
    (dict(states="state start { pkt.extract(hdr.ethernet, 32w8); transition accept; }"),
     "pkt.extract(hdr.ethernet, 32w8)", "two-argument extract needs a header with a varbit "
                                         "field"),
    (dict(OPT_HEADER, states="state start { pkt.extract(hdr.opt, 16w8); "
                             "transition accept; }"), "16w8",
     "argument 'variableFieldSizeInBits' of 'extract' has type bit<16>, but bit<32> is "
     "expected (width mismatch)"),
    (dict(states="state start { meta.m8 = pkt.lookahead(); transition accept; }"),
     "pkt.lookahead()", "lookahead needs one type argument and no arguments"),
    (dict(states="state start { pkt.extract(_); transition accept; }"), "_);",
     "cannot infer the type of '_' for parameter 'hdr' of 'extract': give the type "
     "arguments"),
]



def select_state(key, cases):
    return dict(states=f"state start {{ transition select({key}) {{ {cases} }} }}")


ETHERTYPE = "hdr.ethernet.etherType"
SELECT_ERRORS = [
    # (program kwargs, text at the error, message): what a select takes, the checker's
    # alone (so for TNA programs too), as the emitter said it
    (select_state("hdr.ethernet", "default: accept;"), "hdr.ethernet)",
     "cannot select on a value of type header ethernet_t"),
    (select_state(ETHERTYPE, "(1, 2): accept; default: accept;"), "(1, 2): accept",
     "select case has 2 values for 1 keys"),
    (select_state(ETHERTYPE, "5..2: accept; default: accept;"), "5..2", "empty range 5..2"),
    (select_state(ETHERTYPE, "meta.m16: accept; default: accept;"), "meta.m16: accept",
     "select case values must be compile-time constants"),
    (select_state(ETHERTYPE, "0x800 &&& 0x10000: accept; default: accept;"), "0x10000",
     "value 65536 does not fit the 16-bit select key"),
]



INDEX_ERRORS = [
    # (program kwargs, text at the error, message): what can be indexed and where, the
    # checker's alone, as the emitter said it
    (dict(apply="hdr.hops[7].setValid();"), "7]", "index 7 out of bounds for stack of size 4"),
    (dict(apply="meta.m8[0] = 1;"), "meta.m8[0]", "cannot index a value of type bit<8>"),
    (dict(ingress="action a() { tuple<bit<8>, bit<16>> t = {1, 2}; meta.m8 = t[2]; }",
          apply="a();"), "2]; }", "index 2 out of bounds for tuple<bit<8>, bit<16>>"),
    (dict(ingress="action a() { tuple<bit<8>, bit<16>> t = {1, 2}; meta.m8 = t[meta.m8]; }",
          apply="a();"), "meta.m8]; }", "tuple index must be a compile-time integer constant"),
]



def test_what_a_pass_wrote_is_checked_as_it_is_lowered(tmp_path):
    """An unrolled loop's index is a constant only once unrolled: the checker, run again in
    the emitter's scope on the unrolled body (ExprMixin.typed), refuses it there."""
    source = program(apply="for (bit<8> i = 0; i < 5; i = i + 1) { hdr.hops[i].setValid(); }")
    path = p4_file(tmp_path, "loop.p4", source)
    check_v1model(path)
    with pytest.raises(CompileError) as compiler:
        compile_to_objects(str(path))
    assert compiler.value.message == "index 4 out of bounds for stack of size 4"
    assert (compiler.value.loc.line, compiler.value.loc.col) == line_of(source, "i].setValid")


JUMP_ERRORS = [
    # (program kwargs, text at the error, message): what `return`, `break` and `continue`
    # may do where they are, the checker's alone, as the emitter said it (`break` in an
    # apply block was an unsupported statement to it)
    (dict(apply="if (meta.m8 == 1) { return 1; }"), "return 1",
     "a control's apply block cannot return a value"),
    (dict(ingress="action a() { meta.m8 = 1; return 27; }", apply="a();"), "27; }",
     "this return statement cannot return a value"),
    (dict(decls="void f() { return 3; }", apply="f();"), "3; }",
     "this return statement cannot return a value"),
    (dict(ingress="action a() { continue; }", apply="a();"), "continue;",
     "'continue' outside a loop"),
    (dict(apply="break;"), "break;", "'break' outside a loop"),
]


VARIABLE_ERRORS = [
    # (program kwargs, text at the error, message): which types a variable may have, the
    # checker's alone, as the emitter said it (an `int` variable crashed it: "no storage
    # width for int"; an `int` for-loop variable, unrolled as a constant, stays allowed)
    (dict(apply="packet_in pk;"), "packet_in pk;", "cannot declare a variable of type extern "
                                                   "packet_in"),
    (dict(ingress="string s;", apply="meta.m8 = 1;"), "string s",
     "cannot declare a variable of type string"),
    (dict(apply="int i = 3; meta.m8 = (bit<8>)i;"), "int i", "cannot declare a variable of "
                                                            "type int"),
]




TABLES_A_B = TABLE_T + " action b() { }"
NAME_ERRORS = [
    # (program kwargs, text at the error, message): names and members the checker alone
    # resolves now, and what extract takes, as the emitter said it (but `t.apply().nope`,
    # which the emitter took for an unsupported use of apply, and `s_t.a` on a struct
    # type, which crashed)
    (dict(apply="meta.m8 = nosuch;"), "nosuch", "undeclared identifier 'nosuch'"),
    (dict(apply="meta.nope = 1;"), "nope", "no field 'nope' in struct metadata"),
    (dict(apply="hdr.ipv4.nope = 1;"), "nope", "no field or method 'nope' in header ipv4_t"),
    (dict(decls="header_union u_t { ethernet_t e; ipv4_t i; }",
          headers="ethernet_t ethernet; ipv4_t ipv4; u_t u;", apply="hdr.u.setValid();"),
     "setValid", "no member 'setValid' in header_union u_t"),
    (dict(apply="hdr.hops.nope.setValid();"), "nope", "header stack has no member 'nope'"),
    (dict(ingress=TABLE_T, apply="if (t.apply().nope) { meta.m8 = 1; }"), "t.apply().nope",
     "table apply result has no member 'nope'"),
    (dict(apply="meta.m8 = meta.m16.nope;"), "nope", "bit<16> has no member 'nope'"),
    (dict(decls="enum Color { RED }", apply="if (Color.BLUE == Color.RED) { meta.m8 = 1; }"),
     "BLUE", "enum Color has no member 'BLUE'"),
    (dict(apply="if (sm.parser_error == error.Nope) { meta.m8 = 1; }"), "Nope",
     "undeclared error 'error.Nope'"),
    (dict(decls="struct s_t { bit<8> a; }", apply="meta.m8 = s_t.a;"), "s_t.a",
     "type struct s_t has no member 'a'"),
    (dict(apply="meta.m8 = bit<8>.a;"), "bit<8>.a", "type bit<8> has no member 'a'"),
    (dict(ingress=TABLES_A_B, apply="switch (t.apply().action_run) { b: { meta.m8 = 1; } }"),
     "b: {", "action 'b' is not an action of table 't'"),
    (dict(ingress=TABLE_T, apply="switch (t.apply().action_run) { c: { meta.m8 = 1; } }"),
     "c: {", "undeclared action 'c'"),
    (dict(ingress=TABLE_T, apply="switch (t.apply().action_run) { 1: { meta.m8 = 1; } }"),
     "1: {", "switch labels must be action names"),
    (dict(apply="switch (meta.m8) { NOPE: { meta.m8 = 1; } }"), "NOPE",
     "undeclared identifier 'NOPE'"),
    (dict(decls="header_union u_t { ethernet_t e; ipv4_t i; }",
          headers="ethernet_t ethernet; ipv4_t ipv4; u_t u;",
          states="state start { pkt.extract(hdr.u); transition accept; }"), "hdr.u)",
     "extract needs a header, not header_union u_t"),
]



DUPLICATE_ERRORS = [
    # (program kwargs, text at the error, message): a name declared twice in one scope is
    # the checker's error alone, as the emitter said it
    (dict(apply="bit<8> x = 1; bit<8> x = 2; meta.m8 = x;"), "x = 2",
     "duplicate declaration of 'x'"),
    (dict(apply="const bit<8> c = 1; bit<8> c = 2; meta.m8 = c;"), "c = 2",
     "duplicate declaration of 'c'"),
    (dict(ingress="action a(bit<8> x) { bit<8> x = 1; meta.m8 = x; }", apply="a(1);"),
     "x = 1", "duplicate declaration of 'x'"),
    (dict(ingress="action a() { { bit<8> y = 1; bit<8> y = 2; meta.m8 = y; } }",
          apply="a();"), "y = 2", "duplicate declaration of 'y'"),
    (dict(ingress="bit<8> meta;"), "meta;", "duplicate declaration of 'meta'"),
    (dict(states="state start { bit<8> x = 1; bit<8> x = 2; meta.m8 = x; "
                 "transition accept; }"), "x = 2", "duplicate declaration of 'x'"),
]
CHECKER_ERRORS = {"arity": ARITY_ERRORS, "operator": OPERATOR_ERRORS,
                  "operand": OPERAND_ERRORS, "conversion": CONVERSION_ERRORS,
                  "packet": PACKET_ERRORS, "select": SELECT_ERRORS, "index": INDEX_ERRORS,
                  "jump": JUMP_ERRORS, "variable": VARIABLE_ERRORS, "name": NAME_ERRORS,
                  "duplicate": DUPLICATE_ERRORS}


@pytest.mark.parametrize("kw, needle, message", [
    pytest.param(*case, id=f"{group}{i}-" + re.sub(r"\W+", "_", case[2]).strip("_"))
    for group, cases in CHECKER_ERRORS.items() for i, case in enumerate(cases)])
def test_the_checker_alone_refuses_as_the_emitter_did(kw, needle, message, tmp_path):
    """The checker phase refuses the program with the error the compiler reports, at
    `needle` (its first place in the program) with `message`."""
    source = program(**kw)
    path = p4_file(tmp_path, "refused.p4", source)
    with pytest.raises(CompileError) as checker:
        check_v1model(path)
    with pytest.raises(CompileError) as compiler:
        compile_to_objects(str(path))
    line, col = line_of(source, needle)
    assert checker.value.render() == compiler.value.render()
    assert (checker.value.loc.line, checker.value.loc.col, checker.value.message) == \
        (line, col, message)


def test_named_arguments_are_checked_by_name(tmp_path):
    check_v1model(p4_file(tmp_path, "named.p4", program(
        ingress="action a(bit<8> x, bit<16> y) { meta.m8 = x; }",
        apply="a(y = meta.m16, x = meta.m8);")))


VALID_PROGRAMS = {
    # a name declared again in an inner block, another parser state or the apply block
    "shadowed_in_an_inner_block":
        dict(apply="bit<8> x = 1; if (x == 1) { bit<8> x = 2; meta.m8 = x; }"),
    "declared_in_two_parser_states":
        dict(states="state start { bit<8> x = 1; meta.m8 = x; transition s2; } "
                    "state s2 { bit<8> x = 2; meta.m8 = x; transition accept; }"),
    "a_controls_local_declared_again_in_apply":
        dict(ingress="bit<8> v;", apply="bit<8> v = 1; meta.m8 = v;"),
    # an `int` for-loop variable, unrolled as a constant (VARIABLE_ERRORS: no int variable)
    "an_int_loop_variable":
        dict(apply="for (int i = 0; i < 3; i = i + 1) { hdr.hops[i].setValid(); }"),
}


@pytest.mark.parametrize("kw", VALID_PROGRAMS.values(), ids=VALID_PROGRAMS.keys())
def test_the_checker_and_the_compiler_take_valid_programs(kw, tmp_path):
    path = p4_file(tmp_path, "valid.p4", program(**kw))
    check_v1model(path)
    compile_to_objects(str(path))


SUB_CONTROL = """
Register<bit<32>, bit<9>>(512) reg;
RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
    void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
};
control Scale(inout meta_t md) {
    apply {
        md.c = md.a * md.b;
        md.b = inc.execute(1);
    }
}
control Ing(ING_PARAMS) {
    Scale() scale;
    apply {
        md.a = inc.execute(0);
        scale.apply(md);
    }
}
"""


def test_a_control_applied_inside_a_block_is_checked_and_linted(tmp_path):
    path = tna_program(tmp_path, SUB_CONTROL)
    scale = ingress_of(check_tna_to_ir(path, "tna")).locals[0]
    assert isinstance(scale.block, ir.Control) and scale.block.name == "Scale"
    problems = linted(path)
    assert [line for line, _ in problems] == ["md.c = md.a * md.b;", "md.b = inc.execute(1);"]
    assert "register 'reg' accessed twice for one packet" in problems[1][1]


def test_the_access_rule_follows_function_calls(tmp_path):
    ingress = """
Register<bit<32>, bit<9>>(512) reg;
RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
    void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
};
bit<32> bump(in bit<9> port) { return inc.execute(port); }
control Ing(ING_PARAMS) {
    apply {
        md.a = bump(0);
        md.b = bump(1);
    }
}
"""
    assert [line for line, _ in linted(tna_program(tmp_path, ingress))] == ["md.b = bump(1);"]


@pytest.mark.parametrize("method, message", [
    ("void apply(inout bit<16> v, out bit<32> rv) { rv = 0; }",
     "type mismatch in parameter 'v' of 'apply': expected bit<32>, got bit<16>"),
    ("void apply(in bit<32> v) { }",
     "parameter 'v' of 'apply' must be 'inout' (RegisterAction.apply)"),
    ("void update(inout bit<32> v) { }",
     "'update' is not an abstract method of extern RegisterAction"),
])
def test_a_register_action_implements_the_abstract_apply(tmp_path, method, message):
    ingress = REGISTER_INGRESS.replace(
        "void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }", method)
    with pytest.raises(CompileError) as err:
        check_tna_to_ir(tna_program(tmp_path, ingress), "tna")
    assert err.value.message == message
