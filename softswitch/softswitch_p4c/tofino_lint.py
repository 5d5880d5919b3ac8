"""`--target tofino|tofino2`: what a Tofino pipeline cannot compile, at file:line:col.

Rules (each names the expression or statement at fault):
- the MAU has no multiplier or divider: `a * b` with two run-time operands,
  `/` or `%` by anything but a power-of-two constant;
- shifts only by constants;
- one stateful-ALU access per register per packet: two executions of
  RegisterActions (or `Register.read/write`) of the same register on one
  path through a control (branches of an if/switch and the actions of one
  table are exclusive); a `read` followed by a `write` at the same index
  counts once (bf-p4c merges them into one RegisterAction);
- a RegisterAction's `apply` is one stateful ALU: no multiply, divide, shift
  or extern calls, one operation per assigned value, and at most 2 distinct
  conditions on Tofino 1 (4 on Tofino 2);
- a register belongs to one gress: RegisterActions of one register executed
  from ingress and egress;
- digests only from the ingress deparser.

It walks the checked program's typed IR (`ir.py`): registers, tables and actions are
recognised by the declarations names resolve to, not by their text, and a constant
operand by the value the checker folded (`SCALE + 1` is one, a divisor `QUARTER`
declared 4 is a power of two).
"""
from collections import namedtuple

from . import ir
from .errors import CompileError
from .types import ExternT

# One register access: where, and (method, index) for Register.read/write (None otherwise).
Access = namedtuple("Access", "loc merge")

SALU_CONDITIONS = {"tofino": 2, "tofino2": 4}
SALU_FORBIDDEN = {"tofino": ("*", "/", "%", "<<", ">>"), "tofino2": ("*", "<<", ">>")}
ARITH_OPS = ("+", "-", "&", "|", "^", "|+|", "|-|")
INGRESS_ROLES = ("ingress_parser", "ingress", "ingress_deparser")
REGISTERS = ("Register", "DirectRegister")
REGISTER_ACTIONS = ("RegisterAction", "DirectRegisterAction")


def lint(checked, target):
    """Return the list of CompileError problems (empty: Tofino can compile it) of a
    checked program (`ir.Program`)."""
    problems = _top_level(checked, target)
    gress_of_register = {}
    for blocks in checked.pipelines:
        for role, block in blocks.items():
            gress = "ingress" if role in INGRESS_ROLES else "egress"
            lint_block = BlockLint(block, target, role)
            lint_block.run()
            problems += lint_block.problems
            for reg, loc in lint_block.registers_used:
                first = gress_of_register.setdefault(reg, (gress, loc))
                if first[0] != gress:
                    problems.append(CompileError(loc, f"register '{reg}' is used in both ingress "
                                                      f"and egress (first at {first[1]}); Tofino "
                                                      f"registers belong to one gress"))
    unique = {(str(p.loc), p.message): p for p in problems}
    return sorted(unique.values(), key=lambda p: (str(p.loc.file), p.loc.line, p.loc.col))


def _top_level(checked, target):
    """The stateful-ALU rules for RegisterActions declared at the top level, the MAU's
    arithmetic rules for top-level actions and functions."""
    top = BlockLint(None, target, None)
    for inst in checked.instances.values():
        if _extern_kind(inst) in REGISTER_ACTIONS:
            top.salu(inst)
    for fn in checked.functions.values():
        for node in ir.walk(fn):
            top.arithmetic(node)
    return top.problems


def _extern_kind(decl):
    """The extern type name of an instance (None for anything else)."""
    if isinstance(decl, ir.Instance) and isinstance(decl.type, ExternT):
        return decl.type.name
    return None


def _register_of(decl):
    """The name of the register a Register or RegisterAction instance accesses, or None."""
    kind = _extern_kind(decl)
    if kind in REGISTERS:
        return decl.name
    if kind in REGISTER_ACTIONS and decl.args and isinstance(decl.args[0], ir.Ref):
        target = decl.args[0]
        return _register_of(target.decl) or target.name
    return None


def _is_const(e):
    """A compile-time value (the checker folded it)."""
    return e.value is not None


class BlockLint:
    """The rules for one parser or control (ir.Parser / ir.Control) of a pipeline."""

    def __init__(self, block, target, role):
        self.block = block
        self.target = target
        self.role = role
        self.problems = []
        self.registers_used = []       # (register, loc) executed in this block

    def problem(self, loc, msg):
        self.problems.append(CompileError(loc, msg))

    def run(self):
        for node in self.all_nodes():
            self.arithmetic(node)
            if self.role != "ingress_deparser" and _extern_kind(node) == "Digest":
                self.problem(node.loc, "Digest outside the ingress deparser: Tofino sends "
                                       "digests only from the ingress deparser")
        for local in self.block.locals:
            if _extern_kind(local) in REGISTER_ACTIONS:
                self.salu(local)
            if isinstance(local, ir.Instance) and local.block is not None:
                self.sub_block(local.block)
        if isinstance(self.block, ir.Control) and self.block.body is not None:
            self.accesses(self.block.body)

    def sub_block(self, block):
        """A parser or control instantiated in this block runs in its gress and role."""
        sub = BlockLint(block, self.target, self.role)
        sub.run()
        self.problems += sub.problems
        self.registers_used += sub.registers_used

    def all_nodes(self):
        """Every node of the block's code: its locals (not tables' keys, not RegisterAction
        bodies, linted as stateful ALUs), apply body and parser states' statements."""
        roots = [x for x in self.block.locals
                 if not isinstance(x, ir.Table) and not (isinstance(x, ir.Instance) and x.methods)]
        roots += [self.block.body] if isinstance(self.block, ir.Control) and self.block.body else []
        for st in getattr(self.block, "states", []):
            roots += st.stmts
        for r in roots:
            yield from ir.walk(r)

    # ------------------------------------------------------ MAU arithmetic
    def arithmetic(self, n):
        if not isinstance(n, ir.Binary):
            return
        if n.op == "*" and not (_is_const(n.left) or _is_const(n.right)):
            self.problem(n.loc, "multiplication of two run-time values: Tofino's MAU has no "
                                "multiplier (use a table on a quantised operand, or a constant)")
        elif n.op in ("/", "%"):
            v = n.right.value
            if v is None or v <= 0 or v & (v - 1):
                self.problem(n.loc, f"'{n.op}' by {'a run-time value' if v is None else v}: "
                                    f"Tofino divides only by powers of two (constant shifts)")
        elif n.op in ("<<", ">>") and not _is_const(n.right):
            self.problem(n.loc, f"shift by a run-time amount: Tofino shifts only by constants")

    # ------------------------------------------------------ stateful ALU
    def salu(self, inst):
        limit = SALU_CONDITIONS[self.target]
        for m in inst.methods:
            conditions = {}
            for n in ir.walk(m.body):
                if isinstance(n, ir.If):
                    for loc, key in _comparisons(n.cond):
                        conditions.setdefault(key, loc)
                elif isinstance(n, ir.Binary) and n.op in SALU_FORBIDDEN[self.target]:
                    self.problem(n.loc, f"'{n.op}' in a RegisterAction: the {self.target} "
                                        f"stateful ALU has no multiply or shift"
                                        + ("" if self.target == "tofino2" else
                                           " (divide/modulo: Tofino 2 only)"))
                elif isinstance(n, ir.Call):
                    self.problem(n.loc, "call in a RegisterAction: the stateful ALU cannot call "
                                        "externs or functions (compute the value before)")
                elif isinstance(n, ir.Assign) and _arith_count(n.rhs) > 1:
                    self.problem(n.rhs.loc, "more than one operation for one value in a "
                                            "RegisterAction: a stateful ALU computes `a op b`")
            if len(conditions) > limit:
                self.problem(list(conditions.values())[limit], f"{len(conditions)} distinct conditions in a "
                                                   f"RegisterAction; the {self.target} stateful "
                                                   f"ALU evaluates at most {limit}")

    # ------------------------------------------------------ register accesses per packet
    def accesses(self, stmt):
        """{register: Access of its first access} on the paths through `stmt`; a register
        reached twice on one path is reported at the second access."""
        if stmt is None:
            return {}
        if isinstance(stmt, ir.Block):
            return self.sequence(stmt.stmts)
        if isinstance(stmt, ir.If):
            return self.sequence_of([self.expr_accesses(stmt.cond),
                                     _either(self.accesses(stmt.then), self.accesses(stmt.other))])
        if isinstance(stmt, ir.Switch):
            cases = {}
            for body in stmt.bodies:
                cases = _either(cases, self.accesses(body))
            return self.sequence_of([self.expr_accesses(stmt.expr), cases])
        if isinstance(stmt, (ir.Assign, ir.CallStmt, ir.Variable, ir.Return)):
            return self.expr_accesses(stmt)
        return {}

    def sequence(self, stmts):
        return self.sequence_of([self.accesses(s) for s in stmts])

    def sequence_of(self, parts):
        seen = {}
        for part in parts:
            for reg, acc in part.items():
                first = seen.get(reg)
                if first is None:
                    seen[reg] = acc
                elif first.merge and acc.merge and first.merge == ("read", acc.merge[1]) \
                        and acc.merge[0] == "write":
                    seen[reg] = Access(first.loc, None)      # read-modify-write: one access
                else:
                    self.problem(acc.loc, f"register '{reg}' accessed twice for one packet (first "
                                          f"at {first.loc}); Tofino allows one RegisterAction "
                                          f"execution per register per packet")
        return seen

    def expr_accesses(self, node):
        return self.sequence_of([self.call_accesses(n) for n in ir.walk(node)
                                 if isinstance(n, ir.Call)])

    def call_accesses(self, call):
        f = call.func
        if isinstance(f, ir.Member) and isinstance(f.base, ir.Ref):
            obj, method = f.base.decl, f.name
            if isinstance(obj, ir.Table) and method == "apply":
                return self.table_accesses(obj)
            if isinstance(obj, ir.Instance) and isinstance(obj.block, ir.Control) and \
                    method == "apply":
                return self.accesses(obj.block.body)
            reg = _register_of(obj)
            if reg is not None and method in ("execute", "execute_log", "read", "write"):
                self.registers_used.append((reg, call.loc))
                merge = None
                if method in ("read", "write") and call.args:
                    merge = (method, _expr_key(call.args[0]))
                return {reg: Access(call.loc, merge)}
        if isinstance(f, ir.Ref) and isinstance(f.decl, (ir.Action, ir.Function)):
            # a second call is reported where it is made, not inside the callee
            return {reg: Access(call.loc, acc.merge)
                    for reg, acc in self.accesses(f.decl.body).items()}
        return {}

    def table_accesses(self, table):
        acc = {}
        for call in table.actions:
            if isinstance(call.callee, ir.Action):  # one action runs per apply: exclusive
                acc = _either(acc, self.accesses(call.callee.body))
        return acc


def _either(a, b):
    """Accesses of two exclusive paths."""
    out = dict(b)
    out.update(a)
    return out


def _comparisons(cond):
    """Distinct comparisons in a condition (as text keys with their location)."""
    return [(n.loc, _expr_key(n)) for n in ir.walk(cond)
            if isinstance(n, ir.Binary) and n.op in ("==", "!=", "<", "<=", ">", ">=")]


def _expr_key(e):
    if isinstance(e, ir.Ref):
        return e.name
    if isinstance(e, ir.Member):
        return _expr_key(e.base) + "." + e.name
    if isinstance(e, ir.Literal):
        return str(e.value)
    if isinstance(e, ir.Binary):
        return f"({_expr_key(e.left)} {e.op} {_expr_key(e.right)})"
    if isinstance(e, ir.Untyped):
        return e.form
    return type(e).__name__


def _arith_count(e):
    return sum(1 for n in ir.walk(e) if isinstance(n, ir.Binary) and n.op in ARITH_OPS)
