"""P4Runtime fuzzing of the server with the real engine.

1. Property test (hypothesis, derandomized, in-process Device): random Write updates never
   crash the server and a refused update never changes state.
2. Model test (gRPC, fixed seed): batches of valid, repeated and mutated
   updates; each accepted or refused update must agree with a model of the
   table entries (INSERT only of absent keys, MODIFY/DELETE only of present
   ones, RESOURCE_EXHAUSTED only when full), and after each batch every entry
   read back must equal the model. About 2,000 updates in a few seconds.
"""
import random

import grpc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from p4.v1 import p4runtime_pb2

import softswitch_engine as se
from server_support import (A_DROP, A_FORWARD, A_LEARN, A_NOACTION, A_SET_NHOP, A_TO_CPU,
                            C_PORT, D_LEARN, M_PORT, R_FLOW, T_ACL, T_CONST, T_DMAC, T_LPM,
                            P4RTClient, mini_json, mini_p4info, start_server,
                            wait_for_no_clients, write_error_codes)
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
