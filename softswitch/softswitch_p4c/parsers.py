"""Parsers, deparsers and checksum controls.

Parser states become BMv2 `parse_states` (extract/set/verify/advance/primitive
ops, `transition_key` and hexstr/mask/parse_vset/default transitions); select
ranges are expanded to value/mask pairs; the deparser becomes the emit order;
verify_checksum/update_checksum become `calculations` + `checksums`.
"""
import itertools
from dataclasses import replace

from . import ast as A
from . import ir
from .ast import describe
from .controls import ControlInfo
from .errors import CompileError, unsupported
from .exprs import Ctx
from .stmts import source_info
from .symbols import Scope, SubControlSym, ValueSetSym
from .types import Bits, BoolT, StructT, storage_width
from .values import (DynHeaderRef, FieldRef, HeaderRef, StackRef, StructRef, UnionRef, Val,
                     as_bool, as_data, mask_of, param as op_param)

_FINAL_STATES = ("accept", "reject")


def _flatten(stmts):
    out = []
    for s in stmts:
        out += _flatten(s.stmts) if isinstance(s, A.Block) else [s]
    return out


class ParserMixin:
    # ------------------------------------------------------------ parser
    def lower_parser(self, decl):
        scope = Scope(self.globals)
        self.bind_params(decl, scope)
        info = ControlInfo(decl.name, decl, scope)
        init_ops = self.parser_locals(decl, info)
        states = self.declare_states(decl, scope)
        if "start" not in states:
            raise CompileError(decl.loc, f"parser '{decl.name}' has no 'start' state")
        parse_states = []
        for st in decl.states:
            ops = list(init_ops) if st.name == "start" else []
            parse_states += self.lower_state(st, Ctx(Scope(scope), ops, "parser", info), states)
        self.json["parsers"].append({"name": "parser", "id": 0, "init_state": "start",
                                     "parse_states": parse_states})

    def parser_locals(self, decl, info):
        ops = []
        ctx = Ctx(info.scope, ops, "parser", info)
        for d in decl.locals:
            if isinstance(d, A.ValueSetDecl):
                self.declare_value_set(d, info)
            elif isinstance(d, (A.VarDecl, A.Temp)):   # a Temp: order.py's, before its use
                self.lower_stmt(d, ctx)
            elif isinstance(d, A.ConstDecl):
                t = self.resolve_type(d.type, info.scope)
                info.scope.declare(d.name, self.eval_const_decl(d, t, info.scope), d.loc)
            elif isinstance(d, A.Instance):
                self.declare_instance(d, info.scope, info)
                if not isinstance(info.scope.lookup(d.name), SubControlSym):
                    raise unsupported(d.loc, f"instance '{d.name}' inside a parser (parser "
                                             f"externs)")
            else:
                raise unsupported(d.loc, f"{type(d).__name__} in a parser")
        return ops

    def declare_value_set(self, d, info):
        t = self.resolve_type(d.type, info.scope)
        size = self.const_int(d.size, info.scope, "value_set size")
        if isinstance(t, StructT):
            width = sum(storage_width(ft) for _, ft in t.fields)
        elif isinstance(t, Bits):
            width = t.width
        else:
            raise CompileError(d.type.loc, "value_set element type must be bit<> or a struct")
        name = self.qualified(d.annos, d.name, info)
        sym = ValueSetSym(name, t, size, d.loc, d.annos)
        sym.width = width
        info.scope.declare(d.name, sym, d.loc)
        self.value_sets.append(sym)
        self.json["parse_vsets"].append({"name": name, "id": len(self.json["parse_vsets"]),
                                         "source_info": source_info(d.loc),
                                         "compressed_bitwidth": width})

    def declare_states(self, decl, scope):
        return {st.name: st for st in decl.states}      # unique: check.py

    def next_state_id(self):
        self.state_count = getattr(self, "state_count", 0) + 1
        return self.state_count - 1

    def lower_state(self, st, ctx, states):
        """One P4 state -> BMv2 states (more than one when an `if` splits it)."""
        if any(isinstance(s, A.Block) for s in st.stmts):     # so an `if` in a block splits
            st = A.ParserState(st.loc, st.annos, st.name, _flatten(st.stmts), st.transition)
        i = 0
        while i < len(st.stmts):
            expanded = self.hsindex.statement(st.stmts[i], ctx.scope)   # locals declared so far
            if expanded != [st.stmts[i]]:
                st = replace(st, stmts=st.stmts[:i] + expanded + st.stmts[i + 1:])
            s = st.stmts[i]
            if isinstance(s, A.If) and self.const_value(s.cond, ctx.scope) is None:
                return self.split_state(st, i, ctx, states)
            if isinstance(s, A.InlinedBlock):
                return self.split_at_subparser(st, i, ctx, states)
            self.parser_stmt(s, ctx)
            i += 1
        tr = st.transition
        if tr is None:
            raise CompileError(st.loc, f"state '{st.name}' has no transition statement")
        state = {"name": st.name, "id": self.next_state_id(), "parser_ops": ctx.prims,
                 "transition_key": [], "transitions": []}
        if tr.select is None:
            nxt = self.state_target(tr.next)
            state["transitions"] = [{"type": "default", "value": None, "mask": None,
                                     "next_state": nxt}]
        else:
            self.lower_select(tr, ctx, state)   # may add a `set` of the select key
        self.hoist_lookaheads(ctx.prims)
        return [state]

    def hoist_lookaheads(self, prims):
        """BMv2 reads `lookahead` only as the whole source of a `set` (or a select key):
        a lookahead inside an expression (`(bit<32>)(8 * pkt.lookahead<h>().ihl)`) is first
        `set` into a temporary, read right before the op that uses it (same position)."""
        out = []
        for op in prims:
            params = op["parameters"]
            keep = 1 if op["op"] == "set" and params[1].get("type") == "lookahead" else None
            hoisted = [p if i == keep else self.replace_lookaheads(p, out)
                       for i, p in enumerate(params)]
            out.append(dict(op, parameters=hoisted))
        prims[:] = out   # in place: a sub-parser's copy-in is appended to this list later
        return prims

    def replace_lookaheads(self, node, out):
        if isinstance(node, list):
            return [self.replace_lookaheads(x, out) for x in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") == "lookahead":
            tmp = self.new_scalar(self.unique_name("tmp"), Bits(node["value"][1]))
            out.append({"op": "set", "parameters": [tmp.ref.json(), node]})
            return tmp.ref.json()
        return {k: self.replace_lookaheads(v, out) for k, v in node.items()}

    def split_state(self, st, i, ctx, states):
        """p4c style: `if` in a state becomes a select on the condition into
        `<state>_true` / `<state>_false` states that continue in `<state>_join`."""
        s = st.stmts[i]
        cond = self.eval_value(s.cond, ctx)
        flag = self.new_scalar(self.unique_name("cond"), Bits(1))
        ctx.prims.append({"op": "set", "parameters": [flag.ref.json(), op_param(as_data(cond))]})
        join = self.synthetic_state(f"{st.name}_join", states)
        t_name = self.synthetic_state(f"{st.name}_true", states)
        f_name = self.synthetic_state(f"{st.name}_false", states) if s.other else join
        state = {"name": st.name, "id": self.next_state_id(),
                 "parser_ops": self.hoist_lookaheads(ctx.prims),
                 "transition_key": [flag.ref.json()],
                 "transitions": [{"type": "hexstr", "value": "0x01", "mask": None,
                                  "next_state": t_name},
                                 {"type": "default", "value": None, "mask": None,
                                  "next_state": f_name}]}
        out = [state]
        branches = [(t_name, s.then)] + ([(f_name, s.other)] if s.other else [])
        for name, body in branches:
            stmts = body.stmts if isinstance(body, A.Block) else [body]
            sub = A.ParserState(s.loc, [], name, stmts, A.Transition(s.loc, join))
            out += self.lower_state(sub, Ctx(Scope(ctx.scope), [], "parser", ctx.control), states)
        rest = A.ParserState(s.loc, [], join, st.stmts[i + 1:], st.transition)
        return out + self.lower_state(rest, Ctx(ctx.scope, [], "parser", ctx.control), states)

    def split_at_subparser(self, st, i, ctx, states):
        """`p.apply(...)` in a state (p4c style): the state ends by jumping to the states of
        this application's copy of the sub-parser (inline.py), named `<instance>_<state>`,
        whose `accept` continues in `<state>_after_<instance>` with the rest of the state."""
        call, d = st.stmts[i].call, st.stmts[i].inlined.decl
        sub = ctx.scope.lookup(call.func.expr.name)
        cont = self.synthetic_state(f"{st.name}_after_{sub.name}", states)
        prefix = self.unique_name(sub.name)
        renamed = {s.name: self.synthetic_state(f"{prefix}_{s.name}", states) for s in d.states}
        renamed["accept"] = cont
        head = {"name": st.name, "id": self.next_state_id(),
                "parser_ops": self.hoist_lookaheads(ctx.prims),
                "transition_key": [], "transitions": [
                    {"type": "default", "value": None, "mask": None,
                     "next_state": renamed["start"]}]}
        sub_states, copy_out = self.inline_subparser(sub, d, call, ctx, renamed, states,
                                                     st.stmts[i].inlined)
        rest = A.ParserState(st.loc, [], cont, st.stmts[i + 1:], st.transition)
        rest_ctx = Ctx(ctx.scope, [], "parser", ctx.control)
        self.copy_out(rest_ctx, copy_out)
        return [head] + sub_states + self.lower_state(rest, rest_ctx, states)

    def inline_subparser(self, sub, d, call, ctx, renamed, states, inlined):
        """The states of `d`, the application's copy of the sub-parser, renamed, with its
        parameters bound (copied in at the end of the calling state when arguments
        overlap); returns them and the copy-out pairs."""
        bound = self.bind_args(call, d.params, sub.name, Ctx(ctx.scope))
        scope = Scope(self.globals)
        for p in d.ctor_params or []:
            scope.declare(p.name, sub.ctor_args[p.name], p.loc)
        copy_out = self.bind_callee_params(d.params, bound, inlined.copies, scope,
                                           lambda tmp, arg, loc: self.assign(ctx, tmp, arg, loc))
        info = ControlInfo(f"{ctx.control.name}.{sub.name}", d, scope, parent=ctx.control)
        init_ops = self.parser_locals(d, info)
        if "start" not in renamed:
            raise CompileError(d.loc, f"parser '{d.name}' has no 'start' state")
        out = []
        for s in d.states:
            tr = s.transition
            target = lambda n: renamed.get(n, n)  # noqa: E731
            tr = tr and A.Transition(tr.loc, target(tr.next) if tr.next else None, tr.select,
                                     [(loc, ks, target(n), nloc) for loc, ks, n, nloc in tr.cases]
                                     if tr.cases is not None else None)
            copy = A.ParserState(s.loc, s.annos, renamed[s.name], s.stmts, tr)
            ops = list(init_ops) if s.name == "start" else []
            out += self.lower_state(copy, Ctx(Scope(scope), ops, "parser", info), states)
        return out, copy_out

    def synthetic_state(self, base, states):
        name = self.unique_name(base)
        while name in states:
            name = self.unique_name(base)
        states[name] = None
        return name

    def state_target(self, name):
        """A transition's next state in the JSON (a declared one: the checker's rule)."""
        return None if name in _FINAL_STATES else name

    def parser_stmt(self, s, ctx):
        if isinstance(s, A.Block):
            inner = ctx.child(Scope(ctx.scope))
            for x in s.stmts:
                self.parser_stmt(x, inner)
        elif isinstance(s, (A.Assign, A.VarDecl, A.Temp, A.CallStmt, A.Empty)):
            self.lower_stmt(s, ctx)
        elif isinstance(s, A.If):
            cond = self.eval_value(s.cond, Ctx(ctx.scope))
            if cond.const is None:
                raise unsupported(s.loc, "'if' statement nested in a block of a parser state")
            self.lower_stmt(s, ctx)
        else:
            raise unsupported(s.loc, f"{type(s).__name__} statement in a parser state")

    # packet_in methods (called through StmtMixin.method_call)
    def packet_method(self, obj, name, call, ctx, dest, stmt=False):
        kind = obj.extra.get("packet")
        if kind == "packet_in" and ctx.kind == "parser":
            if name == "extract":
                return self.parser_extract(call, ctx)
            if name == "advance":
                n = self.eval_value(call.args[0], ctx, Bits(32))
                ctx.prims.append({"op": "advance", "parameters": [op_param(as_data(n))]})
                return None
            if name == "lookahead":
                v = self.lookahead_value(call, ctx)
                if stmt:
                    self.discarded_lookahead(v, call.loc, ctx)
                return v
            raise unsupported(call.loc, f"packet_in.{name}()")
        where = "deparser" if name == "emit" else "parser"
        raise CompileError(call.loc, f"packet method '{name}' can only be used in a {where}")

    def parser_extract(self, call, ctx):
        """`extract(h)`, or `extract(h, n)` of a header with a varbit field (a header, with
        its length exactly when it has a varbit field: the checker's rule)."""
        v = self.eval_value(call.args[0], ctx)
        if "union_stack_next" in v.extra:
            stack, member = v.extra["union_stack_next"]
            param = {"type": "union_stack", "value": [stack.name, member]}
        elif "stack_next" in v.extra:
            param = {"type": "stack", "value": v.extra["stack_next"].name}
        elif isinstance(v.ref, HeaderRef):
            param = {"type": "regular", "value": v.ref.name}
        elif isinstance(v.ref, DynHeaderRef):
            raise unsupported(call.args[0].loc, "extract into a stack element with a run-time "
                                                "index")
        else:                   # a header (anything else is the checker's error)
            raise unsupported(call.args[0].loc, f"extract into '{describe(call.args[0])}'")
        if len(call.args) == 2:
            n = self.coerce(self.eval_value(call.args[1], ctx, Bits(32)), Bits(32))
            length = {"type": "expression", "value": as_data(n)}   # BMv2 requires an expression
            ctx.prims.append({"op": "extract_VL", "parameters": [param, length]})
            return None
        ctx.prims.append({"op": "extract", "parameters": [param]})
        return None

    def discarded_lookahead(self, v, loc, ctx):
        """`pkt.lookahead<T>();` as a statement still fails with PacketTooShort when fewer
        than T's bits remain (as p4c lowers it: a temporary set from the lookahead)."""
        width = v.type.width if isinstance(v.type, Bits) else v.type.width()
        tmp = self.new_scalar(self.unique_name("lookahead_tmp"), Bits(width))
        self.assign(ctx, tmp, Val(Bits(width), json={"type": "lookahead", "value": [0, width]}),
                    loc)

    def lookahead_value(self, e, ctx):
        """`lookahead<T>()`, of the type the checker gave it (one type argument, no
        arguments: its rule)."""
        if ctx.kind != "parser":
            raise CompileError(e.loc, "lookahead() can only be used in a parser")
        t = self.node_type(e, ctx)
        if isinstance(t, StructT) and t.kind == "header":
            return Val(t, extra={"lookahead_header": t})
        if isinstance(t, StructT) and t.kind == "struct":
            return self.lookahead_struct(t, 0, e)
        if not isinstance(t, Bits):
            raise unsupported(e.loc, f"lookahead of {t} (only bit<W> is supported)")
        return Val(t, json={"type": "lookahead", "value": [0, t.width]}, extra={"lookahead": True})

    def lookahead_struct(self, t, offset, e):
        """`lookahead<S>()` of a struct: each field reads the bits at its offset (as p4c's
        ExpandLookahead slices one wide lookahead into the struct's fields)."""
        members = {}
        for name, ft in t.fields:
            if isinstance(ft, StructT) and ft.kind == "struct":
                members[name] = self.lookahead_struct(ft, offset, e)
                offset += ft.width()
                continue
            if not isinstance(ft, (Bits, BoolT)):
                raise unsupported(e.loc, f"lookahead of {t} (field '{name}' is {ft})")
            width = storage_width(ft)
            members[name] = Val(ft, json={"type": "lookahead", "value": [offset, width]})
            offset += width
        return Val(t, ref=StructRef(t, members))

    # ------------------------------------------------------------ select
    def lower_select(self, tr, ctx, state):
        keys = []
        for k in tr.select:                         # bit<>, bool or enum: check.py
            v = self.eval_value(k, ctx)
            keys.append((self.select_key_json(v, k, ctx), storage_width(v.type)))
        state["transition_key"] = [j for j, _ in keys]
        widths = [w for _, w in keys]
        for case in tr.cases:
            cloc, ks, target, _target_loc = case
            nxt = self.state_target(target)
            for t in self.select_case(ks, widths, ctx, cloc):
                t["next_state"] = nxt
                state["transitions"].append(t)

    def select_key_json(self, v, k, ctx):
        if isinstance(v.ref, FieldRef):
            return v.ref.json()
        if v.json is not None and v.json.get("type") in ("stack_field", "lookahead"):
            return v.json
        if v.is_boolexpr and v.json["value"]["op"] == "d2b":
            return v.json["value"]["right"]
        tmp = self.new_scalar(self.unique_name("tmp"), v.type if not isinstance(v.type, BoolT)
                              else Bits(1))
        ctx.prims.append({"op": "set", "parameters": [tmp.ref.json(), op_param(as_data(v))]})
        return tmp.ref.json()

    def select_case(self, ks, widths, ctx, loc):
        """The (value, mask) transitions of a select case (one value per key, each a
        constant that fits: the checker's rule, check.check_keyset)."""
        items = ks.items if isinstance(ks, A.ListExpr) else [ks]
        if isinstance(ks, A.DefaultExpr):
            return [{"type": "default", "value": None, "mask": None}]
        if len(items) == 1 and len(widths) == 1 and self.is_value_set(items[0], ctx):
            sym = ctx.scope.lookup(items[0].name)
            return [{"type": "parse_vset", "value": sym.name, "mask": None}]
        if all(isinstance(i, A.DefaultExpr) for i in items):
            return [{"type": "default", "value": None, "mask": None}]
        per_item = [self.keyset_pairs(i, w, ctx) for i, w in zip(items, widths)]
        out = []
        for combo in itertools.product(*per_item):
            value = "".join(_pad_hex(v, w) for (v, _), w in zip(combo, widths))
            mask = "".join(_pad_hex(m, w) for (_, m), w in zip(combo, widths))
            full = all(m == mask_of(w) for (_, m), w in zip(combo, widths))
            out.append({"type": "hexstr", "value": "0x" + value,
                        "mask": None if full else "0x" + mask})
        return out

    def is_value_set(self, e, ctx):
        return isinstance(e, A.Name) and isinstance(ctx.scope.lookup(e.name), ValueSetSym)

    def keyset_pairs(self, e, width, ctx):
        """(value, mask) pairs matching one keyset element."""
        if isinstance(e, A.DefaultExpr):
            return [(0, 0)]
        if self.is_value_set(e, ctx):
            raise unsupported(e.loc, "value_set inside a tuple keyset")
        if isinstance(e, A.Mask):
            v, m = self.select_const(e.value, ctx, width), self.select_const(e.mask, ctx, width)
            return [(v & m, m)]
        if isinstance(e, A.Range):
            lo, hi = self.select_const(e.lo, ctx, width), self.select_const(e.hi, ctx, width)
            return _range_to_masks(lo, hi, width)
        return [(self.select_const(e, ctx, width), mask_of(width))]

    def select_const(self, e, ctx, width):
        """A keyset value (the checker's: a constant that fits), modulo 2^width."""
        return int(self.node(e, ctx, ir.settled).value) & mask_of(width)

    # ------------------------------------------------------------ deparser
    def lower_deparser(self, decl):
        scope = Scope(self.globals)
        self.bind_params(decl, scope)
        order = []
        self.deparser_stmts(decl.body.stmts, Ctx(scope, None, "deparser"), order)
        self.json["deparsers"].append({"name": "deparser", "id": 0,
                                       "source_info": source_info(decl.loc), "order": order,
                                       "primitives": []})

    def deparser_stmts(self, stmts, ctx, order):
        for s in stmts:
            if isinstance(s, A.Block):
                self.deparser_stmts(s.stmts, ctx, order)
            elif isinstance(s, A.Empty):
                continue
            elif isinstance(s, A.Assign):
                self.check_lvalue(self.eval_value(s.lhs, ctx), s.lhs)
                raise unsupported(s.loc, "assignment in a deparser")
            elif isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Member) and \
                    s.call.func.name == "emit":
                self.deparser_emit(s.call, ctx, order)
            else:
                raise unsupported(s.loc, "deparser statements other than packet.emit()")

    def deparser_emit(self, call, ctx, order):
        obj = self.eval_value(call.func.expr, ctx)
        if obj.extra.get("packet") != "packet_out":
            raise CompileError(call.loc, "emit() must be called on the packet_out parameter")
        v = self.eval_value(call.args[0], ctx)
        names = self.emit_order(v, call.args[0])
        for n in names:
            if n not in order:
                order.append(n)

    def emit_order(self, v, e):
        ref = v.ref
        if isinstance(ref, HeaderRef):
            return [ref.name]
        if isinstance(ref, StackRef):
            return [h.name for x in ref.elems
                    for h in (x.members.values() if isinstance(x, UnionRef) else [x])]
        if isinstance(ref, UnionRef):
            return [h.name for h in ref.members.values()]
        if isinstance(ref, StructRef):
            out = []
            for m in ref.members.values():
                if m.ref is not None and not isinstance(m.ref, FieldRef):
                    out += self.emit_order(m, e)
            return out
        raise CompileError(e.loc, f"emit needs a header, stack, union or struct of headers, "
                                  f"not {v.type}")

    # ------------------------------------------------------------ checksums
    def lower_checksums(self, decl, verify):
        scope = Scope(self.globals)
        self.bind_params(decl, scope)
        wanted = "verify_checksum" if verify else "update_checksum"
        self.checksum_stmts(decl.body.stmts, Ctx(scope, None, "checksum"), wanted, verify)

    def checksum_stmts(self, stmts, ctx, wanted, verify):
        for s in stmts:
            if isinstance(s, A.Block):
                self.checksum_stmts(s.stmts, ctx, wanted, verify)
            elif isinstance(s, A.Empty):
                continue
            elif isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Name) and \
                    s.call.func.name in (wanted, wanted + "_with_payload"):
                self.checksum_call(s.call, ctx, verify)
            else:
                role = "VerifyChecksum" if verify else "ComputeChecksum"
                raise unsupported(s.loc, f"statement in the {role} control (only {wanted}() "
                                         f"calls are supported)")

    def checksum_call(self, call, ctx, verify):
        name = call.func.name
        sym = self.globals.lookup(name)
        method = self.pick_overload(sym.overloads, call)
        args = self.bind_args(call, method.params, name, ctx,
                              self.call_type_env(method, call, ctx))
        cond = args["condition"]
        if cond.const is False:
            return
        inputs = self.data_inputs(args["data"], call, ctx, allow_temps=False)
        if name.endswith("_with_payload"):
            inputs.append({"type": "payload", "value": None})
        target = args["checksum"]
        if not isinstance(target.ref, FieldRef):
            raise CompileError(call.args[2].loc, "checksum target must be a header field")
        calc = self.add_calculation(self.hash_algo(args["algo"], call), inputs, call.loc)
        self.json["checksums"].append({
            "name": self.unique_name("cksum"), "id": len(self.json["checksums"]),
            "source_info": source_info(call.loc), "target": [target.ref.header, target.ref.field],
            "type": "generic", "calculation": calc, "verify": verify, "update": not verify,
            "if_cond": None if cond.const is True else as_bool(cond)})


def _pad_hex(value, width):
    nbytes = (width + 7) // 8
    return f"{value:0{2 * nbytes}x}"


def _range_to_masks(lo, hi, width):
    """Cover [lo, hi] with aligned power-of-two blocks as (value, mask) pairs."""
    out = []
    full = mask_of(width)
    while lo <= hi:
        size = lo & -lo if lo else 1 << width
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out
