"""The compilation pipeline: cpp -> parse -> check and lower -> BMv2 JSON + P4Info."""
import os

from .compiler import Compiler
from .errors import CompileError, SrcLoc
from .p4info import build_p4info, to_text
from .parser import parse
from .preprocess import preprocess
from .tna import ARCH_DEFINES, CELL_BYTES, check_program
from .tna_lower import TnaCompiler, lower
from .tofino_lint import lint

TOFINO_TARGET = {"tna": "tofino", "t2na": "tofino2"}


def compile_file(path, include_dirs=(), defines=()):
    """Return (BMv2 JSON dict, P4Info text); raises CompileError on bad input."""
    bmv2_json, info = compile_to_objects(path, include_dirs, defines)
    return bmv2_json, to_text(info)


def compile_to_objects(path, include_dirs=(), defines=(), warnings=None):
    """Like compile_file but returns the P4Info message (for tests and tools). The
    program's warnings (errors.CompileWarning) are appended to the list `warnings`."""
    if not os.path.isfile(path):
        raise CompileError(SrcLoc(path, 1, 1), "no such file")
    text = preprocess(path, include_dirs, defines)
    return compile_ast(parse(text, path), path, warnings=warnings)


def compile_ast(program, source_name, backend=Compiler, warnings=None):
    """Everything after parsing, on a V1Switch program's AST (`parser.parse`): returns
    (BMv2 JSON dict, P4Info message); its warnings (errors.CompileWarning, the checker's)
    are appended to the list `warnings`. `backend`: the BMv2 back-end class, or a subclass
    adding extern handlers (`fn_NAME(self, call, args, ctx, dest)`, see stmts.py)."""
    comp = backend(program, source_name)
    bmv2_json, info = comp.compile(), build_p4info(comp)
    if warnings is not None:
        warnings += comp.warnings
    return bmv2_json, info


def compile_source(source, workdir, name="prog.p4"):
    """Compile P4 source text (written to workdir/name); returns (JSON, P4Info message)."""
    path = os.path.join(str(workdir), name)
    with open(path, "w") as f:
        f.write(source)
    return compile_to_objects(path)


def compile_tna_to_objects(path, arch, include_dirs=(), defines=(), warnings=None):
    """--arch tna|t2na on the built-in target: type-check, Tofino lint (its first problem
    raises: what bf-p4c refuses is not run either), lower to V1Switch (tna_lower.py);
    returns (BMv2 JSON dict, P4Info message), the warnings appended to `warnings`."""
    checked = check_tna_to_ir(path, arch, include_dirs, defines)
    problems = lint(checked, TOFINO_TARGET[arch])
    if problems:
        raise problems[0]
    compiled = compile_ast(lower(checked, CELL_BYTES[arch]), path, TnaCompiler)
    if warnings is not None:
        warnings += checked.warnings
    return compiled


def check_tna_file(path, arch, target, include_dirs=(), defines=()):
    """--arch tna|t2na: parse, type-check (CompileError on the first type error), then
    return the Tofino lint's problems for `target` (a list of CompileError)."""
    return lint(check_tna_to_ir(path, arch, include_dirs, defines), target)


def check_tna_to_ir(path, arch, include_dirs=(), defines=()):
    """--arch tna|t2na: parse and check into the typed IR (`ir.Program`); CompileError on
    the first type error."""
    if not os.path.isfile(path):
        raise CompileError(SrcLoc(path, 1, 1), "no such file")
    text = preprocess(path, include_dirs, list(ARCH_DEFINES[arch]) + list(defines))
    return check_program(parse(text, path), path)
