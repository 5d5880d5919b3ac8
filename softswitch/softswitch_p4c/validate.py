"""Structural check of BMv2 JSON (JSON Schema for the shape, then cross-references).

Used by the tests and available to tools: `problems(j)` returns a list of
human-readable problems, empty when the JSON is well formed per
behavioral-model's docs/JSON_format.md and its loader (P4Objects.cpp):
`loader_problems(j)` names the JSON path BMv2 would refuse.
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
                                                             "valid"]}}}),
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
        "counter_arrays": _array_of(_named(["is_direct"])),
        "meter_arrays": _array_of(_named(["size", "is_direct", "type", "rate_count"])),
        "learn_lists": _array_of(_named(["elements"])),
    },
}


def problems(j):
    try:
        jsonschema.validate(j, SCHEMA)
    except jsonschema.ValidationError as e:
        return [f"schema: {'/'.join(map(str, e.absolute_path))}: {e.message}"]
    return _references(j) + loader_problems(j)


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


# ------------------------------------------------------------------ BMv2 loader shapes
# What behavioral-model's P4Objects.cpp accepts where (build_expression, add_primitive_to_action,
# init_parsers, init_calculations, init_field_lists, init_learn_lists, parse_match_key).
_NODE_TYPES = {"expression", "header", "field", "bool", "hexstr", "local", "register",
               "header_stack", "stack_field", "header_union", "header_union_stack"}
_NODE_OPS = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", "two_comp_mod", "usat_cast",
             "sat_cast", "b2d", "d2b", "last_stack_index", "size_stack", "access_field", "==",
             "!=", ">", "<", ">=", "<=", "and", "or", "not", "valid", "valid_union",
             "dereference_header_stack", "access_union_header", "dereference_union_stack", "?"}
_PRIMITIVE_PARAM_TYPES = {"hexstr", "runtime_data", "header", "field", "calculation",
                          "meter_array", "counter_array", "register_array", "header_stack",
                          "expression", "register", "extern", "string", "stack_field",
                          "header_union", "header_union_stack", "parameters_vector"}
_SET_SOURCES = {"field", "hexstr", "lookahead", "expression"}
_KEY_PARTS = {"exact": ("key",), "lpm": ("key", "prefix_length"), "ternary": ("key", "mask"),
              "range": ("start", "end"), "valid": ("key",)}


def loader_problems(j):
    """Places where BMv2's JSON loader would refuse `j` (expression nesting, value kinds)."""
    out = []
    for i, a in enumerate(j["actions"]):
        for k, p in enumerate(a["primitives"]):
            _primitive(p, f"actions[{i}].primitives[{k}]", out)
    for i, p in enumerate(j["parsers"]):
        for s, st in enumerate(p["parse_states"]):
            where = f"parsers[{i}].parse_states[{s}]"
            for k, op in enumerate(st["parser_ops"]):
                _parser_op(op, f"{where}.parser_ops[{k}]", out)
            for k, key in enumerate(st["transition_key"]):
                if key.get("type") not in ("field", "stack_field", "union_stack_field",
                                           "lookahead"):
                    out.append(f"{where}.transition_key[{k}]: invalid type {key.get('type')!r}")
            _transition_widths(st, j, where, out)
    for i, pl in enumerate(j["pipelines"]):
        for k, c in enumerate(pl["conditionals"]):
            _node(c["expression"], f"pipelines[{i}].conditionals[{k}].expression", out)
        for k, t in enumerate(pl["tables"]):
            _table(t, j, f"pipelines[{i}].tables[{k}]", out)
    for i, c in enumerate(j["checksums"]):
        if c.get("if_cond") is not None:
            _node(c["if_cond"], f"checksums[{i}].if_cond", out)
    for i, c in enumerate(j["calculations"]):
        for k, x in enumerate(c["input"]):
            _list_item(x, f"calculations[{i}].input[{k}]", ("field", "hexstr", "header",
                                                             "payload"), out)
    for i, fl in enumerate(j["field_lists"]):
        for k, x in enumerate(fl["elements"]):
            _list_item(x, f"field_lists[{i}].elements[{k}]", ("field", "hexstr"), out)
    for i, ll in enumerate(j["learn_lists"]):
        for k, x in enumerate(ll["elements"]):
            _list_item(x, f"learn_lists[{i}].elements[{k}]", ("field",), out)
    return out


def _key_bytes(key, j):
    """Bytes a transition key element takes in BMv2's switch-case key (None: unknown)."""
    t, v = key.get("type"), key.get("value")
    if t == "lookahead":
        return (v[1] + 7) // 8
    types = {h["name"]: h for h in j["header_types"]}
    if t == "field":
        htype = next((h["header_type"] for h in j["headers"] if h["name"] == v[0]), None)
    elif t == "stack_field":
        htype = next((s["header_type"] for s in j["header_stacks"] if s["name"] == v[0]), None)
    else:
        return None
    fields = types[htype]["fields"] if htype in types else []
    width = next((f[1] for f in fields if f[0] == v[-1]), 1 if v[-1] == "$valid$" else None)
    return None if width in (None, "*") else (width + 7) // 8


def _transition_widths(st, j, where, out):
    sizes = [_key_bytes(k, j) for k in st["transition_key"]]
    if None in sizes:
        return
    want = sum(sizes)
    for k, t in enumerate(st["transitions"]):
        for part in ("value", "mask"):
            if t["type"] == "hexstr" and t[part] is not None and \
                    (len(t[part]) - 2 + 1) // 2 != want:
                out.append(f"{where}.transitions[{k}]: Parser transition {part} has incorrect "
                           f"width, expected {want} bytes")


def _node(n, where, out, optional=False):
    """An expression node as build_expression reads it."""
    if n is None:
        if not optional:
            out.append(f"{where}: missing operand")
        return
    t = n.get("type") if isinstance(n, dict) else None
    if t not in _NODE_TYPES:
        out.append(f"{where}: Invalid 'type' in expression: {t!r}")
        return
    if t == "hexstr":
        _hexstr(n["value"], where, out)
    if t != "expression":
        return
    v = n["value"]
    if not isinstance(v, dict) or v.get("op") not in _NODE_OPS:
        out.append(f"{where}: expression value must be an operation, not {v!r:.60}")
        return
    op = v["op"]
    if op == "access_field":
        _node(v["left"], where + ".left", out)
        return
    unary = op in ("~", "not", "b2d", "d2b", "valid", "valid_union", "last_stack_index",
                   "size_stack", "usat_cast", "sat_cast") or op in ("+", "-")
    _node(v.get("left"), where + ".left", out, optional=unary)
    _node(v.get("right"), where + ".right", out)
    if op == "?":
        _node(v.get("cond"), where + ".cond", out)


def _hexstr(s, where, out):
    digits = s[1:] if isinstance(s, str) and s.startswith("-") else s
    if not (isinstance(digits, str) and digits.lower().startswith("0x") and len(digits) > 2):
        out.append(f"{where}: bad hexstr {s!r}")
        return
    try:
        int(digits, 16)
    except ValueError:
        out.append(f"{where}: bad hexstr {s!r}")


def _primitive(p, where, out):
    for k, prm in enumerate(p["parameters"]):
        _param(prm, f"{where}.parameters[{k}]", _PRIMITIVE_PARAM_TYPES, out)


def _param(prm, where, allowed, out):
    t = prm.get("type")
    if t not in allowed:
        out.append(f"{where}: Parameter type {t!r} not supported")
    elif t == "expression":
        _node(prm["value"], where + ".value", out)
    elif t == "hexstr":
        _hexstr(prm["value"], where, out)
    elif t == "parameters_vector":                      # log_msg's arguments
        for k, item in enumerate(prm["value"]):
            _param(item, f"{where}.value[{k}]", allowed - {"parameters_vector"}, out)


def _parser_op(op, where, out):
    name, params = op["op"], op["parameters"]
    want = {"extract": 1, "extract_VL": 2, "set": 2, "verify": 2, "primitive": 1,
            "advance": 1, "shift": 1}.get(name)
    if want is None or len(params) != want:
        out.append(f"{where}: parser op {name!r} with {len(params)} parameters")
        return
    if name in ("extract", "extract_VL") and params[0].get("type") not in (
            "regular", "stack", "union_stack"):
        out.append(f"{where}.parameters[0]: Extract type {params[0].get('type')!r}")
    if name == "extract_VL":
        _param(params[1], where + ".parameters[1]", {"expression"}, out)
    elif name == "set":
        if params[0].get("type") != "field":
            out.append(f"{where}.parameters[0]: set destination must be a field")
        _param(params[1], where + ".parameters[1]", _SET_SOURCES, out)
    elif name == "verify":
        _node(params[0], where + ".parameters[0]", out)
        _node(params[1], where + ".parameters[1]", out)
    elif name == "advance":
        _param(params[0], where + ".parameters[0]", {"field", "hexstr", "expression"}, out)
    elif name == "primitive":
        _primitive(params[0], where + ".parameters[0]", out)


def _list_item(x, where, allowed, out):
    if x.get("type") not in allowed:
        out.append(f"{where}: invalid entry type {x.get('type')!r}")
    elif x["type"] == "hexstr" and not isinstance(x.get("bitwidth"), int):
        out.append(f"{where}: a hexstr entry needs a bitwidth")


def _table(t, j, where, out):
    nparams = {a["id"]: len(a["runtime_data"]) for a in j["actions"]}
    for k, key in enumerate(t["key"]):
        if key["match_type"] not in _KEY_PARTS:
            out.append(f"{where}.key[{k}]: Invalid match type {key['match_type']!r}")
    de = t.get("default_entry")
    if de and "action_data" in de and len(de["action_data"]) != nparams.get(de["action_id"]):
        out.append(f"{where}.default_entry: wrong number of action_data")
    for e, entry in enumerate(t.get("entries", [])):
        ewhere = f"{where}.entries[{e}]"
        if len(entry["match_key"]) != len(t["key"]):
            out.append(f"{ewhere}: match_key has {len(entry['match_key'])} fields")
        for mk, ref in zip(entry["match_key"], t["key"]):
            if mk.get("match_type") != ref["match_type"] or any(
                    p not in mk for p in _KEY_PARTS.get(mk.get("match_type"), ())):
                out.append(f"{ewhere}: malformed match key {mk!r:.80}")
        ae = entry["action_entry"]
        if len(ae["action_data"]) != nparams.get(ae["action_id"]):
            out.append(f"{ewhere}: wrong number of action_data")
        if not isinstance(entry.get("priority"), int):
            out.append(f"{ewhere}: priority must be an integer")
