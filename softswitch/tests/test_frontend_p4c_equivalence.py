"""softswitch-p4c against real p4c on the programs in p4c_reference/ (issue 16).

The P4Info must equal p4c's (ids included: both derive them from the names). The BMv2
JSON must be equivalent where the control plane and the packet can see it: the same
header types and instances, the same tables (keys, actions, defaults, const entries),
the same user actions with primitives and expressions of the same shape, and the same
table-to-table control flow. p4c's mid-end folds constants and merges statements, so
synthetic tables, temporaries and conditionals are compared only through the flow
between user tables.
"""
import json
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from softswitch_p4c.driver import compile_to_objects
from softswitch_p4c.validate import problems

REF = Path(__file__).parent / "p4c_reference"
PROGRAMS = sorted(p.stem for p in REF.glob("*.p4"))


@pytest.fixture(scope="module", params=PROGRAMS)
def pair(request):
    name = request.param
    ours, info = compile_to_objects(str(REF / f"{name}.p4"))
    theirs = json.loads((REF / f"{name}.json").read_text())
    their_info = text_format.Parse((REF / f"{name}.p4info.txtpb").read_text(),
                                   p4info_pb2.P4Info())
    return name, ours, info, theirs, their_info


def test_reference_programs_present():
    assert PROGRAMS == ["f01_l3", "f03_stateful", "f05_tables", "f07_types"]


def test_p4info_equals_p4cs(pair):
    _, _, info, _, their_info = pair
    assert text_format.MessageToString(info) == text_format.MessageToString(their_info)


def test_both_jsons_pass_the_loader_shape_check(pair):
    _, ours, _, theirs, _ = pair
    assert problems(ours) == []
    assert problems(theirs) == []


def test_header_types_and_instances(pair):
    _, ours, _, theirs, _ = pair

    def types(j):
        return {t["name"]: [f[:2] for f in t["fields"]] for t in j["header_types"]
                if t["name"] != "scalars_0"}

    def instances(j):
        return {(h["name"], h["header_type"], h["metadata"]) for h in j["headers"]
                if h["name"] != "scalars"}
    assert types(ours) == types(theirs)
    assert instances(ours) == instances(theirs)
    for k in ("header_stacks", "header_unions", "errors", "field_aliases"):
        assert _names(ours[k]) == _names(theirs[k]), k


def test_tables_keys_actions_defaults_entries(pair):
    _, ours, _, theirs, _ = pair
    assert _user_tables(ours) == _user_tables(theirs)


def test_stateful_objects(pair):
    _, ours, _, theirs, _ = pair
    for kind, fields in (("register_arrays", ("size", "bitwidth")),
                         ("counter_arrays", ("size", "is_direct", "binding")),
                         ("meter_arrays", ("size", "is_direct", "type", "rate_count")),
                         ("calculations", ("algo",))):
        def view(j):
            return {x["name"]: tuple(x.get(f) for f in fields) for x in j[kind]}
        assert view(ours) == view(theirs), kind
    assert [c["algo"] for c in ours["calculations"]] == \
        [c["algo"] for c in theirs["calculations"]]
    assert [_shape(c["input"]) for c in ours["calculations"]] == \
        [_shape(c["input"]) for c in theirs["calculations"]]


def test_user_actions_have_primitives_of_the_same_shape(pair):
    _, ours, _, theirs, _ = pair
    mine, p4c = _user_actions(ours), _user_actions(theirs)
    assert mine.keys() == p4c.keys()
    for name in mine:
        assert mine[name] == p4c[name], name


def test_control_flow_between_user_tables(pair):
    _, ours, _, theirs, _ = pair
    for mine, p4c in zip(ours["pipelines"], theirs["pipelines"]):
        assert _table_flow(mine) == _table_flow(p4c), mine["name"]


def test_parser_states_and_transitions(pair):
    _, ours, _, theirs, _ = pair

    def view(j):
        states = j["parsers"][0]["parse_states"]
        return {s["name"]: ([op["op"] for op in s["parser_ops"] if op["op"] == "extract"],
                            [_shape(k) for k in s["transition_key"]],
                            [(t["type"], t["value"], t["mask"], t["next_state"])
                             for t in s["transitions"]]) for s in states}
    assert view(ours) == view(theirs)
    assert [d["order"] for d in ours["deparsers"]] == [d["order"] for d in theirs["deparsers"]]


# ------------------------------------------------------------------ views

def _names(items):
    return sorted(json.dumps(i if isinstance(i, list) else i["name"]) for i in items)


def _shape(node):
    """The nesting of typed nodes with operators, constants and field names abstracted."""
    if isinstance(node, list):
        return [_shape(x) for x in node]
    if not isinstance(node, dict):
        return node if node is None else "leaf"
    if "op" in node:
        return {k: _shape(v) for k, v in node.items() if k != "op"}
    if "type" in node:
        value = node.get("value")
        inner = _shape(value) if node["type"] == "expression" else "leaf"
        return (node["type"], inner)
    return {k: _shape(v) for k, v in node.items() if k != "source_info"}


def _action_names(j):
    return {a["id"]: a["name"] for a in j["actions"]}


def _user_tables(j):
    names = _action_names(j)
    out = {}
    for pl in j["pipelines"]:
        for t in pl["tables"]:
            if t["name"].startswith("tbl_"):
                continue
            de = t.get("default_entry", {})
            out[t["name"]] = {
                "key": [(k["match_type"], k["name"], k["target"], k["mask"]) for k in t["key"]],
                "match_type": t["match_type"], "type": t["type"], "max_size": t["max_size"],
                "with_counters": t["with_counters"], "direct_meters": t["direct_meters"],
                "actions": t["actions"],
                "default": (names[de["action_id"]], de["action_const"],
                            _ints(de["action_data"]), de["action_entry_const"]),
                "entries": [(e["match_key"], names[e["action_entry"]["action_id"]],
                             _ints(e["action_entry"]["action_data"]), e["priority"])
                            for e in t.get("entries", [])]}
    return out


def _ints(hexstrs):
    """Action data by value: p4c writes it unpadded ("0x5"), both forms load the same."""
    return [int(h, 16) for h in hexstrs]


def _user_actions(j):
    """Actions named by the program (p4c's synthetic ones are named after source lines)."""
    user = {n for pl in j["pipelines"] for t in pl["tables"] if not t["name"].startswith("tbl_")
            for n in t["actions"]}
    return {a["name"]: ([r["bitwidth"] for r in a["runtime_data"]],
                        [(p["op"], _shape(p["parameters"])) for p in a["primitives"]])
            for a in j["actions"] if a["name"] in user}


def _table_flow(pl):
    """For each user table (and the pipeline start): the user tables that can come next."""
    nodes = {t["name"]: t for t in pl["tables"]}
    conds = {c["name"]: c for c in pl["conditionals"]}

    def reach(name, seen=()):
        if name is None:
            return {None}
        if name in seen:
            return set()
        if name in nodes and not name.startswith("tbl_"):
            return {name}
        seen = seen + (name,)
        if name in conds:
            c = conds[name]
            return reach(c["true_next"], seen) | reach(c["false_next"], seen)
        t = nodes[name]
        return set().union(*(reach(n, seen) for n in
                             list(t["next_tables"].values()) + [t["base_default_next"]]))

    flow = {"<start>": reach(pl["init_table"])}
    for name, t in nodes.items():
        if not name.startswith("tbl_"):
            nexts = list(t["next_tables"].values()) + [t["base_default_next"]]
            flow[name] = set().union(*(reach(n) for n in nexts))
    return {k: sorted(v, key=str) for k, v in flow.items()}


# ------------------------------------------------------------------ the loader-shape check itself

def _mutated(edit):
    j, _ = compile_to_objects(str(REF / "f01_l3.p4"))
    edit(j)
    return problems(j)


def _forward(j):
    return next(a for a in j["actions"] if a["name"] == "FxIngress.forward")


@pytest.mark.parametrize("edit, expected", [
    # one-level expression parameter: what real BMv2 refused ("Invalid 'type' in expression")
    (lambda j: _forward(j)["primitives"][3]["parameters"].__setitem__(
        1, _forward(j)["primitives"][3]["parameters"][1]["value"]),
     "actions[0].primitives[3].parameters[1].value: Invalid 'type' in expression"),
    (lambda j: j["pipelines"][0]["conditionals"][0].__setitem__(
        "expression", j["pipelines"][0]["conditionals"][0]["expression"]["value"]),
     "pipelines[0].conditionals[0].expression: Invalid 'type' in expression"),
    (lambda j: _forward(j)["primitives"][1]["parameters"].__setitem__(
        1, {"type": "expression", "value": {"type": "runtime_data", "value": 0}}),
     "parameters[1].value: Invalid 'type' in expression: 'runtime_data'"),
    (lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0].__setitem__(
        "value", "0x000800"), "Parser transition value has incorrect width, expected 2"),
    (lambda j: j["pipelines"][0]["tables"][0]["key"][0].__setitem__("match_type", "optional"),
     "optional"),
    (lambda j: _forward(j)["primitives"][0]["parameters"].__setitem__(
        0, {"type": "lookahead", "value": [0, 8]}), "Parameter type 'lookahead' not supported"),
])
def test_loader_shape_check_names_the_bad_place(edit, expected):
    found = _mutated(edit)
    assert any(expected in p for p in found), found


# ------------------------------------------------------------------ P4Info types (p4c's encoding)

ENUM_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
#include "common.p4h"
enum bit<8> Level { LOW = 1, HIGH = 200 }
enum Mode { FAST, SLOW }
struct headers_t { ethernet_h eth; }
struct meta_t { Level level; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set_level(Level l) { m.level = l; }
    action set_mode(Mode md) { if (md == Mode.FAST) { sm.egress_spec = 1; } }
    table t {
        key = { sm.parser_error: exact; m.level: exact; }
        actions = { set_level; set_mode; }
    }
    apply { t.apply(); }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_p4info_error_and_enum_types_as_p4c_encodes_them(tmp_path):
    (tmp_path / "common.p4h").write_text((REF / "common.p4h").read_text())
    (tmp_path / "prog.p4").write_text(ENUM_PROGRAM)
    j, info = compile_to_objects(str(tmp_path / "prog.p4"))
    (table,) = info.tables
    err, level = table.match_fields
    # p4c: an error-typed key has bitwidth 0 (the P4Runtime value is the error's name
    # space, type_info.error lists them); the JSON key stays the 32-bit field
    assert (err.name, err.bitwidth, err.HasField("type_name")) == ("sm.parser_error", 0, False)
    assert list(info.type_info.error.members)[:2] == ["NoError", "PacketTooShort"]
    # serializable enum: its width, members with values in type_info
    assert (level.bitwidth, level.HasField("type_name")) == (8, False)
    spec = info.type_info.serializable_enums["Level"]
    assert spec.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in spec.members] == [("LOW", b"\x01"), ("HIGH", b"\xc8")]
    actions = {a.preamble.name: a for a in info.actions}
    (lp,) = actions["I.set_level"].params
    (mp,) = actions["I.set_mode"].params
    assert (lp.bitwidth, lp.HasField("type_name")) == (8, False)
    # a plain enum parameter: no width, named by its type, members in type_info.enums
    assert (mp.bitwidth, mp.type_name.name) == (0, "Mode")
    assert [m.name for m in info.type_info.enums["Mode"].members] == ["FAST", "SLOW"]
    assert problems(j) == []
