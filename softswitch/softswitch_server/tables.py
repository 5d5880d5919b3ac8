"""Validation and canonical form of P4Runtime table entries.

A `MatchKey` is the canonical, hashable identity of an entry: one item per
P4Info match field (None = don't care) plus the priority. From it come both
the engine's key tuples and the canonical `FieldMatch` list of Read replies,
so what a client writes is what it reads back (spec section 8.4).
"""
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from .bytestrings import canonical, decode, lpm_mask, padded, shown
from .errors import invalid, permission_denied
from .p4info_index import MatchType, P4InfoIndex, Scope, TableInfo

MATCH_ONEOF = {
    MatchType.EXACT: "exact", MatchType.LPM: "lpm", MatchType.TERNARY: "ternary",
    MatchType.RANGE: "range", MatchType.OPTIONAL: "optional",
}


@dataclass(frozen=True)
class MatchKey:
    fields: tuple  # per P4Info match field: None or (kind, a, b)
    priority: int


@dataclass(frozen=True)
class ActionSpec:
    action_id: int
    params: tuple  # int values in P4Info parameter order


def match_key(table: TableInfo, entry: p4runtime_pb2.TableEntry) -> MatchKey:
    """Validate the match and priority of `entry`; return its canonical key."""
    given = {}
    for fm in entry.match:
        if fm.field_id in given:
            raise invalid(f"table '{table.name}': match field {fm.field_id} given twice")
        info = table.match_fields.get(fm.field_id)
        if info is None:
            raise invalid(f"table '{table.name}': unknown match field id {fm.field_id}")
        given[fm.field_id] = _field_value(table, info, fm)
    fields = []
    for field_id, info in table.match_fields.items():
        value = given.get(field_id)
        if value is None and info.match_type == MatchType.EXACT:
            raise invalid(f"table '{table.name}': exact field '{info.name}' is missing")
        fields.append(value)
    return MatchKey(tuple(fields), _priority(table, entry.priority))


def _priority(table: TableInfo, priority: int) -> int:
    if priority < 0:
        raise invalid(f"table '{table.name}': negative priority {priority}")
    if table.needs_priority and priority == 0:
        raise invalid(f"table '{table.name}' has ternary/range/optional fields: priority must be > 0")
    if not table.needs_priority and priority != 0:
        raise invalid(f"table '{table.name}' has only exact/lpm fields: priority must be 0")
    return priority


def _field_value(table, info, fm):
    kind = fm.WhichOneof("field_match_type")
    if kind != MATCH_ONEOF[info.match_type]:
        raise invalid(f"table '{table.name}' field '{info.name}': expected a "
                      f"{MATCH_ONEOF[info.match_type]} match, got {kind}")
    what = f"table '{table.name}' field '{info.name}'"
    width = info.bitwidth
    if info.is_error:
        return (kind, _error_code(info, getattr(fm, kind).value, what), None)
    if kind == "exact":
        return ("exact", decode(fm.exact.value, width, what), None)
    if kind == "optional":
        return ("optional", decode(fm.optional.value, width, what), None)
    if kind == "lpm":
        return _lpm(fm.lpm, width, what)
    if kind == "ternary":
        return _ternary(fm.ternary, width, what)
    return _range(fm.range, width, what)


def _error_code(info, data: bytes, what: str) -> int:
    """An error-typed key's value is the error's name (P4Runtime: no integer value)."""
    name = data.decode("utf-8", "replace")
    if name not in info.error_codes:
        raise invalid(f"{what}: {shown(data)} is not an error name "
                      f"(one of {', '.join(sorted(info.error_codes))})")
    return info.error_codes[name]


def _lpm(lpm, width, what):
    value = decode(lpm.value, width, what)
    plen = lpm.prefix_len
    if not 0 < plen <= width:
        raise invalid(f"{what}: prefix length {plen} not in 1..{width} (omit the field for /0)")
    if value & ~lpm_mask(plen, width):
        raise invalid(f"{what}: value has bits set beyond the /{plen} prefix (not canonical)")
    return ("lpm", value, plen)


def _ternary(ternary, width, what):
    value = decode(ternary.value, width, what)
    mask = decode(ternary.mask, width, what + " mask")
    if mask == 0:
        raise invalid(f"{what}: all-zero mask (omit the field for don't care)")
    if value & ~mask:
        raise invalid(f"{what}: value has bits set outside the mask (not canonical)")
    return ("ternary", value, mask)


def _range(rng, width, what):
    low = decode(rng.low, width, what + " low")
    high = decode(rng.high, width, what + " high")
    if low > high:
        raise invalid(f"{what}: range low {low} > high {high}")
    if low == 0 and high == (1 << width) - 1:
        raise invalid(f"{what}: full range (omit the field for don't care)")
    return ("range", low, high)


def action_spec(index: P4InfoIndex, table: TableInfo, table_action, default: bool) -> ActionSpec:
    """Validate the action of an entry (or of the default entry) of a direct table."""
    kind = table_action.WhichOneof("type")
    if kind is None:
        raise invalid(f"table '{table.name}': entry has no action")
    if kind != "action":
        raise invalid(f"table '{table.name}' has no action profile: give an action, not {kind}")
    return action_call(index, table.name, table.action_scopes, table_action.action, default)


def action_call(index: P4InfoIndex, owner: str, scopes: dict, action, default: bool) -> ActionSpec:
    """Validate an action call of a table (or of an action profile's member)."""
    if action.action_id not in scopes:
        raise invalid(f"{owner}: action id {action.action_id} is not one of its actions")
    scope = scopes[action.action_id]
    info = index.actions[action.action_id]
    # spec §9.1.2: a valid action used against its scope is PERMISSION_DENIED
    if default and scope == Scope.TABLE_ONLY:
        raise permission_denied(f"action '{info.name}' is @tableonly: not allowed as default action")
    if not default and scope == Scope.DEFAULT_ONLY:
        raise permission_denied(f"action '{info.name}' is @defaultonly: not allowed in an entry")
    return ActionSpec(action.action_id, _params(info, action.params))


def _params(info, params):
    values = {}
    for p in params:
        if p.param_id in values:
            raise invalid(f"action '{info.name}': parameter {p.param_id} given twice")
        if p.param_id not in info.params:
            raise invalid(f"action '{info.name}': unknown parameter id {p.param_id}")
        name, width = info.params[p.param_id]
        values[p.param_id] = decode(p.value, width, f"action '{info.name}' parameter '{name}'")
    missing = [info.params[i][0] for i in info.params if i not in values]
    if missing:
        raise invalid(f"action '{info.name}': missing parameters {missing}")
    return tuple(values[i] for i in info.params)


def engine_keys(table: TableInfo, key: MatchKey) -> list:
    """The engine's key tuples (one per JSON key field, fixed-width bytes)."""
    keys = []
    for info, value in zip(table.match_fields.values(), key.fields):
        keys.append(_engine_key(info, value))
    return keys


def _engine_key(info, value):
    w = info.engine_width if info.is_error else info.bitwidth
    full = (1 << w) - 1
    if info.match_type == MatchType.EXACT:
        return ("exact", padded(value[1], w))
    if info.match_type == MatchType.LPM:
        v, plen = (value[1], value[2]) if value else (0, 0)
        return ("lpm", padded(v, w), plen)
    if info.match_type == MatchType.RANGE:
        lo, hi = (value[1], value[2]) if value else (0, full)
        return ("range", padded(lo, w), padded(hi, w))
    if info.match_type == MatchType.OPTIONAL:
        v, mask = (value[1], full) if value else (0, 0)
        return ("ternary", padded(v, w), padded(mask, w))
    v, mask = (value[1], value[2]) if value else (0, 0)
    return ("ternary", padded(v, w), padded(mask, w))


def engine_args(index: P4InfoIndex, spec: ActionSpec) -> list:
    """Action arguments as fixed-width bytes, in parameter order."""
    params = index.actions[spec.action_id].params.values()
    return [padded(v, width) for v, (_, width) in zip(spec.params, params)]


def fill_match(table: TableInfo, key: MatchKey, entry: p4runtime_pb2.TableEntry) -> None:
    """Write the canonical match and priority of `key` into `entry`."""
    for info, value in zip(table.match_fields.values(), key.fields):
        if value is None:
            continue
        fm = entry.match.add(field_id=info.id)
        kind, a, b = value
        if info.is_error:
            names = {code: name for name, code in info.error_codes.items()}
            getattr(fm, kind).value = names[a].encode()
        elif kind == "exact":
            fm.exact.value = canonical(a)
        elif kind == "optional":
            fm.optional.value = canonical(a)
        elif kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = canonical(a), b
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = canonical(a), canonical(b)
        else:
            fm.range.low, fm.range.high = canonical(a), canonical(b)
    entry.priority = key.priority


def fill_action(index: P4InfoIndex, spec: ActionSpec, entry: p4runtime_pb2.TableEntry) -> None:
    fill_call(index, spec, entry.action.action)


def fill_call(index: P4InfoIndex, spec: ActionSpec, action: p4runtime_pb2.Action) -> None:
    action.action_id = spec.action_id
    for param_id, value in zip(index.actions[spec.action_id].params, spec.params):
        action.params.add(param_id=param_id, value=canonical(value))
