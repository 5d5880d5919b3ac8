"""Run-time header stack indices in control and parser bodies: an AST-to-AST pass run
before lowering, as p4c's BMv2 mid-end does it (HSIndexSimplifier).

A statement that indexes a stack with a run-time value (`hdr.s[i].f = x;`,
`pkt.extract(hdr.s[i]);`, `if (hdr.u[i].a.isValid()) ...`) becomes an if/else-if
chain over the constant indices, `if (i == 0) <statement with [0]> else if (i == 1)
...`, so the back-end sees only constant indices (plain header instances; in a
parser the `if`s become select transitions). An index that is itself an operation is
computed once into a temporary (`hsiVar$N`) first. An out-of-range index runs no
branch. Action bodies keep run-time indices (BMv2's dereference_header_stack /
dereference_union_stack), as in p4c. Types and constants come from the checker phase
(check.py) through the compiler passed in (`type_of`, `const_value`, `resolve_type`).
"""
from dataclasses import fields, is_dataclass, replace

from . import ast as A
from .errors import CompileError
from .symbols import FuncSym
from .types import Bits, StackT


class IndexExpander:
    def __init__(self, checker):
        self.checker = checker
        self.count = 0

    def expand(self, stmts, scope):
        """`stmts` with each top-level statement's first run-time index expanded (the
        branches are expanded again when they are lowered)."""
        out = []
        for s in stmts:
            out += self.statement(s, scope)
        return out

    def statement(self, s, scope):
        if isinstance(s, A.VarDecl) and s.init is not None and not s.is_const and \
                self.find(s.init, scope):
            target = A.Name(s.loc, s.name)
            return [replace(s, init=None)] + self.statement(A.Assign(s.loc, target, s.init),
                                                           scope)
        searched = s.cond if isinstance(s, A.If) else \
            s.expr if isinstance(s, (A.Switch, A.SwitchChain)) \
            else s if isinstance(s, (A.Assign, A.CallStmt)) else None
        found = self.find(searched, scope) if searched is not None else None
        if found is None:
            return [s]
        pre = []
        if isinstance(found.index, (A.Binary, A.Ternary, A.Unary, A.Cast, A.Call)):
            index, pre = self.temporary(found.index, scope)
            if pre:
                s = self.rewrite(s, found, replace(found, index=index))
                found = replace(found, index=index)
        return pre + [self.chain(s, found, scope)]

    def chain(self, s, found, scope):
        size = self.checker.type_of(found.expr, scope).size
        loc = found.loc
        other = s.other if isinstance(s, A.If) else None
        for i in reversed(range(size)):
            branch = self.rewrite(s, found, replace(found, index=A.IntLit(loc, i)))
            test = A.Binary(loc, "==", found.index, A.IntLit(loc, i))
            if isinstance(branch, A.If):
                other = replace(branch, cond=A.Binary(loc, "&&", test, branch.cond), other=other)
            else:
                other = A.If(loc, test, branch, other)
        return other

    def rewrite(self, s, found, new):
        """`s` with the index `found` (and its equals) replaced by `new`; the expressions
        rebuilt around it are read from the program's IR as the ones they stand for
        (`Compiler.keep_nodes`)."""
        rebuilt = []
        out = _rewrite(s, found, new, rebuilt)
        self.checker.keep_nodes(rebuilt)
        return out

    def temporary(self, index, scope):
        """`hsiVar$N = index;` (its name, the statements): an operation or a call is
        evaluated once. (index, []) when its type is not known yet (it reads a local the
        lowering declares): then each test reads it again (no side effects: no call)."""
        t = self.index_type(index, scope)
        if t is None:
            return index, []
        if not isinstance(t, Bits):
            raise CompileError(index.loc, f"stack index must be bit<> or int<>, not {t}")
        name = f"hsiVar${self.count}"
        self.count += 1
        loc = index.loc
        tref = A.TypeRef(loc, "int" if t.signed else "bit", A.IntLit(loc, t.width))
        return A.Name(loc, name), [A.VarDecl(loc, [], tref, name, None),
                                   A.Assign(loc, A.Name(loc, name), index)]

    def index_type(self, index, scope):
        if isinstance(index, A.Call) and isinstance(index.func, A.Name):
            sym = scope.lookup(index.func.name)       # a function: its declared result
            if isinstance(sym, FuncSym):
                return self.checker.resolve_type(sym.decl.ret, sym.scope)
        try:
            return self.checker.type_of(index, scope)
        except CompileError:
            return None

    def find(self, node, scope):
        """The first (innermost, leftmost) stack index in `node` that is not a
        compile-time constant, or None."""
        if isinstance(node, list):
            for x in node:
                hit = self.find(x, scope)
                if hit is not None:
                    return hit
            return None
        if not is_dataclass(node) or isinstance(node, A.TypeRef):
            return None
        for f in fields(node):
            if f.name != "loc":
                hit = self.find(getattr(node, f.name), scope)
                if hit is not None:
                    return hit
        if isinstance(node, A.Index) and self.is_runtime_stack_index(node, scope):
            return node
        return None

    def is_runtime_stack_index(self, e, scope):
        try:
            if not isinstance(self.checker.type_of(e.expr, scope), StackT):
                return False
        except CompileError:        # a stack the lowering declares later: left to it
            return False
        try:
            return self.checker.const_value(e.index, scope) is None
        except CompileError:        # reads a local declared later: a run-time value (or an
            return True             # error the lowering reports; a constant folds there)


def _same(a, b):
    """Structural equality ignoring source locations (p4c's equiv)."""
    if is_dataclass(a) and is_dataclass(b):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name))
                                          for f in fields(a) if f.name != "loc" and f.compare)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _rewrite(node, old, new, rebuilt):
    """A copy of `node` with every expression equal to `old` replaced by `new`; each
    expression rebuilt around it is added to `rebuilt` with the one it stands for (of
    its type: a stack's elements have one type; and of its value, which a run-time
    index inside could not decide)."""
    if isinstance(node, list):
        return [_rewrite(x, old, new, rebuilt) for x in node]
    if not is_dataclass(node) or isinstance(node, A.TypeRef):
        return node
    if isinstance(node, A.Expr) and _same(node, old):
        return new
    out = replace(node, **{f.name: _rewrite(getattr(node, f.name), old, new, rebuilt)
                           for f in fields(node) if f.name != "loc" and f.init})
    if isinstance(node, A.Expr):
        rebuilt.append((out, node))
    return out
