"""The engine's loader is as strict as BMv2's by default (issue 16): every
BMv2 JSON program in the repository, and p4src/ compiled now, loads strictly;
`lenient=True` is the debugging escape for shapes BMv2 refuses. The corpus of
refused documents is p4core's `tests/strict_corpus.json` (run by
test_p4core_cargo.py)."""

import json
import pathlib

import pytest
import softswitch_engine as se

from softswitch_p4c.driver import compile_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "build", "target", "node_modules"}


def repo_bmv2_programs():
    """Every checked-in JSON document shaped like a BMv2 program."""
    found = []
    for path in sorted(ROOT.rglob("*.json")):
        if SKIP_DIRS & set(path.relative_to(ROOT).parts):
            continue
        try:
            doc = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict) and "header_types" in doc and "pipelines" in doc:
            found.append(path)
    return found


PROGRAMS = repo_bmv2_programs()


def test_the_repository_has_programs_of_every_kind():
    folders = {p.parent.relative_to(ROOT).as_posix() for p in PROGRAMS}
    for needed in ("softswitch/tests/corpus/golden", "softswitch/tests/p4c_reference",
                   "softswitch/engine/p4core/tests/programs", "softswitch/bench/programs"):
        assert needed in folders


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_repository_program_loads_strictly(path):
    se.Switch(ports={}).verify_pipeline(path.read_text())


@pytest.mark.parametrize("src", sorted((ROOT / "p4src").glob("*.p4")), ids=lambda p: p.name)
def test_p4src_compiles_to_json_the_strict_loader_accepts(src):
    bmv2_json, _ = compile_file(str(src), include_dirs=[str(ROOT / "p4src" / "include")])
    se.Switch(ports={}).load_pipeline(json.dumps(bmv2_json))


def one_level_expression_program():
    """p4c's f01_l3 with `ttl = ttl - 1` written the way BMv2 refuses (issue 16)."""
    doc = json.loads((ROOT / "softswitch/tests/p4c_reference/f01_l3.json").read_text())
    param = doc["actions"][2]["primitives"][3]["parameters"][1]
    param["value"] = param["value"]["value"]
    return json.dumps(doc)


def test_bmv2_refused_shape_is_refused_by_default_with_its_json_path():
    sw = se.Switch(ports={})
    for call in (sw.verify_pipeline, sw.load_pipeline):
        with pytest.raises(se.PipelineError, match=r"^actions\[2\]\.primitives\[3\]\.parameters\[1\]: "
                                                   r"Invalid 'type' in expression: ''$"):
            call(one_level_expression_program())


def test_lenient_accepts_what_only_bmv2_refuses():
    sw = se.Switch(ports={})
    sw.verify_pipeline(one_level_expression_program(), lenient=True)
    sw.load_pipeline(one_level_expression_program(), lenient=True)
    with pytest.raises(se.PipelineError):
        sw.load_pipeline('{"header_types": 5}', lenient=True)


def test_a_lenient_switch_loads_it_by_default():
    sw = se.Switch(ports={}, lenient=True)
    sw.load_pipeline(one_level_expression_program())
    with pytest.raises(se.PipelineError):
        sw.verify_pipeline(one_level_expression_program(), lenient=False)


def test_softswitch_has_a_lenient_flag_off_by_default():
    from softswitch_server.cli import parse_args
    assert parse_args(["--lenient"]).lenient and not parse_args([]).lenient
