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
"""
from collections import namedtuple

from . import ast as A
from .errors import CompileError

# One register access: where, and (method, index) for Register.read/write (None otherwise).
Access = namedtuple("Access", "loc merge")

SALU_CONDITIONS = {"tofino": 2, "tofino2": 4}
SALU_FORBIDDEN = {"tofino": ("*", "/", "%", "<<", ">>"), "tofino2": ("*", "<<", ">>")}
ARITH_OPS = ("+", "-", "&", "|", "^", "|+|", "|-|")
INGRESS_ROLES = ("ingress_parser", "ingress", "ingress_deparser")


def lint(tna_program, target):
    """Return the list of CompileError problems (empty: Tofino can compile it)."""
    registers = _global_registers(tna_program.program)
    consts = {d.name for d in tna_program.program.decls if isinstance(d, A.ConstDecl)}
    problems = _global_register_actions(tna_program.program, target, registers, consts)
    gress_of_register = {}
    for blocks in tna_program.pipelines:
        for role, decl in blocks.items():
            gress = "ingress" if role in INGRESS_ROLES else "egress"
            block = BlockLint(decl, target, registers, consts, gress, role)
            block.run()
            problems += block.problems
            for reg, loc in block.registers_used:
                first = gress_of_register.setdefault(reg, (gress, loc))
                if first[0] != gress:
                    problems.append(CompileError(loc, f"register '{reg}' is used in both ingress "
                                                      f"and egress (first at {first[1]}); Tofino "
                                                      f"registers belong to one gress"))
    unique = {(str(p.loc), p.message): p for p in problems}
    return sorted(unique.values(), key=lambda p: (str(p.loc.file), p.loc.line, p.loc.col))


def _global_register_actions(program, target, registers, consts):
    """The stateful-ALU rules for RegisterActions declared at the top level."""
    top = BlockLint(None, target, registers, consts, None, None)
    for d in program.decls:
        if isinstance(d, A.Instance) and d.type.name in ("RegisterAction", "DirectRegisterAction"):
            top.salu(d)
    return top.problems


def _global_registers(program):
    """Global Register instances and RegisterActions: name -> register name."""
    regs = {}
    for d in program.decls:
        if isinstance(d, A.Instance):
            _note_register(d, regs)
    return regs


def _note_register(d, regs):
    if d.type.name in ("Register", "DirectRegister"):
        regs[d.name] = d.name
    elif d.type.name in ("RegisterAction", "DirectRegisterAction") and d.args:
        target = d.args[0]
        if isinstance(target, A.Name):
            regs[d.name] = regs.get(target.name, target.name)


def _is_const(e, consts):
    if isinstance(e, A.IntLit):
        return True
    if isinstance(e, A.Name):
        return e.name in consts
    if isinstance(e, A.Cast):
        return _is_const(e.expr, consts)
    if isinstance(e, A.Binary):
        return _is_const(e.left, consts) and _is_const(e.right, consts)
    if isinstance(e, A.Unary):
        return _is_const(e.expr, consts)
    return False


def _const_value(e):
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Cast):
        return _const_value(e.expr)
    return None


def _children(node):
    for v in vars(node).values():
        if isinstance(v, (A.Expr, A.Stmt)):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, (A.Expr, A.Stmt)))


def _walk(node):
    yield node
    for c in _children(node):
        yield from _walk(c)


class BlockLint:
    """The rules for one parser or control of a pipeline."""

    def __init__(self, decl, target, global_regs, global_consts, gress, role):
        self.decl = decl
        self.target = target
        self.gress = gress
        self.role = role
        self.regs = dict(global_regs)
        self.consts = set(global_consts) - {p.name for p in getattr(decl, "params", [])}
        self.actions, self.tables, self.reg_actions = {}, {}, {}
        self.problems = []
        self.registers_used = []       # (register, loc) executed in this block

    def problem(self, loc, msg):
        self.problems.append(CompileError(loc, msg))

    def run(self):
        for local in getattr(self.decl, "locals", []):
            self.declare(local)
        for node in self.all_nodes():
            self.arithmetic(node)
            if self.role != "ingress_deparser" and isinstance(node, A.Instance) \
                    and node.type.name == "Digest":
                self.problem(node.loc, "Digest outside the ingress deparser: Tofino sends "
                                       "digests only from the ingress deparser")
        for inst in self.reg_actions.values():
            self.salu(inst)
        if isinstance(self.decl, A.ControlDecl) and self.decl.body is not None:
            self.accesses(self.decl.body)

    def declare(self, d):
        if isinstance(d, A.Instance):
            _note_register(d, self.regs)
            if d.type.name in ("RegisterAction", "DirectRegisterAction"):
                self.reg_actions[d.name] = d
        elif isinstance(d, A.ActionDecl):
            self.actions[d.name] = d
        elif isinstance(d, A.TableDecl):
            self.tables[d.name] = d
        elif isinstance(d, A.ConstDecl):
            self.consts.add(d.name)

    def all_nodes(self):
        roots = [x for x in getattr(self.decl, "locals", [])
                 if not (isinstance(x, A.Instance) and x.initializer)]
        roots += [self.decl.body] if isinstance(self.decl, A.ControlDecl) and self.decl.body else []
        for st in getattr(self.decl, "states", []) or []:
            roots += st.stmts
        for r in roots:
            for n in _walk(r) if isinstance(r, (A.Expr, A.Stmt)) else _walk_decl(r):
                yield n

    # ------------------------------------------------------ MAU arithmetic
    def arithmetic(self, n):
        if not isinstance(n, A.Binary):
            return
        if n.op == "*" and not (_is_const(n.left, self.consts) or _is_const(n.right, self.consts)):
            self.problem(n.loc, "multiplication of two run-time values: Tofino's MAU has no "
                                "multiplier (use a table on a quantised operand, or a constant)")
        elif n.op in ("/", "%"):
            v = _const_value(n.right)
            if v is None or v <= 0 or v & (v - 1):
                self.problem(n.loc, f"'{n.op}' by {'a run-time value' if v is None else v}: "
                                    f"Tofino divides only by powers of two (constant shifts)")
        elif n.op in ("<<", ">>") and not _is_const(n.right, self.consts):
            self.problem(n.loc, f"shift by a run-time amount: Tofino shifts only by constants")

    # ------------------------------------------------------ stateful ALU
    def salu(self, inst):
        limit = SALU_CONDITIONS[self.target]
        for m in inst.initializer or []:
            conditions = {}
            for n in _walk(m.body):
                if isinstance(n, A.If):
                    for loc, key in _comparisons(n.cond):
                        conditions.setdefault(key, loc)
                elif isinstance(n, A.Binary) and n.op in SALU_FORBIDDEN[self.target]:
                    self.problem(n.loc, f"'{n.op}' in a RegisterAction: the {self.target} "
                                        f"stateful ALU has no multiply or shift"
                                        + ("" if self.target == "tofino2" else
                                           " (divide/modulo: Tofino 2 only)"))
                elif isinstance(n, A.Call):
                    self.problem(n.loc, "call in a RegisterAction: the stateful ALU cannot call "
                                        "externs or functions (compute the value before)")
                elif isinstance(n, A.Assign) and _arith_count(n.rhs) > 1:
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
        if isinstance(stmt, A.Block):
            return self.sequence(stmt.stmts)
        if isinstance(stmt, A.If):
            return self.sequence_of([self.expr_accesses(stmt.cond),
                                     _either(self.accesses(stmt.then), self.accesses(stmt.other))])
        if isinstance(stmt, A.Switch):
            cases = {}
            for case in stmt.cases:
                cases = _either(cases, self.accesses(case.body))
            return self.sequence_of([self.expr_accesses(stmt.expr), cases])
        if isinstance(stmt, (A.Assign, A.CallStmt, A.VarDecl)):
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
        return self.sequence_of([self.call_accesses(n) for n in _walk(node)
                                 if isinstance(n, A.Call)])

    def call_accesses(self, call):
        f = call.func
        if isinstance(f, A.Member) and isinstance(f.expr, A.Name):
            obj, method = f.expr.name, f.name
            if obj in self.tables and method == "apply":
                return self.table_accesses(self.tables[obj])
            if obj in self.regs and method in ("execute", "execute_log", "read", "write"):
                self.registers_used.append((self.regs[obj], call.loc))
                merge = None
                if method in ("read", "write") and call.args:
                    merge = (method, _expr_key(call.args[0]))
                return {self.regs[obj]: Access(call.loc, merge)}
        if isinstance(f, A.Name) and f.name in self.actions:
            return self.accesses(self.actions[f.name].body)
        return {}

    def table_accesses(self, table):
        acc = {}
        for prop in table.properties:
            if prop.name == "actions":
                for ref in prop.value:
                    action = self.actions.get(ref.name.name)
                    if action is not None:          # one action runs per apply: exclusive
                        acc = _either(acc, self.accesses(action.body))
        return acc


def _either(a, b):
    """Accesses of two exclusive paths."""
    out = dict(b)
    out.update(a)
    return out


def _walk_decl(d):
    if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
        yield from _walk(d.body)
    elif isinstance(d, A.TableDecl):
        return
    elif isinstance(d, A.VarDecl) and d.init is not None:
        yield from _walk(d.init)


def _comparisons(cond):
    """Distinct comparisons in a condition (as text keys with their location)."""
    return [(n.loc, _expr_key(n)) for n in _walk(cond)
            if isinstance(n, A.Binary) and n.op in ("==", "!=", "<", "<=", ">", ">=")]


def _expr_key(e):
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Member):
        return _expr_key(e.expr) + "." + e.name
    if isinstance(e, A.IntLit):
        return str(e.value)
    if isinstance(e, A.Binary):
        return f"({_expr_key(e.left)} {e.op} {_expr_key(e.right)})"
    return type(e).__name__


def _arith_count(e):
    return sum(1 for n in _walk(e) if isinstance(n, A.Binary) and n.op in ARITH_OPS)
