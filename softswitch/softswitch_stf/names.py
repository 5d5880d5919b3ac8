"""What an STF file names, resolved against a BMv2 JSON the way p4c's runner does:
tables, actions, counters and registers by full name or by suffix; key fields by
JSON name, target, `$valid$` spellings or suffix; values encoded at the width the
JSON gives each key field and action parameter."""
import ipaddress
import re
from dataclasses import dataclass

from .stf import StfError

_MAC = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")
_DIGIT_BITS = {"0x": 4, "0b": 1, "0o": 3}
_STACK_INDEX = re.compile(r"(.*)\$([0-9]+)(.*)")


@dataclass
class KeyField:
    names: tuple      # JSON name first, then the dotted target
    match_type: str
    width: int


@dataclass
class Table:
    name: str
    keys: list
    actions: list
    profile: str = None     # the action profile/selector an indirect table takes its actions from


def parse_number(text, where):
    """An STF/CLI number: decimal, 0x/0b/0o, dotted IPv4, IPv6 or MAC -> int."""
    try:
        if _MAC.match(text):
            return int.from_bytes(bytes(int(octet, 16) for octet in text.split(":")), "big")
        if "." in text or text.count(":") >= 2:
            return int(ipaddress.ip_address(text))
        return int(text, 0) if text[:2].lower() in _DIGIT_BITS else int(text, 10)
    except ValueError:
        raise StfError(where, f"'{text}' is not a number") from None


def to_bytes(value, width, what, where):
    if value < 0 or value >> width:
        raise StfError(where, f"value {value:#x} does not fit {what} ({width} bits)")
    return value.to_bytes(max(1, (width + 7) // 8), "big")


class Program:
    """The names of one BMv2 JSON program."""

    def __init__(self, bmv2_json):
        self.json = bmv2_json
        self.widths = self._field_widths(bmv2_json)
        self.actions = {a["name"]: [(p["name"], p["bitwidth"]) for p in a["runtime_data"]]
                        for a in bmv2_json["actions"]}
        self.tables = {}
        for pipeline in bmv2_json["pipelines"]:
            for t in pipeline["tables"]:
                self.tables[t["name"]] = Table(t["name"], [self._key(k) for k in t["key"]],
                                               list(t["actions"]), t.get("action_profile"))
        # a profile offers the actions of the tables that use it
        self.profiles = {}
        for t in self.tables.values():
            if t.profile:
                self.profiles.setdefault(t.profile, Table(t.profile, [], [], t.profile)).actions += \
                    [a for a in t.actions if a not in self.profiles[t.profile].actions]
        self.counters = {c["name"]: c for c in bmv2_json.get("counter_arrays", [])}
        self.registers = {r["name"]: r for r in bmv2_json.get("register_arrays", [])}

    @staticmethod
    def _field_widths(j):
        types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in j["header_types"]}
        return {h["name"]: types[h["header_type"]] for h in j["headers"]}

    def _key(self, k):
        target = k["target"]
        if k["match_type"] == "valid" or target[-1] == "$valid$":
            width = 1
        else:
            width = self.widths[target[0]][target[1]]
        names = tuple(n for n in (k.get("name"), ".".join(target)) if n)
        return KeyField(names, k["match_type"], width)

    # --- names ---------------------------------------------------------------

    def table(self, name, where):
        return self.tables[_by_suffix(name, self.tables, "table", where)]

    def action(self, table, name, where):
        found = _by_suffix(name, table.actions, f"action of table {table.name}", where)
        return found, self.actions[found]

    def profile(self, name, where):
        """An action profile or selector, as a Table whose actions are its tables' actions."""
        return self.profiles[_by_suffix(name, self.profiles, "action profile", where)]

    def counter(self, name, where):
        return self.counters[_by_suffix(name, self.counters, "counter", where)]

    def register(self, name, where):
        return self.registers[_by_suffix(name, self.registers, "register", where)]

    def key_index(self, table, name, where):
        """p4c's spellings: `f`, `f$`, `h.$valid$`, `h.valid`, `valid`, `stack$0.f`, suffixes."""
        m = _STACK_INDEX.match(name)
        if m and not name.endswith("$valid$"):
            name = f"{m.group(1)}[{m.group(2)}]{m.group(3)}"
        spellings = [name, name + "$", name + ".$valid$"]
        if name.endswith(".valid"):
            spellings.append(name[:-len("valid")] + "$valid$")
        for i, key in enumerate(table.keys):
            if any(s in key.names for s in spellings):
                return i
        hits = [i for i, key in enumerate(table.keys)
                if any(n.endswith("." + name) or n.endswith("." + name + "$")
                       or (name == "valid" and n.endswith("$valid$")) for n in key.names)]
        if len(hits) != 1:
            known = ", ".join(k.names[0] for k in table.keys) or "none"
            problem = "is ambiguous" if hits else "is not a key"
            raise StfError(where, f"'{name}' {problem} of table {table.name} (keys: {known})")
        return hits[0]

    # --- values --------------------------------------------------------------

    def action_args(self, action, params, given, where):
        values = dict(given)
        unknown = set(values) - {n for n, _ in params}
        if unknown:
            raise StfError(where, f"action {action} has no parameter {sorted(unknown)[0]}")
        missing = [n for n, _ in params if n not in values]
        if missing:
            raise StfError(where, f"action {action} needs parameter {missing[0]}")
        return [to_bytes(parse_number(values[n], where), w, f"parameter {n}", where) for n, w in params]

    def key_tuples(self, table, given, where):
        """STF key values -> the engine's key tuples; unset fields match anything
        (exact ones match 0, as in p4c's runner)."""
        texts = [None] * len(table.keys)
        for name, text in given:
            texts[self.key_index(table, name, where)] = text
        return [_key_tuple(key, text, where) for key, text in zip(table.keys, texts)]


def _by_suffix(name, names, what, where):
    if name in names:
        return name
    hits = [n for n in names if n.endswith("." + name)] or [n for n in names if n.endswith(name)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise StfError(where, f"{what} name '{name}' is ambiguous: {', '.join(sorted(hits))}")
    raise StfError(where, f"no {what} named '{name}'")


def _key_tuple(key, text, where):
    w, what = key.width, f"key {key.names[0]}"
    full = (1 << w) - 1
    kind = key.match_type
    if text == "*":   # any value: a ternary, LPM, range or optional key left out
        if kind in ("exact", "valid"):
            raise StfError(where, f"{what} is an exact key: '*' cannot match it")
        text = None
    if kind in ("exact", "valid"):
        return ("exact", to_bytes(parse_number(text or "0", where), w, what, where))
    if kind == "ternary":
        value, mask = _ternary(text, full, where) if text else (0, 0)
        return ("ternary", to_bytes(value, w, what, where), to_bytes(mask & full, w, what, where))
    if kind == "lpm":
        value, plen = _lpm(text, w, where) if text else (0, 0)
        if plen > w:
            raise StfError(where, f"prefix length {plen} is longer than {what} ({w} bits)")
        return ("lpm", to_bytes(value, w, what, where), plen)
    if kind == "range":
        lo, _, hi = (text or f"0->{full}").partition("->")
        lo = parse_number(lo.strip(), where)
        hi = parse_number(hi.strip(), where) if hi else lo
        return ("range", to_bytes(lo, w, what, where), to_bytes(hi, w, what, where))
    if kind == "optional":
        if text is None:
            return ("optional", None)
        return ("optional", to_bytes(parse_number(text, where), w, what, where))
    raise StfError(where, f"match kind {kind} of {what} is not supported")


def _ternary(text, full, where):
    """`V&&&M`; hex/binary/octal digits with `*` wildcards (the mask covers the digits
    written, as in p4c's runner); any other number matches exactly."""
    if "&&&" in text:
        value, _, mask = text.partition("&&&")
        return parse_number(value, where), parse_number(mask, where)
    bits = _DIGIT_BITS.get(text[:2].lower())
    if bits is None:
        return parse_number(text, where), full
    digits = text[2:]
    base = 1 << bits
    if not digits or any(d != "*" and not _is_digit(d, base) for d in digits):
        raise StfError(where, f"'{text}' is not a number")
    value = mask = 0
    for d in digits:
        value = (value << bits) | (0 if d == "*" else int(d, base))
        mask = (mask << bits) | (0 if d == "*" else base - 1)
    return value, mask


def _lpm(text, width, where):
    """`V/LEN`; or digits with trailing `*` (prefix = the digits written, as p4c);
    any other number is a full-length prefix."""
    if "/" in text:
        value, _, plen = text.partition("/")
        if not plen.isdigit():
            raise StfError(where, f"prefix length '{plen}' is not a decimal number")
        return parse_number(value, where), int(plen)
    bits = _DIGIT_BITS.get(text[:2].lower())
    if bits is None:
        return parse_number(text, where), width
    digits = text[2:]
    value = parse_number(text[:2] + digits.replace("*", "0"), where)
    return value, (len(digits) - digits.count("*")) * bits


def _is_digit(d, base):
    try:
        return int(d, base) >= 0
    except ValueError:
        return False
