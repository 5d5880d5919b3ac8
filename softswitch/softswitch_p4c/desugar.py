"""AST-to-AST rewrites that make evaluation order explicit before lowering.

The first of the front-end's passes over the program (see README.md, "Architecture"):
a condition in a control's `apply` block that applies tables inside `&&`, `||`, `!` or `?:`
(`if (x > 1 && t.apply().hit)`) becomes plain statements the pipeline graph can
express: each table test sets a fresh bool through `if (t.apply().hit)`, and the right
operand of `&&` / `||` is evaluated only when the left does not decide (P4-16 8.6).
Each runs once over the program, after the check: a control type applied directly gets
an instance (`instantiate_direct_calls`), a switch on a value its if-chain
(`switches_as_ifs`), then, after order.py has made calls statements of their own,
conditions are split (`split_conditions`; the emitter names the temporaries as it
reaches them).
"""
from dataclasses import fields, is_dataclass

from . import ast as A
from .errors import CompileError, unsupported
from .symbols import BlockSym
from .types import Bits, BoolT, DontCareT, EnumT, ErrorT, StackT, StructT, VarbitT

_BOOL = "bool"


def has_apply(e):
    """Does expression `e` apply a table (`t.apply()` anywhere inside)?"""
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "apply":
        return True
    if isinstance(e, list):
        return any(has_apply(x) for x in e)
    if is_dataclass(e) and isinstance(e, A.Expr):
        return any(has_apply(getattr(e, f.name)) for f in fields(e) if f.name != "loc")
    return False


def contains_apply(e):
    """Does `e` name an `apply` method outside call arguments (`t.apply().hit`,
    `t.apply().action_run`)? What the control graph refuses in a value or condition."""
    if isinstance(e, A.Member) and e.name == "apply":
        return True
    return any(isinstance(v, A.Expr) and contains_apply(v)
               for v in getattr(e, "__dict__", {}).values())


PURE_METHODS = ("isValid", "minSizeInBits", "minSizeInBytes", "lookahead", "apply")


def has_side_effects(e):
    """Can evaluating `e` emit primitives (a call to a function, an extern, an extern
    method other than the pure ones)? What order.py moves out of expressions."""
    if isinstance(e, A.Call) and not (isinstance(e.func, A.Member) and
                                      e.func.name in PURE_METHODS):
        return True
    if isinstance(e, list):
        return any(has_side_effects(x) for x in e)
    if is_dataclass(e) and isinstance(e, A.Expr):
        return any(has_side_effects(getattr(e, f.name)) for f in fields(e) if f.name != "loc")
    return False


def is_hit_test(e):
    """`t.apply().hit`, `.miss`, possibly negated: what the graph lowers directly."""
    while isinstance(e, A.Unary) and e.op == "!":
        e = e.expr
    return (isinstance(e, A.Member) and e.name in ("hit", "miss") and
            isinstance(e.expr, A.Call) and not has_apply(e.expr.args))


def switch_as_ifs(s):
    """`switch (expr)` on a value (not `t.apply().action_run`): an if/else-if chain, labels
    without a body falling through to the next body. `expr` must have no side effects
    (the back-end checks it first): each test reads it again."""
    groups, labels, default = [], [], None
    for case in s.cases:
        labels.append(case)
        if case.body is None:
            continue
        if any(isinstance(c.label, A.DefaultExpr) for c in labels):
            default = case.body
        else:
            groups.append(([c.label for c in labels], case.body))
        labels = []
    chain = default if default is not None else A.Block(s.loc, [])
    for group_labels, body in reversed(groups):
        cond = None
        for label in group_labels:
            test = A.Binary(label.loc, "==", s.expr, label)
            cond = test if cond is None else A.Binary(label.loc, "||", cond, test)
        chain = A.If(s.loc, cond, body, chain)
    return chain


def switches_as_ifs(program):
    """Once over the program, after the check and before lowering: each `switch` on a
    value becomes an `A.SwitchChain` holding its if-chain (`switch_as_ifs`), in the bodies
    of actions and functions and in controls' apply blocks. A control's switch on
    `t.apply().action_run` (or on any other table apply, which the graph refuses) stays a
    switch, and so does one in a parser state (refused there). The chain's tests read the
    switch's own expression and labels (the nodes the checker kept for them)."""
    for d in program.decls:
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            _switches_as_ifs(d.body, True)
        elif isinstance(d, A.ControlDecl) and d.body is not None:
            for local in d.locals:
                if isinstance(local, A.ActionDecl):
                    _switches_as_ifs(local.body, True)
            _switches_as_ifs(d.body, False)


def _switches_as_ifs(node, in_action):
    """`node` with its value switches rewritten (every switch, `in_action`: an action or
    function lowers even a switch on an apply as an if-chain); lists and statements in
    place."""
    if isinstance(node, list):
        node[:] = [_switches_as_ifs(x, in_action) for x in node]
    elif isinstance(node, A.Switch):
        for case in node.cases:
            case.body = _switches_as_ifs(case.body, in_action)
        if in_action or not contains_apply(node.expr):
            return A.SwitchChain(node.loc, node.expr, switch_as_ifs(node))
    elif isinstance(node, A.Stmt):
        for f in fields(node):
            if f.name != "loc":
                setattr(node, f.name, _switches_as_ifs(getattr(node, f.name), in_action))
    return node


def split_conditions(program):
    """Once over the program, after the check and before lowering: every statement list
    of a control's apply block that the pipeline graph lowers, and the control-level
    initializers it runs first (`ControlDecl.inits`, order.py's), with each statement
    whose condition or value applies a table inside `&&`, `||`, `!` or `?:` replaced by an
    `A.SplitStmt` (calls are statements of their own already: order.py). The temporaries
    are named by the emitter as it reaches the list (`cond$N`, once per inlined copy).
    Returns the expressions it rebuilt around a temporary, each with the one it stands
    for."""
    splitter = ConditionSplitter()
    for d in program.decls:
        if isinstance(d, A.ControlDecl) and d.body is not None:
            splitter.split_list(d.inits)
            splitter.split_list(d.body.stmts)
    return splitter.rebuilt


class ConditionSplitter:
    """Rewrites table-applying conditions into statements; its temporaries have names no
    P4 identifier can clash with (`split$N`), which the emitter replaces by its own."""

    def __init__(self):
        self.count = 0
        self.made = []              # the temporaries of the statement being split
        self.rebuilt = []           # (expression written, the one it stands for)

    def fresh(self, loc):
        name = f"split${self.count}"
        self.count += 1
        self.made.append(name)
        return name, A.VarDecl(loc, [], A.TypeRef(loc, _BOOL), name, None)

    def split_list(self, stmts):
        """A statement list the graph lowers (`ControlMixin.g_stmts`), in place."""
        for i, s in enumerate(stmts):
            stmts[i] = self.split_stmt(s)

    def split_stmt(self, s):
        """`s` (its nested lists first), or the A.SplitStmt it became."""
        self.split_nested(s)
        self.made = []
        try:
            if isinstance(s, A.If) and has_apply(s.cond) and not is_hit_test(s.cond):
                out = self.split_if(s)
            elif isinstance(s, A.Assign) and has_apply(s.rhs):
                out = self.split_value(s.loc, s.rhs, s.lhs)
            elif isinstance(s, A.VarDecl) and not s.is_const and has_apply(s.init):
                out = [A.VarDecl(s.loc, s.annos, s.type, s.name, None)] + \
                    self.split_value(s.loc, s.init, A.Name(s.loc, s.name))
            else:
                return s
        except CompileError as e:   # reported where the emitter reaches it, as before
            return A.SplitStmt(s.loc, s, [], [], e)
        return A.SplitStmt(s.loc, s, out, self.made)

    def split_nested(self, s):
        """The lists inside `s` that the graph lowers as lists: blocks, branches (a branch
        that is not a block is a list of one), switch cases, a loop's body (each
        iteration's); the if-chain of a value switch is lowered as branches."""
        if isinstance(s, A.Block):
            self.split_list(s.stmts)
        elif isinstance(s, A.If):
            s.then = self.split_branch(s.then)
            s.other = self.split_branch(s.other)
        elif isinstance(s, A.Switch):
            for case in s.cases:
                case.body = self.split_branch(case.body)
        elif isinstance(s, A.SwitchChain):
            self.split_nested(s.chain)
        elif isinstance(s, (A.For, A.ForIn)):
            s.body = self.split_branch(s.body)

    def split_branch(self, s):
        if s is None or isinstance(s, A.Block):
            self.split_nested(s)
            return s
        return self.split_stmt(s)

    def split_if(self, s):
        """`if (c) S1 else S2` -> statements computing c, then `if (tmp) S1 else S2`."""
        pre, cond = self.lower(s.cond)
        return pre + [A.If(s.loc, cond, s.then, s.other)]

    def split_value(self, loc, value, assign_to):
        """`x = v;` (or `T x = v;`) with a table-applying v; `c ? a : b` becomes an `if`, so
        only the chosen operand is evaluated."""
        if isinstance(value, A.Ternary) and has_apply(value):
            pre, cond = self.lower(value.cond)
            return pre + [A.If(loc, cond,
                               A.Block(loc, self.split_value(loc, value.then, assign_to)),
                               A.Block(loc, self.split_value(loc, value.other, assign_to)))]
        pre, value = self.lower(value)
        return pre + [A.Assign(loc, assign_to, value)]

    def lower(self, e):
        """(statements to run first, an expression without table applies)."""
        if not has_apply(e):
            return [], e
        loc = e.loc
        if is_hit_test(e):
            name, decl = self.fresh(loc)
            tmp = A.Name(loc, name)
            return [decl, A.If(loc, e, A.Assign(loc, tmp, A.BoolLit(loc, True)),
                               A.Assign(loc, tmp, A.BoolLit(loc, False)))], tmp
        if isinstance(e, A.Unary) and e.op == "!":
            pre, inner = self.lower(e.expr)
            return pre, A.Unary(loc, "!", inner)
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            return self.lower_logical(e)
        if isinstance(e, A.Ternary):                 # a bool `c ? a : b` in a condition
            name, decl = self.fresh(loc)
            tmp = A.Name(loc, name)
            return [decl] + self.split_value(loc, e, tmp), tmp
        operands = _operands(e)
        if operands is not None:
            return self.lower_operands(e, operands)
        raise unsupported(loc, "table apply inside this expression (only `.hit`/`.miss` "
                               "tests combined with &&, ||, ! and ?: are supported)")

    def lower_operands(self, e, operands):
        """An operator or call whose operands apply tables (`f(t.apply().hit ? 1 : 2)`):
        the operands' table tests run first, in operand order (no operand has side effects
        any more: order.py made them statements before this one)."""
        pre, lowered = [], []
        for x in operands:
            p, x = self.lower_operand(x)
            pre += p
            lowered.append(x)
        return pre, self.rebuilt_from(e, _with_operands(e, lowered))

    def lower_operand(self, e):
        """A value operand: in `c ? a : b` only the table test in c is hoisted, so the
        choice keeps its type (a bool temporary stands for c alone)."""
        if isinstance(e, A.NamedArg):
            pre, value = self.lower_operand(e.value)
            return pre, A.NamedArg(e.loc, e.name, value)
        if isinstance(e, A.Ternary) and not has_apply([e.then, e.other]):
            pre, cond = self.lower(e.cond)
            return pre, self.rebuilt_from(e, A.Ternary(e.loc, cond, e.then, e.other))
        return self.lower(e)

    def rebuilt_from(self, original, written):
        """`written`, kept as standing for `original`: the same value with a bool
        temporary for a table test inside, so of its type and, as it, no compile-time
        value (`rebuilt`: the emitter reads its node from the program's IR)."""
        self.rebuilt.append((written, original))
        return written

    def lower_logical(self, e):
        loc = e.loc
        pre_left, left = self.lower(e.left)
        pre_right, right = self.lower(e.right)
        if not pre_right:
            return pre_left, A.Binary(loc, e.op, left, right)
        name, decl = self.fresh(loc)
        tmp = A.Name(loc, name)
        evaluate_right = A.Block(loc, pre_right + [A.Assign(loc, tmp, right)])
        if e.op == "&&":
            stmt = A.If(loc, left, evaluate_right, A.Assign(loc, tmp, A.BoolLit(loc, False)))
        else:
            stmt = A.If(loc, left, A.Assign(loc, tmp, A.BoolLit(loc, True)), evaluate_right)
        return pre_left + [decl, stmt], tmp


def assigned_names(node):
    """Plain names a statement tree assigns to (`x = ...`), in switch cases too."""
    out = set()
    if isinstance(node, A.Assign) and isinstance(node.lhs, A.Name):
        out.add(node.lhs.name)
    if isinstance(node, list):
        for x in node:
            out |= assigned_names(x)
    elif is_dataclass(node) and isinstance(node, (A.Stmt, A.SwitchCase)):
        for f in fields(node):
            if f.name != "loc":
                out |= assigned_names(getattr(node, f.name))
    return out


def _operands(e):
    """The operands of a value-producing operator or call, evaluated left to right."""
    if isinstance(e, A.Call) and not has_apply(e.func):
        return list(e.args)
    if isinstance(e, A.Binary) and e.op not in ("&&", "||"):
        return [e.left, e.right]
    if isinstance(e, (A.Unary, A.Cast, A.Slice)):
        return [e.expr]
    return None


def _with_operands(e, operands):
    if isinstance(e, A.Call):
        return A.Call(e.loc, e.func, e.type_args, operands)
    if isinstance(e, A.Binary):
        return A.Binary(e.loc, e.op, operands[0], operands[1])
    if isinstance(e, A.Unary):
        return A.Unary(e.loc, e.op, operands[0])
    if isinstance(e, A.Cast):
        return A.Cast(e.loc, e.type, operands[0])
    return A.Slice(e.loc, operands[0], e.hi, e.lo)


def instantiate_direct_calls(program, globals_scope):
    """`C.apply(...)` on a control type without constructor parameters (P4-16 15.1, direct
    type invocation) applies an instance of its own: as p4c's InstantiateDirectCalls, a
    local `C() C_inst;` is added to the calling control and the call applies it. Runs once
    over every control of the program, before lowering."""
    for decl in program.decls:
        if isinstance(decl, A.ControlDecl) and decl.body is not None:
            _instantiate_in(decl, globals_scope)


def _instantiate_in(decl, globals_scope):
    taken = {getattr(d, "name", None) for d in decl.locals}
    shadowing = {p.name for p in decl.params + (decl.ctor_params or [])}

    def control_type(name):
        sym = None if name in shadowing else globals_scope.lookup(name)
        return (isinstance(sym, BlockSym) and isinstance(sym.decl, A.ControlDecl) and
                sym.decl.body is not None and not sym.decl.ctor_params)

    def rewrite(node):
        if isinstance(node, A.CallStmt):
            f = node.call.func
            if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.expr, A.Name) \
                    and control_type(f.expr.name):
                name, n = f"{f.expr.name}_inst", 0
                while name in taken:
                    n += 1
                    name = f"{f.expr.name}_inst_{n}"
                taken.add(name)
                decl.locals.append(A.Instance(f.loc, [], A.TypeRef(f.loc, f.expr.name), [], name))
                f.expr = A.Name(f.expr.loc, name)
            return
        if isinstance(node, list):
            for x in node:
                rewrite(x)
        elif is_dataclass(node) and isinstance(node, (A.Stmt, A.SwitchCase)):
            for fl in fields(node):
                if fl.name != "loc":
                    rewrite(getattr(node, fl.name))

    rewrite(decl.body.stmts)


def parser_initializers_in_start(program):
    """Once over the program, before order.py: a parser's variable initializers become
    assignments at the head of its `start` state, in declaration order (p4c's
    MoveInitializers), so that evaluation order, short-circuiting and `?:` treat them as
    any state's statements (a state splits at an `if`; before any state there was no place
    for one). When a transition re-enters `start`, they go in an entry state of their own
    that continues in it, so that they still run once."""
    for d in program.decls:
        start = next((st for st in d.states if st.name == "start"), None) \
            if isinstance(d, A.ParserDecl) else None
        if start is None:               # no start state: the emitter reports it
            continue
        inits = []
        for x in d.locals:
            if isinstance(x, A.VarDecl) and x.init is not None and not x.is_const:
                inits.append(A.Assign(x.loc, A.Name(x.loc, x.name), x.init))
                x.init = None
        if not inits:
            continue
        if "start" in _transition_targets(d.states):
            names = {st.name for st in d.states}
            body = next(f"start_{i}" for i in range(len(names) + 1) if f"start_{i}" not in names)
            _rename_state(d.states, "start", body)
            d.states.insert(0, A.ParserState(start.loc, [], "start", inits,
                                             A.Transition(start.loc, body)))
        else:
            start.stmts[:0] = inits


def _transition_targets(states):
    out = set()
    for st in states:
        t = st.transition
        if t is not None:
            out |= {t.next} if t.cases is None else {c[2] for c in t.cases}
    return out


def _rename_state(states, old, new):
    for st in states:
        st.name = new if st.name == old else st.name
        t = st.transition
        if t is not None and t.cases is None:
            t.next = new if t.next == old else t.next
        elif t is not None:
            t.cases = [case[:2] + (new if case[2] == old else case[2],) + case[3:]
                       for case in t.cases]


def dontcare_args(program, program_nodes):
    """Once over the program, right after the check: each `_` passed for an `out`
    parameter (the checker typed it as the parameter, `BlockChecker.compatible_arg`)
    becomes a fresh temporary of that type, as p4c's DontcareArgs does: declared among
    the enclosing parser's or control's locals (before the local that passes it: a
    table's actions list), or first in the enclosing action's or function's body.
    `pkt.extract<T>(_)` so extracts into a scratch header of type T (the packet
    advances past it), and an action's unwanted `out` result lands in a
    variable nobody reads (`actions = { a(_); }` too: a control's local, as p4c).
    The names (`arg$N`) cannot clash with a P4 identifier."""
    temporaries = DontcareTemporaries(program_nodes)
    for d in program.decls:
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            temporaries.in_body(d.body)
        elif isinstance(d, A.ControlDecl) and d.body is not None:
            for local in d.locals:
                if isinstance(local, (A.ActionDecl, A.FunctionDecl)):
                    temporaries.in_body(local.body)
            locals_ = []                # a local's temporaries declared before it
            for local in d.locals:
                if not isinstance(local, (A.ActionDecl, A.FunctionDecl)):
                    locals_ += temporaries.replace([local])
                locals_.append(local)
            d.locals = locals_ + temporaries.replace([d.body])
        elif isinstance(d, A.ParserDecl) and d.states:
            d.locals += temporaries.replace([d.locals, d.states])


class DontcareTemporaries:
    def __init__(self, program_nodes):
        self.program_nodes = program_nodes
        self.count = 0

    def in_body(self, body):
        body.stmts[:0] = self.replace(body.stmts)

    def replace(self, node):
        """The `_` out arguments of the calls inside `node` replaced by temporaries, in
        place; returns their declarations."""
        made = []
        if isinstance(node, (A.Call, A.ActionRef)) and node.args:    # an actions list binds too
            node.args = [self.argument(a, made) for a in node.args]
        if isinstance(node, list):
            for x in node:
                made += self.replace(x)
        elif is_dataclass(node) and not isinstance(node, A.TypeRef):
            for f in fields(node):
                if f.name not in ("loc", "inlined"):
                    made += self.replace(getattr(node, f.name))
        return made

    def argument(self, a, made):
        if isinstance(a, A.NamedArg):
            return A.NamedArg(a.loc, a.name, self.argument(a.value, made))
        hit = self.program_nodes.get(id(a)) if isinstance(a, A.DefaultExpr) else None
        if hit is None or hit[0] is not a or hit[1] is None or \
                isinstance(hit[1].type, DontCareT):
            return a
        name = f"arg${self.count}"
        self.count += 1
        made.append(A.VarDecl(a.loc, [], type_ref(hit[1].type, a.loc), name, None))
        return A.Name(a.loc, name)


def type_ref(t, loc):
    """An AST type naming checked type `t` (types are declared at the top level, so a
    name resolves to the same type anywhere)."""
    if isinstance(t, Bits):
        return A.TypeRef(loc, t.type_name) if t.type_name else \
            A.TypeRef(loc, "int" if t.signed else "bit", A.IntLit(loc, t.width))
    if isinstance(t, (BoolT, ErrorT)):
        return A.TypeRef(loc, str(t))
    if isinstance(t, (StructT, EnumT)):
        return A.TypeRef(loc, t.name)
    if isinstance(t, VarbitT):
        return A.TypeRef(loc, "varbit", A.IntLit(loc, t.max_width))
    if isinstance(t, StackT):
        return A.TypeRef(loc, "stack", stack_size=A.IntLit(loc, t.size),
                         inner=type_ref(t.elem, loc))
    raise unsupported(loc, f"'_' for an out parameter of type {t}")
