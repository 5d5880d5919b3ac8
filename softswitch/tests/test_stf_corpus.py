"""The STF corpus (stf/): every `PROG[.CASE].stf` runs on PROG.p4 through softswitch-stf's
runner, one pytest case per STF file. RED pipeline tests run on p4src/red_ecn.p4."""
import functools
import pathlib

import pytest

from softswitch_p4c.driver import compile_file
from softswitch_stf.runner import run
from softswitch_stf.stf import parse_file

STF_DIR = pathlib.Path(__file__).parent / "stf"
REPO = STF_DIR.parents[2]
PROGRAMS_ELSEWHERE = {"red_ecn": REPO / "p4src" / "red_ecn.p4"}
TESTS = sorted(STF_DIR.glob("*.stf"))
# the p4lang tutorials' exercises, written anew for this corpus (each has PROG.p4 + PROG.stf)
TUTORIALS = ("basic", "basic_tunnel", "ecn", "mri", "source_routing", "calc", "firewall",
             "link_monitor", "load_balance", "qos", "multicast", "p4runtime")


def program_of(stf):
    name = stf.name.split(".")[0]
    return PROGRAMS_ELSEWHERE.get(name, STF_DIR / f"{name}.p4")


@functools.lru_cache(maxsize=None)
def compiled(program):
    bmv2_json, _ = compile_file(str(program))
    return bmv2_json


def test_corpus_is_large_enough():
    assert len(TESTS) >= 40
    assert {stf.stem for stf in TESTS} >= set(TUTORIALS)
    assert sum(stf.name.startswith("red_ecn.") for stf in TESTS) >= 5
    assert all(program_of(t).is_file() for t in TESTS)


@pytest.mark.parametrize("stf", TESTS, ids=lambda p: p.stem)
def test_stf(stf):
    result = run(compiled(program_of(stf)), parse_file(str(stf)))
    assert result.passed, "\n".join(result.failures)
    assert result.packets_in > 0
