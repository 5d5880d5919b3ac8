"""Constant bindings per copy: each sub-control copy inline.py made has its constructor
arguments bound as constants, and the loops they decide are unrolled in the copy.

Once over the program, after inlining and before lowering (README.md, "Architecture:
phases"). Starting from the pipelines V1Switch runs, each block is checked again
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
"""
from dataclasses import fields, is_dataclass

from . import ast as A
from . import ir
from .check import BlockChecker, check_functions, convert
from .errors import CompileError
from .inline import applying_blocks
from .types import BlockT
from .unroll import replace_loops


def bind_program(comp, program):
    """Unrolls, in every sub-control copy under V1Switch's ingress and egress, the loops
    its constructor arguments decide."""
    binder = Binder(comp, check_functions(comp, program, {}))
    for decl in applying_blocks(comp.globals):
        if isinstance(decl, A.ControlDecl):
            binder.control(decl, {})


class Binder:
    def __init__(self, comp, top):
        self.comp = comp
        self.top = top                  # the top level's actions and functions, checked
        self.arguments = {}             # id(A.Instance) -> its constructor parameters' values

    def control(self, decl, values):
        """Check control `decl` (a copy, or a pipeline) with its constructor parameters bound
        to `values`; unroll the loops that decides in it, then bind its applications'
        copies."""
        checker = BlockChecker(self.comp, decl, {}, self.top)
        checker.ctor_values, checker.unrolled = values, {}
        try:
            checked = checker.block()
        except CompileError:
            return                      # the emitter reports it where it reaches it
        for inst in checked.locals:
            if isinstance(inst, ir.Instance) and isinstance(inst.type, BlockT):
                self.arguments[id(inst.ast)] = self.constructor_values(inst)
        applied = applications(decl.body, [])
        if checker.unrolled:
            replace_loops([decl], checker.unrolled)
        for app in applied:
            copy = app.inlined
            if isinstance(copy.decl, A.ControlDecl):
                self.control(copy.decl, self.arguments.get(id(copy.instance), {}))

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


def applications(node, found):
    """The sub-block applications (A.InlinedBlock) under statement `node`, each once, not
    inside their copies (another scope)."""
    if isinstance(node, list):
        for x in node:
            applications(x, found)
    elif isinstance(node, A.InlinedBlock):
        if all(node is not x for x in found):
            found.append(node)
    elif is_dataclass(node) and not isinstance(node, A.Expr):
        for f in fields(node):
            if f.name != "loc":
                applications(getattr(node, f.name), found)
    return found
