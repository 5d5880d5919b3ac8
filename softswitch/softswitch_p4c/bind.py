"""Constant bindings per copy: each sub-block copy inline.py made has its constructor
arguments bound as constants, each call's copy its constant arguments, and the loops
they decide are unrolled in the copy; and copy-in/copy-out decided for each (copies.py).

Once over the program, after inlining and before lowering (README.md, "Architecture:
phases"). Starting from the parser and pipelines V1Switch runs, each block is checked again
(`check.BlockChecker`, nothing recorded) with its constructor parameters bound to the
values of the instance's arguments, folded where that instance is declared (the
enclosing block's own constructor arguments bound in turn, `C2(n) c2;` inside `C1(bit<8>
n)`); the loops whose iterations that check decides (`BlockChecker.unroll`, as for the
program's blocks, with the same rules) are put in the copy (`unroll.replace_loops`), so
the emitter lowers their iterations instead of unrolling them as it reaches them. The
checker's scopes are the copy's, so a local that shadows a constructor parameter is the
local. A copy whose check fails (an error only these constants reveal: a division by
zero, an index out of bounds) is left as it is: the emitter reports the error where it
reaches it, in the order it reports errors.

Then each call of an action or function in those blocks and the top-level actions
(and in the copies of the callees in turn) whose copy (`A.Call.inlined`) is reached
once has its copy checked again the same way, its `in` and directionless parameters bound to the call's arguments
that are settled compile-time values there (`ir.settled`; a constant argument is bound
by the emitter as that constant: it has no storage, so copy-in/copy-out never gives it
a temporary), and the loops that decides unrolled in the copy. Each iteration of a
loop unrolled (by the checker before inlining, or here) has its own copy of the loop's
body, here with copies of the inlined copies in it (`unroll.separate_iterations`), and
a block or callee is checked again until no loop is left to decide, so a loop nested in
an unrolled one, and a call or application in it, are bound per iteration. A call
reached more than once walking a block (in a switch's expression, which each label's
test reads) is left to the emitter; so is a generic function's (both are checked here
only for copies.py).

The walk also carries copies.py's frames (each parameter bound without a copy -> the
paths of its argument) and makes its decisions: for each application of a sub-block
(its arguments against each other), each table-bound action (`actions = { a(x); }`)
and each call's copy (checked as above, its IR body giving what it reaches). A decision
that cannot be made (a copy whose check fails) gives every parameter a temporary.
"""
from collections import Counter
from dataclasses import fields, is_dataclass

from . import ast as A
from . import copies, ir
from .check import BlockChecker, check_functions, convert
from .errors import CompileError
from .inline import applying_blocks, block_body
from .types import BlockT
from .unroll import replace_loops, separate_iterations


def bind_program(comp, program):
    """Unrolls, in every copy under V1Switch's parser, ingress and egress and in the
    top-level actions' calls, the loops its constant bindings decide."""
    binder = Binder(comp, check_functions(comp, program, {}))
    for decl in applying_blocks(comp.globals):
        binder.block(decl, {})
    for d in program.decls:             # a table's action lowers the declared one
        if isinstance(d, A.ActionDecl):
            binder.body(d, {}, BlockChecker(comp, None, {}, binder.top), (None, set()))


class Binder:
    def __init__(self, comp, top):
        self.comp = comp
        self.top = top                  # the top level's actions and functions, checked
        self.arguments = {}             # id(A.Instance) -> its constructor parameters' values

    def block(self, decl, values, frame=None, bound=None):
        """Check control or parser `decl` (a copy, or one V1Switch runs) with its
        constructor parameters bound to `values`, unrolling the loops that decides in it
        (checked again, the iterations' loops too, until none is left to decide; a
        parser's states have none); then bind its calls and its applications' copies.
        `frame` and `bound` (its parameters' paths, by name) are copies.py's."""
        while True:
            checker = BlockChecker(self.comp, decl, {}, self.top)
            checker.ctor_values, checker.unrolled, checker.nodes = values, {}, {}
            try:
                checked = checker.block()
            except CompileError:
                return                  # the emitter reports it where it reaches it
            if not self.unroll(decl, checker.unrolled):
                break
        frame = dict(frame or {})
        frame.update({v: bound[v.name] for v in checked.params
                      if bound is not None and v.name in bound})
        for inst in checked.locals:
            if isinstance(inst, ir.Instance) and isinstance(inst.type, BlockT):
                self.arguments[id(inst.ast)] = self.constructor_values(inst)
        self.table_bindings(checked, frame)
        local = (checker, {d.name for d in decl.locals if isinstance(d, A.ActionDecl)})
        body = block_body(decl)
        for call, once in inlined_calls([decl.locals, getattr(decl, "inits", []), body]):
            self.call(call, checker.nodes, local, frame, once)
        for app in applications(body):
            copy = app.inlined
            params = copy.decl.params
            args = self.call_node(app.call, checker.nodes)
            sub = None if args is None else copies.bound_paths(params, app.call.args, args, frame)
            copy.copies = decide(params, sub, (set(), set()))
            self.block(copy.decl, self.arguments.get(id(copy.instance), {}), frame,
                       sub and {n: paths for n, paths in sub.items() if n not in copy.copies})

    def table_bindings(self, checked, frame):
        """The directional parameters an actions list binds (`a(x)`): which need a
        temporary (A.ActionRef.copies), and, in the frame of the action's body, the paths
        of the arguments bound without one (of every table that binds it)."""
        for table in checked.locals:
            if not isinstance(table, ir.Table):
                continue
            refs = next((p.value for p in table.ast.properties if p.name == "actions"), [])
            for ref, call in zip(refs, table.actions):
                action = call.callee
                if not ref.args or not isinstance(action, ir.Action):
                    continue
                params = [p for p in action.ast.params if p.direction]
                sub = copies.bound_paths(params, ref.args, call.args, frame)
                ref.copies = decide(params, sub, copies.body_effects(action, frame))
                for v in action.params:
                    if v.name in sub and v.name not in ref.copies:
                        frame[v] = frame.get(v, frozenset()) | sub[v.name]

    @staticmethod
    def call_node(call, nodes):
        """The IR arguments of AST call `call` as checked (`nodes`), or None."""
        hit = nodes.get(id(call))
        if hit is None or hit[0] is not call or not isinstance(hit[1], ir.Call):
            return None
        return hit[1].args

    def call(self, call, nodes, local, frame, once=True):
        """Check `call`'s copy of its callee with its constant arguments (their nodes in
        `nodes`) bound, unrolling the loops that decides in it as `control` does; then
        bind its own calls. `local`: the checker of the control whose actions the call
        may name (its scopes the action's body sees) and their names. A call reached more
        than once (`once` False: in a switch's expression, which each label's test reads)
        and a generic function's are left to the emitter: checked only for copies.py."""
        copy = call.inlined.decl
        args = self.call_node(call, nodes)
        bound = None if args is None else copies.bound_paths(copy.params, call.args, args, frame)
        generic = bool(getattr(copy, "type_params", None))
        checker, names = local
        if call.func.absolute or call.func.name not in names:
            checker, local = BlockChecker(self.comp, None, {}, self.top), (None, set())
        values = self.argument_values(copy.params, call.args, nodes) if once and not generic \
            else {}
        self.body(copy, values, checker, local, frame, bound, call.inlined,
                  bind=once and not generic)

    def body(self, decl, values, checker, local, frame=None, bound=None, inlined=None,
             bind=True):
        """Check action or function `decl` with `checker`, its parameters of `values`
        bound, unrolling the loops that decides in it as `block` does (not when `bind` is
        False); then bind its calls. `inlined`: the call's copy `decl` is, whose copies.py
        decision is made here (`bound`: its arguments' paths in `frame`)."""
        frame = frame or {}
        while True:
            checked = self.callee(checker, decl, values)
            if checked is None:
                if inlined is not None:
                    inlined.copies = decide(decl.params, bound, copies.UNKNOWN_EFFECTS)
                return                  # the emitter reports it where it reaches it
            unrolled, nodes, fn = checked
            if not bind or not self.unroll(decl, unrolled):
                break
        if inlined is not None:
            inlined.copies = decide(decl.params, bound, copies.body_effects(fn, frame))
            frame = dict(frame)
            frame.update({v: bound[v.name] for v in fn.params
                          if v.name not in inlined.copies})     # a copy is its own root
        for inner, once in inlined_calls(decl.body):
            self.call(inner, nodes, local, frame, once and bind)

    @staticmethod
    def callee(checker, copy, values):
        """(the loops it decides, its expressions' nodes, its IR) of action or function `copy`
        checked by `checker` with its parameters of `values` bound, or None when the check
        fails; the checker's state is restored (a control's may check more)."""
        saved = (list(checker.scopes), checker.type_env, checker.ret_type, checker.loops,
                 checker.unrolled, checker.nodes)
        checker.unrolled, checker.nodes = {}, {}
        try:
            fn = checker.function_body(copy, ir.Action if isinstance(copy, A.ActionDecl)
                                       else ir.Function, named=False, values=values)
            return checker.unrolled, checker.nodes, fn
        except CompileError:
            return None
        finally:
            (checker.scopes, checker.type_env, checker.ret_type, checker.loops,
             checker.unrolled, checker.nodes) = saved

    def unroll(self, decl, unrolled):
        """Put in `decl` the iterations of its loops `unrolled` has, each iteration with
        copies of its own (`unroll.separate_iterations`, inlined copies copied too, each
        expression with the node of the one it copies); whether there were any."""
        here = loops_in(decl)
        mine = {key: hit for key, hit in unrolled.items() if key in here}
        if mine:
            replace_loops([decl], mine)
            self.comp.keep_nodes(separate_iterations(mine, inlined=True))
        return bool(mine)

    def argument_values(self, params, args, nodes):
        """`in` or directionless parameter -> the value of its argument (by position or
        name; a default is not bound) where that is settled, converted to its type."""
        if any(isinstance(a, A.NamedArg) for a in args):
            by_name = {a.name: a.value for a in args if isinstance(a, A.NamedArg)}
            pairs = [(p, by_name.get(p.name)) for p in params]
        else:
            pairs = list(zip(params, args))
        out = {}
        for p, e in pairs:
            hit = nodes.get(id(e)) if e is not None else None
            if p.direction not in ("", "in") or hit is None or hit[0] is not e:
                continue
            node = hit[1]
            if node.value is None or not ir.settled(node):
                continue
            try:
                t = self.comp.resolve_type(p.type, self.comp.globals)
                out[p.name] = convert(node.value, node.type, t, node.loc, "argument")
            except CompileError:
                continue
        return out

    def constructor_values(self, inst):
        """Constructor parameter -> the value of `inst`'s argument for it, converted to the
        parameter's type, where the argument is a compile-time value here."""
        params = inst.type.decl.ctor_params or []
        if any(isinstance(a, A.NamedArg) for a in inst.ast.args):
            by_name = {a.name: node for a, node in zip(inst.ast.args, inst.args)}
            pairs = [(p, by_name.get(p.name)) for p in params]
        else:
            pairs = list(zip(params, inst.args))
        out = {}
        for p, node in pairs:
            if node is None or node.value is None:
                continue
            try:
                t = self.comp.resolve_type(p.type, self.comp.globals)
                out[p.name] = convert(node.value, node.type, t, node.loc, "constructor argument")
            except CompileError:
                continue                # the emitter reports it as it declares the instance
        return out


def decide(params, bound, effects):
    """copies.needing_copies for AST parameters `params`; every one when the arguments'
    paths are unknown (`bound` None: a temporary each is always right)."""
    if bound is None:
        return {p.name for p in params}
    return copies.needing_copies([(p.name, p.direction) for p in params], bound, effects)


def lowered(node):
    """Every AST node under `node` the emitter lowers there, once per place it is reached
    (a split statement's steps, not the statement as written; not inside the copies
    inline.py made: each is another scope)."""
    if isinstance(node, (list, tuple)):
        for x in node:
            yield from lowered(x)
    elif isinstance(node, A.SplitStmt):
        yield from lowered(node.stmts)
    elif is_dataclass(node) and not isinstance(node, A.TypeRef):
        yield node
        for f in fields(node):
            if f.name not in ("loc", "inlined"):
                yield from lowered(getattr(node, f.name))


def applications(node):
    """The sub-block applications (A.InlinedBlock) under `node`, each once."""
    return list({id(x): x for x in lowered(node) if isinstance(x, A.InlinedBlock)}.values())


def inlined_calls(node):
    """The calls under `node` that have a copy of their callee (`A.Call.inlined`), each
    once, with whether it is reached once (one in a switch's expression is read by each
    label's test)."""
    calls = [x for x in lowered(node) if isinstance(x, A.Call) and x.inlined]
    count = Counter(id(x) for x in calls)
    return list({id(x): (x, count[id(x)] == 1) for x in calls}.values())


def loops_in(node):
    """The ids of the loops under `node`."""
    return {id(x) for x in lowered(node) if isinstance(x, (A.For, A.ForIn))}
