"""Loop unrolling: an AST-to-AST pass run before lowering (BMv2 has no loops; p4c
unrolls them too).

A loop whose iterations its declaration's scope decides (the block's and the top
level's constants) is unrolled once over the program, by the checker phase
(`check.BlockChecker.unroll`, `replace_loops`; v1model and TNA), each iteration then
given its own copy of the body (`separate_iterations`, v1model); one a sub-control's
constructor arguments or a call's constant arguments decide, in the inlined copy, by
bind.py the same way; the emitter unrolls the others as it reaches them, in its scope
of the moment (bounds from the arguments of a call bind.py leaves), or lowers them as
run-time loops in an action.

A `for` loop with compile-time bounds becomes one block per iteration, each
starting with the loop variables as constants. `break`/`continue` must be decided
at compile time in each iteration: the `if`s around them are settled here, so the
back-end never sees a jump out of a loop. Constants are folded by the checker phase
(check.py) through the compiler passed in (`const_int`, `const_value`, `resolve_type`).
"""
from dataclasses import fields, is_dataclass

from . import ast as A
from .desugar import assigned_names
from .errors import CompileError, unsupported
from .inline import copy_tree
from .order import reads_temporary
from .symbols import Scope
from .values import Val

MAX_UNROLL = 1024                 # iterations a compile-time loop may take


class NotUnrollable(CompileError):
    """The loop depends on run-time values (bounds, or a break/continue condition): an
    action lowers it with jumps instead; elsewhere this is the error reported."""


class Unroller:
    def __init__(self, checker):
        self.checker = checker

    def unroll(self, s, scope):
        """The iterations of loop `s` (A.For / A.ForIn) as a list of A.Block."""
        c = self.checker
        if isinstance(s, A.ForIn):
            if not isinstance(s.range, A.Range):
                raise unsupported(s.range.loc, "for-in over anything but a constant range")
            lo = c.const_int(s.range.lo, scope, "loop bound")
            hi = c.const_int(s.range.hi, scope, "loop bound")
            loop_vars = {s.name: s.type}
            states = ({s.name: v} for v in range(lo, hi + 1))
        else:
            loop_vars = self.loop_vars(s)
            states = self.loop_states(s, scope, loop_vars)
        written = assigned_names(s.body) & set(loop_vars)
        if written:
            raise unsupported(s.body.loc, f"assignment to loop variable '{sorted(written)[0]}' "
                                          f"inside the loop body")
        blocks = []
        for state in states:
            inner = self.loop_scope(scope, state, loop_vars, s.loc)
            body, outcome = self.settle_jumps([s.body], inner)
            blocks.append(A.Block(s.body.loc, [
                A.VarDecl(s.loc, [], loop_vars[n], n, A.IntLit(s.loc, v), True)
                for n, v in state.items()] + body))
            if outcome == "break":
                break
        return blocks

    def settle_jumps(self, stmts, scope):
        """The statements of one iteration up to a `break`/`continue`, taking the `if`s
        whose conditions are constant there; returns (statements, "break"/"continue"/None)."""
        out = []
        for st in stmts:
            if isinstance(st, A.SplitStmt) and has_jump(st.original):
                st = st.original      # its condition decides the jump, as written
            if isinstance(st, (A.Break, A.Continue)):
                return out, "break" if isinstance(st, A.Break) else "continue"
            if isinstance(st, A.Block):
                body, outcome = self.settle_jumps(st.stmts, scope)
                out.append(A.Block(st.loc, body))
            elif isinstance(st, A.If) and has_jump(st):
                cond = None if reads_temporary(st.cond) else \
                    self.checker.const_value(st.cond, scope)
                if not isinstance(cond, bool):
                    raise NotUnrollable(st.loc, "unsupported construct: break/continue under a "
                                                "condition that is not a compile-time constant")
                branch = st.then if cond else st.other
                body, outcome = self.settle_jumps([branch] if branch else [], scope)
                out.append(A.Block(st.loc, body))
            else:
                out.append(st)
                continue
            if outcome:
                return out, outcome
        return out, None

    @staticmethod
    def loop_vars(s):
        out = {}
        for st in s.init:
            if not isinstance(st, A.VarDecl):   # a variable of the enclosing scope: an
                # action lowers the loop at run time, where the variable is written
                raise NotUnrollable(st.loc, "unsupported construct: a for-loop initializer "
                                            "that is not a declaration")
            out[st.name] = st.type
        return out

    def loop_scope(self, scope, values, loop_vars, loc):
        inner = Scope(scope)
        for name, v in values.items():
            vt = self.checker.resolve_type(loop_vars[name], scope)
            inner.declare(name, Val(vt, const=v, extra={"is_const": True, "name": name}), loc)
        return inner

    def loop_states(self, s, scope, loop_vars):
        values = {}
        for st in s.init:
            t = self.checker.resolve_type(st.type, scope)
            values[st.name] = self.loop_value(st.init, t, scope, values, loop_vars)
        for _ in range(MAX_UNROLL + 1):
            if s.cond is not None:
                go = self.loop_value(s.cond, None, scope, values, loop_vars)
                if not isinstance(go, bool):
                    raise NotUnrollable(s.cond.loc, "loop condition must be a compile-time bool")
                if not go:
                    return
            yield dict(values)
            for u in s.updates:
                if isinstance(u, A.Temp):       # a call's result (order.py): run time
                    raise NotUnrollable(u.loc, "loop bounds must be compile-time constants")
                if not (isinstance(u, A.Assign) and isinstance(u.lhs, A.Name)
                        and u.lhs.name in loop_vars):
                    raise unsupported(u.loc, "a for-loop update other than assigning a loop "
                                             "variable")
                t = self.checker.resolve_type(loop_vars[u.lhs.name], scope)
                values[u.lhs.name] = self.loop_value(u.rhs, t, scope, values, loop_vars)
        raise NotUnrollable(s.loc, f"unsupported construct: a loop running more than "
                                   f"{MAX_UNROLL} times")

    def loop_value(self, e, t, scope, values, loop_vars):
        inner = self.loop_scope(scope, values, loop_vars, e.loc)
        v = self.checker.const_value(e, inner, t, "loop variable")
        if v is None:
            raise NotUnrollable(e.loc, "loop bounds must be compile-time constants")
        return v


def has_jump(node):
    """Does a statement tree contain `break`/`continue` (not inside a nested loop)?"""
    if isinstance(node, (A.Break, A.Continue)):
        return True
    if isinstance(node, (A.For, A.ForIn)) or node is None:
        return False
    if isinstance(node, A.SplitStmt):
        return has_jump(node.original)
    if isinstance(node, A.Block):
        return any(has_jump(x) for x in node.stmts)
    if isinstance(node, A.If):
        return has_jump(node.then) or has_jump(node.other)
    return False


def replace_loops(node, unrolled):
    """Each loop of `unrolled` (id(loop) -> (it, A.Block of its iterations)) under `node`
    (the program's actions, functions, controls and parsers) replaced by its iterations,
    the loops inside them too."""
    if isinstance(node, list):
        for i, x in enumerate(node):
            node[i] = _unrolled(x, unrolled)
            replace_loops(node[i], unrolled)
    elif is_dataclass(node) and not isinstance(node, A.Expr):
        for f in fields(node):
            if f.name == "loc":
                continue
            x = getattr(node, f.name)
            if isinstance(x, (A.For, A.ForIn)) and id(x) in unrolled:
                setattr(node, f.name, _unrolled(x, unrolled))
            replace_loops(getattr(node, f.name), unrolled)


def _unrolled(x, unrolled):
    hit = unrolled.get(id(x)) if isinstance(x, (A.For, A.ForIn)) else None
    return hit[1] if hit is not None and hit[0] is x else x


def separate_iterations(unrolled, inlined=False):
    """Each iteration of the loops of `unrolled` (id(loop) -> (it, A.Block of its
    iterations), as `replace_loops` put them in the program) but the first given its own
    copy of the statements the unroller shares among them (the loop's body), so that
    what the passes after it write per statement (a call's copy of its callee, a
    sub-block application's copy, bind.py's bindings) is per iteration; `inlined`: after
    inlining, with copies of the copies. Returns the expressions copied, each with the
    one it copies."""
    copied = []
    for _, iterations in unrolled.values():
        for block in iterations.stmts[1:]:
            block.stmts = copy_tree(block.stmts, copied, {} if inlined else None)
    return copied
