"""Property test: random Write updates never crash the server and a refused
update never changes state (hypothesis, in-process Device, real engine)."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from p4.v1 import p4runtime_pb2

import softswitch_engine as se
from server_support import (A_DROP, A_FORWARD, A_LEARN, A_NOACTION, A_SET_NHOP, A_TO_CPU,
                            C_PORT, D_LEARN, M_PORT, R_FLOW, T_ACL, T_CONST, T_DMAC, T_LPM,
                            mini_json, mini_p4info)
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


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(update_type=st.sampled_from([Update.INSERT, Update.MODIFY, Update.DELETE, Update.UNSPECIFIED]),
       entity=entities)
def test_random_updates_are_applied_or_refused_cleanly(device, update_type, entity):
    before = state_of(device)
    try:
        device.write(Update(type=update_type, entity=entity))
    except P4RuntimeError:
        assert state_of(device) == before
