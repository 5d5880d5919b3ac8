"""Parse an STF file (p4c's BMv2 packet-test format) into commands.

The whole file is parsed before anything runs, so a malformed line changes
nothing; each error is one line, `file:line: error: message`.
"""
import re
from dataclasses import dataclass, field


class StfError(Exception):
    """A malformed or unresolvable STF line; str() is the one-line message."""

    def __init__(self, where, message):
        super().__init__(f"{where}: error: {message}")


@dataclass(frozen=True)
class Where:
    file: str
    line: int

    def __str__(self):
        return f"{self.file}:{self.line}"


@dataclass
class Command:
    where: Where
    kind: str
    args: dict = field(default_factory=dict)


COMPARATORS = {"==", "!=", "<", "<=", ">", ">="}
_NAME = r"[A-Za-z_$][\w$.\[\]]*"
_ADD_TAIL = re.compile(rf"^({_NAME})\s*\((.*)\)\s*(?:=\s*(\w+))?$")
_ACTION = re.compile(rf"^({_NAME})\s*\((.*)\)$")
_CHECK = re.compile(rf"^({_NAME})\s*\(\s*(\$?\w+)\s*\)\s*(?:(packets|bytes)?\s*(==|!=|<=|>=|<|>)\s*(\S+))?$")
_REF = re.compile(r"^(member|group)=(\d+)$")
_PACKET_HEX = re.compile(r"^[0-9a-fA-F]*$")
_EXPECT_HEX = re.compile(r"^[0-9a-fA-F*]*\$?$")


def parse_file(path):
    with open(path) as f:
        return parse_text(f.read(), path)


def parse_text(text, filename="<stf>"):
    """Return the list of Commands; raises StfError at the first bad line."""
    commands = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            commands.append(parse_line(line, Where(filename, number)))
    return commands


def parse_line(line, where):
    word, _, rest = line.partition(" ")
    kind = word.lower()
    parse = _PARSERS.get(kind)
    if parse is None:
        raise StfError(where, f"unknown command '{word}'")
    return Command(where, kind, parse(rest.strip(), where))


def _port(text, where):
    if not text.isdigit():
        raise StfError(where, f"port must be a decimal number, got '{text}'")
    return int(text)


def _integers(words, count, usage, where):
    if len(words) != count or not all(w.isdigit() for w in words):
        raise StfError(where, f"usage: {usage}")
    return [int(w) for w in words]


def _args(text, where):
    """`name:value, name:value` -> [(name, value)]."""
    pairs = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, colon, value = (s.strip() for s in item.partition(":"))
        if not colon or not name or not value:
            raise StfError(where, f"action argument '{item}' is not NAME:VALUE")
        pairs.append((name, value))
    return pairs


def _parse_add(rest, where):
    """`TABLE [PRIO] KEY:VALUE... ACTION(ARGS) [= ID]`, or `... member=N` / `group=N`
    (an entry of an action-profile/selector table pointing at a member or group)."""
    usage = "usage: add TABLE [PRIORITY] KEY:VALUE ... ACTION(ARG:VALUE, ...) | member=N | group=N"
    paren = rest.find("(")
    words = (rest[:paren] if paren >= 0 else rest).split()
    ref = _REF.match(words[-1]) if paren < 0 and words else None
    if len(words) < 2 or (paren < 0 and ref is None):
        raise StfError(where, usage)
    table, *keys, last = words
    priority = None
    if keys and keys[0][0].isdigit():
        if not keys[0].isdigit():
            raise StfError(where, f"priority must be a decimal number, got '{keys[0]}'")
        priority = int(keys.pop(0))
    entry = {"table": table, "priority": priority, "keys": [_key(k, where) for k in keys],
             "action": None, "args": [], "ref": None, "handle": None}
    if ref:
        entry["ref"] = (ref.group(1), int(ref.group(2)))
        return entry
    tail = _ADD_TAIL.match(last + rest[paren:])
    if tail is None:
        raise StfError(where, f"cannot read the action call '{last + rest[paren:]}'")
    entry.update(action=tail.group(1), args=_args(tail.group(2), where), handle=tail.group(3))
    return entry


def _key(key, where):
    name, colon, value = _split_key(key)
    if not colon or not name or not value:
        raise StfError(where, f"key '{key}' is not FIELD:VALUE")
    return name, value


def _split_key(key):
    """`FIELD:VALUE` split at the first colon outside brackets (`f[22:18]:0x7c0000`)."""
    after_brackets = key.find("]") + 1 if "[" in key.partition(":")[0] else 0
    colon = key.find(":", after_brackets)
    return (key, "", "") if colon < 0 else (key[:colon], ":", key[colon + 1:])


def _parse_setdefault(rest, where):
    table, _, call = rest.partition(" ")
    action = _ACTION.match(call.strip())
    if not table or action is None:
        raise StfError(where, "usage: setdefault TABLE ACTION(ARG:VALUE, ...)")
    return {"table": table, "action": action.group(1), "args": _args(action.group(2), where)}


def _parse_packet(rest, where):
    port, _, data = rest.partition(" ")
    data = "".join(data.split())
    if not _PACKET_HEX.match(data):              # no bytes: an empty frame
        raise StfError(where, "usage: packet PORT HEXBYTES")
    if len(data) % 2:     # p4c's runner reads digits in pairs: a last lone digit is a byte
        data = data[:-1] + "0" + data[-1]
    return {"port": _port(port, where), "data": bytes.fromhex(data)}


def _parse_expect(rest, where):
    port, _, data = rest.partition(" ")
    data = "".join(data.split()).upper()
    if not _EXPECT_HEX.match(data):
        raise StfError(where, "usage: expect PORT [HEX with * wildcard nibbles, optional $ at the end]")
    exact_length = data.endswith("$")
    return {"port": _port(port, where), "pattern": data.rstrip("$"), "exact_length": exact_length,
            "any": data == ""}


def _parse_wait(rest, where):
    if rest:
        raise StfError(where, "wait takes no arguments")
    return {}


def _parse_mirroring_add(rest, where):
    session, port = _integers(rest.split(), 2, "mirroring_add SESSION PORT", where)
    return {"session": session, "port": port}


def _parse_mc_mgrp_create(rest, where):
    (group,) = _integers(rest.split(), 1, "mc_mgrp_create GROUP", where)
    return {"group": group}


def _parse_mc_node_create(rest, where):
    words = rest.split()
    if len(words) < 2 or not all(w.isdigit() for w in words):
        raise StfError(where, "usage: mc_node_create RID PORT [PORT ...]")
    return {"rid": int(words[0]), "ports": [int(w) for w in words[1:]]}


def _parse_mc_node_associate(rest, where):
    group, node = _integers(rest.split(), 2, "mc_node_associate GROUP NODE_HANDLE", where)
    return {"group": group, "node": node}


def _parse_check(rest, where, kind):
    m = _CHECK.match(rest)
    if m is None or (kind == "check_register" and m.group(3)):
        usage = ("check_counter NAME(INDEX|$ENTRY) [packets|bytes] OP NUMBER" if kind == "check_counter"
                 else "check_register NAME(INDEX) OP NUMBER")
        raise StfError(where, f"usage: {usage}")
    name, index, unit, op, value = m.groups()
    if op is None:  # p4c's grammar: a bare check_counter asserts the count is 0
        op, value = "==", "0"
    return {"name": name, "index": index, "unit": unit or "packets", "op": op, "value": value}


def _parse_member(rest, where):
    words = rest.split(None, 2)
    action = _ACTION.match(words[2].strip()) if len(words) == 3 else None
    if action is None or not words[1].isdigit():
        raise StfError(where, "usage: member PROFILE ID ACTION(ARG:VALUE, ...)")
    return {"profile": words[0], "member": int(words[1]), "action": action.group(1),
            "args": _args(action.group(2), where)}


def _parse_group(rest, where):
    words = rest.split()
    if len(words) < 2 or not all(w.isdigit() for w in words[1:]):
        raise StfError(where, "usage: group PROFILE ID [MEMBER ...]")
    return {"profile": words[0], "group": int(words[1]), "members": [int(w) for w in words[2:]]}


QUEUE_FIELDS = ("enq_qdepth", "enq_timestamp", "deq_timedelta", "deq_qdepth")


def _parse_queue(rest, where):
    """`queue FIELD=N ...` (queue metadata egress sees from now on) or `queue reset`."""
    usage = f"usage: queue reset | queue FIELD=N ... (FIELD: {', '.join(QUEUE_FIELDS)})"
    if rest == "reset":
        return {"fields": {}}
    fields = {}
    for item in rest.split():
        name, eq, value = item.partition("=")
        if name not in QUEUE_FIELDS or not eq or not value.isdigit():
            raise StfError(where, usage)
        fields[name] = int(value)
    if not fields:
        raise StfError(where, usage)
    return {"fields": fields}


def _parse_register_write(rest, where):
    words = rest.split()
    if len(words) != 3 or not words[1].isdigit():
        raise StfError(where, "usage: register_write NAME INDEX VALUE")
    return {"name": words[0], "index": words[1], "value": words[2]}


_PARSERS = {
    "add": _parse_add,
    "setdefault": _parse_setdefault,
    "packet": _parse_packet,
    "expect": _parse_expect,
    "wait": _parse_wait,
    "mirroring_add": _parse_mirroring_add,
    "mc_mgrp_create": _parse_mc_mgrp_create,
    "mc_node_create": _parse_mc_node_create,
    "mc_node_associate": _parse_mc_node_associate,
    "check_counter": lambda rest, where: _parse_check(rest, where, "check_counter"),
    "check_register": lambda rest, where: _parse_check(rest, where, "check_register"),
    "register_write": _parse_register_write,
    "queue": _parse_queue,
    "member": _parse_member,
    "group": _parse_group,
}
