"""Copy-in/copy-out as a pass (P4-16 6.8): which parameters of each inlined call, sub-block
application and table-bound action need a temporary.

Inlining binds a parameter to the caller's storage. That is only right when nothing in
the call can reach the same storage under another name; otherwise the parameter gets a
temporary: copied in for `in`/`inout`/directionless, copied back for `out`/`inout`. This
pass decides which, over the typed IR, inside bind.py's walk (each copy is checked there
with its constant arguments bound); the emitter reads the decision (`A.Inlined.copies`,
`A.ActionRef.copies`) and writes the copies (`StmtMixin.bind_callee_params`).

Storage is named by *paths*: a root declaration (an `ir.Variable` of the block V1Switch
runs, or a local of a block or callee) and the fields and stack indices below it
(`ANY_INDEX` for one known only at run time; a header union's members are the union,
since making one valid invalidates the others). A frame maps each parameter (its
ir.Variable) of a callee or sub-block bound without a copy to the paths of its argument,
so a path always starts at storage the pipeline owns or at a copy's own. Two paths
overlap when one is a prefix of the other.
"""
from . import ast as A
from . import ir
from .check import STACK_ELEMENTS
from .types import StackT, StructT

EVERYTHING = "ALL"
ANY_INDEX = "*"
NOTHING = frozenset()
WRITING_METHODS = ("setValid", "setInvalid", "push_front", "pop_front")
UNKNOWN_EFFECTS = (EVERYTHING, EVERYTHING)      # a body the checker could not check here


def paths(node, frame):
    """The paths expression `node` names (an lvalue: one) or reads."""
    if node is None or node.value is not None and ir.settled(node):
        return NOTHING                          # a constant has no storage
    if isinstance(node, ir.Ref):
        decl = node.decl
        if not isinstance(decl, ir.Variable) or decl.kind not in ("param", "var"):
            return NOTHING
        return frame.get(decl, frozenset({(decl,)}))
    if isinstance(node, ir.Member) and node.method is None:
        if isinstance(node.base.type, StructT) and node.base.type.kind == "header_union":
            return paths(node.base, frame)      # a member made valid invalidates the others
        below = ANY_INDEX if isinstance(node.base.type, StackT) and \
            node.name in STACK_ELEMENTS else node.name
        return frozenset(p + (below,) for p in paths(node.base, frame))
    if isinstance(node, ir.Untyped) and node.form == "Index":
        base, index = node.parts
        below = int(index.value) if index.value is not None else ANY_INDEX
        return frozenset(p + (below,) for p in paths(base, frame)) | \
            (paths(index, frame) if index.value is None else NOTHING)
    if isinstance(node, ir.Slice):
        return paths(node.base, frame)
    out = set()
    for child in ir.children(node):
        if isinstance(child, ir.Expr):
            out |= paths(child, frame)
    return frozenset(out)


def overlap(a, b):
    if a == EVERYTHING or b == EVERYTHING:
        return bool(a) and bool(b)
    return any(_prefix(p, q) or _prefix(q, p) for p in a for q in b)


def _prefix(p, q):
    if len(p) > len(q) or p[0] is not q[0]:
        return False
    return all(x == y or ANY_INDEX in (x, y) for x, y in zip(p[1:], q[1:]))


def needing_copies(params, bindings, effects):
    """Names of the parameters that need a temporary. `params`: (name, direction) pairs;
    `bindings`: name -> the paths of its argument; `effects`: (what the body mentions,
    what it writes) by names not its own, as `body_effects` gives them."""
    mentioned, writes = effects
    out = set()
    for name, direction in params:
        mine = bindings[name]
        if not mine:
            continue
        writes_back = direction in ("out", "inout")
        others = [q for q, d in params if q != name and (writes_back or d in ("out", "inout"))]
        if any(overlap(mine, bindings[q]) for q in others) or \
                overlap(mine, mentioned if writes_back else writes):
            out.add(name)
    return out


def body_effects(fn, frame, calling=()):
    """(paths mentioned, paths written) by action or function `fn` (checked, IR) through
    names that are not its own (parameters, locals). A call of another action or
    function mentions and may write its arguments, and what its body reaches by names
    not its own (a control's local action: the control's storage)."""
    own = {id(v) for v in fn.params} | {id(n) for n in ir.walk(fn.body)
                                        if isinstance(n, ir.Variable)}
    mentioned, writes = set(), set()
    for n in ir.walk(fn.body):
        if isinstance(n, ir.Ref) and id(n.decl) not in own:
            mentioned |= paths(n, frame)
        elif isinstance(n, ir.Call):
            callee = getattr(n.func, "decl", None)
            targets = list(n.args)
            if isinstance(n.func, ir.Member) and n.func.name in WRITING_METHODS:
                targets.append(n.func.base)
            for t in targets:               # an argument's direction aside: any may be out
                writes |= _written(t, own, frame)
            if isinstance(callee, (ir.Action, ir.Function)) and callee.body is not None:
                if callee in calling:
                    return UNKNOWN_EFFECTS
                more = body_effects(callee, frame, calling + (fn,))
                if more == UNKNOWN_EFFECTS:
                    return more
                mentioned |= more[0]
                writes |= more[1]
        elif isinstance(n, ir.Assign):
            writes |= _written(n.lhs, own, frame)
    return mentioned, writes


def _written(node, own, frame):
    """What writing lvalue `node` writes of storage not `own` (a callee's own names reach
    the caller only through their parameters, compared with each other)."""
    root = ir.storage_root(node)
    if not isinstance(root, ir.Ref) or id(root.decl) in own:
        return NOTHING
    return paths(node, frame)


def bound_paths(params, arg_asts, args, frame):
    """Parameter name -> the paths of its argument: `args`, the IR of the call's `arg_asts`
    (positional, or named: A.NamedArg); a parameter left to its default gets a constant."""
    if any(isinstance(a, A.NamedArg) for a in arg_asts):
        by_name = {a.name: node for a, node in zip(arg_asts, args)}
        chosen = [by_name.get(p.name) for p in params]
    else:
        chosen = list(args) + [None] * (len(params) - len(args))
    return {p.name: paths(node, frame) for p, node in zip(params, chosen)}
