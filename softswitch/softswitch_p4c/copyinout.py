"""Copy-in/copy-out for inlined calls (P4-16 spec 6.8): which arguments need a temporary.

Inlining binds a parameter to the caller's storage. That is only right when nothing in
the call can reach the same storage under another name; otherwise the parameter gets
a temporary: copied in for `in`/`inout`/directionless, copied back for `out`/`inout`.
This module decides *which* parameters need that (the storage analysis); stmts.py
emits the copies. Storage is a set of (header instance, field) pairs, field None
meaning the whole header.
"""
from dataclasses import fields, is_dataclass

from . import ast as A
from .symbols import ActionSym, FuncSym
from .values import (DynHeaderRef, DynUnionRef, FieldRef, HeaderRef, StackRef, StructRef, UnionRef, Val)

EVERYTHING = "ALL"


def storage_of(v):
    """The storage an argument value names or reads."""
    if "slice" in v.extra:
        v = v.extra["slice"][0]
    ref = v.ref
    if ref is None:
        return _fields_in(v.json)
    return _ref_storage(ref)


def _ref_storage(ref):
    if isinstance(ref, FieldRef):
        return {(ref.header, ref.field)}
    if isinstance(ref, HeaderRef):
        return {(ref.name, None)}
    if isinstance(ref, StackRef):
        return {(h.name, None) for h in ref.elems}
    if isinstance(ref, DynHeaderRef):
        return {(h.name, None) for h in ref.candidates}
    if isinstance(ref, DynUnionRef):
        return {(h.name, None) for u in ref.stack.elems for h in u.members.values()}
    if isinstance(ref, UnionRef):
        return {(h.name, None) for h in ref.members.values()}
    if isinstance(ref, StructRef):
        out = set()
        for member in ref.members.values():
            out |= storage_of(member) if isinstance(member, Val) else set()
        return out
    return set()


def _fields_in(j):
    found = set()
    if isinstance(j, dict):
        if j.get("type") == "field":
            found.add(tuple(j["value"]))
        for x in j.values():
            found |= _fields_in(x)
    elif isinstance(j, list):
        for x in j:
            found |= _fields_in(x)
    return found


def overlap(a, b):
    if a == EVERYTHING or b == EVERYTHING:
        return bool(a) and bool(b)
    for h, f in a:
        for h2, f2 in b:
            if h == h2 and (f is None or f2 is None or f == f2):
                return True
    return False


def body_storage(body, parent_scope, own_names):
    """Storage of the caller's world that `body` mentions by name (EVERYTHING when it calls
    another action or function, whose body could reach anything)."""
    found = set()
    for name in _names(body):
        if name in own_names:
            continue
        sym = parent_scope.lookup(name)
        if isinstance(sym, (ActionSym, FuncSym)):
            return EVERYTHING
        if isinstance(sym, Val) and sym.ref is not None:
            found |= storage_of(sym)
    return found


def _names(node):
    """Every plain name used in a statement tree, and the locals it declares."""
    out = set()
    if isinstance(node, A.Name):
        out.add(node.name)
    elif isinstance(node, list):
        for x in node:
            out |= _names(x)
    elif is_dataclass(node) and not isinstance(node, A.TypeRef):
        for f in fields(node):
            if f.name != "loc":
                out |= _names(getattr(node, f.name))
    return out


def declared_locals(node):
    out = set()
    if isinstance(node, A.VarDecl):
        out.add(node.name)
    elif isinstance(node, list):
        for x in node:
            out |= declared_locals(x)
    elif is_dataclass(node) and not isinstance(node, (A.Expr, A.TypeRef)):
        for f in fields(node):
            if f.name != "loc":
                out |= declared_locals(getattr(node, f.name))
    return out


def params_needing_copies(params, bound, body, parent_scope, writes):
    """Names of the parameters that need a temporary. `writes`: storage the body writes by
    the caller's names (stmts.possible_writes)."""
    own = {p.name for p in params} | declared_locals(body)
    mentioned = None
    storage = {p.name: (set() if bound[p.name].const is not None else storage_of(bound[p.name]))
               for p in params}
    out = set()
    for p in params:
        mine = storage[p.name]
        if not mine:
            continue
        writes_back = p.direction in ("out", "inout")
        others = [q for q in params if q is not p and (
            writes_back or q.direction in ("out", "inout"))]
        if any(overlap(mine, storage[q.name]) for q in others):
            out.add(p.name)
            continue
        if writes_back:
            if mentioned is None:
                mentioned = body_storage(body, parent_scope, own)
            if overlap(mine, mentioned):
                out.add(p.name)
        elif overlap(mine, writes):
            out.add(p.name)
    return out
