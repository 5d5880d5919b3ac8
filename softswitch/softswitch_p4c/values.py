"""Values produced by expression evaluation and the BMv2 JSON they lower to.

A `Val` carries its type, and either a compile-time constant, a storage
reference (field, header, stack, struct...) or a BMv2 JSON type-value object.
"""
import operator
from dataclasses import dataclass, field as dfield
from typing import Any

from .types import BoolT, Bits, IntT, storage_width


def hexstr(value, width=None):
    """BMv2 hexstr, zero-padded to whole bytes of `width` (as p4c writes it)."""
    digits = 2 * max(1, ((width or max(value.bit_length(), 1)) + 7) // 8)
    sign = "-" if value < 0 else ""
    return {"type": "hexstr", "value": f"{sign}0x{abs(value):0{digits}x}"}


def mask_of(width):
    return (1 << width) - 1


# ------------------------------------------------------------------ compile-time values
_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
              "|": operator.or_, "^": operator.xor, "==": operator.eq, "!=": operator.ne,
              "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
              "<<": operator.lshift, ">>": operator.rshift, "/": operator.floordiv,
              "%": operator.mod}


def wrap(value, t):
    """Truncate a constant to type t (two's complement for int<W>)."""
    if isinstance(value, bool) or not isinstance(t, Bits):
        return value
    value &= mask_of(t.width)
    if t.signed and value >> (t.width - 1):
        value -= 1 << t.width
    return value


def fold_binary(op, a, b, t, right_type=None):
    """`a op b` on compile-time operands (already converted to a common type where the
    operator needs one), as a value of the result type `t`; `right_type`: the right
    operand's type, for `++`. The one place the front-end computes constant operators:
    the checker's folding and the emitter's both call it."""
    if op in ("&&", "||"):
        return bool(a and b) if op == "&&" else bool(a or b)
    if op == "++":
        return wrap((a << right_type.width) | (b & mask_of(right_type.width)), t)
    if op in ("|+|", "|-|"):
        lo, hi = ((-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed
                  else (0, mask_of(t.width)))
        return min(hi, max(lo, a + b if op == "|+|" else a - b))
    return wrap(_OPERATORS[op](a, b), t)


def fold_unary(op, v, t):
    if op == "!":
        return not v
    if op == "+":
        return v
    return wrap(-v if op == "-" else ~v, t)


def expr(op, left, right, **extra):
    value = {"op": op, "left": _operand(left), "right": _operand(right)}
    for k, v in extra.items():
        value[k] = _operand(v)
    return {"type": "expression", "value": value}


def param(j):
    """A primitive or parser-op parameter. BMv2 reads an `expression` parameter's value as an
    expression node, so the node is wrapped once more (p4c's shape)."""
    if isinstance(j, dict) and j.get("type") in ("expression", "bool"):
        return {"type": "expression", "value": j}
    return j


def _operand(j):
    if isinstance(j, dict) and j.get("type") == "runtime_data":
        return {"type": "local", "value": j["value"]}
    return j


# ------------------------------------------------------------------ storage refs
@dataclass
class FieldRef:
    header: str
    field: str

    def json(self):
        return {"type": "field", "value": [self.header, self.field]}


@dataclass
class HeaderRef:
    name: str
    type: Any
    is_metadata: bool = False

    def json(self):
        return {"type": "header", "value": self.name}

    def member(self, name):
        return FieldRef(self.name, name)


@dataclass
class StackRef:
    name: str
    type: Any                       # StackT
    elems: list                     # HeaderRef per index (UnionRef in a union stack)
    union: bool = False             # a header union stack

    def json(self):
        return {"type": "header_union_stack" if self.union else "header_stack",
                "value": self.name}


@dataclass
class UnionRef:
    name: str
    type: Any
    members: dict                   # member name -> HeaderRef

    def json(self):
        return {"type": "header_union", "value": self.name}


@dataclass
class StructRef:
    type: Any
    members: dict                   # name -> Val


@dataclass
class DynHeaderRef:
    """A header chosen at run time: a header-valued BMv2 expression (`hdr.s[i]`:
    dereference_header_stack; `hdr.u[i].m`: access_union_header of
    dereference_union_stack). `candidates`: the headers it may be."""
    value: Any
    candidates: list
    type: Any

    def json(self):
        return self.value


@dataclass
class DynUnionRef:
    """A header union stack element chosen at run time (`hdr.u[i]`)."""
    stack: StackRef
    index_json: Any
    type: Any

    def json(self):
        return expr("dereference_union_stack", self.stack.json(), self.index_json)

    def member(self, name):
        """`hdr.u[i].name`: the member header of the chosen union (access_union_header)."""
        offset = [m for m, _ in self.type.fields].index(name)
        return DynHeaderRef(expr("access_union_header", self.json(), offset),
                            [u.members[name] for u in self.stack.elems],
                            self.type.field_type(name))


@dataclass
class Val:
    type: Any
    const: Any = None               # int or bool when known at compile time
    json: Any = None                # BMv2 type-value object for data values
    ref: Any = None                 # storage reference (lvalues, headers, structs...)
    is_boolexpr: bool = False       # json is a BMv2 boolean expression
    extra: dict = dfield(default_factory=dict)

    @property
    def is_const(self):
        return self.const is not None


def const_val(value, t):
    return Val(t, const=value)


def as_data(v):
    """The BMv2 data (integer) form of a scalar value."""
    if v.const is not None:
        c = int(v.const)
        width = storage_width(v.type) if not isinstance(v.type, IntT) else None
        if isinstance(v.type, Bits) and v.type.signed and c < 0:
            return hexstr(c, width)
        return hexstr(c, width)
    if v.is_boolexpr:
        return expr("b2d", None, v.json)
    if v.ref is not None and isinstance(v.ref, FieldRef):
        return v.ref.json()
    return v.json


def as_bool(v):
    """The BMv2 boolean form of a bool value."""
    if v.const is not None:
        return {"type": "bool", "value": bool(v.const)}
    if v.is_boolexpr:
        return v.json
    return expr("d2b", None, as_data(v))


def field_val(t, ref):
    return Val(t, ref=ref, json=ref.json())


def bool_expr(json):
    return Val(BoolT(), json=json, is_boolexpr=True)


def data_expr(t, json):
    return Val(t, json=json)


def storage_of(v):
    """The (header instance, field) pairs a value names or reads (field None: the whole
    header): `x = {..}` copies the items that read its destination first."""
    if "slice" in v.extra:
        v = v.extra["slice"][0]
    ref = v.ref
    if ref is None:
        return _fields_in(v.json)
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
        return set().union(*(storage_of(m) for m in ref.members.values()
                             if isinstance(m, Val)))
    return set()


def _fields_in(j):
    if isinstance(j, dict):
        found = {tuple(j["value"])} if j.get("type") == "field" else set()
        return found.union(*(_fields_in(x) for x in j.values()))
    if isinstance(j, list):
        return set().union(*(_fields_in(x) for x in j))
    return set()
