"""Structural check of BMv2 JSON (JSON Schema for the shape, then cross-references).

Used by the tests and available to tools: `problems(j)` returns a list of
human-readable problems, empty when the JSON is well formed per
behavioral-model's docs/JSON_format.md.
"""
import jsonschema

_TV = {"type": "object", "required": ["type", "value"]}
_NAMED = {"type": "object", "required": ["name", "id"]}
_SRC = {"type": ["object", "null"]}


def _array_of(item):
    return {"type": "array", "items": item}


def _named(required, props=None):
    return {"type": "object", "required": ["name", "id"] + required,
            "properties": dict({"name": {"type": "string"}, "id": {"type": "integer"}},
                               **(props or {}))}


_PRIMITIVE = {"type": "object", "required": ["op", "parameters"],
              "properties": {"op": {"type": "string"}, "parameters": _array_of(_TV)}}
_TABLE = _named(["key", "match_type", "type", "max_size", "with_counters", "support_timeout",
                 "direct_meters", "action_ids", "actions", "base_default_next", "next_tables"], {
    "match_type": {"enum": ["exact", "lpm", "ternary", "range"]},
    "type": {"enum": ["simple", "indirect", "indirect_ws"]},
    "key": _array_of({"type": "object", "required": ["match_type", "target", "mask"],
                      "properties": {"match_type": {"enum": ["exact", "lpm", "ternary", "range",
                                                             "valid", "optional"]}}}),
    "action_ids": _array_of({"type": "integer"}),
    "actions": _array_of({"type": "string"}),
    "next_tables": {"type": "object"},
})
_CONDITIONAL = _named(["expression", "true_next", "false_next"])
_PARSE_STATE = _named(["parser_ops", "transition_key", "transitions"], {
    "parser_ops": _array_of({"type": "object", "required": ["op", "parameters"],
                             "properties": {"op": {"enum": ["extract", "extract_VL", "set",
                                                            "verify", "shift", "advance",
                                                            "primitive"]}}}),
    "transition_key": _array_of(_TV),
    "transitions": _array_of({"type": "object", "required": ["type", "value", "mask",
                                                             "next_state"],
                              "properties": {"type": {"enum": ["default", "hexstr",
                                                               "parse_vset"]}}}),
})
SCHEMA = {
    "type": "object",
    "required": ["header_types", "headers", "header_stacks", "errors", "enums", "parsers",
                 "deparsers", "meter_arrays", "counter_arrays", "register_arrays",
                 "calculations", "learn_lists", "actions", "pipelines", "checksums",
                 "field_lists", "parse_vsets", "__meta__"],
    "properties": {
        "__meta__": {"type": "object", "required": ["version"]},
        "header_types": _array_of(_named(["fields"], {"fields": _array_of(
            {"type": "array", "minItems": 2, "maxItems": 3})})),
        "headers": _array_of(_named(["header_type", "metadata"])),
        "header_stacks": _array_of(_named(["header_type", "header_ids"])),
        "parsers": _array_of(_named(["init_state", "parse_states"],
                                    {"parse_states": _array_of(_PARSE_STATE)})),
        "deparsers": _array_of(_named(["order"])),
        "actions": _array_of(_named(["runtime_data", "primitives"],
                                    {"primitives": _array_of(_PRIMITIVE)})),
        "pipelines": _array_of(_named(["init_table", "tables", "conditionals"], {
            "tables": _array_of(_TABLE), "conditionals": _array_of(_CONDITIONAL)})),
        "calculations": _array_of(_named(["algo", "input"])),
        "checksums": _array_of(_named(["target", "type", "calculation"])),
        "register_arrays": _array_of(_named(["size", "bitwidth"])),
        "counter_arrays": _array_of(_named(["size", "is_direct"])),
        "meter_arrays": _array_of(_named(["size", "is_direct", "type", "rate_count"])),
        "learn_lists": _array_of(_named(["elements"])),
    },
}


def problems(j):
    try:
        jsonschema.validate(j, SCHEMA)
    except jsonschema.ValidationError as e:
        return [f"schema: {'/'.join(map(str, e.absolute_path))}: {e.message}"]
    return _references(j)


def _references(j):
    out = []
    fields = {h["name"]: {f[0] for f in h["fields"]} for h in j["header_types"]}
    header_type = {h["name"]: h["header_type"] for h in j["headers"]}
    names = {k: {x["name"] for x in j[k]} for k in (
        "calculations", "register_arrays", "counter_arrays", "meter_arrays", "header_stacks",
        "parse_vsets")}
    names["header"] = set(header_type)
    action_ids = {a["id"]: a["name"] for a in j["actions"]}

    def check_tv(tv, where):
        if isinstance(tv, list):
            for x in tv:
                check_tv(x, where)
            return
        if not isinstance(tv, dict):
            return
        t, v = tv.get("type"), tv.get("value")
        if t == "field":
            h, f = v
            if h not in header_type:
                out.append(f"{where}: unknown header instance '{h}'")
            elif f != "$valid$" and f not in fields[header_type[h]]:
                out.append(f"{where}: unknown field '{h}.{f}'")
        elif t in ("header", "regular") and v not in names["header"]:
            out.append(f"{where}: unknown header '{v}'")
        elif t in ("calculation", "register_array", "counter_array", "meter_array"):
            if v not in names[t + "s"]:
                out.append(f"{where}: unknown {t} '{v}'")
        elif t in ("header_stack", "stack") and v not in names["header_stacks"]:
            out.append(f"{where}: unknown header stack '{v}'")
        for sub in tv.values():
            if isinstance(sub, (dict, list)):
                check_tv(sub, where)

    for a in j["actions"]:
        for p in a["primitives"]:
            check_tv(p["parameters"], f"action {a['name']}")
    for c in j["calculations"]:
        check_tv(c["input"], f"calculation {c['name']}")
    for c in j["checksums"]:
        check_tv({"type": "field", "value": c["target"]}, f"checksum {c['name']}")
        if c["calculation"] not in names["calculations"]:
            out.append(f"checksum {c['name']}: unknown calculation")
    for ll in j["learn_lists"]:
        check_tv(ll["elements"], f"learn list {ll['name']}")
    for p in j["parsers"]:
        out += _check_parser(p, check_tv)
    for d in j["deparsers"]:
        for h in d["order"]:
            if h not in header_type:
                out.append(f"deparser: unknown header '{h}'")
    for pl in j["pipelines"]:
        out += _check_pipeline(pl, action_ids, check_tv)
    return out


def _check_parser(p, check_tv):
    out = []
    states = {s["name"] for s in p["parse_states"]}
    if p["init_state"] not in states:
        out.append(f"parser: unknown init state {p['init_state']}")
    for s in p["parse_states"]:
        check_tv(s["parser_ops"], f"state {s['name']}")
        check_tv(s["transition_key"], f"state {s['name']}")
        for t in s["transitions"]:
            if t["next_state"] is not None and t["next_state"] not in states:
                out.append(f"state {s['name']}: unknown next state {t['next_state']}")
    return out


def _check_pipeline(pl, action_ids, check_tv):
    out = []
    nodes = {t["name"] for t in pl["tables"]} | {c["name"] for c in pl["conditionals"]}
    if len(nodes) != len(pl["tables"]) + len(pl["conditionals"]):
        out.append(f"pipeline {pl['name']}: duplicate node names")

    def check_next(n, where):
        if n is not None and n not in nodes:
            out.append(f"{where}: unknown next node '{n}'")
    check_next(pl["init_table"], f"pipeline {pl['name']}")
    for t in pl["tables"]:
        for aid, aname in zip(t["action_ids"], t["actions"]):
            if action_ids.get(aid) != aname:
                out.append(f"table {t['name']}: action id {aid} is not '{aname}'")
        for k, n in t["next_tables"].items():
            if k not in t["actions"] and k not in ("__HIT__", "__MISS__"):
                out.append(f"table {t['name']}: next_tables key '{k}' is not an action")
            check_next(n, f"table {t['name']}")
        check_next(t["base_default_next"], f"table {t['name']}")
        for k in t["key"]:
            check_tv({"type": "field", "value": k["target"]}, f"table {t['name']} key")
        de = t.get("default_entry")
        if de and de["action_id"] not in t["action_ids"]:
            out.append(f"table {t['name']}: default action not in its actions")
    for c in pl["conditionals"]:
        check_tv(c["expression"], f"conditional {c['name']}")
        check_next(c["true_next"], f"conditional {c['name']}")
        check_next(c["false_next"], f"conditional {c['name']}")
    return out
