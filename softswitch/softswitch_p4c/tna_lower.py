"""TNA / T2NA on the built-in target: a checked TNA program rewritten into a V1Switch program.

The engine runs simple_switch's model (one parser, ingress, traffic manager,
egress, one deparser). A TNA pipeline maps onto it as follows; anything else a
TNA program may do is refused with a file:line:col error naming the construct.

- Blocks: the ingress parser becomes the parser, the ingress and egress controls
  the two pipelines, the egress deparser the deparser (+ its checksums as
  `update_checksum` in the compute-checksum control). The egress parser and the
  ingress deparser (emits only) go to the JSON as a second parser and deparser,
  named in `__tna__`: the engine starts egress by re-parsing, with the egress
  parser, the bytes the ingress deparser emits (bridged headers included), into
  headers that all start invalid, as Tofino does. Both gresses use one header type.
- Intrinsic metadata: every block parameter other than the packet and the
  headers becomes a member of one generated metadata struct (`__tna_md`); glue
  copies standard_metadata in (ports, queue depths, timestamps in ns from the
  engine's us) and out: `drop_ctl[0]` -> `mark_to_drop`, `ucast_egress_port` ->
  `egress_spec` (a packet that never sets it is dropped, as on Tofino).
  Queue depths: the JSON's `"__tna__": {"cell_bytes": N}` makes the engine's
  traffic manager count Tofino's cells (80 B on Tofino 1, 176 B on Tofino 2):
  each queued frame ceil(length / cell), saturated at 19 bits, as on Tofino.
- Externs: Register -> register; RegisterAction.execute -> read, the action's
  body, write (one access per packet, as the stateful ALU); Random.get ->
  random; Hash.get -> hash (CRC16, CRC32, IDENTITY, RANDOM); Counter ->
  counter; Lpf.execute -> registers (the time constant in ns per index in a
  register named as the Lpf, the average and the previous sample time beside
  it) and the engine's `tna_lpf_sample` primitive (SAMPLE mode, one time
  constant for rise and fall); Wred.execute -> the same average, then RED's
  drop decision against per-index registers `<name>__min`, `__max`, `__maxp`.
"""
import dataclasses
import os

from . import ast as A
from .compiler import Compiler
from .errors import CompileError, SrcLoc
from .exprs import as_data
from .parser import parse
from .preprocess import INCLUDE_DIR, preprocess

TNA_FILES = {"tofino.p4", "tna.p4", "t2na.p4"}
MD = "__tna_md"
CELL_ANNOTATION = "tna_cell_bytes"
TNA_BLOCKS_ANNOTATION = "tna_egress_parser_ingress_deparser"
EGRESS_PARSER, INGRESS_DEPARSER = "tna_egress_parser", "tna_ingress_deparser"
SM = "__tna_sm"
DROP_PORT = 511
# Lowered extern instance types (v1model) for TNA's.
V1_EXTERN = {"Register": "register", "Counter": "counter"}
COUNTER_UNITS = {"PACKETS": "packets", "BYTES": "bytes", "PACKETS_AND_BYTES": "packets_and_bytes"}
REMOVED_EXTERNS = ("RegisterAction", "Random", "Lpf", "Wred", "Checksum", "Hash")
# Extern calls lowered only as a statement, a declaration's initializer or an assignment's source.
VALUE_EXTERNS = ("RegisterAction", "Random", "Lpf", "Wred", "Hash")
# TNA's hash algorithms mapped onto BMv2's (crc16 = CRC-16/ARC, crc32 = CRC-32/ISO-HDLC; that
# Tofino's CRC16/CRC32 use these parameters is not verified here); CRC8, CRC64, CUSTOM refused.
HASH_ALGOS = {"IDENTITY": "identity", "RANDOM": "random", "CRC16": "crc16", "CRC32": "crc32"}


def lower(checked, cell_bytes):
    """Return the V1Switch `A.Program` equivalent of a checked TNA program (`ir.Program`)
    whose traffic manager counts queues in cells of `cell_bytes`. The rewrite still works
    on the blocks' AST (README.md, "Architecture: phases")."""
    if len(checked.pipelines) != 1:
        raise CompileError(None, "the built-in target runs one TNA pipeline (Switch(pipe))")
    blocks = {role: block.ast for role, block in checked.pipelines[0].items()}
    return _Lowering(checked.ast, blocks, cell_bytes).lowered()


class TnaCompiler(Compiler):
    """The v1model lowering plus the engine's TNA primitives, and the traffic manager's
    queue unit (`@tna_cell_bytes(N)` on the lowered `main`) as the JSON's `__tna__`."""

    def check_blocks(self):
        """None: the blocks were checked as TNA (tna.check_program) before lowering."""

    def compile(self):
        bmv2_json = super().compile()
        cell = A.find_annotation(self.main_decl().annos, CELL_ANNOTATION).args[0].value
        return {**bmv2_json, "__tna__": {"cell_bytes": cell, "egress_parser": EGRESS_PARSER,
                                         "ingress_deparser": INGRESS_DEPARSER}}

    def main_decl(self):
        return next(d for d in self.program.decls if isinstance(d, A.Instance) and d.name == "main")

    def lower_main(self, main):
        """V1Switch's blocks, then TNA's egress parser and ingress deparser, which the engine
        runs between the traffic manager and egress (`__tna__` names them)."""
        super().lower_main(main)
        eg_parser, ig_deparser = (a.value for a in A.find_annotation(
            self.main_decl().annos, TNA_BLOCKS_ANNOTATION).args)
        self.lower_parser(self.globals.lookup(eg_parser).decl)
        self.json["parsers"][-1].update(name=EGRESS_PARSER, id=len(self.json["parsers"]) - 1)
        self.lower_deparser(self.globals.lookup(ig_deparser).decl)
        self.json["deparsers"][-1].update(name=INGRESS_DEPARSER,
                                          id=len(self.json["deparsers"]) - 1)

    def fn_tna_lpf_sample(self, call, args, ctx, dest):
        self.emit(ctx, "tna_lpf_sample",
                  [self.dst_json(args["result"])] +
                  [as_data(args[n]) for n in ("avg", "sample", "dt_us", "tau_ns")], call.loc)


# ------------------------------------------------------------------ AST helpers
def _loc0():
    return SrcLoc("<tna lowering>", 1, 1)


def name(n, loc=None):
    return A.Name(loc or _loc0(), n)


def member(base, *fields):
    e = base if isinstance(base, A.Expr) else name(base)
    for f in fields:
        e = A.Member(e.loc, e, f)
    return e


def bits(width, loc=None):
    loc = loc or _loc0()
    return A.TypeRef(loc, "bit", A.IntLit(loc, width))


def cast(width, e):
    return A.Cast(e.loc, bits(width, e.loc), e)


def call(func, args, loc=None, type_args=()):
    loc = loc or _loc0()
    f = func if isinstance(func, A.Expr) else name(func, loc)
    return A.CallStmt(loc, A.Call(loc, f, list(type_args), list(args)))


def assign(lhs, rhs):
    return A.Assign(lhs.loc, lhs, rhs)


def transform(node, fn):
    """Rebuild an AST bottom-up; fn(node) returns a replacement or None to keep it."""
    if isinstance(node, list):
        return [transform(x, fn) for x in node]
    if isinstance(node, tuple):
        return tuple(transform(x, fn) for x in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, SrcLoc):
        return node
    changes = {f.name: transform(getattr(node, f.name), fn) for f in dataclasses.fields(node)}
    node = dataclasses.replace(node, **changes)
    new = fn(node)
    return node if new is None else new


def walk(node, fn):
    """Visit an AST top-down; fn(node) returns True to skip the node's children."""
    if isinstance(node, (list, tuple)):
        for x in node:
            walk(x, fn)
    elif dataclasses.is_dataclass(node) and not isinstance(node, SrcLoc):
        if not fn(node):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name), fn)


def _from_tna_include(d):
    return d.loc is not None and os.path.basename(d.loc.file) in TNA_FILES


def _from_core(d):
    return d.loc is not None and os.path.basename(d.loc.file) == "core.p4"


def _v1model_decls():
    """core.p4 + v1model.p4 as parsed declarations."""
    path = os.path.join(INCLUDE_DIR, "v1model.p4")
    return parse(preprocess(path), path).decls


def _prelude():
    """The engine's TNA primitives, declared for the v1model lowering."""
    text = ("extern void tna_lpf_sample<T>(out T result, in T avg, in T sample, "
            "in bit<32> dt_us, in bit<32> tau_ns);\n")
    return parse(text, "<tna lowering>").decls


# ------------------------------------------------------------------ the lowering
class _Lowering:
    def __init__(self, program, blocks, cell_bytes):
        self.program = program
        self.blocks = blocks
        self.cell_bytes = cell_bytes
        self.md_fields = []          # (field name, TypeRef) of __tna_md
        self.param_map = {}          # role -> {param name: replacement Expr}
        self.fresh = 0

    def lowered(self):
        check_one_header_type(self.blocks)
        self.collect_metadata()
        roles = self.blocks
        ig_parser = self.lower_parser(roles["ingress_parser"], "ingress_parser")
        eg_parser = self.lower_parser(roles["egress_parser"], "egress_parser")
        ig_deparser = self.lower_ingress_deparser(roles["ingress_deparser"])
        ingress = self.lower_control(roles["ingress"], "ingress")
        egress = self.lower_control(roles["egress"], "egress")
        deparser, checksum = self.lower_deparser(roles["egress_deparser"])
        verify = self.empty_control("__TnaVerifyChecksum", checksum.params)
        block_names = {d.name for d in roles.values()}
        kept = [d for d in self.program.decls
                if not _from_core(d) and not self.dropped_tna_decl(d)
                and getattr(d, "name", None) not in block_names | {"main"}
                and not (isinstance(d, A.Instance) and d.type.name in ("Pipeline", "Switch"))]
        annos = [A.Annotation(_loc0(), CELL_ANNOTATION, [A.IntLit(_loc0(), self.cell_bytes)]),
                 A.Annotation(_loc0(), TNA_BLOCKS_ANNOTATION,
                              [A.StrLit(_loc0(), eg_parser.name), A.StrLit(_loc0(), ig_deparser.name)])]
        main = A.Instance(_loc0(), annos, A.TypeRef(_loc0(), "V1Switch"), [
            A.Call(_loc0(), name(b.name), [], []) for b in
            (ig_parser, verify, ingress, egress, checksum, deparser)], "main")
        kept = [dataclasses.replace(d, kind="struct") if _from_tna_include(d) and
                isinstance(d, A.StructLike) else d for d in kept]
        return A.Program(_v1model_decls() + _prelude() + kept + [self.md_struct()] +
                         [ig_parser, verify, ingress, egress, checksum, deparser, eg_parser,
                          ig_deparser, main])

    @staticmethod
    def dropped_tna_decl(d):
        """TNA's own declarations: types and constants stay (intrinsic metadata
        becomes plain structs), externs, packages and block types go."""
        if not _from_tna_include(d):
            return False
        return not isinstance(d, (A.Typedef, A.EnumDecl, A.ConstDecl, A.StructLike)) or \
            getattr(d, "name", "") == "PortId_t"

    # -------------------------------------------------------------- metadata
    def collect_metadata(self):
        """One struct member per non-packet, non-header block parameter, by role."""
        hdr_type = self.blocks["ingress_parser"].params[1].type.name
        for role, decl in self.blocks.items():
            subst = {}
            for p in decl.params:
                if p.type.name in ("packet_in", "packet_out", hdr_type):
                    continue
                field = self.md_field(role, p)
                subst[p.name] = member(MD, field)
            self.param_map[role] = subst

    def md_field(self, role, p):
        """User metadata: ig_md / eg_md; intrinsic metadata by its type's name."""
        t = p.type.name
        if t.startswith(("ingress_intrinsic", "egress_intrinsic")):
            field = t[:-2]
        else:
            field = "ig_md" if role.startswith("ingress") else "eg_md"
        if field not in dict(self.md_fields):
            self.md_fields.append((field, p.type))
        elif dict(self.md_fields)[field].name != t:
            raise CompileError(p.loc, f"ingress (or egress) blocks use two metadata types "
                                      f"({dict(self.md_fields)[field].name}, {t}); the built-in "
                                      f"target needs one per gress")
        return field

    def md_struct(self):
        fields = [A.StructField(_loc0(), [], t, n) for n, t in self.md_fields]
        return A.StructLike(_loc0(), [], "__tna_md_t", "struct", fields)

    def new_params(self, decl, kind):
        """The V1Switch signature, keeping the block's own packet and header names."""
        pkt = next((p for p in decl.params if p.type.name in ("packet_in", "packet_out")), None)
        hdr = next(p for p in decl.params if p.type.name == self.hdr_type_name())
        md = A.Param(_loc0(), [], "inout", A.TypeRef(_loc0(), "__tna_md_t"), MD)
        sm = A.Param(_loc0(), [], "inout", A.TypeRef(_loc0(), "standard_metadata_t"), SM)
        if kind == "parser":
            return [pkt, dataclasses.replace(hdr, direction="out"), md, sm]
        if kind == "control":
            return [dataclasses.replace(hdr, direction="inout"), md, sm]
        if kind == "checksum":
            return [dataclasses.replace(hdr, direction="inout"), md]
        return [pkt, dataclasses.replace(hdr, direction="in")]

    def hdr_type_name(self):
        return self.blocks["ingress_parser"].params[1].type.name

    def substitute_params(self, node, role):
        subst = self.param_map[role]

        def fn(n):
            if isinstance(n, A.Name) and n.name in subst and not n.absolute:
                return dataclasses.replace(subst[n.name], loc=n.loc)
            return None
        return transform(node, fn)

    # -------------------------------------------------------------- parser
    def lower_parser(self, decl, role):
        """Without the intrinsic-metadata prologue, which the glue replaces."""
        intr = _param_of_type(decl, "ingress_intrinsic_metadata_t" if role == "ingress_parser"
                              else "egress_intrinsic_metadata_t")
        for d in decl.locals:
            if isinstance(d, A.Instance) and _from_tna_type(d.type.name):
                raise CompileError(d.type.loc, f"TNA extern '{d.type.name}' is not supported on "
                                               f"the built-in target")
        states = [dataclasses.replace(s, stmts=[x for x in s.stmts
                                               if not _is_prologue(x, intr)]) for s in decl.states]
        states = self.substitute_params(states, role)
        start = next(s for s in states if s.name == "start")
        start.stmts[:0] = self.ingress_glue() if role == "ingress_parser" else self.egress_glue()
        return dataclasses.replace(decl, params=self.new_params(decl, "parser"), states=states,
                                   locals=self.substitute_params(decl.locals, role))

    def lower_ingress_deparser(self, decl):
        """Emits only: the engine re-parses what it emits with the egress parser."""
        for s in decl.body.stmts:
            if not _is_emit(s):
                raise CompileError(s.loc, f"the built-in target's TNA ingress deparser may only "
                                          f"emit headers, not {_what(s, decl)}")
        body = self.substitute_params(decl.body, "ingress_deparser")
        return dataclasses.replace(decl, params=self.new_params(decl, "deparser"), locals=[],
                                   body=body)

    def ingress_glue(self):
        """TNA's ingress intrinsic metadata from the engine's standard_metadata."""
        have = dict(self.md_fields)
        glue = [assign(member(SM, "egress_spec"), A.IntLit(_loc0(), DROP_PORT, 9))]
        if "ingress_intrinsic_metadata" in have:
            glue += [assign(member(MD, "ingress_intrinsic_metadata", "ingress_port"),
                            member(SM, "ingress_port")),
                     assign(member(MD, "ingress_intrinsic_metadata", "ingress_mac_tstamp"),
                            _ns(member(SM, "ingress_global_timestamp"), 48))]
        if "ingress_intrinsic_metadata_for_tm" in have:
            glue.append(assign(member(MD, "ingress_intrinsic_metadata_for_tm", "ucast_egress_port"),
                               A.IntLit(_loc0(), DROP_PORT, 9)))
        if "ingress_intrinsic_metadata_from_parser" in have:
            glue.append(assign(member(MD, "ingress_intrinsic_metadata_from_parser", "global_tstamp"),
                               _ns(member(SM, "ingress_global_timestamp"), 48)))
        return glue

    def ns_field(self, struct, field, us_expr):
        """The engine's us as ns in an intrinsic field of the declared width, wrapping
        (Tofino 1's 18-bit enq_tstamp/deq_timedelta wrap after 262 us)."""
        decl = next(d for d in self.program.decls
                    if isinstance(d, A.StructLike) and d.name == struct + "_t")
        t = next(f.type for f in decl.fields if f.name == field)
        return _ns(us_expr, _bit_width(t))

    def egress_glue(self):
        have = dict(self.md_fields)
        eg = "egress_intrinsic_metadata"
        glue = []
        if eg in have:
            glue += [assign(member(MD, eg, f), cast(w, e) if c else e) for f, e, w, c in (
                ("egress_port", member(SM, "egress_port"), 9, False),
                ("enq_qdepth", member(SM, "enq_qdepth"), 19, False),
                ("deq_qdepth", member(SM, "deq_qdepth"), 19, False),
                ("enq_tstamp", self.ns_field(eg, "enq_tstamp", member(SM, "enq_timestamp")), 0,
                 False),
                ("deq_timedelta", self.ns_field(eg, "deq_timedelta", member(SM, "deq_timedelta")), 0,
                 False),
                ("pkt_length", member(SM, "packet_length"), 16, True))]
        if "egress_intrinsic_metadata_from_parser" in have:
            glue.append(assign(member(MD, "egress_intrinsic_metadata_from_parser", "global_tstamp"),
                               _ns(member(SM, "egress_global_timestamp"), 48)))
        return glue

    # -------------------------------------------------------------- controls
    def lower_control(self, decl, role):
        _refuse_exit(decl)
        lpf_locals, rewriter = self.extern_rewriter(decl, role)
        local_decls = [self.lower_local(d) for d in _keys_named_as_written(decl.locals)
                       if not (isinstance(d, A.Instance) and d.type.name in REMOVED_EXTERNS)]
        local_decls = lpf_locals + rewriter(self.substitute_params(local_decls, role))
        body = rewriter(self.substitute_params(decl.body, role))
        dprsr = "ingress_intrinsic_metadata_for_deparser" if role == "ingress" \
            else "egress_intrinsic_metadata_for_deparser"
        tail = []
        if dprsr in dict(self.md_fields):
            drop = A.If(_loc0(), A.Binary(_loc0(), "==", A.Slice(
                _loc0(), member(MD, dprsr, "drop_ctl"), A.IntLit(_loc0(), 0), A.IntLit(_loc0(), 0)),
                A.IntLit(_loc0(), 1, 1)), A.Block(_loc0(), [call("mark_to_drop", [name(SM)])]),
                None)
            tail.append(drop)
        if role == "ingress" and "ingress_intrinsic_metadata_for_tm" in dict(self.md_fields):
            tail.insert(0, assign(member(SM, "egress_spec"),
                                  member(MD, "ingress_intrinsic_metadata_for_tm", "ucast_egress_port")))
        body = A.Block(body.loc, [body] + tail)
        return dataclasses.replace(decl, params=self.new_params(decl, "control"),
                                   locals=local_decls, body=body)

    def lower_local(self, d):
        if not isinstance(d, A.Instance) or d.type.name not in V1_EXTERN:
            if isinstance(d, A.Instance) and _from_tna_type(d.type.name):
                raise CompileError(d.type.loc, f"TNA extern '{d.type.name}' is not supported on "
                                               f"the built-in target (only Register, "
                                               f"RegisterAction, Random, Hash, Counter, Lpf, "
                                               f"Wred, Checksum)")
            return d
        if d.type.name == "Register":
            if len(d.args) != 1:
                raise CompileError(d.loc, "Register with an initial value is not supported on "
                                          "the built-in target")
            return dataclasses.replace(d, type=A.TypeRef(d.type.loc, "register",
                                                         args=d.type.args[:1]))
        unit = d.args[1]
        if not (isinstance(unit, A.Member) and unit.name in COUNTER_UNITS):
            raise CompileError(unit.loc, "Counter type must be a CounterType_t constant")
        return dataclasses.replace(d, type=A.TypeRef(d.type.loc, "counter"), args=[
            d.args[0], A.Member(unit.loc, name("CounterType", unit.loc), COUNTER_UNITS[unit.name])])

    def extern_rewriter(self, decl, role):
        """Locals for the Lpfs, and a function rewriting calls of the control's TNA externs."""
        insts = {d.name: d for d in decl.locals if isinstance(d, A.Instance)}
        regs = {d.name: d for d in insts.values() if d.type.name == "Register"}
        lpf_locals = []
        for d in insts.values():
            if d.type.name == "Lpf":
                lpf_locals += _lpf_registers(d)
            if d.type.name == "Wred":
                lpf_locals += _lpf_registers(d) + _wred_registers(d)
        for d in insts.values():
            if d.type.name == "Hash":
                _hash_algo(d)
        externs = _ExternCalls(self, insts, regs, role)

        def rewriter(node):
            node = transform(node, externs.split_declarations)
            walk(node, externs.refuse_nested)
            return transform(node, externs.rewrite)
        return lpf_locals, rewriter

    def empty_control(self, cname, params):
        return A.ControlDecl(_loc0(), [], cname, [], params, None, [], A.Block(_loc0(), []))

    # -------------------------------------------------------------- deparser
    def lower_deparser(self, decl):
        """Emits stay in the deparser; Checksum updates move to the compute-checksum control."""
        checksums = {d.name for d in decl.locals
                     if isinstance(d, A.Instance) and d.type.name == "Checksum"}
        others = [d for d in decl.locals if getattr(d, "name", None) not in checksums]
        if others:
            raise CompileError(others[0].loc, "the built-in target's TNA egress deparser holds "
                                              "only Checksum instances")
        body = self.substitute_params(decl.body, "egress_deparser")
        emits, updates = [], []
        for s in body.stmts:
            if _is_emit(s):
                emits.append(s)
            else:
                updates.append(_checksum_update(s, checksums))
        deparser = dataclasses.replace(decl, params=self.new_params(decl, "deparser"), locals=[],
                                       body=A.Block(body.loc, emits))
        checksum = A.ControlDecl(decl.loc, [], "__TnaComputeChecksum", [],
                                 self.new_params(decl, "checksum"), None, [],
                                 A.Block(body.loc, updates))
        return deparser, checksum

    def fresh_name(self, base):
        self.fresh += 1
        return f"__tna_{base}_{self.fresh}"


class _ExternCalls:
    """Rewrites `x = inst.method(...)` / `inst.method(...);` of one control's TNA externs."""

    def __init__(self, lowering, insts, regs, role):
        self.low = lowering
        self.insts = insts
        self.regs = regs
        self.role = role

    def split_declarations(self, node):
        """`T x = inst.m(...);` in a block -> `T x; x = inst.m(...);` (then lowered as such)."""
        if not isinstance(node, A.Block):
            return None
        stmts = []
        for s in node.stmts:
            init = s.init.expr if isinstance(s, A.VarDecl) and isinstance(s.init, A.Cast) else \
                getattr(s, "init", None)
            if isinstance(s, A.VarDecl) and isinstance(init, A.Call) and self.extern_of(init):
                stmts += [dataclasses.replace(s, init=None),
                          A.Assign(s.loc, name(s.name, s.loc), s.init)]
            else:
                stmts.append(s)
        return dataclasses.replace(node, stmts=stmts)

    def rewrite(self, node):
        """`inst.m(...);`, `x = inst.m(...);` and `x = (T) inst.m(...);` of the TNA externs."""
        self.cast_to = None
        if isinstance(node, A.CallStmt):
            return self.lowered(None, node.call)
        if isinstance(node, A.Assign) and isinstance(node.rhs, A.Call):
            return self.lowered(node.lhs, node.rhs)
        if isinstance(node, A.Assign) and isinstance(node.rhs, A.Cast) and \
                isinstance(node.rhs.expr, A.Call) and self.extern_of(node.rhs.expr) is not None:
            self.cast_to = node.rhs.type
            return self.lowered(node.lhs, node.rhs.expr)
        return None

    def result(self, lhs, value):
        """The final `lhs = value` (with the statement's cast, if it had one)."""
        if lhs is None:
            return []
        return [assign(lhs, A.Cast(value.loc, self.cast_to, value) if self.cast_to else value)]

    def refuse_nested(self, node):
        """Top-down: extern calls as statements or assignment sources are lowered (the walk
        stops there); a RegisterAction/Random/Lpf call anywhere else is refused."""
        if isinstance(node, A.CallStmt):
            return True
        rhs = node.rhs.expr if isinstance(node, A.Assign) and isinstance(node.rhs, A.Cast) else \
            getattr(node, "rhs", None)
        if isinstance(node, A.Assign) and isinstance(rhs, A.Call) and self.extern_of(rhs) is not None:
            return True
        found = self.extern_of(node) if isinstance(node, A.Call) else None
        if found is not None and found[0].type.name in VALUE_EXTERNS:
            raise CompileError(node.loc, f"{found[0].type.name}.{found[1]}() is lowered only as a "
                                         f"statement, a declaration's initializer or an "
                                         f"assignment's source")
        return False

    def extern_of(self, c):
        f = c.func
        if isinstance(f, A.Member) and isinstance(f.expr, A.Name) and f.expr.name in self.insts:
            inst = self.insts[f.expr.name]
            if inst.type.name in VALUE_EXTERNS + ("Counter", "Register"):
                return inst, f.name
        return None

    def lowered(self, lhs, c):
        found = self.extern_of(c)
        if found is None:
            return None
        inst, method = found
        handler = getattr(self, f"{inst.type.name}_{method}", None)
        if handler is None:
            raise CompileError(c.loc, f"{inst.type.name}.{method}() is not supported on the "
                                      f"built-in target")
        return A.Block(c.loc, handler(inst, c, lhs))

    def Counter_count(self, inst, c, lhs):
        return [call(member(inst.name, "count"), [cast(32, c.args[0])], c.loc)]

    def Register_read(self, inst, c, lhs):
        if lhs is None or self.cast_to is not None:
            raise CompileError(c.loc, "Register.read() is lowered only as `x = reg.read(i);`")
        return [call(member(inst.name, "read"), [lhs, cast(32, c.args[0])], c.loc)]

    def Register_write(self, inst, c, lhs):
        return [call(member(inst.name, "write"), [cast(32, c.args[0]), c.args[1]], c.loc)]

    def Random_get(self, inst, c, lhs):
        width = _bit_width(inst.type.args[0])
        tmp = self.low.fresh_name("random")
        out = [A.VarDecl(c.loc, [], inst.type.args[0], tmp, None),
               call("random", [name(tmp), A.IntLit(c.loc, 0, width),
                               A.IntLit(c.loc, (1 << width) - 1, width)], c.loc)]
        return out + self.result(lhs, name(tmp))

    def Hash_get(self, inst, c, lhs):
        """v1model's hash with base 0 and max 2^W: the W low bits of the hash, as TNA's get."""
        algo = _hash_algo(inst)
        if lhs is None:
            raise CompileError(c.loc, "Hash.get() result unused")
        width = _bit_width(inst.type.args[0])
        tmp = self.low.fresh_name("hash")
        v1_algo = A.Member(algo.loc, name("HashAlgorithm", algo.loc), HASH_ALGOS[algo.name])
        return [A.VarDecl(c.loc, [], inst.type.args[0], tmp, None),
                call("hash", [name(tmp), v1_algo, A.IntLit(c.loc, 0, width), c.args[0],
                              A.IntLit(c.loc, 1 << width, 64)], c.loc)] + self.result(lhs, name(tmp))

    def RegisterAction_execute(self, inst, c, lhs):
        """read; the action's body on a local copy; write (one access, as the stateful ALU)."""
        reg = self.register_of(inst)
        apply = next((m for m in inst.initializer or [] if m.name == "apply"), None)
        if apply is None:
            raise CompileError(inst.loc, f"RegisterAction '{inst.name}' has no apply method")
        value_t, _, out_t = inst.type.args
        value, rv = self.low.fresh_name("value"), self.low.fresh_name("rv")
        renames = {apply.params[0].name: value}
        if len(apply.params) > 1:
            renames[apply.params[1].name] = rv
        body = transform(self.low.substitute_params(apply.body, self.role),
                         lambda n: name(renames[n.name], n.loc)
                         if isinstance(n, A.Name) and n.name in renames else None)
        index = cast(32, c.args[0])
        out = [A.VarDecl(c.loc, [], value_t, value, None),
               A.VarDecl(c.loc, [], out_t, rv, A.Cast(c.loc, out_t, A.IntLit(c.loc, 0))),
               call(member(reg.name, "read"), [name(value), index], c.loc),
               body,
               call(member(reg.name, "write"), [index, name(value)], c.loc)]
        return out + self.result(lhs, name(rv))

    def register_of(self, inst):
        arg = inst.args[0] if inst.args else None
        if not (isinstance(arg, A.Name) and arg.name in self.regs):
            raise CompileError(inst.loc, f"RegisterAction '{inst.name}' must name a Register "
                                         f"of the same control")
        return self.regs[arg.name]

    def Lpf_execute(self, inst, c, lhs):
        """The Lpf's state in registers; the filter step is the engine's tna_lpf_sample."""
        if lhs is None:
            raise CompileError(c.loc, "Lpf.execute() result unused")
        t = inst.type.args[0]
        index = cast(32, c.args[1])
        avg, last, tau, now = (self.low.fresh_name(n) for n in ("avg", "last", "tau", "now"))
        return [A.VarDecl(c.loc, [], t, avg, None),
                A.VarDecl(c.loc, [], bits(32), last, None),
                A.VarDecl(c.loc, [], bits(32), tau, None),
                A.VarDecl(c.loc, [], bits(32), now, self.sample_time_us()),
                call(member(inst.name, "read"), [name(tau), index], c.loc),
                call(member(inst.name + "__avg", "read"), [name(avg), index], c.loc),
                call(member(inst.name + "__time", "read"), [name(last), index], c.loc),
                call("tna_lpf_sample", [name(avg), name(avg), c.args[0],
                                        A.Binary(c.loc, "-", name(now), name(last)), name(tau)],
                     c.loc),
                call(member(inst.name + "__avg", "write"), [index, name(avg)], c.loc),
                call(member(inst.name + "__time", "write"), [index, name(now)], c.loc)] + \
            self.result(lhs, name(avg))

    def sample_time_us(self):
        """The time the packet reaches the Lpf: ingress arrival, or (egress) its dequeue."""
        if self.role == "ingress":
            return cast(32, member(SM, "ingress_global_timestamp"))
        return A.Binary(_loc0(), "+", member(SM, "enq_timestamp"), member(SM, "deq_timedelta"))

    def Wred_execute(self, inst, c, lhs):
        """The average as the Lpf's (same registers, time constant per index), then RED's
        drop decision on it, drawn afresh per packet (no count law, no gentle region):
        drop from max, with probability maxp (avg - min) / (max - min) from min; an index
        whose max threshold is 0 (not configured) never drops."""
        if lhs is None:
            raise CompileError(c.loc, "Wred.execute() result unused")
        t = inst.type.args[0]
        val, avg, index, drop, keep, result = (self.low.fresh_name(n) for n in (
            "val", "avg", "index", "drop", "keep", "wred"))
        head = [A.VarDecl(c.loc, [], t, val, c.args[0]),
                A.VarDecl(c.loc, [], bits(32), index, cast(32, c.args[1])),
                A.VarDecl(c.loc, [], bits(8), drop, inst.args[1]),
                A.VarDecl(c.loc, [], bits(8), keep, inst.args[2])]
        cast_to, self.cast_to = self.cast_to, None          # the cast is the result's, not avg's
        average = self.Lpf_execute(inst, A.Call(c.loc, c.func, [], [name(val), name(index)]),
                                   name(avg, c.loc))
        self.cast_to = cast_to
        avg_decl = A.VarDecl(c.loc, [], t, avg, None)
        decide = _parse_stmts(_WRED_DECISION.format(
            reg=inst.name, avg=avg, index=index, drop=drop, keep=keep, result=result,
            **{k: self.low.fresh_name(k) for k in ("min", "max", "maxp", "rand")}), c.loc)
        return head + [avg_decl] + average + decide + self.result(lhs, name(result))


# RED's drop decision of the Wred model (Wred_execute): `rand / 2^32 < maxp_u32 / 2^32 *
# (avg - min) / (max - min)` in integers; maxp_u32 = max probability x 2^32 (saturated).
_WRED_DECISION = """
bit<32> {min}; bit<32> {max}; bit<32> {maxp}; bit<32> {rand};
{reg}__min.read({min}, {index});
{reg}__max.read({max}, {index});
{reg}__maxp.read({maxp}, {index});
random({rand}, 0, 0xffffffff);
bit<8> {result} = {keep};
if ({max} != 0) {{
    if ((bit<64>) {avg} >= (bit<64>) {max}) {{
        {result} = {drop};
    }} else if ((bit<64>) {avg} >= (bit<64>) {min} && (bit<96>) {rand} * (bit<96>) ({max} - {min}) <
               (bit<96>) {maxp} * (bit<96>) ((bit<64>) {avg} - (bit<64>) {min})) {{
        {result} = {drop};
    }}
}}
"""


def _parse_stmts(text, loc):
    """Statements written as P4 text (lowering templates), located at `loc`."""
    body = parse(f"control __C() {{ apply {{ {text} }} }}", "<tna lowering>").decls[0].body
    return transform(body.stmts, lambda n: dataclasses.replace(n, loc=loc)
                     if dataclasses.is_dataclass(n) and hasattr(n, "loc") and
                     isinstance(getattr(n, "loc"), SrcLoc) else None)


# ------------------------------------------------------------------ block checks
def check_one_header_type(blocks):
    """The engine keeps one header vector per packet: both gresses must use one header type."""
    want = blocks["ingress_parser"].params[1].type.name
    for role in ("ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser"):
        decl = blocks[role]
        hdr = decl.params[1] if "parser" in role or "deparser" in role else decl.params[0]
        if hdr.type.name != want:
            raise CompileError(hdr.loc, f"the built-in target needs one header type for both "
                                        f"gresses: '{hdr.type.name}' here, '{want}' in the "
                                        f"ingress parser")


def _what(stmt, decl):
    """A deparser statement for an error message: `Mirror.emit()` or the kind of statement."""
    insts = {d.name: d.type.name for d in decl.locals if isinstance(d, A.Instance)}
    found = []
    walk(stmt, lambda n: found.append(f"{insts[n.func.expr.name]}.{n.func.name}()")
         if isinstance(n, A.Call) and isinstance(n.func, A.Member) and
         isinstance(n.func.expr, A.Name) and n.func.expr.name in insts else None)
    return found[0] if found else "an assignment" if isinstance(stmt, A.Assign) else "this statement"


def _param_of_type(decl, tname):
    return next((p.name for p in decl.params if p.type.name == tname), None)


def _is_prologue(stmt, intr):
    """`pkt.extract(<intrinsic metadata>)` or `pkt.advance(PORT_METADATA_SIZE)`."""
    if not isinstance(stmt, A.CallStmt) or not isinstance(stmt.call.func, A.Member):
        return False
    m, args = stmt.call.func.name, stmt.call.args
    return (m == "extract" and len(args) == 1 and isinstance(args[0], A.Name) and
            args[0].name == intr) or \
        (m == "advance" and len(args) == 1 and isinstance(args[0], A.Name) and
         args[0].name == "PORT_METADATA_SIZE")


def _is_emit(stmt):
    return isinstance(stmt, A.CallStmt) and isinstance(stmt.call.func, A.Member) and \
        stmt.call.func.name == "emit" and len(stmt.call.args) == 1


# ------------------------------------------------------------------ small pieces
def _ns(us_expr, width):
    """The engine's microseconds as TNA's nanoseconds (wrapping at the field width)."""
    return A.Binary(_loc0(), "*", cast(width, us_expr), A.IntLit(_loc0(), 1000, width))


def _bit_width(t):
    if t.name != "bit" or not isinstance(t.width, A.IntLit):
        raise CompileError(t.loc, "Random<W> and Hash<W> need W = bit<N> with a literal N")
    return t.width.value


def _from_tna_type(tname):
    return tname in ("Meter", "DirectMeter", "DirectCounter", "DirectWred",
                     "DirectLpf", "DirectRegister", "DirectRegisterAction", "RegisterParam",
                     "Mirror", "Resubmit", "Digest", "ParserCounter", "ParserPriority",
                     "ActionProfile", "ActionSelector", "CRCPolynomial")


def _hash_algo(inst):
    algo = inst.args[0] if inst.args else None
    if not (isinstance(algo, A.Member) and algo.name in HASH_ALGOS):
        raise CompileError(inst.loc, f"Hash algorithm must be one of "
                                     f"{', '.join('HashAlgorithm_t.' + a for a in HASH_ALGOS)} "
                                     f"on the built-in target")
    return algo


def _lpf_registers(d):
    """An Lpf's state: time constant (ns, set by the controller), average, last sample time (us)."""
    size, t = d.args[0], d.type.args[0]
    return [A.Instance(d.loc, d.annos, A.TypeRef(d.loc, "register", args=[bits(32, d.loc)]),
                       [size], d.name),
            A.Instance(d.loc, [], A.TypeRef(d.loc, "register", args=[t]), [size], d.name + "__avg"),
            A.Instance(d.loc, [], A.TypeRef(d.loc, "register", args=[bits(32, d.loc)]), [size],
                       d.name + "__time")]


def _wred_registers(d):
    """A Wred's thresholds (in the units of its input) and max probability x 2^32, per index."""
    return [A.Instance(d.loc, [], A.TypeRef(d.loc, "register", args=[bits(32, d.loc)]), [d.args[0]],
                       d.name + suffix) for suffix in ("__min", "__max", "__maxp")]


def _keys_named_as_written(local_decls):
    """Table keys keep the P4Info names bf-p4c gives them (`eg_intr_md.egress_port`), not
    those of the rewritten storage (`__tna_md....`): an explicit @name as written."""
    def fn(n):
        if isinstance(n, A.KeyElement) and A.find_annotation(n.annos, "name") is None:
            text = _dotted(n.expr)
            if text is not None:
                return dataclasses.replace(n, annos=n.annos + [
                    A.Annotation(n.loc, "name", [A.StrLit(n.loc, text)])])
        return None
    return transform(local_decls, fn)


def _dotted(e):
    parts = []
    while isinstance(e, A.Member):
        parts.append(e.name)
        e = e.expr
    return ".".join([e.name] + parts[::-1]) if isinstance(e, A.Name) else None


def _refuse_exit(decl):
    def fn(n):
        if isinstance(n, A.Exit):
            raise CompileError(n.loc, "exit in a TNA control is not supported on the built-in "
                                      "target")
        return None
    transform([decl.locals, decl.body], fn)


def _checksum_update(stmt, checksums):
    """`[if (c)] { f = ck.update({...}); }` -> `update_checksum(c, {...}, f, csum16)`."""
    cond = A.BoolLit(stmt.loc, True)
    inner = stmt
    if isinstance(stmt, A.If) and stmt.other is None:
        cond, inner = stmt.cond, stmt.then
    if isinstance(inner, A.Block) and len(inner.stmts) == 1:
        inner = inner.stmts[0]
    ok = (isinstance(inner, A.Assign) and isinstance(inner.rhs, A.Call) and
          isinstance(inner.rhs.func, A.Member) and inner.rhs.func.name == "update" and
          isinstance(inner.rhs.func.expr, A.Name) and inner.rhs.func.expr.name in checksums)
    if not ok:
        raise CompileError(stmt.loc, "the built-in target's TNA egress deparser holds emits and "
                                     "`[if (cond)] field = checksum.update({...});` only")
    algo = A.Member(stmt.loc, name("HashAlgorithm", stmt.loc), "csum16")
    return call("update_checksum", [cond, inner.rhs.args[0], inner.lhs, algo], stmt.loc)
