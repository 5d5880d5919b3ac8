"""Symbols bound in scopes, and the scope chain."""
from dataclasses import dataclass, field
from typing import Any

from .errors import CompileError


@dataclass
class TypeSym:
    type: Any


@dataclass
class ActionSym:
    decl: Any
    control: Any = None             # ControlInfo of the enclosing control, or None
    scope: Any = None               # scope the action body resolves names in


@dataclass
class FuncSym:
    decl: Any
    scope: Any = None


@dataclass
class ExternFuncSym:
    name: str
    overloads: list                 # of ast.Method


@dataclass
class BlockSym:
    decl: Any                       # ParserDecl / ControlDecl / PackageDecl


@dataclass
class ExternInstance:
    name: str                       # fully qualified (BMv2 JSON / P4Info name)
    type: Any                       # ExternT
    args: list                      # constructor argument Vals
    loc: Any
    annos: list
    info: dict = field(default_factory=dict)


@dataclass
class TableSym:
    decl: Any
    name: str                       # fully qualified
    control: Any
    scope: Any
    node: Any = None                # lowered TableNode, once applied


@dataclass
class ValueSetSym:
    name: str
    type: Any
    size: int
    loc: Any
    annos: list


@dataclass
class SubControlSym:
    """A control instantiated inside another control; `inst.apply(...)` inlines it."""
    name: str
    decl: Any
    loc: Any
    ctor_args: dict = field(default_factory=dict)   # constructor parameter -> constant Val
    applied: int = 0                                  # applications lowered so far
    externs: dict = field(default_factory=dict)     # extern instances, shared by them
    owner_name: str = ""                              # the declaring control's qualified name


@dataclass
class StateSym:
    name: str


class Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.names = {}

    def declare(self, name, sym, loc):
        """`name` declared here: once at the top level (the declare phase's rule); in a
        block, the checker's rule (check.py), and the lowering's scopes just bind it."""
        if name in self.names and self.parent is None:
            raise CompileError(loc, f"duplicate declaration of '{name}'")
        self.names[name] = sym

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def root(self):
        s = self
        while s.parent is not None:
            s = s.parent
        return s
