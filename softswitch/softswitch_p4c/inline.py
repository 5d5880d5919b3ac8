"""Inlining as a pass of its own: each application of a sub-control gets its own copy.

Once over the program, after the check and the other desugar passes, before lowering
(see README.md, "Architecture: phases"): in the apply blocks of the pipelines V1Switch
runs (ingress and egress), each `inst.apply(args);` of a sub-control instance becomes
an `A.InlinedControl` holding a copy of the instance's control (declarations,
initializers and body) made for that application, whose own applications are inlined
in turn (through a constructor parameter of a control type too: `C2(c1) c2;`). The
emitter lowers the copy it is given where it reaches the application; binding the
arguments (copy-in/copy-out decides on storage) and naming the copy (`<Outer>.<inst>`,
`_N` from the second application reached on) stay with it.
"""
import copy
from dataclasses import fields, is_dataclass

from . import ast as A
from .symbols import BlockSym
from .values import Val


def inline_subcontrols(program, globals_scope):
    """Rewrites the pipelines' sub-control applications in place; returns the expressions
    copied, each with the one it copies (their nodes in the program's IR are the same)."""
    inliner = Inliner(globals_scope)
    for decl in pipeline_controls(globals_scope):
        inliner.inline(decl.body, inliner.sub_controls(decl, None, {}))
    return inliner.copied


def pipeline_controls(globals_scope):
    """The ingress and egress controls of `main` when it is a V1Switch of block
    instantiations (the emitter refuses any other shape as it lowers `main`)."""
    main = globals_scope.lookup("main")
    if not (isinstance(main, Val) and "instance" in main.extra):
        return []
    out = []
    for arg in main.extra["instance"].args[2:4]:
        if isinstance(arg, A.Call) and isinstance(arg.func, A.Name) and not arg.args:
            decl = control_with_body(globals_scope.lookup(arg.func.name))
            if decl is not None and decl not in out:
                out.append(decl)
    return out


def control_with_body(sym):
    if isinstance(sym, BlockSym) and isinstance(sym.decl, A.ControlDecl) and \
            sym.decl.body is not None:
        return sym.decl
    return None


class Inliner:
    def __init__(self, globals_scope):
        self.globals = globals_scope
        self.copied = []

    def sub_controls(self, decl, inst, outer):
        """The sub-control instances `decl`'s body can apply, name -> (instance, control):
        its own locals, and the instances its constructor parameters are bound to by
        `inst` (positionally: the emitter refuses named ones there) in `outer`."""
        env = {}
        for p, arg in zip(decl.ctor_params or [], inst.args if inst else []):
            if isinstance(arg, A.Name) and arg.name in outer:
                env[p.name] = outer[arg.name]
        for local in decl.locals:
            if isinstance(local, A.Instance):
                sub = control_with_body(self.globals.lookup(local.type.name))
                if sub is not None:
                    env[local.name] = (local, sub)
        return env

    def inline(self, node, env):
        """Each application under statement `node` (lists in place) of an instance of
        `env` replaced by its inlined copy."""
        if isinstance(node, list):
            for i, x in enumerate(node):
                node[i] = self.inline(x, env)
            return node
        if isinstance(node, A.CallStmt):
            f = node.call.func
            if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.expr, A.Name) \
                    and f.expr.name in env:
                return self.inlined(node, *env[f.expr.name], env)
            return node
        if isinstance(node, (A.Stmt, A.SwitchCase)):
            for f in fields(node):
                if f.name != "loc":
                    setattr(node, f.name, self.inline(getattr(node, f.name), env))
        return node

    def inlined(self, stmt, inst, decl, env):
        own = self.copy(decl)
        self.inline(own.body, self.sub_controls(own, inst, env))
        return A.InlinedControl(stmt.loc, stmt.call, A.Inlined(own))

    def copy(self, node):
        """A copy of an AST subtree: its nodes new (attributes set by the parser, such as
        `name_loc`, kept), locations and errors shared. An application already inlined
        (a pipeline control also applied as a sub-control) is copied as written."""
        if isinstance(node, list):
            return [self.copy(x) for x in node]
        if isinstance(node, tuple):
            return tuple(self.copy(x) for x in node)
        if isinstance(node, A.InlinedControl):
            return self.copy(A.CallStmt(node.loc, node.call))
        if not (is_dataclass(node) and type(node).__module__ == A.__name__):
            return node
        new = copy.copy(node)
        for f in fields(node):
            if f.name != "loc":
                setattr(new, f.name, self.copy(getattr(node, f.name)))
        if isinstance(node, A.Expr):
            self.copied.append((new, node))
        return new
