"""C preprocessing with Debian's `cpp`, keeping `#line` markers for locations."""
import os
import re
import subprocess

from .errors import CompileError, SrcLoc

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
_CPP_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$",
                       re.M)


def preprocess(path, include_dirs=(), defines=()):
    """Return the preprocessed text of `path`; cpp errors become CompileError."""
    cmd = ["cpp", "-x", "c", "-undef", "-nostdinc", "-w", "-I", INCLUDE_DIR]
    for d in include_dirs:
        cmd += ["-I", d]
    for d in defines:
        cmd.append("-D" + d)
    cmd.append(path)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise _cpp_error(path, proc.stderr)
    return proc.stdout


def _cpp_error(path, stderr):
    m = _CPP_DIAG.search(stderr)
    if m:
        loc = SrcLoc(m.group("file"), int(m.group("line")), int(m.group("col")))
        return CompileError(loc, "preprocessor: " + m.group("msg").strip())
    first = stderr.strip().splitlines()[0] if stderr.strip() else "cpp failed"
    return CompileError(SrcLoc(path, 1, 1), "preprocessor: " + first)
