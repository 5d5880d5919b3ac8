"""Checks that a BMv2 JSON device config and a P4Info describe one program.

SetForwardingPipelineConfig receives the two separately; a mismatched pair
would make every later request ambiguous, so it is refused up front with
INVALID_ARGUMENT naming the first object that differs. The engine then
validates the JSON itself.
"""
import json

from .errors import invalid
from .p4info_index import MatchType, P4InfoIndex

JSON_MATCH_KINDS = {
    MatchType.EXACT: {"exact", "valid"},
    MatchType.LPM: {"lpm"},
    MatchType.TERNARY: {"ternary"},
    MatchType.RANGE: {"range"},
    MatchType.OPTIONAL: {"optional", "ternary"},
}


def parse_device_config(data: bytes) -> dict:
    """Decode `p4_device_config` (BMv2 JSON bytes) into a dict."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise invalid(f"p4_device_config is not valid BMv2 JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("pipelines"), list):
        raise invalid("p4_device_config is not a BMv2 JSON program (no 'pipelines' list)")
    return doc


class _JsonProgram:
    """Name-indexed views of the parts of a BMv2 JSON the P4Info refers to."""

    def __init__(self, doc: dict):
        try:
            self.field_widths = {
                (h["name"], f[0]): f[1]
                for h in self._headers_with_types(doc) for f in h["fields"]}
            self.tables = {t["name"]: t for p in doc["pipelines"] for t in p.get("tables", [])}
            self.errors = [tuple(e) for e in doc.get("errors", [])]
            self.actions = {}
            for a in doc.get("actions", []):
                self.actions.setdefault(a["name"], []).append(a)
            self.counters = {c["name"]: c for c in doc.get("counter_arrays", [])}
            self.meters = {m["name"]: m for m in doc.get("meter_arrays", [])}
            self.registers = {r["name"]: r for r in doc.get("register_arrays", [])}
            self.learn_lists = {l["name"]: l for l in doc.get("learn_lists", [])}
            self.value_sets = [v["name"] for v in doc.get("parse_vsets", [])]
            self.profiles = {a["name"]: a for p in doc["pipelines"]
                             for a in p.get("action_profiles", [])}
        except (KeyError, TypeError, IndexError) as e:
            raise invalid(f"BMv2 JSON: malformed object list ({e!r})") from None

    @staticmethod
    def _headers_with_types(doc):
        types = {t["name"]: t for t in doc.get("header_types", [])}
        for h in doc.get("headers", []):
            yield {"name": h["name"], "fields": types[h["header_type"]]["fields"]}


def check_consistent(index: P4InfoIndex, doc: dict) -> None:
    """Raise INVALID_ARGUMENT unless every P4Info object exists in the JSON and
    every JSON object the control plane can address is in the P4Info."""
    prog = _JsonProgram(doc)
    _check_p4info_in_json(index, prog)
    _check_json_in_p4info(index, prog)


def _check_p4info_in_json(index, prog):
    for action in index.actions.values():
        _check_action(action, prog)
    for table in index.tables.values():
        _check_table(table, index, prog)
    for c in index.counters.values():
        _check_array("counter", c, prog.counters, direct=False)
    for m in index.meters.values():
        _check_array("meter", m, prog.meters, direct=False)
    for d in index.direct_counters.values():
        _check_direct("direct counter", d, index, prog.counters)
    for d in index.direct_meters.values():
        _check_direct("direct meter", d, index, prog.meters)
    for r in index.registers.values():
        _check_register(r, prog)
    for d in index.digests.values():
        _check_digest(d, prog)
    for p in index.action_profiles.values():
        _check_profile(p, index, prog)


def _check_json_in_p4info(index, prog):
    """The converse, as p4c emits P4Info: every table the control plane can
    change (with its actions), every counter, meter and register array and
    every learn list. A P4Info that omits one would leave that object
    unaddressable, e.g. an empty P4Info would serve no tables at all."""
    tables = {t.name: t for t in index.tables.values()}
    for jt in prog.tables.values():
        if not _addressable(jt):
            continue
        table = tables.get(jt["name"])
        if table is None:
            raise _mismatch(f"table '{jt['name']}' of the JSON is not in the P4Info")
        refs = {index.actions[a].name for a in table.action_scopes}
        missing = [a for a in jt.get("actions", []) if a not in refs]
        if missing:
            raise _mismatch(f"table '{jt['name']}': JSON action '{missing[0]}' is not in the P4Info")
    for kind, arrays, in_p4info in (
            ("counter", prog.counters, _names(index.counters, index.direct_counters)),
            ("meter", prog.meters, _names(index.meters, index.direct_meters)),
            ("register", prog.registers, _names(index.registers)),
            ("digest", prog.learn_lists, _names(index.digests))):
        for name, arr in arrays.items():
            if arr.get("is_direct") and not _addressable(prog.tables.get(arr.get("binding"), {})):
                continue
            if name not in in_p4info:
                raise _mismatch(f"{kind} '{name}' of the JSON is not in the P4Info")
    profiles = _names(index.action_profiles)
    for name in prog.profiles:
        if name not in profiles:
            raise _mismatch(f"action profile '{name}' of the JSON is not in the P4Info")
    if prog.value_sets:   # the P4Info would need value_sets, which this target does not serve
        raise _mismatch(f"parser value set '{prog.value_sets[0]}' of the JSON is not in the P4Info")


def _names(*groups) -> set:
    return {o.name for g in groups for o in g.values()}


def _addressable(jt: dict) -> bool:
    """False for the keyless single-action tables with a const default that
    p4c synthesises (tbl_act...) and hides from the P4Info."""
    default = jt.get("default_entry", {})
    return bool(jt.get("key")) or len(jt.get("actions", [])) > 1 or not default.get("action_const")


def _mismatch(message: str):
    return invalid(f"P4Info and BMv2 JSON do not match: {message}")


def _check_action(action, prog):
    variants = prog.actions.get(action.name)
    if not variants:
        raise _mismatch(f"action '{action.name}' is not in the JSON")
    want = [(name, width) for name, width in action.params.values()]
    for variant in variants:
        have = [(p["name"], p["bitwidth"]) for p in variant.get("runtime_data", [])]
        if have == want:
            return
    raise _mismatch(f"action '{action.name}' parameters differ: P4Info {want}")


def _check_table(table, index, prog):
    jt = prog.tables.get(table.name)
    if jt is None:
        raise _mismatch(f"table '{table.name}' is not in the JSON")
    keys = jt.get("key", [])
    if len(keys) != len(table.match_fields):
        raise _mismatch(f"table '{table.name}' has {len(keys)} key fields in the JSON, "
                        f"{len(table.match_fields)} in the P4Info")
    for mf, key in zip(table.match_fields.values(), keys):
        if key.get("match_type") not in JSON_MATCH_KINDS[mf.match_type]:
            raise _mismatch(f"table '{table.name}' field '{mf.name}' match kind differs")
        width = _key_width(key, prog)
        if mf.is_error:
            _bind_error_key(table, mf, key, width, prog)
        elif width is not None and width != mf.bitwidth:
            raise _mismatch(f"table '{table.name}' field '{mf.name}' is {width} bits in the "
                            f"JSON, {mf.bitwidth} in the P4Info")
    if bool(jt.get("action_profile")) != table.is_indirect:
        raise _mismatch(f"table '{table.name}': an action profile implements it in only "
                        "one of the JSON and the P4Info")
    json_actions = set(jt.get("actions", []))
    for action_id in table.action_scopes:
        name = index.actions[action_id].name
        if name not in json_actions:
            raise _mismatch(f"table '{table.name}' lacks action '{name}' in the JSON")


ERROR_BITS = 32   # BMv2 JSON holds error values (parser_error) in 32-bit fields


def _bind_error_key(table, mf, key, width, prog):
    """An error-typed key: the JSON's error codes and the field's width."""
    codes = dict(prog.errors)
    if width != ERROR_BITS or not codes:
        raise _mismatch(f"table '{table.name}' field '{mf.name}' has no width in the P4Info "
                        "but is not an error-typed field of the JSON")
    mf.error_codes, mf.engine_width = codes, width


def _key_width(key, prog):
    target = key.get("target")
    if key.get("match_type") == "valid" or not isinstance(target, list) or len(target) != 2:
        return None
    return prog.field_widths.get(tuple(target))


def _check_array(kind, info, arrays, direct):
    arr = arrays.get(info.name)
    if arr is None or bool(arr.get("is_direct")) != direct:
        raise _mismatch(f"{kind} '{info.name}' is not in the JSON")
    if arr.get("size") != info.size:
        raise _mismatch(f"{kind} '{info.name}' has size {arr.get('size')} in the JSON, {info.size} in the P4Info")


def _check_direct(kind, info, index, arrays):
    arr = arrays.get(info.name)
    table_name = index.tables[info.table_id].name
    if arr is None or not arr.get("is_direct") or arr.get("binding") != table_name:
        raise _mismatch(f"{kind} '{info.name}' bound to '{table_name}' is not in the JSON")


def _check_register(info, prog):
    arr = prog.registers.get(info.name)
    if arr is None:
        raise _mismatch(f"register '{info.name}' is not in the JSON")
    if arr.get("size") != info.size or arr.get("bitwidth") != info.bitwidth:
        raise _mismatch(f"register '{info.name}' size/width differ")


def _check_profile(info, index, prog):
    """Same name, size and selector, and implements the same tables."""
    ap = prog.profiles.get(info.name)
    if ap is None:
        raise _mismatch(f"action profile '{info.name}' is not in the JSON")
    if ap.get("max_size") != info.size or ("selector" in ap) != info.with_selector:
        raise _mismatch(f"action profile '{info.name}': size or selector differ "
                        f"(JSON max_size {ap.get('max_size')}, P4Info size {info.size})")
    for table_id in info.table_ids:
        name = index.tables[table_id].name
        if prog.tables[name].get("action_profile") != info.name:
            raise _mismatch(f"table '{name}' is not implemented by action profile "
                            f"'{info.name}' in the JSON")


def _check_digest(info, prog):
    ll = prog.learn_lists.get(info.name)
    if ll is None:
        raise _mismatch(f"digest '{info.name}' has no learn list in the JSON")
    if len(ll.get("elements", [])) != len(info.field_widths):
        raise _mismatch(f"digest '{info.name}' has a different number of fields")
