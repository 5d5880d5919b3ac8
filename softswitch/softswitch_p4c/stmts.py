"""Statements inside actions (and synthetic actions), calls, and v1model externs.

Conditionals inside actions become `_jump_if_zero`/`_jump`; action and function
calls are inlined; extern calls become BMv2 primitives.
"""
from . import ast as A
from .ast import describe
from .check import min_args
from .errors import CompileError, unsupported
from .exprs import Ctx, StackLastRef
from .order import is_temporary
from .symbols import ActionSym, ExternFuncSym, FuncSym, Scope, TypeSym
from .unroll import NotUnrollable
from .types import (Bits, BoolT, EnumT, ExternT, IntT, StructT, TupleT,
                    TypeVar, VarbitT, VoidT, storage_width)
from .values import (DynHeaderRef, DynUnionRef, FieldRef, HeaderRef, StackRef, StructRef, UnionRef, Val,
                     as_bool, as_data, bool_expr, expr, field_val, hexstr, param, storage_of)

_V1_EXTERN_TYPES = {"register", "counter", "direct_counter", "meter", "direct_meter",
                    "packet_in", "packet_out"}


def source_info(loc):
    if loc is None:
        return None
    return {"filename": loc.file, "line": loc.line, "column": loc.col}


class StmtMixin:
    # ------------------------------------------------------------ primitives
    def emit(self, ctx, op, params, loc):
        if ctx.prims is None:
            raise CompileError(loc, "statements with side effects are not allowed here")
        if ctx.kind == "parser" and op == "assign" and params[1].get("type") == "stack_field":
            params = [params[0], self.last_field_expression(params[1])]
        prim = {"op": op, "parameters": [param(p) for p in params]}
        if loc is not None:
            prim["source_info"] = source_info(loc)
        if ctx.kind == "parser":
            if op == "assign":
                prim = {"op": "set", "parameters": prim["parameters"]}
            else:
                prim = {"op": "primitive", "parameters": [prim]}
        ctx.prims.append(prim)
        return prim

    def last_field_expression(self, stack_field):
        """`s.last.f` as an expression (access_field of s[last_stack_index(s)]): BMv2's
        parser `set` takes a field, constant, lookahead or expression, not a stack_field."""
        name, field = stack_field["value"]
        stack = next(s for s in self.header_stacks if s["name"] == name)
        fields = [f[0] for f in self.header_types[stack["header_type"]]["fields"]]
        ref = {"type": "header_stack", "value": name}
        last = expr("dereference_header_stack", ref, expr("last_stack_index", None, ref))
        return expr("access_field", last, fields.index(field))

    def patch_jump(self, prim, target):
        prim["parameters"][-1] = hexstr(target)

    # ------------------------------------------------------------ statements
    def lower_stmt(self, s, ctx):
        handler = getattr(self, "st_" + type(s).__name__, None)
        if handler is None:
            raise unsupported(s.loc, f"statement {type(s).__name__}")
        handler(s, ctx)

    def st_Block(self, s, ctx):
        inner = ctx.child(Scope(ctx.scope))
        for st in s.stmts:
            self.lower_stmt(st, inner)

    def st_Empty(self, s, ctx):
        pass

    def st_Assign(self, s, ctx):
        lhs = self.eval_value(s.lhs, ctx)
        self.check_lvalue(lhs, s.lhs)
        self.assign_from(lhs, s.rhs, ctx, s.loc)

    def assign_from(self, dest, e, ctx, loc):
        """`dest = e` with `dest` evaluated once, before `e`. `c ? a : b` on a header,
        struct or stack assigns only the side `c` chooses (BMv2's `?:` yields data only);
        a call may write its result in place."""
        if isinstance(e, A.Ternary) and not dest.type.is_scalar:
            return self.choose(e.cond, lambda c: self.assign_from(dest, e.then, c, loc),
                               lambda c: self.assign_from(dest, e.other, c, loc), ctx, loc)
        if isinstance(e, A.Call):
            produced = self.lower_call(e, ctx, dest=dest)
            if produced is None:
                return
            value = produced
        else:
            value = self.eval_value(e, ctx, dest.type)
        self.assign(ctx, dest, value, loc)

    def check_lvalue(self, v, e):
        """`v` is storage BMv2 can write (constants and read-only parameters: check.py)."""
        ok = (v.ref is not None and not isinstance(v.ref, StackLastRef)) or "slice" in v.extra \
            or v.extra.get("lvalue")
        if not ok:
            raise CompileError(e.loc, f"'{describe(e)}' is not assignable")
        if "slice" in v.extra:
            self.check_lvalue(v.extra["slice"][0], e)

    def st_VarDecl(self, s, ctx):
        t = self.resolve_type(s.type, ctx.scope)
        if s.is_const:
            v = self.eval_const_decl(A.ConstDecl(s.loc, s.annos, s.name, s.type, s.init), t,
                                     ctx.scope)
            ctx.scope.declare(s.name, v, s.loc)
            return
        var = self.declare_local(s, t, ctx)
        if s.init is not None:
            self.assign_from(var, s.init, ctx, s.init.loc)
        ctx.scope.declare(s.name, var, s.loc)

    def varbit_local(self, name, t):
        """BMv2 keeps variable-length data only in header fields: a `varbit<W>` local is
        the field of its own metadata header (type `varbit<W>_t`), assigned with assign_VL."""
        st = StructT("header", f"varbit{t.max_width}_t", [("field", t)])
        ref = self.add_header_instance(self.unique_instance_name(name), st, metadata=True)
        return field_val(t, ref.member("field"))

    def declare_local(self, s, t, ctx):
        """A local variable's storage (which types a variable may have: check.py); a
        temporary of desugar.split_conditions has the name its copy gave it (`steps`)."""
        if is_temporary(s.name) and not isinstance(t, VarbitT):
            return self.temporary("tmp", t)     # order.py's `tmp$N`: `tmp`, `tmp_0`, ...
        name = getattr(ctx.control, "temporaries", {}).get(s.name, s.name)
        if isinstance(t, VarbitT):
            return self.varbit_local(name, t)
        return self.layout(t, self.unique_instance_name(name), False, name)

    def st_If(self, s, ctx):
        other = None if s.other is None else lambda c: self.lower_stmt(s.other, c)
        self.choose(s.cond, lambda c: self.lower_stmt(s.then, c), other, ctx, s.loc)

    def choose(self, cond_e, then, other, ctx, loc):
        """Lower `then` or `other` (each given its own child context; `other` may be None)
        as condition `cond_e` decides: a compile-time one lowers one of them, a run-time one
        jumps around both (`_jump_if_zero`, `_jump`), as p4c writes an action's `if`."""
        cond = self.eval_value(cond_e, ctx)
        if cond.const is not None:
            branch = then if cond.const else other
            if branch is not None:
                branch(ctx.child(Scope(ctx.scope)))
            return
        if ctx.kind == "parser":
            raise unsupported(loc, "'if' statement in a parser state")
        jz = self.emit(ctx, "_jump_if_zero", [expr("b2d", None, as_bool(cond)), hexstr(0)], loc)
        then(ctx.child(Scope(ctx.scope)))
        if other is not None:
            j = self.emit(ctx, "_jump", [hexstr(0)], loc)
            self.patch_jump(jz, len(ctx.prims))
            other(ctx.child(Scope(ctx.scope)))
            self.patch_jump(j, len(ctx.prims))
        else:
            self.patch_jump(jz, len(ctx.prims))

    def st_For(self, s, ctx):
        try:
            blocks = self.unroller.unroll(s, ctx.scope)
        except NotUnrollable:
            if ctx.kind != "action" or isinstance(s, A.ForIn):
                raise
            return self.run_time_loop(s, ctx)
        for block in blocks:
            self.lower_stmt(block, ctx)

    st_ForIn = st_For

    def run_time_loop(self, s, ctx):
        """A loop whose bounds or exits depend on run-time values, inside an action: as
        p4c lowers it for BMv2, a `_jump_if_zero` on the condition at the top, the body
        (break: jump to the end, continue: to the updates), the updates, a jump back."""
        inner = ctx.child(Scope(ctx.scope))
        for st in s.init:
            self.lower_stmt(st, inner)
        top = len(ctx.prims)
        exits = []
        if s.cond is not None:
            cond = self.eval_value(s.cond, inner)
            exits.append(self.emit(inner, "_jump_if_zero",
                                   [expr("b2d", None, as_bool(cond)), hexstr(0)], s.cond.loc))
        body = inner.child(Scope(inner.scope))
        body.loop_jumps = (exits, [])
        self.lower_stmt(s.body, body)
        for j in body.loop_jumps[1]:
            self.patch_jump(j, len(ctx.prims))
        for u in s.updates:
            self.lower_stmt(u, inner)
        self.emit(inner, "_jump", [hexstr(top)], s.loc)
        for j in exits:
            self.patch_jump(j, len(ctx.prims))

    def st_Break(self, s, ctx):
        self.loop_jump(s, ctx, 0)

    def st_Continue(self, s, ctx):
        self.loop_jump(s, ctx, 1)

    def loop_jump(self, s, ctx, which):
        """`break` / `continue` in a loop lowered at run time (inside a loop: check.py)."""
        ctx.loop_jumps[which].append(self.emit(ctx, "_jump", [hexstr(0)], s.loc))

    def st_Return(self, s, ctx):
        if ctx.return_jumps is None:
            raise CompileError(s.loc, "'return' is not allowed here")
        if s.value is not None:                 # a function's (its value converts: check.py)
            value = self.eval_value(s.value, ctx, ctx.return_target.type)
            self.assign(ctx, ctx.return_target, value, s.value.loc)
            if ctx.return_values is not None:
                ctx.return_values.append(self.coerce_assign(value, ctx.return_target.type))
        ctx.return_jumps.append(self.emit(ctx, "_jump", [hexstr(0)], s.loc))

    def st_Exit(self, s, ctx):
        self.emit(ctx, "exit", [], s.loc)
        if ctx.return_jumps is not None:
            ctx.return_jumps.append(self.emit(ctx, "_jump", [hexstr(0)], s.loc))

    def st_SwitchChain(self, s, ctx):
        """`switch (value)` inside an action or function, as desugar.switches_as_ifs wrote
        it: its if/else-if chain (the value's type: check.py; a value with side effects
        order.py read once, before the chain)."""
        if ctx.kind == "parser":              # a function inlined into a parser state
            raise CompileError(s.loc, "'switch' statements are not allowed in a parser")
        self.lower_stmt(s.chain, ctx)

    def st_Switch(self, s, ctx):
        """A switch a parser state nests in a block (desugar.switches_as_ifs rewrote those of
        actions, functions and controls)."""
        raise CompileError(s.loc, "'switch' statements are not allowed in a parser")

    def st_InlinedBlock(self, s, ctx):
        """An application that is no step of a parser state (under an `if` whose condition
        is a compile-time constant): the instance is not a value there."""
        name = s.call.func.expr
        raise CompileError(name.loc, f"'{name.name}' cannot be used here")

    def st_CallStmt(self, s, ctx):
        self.lower_call(s.call, ctx, stmt=True)

    def st_Instance(self, s, ctx):
        raise CompileError(s.loc, "instances cannot be declared inside a block")

    # ------------------------------------------------------------ assignment
    def assign(self, ctx, lhs, rhs, loc):
        rhs = self.coerce_assign(rhs, lhs.type)
        if "slice" in lhs.extra:
            return self.assign_slice(ctx, lhs, rhs, loc)
        ref = lhs.ref
        if isinstance(ref, StructRef):
            return self.assign_struct(ctx, lhs, rhs, loc)
        if isinstance(ref, (HeaderRef, DynHeaderRef)):
            return self.assign_header(ctx, lhs, rhs, loc)
        if isinstance(ref, UnionRef):
            self.require_same_ref(rhs, UnionRef, loc)
            return self.emit(ctx, "assign_union", [ref.json(), rhs.ref.json()], loc)
        if isinstance(ref, StackRef):
            self.require_same_ref(rhs, StackRef, loc)
            return self.emit(ctx, "assign_header_stack", [ref.json(), rhs.ref.json()], loc)
        dst = ref.json() if ref is not None else lhs.json
        if isinstance(lhs.type, VarbitT):
            if not isinstance(rhs.ref, FieldRef):
                raise unsupported(loc, "assignment of this expression to a varbit field")
            return self.emit(ctx, "assign_VL", [dst, rhs.ref.json()], loc)
        return self.emit(ctx, "assign", [dst, as_data(rhs)], loc)

    def require_same_ref(self, rhs, cls, loc):
        if not isinstance(rhs.ref, cls):
            raise unsupported(loc, f"assignment of this expression to a {cls.__name__[:-3].lower()}")

    def coerce_assign(self, rhs, t):
        if isinstance(rhs.type, TupleT) and isinstance(t, (StructT,)):
            return rhs
        return self.coerce(rhs, t)

    def assign_slice(self, ctx, lhs, rhs, loc):
        base, hi, lo = lhs.extra["slice"]
        width = base.type.width
        slice_mask = ((1 << (hi - lo + 1)) - 1) << lo
        keep = expr("&", as_data(base), hexstr(((1 << width) - 1) ^ slice_mask, width))
        moved = expr("&", expr("<<", as_data(rhs), hexstr(lo)), hexstr(slice_mask, width))
        new = Val(base.type, json=expr("|", keep, moved))
        return self.assign(ctx, base, new, loc)

    def assign_struct(self, ctx, lhs, rhs, loc):
        members = lhs.ref.members
        if isinstance(rhs.type, TupleT) and "items" in rhs.extra:
            items = self.snapshot_items(ctx, rhs.extra["items"], lhs, loc)   # one per member
            for (name, dst), src in zip(members.items(), items):
                self.assign(ctx, dst, src, loc)
            return
        if not isinstance(rhs.ref, StructRef):
            raise unsupported(loc, f"assignment of this expression to {lhs.type}")
        for name, dst in members.items():
            self.assign(ctx, dst, rhs.ref.members[name], loc)

    def snapshot_items(self, ctx, items, lhs, loc):
        """`x = {..}` reads every item before writing: items that read the destination
        are copied to temporaries first (e.g. swapping two fields)."""
        if isinstance(lhs.ref, StructRef):
            written = {f for v in self.flatten(lhs, A.Call(loc, None, [], []))
                       for f in storage_of(v)}
            aliases = lambda reads: bool(reads & written)  # noqa: E731
        elif isinstance(lhs.ref, HeaderRef):
            aliases = lambda reads: any(r[0] == lhs.ref.name for r in reads)  # noqa: E731
        else:
            aliases = lambda reads: bool(reads)  # noqa: E731
        out = []
        for v in items:
            reads = storage_of(v) if v.const is None and v.type.is_scalar else set()
            hit = aliases(reads)
            if hit:
                tmp = self.new_scalar(self.unique_name("tmp"), v.type)
                self.assign(ctx, tmp, v, loc)
                v = tmp
            out.append(v)
        return out

    def assign_header(self, ctx, lhs, rhs, loc):
        if isinstance(rhs.type, TupleT):
            self.emit(ctx, "add_header", [lhs.ref.json()], loc)
            names = [n for n, _ in lhs.type.fields]
            items = self.snapshot_items(ctx, rhs.extra["items"], lhs, loc)   # one per field
            for n, src in zip(names, items):
                self.assign(ctx, self.header_member(lhs, A.Member(loc, None, n)), src, loc)
            return
        if not isinstance(rhs.ref, (HeaderRef, DynHeaderRef)):
            raise unsupported(loc, f"assignment of this expression to {lhs.type}")
        self.emit(ctx, "assign_header", [lhs.ref.json(), rhs.ref.json()], loc)

    # ------------------------------------------------------------ calls
    def lower_call(self, call, ctx, dest=None, stmt=False):
        """Lower a call; returns a Val for value-returning calls not written into `dest`."""
        f = self.eval_expr(call.func, ctx)
        x = f.extra
        if "callable" in x:
            sym = x["callable"]
            if isinstance(sym, ActionSym):
                self.check_no_dest(dest, call, "an action")
                return self.inline_action(sym, call, ctx)
            if isinstance(sym, FuncSym):
                return self.inline_function(sym, call, ctx, dest)
            if isinstance(sym, ExternFuncSym):
                return self.extern_function(sym, call, ctx, dest)
        if "method" in x:
            return self.method_call(f, call, ctx, dest, stmt)
        raise CompileError(call.loc, f"'{describe(call.func)}' is not callable")

    def check_no_dest(self, dest, call, what):
        if dest is not None:
            raise CompileError(call.loc, f"{what} does not return a value")

    def ev_Call(self, e, ctx, expected):
        f = self.eval_expr(e.func, ctx)
        x = f.extra
        if "method" in x and x["method"] in ("isValid",):
            return self.is_valid(x["obj"], e)
        if "method" in x and "table" in x["obj"].extra and x["method"] == "apply":
            return Val(None, extra={"apply_result": x["obj"].extra["table"], "loc": e.loc})
        if "method" in x and x["method"] in ("minSizeInBits", "minSizeInBytes"):
            return Val(IntT(), const=self.const_value(e, ctx.scope))      # the checker's
        if "method" in x and x["method"] == "lookahead":
            return self.lookahead_value(e, ctx)
        sym = x.get("callable")
        if isinstance(sym, ExternFuncSym) and sym.name == "static_assert":
            return self.extern_function(sym, e, ctx, None)
        if ctx.prims is None:
            raise CompileError(e.loc, f"call to '{describe(e.func)}' is not allowed in "
                                      f"this expression")
        raise unsupported(e.loc, f"a call to '{describe(e.func)}' inside this expression")

    def st_Temp(self, s, ctx):
        """A temporary of order.py: the result of the call it hoisted (the callee's own
        temporary, or its constant), or an operand read before a later call whose type
        the checker did not keep (copied, unless a constant)."""
        if isinstance(s.value, A.Call):
            v = self.lower_call(s.value, ctx)
            if v is None:
                raise CompileError(s.value.loc, f"'{describe(s.value.func)}' does not return "
                                                f"a value")
        else:
            v = self.eval_value(s.value, ctx)
            if v.const is None and not isinstance(v.type, IntT):
                tmp = self.temporary("tmp", v.type)
                self.assign(ctx, tmp, v, s.value.loc)
                v = tmp
        ctx.scope.declare(s.name, v, s.loc)

    def is_valid(self, obj, e):
        ref = obj.ref
        if isinstance(ref, HeaderRef):
            return bool_expr(expr("d2b", None, {"type": "field", "value": [ref.name, "$valid$"]}))
        if isinstance(ref, (UnionRef, DynUnionRef)):
            return bool_expr(expr("valid_union", None, ref.json()))
        if isinstance(ref, DynHeaderRef):
            return bool_expr(expr("valid", None, ref.json()))
        raise unsupported(e.loc, "isValid() on this expression")

    def bind_args(self, call, params, name, ctx, type_env=None):
        """Evaluate call arguments against `params` (their count is the checker's);
        returns {param name: Val}."""
        if any(isinstance(a, A.NamedArg) for a in call.args):
            by_name = {a.name: a.value for a in call.args if isinstance(a, A.NamedArg)}
            exprs = [by_name.get(p.name, p.default) for p in params]
        else:
            exprs = list(call.args) + [p.default for p in params[len(call.args):]]
        bound = {}
        for p, e in zip(params, exprs):
            pt = self.resolve_type(p.type, ctx.scope, type_env or {})
            v = self.eval_value(e, ctx, pt)
            if p.direction in ("out", "inout") and not isinstance(v.type, type(None)) and \
                    "dontcare" not in v.extra:
                self.check_lvalue(v, e)
            bound[p.name] = self.coerce(v, pt)
        return bound

    def lists_as_struct_values(self, bound, params, ctx, loc, param_scope=None):
        """A list expression passed to a struct or header parameter of a function or action
        (`f({{...}})`) becomes a temporary of that type, which the body reads as a value
        (extern calls keep the list: digest and hash read its fields)."""
        for p in params:
            pt = self.resolve_type(p.type, param_scope or ctx.scope)
            if "items" in bound[p.name].extra and isinstance(pt, StructT):
                tmp = self.temporary(p.name, pt)
                self.assign(ctx, tmp, bound[p.name], loc)
                bound[p.name] = tmp
        return bound

    # ------------------------------------------------------------ inlining
    def inline_action(self, sym, call, ctx):
        """The call's copy of the action (inline.py), its parameters bound."""
        d, body = sym.decl, call.inlined.decl.body
        bound = self.lists_as_struct_values(self.bind_args(call, d.params, d.name, ctx),
                                            d.params, ctx, call.loc)
        scope, copy_out = self.callee_scope(sym.scope, d, bound, ctx, call.inlined.copies)
        self.inline_body(body, ctx, scope, None)
        self.copy_out(ctx, copy_out)
        return None

    def callee_scope(self, parent, d, bound, ctx, copies):
        """The callee's scope with its parameters bound, copying in those given a
        temporary (`copies`: the call's A.Inlined.copies, copies.py's decision); returns
        it and the (argument, temporary) pairs to copy out."""
        scope = Scope(parent)
        copy_out = self.bind_callee_params(d.params, bound, copies, scope,
                                    lambda tmp, arg, loc: self.assign(ctx, tmp, arg, loc))
        return scope, copy_out

    def bind_callee_params(self, params, bound, copies, scope, copy_in):
        """Copy-in/copy-out (P4-16 6.8), the one place it is done for every kind of
        inlined call: a parameter named in `copies` (copies.py's decision; None: none was
        made, every parameter) gets a temporary (`copy_in(tmp, arg, loc)` is called for
        in/inout/directionless ones), the others are bound to the argument itself; a
        constant needs none. In and directionless parameters are read-only. Returns the
        (argument, temporary, loc) triples to copy back after the body."""
        copy_out = []
        for p in params:
            v = bound[p.name]
            if (copies is None or p.name in copies) and v.const is None:
                tmp = self.temporary(p.name, v.type)
                if p.direction != "out":
                    copy_in(tmp, v, p.loc)
                if p.direction in ("out", "inout"):
                    copy_out.append((v, tmp, p.loc))
                v = tmp
            scope.declare(p.name, v, p.loc)      # writes to in/directionless ones: check.py
        return copy_out

    def temporary(self, hint, t):
        if t.is_scalar and not isinstance(t, IntT):
            return self.new_scalar(self.unique_name(hint), t)
        return self.layout(t, self.unique_name(f"{hint}_copy"), False, self.unique_name(hint))

    def copy_out(self, ctx, pairs):
        for arg, tmp, loc in pairs:
            self.assign(ctx, arg, tmp, loc)

    def inline_body(self, body, ctx, scope, return_target):
        """Inline `body`; returns the values its `return` statements gave."""
        inner = Ctx(scope, ctx.prims, ctx.kind, ctx.control)
        inner.return_jumps, inner.return_target, inner.return_values = [], return_target, []
        for st in body.stmts:
            self.lower_stmt(st, inner)
        jumps = inner.return_jumps
        if jumps and jumps[-1] is ctx.prims[-1] and isinstance(body.stmts[-1], A.Return):
            ctx.prims.pop()                 # the body's last statement: it falls through
            jumps = jumps[:-1]
        for j in jumps:
            if ctx.kind == "parser":        # a parser state has no jumps
                raise unsupported(body.loc, "'return' before the end of a function called in "
                                            "a parser state")
            self.patch_jump(j, len(ctx.prims))
        return inner.return_values

    def inline_function(self, sym, call, ctx, dest):
        """The call's copy of the function (inline.py), its parameters bound; its value
        is a temporary its `return`s write."""
        d, body = sym.decl, call.inlined.decl.body
        if ctx.prims is None:
            raise CompileError(call.loc, f"call to function '{d.name}' is not allowed here")
        env = self.call_type_env(d, call, ctx) if d.type_params else None
        bound = self.bind_args(call, d.params, d.name, ctx, env)
        parent = self.generic_scope(d, env, bound, sym.scope, call) if env else sym.scope
        bound = self.lists_as_struct_values(bound, d.params, ctx, call.loc, parent)
        scope, copy_out = self.callee_scope(parent, d, bound, ctx, call.inlined.copies)
        ret_t = self.resolve_type(d.ret, parent)
        target = None
        if not isinstance(ret_t, VoidT):
            target = self.temporary(f"{d.name}_retval", ret_t)
        returned = self.inline_body(body, ctx, scope, target)
        self.copy_out(ctx, copy_out)
        if (len(returned) == 1 and returned[0].const is not None and body.stmts and
                isinstance(body.stmts[-1], A.Return)):
            # its only return ends the body and gives a constant: the call's value is that
            # constant (as p4c propagates it), e.g. a divisor known at compile time
            return Val(target.type, const=returned[0].const)
        return target

    def generic_scope(self, d, env, bound, parent, call):
        """A generic function's scope for one call (P4-16 10.2): its type parameters are the
        call's type arguments, or the types of the arguments of parameters declared with
        them (`T pick<T>(in T a, ...)`), as p4c specializes it."""
        for p in d.params:
            name = p.type.name if isinstance(p.type, A.TypeRef) else None
            if name in env and isinstance(env[name], TypeVar):
                env[name] = bound[p.name].type
        scope = Scope(parent)
        for tp in d.type_params:
            if isinstance(env[tp], (TypeVar, IntT)) or env[tp] is None:
                raise CompileError(call.loc, f"cannot infer type parameter '{tp}' of '{d.name}': "
                                             f"give it as {d.name}<...>(...)")
            scope.declare(tp, TypeSym(env[tp]), d.loc)
        return scope

    # ------------------------------------------------------------ extern functions
    def extern_function(self, sym, call, ctx, dest):
        method = self.pick_overload(sym.overloads, call)
        if sym.name == "static_assert":         # decided by the checker
            return Val(BoolT(), const=self.const_value(call, ctx.scope))
        handler = getattr(self, "fn_" + sym.name, None)
        if handler is None:
            raise unsupported(call.loc, f"extern function '{sym.name}'")
        if ctx.prims is None:
            raise CompileError(call.loc, f"call to '{sym.name}' is not allowed here")
        type_env = self.call_type_env(method, call, ctx)
        args = self.bind_args(call, method.params, sym.name, ctx, type_env)
        return handler(call, args, ctx, dest)

    def pick_overload(self, overloads, call):
        """The overload the checker selected for `call` (the first that fits its arity)."""
        n = len(call.args)
        return next(m for m in overloads if min_args(m) <= n <= len(m.params))

    def call_type_env(self, method, call, ctx, base_env=None):
        env = dict(base_env or {})
        for i, tp in enumerate(method.type_params):
            if i < len(call.type_args):
                env[tp] = self.resolve_type(call.type_args[i], ctx.scope)
            else:
                env[tp] = TypeVar(tp)
        return env

    def fn_mark_to_drop(self, call, args, ctx, dest):
        """`mark_to_drop(sm)`, or the deprecated `mark_to_drop()`: the same primitive on
        the one standard_metadata instance."""
        sm = args["standard_metadata"].ref if args else HeaderRef("standard_metadata", None)
        self.emit(ctx, "mark_to_drop", [sm.json()], call.loc)

    def fn_random(self, call, args, ctx, dest):
        r, lo, hi = args["result"], args["lo"], args["hi"]
        t = r.type
        lo, hi = self.coerce(lo, t), self.coerce(hi, t)
        self.emit(ctx, "modify_field_rng_uniform", [self.dst_json(r), as_data(lo), as_data(hi)],
                  call.loc)

    def dst_json(self, v):
        return v.ref.json() if v.ref is not None else v.json

    def fn_hash(self, call, args, ctx, dest):
        algo = self.hash_algo(args["algo"], call)
        calc = self.add_calculation(algo, self.data_inputs(args["data"], call, ctx), call.loc)
        self.emit(ctx, "modify_field_with_hash_based_offset",
                  [self.dst_json(args["result"]), as_data(args["base"]),
                   {"type": "calculation", "value": calc}, as_data(args["max"])], call.loc)

    def hash_algo(self, v, call):
        if not (isinstance(v.type, EnumT) and v.type.name == "HashAlgorithm") or v.const is None:
            raise CompileError(call.loc, "hash algorithm must be a HashAlgorithm constant")
        return v.extra.get("enum_member") or [k for k, x in v.type.members.items()
                                              if x == v.const][0]

    def data_inputs(self, data, call, ctx, allow_temps=True):
        """Flatten a list/struct/header argument into BMv2 calculation inputs."""
        out = []
        for v in self.flatten(data, call):
            if isinstance(v.ref, FieldRef):
                out.append(v.ref.json())
            elif isinstance(v.type, VarbitT):
                raise unsupported(call.loc, "a varbit value in a field list")
            elif v.const is not None:
                w = storage_width(v.type) if not isinstance(v.type, IntT) else None
                if w is None:
                    raise CompileError(call.loc, "constants in a field list need a width")
                out.append(dict(hexstr(v.const, w), bitwidth=w))
            elif isinstance(v.ref, HeaderRef):
                out.append(v.ref.json())
            elif allow_temps:
                tmp = self.new_scalar(self.unique_name("tmp"), v.type)
                self.assign(ctx, tmp, v, call.loc)
                out.append(tmp.ref.json())
            else:
                raise unsupported(call.loc, "expression in a checksum field list")
        return out

    def flatten(self, v, call):
        if isinstance(v.type, TupleT) and "items" in v.extra:
            out = []
            for item in v.extra["items"]:
                out += self.flatten(item, call)
            return out
        if isinstance(v.ref, StructRef):
            out = []
            for m in v.ref.members.values():
                out += self.flatten(m, call)
            return out
        if isinstance(v.ref, HeaderRef):
            return [v]
        if v.type is not None and (v.type.is_scalar or isinstance(v.type, VarbitT)):
            return [v]
        raise unsupported(call.loc, f"a value of type {v.type} in a field list")

    def add_calculation(self, algo, inputs, loc):
        name = self.unique_name("calc")
        self.json["calculations"].append({"name": name, "id": len(self.json["calculations"]),
                                          "source_info": source_info(loc), "algo": algo,
                                          "input": inputs})
        return name

    def fn_digest(self, call, args, ctx, dest):
        data = args["data"]
        t = data.type
        type_arg = self.resolve_type(call.type_args[0], ctx.scope) if call.type_args else t
        name = type_arg.name if isinstance(type_arg, StructT) else self.unique_name("digest")
        fields = self.flatten(data, call)
        elements = self.data_inputs(data, call, ctx)
        list_id = self.learn_list(name, elements, fields, type_arg, call.loc)
        self.emit(ctx, "generate_digest", [as_data(args["receiver"]), hexstr(list_id)], call.loc)

    def learn_list(self, name, elements, fields, t, loc):
        for ll in self.json["learn_lists"]:
            if ll["name"] == name and ll["elements"] == elements:
                return ll["id"]
        if any(ll["name"] == name for ll in self.json["learn_lists"]):
            name = self.unique_name(name)
        list_id = len(self.json["learn_lists"]) + 1
        self.json["learn_lists"].append({"id": list_id, "name": name, "source_info":
                                         source_info(loc), "elements": elements})
        names = [n for n, _ in t.fields] if isinstance(t, StructT) else \
            [f"f{i}" for i in range(len(fields))]
        widths = [storage_width(f.type) for f in fields]
        self.digests.append((name, list(zip(names, widths)), list_id, t))
        return list_id

    def clone_kind(self, v, call):
        if not (isinstance(v.type, EnumT) and v.type.name == "CloneType") or v.const is None:
            raise CompileError(call.loc, "clone type must be CloneType.I2E or CloneType.E2E")
        return "clone_ingress_pkt_to_egress" if v.const == 0 else "clone_egress_pkt_to_egress"

    def fn_clone(self, call, args, ctx, dest):
        op = self.clone_kind(args["type"], call)
        self.emit(ctx, op, [as_data(args["session"]), hexstr(0)], call.loc)

    def fn_clone3(self, call, args, ctx, dest):
        op = self.clone_kind(args["type"], call)
        fl = self.field_list_from_data(args["data"], call, ctx)
        self.emit(ctx, op, [as_data(args["session"]), hexstr(fl)], call.loc)

    def fn_clone_preserving_field_list(self, call, args, ctx, dest):
        op = self.clone_kind(args["type"], call)
        fl = self.field_list_by_index(args["index"], call)
        self.emit(ctx, op, [as_data(args["session"]), hexstr(fl)], call.loc)

    def fn_resubmit_preserving_field_list(self, call, args, ctx, dest):
        self.emit(ctx, "resubmit", [hexstr(self.field_list_by_index(args["index"], call))],
                  call.loc)

    def fn_recirculate_preserving_field_list(self, call, args, ctx, dest):
        self.emit(ctx, "recirculate", [hexstr(self.field_list_by_index(args["index"], call))],
                  call.loc)

    def fn_resubmit(self, call, args, ctx, dest):
        self.emit(ctx, "resubmit", [hexstr(self.field_list_from_data(args["data"], call, ctx))],
                  call.loc)

    def fn_recirculate(self, call, args, ctx, dest):
        self.emit(ctx, "recirculate",
                  [hexstr(self.field_list_from_data(args["data"], call, ctx))], call.loc)

    def field_list_from_data(self, data, call, ctx):
        elements = self.data_inputs(data, call, ctx, allow_temps=False)
        return self.add_field_list(self.unique_name("fl"), elements, call.loc)

    def add_field_list(self, name, elements, loc):
        for fl in self.json["field_lists"]:
            if fl["elements"] == elements:
                return fl["id"]
        fl_id = len(self.json["field_lists"]) + 1
        self.json["field_lists"].append({"id": fl_id, "name": name, "source_info":
                                         source_info(loc), "elements": elements})
        return fl_id

    def field_list_by_index(self, v, call):
        """Fields of the user metadata annotated @field_list(index)."""
        if v.const is None:
            raise CompileError(call.loc, "field list index must be a constant")
        index = int(v.const)
        elements = []
        for val, annos in self.metadata_fields_with_annos():
            a = A.find_annotation(annos, "field_list")
            if a and index in [self.annotation_int(x) for x in a.args]:
                elements.append(val.ref.json())
        return self.add_field_list(f"field_list{index}", elements, call.loc)

    def annotation_int(self, x):
        """An annotation argument as an integer: a literal or a named constant."""
        if isinstance(x, A.IntLit):
            return x.value
        if isinstance(x, A.Name):
            v = self.globals.lookup(x.name)
            if isinstance(v, Val) and v.const is not None:
                return int(v.const)
            raise CompileError(x.loc, f"annotation argument '{x.name}' is not a constant")
        return None

    def metadata_fields_with_annos(self, val=None):
        val = val or self.user_meta
        out = []
        for fname, ft in val.type.fields:
            m = val.ref.members[fname]
            if isinstance(m.ref, StructRef):
                out += self.metadata_fields_with_annos(m)
            elif isinstance(m.ref, FieldRef):
                out.append((m, val.type.field_annos.get(fname, [])))
        return out

    def fn_truncate(self, call, args, ctx, dest):
        self.emit(ctx, "truncate", [as_data(args["length"])], call.loc)

    def fn_assert(self, call, args, ctx, dest):
        self.emit(ctx, "assert", [as_bool(args["check"])], call.loc)     # a bool: check.py

    def fn_assume(self, call, args, ctx, dest):
        self.emit(ctx, "assume", [as_bool(args["check"])], call.loc)

    def fn_log_msg(self, call, args, ctx, dest):
        items = []
        if "data" in args:
            items = [as_data(v) for v in self.flatten(args["data"], call)]
        self.emit(ctx, "log_msg", [args["msg"].json, {"type": "parameters_vector",
                                                      "value": items}], call.loc)

    def fn_verify(self, call, args, ctx, dest):
        if ctx.kind != "parser":
            raise CompileError(call.loc, "verify() may only be called in a parser")
        check = args["check"]
        err = args["toSignal"]
        ctx.prims.append({"op": "verify", "parameters": [as_bool(check), as_data(err)]})

    def checksum_outside(self, call, args, ctx, dest):
        raise unsupported(call.loc, "checksum functions outside the VerifyChecksum/"
                                    "ComputeChecksum controls")

    fn_verify_checksum = fn_update_checksum = checksum_outside
    fn_verify_checksum_with_payload = fn_update_checksum_with_payload = checksum_outside

    # ------------------------------------------------------------ methods
    def method_call(self, f, call, ctx, dest, stmt=False):
        name, obj = f.extra["method"], f.extra["obj"]
        if name == "isValid":
            return self.is_valid(obj, call)
        if name in ("setValid", "setInvalid"):
            self.check_lvalue(obj, call.func)
            op = "add_header" if name == "setValid" else "remove_header"
            self.emit(ctx, op, [obj.ref.json()], call.loc)
            return None
        if name in ("push_front", "pop_front"):
            n = self.bind_args(call, [A.Param(call.loc, [], "in", A.TypeRef(call.loc, "int"),
                                              "count")], name, ctx)["count"]
            if n.const is None:
                raise CompileError(call.loc, f"{name} needs a constant count")
            self.emit(ctx, "push" if name == "push_front" else "pop",
                      [obj.ref.json(), hexstr(int(n.const))], call.loc)
            return None
        if "table" in obj.extra:
            raise CompileError(call.loc, "tables can only be applied in a control's apply block")
        if "extern" in obj.extra:
            return self.extern_method(obj.extra["extern"], name, call, ctx, dest, stmt)
        if isinstance(obj.type, ExternT):
            return self.packet_method(obj, name, call, ctx, dest, stmt)
        raise CompileError(call.loc, f"unknown method '{name}'")

    def find_methods(self, et, name, call):
        ms = [m for m in et.decl.methods if m.name == name and m.ret is not None]
        if not ms:
            raise CompileError(getattr(call.func, "name_loc", call.loc),
                               f"extern {et.name} has no method '{name}'")
        return ms

    def extern_method(self, inst, name, call, ctx, dest, stmt=False):
        et = inst.type
        method = self.pick_overload(self.find_methods(et, name, call), call)
        if stmt and A.find_annotation(method.annos, "noSideEffects"):
            raise CompileError(call.loc, f"wrong number of arguments to '{name}' in a call "
                                         f"statement: this form only returns a value, which "
                                         f"would be discarded")
        env = self.call_type_env(method, call, ctx, self.extern_env(et))
        args = self.bind_args(call, method.params, name, ctx, env)
        handler = getattr(self, f"m_{et.name}_{name}", None)
        if handler is None:
            raise unsupported(call.loc, f"method {et.name}.{name}")
        if ctx.prims is None:
            raise CompileError(call.loc, f"call to '{name}' is not allowed here")
        return handler(inst, call, args, ctx, dest)

    def extern_env(self, et):
        return {p: a for p, a in zip(et.decl.type_params, et.type_args)}

    def m_register_read(self, inst, call, args, ctx, dest):
        reg = {"type": "register_array", "value": inst.name}
        if "result" in args:
            self.emit(ctx, "register_read", [self.dst_json(args["result"]), reg,
                                             as_data(args["index"])], call.loc)
            return None
        target = dest
        if target is None or "slice" in target.extra:
            target = self.new_scalar(self.unique_name("tmp"), inst.info["value_type"])
        self.emit(ctx, "register_read", [self.dst_json(target), reg, as_data(args["index"])],
                  call.loc)
        return None if target is dest else target

    def m_register_write(self, inst, call, args, ctx, dest):
        self.emit(ctx, "register_write", [{"type": "register_array", "value": inst.name},
                                          as_data(args["index"]), as_data(args["value"])],
                  call.loc)

    def m_counter_count(self, inst, call, args, ctx, dest):
        self.emit(ctx, "count", [{"type": "counter_array", "value": inst.name},
                                 as_data(args["index"])], call.loc)

    def m_direct_counter_count(self, inst, call, args, ctx, dest):
        inst.info.setdefault("used_in", set()).add(id(ctx.prims))

    def m_meter_execute_meter(self, inst, call, args, ctx, dest):
        self.emit(ctx, "execute_meter", [{"type": "meter_array", "value": inst.name},
                                         as_data(args["index"]), self.dst_json(args["result"])],
                  call.loc)

    def m_direct_meter_read(self, inst, call, args, ctx, dest):
        target = args["result"]
        if not isinstance(target.ref, FieldRef):
            raise unsupported(call.loc, "direct_meter.read() into a non-field")
        previous = inst.info.get("result_target")
        if previous is not None and previous != target.ref.json()["value"]:
            raise unsupported(call.loc, "direct_meter read into different fields")
        inst.info["result_target"] = target.ref.json()["value"]

    # ------------------------------------------------------------ extern instances
    def make_extern_instance(self, d, t, scope, control):
        if t.name not in _V1_EXTERN_TYPES and t.name not in ("action_profile", "action_selector"):
            raise unsupported(d.type.loc, f"instance of extern '{t.name}' (only v1model "
                                          f"externs are implemented)")
        ctors = [m for m in t.decl.methods if m.ret is None]
        call = A.Call(d.loc, A.Name(d.loc, t.name), [], d.args)
        ctor = self.pick_overload(ctors, call)
        args = self.bind_args(call, ctor.params, t.name, Ctx(scope), self.extern_env(t))
        name = self.qualified(d.annos, d.name, control)
        inst = type(self).make_instance_obj(name, t, list(args.values()), d)
        getattr(self, f"inst_{t.name}", lambda i: None)(inst)
        self.instances.append(inst)
        return inst

    @staticmethod
    def make_instance_obj(name, t, args, d):
        from .symbols import ExternInstance
        return ExternInstance(name, t, args, d.loc, d.annos)

    def inst_register(self, inst):
        vt = inst.type.type_args[0] if inst.type.type_args else None
        if not isinstance(vt, (Bits,)) and not (isinstance(vt, BoolT)):
            raise CompileError(inst.loc, "register element type must be bit<W> or int<W>")
        inst.info["value_type"] = vt
        inst.info["size"] = int(inst.args[0].const)
        self.json["register_arrays"].append({
            "name": inst.name, "id": len(self.json["register_arrays"]),
            "source_info": source_info(inst.loc), "size": inst.info["size"],
            "bitwidth": storage_width(vt)})

    def inst_action_profile(self, inst):
        inst.info.update(size=int(inst.args[0].const), tables=[])

    def inst_action_selector(self, inst):
        algo = inst.args[0].extra.get("enum_member")
        if algo is None:
            raise CompileError(inst.loc, "action_selector algorithm must be a HashAlgorithm "
                                         "constant")
        inst.info.update(size=int(inst.args[1].const), tables=[], algo=algo)

    def counter_unit(self, v):
        return v.extra.get("enum_member") or "packets_and_bytes"

    def inst_counter(self, inst):
        inst.info["size"] = int(inst.args[0].const)
        inst.info["unit"] = self.counter_unit(inst.args[1])
        self.json["counter_arrays"].append({
            "name": inst.name, "id": len(self.json["counter_arrays"]),
            "source_info": source_info(inst.loc), "size": inst.info["size"],
            "is_direct": False})

    def inst_direct_counter(self, inst):
        inst.info["unit"] = self.counter_unit(inst.args[0])

    def inst_meter(self, inst):
        inst.info["size"] = int(inst.args[0].const)
        inst.info["unit"] = self.counter_unit(inst.args[1])
        self.json["meter_arrays"].append({
            "name": inst.name, "id": len(self.json["meter_arrays"]),
            "source_info": source_info(inst.loc), "is_direct": False,
            "size": inst.info["size"], "rate_count": 2, "type": inst.info["unit"]})

    def inst_direct_meter(self, inst):
        inst.info["unit"] = self.counter_unit(inst.args[0])
