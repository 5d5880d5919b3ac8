"""The compilation pipeline: cpp -> parse -> check and lower -> BMv2 JSON + P4Info."""
import os

from .compiler import Compiler
from .errors import CompileError, SrcLoc
from .p4info import build_p4info, to_text
from .parser import parse
from .preprocess import preprocess


def compile_file(path, include_dirs=(), defines=()):
    """Return (BMv2 JSON dict, P4Info text); raises CompileError on bad input."""
    bmv2_json, info = compile_to_objects(path, include_dirs, defines)
    return bmv2_json, to_text(info)


def compile_to_objects(path, include_dirs=(), defines=()):
    """Like compile_file but returns the P4Info message (for tests and tools)."""
    if not os.path.isfile(path):
        raise CompileError(SrcLoc(path, 1, 1), "no such file")
    text = preprocess(path, include_dirs, defines)
    comp = Compiler(parse(text, path), path)
    return comp.compile(), build_p4info(comp)


def compile_source(source, workdir, name="prog.p4"):
    """Compile P4 source text (written to workdir/name); returns (JSON, P4Info message)."""
    path = os.path.join(str(workdir), name)
    with open(path, "w") as f:
        f.write(source)
    return compile_to_objects(path)
