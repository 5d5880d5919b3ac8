"""P4Runtime fuzzing of the server with the real engine.

1. Property test (hypothesis, derandomized, in-process Device): random Write updates never
   crash the server and a refused update never changes state.
2. Model test (gRPC, fixed seed): batches of valid, repeated and mutated
   updates; each accepted or refused update must agree with a model of the
   table entries (INSERT only of absent keys, MODIFY/DELETE only of present
   ones, RESOURCE_EXHAUSTED only when full), and after each batch every entry
   read back must equal the model. About 2,000 updates in a few seconds.
3. Action profile model test (gRPC, fixed seed): member, weighted group and
   indirect entry updates, valid or mutated, against a model of members,
   groups, entries and the profile's capacity; read back and forwarding
   checked after each round.
"""
import random

import grpc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from p4.v1 import p4runtime_pb2
from p4.v1 import p4runtime_pb2 as pb

import softswitch_engine as se
from server_support import (A_DROP, A_FORWARD, A_LEARN, A_NOACTION, A_SET_NHOP, A_TO_CPU,
                            C_PORT, D_LEARN, M_PORT, R_FLOW, T_ACL, T_CONST, T_DMAC, T_LPM,
                            P4RTClient, mini_json, mini_p4info, start_server,
                            wait_for_no_clients, write_error_codes)
from test_server_action_profiles import ids, ipv4_frame, pair, program  # noqa: F401 (fixtures)
from softswitch_server.device import Device, SetAction
from softswitch_server.errors import P4RuntimeError

Update = p4runtime_pb2.Update
small_bytes = st.binary(min_size=0, max_size=6)
TABLES = st.sampled_from([T_LPM, T_ACL, T_DMAC, T_CONST, 0, 77])
ACTIONS = st.sampled_from([A_NOACTION, A_DROP, A_SET_NHOP, A_TO_CPU, A_FORWARD, A_LEARN, 0, 5])


@st.composite
def field_matches(draw):
    fm = p4runtime_pb2.FieldMatch(field_id=draw(st.integers(0, 3)))
    kind = draw(st.sampled_from(["exact", "lpm", "ternary", "range", "optional"]))
    if kind == "lpm":
        fm.lpm.value, fm.lpm.prefix_len = draw(small_bytes), draw(st.integers(-1, 40))
    elif kind == "ternary":
        fm.ternary.value, fm.ternary.mask = draw(small_bytes), draw(small_bytes)
    elif kind == "range":
        fm.range.low, fm.range.high = draw(small_bytes), draw(small_bytes)
    else:
        getattr(fm, kind).value = draw(small_bytes)
    return fm


@st.composite
def table_entries(draw):
    e = p4runtime_pb2.TableEntry(table_id=draw(TABLES), priority=draw(st.integers(-2, 5)),
                                 is_default_action=draw(st.booleans()))
    e.match.extend(draw(st.lists(field_matches(), max_size=3)))
    if draw(st.booleans()):
        e.action.action.action_id = draw(ACTIONS)
        for _ in range(draw(st.integers(0, 3))):
            e.action.action.params.add(param_id=draw(st.integers(0, 3)), value=draw(small_bytes))
    if draw(st.booleans()):
        e.counter_data.packet_count = draw(st.integers(0, 10))
    return e


@st.composite
def other_entities(draw):
    kind = draw(st.sampled_from(["counter", "register", "meter", "pre", "digest"]))
    ent = p4runtime_pb2.Entity()
    if kind == "counter":
        ent.counter_entry.counter_id = draw(st.sampled_from([C_PORT, 0, 9]))
        ent.counter_entry.index.index = draw(st.integers(-1, 9))
    elif kind == "register":
        ent.register_entry.register_id = draw(st.sampled_from([R_FLOW, 0]))
        ent.register_entry.index.index = draw(st.integers(-1, 17))
        ent.register_entry.data.bitstring = draw(small_bytes)
    elif kind == "meter":
        ent.meter_entry.meter_id = draw(st.sampled_from([M_PORT, 0]))
        ent.meter_entry.index.index = draw(st.integers(0, 9))
        c = ent.meter_entry.config
        c.cir, c.pir, c.cburst, c.pburst = (draw(st.integers(-1, 100)) for _ in range(4))
    elif kind == "pre":
        g = ent.packet_replication_engine_entry.multicast_group_entry
        g.multicast_group_id = draw(st.integers(0, 3))
        for _ in range(draw(st.integers(0, 3))):
            g.replicas.add(egress_port=draw(st.integers(0, 600)), instance=draw(st.integers(0, 2)))
    else:
        ent.digest_entry.digest_id = draw(st.sampled_from([D_LEARN, 0, 3]))
    return ent


@st.composite
def near_valid_entries(draw):
    """Mostly valid entries of the three writable tables (so many writes succeed),
    with values that sometimes overflow or break canonical form."""
    table = draw(st.sampled_from([T_LPM, T_ACL, T_DMAC]))
    e = p4runtime_pb2.TableEntry(table_id=table)
    if table == T_LPM:
        plen = draw(st.integers(1, 32))
        value = draw(st.integers(0, 2**32 - 1)) >> (32 - plen) << (32 - plen)
        m = e.match.add(field_id=1)
        m.lpm.value, m.lpm.prefix_len = value.to_bytes(4, "big"), plen
        e.action.action.action_id = draw(st.sampled_from([A_SET_NHOP, A_DROP]))
        if e.action.action.action_id == A_SET_NHOP:
            e.action.action.params.add(param_id=1, value=draw(st.integers(0, 520)).to_bytes(2, "big"))
            e.action.action.params.add(param_id=2, value=draw(small_bytes.filter(len)))
    elif table == T_ACL:
        e.priority = draw(st.integers(1, 3))
        mask = draw(st.integers(1, 0xFFFF))
        m = e.match.add(field_id=1)
        m.ternary.value = (draw(st.integers(0, 0xFFFF)) & mask).to_bytes(2, "big")
        m.ternary.mask = mask.to_bytes(2, "big")
        e.action.action.action_id = draw(st.sampled_from([A_TO_CPU, A_NOACTION]))
    else:
        e.match.add(field_id=1).exact.value = draw(st.integers(0, 2**48 + 5)).to_bytes(7, "big")
        e.action.action.action_id = A_FORWARD
        e.action.action.params.add(param_id=1, value=draw(st.integers(0, 511)).to_bytes(2, "big"))
    return e


entities = st.one_of(table_entries().map(lambda e: p4runtime_pb2.Entity(table_entry=e)),
                     near_valid_entries().map(lambda e: p4runtime_pb2.Entity(table_entry=e)),
                     other_entities())


def state_of(device) -> list:
    wildcards = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()),
                 p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()),
                 p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry()),
                 p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()),
                 p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()),
                 p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry())]
    wildcards += [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=t, is_default_action=True)) for t in (T_LPM, T_ACL, T_DMAC, T_CONST)]
    return [e.SerializeToString(deterministic=True)
            for reply in device.read(wildcards) for e in reply.entities]


@pytest.fixture(scope="module")
def device():
    dev = Device(se.Switch(ports={}, cpu_port=255, seed=1))
    config = p4runtime_pb2.ForwardingPipelineConfig(p4info=mini_p4info(), p4_device_config=mini_json())
    dev.set_pipeline(SetAction.VERIFY_AND_COMMIT, config)
    return dev


@settings(max_examples=800, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(update_type=st.sampled_from([Update.INSERT, Update.MODIFY, Update.DELETE, Update.UNSPECIFIED]),
       entity=entities)
def test_random_updates_are_applied_or_refused_cleanly(device, update_type, entity):
    before = state_of(device)
    try:
        device.write(Update(type=update_type, entity=entity))
    except P4RuntimeError:
        assert state_of(device) == before


# ---- over gRPC: mutated valid batches, server state == a model after each ----
FUZZ_SEED = 20261123
FUZZ_BATCHES = 300
TABLE_SIZES = {T_LPM: 1024, T_ACL: 16, T_DMAC: 4}


def valid_entry(rng) -> p4runtime_pb2.TableEntry:
    """A valid entry of one of the writable tables (random keys, often repeated)."""
    table = rng.choice([T_LPM, T_ACL, T_DMAC])
    e = p4runtime_pb2.TableEntry(table_id=table)
    if table == T_LPM:
        plen = rng.choice([8, 16, 24, 32])
        value = rng.randrange(4) << 24 | rng.randrange(4) << 16 | rng.randrange(2**16)
        m = e.match.add(field_id=1)
        m.lpm.value, m.lpm.prefix_len = (value >> (32 - plen) << (32 - plen)).to_bytes(4, "big"), plen
        e.action.action.action_id = rng.choice([A_SET_NHOP, A_DROP])
        if e.action.action.action_id == A_SET_NHOP:
            e.action.action.params.add(param_id=1, value=rng.randrange(512).to_bytes(2, "big"))
            e.action.action.params.add(param_id=2, value=rng.randrange(2**48).to_bytes(6, "big"))
    elif table == T_ACL:
        e.priority = rng.randrange(1, 4)
        mask = rng.choice([0xFFFF, 0xFF00, 0x0F0F])
        m = e.match.add(field_id=1)
        m.ternary.value, m.ternary.mask = (rng.randrange(4) & mask).to_bytes(2, "big"), mask.to_bytes(2, "big")
        if rng.random() < 0.5:
            low = rng.randrange(8)
            r = e.match.add(field_id=2)
            r.range.low, r.range.high = low.to_bytes(2, "big"), (low + rng.randrange(8)).to_bytes(2, "big")
        e.action.action.action_id = rng.choice([A_TO_CPU, A_NOACTION])
    else:
        e.match.add(field_id=1).exact.value = rng.randrange(8).to_bytes(6, "big")
        e.action.action.action_id = A_FORWARD
        e.action.action.params.add(param_id=1, value=rng.randrange(512).to_bytes(2, "big"))
    return e


def _values(e):
    """The byte-string fields of an entry: match values and action params."""
    out = []
    for m in e.match:
        kind = m.WhichOneof("field_match_type")
        out += [(getattr(m, kind), name) for name in ("value", "mask", "low", "high")
                if name in getattr(m, kind).DESCRIPTOR.fields_by_name]
    out += [(p, "value") for p in e.action.action.params]
    return out


def mutate(rng, e: p4runtime_pb2.TableEntry) -> None:
    """One random change to a valid entry; many keep it valid."""
    values = _values(e)
    choice = rng.randrange(12)
    if choice == 0 and values:        # pad with a zero byte: still valid
        msg, name = rng.choice(values)
        setattr(msg, name, b"\x00" + getattr(msg, name))
    elif choice == 1 and values:      # a non-zero leading byte: too wide
        msg, name = rng.choice(values)
        setattr(msg, name, b"\x01" + getattr(msg, name))
    elif choice == 2 and values:      # empty
        msg, name = rng.choice(values)
        setattr(msg, name, b"")
    elif choice == 3 and values:      # one random byte
        msg, name = rng.choice(values)
        data = bytearray(getattr(msg, name) or b"\x00")
        data[rng.randrange(len(data))] = rng.randrange(256)
        setattr(msg, name, bytes(data))
    elif choice == 4 and len(e.match):
        del e.match[rng.randrange(len(e.match))]
    elif choice == 5 and len(e.match):
        e.match.add().CopyFrom(e.match[0])
    elif choice == 6 and len(e.match):
        e.match[rng.randrange(len(e.match))].field_id = rng.randrange(4)
    elif choice == 7:
        e.priority = rng.randrange(-1, 5)
    elif choice == 8:
        e.action.action.action_id = rng.choice([A_NOACTION, A_DROP, A_SET_NHOP, A_TO_CPU, A_FORWARD, A_LEARN, 7])
    elif choice == 9 and len(e.action.action.params):
        del e.action.action.params[rng.randrange(len(e.action.action.params))]
    elif choice == 10:
        e.table_id = rng.choice([T_LPM, T_ACL, T_DMAC, T_CONST, 99])
    elif choice == 11:
        for m in e.match:
            if m.WhichOneof("field_match_type") == "lpm":
                m.lpm.prefix_len = rng.randrange(-1, 40)


def model_key(e):
    """The identity of an entry as the server defines it: canonical ints per field, priority."""
    fields = []
    for m in e.match:
        kind = m.WhichOneof("field_match_type")
        msg = getattr(m, kind)
        ints = tuple(int.from_bytes(getattr(msg, n), "big") for n in ("value", "mask", "low", "high")
                     if n in msg.DESCRIPTOR.fields_by_name)
        fields.append((m.field_id, kind, ints, m.lpm.prefix_len if kind == "lpm" else 0))
    return e.table_id, frozenset(fields), e.priority


def model_action(e):
    a = e.action.action
    return a.action_id, tuple(sorted((p.param_id, int.from_bytes(p.value, "big")) for p in a.params))


def server_state(client) -> dict:
    entries = client.read(table_entry=p4runtime_pb2.TableEntry())
    state = {model_key(e): model_action(e) for e in entries}
    assert len(state) == len(entries), "two read-back entries with one key"
    return state


def check_against_model(model, update, code):
    """Apply an accepted update to the model; check a refusal agrees with it."""
    e = update.entity.table_entry
    key = model_key(e)
    in_model = key in model
    if code == "OK":
        if update.type == Update.INSERT:
            assert not in_model, f"INSERT of a present key accepted: {e}"
            assert sum(k[0] == e.table_id for k in model) < TABLE_SIZES[e.table_id]
            model[key] = model_action(e)
        elif update.type == Update.MODIFY:
            assert in_model, f"MODIFY of a missing key accepted: {e}"
            model[key] = model_action(e)
        else:
            assert in_model, f"DELETE of a missing key accepted: {e}"
            del model[key]
    elif code == "ALREADY_EXISTS":
        assert in_model
    elif code == "NOT_FOUND" and e.table_id in TABLE_SIZES:
        assert not in_model
    elif code == "RESOURCE_EXHAUSTED":
        assert sum(k[0] == e.table_id for k in model) == TABLE_SIZES[e.table_id]


def test_mutated_batches_keep_server_and_model_equal():
    """FUZZ_BATCHES Write batches of 1-8 updates (fixed seed): valid entries,
    entries already present (MODIFY/DELETE/duplicate INSERT) and mutated ones;
    after each batch every table entry is read back and compared with a model."""
    rng = random.Random(FUZZ_SEED)
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    model, written, accepted = {}, [], 0
    try:
        client.set_pipeline(mini_p4info(), mini_json())
        for _ in range(FUZZ_BATCHES):
            updates = []
            for _ in range(rng.randrange(1, 9)):
                if written and rng.random() < 0.4:
                    e = p4runtime_pb2.TableEntry()
                    e.CopyFrom(rng.choice(written))
                else:
                    e = valid_entry(rng)
                if rng.random() < 0.5:
                    mutate(rng, e)
                kind = rng.choice([Update.INSERT, Update.INSERT, Update.MODIFY, Update.DELETE])
                updates.append(Update(type=kind, entity=p4runtime_pb2.Entity(table_entry=e)))
                written.append(e)
            try:
                client.write(*updates)
                codes = ["OK"] * len(updates)
            except grpc.RpcError as error:
                codes = write_error_codes(error)
            assert len(codes) == len(updates)
            for update, code in zip(updates, codes):
                check_against_model(model, update, code)
                accepted += code == "OK"
            assert server_state(client) == model
        assert accepted > FUZZ_BATCHES // 2 and len(model) > 10   # the fuzz reached real state
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()


# ---- action profiles: members, weighted groups and the entries naming them ----

PROFILE_BATCHES = 250
ECMP_SLOTS, TOS_SLOTS, MAX_GROUP = 8, 4, 4   # fixtures/selector.p4
PREFIXES = [(bytes([10, i, 0, 0]), 16) for i in range(4)]


class ProfileModel:
    """What the switch must hold: members (profile, id) -> (action id, params),
    ecmp_selector groups id -> ([(member, weight)], max_size), entries key -> reference."""

    def __init__(self, ids):
        self.ids = ids
        self.members, self.groups, self.entries = {}, {}, {}

    def slots(self, profile) -> int:
        """Engine members in use: a member counts its largest weight in a group."""
        used = 0
        for (p, mid) in self.members:
            if p == profile:
                weights = [w for ms, _ in self.groups.values() for m, w in ms if m == mid]
                used += max([1] + weights) if p == self.ids["ecmp_selector"] else 1
        return used

    def used(self, profile, mid) -> bool:
        in_group = profile == self.ids["ecmp_selector"] and any(
            m == mid for ms, _ in self.groups.values() for m, _ in ms)
        return in_group or (profile, "member", mid) in {
            (self._profile_of(k), r[0], r[1]) for k, r in self.entries.items()}

    def _profile_of(self, key):
        return self.ids["ecmp_selector"] if key[0] == self.ids["ecmp"] else self.ids["tos_profile"]

    def state(self) -> tuple:
        return (dict(self.members), {g: (tuple(ms), s) for g, (ms, s) in self.groups.items()},
                dict(self.entries))


def random_member(rng, ids) -> pb.ActionProfileMember:
    ecmp = rng.random() < 0.7
    profile = "ecmp_selector" if ecmp else "tos_profile"
    m = pb.ActionProfileMember(action_profile_id=ids[profile], member_id=rng.randrange(1, 7))
    if ecmp:
        m.action.action_id = ids["set_nexthop"]
        m.action.params.add(param_id=1, value=bytes([rng.randrange(1, 4)]))
        m.action.params.add(param_id=2, value=bytes([rng.randrange(256)]))
    else:
        m.action.action_id = ids["set_tos"]
        m.action.params.add(param_id=1, value=bytes([rng.randrange(256)]))
    choice = rng.randrange(10)
    if choice == 0:
        m.member_id = 0
    elif choice == 1:
        m.action.action_id = ids["set_tos"] if ecmp else ids["set_nexthop"]
    elif choice == 2:
        m.action.params[0].value = b"\x02\x00"            # too wide for bit<9>/bit<8>
    elif choice == 3:
        m.ClearField("action")
    return m


def random_group(rng, ids) -> pb.ActionProfileGroup:
    g = pb.ActionProfileGroup(action_profile_id=ids["ecmp_selector"], group_id=rng.randrange(1, 5),
                              max_size=rng.choice([4, 4, 4, 3, 0, 5]))
    for mid in rng.sample(range(1, 8), rng.randrange(0, 4)):
        g.members.add(member_id=mid, weight=rng.choice([1, 1, 2, 3, 0]))
    if rng.random() < 0.05 and len(g.members):
        g.members.add().CopyFrom(g.members[0])
    return g


def random_entry(rng, ids) -> pb.TableEntry:
    if rng.random() < 0.7:
        prefix, plen = rng.choice(PREFIXES)
        e = pb.TableEntry(table_id=ids["ecmp"])
        m = e.match.add(field_id=1)
        m.lpm.value, m.lpm.prefix_len = prefix, plen
        if rng.random() < 0.5:
            e.action.action_profile_group_id = rng.randrange(1, 6)
        else:
            e.action.action_profile_member_id = rng.randrange(1, 8)
    else:
        e = pb.TableEntry(table_id=ids["tos_by_port"])
        e.match.add(field_id=1).exact.value = bytes([rng.randrange(4)])
        e.action.action_profile_member_id = rng.randrange(1, 7)
    return e


def entry_key(e):
    m = e.match[0]
    return (e.table_id, m.lpm.value if m.HasField("lpm") else m.exact.value)


def entry_ref(e):
    kind = e.action.WhichOneof("type")
    return ("member" if kind == "action_profile_member_id" else "group", getattr(e.action, kind))


def member_ok(model, update, m) -> bool:
    """Is this member update legal in the model? (applies it if so)"""
    key = (m.action_profile_id, m.member_id)
    size = ECMP_SLOTS if m.action_profile_id == model.ids["ecmp_selector"] else TOS_SLOTS
    if update.type == Update.DELETE:
        legal = key in model.members and not model.used(*key)
        if legal:
            del model.members[key]
        return legal
    ecmp = m.action_profile_id == model.ids["ecmp_selector"]
    own_action = model.ids["set_nexthop" if ecmp else "set_tos"]
    if m.member_id == 0 or m.action.action_id != own_action or \
            any(len(p.value) != 1 for p in m.action.params):
        return False
    action = (m.action.action_id, tuple(p.value for p in m.action.params))
    if update.type == Update.INSERT:
        legal = key not in model.members and model.slots(m.action_profile_id) < size
    else:
        legal = key in model.members
    if legal:
        model.members[key] = action
    return legal


def group_ok(model, update, g) -> bool:
    ecmp = model.ids["ecmp_selector"]
    if update.type == Update.DELETE:
        legal = g.group_id in model.groups and ("group", g.group_id) not in model.entries.values()
        if legal:
            del model.groups[g.group_id]
        return legal
    members = [(m.member_id, m.weight) for m in g.members]
    current = model.groups.get(g.group_id)
    legal = (current is None) == (update.type == Update.INSERT) \
        and (current is None or current[1] == g.max_size) \
        and 1 <= g.max_size <= MAX_GROUP and sum(w for _, w in members) <= g.max_size \
        and all(w > 0 and (ecmp, m) in model.members for m, w in members) \
        and len({m for m, _ in members}) == len(members)
    if legal:
        model.groups[g.group_id] = (members, g.max_size)
        if model.slots(ecmp) > ECMP_SLOTS:
            legal = False
            if current is None:
                del model.groups[g.group_id]
            else:
                model.groups[g.group_id] = current
    return legal


def entry_ok(model, update, e) -> bool:
    key, ref = entry_key(e), entry_ref(e)
    if update.type == Update.DELETE:
        legal = key in model.entries
        if legal:
            del model.entries[key]
        return legal
    profile = model._profile_of(key)
    exists = (profile, ref[1]) in model.members if ref[0] == "member" else ref[1] in model.groups
    legal = exists and (key in model.entries) == (update.type == Update.MODIFY)
    if legal:
        model.entries[key] = ref
    return legal


def profile_server_state(client, ids) -> tuple:
    members = {(m.action_profile_id, m.member_id): (m.action.action_id, tuple(
        p.value for p in m.action.params)) for m in client.read(action_profile_member=pb.ActionProfileMember())}
    groups = {g.group_id: (tuple((m.member_id, m.weight) for m in g.members), g.max_size)
              for g in client.read(action_profile_group=pb.ActionProfileGroup())}
    entries = {entry_key(e): entry_ref(e) for e in client.read(table_entry=pb.TableEntry())}
    return members, groups, entries


def check_forwarding(srv, model):
    """Each ecmp entry sends a packet to its member's port, or one of its group's."""
    ecmp = model.ids["ecmp_selector"]
    for (table, prefix), (kind, ref) in model.entries.items():
        if table != model.ids["ecmp"]:
            continue
        mids = [ref] if kind == "member" else [m for m, _ in model.groups[ref][0]]
        ports = {model.members[(ecmp, m)][1][0][0] for m in mids}
        out = srv.sw.process_packet(0, ipv4_frame(7, int.from_bytes(prefix, "big") + 1))
        # an empty group runs no action: egress_spec stays 0 (spec §9.2.3: target-defined)
        assert [p for p, _ in out] in ([[p] for p in ports] or [[0]]), (kind, ref, out)


def test_mutated_profile_batches_keep_server_and_model_equal(program, ids):
    """PROFILE_BATCHES rounds (fixed seed) of 1-4 Writes of member, group and entry
    updates, valid or mutated: every accepted update is legal in a model, every refusal
    changes nothing, after each batch members, groups and entries read back equal
    the model and each entry forwards to one of its members' ports."""
    rng = random.Random(FUZZ_SEED)
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    model, accepted = ProfileModel(ids), 0
    makers = [("action_profile_member", random_member, member_ok),
              ("action_profile_group", random_group, group_ok),
              ("table_entry", random_entry, entry_ok)]
    try:
        client.set_pipeline(*pair(program))
        for _ in range(PROFILE_BATCHES):
            for _ in range(rng.randrange(1, 5)):
                kind, make, legal = rng.choice(makers)
                update = Update(type=rng.choice([Update.INSERT, Update.INSERT, Update.MODIFY, Update.DELETE]),
                                entity=pb.Entity(**{kind: make(rng, ids)}))
                try:
                    client.write(update)
                    code = "OK"
                except grpc.RpcError as error:
                    [code] = write_error_codes(error)
                before = model.state()
                assert legal(model, update, getattr(update.entity, kind)) == (code == "OK"), (code, update)
                if code != "OK":
                    assert model.state() == before
                accepted += code == "OK"
            assert profile_server_state(client, ids) == (model.members, {
                g: (tuple(ms), s) for g, (ms, s) in model.groups.items()}, model.entries)
            check_forwarding(srv, model)
        assert accepted > PROFILE_BATCHES // 2 and len(model.entries) >= 3 and model.groups
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()


# ---- action profiles, property test: random updates never crash, refusals change nothing ----
PROFILE_IDS = {}   # filled by the profile_device fixture (ids of fixtures/selector.p4)


MEMBER_IDS = st.sampled_from([1, 2, 3, 4, 0])   # sampled: hypothesis favours 0 in integers()
GROUP_IDS = st.sampled_from([1, 2, 3, 0])
WEIGHTS = st.sampled_from([1, 1, 2, 3, 0])


@st.composite
def profile_entities(draw):
    ids = PROFILE_IDS
    profile = draw(st.sampled_from([ids["ecmp_selector"]] * 3 + [ids["tos_profile"], 0, 5]))
    action = p4runtime_pb2.Action(action_id=draw(st.sampled_from(
        [ids["set_nexthop"], ids["set_tos"], ids["drop"], 0])))
    if draw(st.sampled_from([True, True, True, False])):   # mostly the right parameters
        widths = {ids["set_nexthop"]: 2, ids["set_tos"]: 1}.get(action.action_id, 0)
        for param_id in range(1, widths + 1):
            action.params.add(param_id=param_id, value=bytes([draw(st.sampled_from([1, 2, 3, 0]))]))
    else:
        for _ in range(draw(st.integers(0, 3))):
            action.params.add(param_id=draw(st.integers(0, 3)), value=draw(small_bytes))
    kind = draw(st.sampled_from(["member", "group", "entry"]))
    if kind == "member":
        m = pb.ActionProfileMember(action_profile_id=profile, member_id=draw(MEMBER_IDS))
        if draw(st.sampled_from([True, True, True, False])):
            m.action.CopyFrom(action)
        return pb.Entity(action_profile_member=m)
    if kind == "group":
        g = pb.ActionProfileGroup(action_profile_id=profile, group_id=draw(GROUP_IDS),
                                  max_size=draw(st.sampled_from([4, 4, 4, 0, 5, -1])))
        for _ in range(draw(st.integers(0, 4))):
            gm = g.members.add(member_id=draw(MEMBER_IDS), weight=draw(WEIGHTS))
            if draw(st.integers(0, 5)) == 0:
                gm.watch_port = draw(small_bytes)
        return pb.Entity(action_profile_group=g)
    e = pb.TableEntry(table_id=draw(st.sampled_from([ids["ecmp"], ids["tos_by_port"]])))
    m = e.match.add(field_id=1)
    if e.table_id == ids["ecmp"]:
        m.lpm.value, m.lpm.prefix_len = bytes([10, draw(st.integers(0, 2)), 0, 0]), 16
    else:
        m.exact.value = bytes([draw(st.integers(0, 2))])
    which = draw(st.sampled_from(["member", "group", "set", "action", "none"]))
    if which == "member":
        e.action.action_profile_member_id = draw(MEMBER_IDS)
    elif which == "group":
        e.action.action_profile_group_id = draw(GROUP_IDS)
    elif which == "set":
        for _ in range(draw(st.integers(0, 3))):
            e.action.action_profile_action_set.action_profile_actions.add(
                action=action, weight=draw(WEIGHTS))
    elif which == "action":
        e.action.action.CopyFrom(action)
    return pb.Entity(table_entry=e)


def profile_state_of(device) -> list:
    wildcards = [pb.Entity(table_entry=pb.TableEntry()),
                 pb.Entity(action_profile_member=pb.ActionProfileMember()),
                 pb.Entity(action_profile_group=pb.ActionProfileGroup())]
    return [e.SerializeToString(deterministic=True)
            for reply in device.read(wildcards) for e in reply.entities]


@pytest.fixture(scope="module")
def profile_device(program, ids):
    PROFILE_IDS.update(ids)
    dev = Device(se.Switch(ports={}, cpu_port=255, seed=1))
    p4info, device_json = pair(program)
    dev.set_pipeline(SetAction.VERIFY_AND_COMMIT, p4runtime_pb2.ForwardingPipelineConfig(
        p4info=p4info, p4_device_config=device_json))
    return dev


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_profile_updates_are_applied_or_refused_cleanly(profile_device, data):
    """Malformed and odd member/group/indirect-entry updates (unknown profiles and ids,
    weight 0, watch ports, wrong action kinds): never a crash, a refusal changes
    nothing. (Mostly refusals; the model test above covers accepted state.)"""
    update_type = data.draw(st.sampled_from([Update.INSERT, Update.INSERT, Update.MODIFY, Update.DELETE]))
    entity = data.draw(profile_entities())
    before = profile_state_of(profile_device)
    try:
        profile_device.write(Update(type=update_type, entity=entity))
    except P4RuntimeError:
        assert profile_state_of(profile_device) == before
