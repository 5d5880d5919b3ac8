"""Acceptance corpus of the front-end `softswitch-p4c` (issue 2).

Positive programs (corpus/positive) must compile to structurally valid BMv2
JSON and a P4Info consistent with it, identical to the pinned goldens
(corpus/golden, regenerate with AQMLAB_UPDATE_GOLDEN=1) and byte-identical
from one compilation to the next. Negative programs (corpus/negative) must
fail with exactly one `file:line:col: error: ...` line at the place and with
the words given by their first-line `// expect-error:` comment. Programs the
front-end does not handle yet are listed in corpus/known_gaps.toml; see
corpus/README.md.
"""
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import tomllib

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from scapy.all import IP, TCP, UDP, Dot1Q, Ether, IPOption_RR, IPv6, raw

CORPUS = pathlib.Path(__file__).parent / "corpus"
POSITIVE = CORPUS / "positive"
NEGATIVE = CORPUS / "negative"
GOLDEN = CORPUS / "golden"
P4C = pathlib.Path(sys.executable).parent / "softswitch-p4c"
UPDATE_GOLDEN = os.environ.get("AQMLAB_UPDATE_GOLDEN") == "1"
COMPILE_TIMEOUT_S = 120

ERROR_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$")
EXPECT = re.compile(r"^//\s*expect-error:\s*(?P<line>\d+):(?P<col>\d+):\s*(?P<text>.+?)\s*$")


def _load_gaps():
    gaps = tomllib.loads((CORPUS / "known_gaps.toml").read_text())
    return gaps.get("positive", {}), gaps.get("negative", {})


POSITIVE_GAPS, NEGATIVE_GAPS = _load_gaps()
POSITIVE_NAMES = sorted(p.stem for p in POSITIVE.glob("*.p4"))
NEGATIVE_NAMES = sorted(p.stem for p in NEGATIVE.glob("*.p4"))
COMPILING = [n for n in POSITIVE_NAMES if n not in POSITIVE_GAPS]


# --------------------------------------------------------------------------
# Running the front-end

def run_p4c(src: pathlib.Path, outdir: pathlib.Path, *flags: str) -> subprocess.CompletedProcess:
    """Compile like p4c, from the corpus folder so that any file names the
    front-end records are relative and the output does not depend on where
    the repository is checked out."""
    outdir.mkdir(parents=True, exist_ok=True)
    rel = src.relative_to(CORPUS) if src.is_relative_to(CORPUS) else src
    cmd = [str(P4C), str(rel), "-o", str(outdir),
           "--p4runtime-files", str(outdir / f"{src.stem}.p4info.txtpb"), *flags]
    return subprocess.run(cmd, cwd=CORPUS, capture_output=True, text=True,
                          timeout=COMPILE_TIMEOUT_S)


def single_error(proc: subprocess.CompletedProcess, src: pathlib.Path) -> re.Match:
    """The failure is clean: non-zero exit, no traceback, exactly one
    `file:line:col: error: message` line naming the program's file."""
    assert proc.returncode != 0, f"{src.name} compiled but must fail"
    assert "Traceback" not in proc.stderr, f"traceback instead of an error:\n{proc.stderr}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{proc.stderr}"
    match = ERROR_LINE.match(lines[0])
    assert match, f"not a `file:line:col: error: message` line: {lines[0]!r}"
    assert (CORPUS / match["file"]).resolve() == src.resolve(), lines[0]
    return match


class Compiled:
    def __init__(self, name: str, outdir: pathlib.Path):
        self.name = name
        self.src = POSITIVE / f"{name}.p4"
        self.proc = run_p4c(self.src, outdir)
        assert self.proc.returncode == 0, (
            f"{name} failed to compile (add it to known_gaps.toml only if the "
            f"construct is unsupported):\n{self.proc.stderr}")
        assert "Traceback" not in self.proc.stderr, self.proc.stderr
        self.json_bytes = (outdir / f"{name}.json").read_bytes()
        self.p4info_bytes = (outdir / f"{name}.p4info.txtpb").read_bytes()
        self.json = json.loads(self.json_bytes)
        self.p4info = text_format.Parse(self.p4info_bytes.decode(), p4info_pb2.P4Info())


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cache = {}

    def get(name: str) -> Compiled:
        if name not in cache:
            cache[name] = Compiled(name, tmp_path_factory.mktemp(f"co_{name}"))
        return cache[name]
    return get


# --------------------------------------------------------------------------
# BMv2 JSON structure (behavioral-model docs/JSON_format.md)

REQUIRED_KEYS = (
    "__meta__", "header_types", "headers", "header_stacks", "errors", "enums",
    "parsers", "parse_vsets", "deparsers", "meter_arrays", "counter_arrays",
    "register_arrays", "calculations", "learn_lists", "actions", "pipelines",
    "checksums", "extern_instances", "field_aliases")
PLAIN_VALUE_TYPES = {"hexstr", "bool", "string", "lookahead", "local", "expression",
                     "parameters_vector", "default"}


class Bmv2Json:
    """Indexes of one BMv2 JSON document and the reference checks on it."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.types = {t["name"]: t for t in doc["header_types"]}
        self.headers = {h["name"]: h for h in doc["headers"]}
        self.header_ids = {h["id"] for h in doc["headers"]}
        self.stacks = {s["name"]: s for s in doc["header_stacks"]}
        self.union_types = {u["name"] for u in doc.get("header_union_types", [])}
        self.unions = {u["name"]: u for u in doc.get("header_unions", [])}
        self.union_stacks = {u["name"] for u in doc.get("header_union_stacks", [])}
        self.calculations = {c["name"] for c in doc["calculations"]}
        self.registers = {r["name"] for r in doc["register_arrays"]}
        self.counters = {c["name"]: c for c in doc["counter_arrays"]}
        self.meters = {m["name"]: m for m in doc["meter_arrays"]}
        self.externs = {e["name"] for e in doc["extern_instances"]}
        self.vsets = {v["name"] for v in doc["parse_vsets"]}
        self.actions = {a["id"]: a for a in doc["actions"]}
        self.tables = {t["name"]: t for p in doc["pipelines"] for t in p["tables"]}
        self.problems = []

    def problem(self, where: str, what: str):
        self.problems.append(f"{where}: {what}")

    def field_width(self, header: str, field: str):
        """Width of header.field, or None when the reference is dangling."""
        htype = self.types.get(self.headers.get(header, {}).get("header_type"))
        if htype is None:
            return None
        if field == "$valid$":
            return 1
        fields = htype["fields"]
        return next((f[1] for f in fields if f[0] == field), None)

    def check_field(self, where: str, ref):
        if not (isinstance(ref, list) and len(ref) == 2) or self.field_width(*ref) is None:
            self.problem(where, f"field {ref!r} does not exist")

    def check_named(self, where: str, kind: str, value):
        known = {
            "header": self.headers, "regular": self.headers, "header_stack": self.stacks,
            "stack": self.stacks, "header_union": self.unions,
            "header_union_stack": self.union_stacks, "calculation": self.calculations,
            "register_array": self.registers, "counter_array": self.counters,
            "meter_array": self.meters, "extern": self.externs, "parse_vset": self.vsets,
        }.get(kind)
        if known is None:
            self.problem(where, f"unknown value type {kind!r}")
        elif value not in known:
            self.problem(where, f"{kind} {value!r} does not exist")

    def check_value(self, where: str, node, n_params=None):
        """Walk any JSON subtree and check every {type, value} reference in it."""
        if isinstance(node, list):
            for item in node:
                self.check_value(where, item, n_params)
            return
        if not isinstance(node, dict):
            return
        kind, value = node.get("type"), node.get("value")
        if "value" in node and isinstance(kind, str):
            self.check_typed(where, kind, value, n_params)
        for key, child in node.items():
            if key != "value" or kind in ("expression", "parameters_vector"):
                self.check_value(where, child, n_params)

    def check_typed(self, where: str, kind: str, value, n_params):
        if kind == "field":
            self.check_field(where, value)
        elif kind == "stack_field":
            stack = self.stacks.get(value[0])
            htype = self.types.get(stack["header_type"]) if stack else None
            fields = [f[0] for f in htype["fields"]] if htype else []
            if value[1] not in fields:
                self.problem(where, f"stack field {value!r} does not exist")
        elif kind == "runtime_data":
            if n_params is None or not 0 <= value < n_params:
                self.problem(where, f"runtime_data {value} out of range")
        elif kind == "register":
            self.check_named(where, "register_array", value[0])
        elif kind in ("union_stack", "union_stack_field"):
            self.check_named(where, "header_union_stack", value[0])
        elif kind not in PLAIN_VALUE_TYPES:
            self.check_named(where, kind, value)

    def check_all(self) -> list:
        self.check_headers()
        self.check_parsers()
        for action in self.doc["actions"]:
            self.check_value(f"action {action['name']}", action["primitives"],
                             len(action["runtime_data"]))
        for pipeline in self.doc["pipelines"]:
            self.check_pipeline(pipeline)
        self.check_resources()
        return self.problems

    def check_headers(self):
        for name, header in self.headers.items():
            if header["header_type"] not in self.types:
                self.problem(f"header {name}", f"type {header['header_type']!r} does not exist")
        for name, stack in self.stacks.items():
            if stack["header_type"] not in self.types:
                self.problem(f"stack {name}", f"type {stack['header_type']!r} does not exist")
            if not set(stack["header_ids"]) <= self.header_ids:
                self.problem(f"stack {name}", "header_ids name missing headers")
        for name, union in self.unions.items():
            if union["union_type"] not in self.union_types:
                self.problem(f"union {name}", f"type {union['union_type']!r} does not exist")
            if not set(union["header_ids"]) <= self.header_ids:
                self.problem(f"union {name}", "header_ids name missing headers")
        for alias, target in self.doc["field_aliases"]:
            self.check_field(f"field alias {alias}", target)

    def check_parsers(self):
        for parser in self.doc["parsers"]:
            states = {s["name"] for s in parser["parse_states"]}
            if parser["init_state"] not in states:
                self.problem(f"parser {parser['name']}", "init_state does not exist")
            for state in parser["parse_states"]:
                where = f"parse state {state['name']}"
                self.check_value(where, state["parser_ops"])
                self.check_value(where, state["transition_key"])
                for tr in state["transitions"]:
                    if tr["next_state"] is not None and tr["next_state"] not in states:
                        self.problem(where, f"next_state {tr['next_state']!r} does not exist")
                    if tr["type"] == "parse_vset":
                        self.check_named(where, "parse_vset", tr["value"])
        for deparser in self.doc["deparsers"]:
            for header in deparser["order"]:
                self.check_named(f"deparser {deparser['name']}", "header", header)

    def check_pipeline(self, pipeline: dict):
        nodes = ({t["name"] for t in pipeline["tables"]}
                 | {c["name"] for c in pipeline["conditionals"]}
                 | {a["name"] for a in pipeline.get("action_calls", [])})
        profiles = {p["name"] for p in pipeline.get("action_profiles", [])}

        def check_next(where, target):
            if target is not None and target not in nodes:
                self.problem(where, f"next node {target!r} does not exist")

        check_next(f"pipeline {pipeline['name']}", pipeline["init_table"])
        for table in pipeline["tables"]:
            self.check_table(table, profiles, check_next)
        for cond in pipeline["conditionals"]:
            where = f"conditional {cond['name']}"
            self.check_value(where, cond["expression"])
            check_next(where, cond["true_next"])
            check_next(where, cond["false_next"])

    def check_table(self, table: dict, profiles: set, check_next):
        where = f"table {table['name']}"
        for key in table["key"]:
            if key["match_type"] == "valid":
                self.check_named(where, "header", key["target"])
            else:
                self.check_field(where, key["target"])
        if not set(table["action_ids"]) <= set(self.actions):
            self.problem(where, "action_ids name missing actions")
        names = {self.actions[i]["name"] for i in table["action_ids"] if i in self.actions}
        if set(table["actions"]) != names:
            self.problem(where, "actions and action_ids disagree")
        for label, target in table["next_tables"].items():
            if label not in names | {"__HIT__", "__MISS__"}:
                self.problem(where, f"next_tables label {label!r} is not one of its actions")
            check_next(where, target)
        check_next(where, table.get("base_default_next"))
        default = table.get("default_entry")
        if default and default["action_id"] not in table["action_ids"]:
            self.problem(where, "default_entry action is not one of its actions")
        for entry in table.get("entries", []):
            if entry["action_entry"]["action_id"] not in table["action_ids"]:
                self.problem(where, "const entry action is not one of its actions")
        if table.get("direct_meters") is not None:
            self.check_named(where, "meter_array", table["direct_meters"])
        if table["type"] != "simple" and table.get("action_profile") not in profiles:
            self.problem(where, "action_profile does not exist")

    def check_resources(self):
        for kind, arrays in (("counter", self.counters), ("meter", self.meters)):
            for name, array in arrays.items():
                if array.get("is_direct") and array.get("binding") not in self.tables:
                    self.problem(f"{kind} {name}", "bound to a table that does not exist")
        for name, meter in self.meters.items():
            if meter.get("is_direct"):
                self.check_field(f"meter {name}", meter.get("result_target"))
        for calc in self.doc["calculations"]:
            self.check_value(f"calculation {calc['name']}", calc["input"])
        for checksum in self.doc["checksums"]:
            where = f"checksum {checksum['name']}"
            self.check_named(where, "calculation", checksum["calculation"])
            self.check_field(where, checksum["target"])
            self.check_value(where, checksum.get("if_cond"))
        for learn in self.doc["learn_lists"]:
            self.check_value(f"learn list {learn['name']}", learn.get("elements", []))


def bmv2_json_problems(doc: dict) -> list:
    """Everything structurally wrong with a BMv2 JSON document ([] if none)."""
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        return [f"missing top-level keys {missing}"]
    return Bmv2Json(doc).check_all()


# --------------------------------------------------------------------------
# P4Info and its agreement with the JSON

P4INFO_TO_JSON_MATCH = {
    p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "ternary",   # BMv2 has no optional: ternary
}


def all_preambles(p4info: p4info_pb2.P4Info):
    for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters",
                 "meters", "direct_meters", "controller_packet_metadata",
                 "value_sets", "registers", "digests", "externs"):
        for entity in getattr(p4info, kind):
            if kind == "externs":
                yield from (inst.preamble for inst in entity.instances)
            else:
                yield entity.preamble


def p4info_problems(p4info: p4info_pb2.P4Info, doc: dict) -> list:
    """Disagreements between a P4Info and the BMv2 JSON compiled with it."""
    bm = Bmv2Json(doc)
    problems = []
    ids = [p.id for p in all_preambles(p4info)]
    if len(ids) != len(set(ids)) or 0 in ids:
        problems.append("P4Info ids are not unique and non-zero")
    json_actions = {a["name"]: a for a in doc["actions"]}
    for action in p4info.actions:
        name = action.preamble.name
        if name not in json_actions:
            problems.append(f"P4Info action {name} not in the JSON")
            continue
        widths = [p.bitwidth for p in action.params]
        json_widths = [r["bitwidth"] for r in json_actions[name]["runtime_data"]]
        if widths != json_widths:
            problems.append(f"action {name}: param widths {widths} != JSON {json_widths}")
    action_ids = {a.preamble.id for a in p4info.actions}
    for table in p4info.tables:
        problems += table_problems(table, bm, action_ids)
    problems += resource_problems(p4info, bm, doc)
    return problems


def table_problems(table, bm: Bmv2Json, action_ids: set) -> list:
    name = table.preamble.name
    jt = bm.tables.get(name)
    if jt is None:
        return [f"P4Info table {name} not in the JSON"]
    problems = []
    if any(ref.id not in action_ids for ref in table.action_refs):
        problems.append(f"table {name}: action_refs name unknown actions")
    keys = [k for k in jt["key"] if k["match_type"] != "valid"]
    if len(keys) != len(table.match_fields):
        return problems + [
            f"table {name}: {len(table.match_fields)} match fields, JSON has {len(keys)}"]
    for mf, key in zip(table.match_fields, keys):
        if P4INFO_TO_JSON_MATCH.get(mf.match_type) != key["match_type"]:
            problems.append(f"table {name}: {mf.name} match kind differs from the JSON")
        if bm.field_width(*key["target"]) != mf.bitwidth:
            problems.append(f"table {name}: {mf.name} is {mf.bitwidth} bits, JSON key is not")
    # BMv2 sizes a table with const entries by its entries (p4c then writes their count)
    if table.size and jt["max_size"] != table.size and "entries" not in jt:
        problems.append(f"table {name}: size {table.size} != JSON max_size {jt['max_size']}")
    return problems


def resource_problems(p4info, bm: Bmv2Json, doc: dict) -> list:
    problems = []
    registers = {r["name"]: r for r in doc["register_arrays"]}
    for reg in p4info.registers:
        jr = registers.get(reg.preamble.name)
        if jr is None or jr["size"] != reg.size or \
                jr["bitwidth"] != reg.type_spec.bitstring.bit.bitwidth:
            problems.append(f"register {reg.preamble.name} differs from the JSON")
    for kind, arrays in (("counters", bm.counters), ("direct_counters", bm.counters),
                         ("meters", bm.meters), ("direct_meters", bm.meters)):
        for entity in getattr(p4info, kind):
            if entity.preamble.name not in arrays:
                problems.append(f"{kind} {entity.preamble.name} not in the JSON")
    learn_lists = {lst["name"] for lst in doc["learn_lists"]}
    for digest in p4info.digests:
        if digest.preamble.name not in learn_lists:
            problems.append(f"digest {digest.preamble.name} not in the JSON learn_lists")
    return problems


# --------------------------------------------------------------------------
# The validators themselves, on the hand-written fixture pipeline

FIXTURE_JSON = pathlib.Path(__file__).parent / "fixtures" / "mini.json"
FIXTURE_P4INFO = pathlib.Path(__file__).parent / "fixtures" / "mini.p4info.txtpb"


def fixture_pair():
    doc = json.loads(FIXTURE_JSON.read_text())
    p4info = text_format.Parse(FIXTURE_P4INFO.read_text(), p4info_pb2.P4Info())
    return doc, p4info


def test_validators_accept_the_fixture_pipeline():
    doc, p4info = fixture_pair()
    assert bmv2_json_problems(doc) == []
    assert p4info_problems(p4info, doc) == []


def _break_field_ref(doc):
    doc["actions"][1]["primitives"][0]["parameters"][0] = {"type": "field", "value": ["nohdr", "x"]}


def _break_next_table(doc):
    table = doc["pipelines"][0]["tables"][0]
    table["next_tables"][table["actions"][0]] = "no_such_node"


def _break_parser_state(doc):
    doc["parsers"][0]["parse_states"][0]["transitions"][0]["next_state"] = "no_state"


@pytest.mark.parametrize("breakage, words", [
    (lambda d: d.pop("pipelines"), "missing top-level keys"),
    (_break_field_ref, "'nohdr'"),
    (_break_next_table, "no_such_node"),
    (_break_parser_state, "no_state"),
    (lambda d: d["headers"][0].update(header_type="ghost_t"), "ghost_t"),
])
def test_json_validator_rejects_dangling_references(breakage, words):
    doc, _ = fixture_pair()
    breakage(doc)
    assert any(words in p for p in bmv2_json_problems(doc))


def test_p4info_check_rejects_a_table_missing_from_the_json():
    doc, p4info = fixture_pair()
    p4info.tables[0].preamble.name = "MyIngress.not_compiled"
    assert any("not_compiled" in p for p in p4info_problems(p4info, doc))


# --------------------------------------------------------------------------
# Positive programs

@pytest.mark.parametrize("name", COMPILING)
def test_positive_compiles_to_valid_bmv2_json(compiled, name):
    assert bmv2_json_problems(compiled(name).json) == []


@pytest.mark.parametrize("name", COMPILING)
def test_positive_p4info_agrees_with_json(compiled, name):
    prog = compiled(name)
    assert prog.p4info.pkg_info.arch == "v1model"
    assert p4info_problems(prog.p4info, prog.json) == []


def without_source_info(node):
    if isinstance(node, dict):
        return {k: without_source_info(v) for k, v in node.items() if k != "source_info"}
    if isinstance(node, list):
        return [without_source_info(v) for v in node]
    return node


def golden_json(doc: dict) -> bytes:
    """The IR as pinned: everything but `source_info`. Source locations are
    pinned by the negative corpus; leaving them out here keeps goldens from
    churning when the front-end refines a column, and from depending on where
    the front-end's include folder lives."""
    return (json.dumps(without_source_info(doc), indent=1) + "\n").encode()


@pytest.mark.parametrize("name", COMPILING)
def test_positive_matches_golden(compiled, name):
    prog = compiled(name)
    for suffix, data in ((".json", golden_json(prog.json)), (".p4info.txtpb", prog.p4info_bytes)):
        golden = GOLDEN / f"{name}{suffix}"
        if UPDATE_GOLDEN:
            golden.write_bytes(data)
        assert golden.exists(), f"no golden {golden.name}: run with AQMLAB_UPDATE_GOLDEN=1"
        assert data == golden.read_bytes(), (
            f"{golden.name} changed; if intended, regenerate with AQMLAB_UPDATE_GOLDEN=1")


@pytest.mark.parametrize("name", COMPILING)
def test_positive_output_is_deterministic(compiled, name, tmp_path):
    first = compiled(name)
    again = run_p4c(first.src, tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / f"{name}.json").read_bytes() == first.json_bytes
    assert (tmp_path / f"{name}.p4info.txtpb").read_bytes() == first.p4info_bytes


def test_known_gaps_fail_cleanly_naming_the_construct(tmp_path):
    """One test over all gaps (there may be none), each failing cleanly."""
    for name, gap in sorted(POSITIVE_GAPS.items()):
        src = POSITIVE / f"{name}.p4"
        err = single_error(run_p4c(src, tmp_path / name), src)
        assert gap["construct"].lower() in err["msg"].lower(), (
            f"{name}: the error should name {gap['construct']!r}: {err.group(0)}")


# What controllers rely on in the P4Info, as p4c writes it.

def p4info_entity(p4info, kind: str, name: str):
    found = [e for e in getattr(p4info, kind) if e.preamble.name == name]
    assert len(found) == 1, f"{kind} {name} not in the P4Info"
    return found[0]


def test_annotations_shape_the_control_plane_names(compiled):
    p4info = compiled("packet_io").p4info
    assert p4info_entity(p4info, "actions", "MyIngress.send_to_cpu").preamble.id == 0x01000042
    assert p4info_entity(p4info, "actions", "MyIngress.copy_to_cpu")       # local @name
    assert p4info_entity(p4info, "tables", "l2_forward")                   # global @name(".x")
    assert not [t for t in p4info.tables if "packet_out_path" in t.preamble.name]  # @hidden
    basic = compiled("basic_l3").p4info
    assert p4info_entity(basic, "tables", "MyIngress.ipv4_lpm").preamble.id == 0x02000101
    forward = p4info_entity(basic, "actions", "MyIngress.ipv4_forward")
    assert forward.preamble.doc.brief.startswith("Forward to the next hop")


def test_controller_headers_become_packet_metadata(compiled):
    p4info = compiled("packet_io").p4info
    packet_in = p4info_entity(p4info, "controller_packet_metadata", "packet_in")
    packet_out = p4info_entity(p4info, "controller_packet_metadata", "packet_out")
    assert [(m.name, m.bitwidth) for m in packet_in.metadata] == [("ingress_port", 9), ("_pad", 7)]
    assert [(m.name, m.bitwidth) for m in packet_out.metadata] == [("egress_port", 9), ("_pad", 7)]


def test_digest_and_optional_keys(compiled):
    p4info = compiled("l2_learning").p4info
    digest = p4info_entity(p4info, "digests", "learn_t")
    assert digest.type_spec.struct.name == "learn_t"
    acl = p4info_entity(p4info, "tables", "MyIngress.l2_acl")
    assert {m.match_type for m in acl.match_fields} == {p4info_pb2.MatchField.OPTIONAL}
    smac = p4info_entity(p4info, "tables", "MyIngress.smac")
    assert [r.scope for r in smac.action_refs] == [p4info_pb2.ActionRef.DEFAULT_ONLY,
                                                   p4info_pb2.ActionRef.TABLE_AND_DEFAULT]


def test_new_types_are_named_in_the_p4info(compiled):
    p4info = compiled("ecmp").p4info
    nhop = p4info_entity(p4info, "tables", "MyIngress.ecmp_nhop")
    assert nhop.match_fields[0].type_name.name == "EcmpMember_t"
    new_type = p4info.type_info.new_types["EcmpMember_t"]
    assert new_type.original_type.bitstring.bit.bitwidth == 14


def test_const_entries_keep_their_priority_order(compiled):
    """qos_dscp's rules overlap; the largest P4 priority must win, which BMv2
    expresses as the smallest priority value."""
    prog = compiled("qos_dscp")
    classify = p4info_entity(prog.p4info, "tables", "MyIngress.classify")
    assert classify.is_const_table and classify.const_default_action_id
    entries = Bmv2Json(prog.json).tables["MyIngress.classify"]["entries"]
    cs6_first = [e["action_entry"]["action_data"][0] for e in
                 sorted(entries, key=lambda e: e["priority"])]
    assert cs6_first[:2] == ["0x30", "0x2e"]      # CS6 (priority=100), then EF (90)


def test_define_flag_reaches_the_program(tmp_path):
    """basic_l3 sizes its route table with IPV4_TABLE_SIZE (default 1024)."""
    out = tmp_path / "out"
    proc = run_p4c(POSITIVE / "basic_l3.p4", out, "-D", "IPV4_TABLE_SIZE=4096")
    assert proc.returncode == 0, proc.stderr
    p4info = text_format.Parse((out / "basic_l3.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    assert [t.size for t in p4info.tables if t.preamble.name == "MyIngress.ipv4_lpm"] == [4096]


def test_include_dir_flag_finds_user_headers(tmp_path):
    """`#include "x.p4"` resolves through -I, as with p4c."""
    incdir = tmp_path / "inc"
    incdir.mkdir()
    source = (POSITIVE / "l2_learning.p4").read_text()
    start, end = source.index("header ethernet_t"), source.index("struct learn_t")
    (incdir / "l2_headers.p4").write_text(source[start:end])
    prog = tmp_path / "l2_split.p4"
    prog.write_text(source[:start] + '#include "l2_headers.p4"\n' + source[end:])
    proc = run_p4c(prog, tmp_path / "out", "-I", str(incdir))
    assert proc.returncode == 0, proc.stderr
    whole = run_p4c(POSITIVE / "l2_learning.p4", tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    split_doc = json.loads((tmp_path / "out" / "l2_split.json").read_text())
    whole_doc = json.loads((tmp_path / "whole" / "l2_learning.json").read_text())
    assert split_doc["header_types"] == whole_doc["header_types"]


# --------------------------------------------------------------------------
# Negative programs

def expectation(src: pathlib.Path) -> re.Match:
    first = src.read_text().splitlines()[0]
    match = EXPECT.match(first)
    assert match, f"{src.name}: first line must be `// expect-error: LINE:COL: text`"
    return match


@pytest.mark.parametrize("name", NEGATIVE_NAMES)
def test_negative_fails_at_the_right_place(name, tmp_path):
    src = NEGATIVE / f"{name}.p4"
    want = expectation(src)
    proc = run_p4c(src, tmp_path)
    if name in NEGATIVE_GAPS:
        # Not diagnosed as specified yet: still never a crash.
        assert "Traceback" not in proc.stderr, proc.stderr
        if proc.returncode != 0:
            single_error(proc, src)
        return
    err = single_error(proc, src)
    assert (err["line"], err["col"]) == (want["line"], want["col"]), (
        f"error at {err['line']}:{err['col']}, expected {want['line']}:{want['col']}: "
        f"{err.group(0)}")
    assert want["text"].lower() in err["msg"].lower(), err.group(0)


def test_known_gaps_name_existing_programs():
    assert set(POSITIVE_GAPS) <= set(POSITIVE_NAMES)
    assert set(NEGATIVE_GAPS) <= set(NEGATIVE_NAMES)
    assert all(gap.get("reason") and gap.get("construct") for gap in POSITIVE_GAPS.values())
    assert all(gap.get("reason") for gap in NEGATIVE_GAPS.values())


def test_corpus_meets_issue_2_minimums():
    assert len(POSITIVE_NAMES) >= 12 and len(NEGATIVE_NAMES) >= 25


# --------------------------------------------------------------------------
# The compiled corpus behaves as written, on the built-in engine
# (synchronous process_packet: no ports, no traffic-manager timing).

MAC_A, MAC_B, MAC_R = "00:00:00:00:00:0a", "00:00:00:00:00:0b", "00:00:00:00:00:aa"


def engine(prog: Compiled, **options):
    import softswitch_engine
    switch = softswitch_engine.Switch(ports={}, **options)
    switch.load_pipeline(prog.json_bytes.decode())
    return switch


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def ip4(text: str) -> bytes:
    return bytes(int(b) for b in text.split("."))


def udp4(dst="10.0.2.2", ttl=64, tos=0, dport=7, payload=b"payload!"):
    return raw(Ether(src=MAC_A, dst=MAC_R) / IP(src="10.0.1.1", dst=dst, ttl=ttl, tos=tos)
               / UDP(sport=1234, dport=dport) / payload)


def ipv4_checksum_ok(frame: bytes) -> bool:
    ip = Ether(frame)[IP]
    fresh = ip.copy()
    del fresh.chksum
    return IP(raw(fresh)).chksum == ip.chksum


def test_basic_l3_routes_and_decrements_ttl(compiled):
    sw = engine(compiled("basic_l3"))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.ipv4_forward", [mac(MAC_B), (2).to_bytes(2, "big")])
    [(port, frame)] = sw.process_packet(1, udp4())
    out = Ether(frame)
    assert (port, out.src, out.dst, out[IP].ttl) == (2, MAC_R, MAC_B, 63)
    assert ipv4_checksum_ok(frame)
    assert sw.process_packet(1, udp4(dst="10.9.9.9")) == []     # no route: drop()
    assert sw.process_packet(1, udp4(ttl=1)) == []               # TTL expired


@pytest.mark.parametrize("op, a, b, result", [
    ("+", 5, 7, 12), ("-", 5, 7, 2**32 - 2), ("&", 0xF0F0, 0xFF00, 0xF000),
    ("|", 0xF0, 0x0F, 0xFF), ("^", 0xFF, 0x0F, 0xF0), ("*", 6, 7, 42),
    ("<", 1, 33, 2), ("p", 2**32 - 1, 2, 2**32 - 1), ("m", 1, 2, 0),
    ("#", 0x12345678, 0x9ABCDEF0, 0x5678DEF0),
])
def test_calculator_answers(compiled, op, a, b, result):
    sw = engine(compiled("calculator"))
    ask = raw(Ether(src=MAC_A, dst=MAC_R, type=0x1234)) + struct.pack(
        "!4BIII", 0x50, 0x34, 1, ord(op), a, b, 0)
    [(port, frame)] = sw.process_packet(3, ask)
    assert port == 3 and Ether(frame).dst == MAC_A              # returned to sender
    assert struct.unpack("!I", frame[26:30])[0] == result


def test_calculator_drops_unknown_opcodes(compiled):
    sw = engine(compiled("calculator"))
    ask = raw(Ether(type=0x1234)) + struct.pack("!4BIII", 0x50, 0x34, 1, ord("/"), 1, 2, 0)
    assert sw.process_packet(3, ask) == []


def test_source_routing_pops_one_hop_per_switch(compiled):
    sw = engine(compiled("source_routing"))
    hops = [(0, 3), (0, 5), (1, 2)]                               # (bos, port)
    routes = b"".join(((bos << 15) | port).to_bytes(2, "big") for bos, port in hops)
    ip_part = raw(IP(dst="10.0.3.3", ttl=9) / UDP())
    frame = raw(Ether(src=MAC_A, dst=MAC_B, type=0x1234)) + routes + ip_part
    [(port, out)] = sw.process_packet(1, frame)
    assert port == 3 and out[14:18] == routes[2:]
    assert IP(out[18:]).ttl == 8                                  # every hop counts
    last = raw(Ether(src=MAC_A, dst=MAC_B, type=0x1234)) + routes[4:] + ip_part
    [(port, out)] = sw.process_packet(1, last)
    assert port == 2 and Ether(out).type == 0x0800 and Ether(out)[IP].ttl == 8


def test_tunnel_encapsulates_and_decapsulates(compiled):
    prog = compiled("tunnel")
    edge_in, edge_out = engine(prog), engine(prog)
    edge_in.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                      "MyIngress.myTunnel_ingress", [(7).to_bytes(2, "big")])
    edge_in.table_add("MyIngress.myTunnel_exact", [("exact", (7).to_bytes(2, "big"))],
                      "MyIngress.myTunnel_forward", [(4).to_bytes(2, "big")])
    [(port, tunnelled)] = edge_in.process_packet(1, udp4())
    assert port == 4 and tunnelled[12:18] == bytes.fromhex("1212" "0800" "0007")
    edge_out.table_add("MyIngress.myTunnel_exact", [("exact", (7).to_bytes(2, "big"))],
                       "MyIngress.myTunnel_egress", [mac(MAC_B), (2).to_bytes(2, "big")])
    [(port, plain)] = edge_out.process_packet(3, tunnelled)
    assert port == 2 and Ether(plain).type == 0x0800 and Ether(plain).dst == MAC_B
    assert raw(Ether(plain)[IP]) == raw(Ether(udp4())[IP])
    assert edge_out.counter_read("MyIngress.egressTunnelCounter", 7)[0] == 1


def test_mri_appends_a_trace_per_hop(compiled):
    sw = engine(compiled("mri"))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.ipv4_forward", [mac(MAC_B), (2).to_bytes(2, "big")])
    sw.table_set_default("MyEgress.swtrace", "MyEgress.add_swtrace", [(42).to_bytes(4, "big")])
    option = bytes([0x1F, 4]) + (0).to_bytes(2, "big")          # MRI option, count 0
    packet = IP(dst="10.0.2.2", ihl=6, options=[]) / UDP()
    ip_bytes = bytearray(raw(packet))
    ip_bytes[0], ip_bytes[2:4] = 0x46, (len(ip_bytes) + 4).to_bytes(2, "big")
    frame = raw(Ether(src=MAC_A, dst=MAC_R, type=0x0800)) + bytes(ip_bytes[:20]) + option \
        + bytes(ip_bytes[20:])
    [(port, out)] = sw.process_packet(1, frame)
    ip = out[14:]
    assert port == 2 and ip[0] == 0x48                            # ihl 5 + 1 + 2 words
    assert ip[21] == 12 and ip[22:24] == (1).to_bytes(2, "big")   # option length, count
    assert ip[24:28] == (42).to_bytes(4, "big")                   # swid of this hop


def test_firewall_admits_only_replies_to_inside_connections(compiled):
    sw = engine(compiled("firewall"))
    for net, port in (("10.0.1.0", 1), ("10.0.2.0", 2)):
        sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4(net), 24)], "MyIngress.ipv4_forward",
                     [mac(MAC_B), port.to_bytes(2, "big")])
    for ingress, egress, direction in ((1, 2, 0), (2, 1, 1)):    # 1 inside, 2 outside
        sw.table_add("MyIngress.check_ports", [("exact", ingress.to_bytes(2, "big")),
                                               ("exact", egress.to_bytes(2, "big"))],
                     "MyIngress.set_direction", [bytes([direction])])

    def tcp(src, dst, sport, dport, flags):
        return raw(Ether(dst=MAC_R) / IP(src=src, dst=dst)
                   / TCP(sport=sport, dport=dport, flags=flags))

    reply = tcp("10.0.2.2", "10.0.1.1", 80, 5555, "SA")
    assert sw.process_packet(2, reply) == []                      # nobody asked
    assert [p for p, _ in sw.process_packet(1, tcp("10.0.1.1", "10.0.2.2", 5555, 80, "S"))] == [2]
    assert [p for p, _ in sw.process_packet(2, reply)] == [1]     # now remembered


def test_l2_learning_reports_unknown_sources_and_floods(compiled):
    sw = engine(compiled("l2_learning"))
    sw.mc_group_set(1, [(1, 1), (2, 1), (3, 1)])
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP())
    assert sorted(p for p, _ in sw.process_packet(2, frame)) == [1, 3]   # not back to 2
    name, fields = sw.poll_digest(1.0)
    assert name == "learn_t" and fields[0] == mac(MAC_A)
    assert int.from_bytes(fields[1], "big") == 2
    sw.table_add("MyIngress.dmac", [("exact", mac(MAC_B))], "MyIngress.forward",
                 [(3).to_bytes(2, "big")])
    assert [p for p, _ in sw.process_packet(2, frame)] == [3]


def test_packet_io_carries_controller_headers(compiled):
    sw = engine(compiled("packet_io"), cpu_port=255)
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP())
    packet_out = ((2 << 7).to_bytes(2, "big"))                   # egress_port 2, pad 0
    assert sw.process_packet(255, packet_out + frame) == [(2, frame)]
    sw.table_add("l2_forward", [("exact", mac(MAC_B))],          # @name(".l2_forward")
                 "MyIngress.send_to_cpu", [])
    [(port, punted)] = sw.process_packet(5, frame)
    assert port == 255 and punted == (5 << 7).to_bytes(2, "big") + frame


def test_mirror_recirc_quarantines_unknown_sources_via_resubmit(compiled):
    sw = engine(compiled("mirror_recirc"))
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP())
    assert [p for p, _ in sw.process_packet(4, frame)] == [63]
    sw.table_add("MyIngress.port_security", [("exact", (4).to_bytes(2, "big")),
                                             ("exact", mac(MAC_A))],
                 "MyIngress.forward", [(6).to_bytes(2, "big")])
    assert [p for p, _ in sw.process_packet(4, frame)] == [6]


def test_mirror_recirc_loops_then_strips_the_loop_header(compiled):
    sw = engine(compiled("mirror_recirc"))
    sw.table_add("MyIngress.port_security", [("exact", (4).to_bytes(2, "big")),
                                             ("exact", mac(MAC_A))],
                 "MyIngress.forward", [(6).to_bytes(2, "big")])
    inner = raw(IP() / UDP())
    looped = raw(Ether(src=MAC_A, dst=MAC_B, type=0x88B5)) + bytes([2]) + b"\x08\x00" + inner
    [(port, out)] = sw.process_packet(4, looped)
    assert port == 6 and out == raw(Ether(src=MAC_A, dst=MAC_B, type=0x0800)) + inner


def test_qos_classifies_with_const_rules(compiled):
    sw = engine(compiled("qos_dscp"))
    sw.table_add("MyIngress.policer", [("exact", bytes([46])), ("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.police", [(2).to_bytes(2, "big")])
    sw.table_add("MyIngress.policer", [("exact", bytes([0])), ("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.police", [(3).to_bytes(2, "big")])
    [(port, voice)] = sw.process_packet(1, udp4(dport=20000))
    assert port == 2 and Ether(voice)[IP].tos >> 2 == 46 and ipv4_checksum_ok(voice)
    [(port, other)] = sw.process_packet(1, udp4(dport=9))
    assert port == 3 and Ether(other)[IP].tos >> 2 == 0


def test_ecn_threshold_marks_only_ect_packets(compiled):
    """Queue depth is 0 without a traffic manager; threshold 0 makes every
    ECN-capable packet qualify, so the test sees the marking logic itself."""
    sw = engine(compiled("ecn_threshold"))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.ipv4_forward", [mac(MAC_B), (2).to_bytes(2, "big")])
    assert Ether(sw.process_packet(1, udp4(tos=0x02))[0][1])[IP].tos & 3 == 2   # 0 < 10
    sw.table_add("MyEgress.ecn_config", [("exact", (2).to_bytes(2, "big"))],
                 "MyEgress.set_threshold", [(0).to_bytes(3, "big")])
    for tos, ecn_out in ((0x02, 3), (0x01, 3), (0x00, 0), (0xB8 | 3, 3)):
        [(_, out)] = sw.process_packet(1, udp4(tos=tos))
        assert Ether(out)[IP].tos & 3 == ecn_out and ipv4_checksum_ok(out)
        assert Ether(out)[IP].tos >> 2 == tos >> 2                # DSCP untouched
    assert sw.counter_read("MyEgress.ecn_marks", 2)[0] == 2


def test_dual_stack_routes_both_families(compiled):
    sw = engine(compiled("dual_stack"))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.set_nhop", [mac(MAC_B), (2).to_bytes(2, "big")])
    sw.table_add("MyIngress.ipv6_lpm",
                 [("lpm", bytes.fromhex("20010db8000000020000000000000000"), 64)],
                 "MyIngress.set_nhop", [mac(MAC_B), (3).to_bytes(2, "big")])
    [(port, v4)] = sw.process_packet(1, udp4())
    assert port == 2 and Ether(v4)[IP].ttl == 63 and ipv4_checksum_ok(v4)
    v6 = raw(Ether(src=MAC_A, dst=MAC_R) / IPv6(dst="2001:db8:0:2::5", hlim=9) / UDP())
    [(port, out)] = sw.process_packet(1, v6)
    assert port == 3 and Ether(out)[IPv6].hlim == 8
    tagged = raw(Ether(src=MAC_A, dst=MAC_R) / Dot1Q(vlan=10) / IP(dst="10.0.2.2") / UDP())
    [(port, out)] = sw.process_packet(1, tagged)
    assert port == 2 and Ether(out)[Dot1Q].vlan == 10 and Ether(out)[IP].ttl == 63
    fragment = raw(Ether(src=MAC_A, dst=MAC_R) / IP(dst="10.0.2.2", flags="MF") / UDP())
    assert sw.process_packet(1, fragment) == []
    assert sw.counter_read("MyIngress.dropped_by_reason", 1)[0] == 1


def test_ecmp_spreads_flows_over_the_group(compiled):
    sw = engine(compiled("ecmp"))
    sw.table_add("MyIngress.ecmp_group", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.set_ecmp_select", [(0).to_bytes(2, "big"), (4).to_bytes(2, "big")])
    for member in range(4):
        sw.table_add("MyIngress.ecmp_nhop", [("exact", member.to_bytes(2, "big"))],
                     "MyIngress.set_nhop", [mac(MAC_B), (member + 1).to_bytes(2, "big")])

    def port_of(flow):
        frame = raw(Ether(src=MAC_A, dst=MAC_R) / IP(src=f"10.0.1.{flow}", dst="10.0.2.2")
                    / UDP(sport=1024 + 257 * flow, dport=80))
        [(port, _)] = sw.process_packet(9, frame)
        return port

    ports = [port_of(flow) for flow in range(64)]
    assert ports == [port_of(flow) for flow in range(64)]     # per-flow stable
    assert set(ports) == {1, 2, 3, 4}                          # every member used


def test_meters_forward_green_traffic(compiled):
    """Unconfigured meters colour everything green, as in BMv2."""
    sw = engine(compiled("meters"))
    sw.table_add("MyIngress.port_forward", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.forward", [(2).to_bytes(2, "big")])
    sw.table_add("MyIngress.flow_policer", [("ternary", ip4("10.0.1.1"), b"\xff" * 4),
                                            ("ternary", bytes(4), bytes(4)),
                                            ("ternary", b"\x00", b"\x00")],
                 "MyIngress.meter_flow", [(5).to_bytes(4, "big")], priority=1)
    [(port, out)] = sw.process_packet(1, udp4(tos=46 << 2))
    assert port == 2 and Ether(out)[IP].tos >> 2 == 46
    assert sw.counter_read("MyIngress.color_counter", 0)[0] == 1


def test_packet_io_clones_a_copy_to_the_controller(compiled):
    sw = engine(compiled("packet_io"), cpu_port=255)
    sw.clone_session_set(99, [(255, 0)])
    sw.table_add("l2_forward", [("exact", mac(MAC_B))], "MyIngress.set_egress_port",
                 [(3).to_bytes(2, "big")])
    anything = [("ternary", bytes(n), bytes(n)) for n in (2, 6, 6)]
    sw.table_add("MyIngress.acl", anything + [("ternary", b"\x08\x00", b"\xff\xff")],
                 "MyIngress.copy_to_cpu", [], priority=1)
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP())
    assert sorted(sw.process_packet(5, frame)) == [
        (3, frame), (255, (5 << 7).to_bytes(2, "big") + frame)]


def test_mirror_recirc_samples_truncated_copies(compiled):
    sw = engine(compiled("mirror_recirc"))
    sw.clone_session_set(500, [(9, 0)])
    sw.table_add("MyIngress.port_security", [("exact", (4).to_bytes(2, "big")),
                                             ("exact", mac(MAC_A))],
                 "MyIngress.forward", [(6).to_bytes(2, "big")])
    sw.table_add("MyIngress.sampler", [("exact", (4).to_bytes(2, "big"))],
                 "MyIngress.sample", [(1).to_bytes(4, "big")])       # one in 1: always
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP() / (b"z" * 200))
    assert sorted(sw.process_packet(4, frame)) == [(6, frame), (9, frame[:64])]


def test_ipv4_options_survive_routing(compiled):
    sw = engine(compiled("ipv4_options"))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip4("10.0.2.0"), 24)],
                 "MyIngress.ipv4_forward", [mac(MAC_B), (2).to_bytes(2, "big")])
    options = [IPOption_RR(routers=["192.0.2.1", "192.0.2.2"])]    # 11 bytes + padding
    frame = raw(Ether(src=MAC_A, dst=MAC_R) / IP(dst="10.0.2.2", ttl=9, options=options) / UDP())
    [(port, out)] = sw.process_packet(1, frame)
    assert port == 2 and Ether(out)[IP].ttl == 8
    assert out[14 + 20:] == frame[14 + 20:]                      # options and payload intact
    assert ipv4_checksum_ok(out)                                   # the sum covers the options
