"""Expression evaluation in parser, control and action bodies: names resolved to storage
and lowered to BMv2 JSON expressions (the way p4c's BMv2 back end writes them). Types and
type rules are the checker's (check.py): `ExprMixin.typed` checks an expression in the
emitter's scope of the moment and the lowering reads types from its IR node; constant
operands fold with values.fold_binary / fold_unary. Compile-time evaluation outside
bodies (constants, widths, enum values, the passes' questions) is the checker's too."""
from dataclasses import dataclass
from typing import Any

from . import ir
from .ast import describe, name_loc
from .check import BlockChecker
from .desugar import has_side_effects
from .errors import CompileError, unsupported
from .symbols import (ActionSym, ExternFuncSym, ExternInstance, FuncSym, StateSym, TableSym,
                      TypeSym, ValueSetSym)
from .types import (Bits, BoolT, EnumT, ErrorT, ExternT, IntT, StackT, StringT, StructT, TupleT,
                    DontCareT, VarbitT, storage_width)
from .values import (DynHeaderRef, DynUnionRef, HeaderRef, StackRef, StructRef, UnionRef, Val,
                     as_bool, as_data, bool_expr, data_expr, expr, field_val, fold_binary,
                     fold_unary, hexstr, mask_of, wrap)

_ARITH = {"+", "-", "*"}
_CMP = {"==", "!=", "<", ">", "<=", ">="}
_BITWISE = {"&", "|", "^"}


class Ctx:
    """Where an expression or statement is being lowered.

    prims: the primitive list of the action being built (None: no side effects
    allowed, e.g. constants, table keys, graph conditions)."""

    def __init__(self, scope, prims=None, kind="const", control=None):
        self.scope = scope
        self.prims = prims
        self.kind = kind                # const | action | control | parser
        self.control = control
        self.return_jumps = None        # list of jump primitives to patch at inline end
        self.return_target = None       # Val receiving a function's return value
        self.return_values = None       # the Vals a function's returns assigned to it
        self.loop_jumps = None          # (break jumps, continue jumps) of a run-time loop

    def child(self, scope):
        c = Ctx(scope, self.prims, self.kind, self.control)
        c.return_jumps, c.return_target = self.return_jumps, self.return_target
        c.return_values = self.return_values
        c.loop_jumps = self.loop_jumps
        return c


@dataclass
class StackLastRef:
    stack: Any


class ExprMixin:
    def eval_expr(self, e, ctx, expected=None):
        method = getattr(self, "ev_" + type(e).__name__, None)
        if method is None:
            raise unsupported(e.loc, f"expression {type(e).__name__}")
        return method(e, ctx, expected)

    def eval_value(self, e, ctx, expected=None):
        """Evaluate and require a scalar or aggregate value (not a type or method)."""
        v = self.eval_expr(e, ctx, expected)
        if v.type is None:
            what = describe(e)
            raise CompileError(e.loc, f"'{what}' is not a value")
        return v

    def typed(self, e, ctx):
        """`e`'s typed IR node (its type, its compile-time value): the checker's, in the
        emitter's scope of the moment, which knows the constants bound there (an inlined
        action's arguments, a loop's unrolled variable). An expression is checked once per
        scope, with all of its sub-expressions (`ir_nodes` keeps them)."""
        hit = self.ir_nodes.get(id(e))
        if hit is None or hit[0] is not e or hit[1] is not ctx.scope:
            checker = BlockChecker(self, None, {}, outer=ctx.scope)
            checker.nodes = {}
            checker.expr(e)
            for key, (sub, node) in checker.nodes.items():
                self.ir_nodes[key] = (sub, ctx.scope, node)
            hit = self.ir_nodes[id(e)]
        return hit[2]

    def node(self, e, ctx, known=lambda n: True):
        """`e`'s node in the program's typed IR (`check_v1model`'s), where the passes left
        `e` as the checker saw it and every check of it agreed (`check.record`) and the
        node has what the caller reads (`known`: a type, a value); else `typed`'s, checked
        in the emitter's scope of the moment. A type, a slice's bounds and a value the
        checker knew are the same in every scope the emitter lowers `e` in (the scope of
        the moment only adds constants: an inlined action's arguments, an unrolled loop's
        variable, which have their declared types); a value the checker did not know may
        be known there. A value whose expression the emitter does not lower is read only
        when it is settled (`ir.settled`). An expression a pass rebuilt standing for one
        the checker saw has that one's node (`Compiler.keep_nodes`)."""
        hit = self.program_nodes.get(id(e))
        if hit is not None and hit[0] is e and hit[1] is not None and known(hit[1]):
            return hit[1]
        return self.typed(e, ctx)

    def node_type(self, e, ctx):
        return self.node(e, ctx, lambda n: n.type is not None).type

    # ------------------------------------------------------------ leaves
    def ev_IntLit(self, e, ctx, expected):
        if e.width is None:
            return Val(IntT(), const=e.value)
        t = Bits(e.width, e.signed)
        return Val(t, const=wrap(e.value, t))

    def ev_BoolLit(self, e, ctx, expected):
        return Val(BoolT(), const=e.value)

    def ev_StrLit(self, e, ctx, expected):
        return Val(StringT(), json={"type": "string", "value": e.value}, extra={"str": e.value})

    def ev_DefaultExpr(self, e, ctx, expected):
        return Val(DontCareT(), extra={"dontcare": True})

    def ev_TypeExpr(self, e, ctx, expected):
        return Val(None, extra={"typesym": self.resolve_type(e.type, ctx.scope)})

    def ev_Name(self, e, ctx, expected):
        scope = ctx.scope.root() if e.absolute else ctx.scope
        if e.name == "error" and scope.lookup("error") is None:
            return Val(None, extra={"typesym": ErrorT()})
        return self.symbol_value(scope.lookup(e.name), e)      # declared: the checker's

    def symbol_value(self, sym, e):
        if isinstance(sym, Val):
            return sym
        if isinstance(sym, TypeSym):
            return Val(None, extra={"typesym": sym.type})
        if isinstance(sym, ExternInstance):
            return Val(sym.type, extra={"extern": sym})
        if isinstance(sym, (ActionSym, FuncSym, ExternFuncSym)):
            return Val(None, extra={"callable": sym})
        if isinstance(sym, TableSym):
            return Val(None, extra={"table": sym})
        if isinstance(sym, ValueSetSym):
            return Val(None, extra={"vset": sym})
        if isinstance(sym, StateSym):
            return Val(None, extra={"state": sym})
        raise CompileError(e.loc, f"'{e.name}' cannot be used here")

    # ------------------------------------------------------------ member access
    def ev_Member(self, e, ctx, expected):
        base = self.eval_expr(e.expr, ctx)
        return self.member_of(base, e)

    def member_of(self, base, e):
        x = base.extra
        if "typesym" in x:
            return self.type_member(x["typesym"], e)
        if "apply_result" in x:
            return self.apply_result_member(base, e)
        if "lookahead_header" in x:
            return self.lookahead_member(x["lookahead_header"], e)
        if "stack_next" in x and x["stack_next"].union:       # u.next.member (extract)
            member = base.type.field_type(e.name)
            return Val(member, extra={"union_stack_next": (x["stack_next"], e.name)})
        if "extern" in x or "table" in x or isinstance(base.type, ExternT):
            return Val(None, extra={"method": e.name, "obj": base, "loc": e.loc})
        ref = base.ref
        if isinstance(ref, StructRef):
            return ref.members[e.name]
        if isinstance(ref, (HeaderRef, DynHeaderRef, StackLastRef)):
            return self.header_member(base, e)
        if isinstance(ref, (UnionRef, DynUnionRef)):
            if base.type.field_type(e.name) is not None:
                h = ref.members[e.name] if isinstance(ref, UnionRef) else ref.member(e.name)
                return Val(h.type, ref=h)
            return Val(None, extra={"method": e.name, "obj": base, "loc": e.loc})   # isValid
        return self.stack_member(base, e)

    def type_member(self, t, e):
        """An enum member or an error (declared ones: the checker's rule)."""
        if isinstance(t, EnumT):
            return Val(t, const=t.members[e.name], extra={"enum_member": e.name})
        return Val(ErrorT(), const=self.errors[e.name], extra={"error_member": e.name})

    def lookahead_member(self, ht, e):
        offset = 0
        if any(isinstance(t, VarbitT) for _, t in ht.fields):
            raise unsupported(e.loc, f"lookahead of header {ht.name} with a varbit field")
        for fname, ft in ht.fields:          # a field of the header (the checker's rule)
            if fname == e.name:
                return Val(ft, json={"type": "lookahead", "value": [offset, storage_width(ft)]})
            offset += storage_width(ft)
        raise unsupported(e.loc, f"'{e.name}' of a lookahead header (only its fields)")

    def header_member(self, base, e):
        ht = base.type
        if e.name in ht.wide:
            raise unsupported(name_loc(e), f"reading or writing the {ht.wide[e.name]}-bit field "
                                     f"'{e.name}' (the built-in target holds at most 128 bits "
                                     f"per field; extract, emit and copies of the whole "
                                     f"header work)")
        if e.name in ht.nested:
            if not isinstance(base.ref, HeaderRef):
                raise unsupported(e.loc, f"struct field '{e.name}' of a header chosen at run "
                                         f"time")
            return self.flattened_struct(ht.nested[e.name], base.ref)
        ft = ht.field_type(e.name)
        if ft is None:                                  # a method (check.HEADER_METHODS)
            return Val(None, extra={"method": e.name, "obj": base, "loc": e.loc})
        ref = base.ref
        if isinstance(ref, HeaderRef):
            return field_val(ft, ref.member(e.name))
        if isinstance(ref, StackLastRef):
            return Val(ft, json={"type": "stack_field", "value": [ref.stack.name, e.name]})
        offset = [n for n, _ in ht.fields].index(e.name)
        return Val(ft, json=expr("access_field", ref.json(), offset), extra={"lvalue": True})

    def flattened_struct(self, nested, ref):
        """The value of a header's struct field: its members are the header's flat fields."""
        st, members = nested
        return Val(st, ref=StructRef(st, {
            name: self.flattened_struct(flat, ref) if isinstance(flat, tuple)
            else field_val(st.field_type(name), ref.member(flat))
            for name, flat in members.items()}))

    def stack_member(self, base, e):
        st, ref = base.type, base.ref
        if e.name == "next":
            return Val(st.elem, extra={"stack_next": ref, "loc": e.loc})
        if ref.union and e.name in ("last", "lastIndex"):
            # last_stack_index on the union stack (BMv2's, as p4c writes it), the union at that
            # index chosen at run time like `us[i]`
            index = expr("last_stack_index", None, ref.json())
            if e.name == "lastIndex":
                return data_expr(Bits(32), index)
            return Val(st.elem, ref=DynUnionRef(ref, index, st.elem))
        if ref.union and e.name not in ("size", "push_front", "pop_front"):
            raise unsupported(e.loc, f"'{e.name}' on a header union stack")
        if e.name == "last":
            return Val(st.elem, ref=StackLastRef(ref))
        if e.name == "lastIndex":
            return data_expr(Bits(32), expr("last_stack_index", None, ref.json()))
        if e.name == "size":
            return Val(Bits(32), const=st.size)
        return Val(None, extra={"method": e.name, "obj": base, "loc": e.loc})  # push/pop_front

    def apply_result_member(self, base, e):
        table = base.extra["apply_result"]
        if e.name in ("hit", "miss"):
            return Val(BoolT(), extra={"hit_test": (table, e.name == "hit")})
        return Val(None, extra={"action_run": table})                         # action_run

    def ev_Index(self, e, ctx, expected):
        """A stack element or tuple item: at the index the checker knows at compile time
        (in bounds: its rule), else at run time."""
        i = self.node(e, ctx, lambda n: ir.settled(n.parts[1])).parts[1].value
        base = self.eval_value(e.expr, ctx)
        if isinstance(base.type, TupleT):
            return base.extra["items"][i] if "items" in base.extra else \
                base.ref.members[str(i)]
        idx = None
        if i is None:
            idx = self.eval_value(e.index, ctx)
            i = self.inlined_constant(idx, base.type.size, e.index.loc)
        if i is not None:
            return Val(base.type.elem, ref=base.ref.elems[int(i)])
        if base.ref.union:
            return Val(base.type.elem, ref=DynUnionRef(base.ref, as_data(idx), base.type.elem))
        deref = expr("dereference_header_stack", base.ref.json(), as_data(idx))
        return Val(base.type.elem, ref=DynHeaderRef(deref, base.ref.elems, base.type.elem))

    def inlined_constant(self, idx, size, loc):
        """An index only inlining made constant (a function's constant result, which the
        checker does not know): bounds are checked here, as the checker does for the rest."""
        if idx.const is not None and not 0 <= int(idx.const) < size:
            raise CompileError(loc, f"index {int(idx.const)} out of bounds for stack of size "
                                    f"{size}")
        return idx.const

    def ev_Slice(self, e, ctx, expected):
        """`base[hi:lo]`: its bounds and type are the checker's (a bit<W> base, bounds in
        range: its rule)."""
        node = self.node(e, ctx, lambda n: getattr(n, "hi", None) is not None)
        t, hi, lo = node.type, node.hi, node.lo
        base = self.eval_value(e.expr, ctx)
        extra = {"slice": (base, hi, lo)}
        if base.const is not None:
            return Val(t, const=(base.const >> lo) & mask_of(t.width), extra=extra)
        shifted = expr(">>", as_data(base), hexstr(lo)) if lo else as_data(base)
        return Val(t, json=expr("&", shifted, hexstr(mask_of(t.width), t.width)), extra=extra)

    def ev_ListExpr(self, e, ctx, expected):
        items = []
        for i, item in enumerate(e.items):
            sub = None
            if isinstance(expected, StructT) and i < len(expected.fields):
                sub = expected.fields[i][1]
            items.append(self.eval_value(item, ctx, sub))
        return Val(TupleT([v.type for v in items]), extra={"items": items})

    # ------------------------------------------------------------ operators
    def ev_Unary(self, e, ctx, expected):
        v = self.eval_value(e.expr, ctx, expected)
        if e.op == "!":
            if v.const is not None:
                return Val(BoolT(), const=fold_unary("!", v.const, BoolT()))
            return bool_expr(expr("not", None, as_bool(v)))
        if e.op == "+":
            return v
        if v.const is not None:
            return Val(v.type, const=fold_unary(e.op, v.const, v.type))
        if e.op == "-":
            return self.fit(v.type, expr("-", hexstr(0), as_data(v)))
        return self.fit(v.type, expr("~", None, as_data(v)))

    def ev_Binary(self, e, ctx, expected):
        op = e.op
        if op in ("&&", "||"):
            return self.logical(e, ctx)
        t = self.node_type(e, ctx) if op not in _CMP else None
        left = self.eval_value(e.left, ctx, expected if op not in _CMP else None)
        right = self.eval_value(e.right, ctx, left.type if op not in ("<<", ">>", "++") else None)
        if op in _CMP:
            return self.compare(op, left, right, e)
        if op in ("<<", ">>", "++"):
            return self.shift(op, left, right, t) if op != "++" else self.concat(left, right, t)
        left, right = self.coerce(left, t), self.coerce(right, t)      # an integer takes `t`
        if op in ("/", "%"):
            return self.divide(op, left, right, t, e)
        if op in ("|+|", "|-|"):
            return self.saturating(op, left, right, t)
        if left.const is not None and right.const is not None:
            return Val(t, const=fold_binary(op, left.const, right.const, t))
        j = expr(op, as_data(left), as_data(right))
        return self.fit(t, j) if op in _ARITH else data_expr(t, j)

    def logical(self, e, ctx):
        """`a && b`, `a || b` without side effects in `b`: order.py made the others `if`
        statements."""
        left = self.eval_value(e.left, ctx)
        right = self.eval_value(e.right, ctx)
        if left.const is not None and right.const is not None:
            return Val(BoolT(), const=fold_binary(e.op, left.const, right.const, BoolT()))
        return bool_expr(expr("and" if e.op == "&&" else "or", as_bool(left), as_bool(right)))

    def unify(self, left, right):
        """A comparison's operands in their one type: an integer without a width takes the
        other operand's (which types compare is the checker's rule, check.py)."""
        return self.coerce(left, right.type), self.coerce(right, left.type)

    def compare(self, op, left, right, e):
        """`left op right` as a bool (which types compare is the checker's rule)."""
        lt, rt = left.type, right.type
        if isinstance(lt, VarbitT) or isinstance(rt, VarbitT):
            return bool_expr(expr(op, as_data(left), as_data(right)))   # as p4c writes it
        if isinstance(lt, (StructT, StackT)) or isinstance(rt, (StructT, StackT)):
            equal = self.aggregate_equal(left, right, e)
            return equal if op == "==" else self.negate(equal)
        if not isinstance(lt, (BoolT, EnumT, ErrorT)) and not isinstance(rt, (BoolT, EnumT, ErrorT)):
            left, right = self.unify(left, right)
        if left.const is not None and right.const is not None:
            return Val(BoolT(), const=fold_binary(op, left.const, right.const, BoolT()))
        return bool_expr(expr(op, as_data(left), as_data(right)))

    def aggregate_equal(self, left, right, e):
        """Headers are equal when both are invalid, or both valid with equal fields; structs
        and stacks member by member (P4-16 8.17, 8.12): expanded to scalar comparisons."""
        t = left.type
        if isinstance(left.ref, StructRef) and isinstance(right.ref, StructRef):
            return self.all_of([self.compare("==", left.ref.members[f], right.ref.members[f], e)
                                for f, _ in t.fields])
        if isinstance(left.ref, StackRef) and isinstance(right.ref, StackRef):
            return self.all_of([self.aggregate_equal(Val(t.elem, ref=a), Val(t.elem, ref=b), e)
                                for a, b in zip(left.ref.elems, right.ref.elems)])
        if not (isinstance(left.ref, HeaderRef) and isinstance(right.ref, HeaderRef)):
            raise unsupported(e.loc, f"comparison of {t} values of this kind")
        fields = [self.compare("==", field_val(ft, left.ref.member(f)),
                               field_val(ft, right.ref.member(f)), e) for f, ft in t.fields]
        lv, rv = self.is_valid(left, e), self.is_valid(right, e)
        same_validity = bool_expr(expr("==", as_data(lv), as_data(rv)))
        either = bool_expr(expr("or", as_bool(self.negate(lv)), as_bool(self.all_of(fields))))
        return self.all_of([same_validity, either])

    def all_of(self, conds):
        out = Val(BoolT(), const=True)
        for c in conds:
            if c.const is not None:
                out = out if c.const else c
            elif out.const is not None:
                out = c if out.const else out
            else:
                out = bool_expr(expr("and", as_bool(out), as_bool(c)))
        return out

    def negate(self, v):
        if v.const is not None:
            return Val(BoolT(), const=not v.const)
        return bool_expr(expr("not", None, as_bool(v)))

    def shift(self, op, left, right, t):
        """`left op right` of type `t`, the checker's (which shifts it takes is its rule)."""
        if left.const is not None and right.const is not None:
            return Val(t, const=fold_binary(op, left.const, right.const, t))
        j = expr(op, as_data(left), as_data(right))
        return self.fit(t, j) if op == "<<" else data_expr(t, j)

    def concat(self, left, right, t):
        """`left ++ right` of type `t`, the checker's (operands with a width: its rule)."""
        low_mask = mask_of(right.type.width)
        if left.const is not None and right.const is not None:
            return Val(t, const=fold_binary("++", left.const, right.const, t, right.type))
        low = as_data(right)
        if right.type.signed:  # BMv2 holds int<W> sign-extended: keep only its W bits
            low = expr("&", low, hexstr(low_mask, right.type.width))
        shifted = expr("<<", as_data(left), hexstr(right.type.width))
        return self.fit(t, expr("|", shifted, low))

    def divide(self, op, left, right, t, e):
        if right.const == 0:
            raise CompileError(e.loc, "division by zero")
        if left.const is None and _is_power_of_two(right.const) and \
                isinstance(t, Bits) and not t.signed:
            return self.by_power_of_two(op, left, right.const, t)
        if left.const is None or right.const is None:
            raise unsupported(e.loc, f"'{op}' on run-time values (BMv2 has no division; "
                                     f"only unsigned values by powers of two)")
        if left.const < 0 or right.const < 0:
            raise CompileError(e.loc, f"'{op}' needs non-negative operands")
        return Val(t, const=fold_binary(op, left.const, right.const, t))

    def by_power_of_two(self, op, left, divisor, t):
        """Unsigned `x / 2^k` is `x >> k` and `x % 2^k` is `x & (2^k - 1)`, as p4c's
        StrengthReduction rewrites them before the BMv2 back end."""
        if op == "/":
            return data_expr(t, expr(">>", as_data(left), hexstr(divisor.bit_length() - 1)))
        return data_expr(t, expr("&", as_data(left), hexstr(divisor - 1, t.width)))

    def saturating(self, op, left, right, t):
        """`|+|` / `|-|` on operands of type `t` (bit<W> or int<W>: the checker's rule)."""
        if left.const is not None and right.const is not None:
            return Val(t, const=fold_binary(op, left.const, right.const, t))
        raw = expr("+" if op == "|+|" else "-", as_data(left), as_data(right))
        # BMv2's saturating casts, as p4c lowers |+| and |-|
        return Val(t, json=expr("sat_cast" if t.signed else "usat_cast", raw, hexstr(t.width)))

    def ev_Ternary(self, e, ctx, expected):
        t = self.node_type(e, ctx)
        if ctx.prims is not None and has_side_effects([e.then, e.other]):    # order.py's rule
            raise unsupported(e.loc, "side effects in a branch of '?:' in a generic function")
        cond = self.eval_value(e.cond, ctx)
        then = self.eval_value(e.then, ctx, expected)
        other = self.eval_value(e.other, ctx, then.type)
        then, other = self.coerce(then, t), self.coerce(other, t)
        if cond.const is not None:
            return then if cond.const else other
        if isinstance(t, BoolT):
            return bool_expr(expr("?", as_bool(then), as_bool(other), cond=as_bool(cond)))
        if not t.is_scalar:
            raise unsupported(e.loc, f"'?:' on {t} values")
        return data_expr(t, expr("?", as_data(then), as_data(other), cond=as_bool(cond)))

    def ev_Cast(self, e, ctx, expected):
        t = self.node_type(e, ctx)
        return self.cast(self.eval_value(e.expr, ctx, t), t)

    def cast(self, v, t):
        """`v` cast to `t` (which casts there are is the checker's rule, check.check_cast)."""
        src = v.type
        if isinstance(t, BoolT) and not isinstance(src, BoolT):
            if v.const is not None:
                return Val(BoolT(), const=bool(v.const))
            return bool_expr(expr("d2b", None, as_data(v)))
        if isinstance(t, Bits) and isinstance(src, BoolT):
            if v.const is not None:
                return Val(t, const=int(v.const))
            return data_expr(t, expr("b2d", None, as_bool(v)))
        if isinstance(t, Bits):
            return self.cast_bits(v, src, t)
        if isinstance(t, EnumT) and t.base:
            return Val(t, const=v.const, json=None if v.const is not None else as_data(v),
                       ref=v.ref)
        return v

    def cast_bits(self, v, src, t):
        if v.const is not None:
            return Val(t, const=wrap(int(v.const), t))
        src_bits = src.base if isinstance(src, EnumT) else src
        if isinstance(src_bits, Bits) and not src_bits.signed and not t.signed \
                and src_bits.width <= t.width:
            return Val(t, json=as_data(v), ref=None)
        return self.fit(t, as_data(v))

    # ------------------------------------------------------------ helpers
    def fit(self, t, j):
        """Wrap a run-time result to its width: `& mask` (bit<W>) or two_comp_mod (int<W>)."""
        if isinstance(t, Bits) and t.signed:
            return data_expr(t, expr("two_comp_mod", j, hexstr(t.width)))
        if isinstance(t, Bits):
            return data_expr(t, expr("&", j, hexstr(mask_of(t.width), t.width)))
        return data_expr(t, j)

    def coerce(self, v, t):
        """`v` as a value of type `t`: an integer without a width takes it, a list's items
        one by one (that `v` converts is the checker's rule, check.convert)."""
        src = v.type
        if isinstance(src, TupleT) and isinstance(t, TupleT) and "items" in v.extra and \
                len(src.elems) == len(t.elems):
            items = [self.coerce(x, et) for x, et in zip(v.extra["items"], t.elems)]
            return Val(t, extra=dict(v.extra, items=items))
        if isinstance(src, IntT) and isinstance(t, Bits) and v.const is not None:
            return Val(t, const=wrap(v.const, t))
        if isinstance(src, IntT) and isinstance(t, EnumT) and t.base:
            return Val(t, const=v.const)
        return v


def _is_power_of_two(n):
    return n is not None and n > 0 and n & (n - 1) == 0
