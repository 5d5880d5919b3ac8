"""Compile errors carrying a source location (file, line, column)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class SrcLoc:
    file: str
    line: int
    col: int

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}"


class CompileError(Exception):
    """An error in the user's program; printed as `file:line:col: error: msg`."""

    def __init__(self, loc, message):
        super().__init__(message)
        self.loc = loc
        self.message = message

    def render(self):
        return f"{self.loc}: error: {self.message}"


def unsupported(loc, construct):
    """Valid P4 this front-end does not lower: fail loudly, never miscompile."""
    return CompileError(loc, f"unsupported construct: {construct}")


@dataclass(frozen=True)
class CompileWarning:
    """A warning about the user's program, which still compiles (p4c's `warning:`, e.g. a
    call of a `@deprecated` declaration); printed as `file:line:col: warning: msg`."""
    loc: SrcLoc
    message: str

    def render(self):
        return f"{self.loc}: warning: {self.message}"
