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

Every decision comes from the checked IR (`ir.Program`), not from names: the blocks are
the pipeline's IR blocks, their parameters taken by their place in TNA's signatures
(which tna.py checked: packet, headers, user metadata, then intrinsic metadata, a member
named as its type) and compared as types; a name becomes a `__tna_md` member when the
checker resolved it to that parameter (`ir.Ref.decl`), so an action parameter spelled
like one stays itself; the externs are the blocks' `ir.Instance`s whose type is a TNA
extern, a call is lowered when the checker resolved its method on one of them, a
RegisterAction's register is what its argument resolved to and its `apply` parameters
are renamed by declaration; the Hash algorithm and Counter unit are the enum values the
checker folded, Random/Hash widths the instance's type arguments, and the intrinsic
fields' widths (ns conversions, ports, pkt_length) the IR's struct types. The AST node
of an expression is paired with its IR node through `ir.Program.nodes` (`node_of`,
the checker's `record` table, which tna.check_program keeps as check_v1model does).

What stays AST work, and why: the output is a V1Switch AST for the v1model path, whose
emitter lowers the AST (README.md, "Architecture: phases"), so the pieces it copies
(argument expressions, RegisterAction bodies, types as written) are the source's AST
and `transform` keeps what it does not change, so the IR still knows it; TNA's own
top-level declarations are kept or dropped by the file that declares them (PortId_t
goes: v1model.p4 declares it too); table keys keep their names as written (bf-p4c's
P4Info names are source text); which statements may hold an extern call, and the
deparsers' statement forms, are statement shapes; `PORT_METADATA_SIZE` is the
architecture's constant by its name (a name resolved to the global constant).
"""
import dataclasses
import os

from . import ast as A
from . import ir
from .compiler import Compiler
from .desugar import dontcare_args
from .errors import CompileError, SrcLoc
from .exprs import as_data
from .parser import parse
from .preprocess import INCLUDE_DIR, preprocess
from .types import Bits, EnumT, ExternT, same_type
from .values import Val

TNA_FILES = {"tofino.p4", "tna.p4", "t2na.p4"}
MD = "__tna_md"
CELL_ANNOTATION = "tna_cell_bytes"
TNA_BLOCKS_ANNOTATION = "tna_egress_parser_ingress_deparser"
EGRESS_PARSER, INGRESS_DEPARSER = "tna_egress_parser", "tna_ingress_deparser"
SM = "__tna_sm"
DROP_PORT = 511
PORT_METADATA_SIZE = "PORT_METADATA_SIZE"
# The TNA externs the built-in target runs; the others are refused where they are instantiated.
SUPPORTED_EXTERNS = ("Register", "RegisterAction", "Random", "Hash", "Counter", "Lpf", "Wred",
                     "Checksum")
COUNTER_UNITS = {"PACKETS": "packets", "BYTES": "bytes", "PACKETS_AND_BYTES": "packets_and_bytes"}
REMOVED_EXTERNS = ("RegisterAction", "Random", "Lpf", "Wred", "Checksum", "Hash")
# Extern calls lowered only as a statement, a declaration's initializer or an assignment's source.
VALUE_EXTERNS = ("RegisterAction", "Random", "Lpf", "Wred", "Hash")
# TNA's hash algorithms mapped onto BMv2's (crc16 = CRC-16/ARC, crc32 = CRC-32/ISO-HDLC; that
# Tofino's CRC16/CRC32 use these parameters is not verified here); CRC8, CRC64, CUSTOM refused.
HASH_ALGOS = {"IDENTITY": "identity", "RANDOM": "random", "CRC16": "crc16", "CRC32": "crc32"}


def lower(checked, cell_bytes):
    """Return the V1Switch `A.Program` equivalent of a checked TNA program (`ir.Program`)
    whose traffic manager counts queues in cells of `cell_bytes`. Its decisions come from
    the IR; what it writes is AST (README.md, "Architecture: phases")."""
    if len(checked.pipelines) != 1:
        raise CompileError(None, "the built-in target runs one TNA pipeline (Switch(pipe))")
    program = _Lowering(checked, cell_bytes).lowered()
    # `_` for an out parameter: the v1model path's pass, on the lowered blocks (whose
    # locals are the IR's, so a temporary declared before lowering would be lost); the
    # lowering keeps each `_` node, so the check's nodes still type it
    dontcare_args(program, checked.nodes)
    return program


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
    """Rebuild an AST bottom-up; fn(node) returns a replacement or None to keep it. A node
    nothing below changes is kept as it is, so the checked program's IR (`node_of`) still
    knows it."""
    if isinstance(node, list):
        return [transform(x, fn) for x in node]
    if isinstance(node, tuple):
        return tuple(transform(x, fn) for x in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, SrcLoc):
        return node
    changes = {f.name: transform(getattr(node, f.name), fn) for f in dataclasses.fields(node)}
    if not all(_same(v, getattr(node, k)) for k, v in changes.items()):
        node = dataclasses.replace(node, **changes)
    new = fn(node)
    return node if new is None else new


def _same(new, old):
    if isinstance(new, (list, tuple)):
        return len(new) == len(old) and all(a is b for a, b in zip(new, old))
    return new is old


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


# ------------------------------------------------------------------ IR facts
def tna_extern(decl):
    """The TNA extern an IR declaration is an instance of (its type's name), else None."""
    t = getattr(decl, "type", None)
    return t.name if isinstance(decl, ir.Instance) and isinstance(t, ExternT) and \
        _from_tna_include(t.decl) else None


def block_params(block):
    """A pipeline block's parameters (ir.Variable) by their place in TNA's signatures, which
    tna.check_program checked: the packet (None in a control), the headers, the user
    metadata, then the intrinsic metadata."""
    params = [p for p in block.params if p.kind == "param"]
    pkt = params.pop(0) if isinstance(params[0].type, ExternT) else None
    return pkt, params[0], params[1], params[2:]


def enum_member(node):
    """The enum member an IR expression's compile-time value is, else None."""
    if node is None or not isinstance(node.type, EnumT) or node.value is None:
        return None
    return next((m for m, v in node.type.members.items() if v == node.value), None)


# ------------------------------------------------------------------ the lowering
class _Lowering:
    def __init__(self, checked, cell_bytes):
        self.checked = checked
        self.blocks = checked.pipelines[0]      # role -> ir.Parser / ir.Control
        self.cell_bytes = cell_bytes
        self.md_fields = []          # (field name, TypeRef) of __tna_md
        self.md_types = {}           # field name -> its type (the IR's)
        self.replaced = {}           # id(block parameter's ir.Variable) -> its __tna_md member
        self.fresh = 0

    def lowered(self):
        check_one_header_type(self.blocks)
        self.collect_metadata()
        roles = self.blocks
        ig_parser = self.lower_parser(roles["ingress_parser"])
        eg_parser = self.lower_parser(roles["egress_parser"])
        ig_deparser = self.lower_ingress_deparser(roles["ingress_deparser"])
        ingress = self.lower_control(roles["ingress"], "ingress")
        egress = self.lower_control(roles["egress"], "egress")
        deparser, checksum = self.lower_deparser(roles["egress_deparser"])
        verify = self.empty_control("__TnaVerifyChecksum", checksum.params)
        annos = [A.Annotation(_loc0(), CELL_ANNOTATION, [A.IntLit(_loc0(), self.cell_bytes)]),
                 A.Annotation(_loc0(), TNA_BLOCKS_ANNOTATION,
                              [A.StrLit(_loc0(), eg_parser.name), A.StrLit(_loc0(), ig_deparser.name)])]
        main = A.Instance(_loc0(), annos, A.TypeRef(_loc0(), "V1Switch"), [
            A.Call(_loc0(), name(b.name), [], []) for b in
            (ig_parser, verify, ingress, egress, checksum, deparser)], "main")
        return A.Program(_v1model_decls() + _prelude() + self.kept_decls() + [self.md_struct()] +
                         [ig_parser, verify, ingress, egress, checksum, deparser, eg_parser,
                          ig_deparser, main])

    def kept_decls(self):
        """The program's own declarations but the pipeline's blocks and the package instances
        (the extern instances of the IR stay); TNA's intrinsic metadata types as structs."""
        blocks = {id(b.ast) for b in self.blocks.values()}
        externs = {id(inst.ast) for inst in self.checked.instances.values()}
        kept = [d for d in self.checked.ast.decls
                if not _from_core(d) and not self.dropped_tna_decl(d) and id(d) not in blocks
                and not (isinstance(d, A.Instance) and id(d) not in externs)]
        return [dataclasses.replace(d, kind="struct") if _from_tna_include(d) and
                isinstance(d, A.StructLike) else d for d in kept]

    @staticmethod
    def dropped_tna_decl(d):
        """TNA's own declarations: types and constants stay (intrinsic metadata
        becomes plain structs), externs, packages and block types go."""
        if not _from_tna_include(d):
            return False
        return not isinstance(d, (A.Typedef, A.EnumDecl, A.ConstDecl, A.StructLike)) or \
            getattr(d, "name", "") == "PortId_t"

    # -------------------------------------------------------------- IR facts of the AST
    def called(self, c):
        """(the IR node whose method a call `x.m(...)` calls, `m`), as the checker resolved
        it; None for any other call or expression."""
        f = self.checked.node_of(c.func) if isinstance(c, A.Call) else None
        return (f.base, f.name) if isinstance(f, ir.Member) and f.method is not None else None

    def instance_called(self, c):
        """(the ir.Instance whose method call `c` calls, the method), else None."""
        found = self.called(c)
        if found is None or not isinstance(found[0], ir.Ref) or \
                not isinstance(found[0].decl, ir.Instance):
            return None
        return found[0].decl, found[1]

    def packet_method(self, stmt):
        """The method of `pkt.<method>(...);` on the block's packet_in / packet_out, else None."""
        found = self.called(stmt.call) if isinstance(stmt, A.CallStmt) else None
        if found is None or not isinstance(found[0].type, ExternT) or \
                found[0].type.name not in ("packet_in", "packet_out"):
            return None
        return found[1]

    def is_emit(self, stmt):
        return self.packet_method(stmt) == "emit" and len(stmt.call.args) == 1

    def is_prologue(self, stmt, intr):
        """`pkt.extract(<the intrinsic metadata parameter>)` or
        `pkt.advance(PORT_METADATA_SIZE)` (the architecture's constant)."""
        method = self.packet_method(stmt)
        if method not in ("extract", "advance") or len(stmt.call.args) != 1:
            return False
        arg = self.checked.node_of(stmt.call.args[0])
        if not isinstance(arg, ir.Ref):
            return False
        return arg.decl is intr if method == "extract" else \
            arg.name == PORT_METADATA_SIZE and isinstance(arg.decl, Val)

    def what(self, stmt):
        """A deparser statement for an error message: `Mirror.emit()` or the kind of statement."""
        found = []
        walk(stmt, lambda n: found.append(self.instance_called(n)) if isinstance(n, A.Call) and
             self.instance_called(n) is not None else None)
        if found:
            inst, method = found[0]
            return f"{inst.type.name}.{method}()"
        return "an assignment" if isinstance(stmt, A.Assign) else "this statement"

    # -------------------------------------------------------------- metadata
    def collect_metadata(self):
        """One struct member per non-packet, non-header block parameter: the user metadata
        (ig_md / eg_md) and each intrinsic metadata (named as its type); every name that
        refers to one becomes that member (`substitute`)."""
        for role, block in self.blocks.items():
            _, _, md, intrinsic = block_params(block)
            user = "ig_md" if role.startswith("ingress") else "eg_md"
            for p, field in [(md, user)] + [(p, p.type.name[:-2]) for p in intrinsic]:
                self.add_md_field(field, p)
                self.replaced[id(p)] = member(MD, field)

    def add_md_field(self, field, p):
        if field not in self.md_types:
            self.md_fields.append((field, p.ast.type))
            self.md_types[field] = p.type
        elif not same_type(self.md_types[field], p.type):
            raise CompileError(p.loc, f"ingress (or egress) blocks use two metadata types "
                                      f"({dict(self.md_fields)[field].name}, {p.ast.type.name}); "
                                      f"the built-in target needs one per gress")

    def md_width(self, field, name):
        """The declared width of field `name` of intrinsic metadata `field`."""
        return self.md_types[field].field_type(name).width

    def md_struct(self):
        fields = [A.StructField(_loc0(), [], t, n) for n, t in self.md_fields]
        return A.StructLike(_loc0(), [], "__tna_md_t", "struct", fields)

    def new_params(self, block, kind):
        """The V1Switch signature, keeping the block's own packet and header names."""
        pkt, hdr, _, _ = block_params(block)
        pkt, hdr = pkt and pkt.ast, hdr.ast
        md = A.Param(_loc0(), [], "inout", A.TypeRef(_loc0(), "__tna_md_t"), MD)
        sm = A.Param(_loc0(), [], "inout", A.TypeRef(_loc0(), "standard_metadata_t"), SM)
        if kind == "parser":
            return [pkt, dataclasses.replace(hdr, direction="out"), md, sm]
        if kind == "control":
            return [dataclasses.replace(hdr, direction="inout"), md, sm]
        if kind == "checksum":
            return [dataclasses.replace(hdr, direction="inout"), md]
        return [pkt, dataclasses.replace(hdr, direction="in")]

    def substitute(self, node, renames=None):
        """Every name the checker resolved to a block's metadata parameter rewritten as its
        __tna_md member, and to a declaration of `renames` (id -> expression) as that."""
        subst = {**self.replaced, **(renames or {})}

        def fn(n):
            ref = self.checked.node_of(n) if isinstance(n, A.Name) else None
            if isinstance(ref, ir.Ref) and id(ref.decl) in subst:
                return dataclasses.replace(subst[id(ref.decl)], loc=n.loc)
            return None
        return transform(node, fn)

    # -------------------------------------------------------------- parser
    def lower_parser(self, block):
        """Without the intrinsic-metadata prologue, which the glue replaces."""
        decl, intr = block.ast, block_params(block)[3][0]
        for d in block.locals:
            if tna_extern(d) not in (None,) + SUPPORTED_EXTERNS:
                raise CompileError(d.ast.type.loc, f"TNA extern '{d.type.name}' is not supported "
                                                   f"on the built-in target")
        glue = self.ingress_glue() if block is self.blocks["ingress_parser"] else \
            self.egress_glue()
        states = [self.substitute(dataclasses.replace(s, stmts=[
            x for x in s.stmts if not self.is_prologue(x, intr)])) for s in decl.states]
        states = [dataclasses.replace(s, stmts=glue + s.stmts) if s.name == "start" else s
                  for s in states]
        return dataclasses.replace(decl, params=self.new_params(block, "parser"), states=states,
                                   locals=self.substitute(decl.locals))

    def lower_ingress_deparser(self, block):
        """Emits only: the engine re-parses what it emits with the egress parser."""
        decl = block.ast
        for s in decl.body.stmts:
            if not self.is_emit(s):
                raise CompileError(s.loc, f"the built-in target's TNA ingress deparser may only "
                                          f"emit headers, not {self.what(s)}")
        return dataclasses.replace(decl, params=self.new_params(block, "deparser"), locals=[],
                                   body=self.substitute(decl.body))

    def ingress_glue(self):
        """TNA's ingress intrinsic metadata from the engine's standard_metadata."""
        have = self.md_types
        ig, tm, prsr = ("ingress_intrinsic_metadata", "ingress_intrinsic_metadata_for_tm",
                        "ingress_intrinsic_metadata_from_parser")
        glue = [assign(member(SM, "egress_spec"), A.IntLit(_loc0(), DROP_PORT, 9))]
        if ig in have:
            glue += [assign(member(MD, ig, "ingress_port"), member(SM, "ingress_port")),
                     assign(member(MD, ig, "ingress_mac_tstamp"),
                            _ns(member(SM, "ingress_global_timestamp"),
                                self.md_width(ig, "ingress_mac_tstamp")))]
        if tm in have:
            port = self.md_width(tm, "ucast_egress_port")
            glue.append(assign(member(MD, tm, "ucast_egress_port"),
                               A.IntLit(_loc0(), DROP_PORT, port)))
        if prsr in have:
            glue.append(assign(member(MD, prsr, "global_tstamp"),
                               _ns(member(SM, "ingress_global_timestamp"),
                                   self.md_width(prsr, "global_tstamp"))))
        return glue

    def egress_glue(self):
        """TNA's egress intrinsic metadata from the engine's: times in ns wrapping at the
        declared width (Tofino 1's 18-bit enq_tstamp/deq_timedelta wrap after 262 us)."""
        eg, prsr = "egress_intrinsic_metadata", "egress_intrinsic_metadata_from_parser"
        glue = []
        if eg in self.md_types:
            glue += [assign(member(MD, eg, f), cast(self.md_width(eg, f), e) if narrowed else e)
                     for f, e, narrowed in (
                ("egress_port", member(SM, "egress_port"), False),
                ("enq_qdepth", member(SM, "enq_qdepth"), False),
                ("deq_qdepth", member(SM, "deq_qdepth"), False),
                ("enq_tstamp", _ns(member(SM, "enq_timestamp"), self.md_width(eg, "enq_tstamp")),
                 False),
                ("deq_timedelta", _ns(member(SM, "deq_timedelta"),
                                      self.md_width(eg, "deq_timedelta")), False),
                ("pkt_length", member(SM, "packet_length"), True))]
        if prsr in self.md_types:
            glue.append(assign(member(MD, prsr, "global_tstamp"),
                               _ns(member(SM, "egress_global_timestamp"),
                                   self.md_width(prsr, "global_tstamp"))))
        return glue

    # -------------------------------------------------------------- controls
    def lower_control(self, block, role):
        decl = block.ast
        _refuse_exit(block)
        lpf_locals, rewriter = self.extern_rewriter(block, role)
        local_decls = _keys_named_as_written([self.lower_local(d) for d in block.locals
                                              if tna_extern(d) not in REMOVED_EXTERNS])
        local_decls = lpf_locals + rewriter(self.substitute(local_decls))
        body = rewriter(self.substitute(decl.body))
        dprsr = "ingress_intrinsic_metadata_for_deparser" if role == "ingress" \
            else "egress_intrinsic_metadata_for_deparser"
        tail = []
        if dprsr in self.md_types:
            drop = A.If(_loc0(), A.Binary(_loc0(), "==", A.Slice(
                _loc0(), member(MD, dprsr, "drop_ctl"), A.IntLit(_loc0(), 0), A.IntLit(_loc0(), 0)),
                A.IntLit(_loc0(), 1, 1)), A.Block(_loc0(), [call("mark_to_drop", [name(SM)])]),
                None)
            tail.append(drop)
        if role == "ingress" and "ingress_intrinsic_metadata_for_tm" in self.md_types:
            tail.insert(0, assign(member(SM, "egress_spec"),
                                  member(MD, "ingress_intrinsic_metadata_for_tm", "ucast_egress_port")))
        body = A.Block(body.loc, [body] + tail)
        return dataclasses.replace(decl, params=self.new_params(block, "control"),
                                   locals=local_decls, body=body)

    def lower_local(self, local):
        """A local declaration of a control (IR) as V1Switch AST: Register -> register,
        Counter -> counter; other TNA externs are refused."""
        d, kind = local.ast, tna_extern(local)
        if kind == "Register":
            if len(local.args) != 1:
                raise CompileError(d.loc, "Register with an initial value is not supported on "
                                          "the built-in target")
            return dataclasses.replace(d, type=A.TypeRef(d.type.loc, "register",
                                                         args=d.type.args[:1]))
        if kind == "Counter":
            unit, unit_loc = enum_member(local.args[1]), local.args[1].loc
            if unit not in COUNTER_UNITS:
                raise CompileError(unit_loc, "Counter type must be a CounterType_t constant")
            return dataclasses.replace(d, type=A.TypeRef(d.type.loc, "counter"), args=[
                d.args[0], A.Member(unit_loc, name("CounterType", unit_loc), COUNTER_UNITS[unit])])
        if kind not in (None,) + SUPPORTED_EXTERNS:
            raise CompileError(d.type.loc, f"TNA extern '{kind}' is not supported on the "
                                           f"built-in target (only {', '.join(SUPPORTED_EXTERNS)})")
        return d

    def extern_rewriter(self, block, role):
        """Locals for the Lpfs, and a function rewriting calls of the control's TNA externs."""
        lpf_locals = []
        for d in block.locals:
            if tna_extern(d) == "Lpf":
                lpf_locals += _lpf_registers(d.ast)
            if tna_extern(d) == "Wred":
                lpf_locals += _lpf_registers(d.ast) + _wred_registers(d.ast)
            if tna_extern(d) == "Hash":
                _hash_algo(d)
        externs = _ExternCalls(self, block, role)

        def rewriter(node):
            node = transform(node, externs.split_declarations)
            walk(node, externs.refuse_nested)
            return transform(node, externs.rewrite)
        return lpf_locals, rewriter

    def empty_control(self, cname, params):
        return A.ControlDecl(_loc0(), [], cname, [], params, None, [], A.Block(_loc0(), []))

    # -------------------------------------------------------------- deparser
    def lower_deparser(self, block):
        """Emits stay in the deparser; Checksum updates move to the compute-checksum control."""
        decl = block.ast
        others = [d for d in block.locals if tna_extern(d) != "Checksum"]
        if others:
            raise CompileError(others[0].ast.loc, "the built-in target's TNA egress deparser "
                                                  "holds only Checksum instances")
        body = self.substitute(decl.body)
        emits, updates = [], []
        for s in body.stmts:
            if self.is_emit(s):
                emits.append(s)
            else:
                updates.append(self.checksum_update(s))
        deparser = dataclasses.replace(decl, params=self.new_params(block, "deparser"), locals=[],
                                       body=A.Block(body.loc, emits))
        checksum = A.ControlDecl(decl.loc, [], "__TnaComputeChecksum", [],
                                 self.new_params(block, "checksum"), None, [],
                                 A.Block(body.loc, updates))
        return deparser, checksum

    def checksum_update(self, stmt):
        """`[if (c)] { f = ck.update({...}); }` -> `update_checksum(c, {...}, f, csum16)`."""
        cond = A.BoolLit(stmt.loc, True)
        inner = stmt
        if isinstance(stmt, A.If) and stmt.other is None:
            cond, inner = stmt.cond, stmt.then
        if isinstance(inner, A.Block) and len(inner.stmts) == 1:
            inner = inner.stmts[0]
        found = self.instance_called(inner.rhs) if isinstance(inner, A.Assign) else None
        if not (found and tna_extern(found[0]) == "Checksum" and found[1] == "update"):
            raise CompileError(stmt.loc, "the built-in target's TNA egress deparser holds emits "
                                         "and `[if (cond)] field = checksum.update({...});` only")
        algo = A.Member(stmt.loc, name("HashAlgorithm", stmt.loc), "csum16")
        return call("update_checksum", [cond, inner.rhs.args[0], inner.lhs, algo], stmt.loc)

    def fresh_name(self, base):
        self.fresh += 1
        return f"__tna_{base}_{self.fresh}"


class _ExternCalls:
    """Rewrites `x = inst.method(...)` / `inst.method(...);` of one control's TNA externs
    (the instances the checker resolved the calls to)."""

    def __init__(self, lowering, block, role):
        self.low = lowering
        self.insts = {id(d) for d in block.locals
                      if tna_extern(d) in VALUE_EXTERNS + ("Counter", "Register")}
        self.regs = {id(d) for d in block.locals if tna_extern(d) == "Register"}
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
        """(the control's ir.Instance call `c` calls a method of, the method), else None."""
        found = self.low.instance_called(c)
        return found if found is not None and id(found[0]) in self.insts else None

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
        width = _bit_width(inst)
        tmp = self.low.fresh_name("random")
        out = [A.VarDecl(c.loc, [], inst.ast.type.args[0], tmp, None),
               call("random", [name(tmp), A.IntLit(c.loc, 0, width),
                               A.IntLit(c.loc, (1 << width) - 1, width)], c.loc)]
        return out + self.result(lhs, name(tmp))

    def Hash_get(self, inst, c, lhs):
        """v1model's hash with base 0 and max 2^W: the W low bits of the hash, as TNA's get."""
        algo, algo_loc = _hash_algo(inst)
        if lhs is None:
            raise CompileError(c.loc, "Hash.get() result unused")
        width = _bit_width(inst)
        tmp = self.low.fresh_name("hash")
        v1_algo = A.Member(algo_loc, name("HashAlgorithm", algo_loc), HASH_ALGOS[algo])
        return [A.VarDecl(c.loc, [], inst.ast.type.args[0], tmp, None),
                call("hash", [name(tmp), v1_algo, A.IntLit(c.loc, 0, width), c.args[0],
                              A.IntLit(c.loc, 1 << width, 64)], c.loc)] + self.result(lhs, name(tmp))

    def RegisterAction_execute(self, inst, c, lhs):
        """read; the action's body on a local copy; write (one access, as the stateful ALU)."""
        reg = self.register_of(inst)
        apply = next((m for m in inst.methods if m.name == "apply"), None)
        if apply is None:
            raise CompileError(inst.loc, f"RegisterAction '{inst.name}' has no apply method")
        value_t, _, out_t = inst.ast.type.args
        value, rv = self.low.fresh_name("value"), self.low.fresh_name("rv")
        renames = {id(apply.params[0]): name(value)}
        if len(apply.params) > 1:
            renames[id(apply.params[1])] = name(rv)
        body = self.low.substitute(apply.ast.body, renames)
        index = cast(32, c.args[0])
        out = [A.VarDecl(c.loc, [], value_t, value, None),
               A.VarDecl(c.loc, [], out_t, rv, A.Cast(c.loc, out_t, A.IntLit(c.loc, 0))),
               call(member(reg.name, "read"), [name(value), index], c.loc),
               body,
               call(member(reg.name, "write"), [index, name(value)], c.loc)]
        return out + self.result(lhs, name(rv))

    def register_of(self, inst):
        """The Register of the same control a RegisterAction's first argument names."""
        arg = inst.args[0] if inst.args else None
        if not (isinstance(arg, ir.Ref) and id(arg.decl) in self.regs):
            raise CompileError(inst.loc, f"RegisterAction '{inst.name}' must name a Register "
                                         f"of the same control")
        return arg.decl

    def Lpf_execute(self, inst, c, lhs):
        """The Lpf's state in registers; the filter step is the engine's tna_lpf_sample."""
        if lhs is None:
            raise CompileError(c.loc, "Lpf.execute() result unused")
        t = inst.ast.type.args[0]
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
        t = inst.ast.type.args[0]
        val, avg, index, drop, keep, result = (self.low.fresh_name(n) for n in (
            "val", "avg", "index", "drop", "keep", "wred"))
        head = [A.VarDecl(c.loc, [], t, val, c.args[0]),
                A.VarDecl(c.loc, [], bits(32), index, cast(32, c.args[1])),
                A.VarDecl(c.loc, [], bits(8), drop, inst.ast.args[1]),
                A.VarDecl(c.loc, [], bits(8), keep, inst.ast.args[2])]
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
    want = block_params(blocks["ingress_parser"])[1]
    for role in ("ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser"):
        hdr = block_params(blocks[role])[1]
        if not same_type(hdr.type, want.type):
            raise CompileError(hdr.loc, f"the built-in target needs one header type for both "
                                        f"gresses: '{hdr.ast.type.name}' here, "
                                        f"'{want.ast.type.name}' in the ingress parser")


def _refuse_exit(block):
    found = next((n for n in ir.walk(block) if isinstance(n, ir.Exit)), None)
    if found is not None:
        raise CompileError(found.loc, "exit in a TNA control is not supported on the built-in "
                                      "target")


# ------------------------------------------------------------------ small pieces
def _ns(us_expr, width):
    """The engine's microseconds as TNA's nanoseconds (wrapping at the field width)."""
    return A.Binary(_loc0(), "*", cast(width, us_expr), A.IntLit(_loc0(), 1000, width))


def _bit_width(inst):
    """W of a Random<W> or Hash<W> instance."""
    t = inst.type.type_args[0]
    if not isinstance(t, Bits) or t.signed:
        raise CompileError(inst.ast.type.args[0].loc, "Random<W> and Hash<W> need W = bit<N>")
    return t.width


def _hash_algo(inst):
    """The algorithm of a Hash instance (its member of HashAlgorithm_t) and its place."""
    algo = inst.args[0] if inst.args else None
    if enum_member(algo) not in HASH_ALGOS:
        raise CompileError(inst.loc, f"Hash algorithm must be one of "
                                     f"{', '.join('HashAlgorithm_t.' + a for a in HASH_ALGOS)} "
                                     f"on the built-in target")
    return enum_member(algo), algo.loc


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
