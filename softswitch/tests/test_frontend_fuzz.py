"""Broken programs get an error, never a crash: a mutation fuzz test of softswitch-p4c.

Each mutation deletes, repeats or replaces one token of a program of the STF and
acceptance corpora (fixed seed); compiling the result either succeeds or raises the
front-end's CompileError (one `file:line:col: error:` line from the command), never
another exception (which the command reports as an internal compiler error)."""
import random
import re
import traceback
from pathlib import Path

from softswitch_p4c.driver import compile_to_objects
from softswitch_p4c.errors import CompileError

SEED = 29
MUTATIONS = 400
TESTS = Path(__file__).resolve().parent
PROGRAMS = sorted(TESTS.glob("stf/*.p4")) + sorted(TESTS.glob("corpus/positive/*.p4"))
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+w\d+|\d+|[{}()\[\];,.<>=+\-*&|^!~?:]")


def mutate(text, rng):
    """`text` with one token (outside comments and preprocessor lines) deleted, repeated
    or replaced by another of the program's tokens."""
    def in_code(m):
        line = text[:m.start()].rsplit("\n", 1)[-1].lstrip()
        return not line.startswith(("#", "//"))
    tokens = [m for m in TOKEN.finditer(text) if in_code(m)]
    t, other = rng.choice(tokens), rng.choice(tokens).group()
    return rng.choice([text[:t.start()] + text[t.end():],
                       text[:t.end()] + " " + t.group() + text[t.end():],
                       text[:t.start()] + other + text[t.end():]])


def test_mutated_programs_fail_with_an_error_not_a_crash(tmp_path):
    rng = random.Random(SEED)
    crashes = []
    for i in range(MUTATIONS):
        source = rng.choice(PROGRAMS)
        mutant = tmp_path / f"mutant{i}.p4"
        mutant.write_text(mutate(source.read_text(), rng))
        try:
            compile_to_objects(str(mutant), include_dirs=[str(source.parent)])
        except CompileError:
            pass
        except Exception as e:          # noqa: BLE001 -- the crash is what is looked for
            crashes.append(f"{source.name} -> {mutant.name}: "
                           f"{traceback.format_exception_only(e)[-1].strip()}")
            continue
        mutant.unlink()
    assert crashes == []
