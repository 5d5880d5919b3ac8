"""Evaluation order made explicit, once over the program (README.md, "Architecture").

P4-16 evaluates an expression's operands left to right, a call's arguments in order, and
the right operand of `&&` / `||` and one branch of `?:` only when needed. As p4c's
SideEffectOrdering does, every call with side effects inside an expression (a function's,
an extern's or an extern method's) becomes a statement of its own before the statement it
was in, its result the temporary `tmp$N` (an `A.Temp`); an operand read before a later
call is read into a variable `tmp$N` of its type first (an `in` argument too, not an
`out`/`inout` one, which names storage); `&&`, `||` and `?:` whose later operand has side
effects become `if` statements. A call that is the whole statement (`f(x);`, `x = f(y);`, `T x = f(y);`)
stays there. Runs after the check and switches, before the condition splitter (which then
meets table applies only) and inlining (which gives each hoisted call its copy).

A loop's condition with side effects is evaluated at the top of its body (`if (!c)
break;`), its initializers' and updates' calls where they run. A switch's value with side
effects is evaluated once, before the if-chain of its labels reads it (as p4c dismantles a
switch's expression). In a parser state the `if`s become states of their own (the
emitter splits a state at an `if`); a parser's variable initializers are statements of
its `start` state by then (desugar.parser_initializers_in_start). A table key with side
effects is evaluated by statements the table's apply runs first (p4c's KeySideEffect). A target written before a later call (an
assignment's, an `out` argument's) has its index read first; the storage itself is what
the emitter writes. `a op= b` (parsed as `a = a op b`, one `a` in both places) evaluates
`a`'s calls once.
"""
from dataclasses import replace

from . import ast as A, ir
from .desugar import PURE_METHODS, has_side_effects, type_ref
from .errors import CompileError
from .symbols import ActionSym, FuncSym
from .types import IntT

_OPERANDS = {A.Binary: ("left", "right"), A.Unary: ("expr",), A.Cast: ("expr",),
             A.Slice: ("expr",), A.Member: ("expr",), A.Index: ("expr", "index"),
             A.Ternary: ("cond", "then", "other"), A.NamedArg: ("value",)}


def is_temporary(name):
    """A name order.py gave (`tmp$N`)."""
    return name.startswith("tmp$")


def reads_temporary(e):
    """Does expression `e` read a temporary of this pass (a value known only at run time,
    or once its call is inlined)?"""
    if isinstance(e, A.Name):
        return is_temporary(e.name)
    return isinstance(e, A.Expr) and any(
        reads_temporary(x) for v in vars(e).values() for x in (v if isinstance(v, list) else [v]))


def order_side_effects(program, program_nodes):
    """Rewrites, in place, the bodies of actions and functions, controls' apply blocks and
    initializers (`ControlDecl.inits`, written here) and parser states. Returns the
    expressions it rebuilt, each with the one it stands for (`Compiler.keep_nodes`)."""
    ordering = SideEffectOrdering(program_nodes, program)
    for d in program.decls:
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            ordering.stmts(d.body.stmts)
        elif isinstance(d, A.ControlDecl) and d.body is not None:
            ordering.enter(d.locals)
            for local in d.locals:
                if isinstance(local, (A.ActionDecl, A.FunctionDecl)):
                    ordering.stmts(local.body.stmts)
                elif isinstance(local, A.TableDecl):
                    ordering.table_keys(local)
            d.inits = [A.Assign(x.loc, A.Name(x.loc, x.name), x.init) for x in d.locals
                       if isinstance(x, A.VarDecl) and x.init is not None]
            ordering.stmts(d.inits)
            ordering.stmts(d.body.stmts)
            ordering.enter([])
        elif isinstance(d, A.ParserDecl) and d.states:
            ordering.in_parser = True
            for state in d.states:
                ordering.state(state)
            ordering.in_parser = False
    return ordering.rebuilt


class SideEffectOrdering:
    def __init__(self, program_nodes, program):
        self.nodes = program_nodes
        self.top = {d.name: d for d in program.decls
                    if isinstance(d, (A.ActionDecl, A.FunctionDecl))}
        self.callables = self.top
        self.in_parser = False      # loops there are unrolled: their conditions stay
        self.count = 0
        self.at = None              # the statement being ordered: what it writes is at its place
        self.rebuilt = []           # (expression written, the one it stands for)

    def enter(self, locals_):
        """The actions and functions a control declares shadow the top level's."""
        self.callables = dict(self.top)
        self.callables.update({d.name: d for d in locals_
                               if isinstance(d, (A.ActionDecl, A.FunctionDecl))})

    def fresh(self):
        self.count += 1
        return f"tmp${self.count - 1}"

    # ------------------------------------------------------------ statements
    def stmts(self, stmts):
        stmts[:] = [x for s in stmts for x in self.stmt(s)]

    def branch(self, s):
        """A branch's statement, a block if it became several."""
        if s is None:
            return None
        out = self.stmt(s)
        return out[0] if len(out) == 1 else A.Block(s.loc, out)

    def stmt(self, s):
        """The statements `s` becomes: the side effects of its expressions first."""
        pre, self.at = [], s.loc
        if isinstance(s, A.Block):
            self.stmts(s.stmts)
        elif isinstance(s, A.If):
            pre, s.cond = self.value(s.cond, True)
            s.then, s.other = self.branch(s.then), self.branch(s.other)
        elif isinstance(s, A.SwitchChain):
            if has_side_effects(s.expr):
                pre, value = self.value(s.expr, True)
                s.chain = self.switch_tests(s.chain, s.expr, value)
                s.expr = value
            self.chain(s.chain)
        elif isinstance(s, A.Switch):
            for case in s.cases:
                case.body = self.branch(case.body)
        elif isinstance(s, A.Assign):
            compound = isinstance(s.rhs, A.Binary) and s.rhs.left is s.lhs    # `a op= b`
            pre, s.lhs = self.target(s.lhs, s.rhs)
            if compound:                    # its target evaluated once (P4-16 1.2.4)
                s.rhs = self.rebuilt_from(s.rhs, replace(s.rhs, left=s.lhs))
            more, s.rhs = self.value(s.rhs, False)
            pre += more
        elif isinstance(s, A.VarDecl) and s.init is not None and not s.is_const:
            pre, s.init = self.value(s.init, False)
        elif isinstance(s, A.CallStmt):
            pre, s.call = self.value(s.call, False)
        elif isinstance(s, A.Return) and s.value is not None:
            pre, s.value = self.value(s.value, True)
        elif isinstance(s, A.For):
            for d in s.init:                # run once, before the loop
                pre += self.stmt(d)[:-1]
            self.stmts(s.updates)
            s.body = self.branch(s.body)
            if has_side_effects(s.cond) and not self.in_parser:
                self.loop_condition(s)
        elif isinstance(s, A.ForIn):
            s.body = self.branch(s.body)
        return pre + [s]

    def loop_condition(self, s):
        """`for (i; c; u) B` with side effects in c -> `for (i; ; u) { c's statements; if
        (!c) break; B }`: c is evaluated before each iteration, after the updates too."""
        self.at = s.cond.loc
        pre, cond = self.value(s.cond, True)
        leave = A.If(s.cond.loc, A.Unary(s.cond.loc, "!", cond), A.Break(s.cond.loc), None)
        s.body = A.Block(s.body.loc, pre + [leave, s.body])
        s.cond = None

    def chain(self, s):
        """A value switch's if-chain: its tests read the switch's value (the emitter's rule
        on it stays), its bodies are ordered."""
        if isinstance(s, A.If):
            s.then = self.branch(s.then)
            self.chain(s.other)
        else:
            self.stmt(s)

    def table_keys(self, table):
        """A key with side effects (p4c's KeySideEffect): its calls become statements
        the table's apply runs first, left to right over the keys (`KeyElement.prep`),
        the key the value they leave; it keeps the name it was written with."""
        for prop in table.properties:
            if prop.name != "key":
                continue
            for k in prop.value:
                if has_side_effects(k.expr):
                    self.at = k.loc
                    k.written = A.describe(k.expr)
                    k.prep, k.expr = self.value(k.expr, True)

    def switch_tests(self, chain, old, new):
        """The if-chain of a switch's labels (desugar.switch_as_ifs: `old == label`, or-ed)
        reading `new`, the switch's value evaluated once, in place of `old`."""
        def test(e):
            if e is old:
                return new
            if isinstance(e, A.Binary) and e.op in ("==", "||"):   # desugar's, no IR node
                return replace(e, left=test(e.left), right=test(e.right))
            return e
        if isinstance(chain, A.If):
            return replace(chain, cond=test(chain.cond),
                           other=self.switch_tests(chain.other, old, new))
        return chain

    def state(self, state):
        """A parser state's statements, then its select's keys, left to right."""
        self.stmts(state.stmts)
        t = state.transition
        if t is not None and t.select:
            self.at = t.loc
            pre, t.select = self.operands(t.select, [True] * len(t.select))
            state.stmts += pre

    # ------------------------------------------------------------ expressions
    def value(self, e, hoist):
        """(statements evaluating `e`'s side effects in order, `e` without them). `hoist`:
        a call with side effects at the top becomes a temporary too (else it stays: the
        statement's own call)."""
        if not has_side_effects(e):
            return [], e
        if isinstance(e, A.Call):
            pre, call = self.call(e)
            if not hoist or _is_pure(call):
                return pre, call
            return self.temporary(pre, call)
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            return self.short_circuit(e)
        if isinstance(e, A.Ternary) and has_side_effects([e.then, e.other]):
            return self.choice(e)
        if isinstance(e, A.ListExpr):
            pre, items = self.operands(e.items, [True] * len(e.items))
            return pre, self.rebuilt_from(e, A.ListExpr(e.loc, items))
        names = _OPERANDS[type(e)]
        pre, parts = self.operands([getattr(e, n) for n in names], [True] * len(names))
        return pre, self.rebuilt_from(e, replace(e, **dict(zip(names, parts))))

    def temporary(self, pre, value):
        name = self.fresh()
        return pre + [A.Temp(self.at, name, value)], A.Name(value.loc, name)

    def operands(self, exprs, readable):
        """Operands evaluated left to right: each one's side effects, then, when a later
        one has side effects and it is `readable` (a value, not an `out` argument), its
        value read into a temporary."""
        pre, out = [], []
        for i, x in enumerate(exprs):
            more, v = self.value(x, True) if readable[i] else self.target(x, exprs[i + 1:])
            pre += more
            if readable[i] and has_side_effects(exprs[i + 1:]) and self.may_change(v):
                more, v = self.read_first(x, v)
                pre += more
            out.append(v)
        return pre, out

    def read_first(self, original, value):
        """`value` (standing for `original`) read into a temporary now: a variable of the
        checker's type, `T tmp$N = value;` (hsindex expands a run-time stack index in it
        as in any initializer), else an A.Temp (the emitter copies what it reads)."""
        t = self.checked_type(original)
        try:
            declared = None if t is None or isinstance(t, IntT) else type_ref(t, value.loc)
        except CompileError:
            declared = None
        if declared is None:
            return self.temporary([], value)
        name = self.fresh()
        return [A.VarDecl(self.at, [], declared, name, value)], A.Name(value.loc, name)

    def checked_type(self, e):
        hit = self.nodes.get(id(e))
        return hit[1].type if hit is not None and hit[0] is e and hit[1] is not None else None

    def target(self, e, later=None):
        """Storage written (an assignment's target, an `out`/`inout` argument) before
        `later` is evaluated: the calls in its indices move, and an index is read ahead
        when `later` has side effects; the storage itself is not read."""
        if not has_side_effects([e, later]):
            return [], e
        if isinstance(e, (A.Member, A.Slice)):
            pre, base = self.target(e.expr, later)
            return pre, self.rebuilt_from(e, replace(e, expr=base))
        if isinstance(e, A.Index):
            pre, base = self.target(e.expr, [e.index, later])
            more, index = self.value(e.index, True)
            if has_side_effects(later) and self.may_change(index):
                read, index = self.read_first(e.index, index)
                more += read
            return pre + more, self.rebuilt_from(e, replace(e, expr=base, index=index))
        return self.value(e, True)

    def may_change(self, e):
        """Can a later call change what `e` reads? Not a literal, a compile-time value or
        a temporary (a call's result, or a value already read)."""
        if isinstance(e, (A.IntLit, A.BoolLit, A.StrLit, A.DefaultExpr, A.TypeExpr)) or \
                isinstance(e, A.Name) and is_temporary(e.name):
            return False
        hit = self.nodes.get(id(e))
        return not (hit is not None and hit[0] is e and hit[1] is not None and
                    hit[1].value is not None)

    def call(self, e):
        """A call's callee expression, then its arguments in order; an `in` or
        directionless argument is read before a later argument's side effects."""
        pre, func = [], e.func
        if isinstance(func, A.Member) and has_side_effects(func.expr):
            pre, base = self.value(func.expr, True)
            func = replace(func, expr=base)
        if not has_side_effects(e.args):
            return pre, e if func is e.func else self.rebuilt_from(e, replace(e, func=func))
        values = [a.value if isinstance(a, A.NamedArg) else a for a in e.args]
        directions = self.directions(e)
        readable = [directions.get(a.name if isinstance(a, A.NamedArg) else i, "out")
                    in ("", "in") for i, a in enumerate(e.args)]
        more, values = self.operands(values, readable)
        args = [replace(a, value=v) if isinstance(a, A.NamedArg) else v
                for a, v in zip(e.args, values)]
        return pre + more, self.rebuilt_from(e, A.Call(e.loc, func, e.type_args, args))

    def directions(self, e):
        """{position and name: direction} of the callee's parameters: the checker's
        resolution, else the action or function the name declares here; {} for a method
        the checker did not resolve (its arguments are not read ahead)."""
        params = None
        hit = self.nodes.get(id(e))
        if hit is not None and hit[0] is e and isinstance(hit[1], ir.Call):
            callee, func = hit[1].callee, hit[1].func
            if isinstance(callee, A.Method):
                params = callee.params
            elif isinstance(callee, (ir.Action, ir.Function)):
                params = callee.ast.params
            elif isinstance(getattr(func, "decl", None), (ActionSym, FuncSym)):
                params = func.decl.decl.params
        if params is None and isinstance(e.func, A.Name):
            decl = (self.top if e.func.absolute else self.callables).get(e.func.name)
            params = decl.params if decl is not None else None
        out = {}
        for i, p in enumerate(params or []):
            out[i] = out[p.name] = p.direction
        return out

    def short_circuit(self, e):
        """`a && b` -> `bool t = a; if (t) { t = b; }` (`||`: `if (!t)`), b's side effects
        inside the `if`."""
        loc = e.loc
        pre, left = self.value(e.left, True)
        name = self.fresh()
        more, right = self.value(e.right, True)
        test = A.Name(loc, name) if e.op == "&&" else A.Unary(loc, "!", A.Name(loc, name))
        evaluate = A.Block(loc, more + [A.Assign(loc, A.Name(loc, name), right)])
        return pre + [A.VarDecl(self.at, [], A.TypeRef(loc, "bool"), name, left),
                      A.If(self.at, test, evaluate, None)], A.Name(loc, name)

    def choice(self, e):
        """`c ? a : b` with side effects in a or b -> `T t; if (c) { t = a; } else { t =
        b; }`, T the checker's type of the choice (unknown: only c is ordered)."""
        loc = e.loc
        pre, cond = self.value(e.cond, True)
        t = self.checked_type(e)
        try:
            declared = None if t is None else type_ref(t, loc)
        except CompileError:
            declared = None
        if declared is None:
            return pre, self.rebuilt_from(e, replace(e, cond=cond))
        name = self.fresh()

        def side(x):
            more, v = self.value(x, True)
            return A.Block(loc, more + [A.Assign(loc, A.Name(loc, name), v)])
        return pre + [A.VarDecl(self.at, [], declared, name, None),
                      A.If(self.at, cond, side(e.then), side(e.other))], A.Name(loc, name)

    def rebuilt_from(self, original, written):
        """`written`, standing for `original` (its type; no compile-time value: it has side
        effects), so the emitter reads its node from the program's IR."""
        if written is not original:
            self.rebuilt.append((written, original))
        return written


def _is_pure(call):
    return isinstance(call.func, A.Member) and call.func.name in PURE_METHODS

