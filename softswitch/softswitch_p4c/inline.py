"""Inlining as a pass of its own: each application of a sub-block and each call of an
action or function gets its own copy of what it inlines.

Once over the program, after the check and the other desugar passes, before lowering
(see README.md, "Architecture: phases"): in the apply blocks of the pipelines V1Switch
runs (ingress and egress) and in the states of its parser, each `inst.apply(args);` of
a sub-control or sub-parser instance becomes an `A.InlinedBlock` holding a copy of the
instance's control or parser (declarations, initializers, body or states) made for
that application, whose own applications are inlined in turn (through a constructor
parameter of a block type too: `C2(c1) c2;`). The emitter lowers the copy it is given
where it reaches the application; binding the arguments (as copies.py decided) and
naming the copy and its states (in the order it reaches them) stay with it.

Then each call of an action or function, wherever the emitter may lower it (every
control, parser and top-level action of the program, every copy), gets the callee's
copy for that call (`A.Call.inlined`), whose own calls get theirs in turn; the
emitter inlines the copy's body (`StmtMixin.inline_action` / `inline_function`).
"""
import copy
from dataclasses import fields, is_dataclass

from . import ast as A
from .symbols import BlockSym
from .values import Val


def inline_program(program, globals_scope):
    """Rewrites the applications of sub-blocks in V1Switch's parser and pipelines in
    place, then gives every call of an action or function its copy; returns the
    expressions copied, each with the one it copies (their nodes in the program's IR
    are the same)."""
    inliner = Inliner(program, globals_scope)
    for decl in applying_blocks(globals_scope):
        inliner.inline(block_body(decl), inliner.sub_blocks(decl, None, {}))
    for d in program.decls:
        if isinstance(d, (A.ControlDecl, A.ParserDecl)):
            inliner.block_calls(d)
        elif isinstance(d, A.ActionDecl):
            inliner.calls(d.body, inliner.top)
    return inliner.copied


def applying_blocks(globals_scope):
    """The parser, ingress and egress of `main` when it is a V1Switch of block
    instantiations (the emitter refuses any other shape as it lowers `main`)."""
    main = globals_scope.lookup("main")
    if not (isinstance(main, Val) and "instance" in main.extra):
        return []
    args = main.extra["instance"].args
    out = []
    for arg, kind in zip(args[:1] + args[2:4], (A.ParserDecl, A.ControlDecl, A.ControlDecl)):
        if isinstance(arg, A.Call) and isinstance(arg.func, A.Name) and not arg.args:
            decl = block_of(globals_scope.lookup(arg.func.name), kind)
            if decl is not None and all(decl is not o for o in out):
                out.append(decl)
    return out


def block_of(sym, kind):
    """The parser or control (`kind`) `sym` declares, when it has states or a body."""
    if isinstance(sym, BlockSym) and isinstance(sym.decl, kind) and block_body(sym.decl):
        return sym.decl
    return None


def block_body(decl):
    return decl.states if isinstance(decl, A.ParserDecl) else decl.body


class Inliner:
    def __init__(self, program, globals_scope):
        self.globals = globals_scope
        self.copied = []
        # the top level's actions and functions: name -> (it, None: its body sees the
        # top level)
        self.top = {d.name: (d, None) for d in program.decls
                    if isinstance(d, (A.ActionDecl, A.FunctionDecl))}

    def sub_blocks(self, decl, inst, outer):
        """The sub-block instances `decl` can apply, name -> (instance, its parser or
        control): its own locals of its own kind, and the instances its constructor
        parameters are bound to by `inst` (positionally: the emitter refuses named ones
        there) in `outer`."""
        env = {}
        for p, arg in zip(decl.ctor_params or [], inst.args if inst else []):
            if isinstance(arg, A.Name) and arg.name in outer:
                env[p.name] = outer[arg.name]
        for local in decl.locals:
            if isinstance(local, A.Instance):
                sub = block_of(self.globals.lookup(local.type.name), type(decl))
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
        if isinstance(node, (A.Stmt, A.SwitchCase, A.ParserState)):
            for f in fields(node):
                if f.name != "loc":
                    setattr(node, f.name, self.inline(getattr(node, f.name), env))
        return node

    def inlined(self, stmt, inst, decl, env):
        own = self.copy(decl)
        self.inline(block_body(own), self.sub_blocks(own, inst, env))
        return A.InlinedBlock(stmt.loc, stmt.call, A.Inlined(own, inst))

    def block_calls(self, decl):
        """The calls in a control or parser (its local actions' too, which see it)."""
        env = dict(self.top)
        env.update({d.name: (d, env) for d in decl.locals if isinstance(d, A.ActionDecl)})
        self.calls(decl, env)

    def calls(self, node, env):
        """Each call under `node` of an action or function `env` names (name -> (its
        declaration, the names its body sees; None: the top level's)) given its copy."""
        if isinstance(node, (list, tuple)):
            for x in node:
                self.calls(x, env)
            return
        if isinstance(node, A.Inlined):                  # another scope: its own names
            self.block_calls(node.decl)
            return
        if not (is_dataclass(node) and type(node).__module__ == A.__name__):
            return
        for f in fields(node):                  # a call's copy was walked when made
            if f.name != "loc" and not (f.name == "inlined" and isinstance(node, A.Call)):
                self.calls(getattr(node, f.name), env)
        if isinstance(node, A.Call) and isinstance(node.func, A.Name) and \
                node.inlined is None:
            hit = (self.top if node.func.absolute else env).get(node.func.name)
            if hit is not None:
                own = self.copy(hit[0])
                node.inlined = A.Inlined(own)
                self.calls(own.body, hit[1] or self.top)

    def copy(self, node):
        return copy_tree(node, self.copied)


def copy_tree(node, copied, instances=None):
    """A copy of an AST subtree: its nodes new (attributes set by the parser, such as
    `name_loc`, kept), locations and errors shared; each expression copied is added to
    `copied` with the one it copies. What is already inlined (a pipeline control also
    applied as a sub-control, a top-level action's calls) is copied as written, or, with
    `instances` (a dict: each instance copied, by id, its copy), with a copy of each
    copy (bind.py copies inlined code so)."""
    if isinstance(node, list):
        return [copy_tree(x, copied, instances) for x in node]
    if isinstance(node, tuple):
        return tuple(copy_tree(x, copied, instances) for x in node)
    if isinstance(node, A.InlinedBlock):
        if instances is None:
            return copy_tree(A.CallStmt(node.loc, node.call), copied)
        own = node.inlined
        return A.InlinedBlock(node.loc, copy_tree(node.call, copied, instances),
                              A.Inlined(copy_tree(own.decl, copied, instances),
                                        instances.get(id(own.instance), own.instance)))
    if not (is_dataclass(node) and type(node).__module__ == A.__name__):
        return node
    new = copy.copy(node)
    for f in fields(node):
        if f.name != "loc":
            setattr(new, f.name, copy_tree(getattr(node, f.name), copied, instances))
    if isinstance(node, A.Call):                # its copy's calls get copies of their own
        new.inlined = None if instances is None or node.inlined is None else \
            A.Inlined(copy_tree(node.inlined.decl, copied, instances))
    if isinstance(node, A.Instance) and instances is not None:
        instances[id(node)] = new
    if isinstance(node, A.Expr):
        copied.append((new, node))
    return new
