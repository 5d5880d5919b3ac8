"""AST node classes for the P4-16 subset the front-end understands.

Every node has `loc` (SrcLoc). Annotations are kept as a list of `Annotation`.
"""
from dataclasses import dataclass, field
from typing import Any, List, Optional


@dataclass
class Annotation:
    loc: Any
    name: str
    args: list            # list of Expr (strings, ints, names) or raw token texts


def name_loc(e):
    """Location of the member name in `x.name` (where 'no such member' errors point)."""
    return getattr(e, "name_loc", e.loc)


def describe(e):
    """The source text of an expression, as the error messages and p4c's key names quote it."""
    if isinstance(e, Name):
        return e.name
    if isinstance(e, Member):
        return f"{describe(e.expr)}.{e.name}"
    if isinstance(e, Index):
        return f"{describe(e.expr)}[{describe(e.index)}]"
    if isinstance(e, IntLit):
        return f"{e.width}{'s' if e.signed else 'w'}{e.value}" if e.width else str(e.value)
    if isinstance(e, Call):
        return f"{describe(e.func)}({', '.join(describe(a) for a in e.args)})"
    if isinstance(e, Slice):
        return f"{describe(e.expr)}[{describe(e.hi)}:{describe(e.lo)}]"
    if isinstance(e, BoolLit):
        return str(e.value).lower()
    if isinstance(e, Binary):                 # p4c names such keys by their text
        return f"{describe(e.left)} {e.op} {describe(e.right)}"
    if isinstance(e, Unary):
        return f"{e.op}{describe(e.expr)}"
    if isinstance(e, Cast):
        return f"({_type_text(e.type)}){describe(e.expr)}"
    return type(e).__name__.lower()


def _type_text(tr):
    if tr.width is not None and isinstance(tr.width, IntLit):
        return f"{tr.name}<{tr.width.value}>"
    return tr.name


def find_annotation(annos, name):
    for a in annos or ():
        if a.name == name:
            return a
    return None


# ---------------------------------------------------------------- types
@dataclass
class TypeRef:
    loc: Any
    name: str                       # "bit", "int", "varbit", "bool", "error", "string",
    width: Any = None               # "void", "_", or a declared type name; width: Expr
    args: List["TypeRef"] = field(default_factory=list)
    stack_size: Any = None          # Expr, for T[N]
    inner: Optional["TypeRef"] = None   # element type when stack_size is set


# ---------------------------------------------------------------- expressions
@dataclass
class Expr:
    loc: Any


@dataclass
class IntLit(Expr):
    value: int
    width: Optional[int] = None
    signed: bool = False


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class StrLit(Expr):
    value: str


@dataclass
class Name(Expr):
    name: str
    absolute: bool = False          # `.name`


@dataclass
class Member(Expr):
    expr: Expr
    name: str


@dataclass
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass
class Unary(Expr):
    op: str
    expr: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    type: TypeRef
    expr: Expr


@dataclass
class Call(Expr):
    func: Expr
    type_args: List[TypeRef]
    args: List[Any]                 # Expr or NamedArg
    # a call of an action or function: the callee's copy for it (inline.py); not part
    # of what the call is (equality, hsindex's structural comparison)
    inlined: Any = field(default=None, compare=False, repr=False)


@dataclass
class NamedArg(Expr):
    name: str
    value: Expr


@dataclass
class ListExpr(Expr):
    items: List[Expr]


@dataclass
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass
class Range(Expr):
    lo: Expr
    hi: Expr


@dataclass
class DefaultExpr(Expr):           # `default` or `_` in keysets
    pass


@dataclass
class TypeExpr(Expr):              # a type used as an expression (e.g. `bit<8>` in casts)
    type: TypeRef


# ---------------------------------------------------------------- statements
@dataclass
class Stmt:
    loc: Any


@dataclass
class Block(Stmt):
    stmts: List[Stmt]


@dataclass
class Assign(Stmt):
    lhs: Expr
    rhs: Expr


@dataclass
class CallStmt(Stmt):
    call: Call


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt]


@dataclass
class SwitchCase:
    loc: Any
    label: Any                      # Expr or DefaultExpr
    body: Optional[Block]           # None = fall through


@dataclass
class Switch(Stmt):
    expr: Expr
    cases: List[SwitchCase]


@dataclass
class SwitchChain(Stmt):            # written by desugar.switches_as_ifs, never parsed
    expr: Expr                      # the switch's value, for the back-end's rules on it
    chain: Stmt                     # its if/else-if chain (desugar.switch_as_ifs)


@dataclass
class SplitStmt(Stmt):              # written by desugar.split_conditions, never parsed
    original: Stmt                  # the statement as written (the unroller reads its jumps)
    stmts: list                     # what it became: its table tests and calls first
    temporaries: list               # the bools they declare, in the order made
    error: Any = None               # a CompileError the rewrite met, raised when reached


@dataclass
class Temp(Stmt):                   # written by order.py, never parsed
    name: str                       # `tmp$N`: no P4 identifier clashes with it
    value: Expr                     # evaluated here, once; `name` stands for its value


class Inlined:
    """One application's or call's own copy of a sub-block's, action's or function's
    declaration (inline.py). Not a
    dataclass, so the passes walking the applying block's statements do not enter it:
    the copy is another scope."""

    def __init__(self, decl, instance=None):
        self.decl = decl
        self.instance = instance        # a sub-block's: the A.Instance applied
        self.copies = None              # the parameters given a temporary (copies.py)


@dataclass
class InlinedBlock(Stmt):           # written by inline.inline_program, never parsed
    call: Call                      # the application as written, `inst.apply(args)`
    inlined: Inlined                # the sub-control's or sub-parser's copy for it


@dataclass
class For(Stmt):                    # for (init; cond; updates) body
    init: list
    cond: Optional[Expr]
    updates: list
    body: Stmt


@dataclass
class ForIn(Stmt):                  # for (T name in range) body
    type: TypeRef
    name: str
    range: Expr
    body: Stmt


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Optional[Expr]


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Empty(Stmt):
    pass


@dataclass
class VarDecl(Stmt):
    annos: list
    type: TypeRef
    name: str
    init: Optional[Expr]
    is_const: bool = False


@dataclass
class Instance(Stmt):              # `T<args>(ctor args) name;` (also a declaration)
    annos: list
    type: TypeRef
    args: List[Expr]
    name: str
    initializer: Optional[list] = None   # `= { methods };`: abstract methods implemented


@dataclass
class Transition(Stmt):
    next: Optional[str]             # direct transition
    select: Optional[List[Expr]] = None
    cases: Optional[list] = None    # list of (loc, keyset Expr, state name)


# ---------------------------------------------------------------- declarations
@dataclass
class Param:
    loc: Any
    annos: list
    direction: str                  # "", "in", "out", "inout"
    type: TypeRef
    name: str
    default: Optional[Expr] = None


@dataclass
class Decl:
    loc: Any
    annos: list
    name: str


@dataclass
class ConstDecl(Decl):
    type: TypeRef
    value: Expr


@dataclass
class Typedef(Decl):
    type: TypeRef
    is_new_type: bool = False


@dataclass
class StructField:
    loc: Any
    annos: list
    type: TypeRef
    name: str


@dataclass
class StructLike(Decl):
    kind: str                       # "header", "header_union", "struct"
    fields: List[StructField]


@dataclass
class EnumDecl(Decl):
    base: Optional[TypeRef]
    members: list                   # list of (loc, name, Expr or None)


@dataclass
class ErrorDecl(Decl):
    members: list                   # list of (loc, name)


@dataclass
class MatchKindDecl(Decl):
    members: list


@dataclass
class Method:
    loc: Any
    annos: list
    ret: Optional[TypeRef]          # None for constructors
    name: str
    type_params: List[str]
    params: List[Param]
    abstract: bool = False


@dataclass
class ExternDecl(Decl):
    type_params: List[str]
    methods: List[Method]


@dataclass
class ExternFunc(Decl):
    method: Method


@dataclass
class FunctionDecl(Decl):
    ret: TypeRef
    type_params: List[str]
    params: List[Param]
    body: Block


@dataclass
class ActionDecl(Decl):
    params: List[Param]
    body: Block


@dataclass
class KeyElement:
    loc: Any
    annos: list
    expr: Expr
    match_kind: str
    match_loc: Any
    # written by order.py for a key with side effects (p4c's KeySideEffect): the
    # statements its table's apply runs first, and the key's name as it was written
    prep: list = field(default_factory=list)
    written: Optional[str] = None


@dataclass
class ActionRef:
    loc: Any
    annos: list
    name: Expr                      # Name
    args: Optional[List[Expr]]
    # the directional parameters bound here that need a temporary (copies.py)
    copies: Any = field(default=None, compare=False, repr=False)


@dataclass
class TableEntry:
    loc: Any
    annos: list
    keys: List[Expr]
    action: ActionRef
    priority: Optional[Expr] = None


@dataclass
class TableProperty:
    loc: Any
    annos: list
    name: str
    is_const: bool
    value: Any                      # list of KeyElement / ActionRef / TableEntry, or Expr


@dataclass
class TableDecl(Decl):
    properties: List[TableProperty]


@dataclass
class ParserState:
    loc: Any
    annos: list
    name: str
    stmts: List[Stmt]
    transition: Optional[Transition]


@dataclass
class ValueSetDecl(Decl):
    type: TypeRef
    size: Expr


@dataclass
class ParserDecl(Decl):
    type_params: List[str]
    params: List[Param]
    ctor_params: Optional[List[Param]]
    locals: list
    states: List[ParserState]       # empty for a parser type declaration


@dataclass
class ControlDecl(Decl):
    type_params: List[str]
    params: List[Param]
    ctor_params: Optional[List[Param]]
    locals: list
    body: Optional[Block]           # None for a control type declaration
    inits: list = field(default_factory=list)   # `T x = e;` locals as `x = e;` run first
                                                # (order.py writes them)


@dataclass
class PackageDecl(Decl):
    type_params: List[str]
    params: List[Param]


@dataclass
class Program:
    decls: list
