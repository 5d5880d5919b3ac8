"""Semantic types of the front-end."""
from dataclasses import dataclass, field


class Type:
    is_scalar = False


@dataclass(frozen=True)
class Bits(Type):
    width: int
    signed: bool = False
    type_name: str = field(default=None, compare=False)   # set for `type bit<W> Name`
    is_scalar = True

    def __str__(self):
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class IntT(Type):              # arbitrary-precision integer (untyped literal)
    is_scalar = True

    def __str__(self):
        return "int"


@dataclass(frozen=True)
class BoolT(Type):
    is_scalar = True

    def __str__(self):
        return "bool"


@dataclass(frozen=True)
class StringT(Type):
    def __str__(self):
        return "string"


@dataclass(frozen=True)
class VoidT(Type):
    def __str__(self):
        return "void"


@dataclass(frozen=True)
class ErrorT(Type):
    is_scalar = True

    def __str__(self):
        return "error"


@dataclass(frozen=True)
class MatchKindT(Type):
    def __str__(self):
        return "match_kind"


@dataclass(frozen=True)
class DontCareT(Type):
    def __str__(self):
        return "_"


@dataclass(frozen=True)
class VarbitT(Type):
    max_width: int

    def __str__(self):
        return f"varbit<{self.max_width}>"


@dataclass(eq=False)
class StructT(Type):
    """header, header_union or struct: `fields` is a list of (name, Type)."""
    kind: str
    name: str
    fields: list = field(default_factory=list)
    annos: list = field(default_factory=list)
    field_annos: dict = field(default_factory=dict)
    field_locs: dict = field(default_factory=dict)
    nested: dict = field(default_factory=dict)      # header field of struct type -> (StructT,
                                                    # {member: flat field name or nested pair})
    wide: dict = field(default_factory=dict)        # header field wider than 128 bits -> width

    def field_type(self, name):
        for n, t in self.fields:
            if n == name:
                return t
        return None

    def width(self):
        return sum(t.width for _, t in self.fields if isinstance(t, Bits))

    def __str__(self):
        return f"{self.kind} {self.name}"


@dataclass(eq=False)
class StackT(Type):
    elem: StructT
    size: int

    def __str__(self):
        return f"{self.elem.name}[{self.size}]"


@dataclass(eq=False)
class EnumT(Type):
    name: str
    members: dict                  # name -> int value
    base: Bits = None              # serializable enums only
    is_scalar = True

    def __str__(self):
        return f"enum {self.name}"


@dataclass(eq=False)
class ExternT(Type):
    name: str
    decl: object
    type_args: list = field(default_factory=list)

    def __str__(self):
        return f"extern {self.name}"


@dataclass(eq=False)
class TypeVar(Type):
    """An unbound type parameter of a generic extern: accepts any argument."""
    name: str

    def __str__(self):
        return self.name


@dataclass(eq=False)
class TupleT(Type):
    elems: list

    @property
    def fields(self):
        """A tuple stored like a struct with members "0", "1", ..."""
        return [(str(i), t) for i, t in enumerate(self.elems)]

    def __str__(self):
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(eq=False)
class BlockT(Type):
    """A parser, control or package type (for the V1Switch instantiation)."""
    kind: str
    decl: object

    def __str__(self):
        return f"{self.kind} {self.decl.name}"


def storage_width(t):
    """Width of a scalar in BMv2 (bool is 1 bit, enums and errors are 32 bits)."""
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT):
        return t.base.width if t.base else 32
    if isinstance(t, ErrorT):
        return 32
    raise TypeError(f"no storage width for {t}")


def is_header(t):
    return isinstance(t, StructT) and t.kind == "header"


def same_type(a, b):
    if isinstance(a, TupleT) and isinstance(b, TupleT):
        return len(a.elems) == len(b.elems) and all(map(same_type, a.elems, b.elems))
    if isinstance(a, (StructT, StackT, EnumT, ExternT)) or isinstance(b, (StructT, StackT, EnumT, ExternT)):
        if isinstance(a, StackT) and isinstance(b, StackT):
            return a.elem is b.elem and a.size == b.size
        return a is b
    return a == b
