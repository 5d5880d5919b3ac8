"""The typed intermediate representation (issue 18): what `check.py` makes of a parsed program.

Every expression carries `type`, its resolved type (a `types.py` type; None where the
checker does not track one: generic results, table apply results, non-values such as
actions), and every name, method and call carries the declaration it resolves to: an IR
declaration of its block (`Variable`, `Instance`, `Action`, `Function`, `Table`, `State`)
or, for a top-level declaration, the front-end's global symbol (`symbols.py`; a constant
is its `values.Val`). The passes and back-ends read the IR instead of resolving names
again. IR declarations keep `ast`, their source declaration, for the back-ends that
still take the AST (see README.md, "Architecture: phases").

Fields marked `ref()` point at declarations elsewhere in the program: `walk` does not
descend into them.
"""
from dataclasses import dataclass, field, fields
from typing import Any, List, Optional


def ref():
    """A field naming a declaration (resolved), not a child of the node."""
    return field(default=None, metadata={"ref": True}, repr=False)


@dataclass(eq=False)
class Node:
    loc: Any


# ------------------------------------------------------------------ expressions
@dataclass(eq=False)
class Expr(Node):
    """`value`: the compile-time value the checker folded (None: known at run time)."""
    type: Any
    value = None


@dataclass(eq=False)
class Literal(Expr):
    """An integer, bool or string literal."""
    value: Any


@dataclass(eq=False)
class Ref(Expr):
    """A name; a type name (`E.member`, `error.x`) has the type it names."""
    name: str
    decl: Any = ref()


@dataclass(eq=False)
class Member(Expr):
    """`base.name`: a field (`method` None) or a method of a header, extern or table."""
    base: Expr
    name: str
    method: Any = ref()          # ast.Method of an extern, or the method's name


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: List[Expr]
    callee: Any = ref()          # Action / Function / ast.Method called, when resolved


@dataclass(eq=False)
class Unary(Expr):
    op: str
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Cast(Expr):
    operand: Expr


@dataclass(eq=False)
class Slice(Expr):
    base: Expr
    hi: int
    lo: int


@dataclass(eq=False)
class ListExpr(Expr):
    items: List[Expr]


@dataclass(eq=False)
class Untyped(Expr):
    """An expression form the checker does not type yet (index, mask, range, ...): its
    sub-expressions, checked; `form`: the AST class (Index, Mask, ...)."""
    parts: List[Expr]
    form: str


# ------------------------------------------------------------------ statements
@dataclass(eq=False)
class Block(Node):
    stmts: list


@dataclass(eq=False)
class Assign(Node):
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class CallStmt(Node):
    call: Expr


@dataclass(eq=False)
class If(Node):
    cond: Expr
    then: Node
    other: Optional[Node]


@dataclass(eq=False)
class Switch(Node):
    expr: Expr
    bodies: list                 # the cases' bodies (None: falls through)


@dataclass(eq=False)
class Loop(Node):
    """`for (init; cond; updates) body`, or `for (T v in range) body` (`init`: the loop
    variable, `cond`: the range)."""
    init: list
    cond: Optional[Expr]
    updates: list
    body: Node


@dataclass(eq=False)
class Jump(Node):
    """`break` or `continue` (`kind`)."""
    kind: str


@dataclass(eq=False)
class Return(Node):
    value: Optional[Expr]


@dataclass(eq=False)
class Exit(Node):
    pass


@dataclass(eq=False)
class Transition(Node):
    select: List[Expr]           # empty for a direct transition
    keysets: List[Expr]          # one per case
    targets: list = ref()        # State / "accept" / "reject", one per case (or the one)


# ------------------------------------------------------------------ declarations
@dataclass(eq=False)
class Decl(Node):
    name: str
    ast: Any = field(default=None, repr=False)


@dataclass(eq=False)
class Variable(Decl):
    """A parameter, constructor parameter, local variable, local constant or value set
    (`kind`: param | ctor | var | const | value_set); a constant's `value`, folded;
    `read_only`: a parameter its block or callable may not write."""
    type: Any = None
    kind: str = "var"
    init: Optional[Expr] = None
    value: Any = None
    read_only: bool = False


@dataclass(eq=False)
class Instance(Decl):
    """An extern instance (`methods`: the abstract methods its initializer implements), or
    an instance of a parser or control type inside a block (`block`: that block, checked
    for this instance)."""
    type: Any = None
    args: List[Expr] = field(default_factory=list)
    methods: list = field(default_factory=list)
    block: Any = ref()


@dataclass(eq=False)
class Function(Decl):
    """A function, or an abstract extern method implemented in an initializer."""
    params: list = field(default_factory=list)
    body: Optional[Block] = None


@dataclass(eq=False)
class Action(Decl):
    params: list = field(default_factory=list)
    body: Optional[Block] = None


@dataclass(eq=False)
class Entry(Node):
    """A `const entries` entry: its key values, action call and priority."""
    keys: List[Expr]
    action: Call
    priority: Optional[Expr]


@dataclass(eq=False)
class Property(Node):
    """A table property other than key, actions, default_action and entries."""
    name: str
    value: Expr


@dataclass(eq=False)
class Table(Decl):
    """Actions (list, default, entries) are calls whose `callee` is the Action, or the
    global symbol of a top-level one not checked into the IR (NoAction)."""
    keys: List[Expr] = field(default_factory=list)
    actions: List[Call] = field(default_factory=list)
    default_action: Optional[Call] = None
    entries: List[Entry] = field(default_factory=list)
    properties: List[Property] = field(default_factory=list)


@dataclass(eq=False)
class State(Decl):
    stmts: list = field(default_factory=list)
    transition: Optional[Transition] = None


@dataclass(eq=False)
class Parser(Decl):
    params: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    states: List[State] = field(default_factory=list)


@dataclass(eq=False)
class Control(Decl):
    params: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    body: Optional[Block] = None


@dataclass(eq=False)
class Program:
    """A checked TNA/T2NA program: `pipelines`, one {role: Parser | Control} per Pipeline of
    `Switch`; `instances`, the top-level extern instances by name; `functions`, the
    top-level actions and functions by name; `nodes`, every AST expression's node,
    id(AST expression) -> (it, its node) (`check.record`; `node_of` reads it), for the
    lowering that still rewrites the AST (tna_lower.py); `warnings`, the checker's
    (errors.CompileWarning)."""
    ast: Any
    pipelines: list
    instances: dict
    functions: dict
    nodes: dict = field(default_factory=dict, repr=False)
    warnings: list = field(default_factory=list)

    def node_of(self, e):
        """AST expression `e`'s node, None when the checker did not keep one."""
        kept = self.nodes.get(id(e))
        return kept[1] if kept is not None and kept[0] is e else None


def children(node):
    """The IR nodes directly inside `node` (declarations it refers to excluded)."""
    for f in fields(node):
        if f.metadata.get("ref") or f.name == "ast":
            continue
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list):
            yield from (x for x in value if isinstance(x, Node))


def walk(node):
    """`node` and every IR node inside it, depth first, in source order."""
    yield node
    for c in children(node):
        yield from walk(c)


def storage_root(node):
    """The expression an lvalue's fields, elements and slices are taken from (`a` of
    `a.b[i][3:0]`): a Ref when `node` names storage."""
    while isinstance(node, (Member, Slice)) or isinstance(node, Untyped) and node.form == "Index":
        node = node.parts[0] if isinstance(node, Untyped) else node.base
    return node


def settled(node):
    """Every expression inside IR node `node` has a value the checker knew, so checked in
    any scope it has the same values and raises nothing the checker did not: a value read
    from the program's IR whose expression the emitter does not lower (a constant index,
    a keyset value, the bounds and jump conditions of a loop the checker unrolls) needs
    it; `c ? 0 : 8w1 / n` has a value while `8w1 / n` has none, and
    `n` bound to 0 in the emitter's scope is a division by zero there."""
    return all(n.value is not None for n in walk(node) if isinstance(n, Expr))
