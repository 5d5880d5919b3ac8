"""Run parsed STF commands on the engine, synchronously, and check what came out.

Semantics follow p4c's BMv2 runner: commands run in file order; a port is observed
when some `packet` or `expect` line names it; on each observed port the packets
that came out must match that port's `expect` lines one for one, in order (a bare
`expect PORT` accepts anything there); packets to unobserved ports are not checked.
"""
import json
import operator
from collections import defaultdict
from dataclasses import dataclass, field

import softswitch_engine as se

from .names import Program, parse_number
from .stf import StfError

_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
IMPLICIT_MEMBERS = 1 << 30
_ENGINE_ERRORS = (KeyError, ValueError, OverflowError, RuntimeError, se.DuplicateEntryError,
                  se.TableFullError)


@dataclass
class Result:
    packets_in: int = 0
    expected: int = 0
    failures: list = field(default_factory=list)
    log: list = field(default_factory=list)   # every packet out, for --verbose

    @property
    def passed(self):
        return not self.failures


def run(bmv2_json, commands, seed=0):
    """Execute commands on a fresh engine loaded with bmv2_json; return a Result.
    Raises StfError for a line that names something the program lacks."""
    return _Run(bmv2_json, commands, seed).execute()


class _Run:
    def __init__(self, bmv2_json, commands, seed):
        self.switch = se.Switch(ports={}, seed=seed)
        self.switch.load_pipeline(json.dumps(bmv2_json))   # refuses what is not BMv2 JSON
        self.program = Program(bmv2_json)
        self.commands = commands
        self.observed = {c.args["port"] for c in commands if c.kind in ("packet", "expect")}
        self.received = defaultdict(list)
        self.expects = defaultdict(list)
        self.any_ports = set()
        self.handles = {}
        self.mc_nodes = []
        self.mc_groups = {}
        self.implicit_members = {}   # profile -> {(action, args): member id}
        self.queue = {}              # queue metadata for the packets sent from now on
        self.result = Result()
        self.found = []       # (where, failure), reported in file order

    def execute(self):
        for command in self.commands:
            try:
                getattr(self, "do_" + command.kind)(command.where, **command.args)
            except _ENGINE_ERRORS as e:
                raise StfError(command.where, f"{command.kind}: {_engine_message(e)}") from None
        self._compare_outputs()
        return self.result

    # --- control plane -------------------------------------------------------

    def do_add(self, where, table, priority, keys, action, args, ref, handle):
        t = self.program.table(table, where)
        key_tuples = self.program.key_tuples(t, keys, where)
        if ref and not t.profile:
            raise StfError(where, f"{t.name} has no action profile: give ACTION(...), not {ref[0]}=N")
        if ref is None and t.profile:
            ref = ("member", self._implicit_member(t, action, args, where))
        if ref:
            h = self.switch.table_add(t.name, key_tuples, ref, [], priority=priority or 0)
        else:
            action, params = self.program.action(t, action, where)
            h = self.switch.table_add(t.name, key_tuples, action,
                                      self.program.action_args(action, params, args, where),
                                      priority=priority or 0)
        if handle:
            self.handles[handle] = (t.name, h)

    def _implicit_member(self, table, action, args, where):
        """`add` with ACTION(...) on a profile's table: one member per distinct action call,
        numbered from IMPLICIT_MEMBERS so they never meet the file's own `member` ids."""
        name, params = self.program.action(table, action, where)
        values = self.program.action_args(name, params, args, where)
        members = self.implicit_members.setdefault(table.profile, {})
        key = (name, tuple(values))
        if key not in members:
            members[key] = IMPLICIT_MEMBERS + len(members)
            self.switch.act_prof_member_set(table.profile, members[key], name, values)
        return members[key]

    def do_member(self, where, profile, member, action, args):
        p = self.program.profile(profile, where)
        name, params = self.program.action(p, action, where)
        self.switch.act_prof_member_set(p.name, member, name,
                                        self.program.action_args(name, params, args, where))

    def do_group(self, where, profile, group, members):
        self.switch.act_prof_group_set(self.program.profile(profile, where).name, group, members)

    def do_setdefault(self, where, table, action, args):
        t = self.program.table(table, where)
        action, params = self.program.action(t, action, where)
        self.switch.table_set_default(t.name, action,
                                      self.program.action_args(action, params, args, where))

    def do_mirroring_add(self, where, session, port):
        self.switch.clone_session_set(session, [(port, 0)])

    def do_mc_mgrp_create(self, where, group):
        self.mc_groups[group] = []
        self.switch.mc_group_set(group, [])

    def do_mc_node_create(self, where, rid, ports):
        self.mc_nodes.append([(port, rid) for port in ports])   # handles count from 0, as BMv2's

    def do_mc_node_associate(self, where, group, node):
        if group not in self.mc_groups:
            raise StfError(where, f"multicast group {group} was not created (mc_mgrp_create)")
        if node >= len(self.mc_nodes):
            raise StfError(where, f"no multicast node with handle {node} (mc_node_create)")
        self.mc_groups[group].append(node)
        members = [m for n in self.mc_groups[group] for m in self.mc_nodes[n]]
        self.switch.mc_group_set(group, members)

    def do_register_write(self, where, name, index, value):
        reg = self.program.register(name, where)
        self.switch.register_write(reg["name"], int(index), parse_number(value, where))

    def do_queue(self, where, fields):
        self.queue = dict(fields)

    def do_wait(self, where):
        """Processing is synchronous: everything sent so far has already come out."""

    # --- data plane and checks -----------------------------------------------

    def do_packet(self, where, port, data):
        self.result.packets_in += 1
        for out_port, frame in self.switch.process_packet(port, data, **self.queue):
            self.result.log.append((where, out_port, bytes(frame)))
            if out_port in self.observed:
                self.received[out_port].append((where, bytes(frame)))

    def do_expect(self, where, port, pattern, exact_length, any):
        if any:
            self.any_ports.add(port)
        else:
            self.expects[port].append((where, pattern, exact_length))

    def do_check_counter(self, where, name, index, unit, op, value):
        counter = self.program.counter(name, where)
        if index.startswith("$"):
            if index[1:] not in self.handles:
                raise StfError(where, f"no entry was added as '= {index[1:]}'")
            table, handle = self.handles[index[1:]]
            packets, octets = self.switch.direct_counter_read(table, handle)
        elif counter["is_direct"]:
            raise StfError(where, f"{counter['name']} is a direct counter: name an entry, ({index} -> $ID)")
        else:
            packets, octets = self.switch.counter_read(counter["name"], parse_number(index, where))
        got = packets if unit == "packets" else octets
        self._check(where, f"counter {counter['name']}({index}) {unit}", got, op, value)

    def do_check_register(self, where, name, index, unit, op, value):
        reg = self.program.register(name, where)
        got = self.switch.register_read(reg["name"], parse_number(index, where))
        self._check(where, f"register {reg['name']}({index})", got, op, value)

    def _check(self, where, what, got, op, value):
        if not _COMPARE[op](got, parse_number(value, where)):
            self.found.append((where, f"{what} is {got}, expected {op} {value}"))

    def _compare_outputs(self):
        """Per observed port, expect lines against frames in order; failures in file order."""
        for port in sorted(self.observed - self.any_ports):
            expects, received = self.expects.get(port, []), self.received.get(port, [])
            self.result.expected += len(expects)
            for n, ((where, pattern, exact), (_, frame)) in enumerate(zip(expects, received), 1):
                problem = compare_packet(pattern, exact, frame)
                if problem:
                    self.found.append((where, f"port {port}, packet {n}: {problem}"))
            for where, pattern, _ in expects[len(received):]:
                self.found.append((where, f"port {port}: expected packet not received\n"
                                          f"    expected: {pattern}"))
            for where, frame in received[len(expects):]:   # where: the packet line that caused it
                self.found.append((where, f"port {port}: unexpected packet (no expect line left for it)\n"
                                          f"    got:      {frame.hex().upper()}"))
        self.found.sort(key=lambda item: item[0].line)
        self.result.failures.extend(f"{where}: {text}" for where, text in self.found)


def compare_packet(pattern, exact_length, frame):
    """None if the frame matches the pattern (hex nibbles, `*` = any), else what differs."""
    got = frame.hex().upper()
    wrong = [i for i, (e, g) in enumerate(zip(pattern, got)) if e != "*" and e != g]
    if not wrong and len(got) >= len(pattern) and not (exact_length and len(got) > len(pattern)):
        return None
    if wrong:
        head = f"differs at byte {wrong[0] // 2} ({len(wrong)} nibbles differ)"
    elif len(got) < len(pattern):
        head = f"too short: {len(got) // 2} bytes, expected at least {(len(pattern) + 1) // 2}"
    else:
        head = f"too long: {len(got) // 2} bytes, expected exactly {(len(pattern) + 1) // 2} ($)"
    wrong_at = set(wrong)
    marks = "".join("^" if i in wrong_at else " " for i in range(max(wrong, default=-1) + 1))
    return (f"{head}\n    expected: {pattern}{'$' if exact_length else ''}\n    got:      {got}"
            + (f"\n              {marks}" if wrong else ""))


def _engine_message(e):
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
