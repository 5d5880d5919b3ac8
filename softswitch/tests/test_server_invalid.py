"""Invalid P4Runtime requests get the status the spec defines and change nothing.

Each case sends one bad request to a switch holding a known state, checks
the gRPC status (for Write batches: UNKNOWN plus the per-update p4.v1.Error
code), then reads every entity back and compares with the state before.
"""
import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from server_support import (A_DROP, A_FORWARD, A_LEARN, A_NOACTION, A_SET_NHOP, C_PORT, D_LEARN,
                            M_PORT, R_FLOW, SetAction, T_ACL, T_CONST, T_DMAC, T_LPM,
                            P4RTClient, Update, acl_entry, lpm_entry, mini_json, mini_p4info,
                            snapshot, start_server, write_error_codes)

E = p4runtime_pb2.Entity
TE = p4runtime_pb2.TableEntry
PRIMARY, BACKUP = 100, 50


@pytest.fixture(scope="module")
def switch():
    srv, address = start_server()
    primary = P4RTClient(address, election_id=PRIMARY)
    backup = P4RTClient(address, election_id=BACKUP)
    primary.set_pipeline(mini_p4info(), mini_json())
    primary.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=1, dmac=5))
    primary.insert(table_entry=acl_entry(0x0806, priority=3))
    dmac = TE(table_id=T_DMAC)
    dmac.match.add(field_id=1).exact.value = b"\x01"
    dmac.action.action.action_id = A_FORWARD
    dmac.action.action.params.add(param_id=1, value=b"\x02")
    primary.insert(table_entry=dmac)
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 1
    pre.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    primary.insert(packet_replication_engine_entry=pre)
    primary.insert(digest_entry=p4runtime_pb2.DigestEntry(digest_id=D_LEARN))
    yield srv, address, primary, backup
    backup.close()
    primary.close()
    srv.stop()


def entry(table_id=T_LPM, fields=(), action_id=None, params=(), priority=0, default=False):
    """A TableEntry from compact parts: fields = [(id, kind, *values)]."""
    e = TE(table_id=table_id, priority=priority, is_default_action=default)
    for field_id, kind, *values in fields:
        m = e.match.add(field_id=field_id)
        if kind == "lpm":
            m.lpm.value, m.lpm.prefix_len = values
        elif kind == "ternary":
            m.ternary.value, m.ternary.mask = values
        elif kind == "range":
            m.range.low, m.range.high = values
        else:
            getattr(m, kind).value = values[0]
    if action_id is not None:
        e.action.action.action_id = action_id
        for pid, value in params:
            e.action.action.params.add(param_id=pid, value=value)
    return e


NHOP = dict(action_id=A_SET_NHOP, params=[(1, b"\x01"), (2, b"\x01")])
LPM_24 = [(1, "lpm", b"\x0b\x00\x00\x00", 24)]


def indexed(cls, id_field, object_id, index, **kw):
    e = cls(**{id_field: object_id}, **kw)
    e.index.index = index
    return e


def counter(index, object_id=C_PORT):
    e = indexed(p4runtime_pb2.CounterEntry, "counter_id", object_id, index)
    e.data.packet_count = 1
    return e


def register(index, value):
    e = indexed(p4runtime_pb2.RegisterEntry, "register_id", R_FLOW, index)
    e.data.bitstring = value
    return e


def meter(cir, pir):
    e = indexed(p4runtime_pb2.MeterEntry, "meter_id", M_PORT, 0)
    e.config.cir, e.config.cburst, e.config.pir, e.config.pburst = cir, 10, pir, 10
    return e


def group(gid, *ports):
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = gid
    for p in ports:
        pre.multicast_group_entry.replicas.add(egress_port=p, instance=0)
    return pre


def byte_port_group(gid, port: bytes):
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = gid
    pre.multicast_group_entry.replicas.add(port=port, instance=0)
    return pre


def session(sid):
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.clone_session_entry.session_id = sid
    return pre


def profile_member_entry():
    e = entry(fields=LPM_24)
    e.action.action_profile_member_id = 1
    return e


# (name, update type, entity, per-update code)
UPDATE_CASES = [
    ("unknown table id", Update.INSERT, E(table_entry=entry(table_id=999, fields=LPM_24, **NHOP)), "NOT_FOUND"),
    ("unknown action id", Update.INSERT, E(table_entry=entry(fields=LPM_24, action_id=12345)), "INVALID_ARGUMENT"),
    ("unknown match field id", Update.INSERT, E(table_entry=entry(fields=[(9, "lpm", b"\x0b\x00\x00\x00", 24)], **NHOP)), "INVALID_ARGUMENT"),
    ("duplicate match field", Update.INSERT, E(table_entry=entry(fields=LPM_24 * 2, **NHOP)), "INVALID_ARGUMENT"),
    ("unknown param id", Update.INSERT, E(table_entry=entry(fields=LPM_24, action_id=A_SET_NHOP, params=[(1, b"\x01"), (2, b"\x01"), (7, b"\x01")])), "INVALID_ARGUMENT"),
    ("missing param", Update.INSERT, E(table_entry=entry(fields=LPM_24, action_id=A_SET_NHOP, params=[(1, b"\x01")])), "INVALID_ARGUMENT"),
    ("param wider than 9 bits", Update.INSERT, E(table_entry=entry(fields=LPM_24, action_id=A_SET_NHOP, params=[(1, b"\x02\x00"), (2, b"\x01")])), "OUT_OF_RANGE"),  # spec 8.3
    ("match value wider than 32 bits", Update.INSERT, E(table_entry=entry(fields=[(1, "lpm", b"\x01\x0b\x00\x00\x00", 8)], **NHOP)), "OUT_OF_RANGE"),  # spec 8.3
    ("empty match value", Update.INSERT, E(table_entry=entry(fields=[(1, "lpm", b"", 8)], **NHOP)), "OUT_OF_RANGE"),  # spec 8.3
    ("prefix length 33", Update.INSERT, E(table_entry=entry(fields=[(1, "lpm", b"\x0b\x00\x00\x00", 33)], **NHOP)), "INVALID_ARGUMENT"),
    ("prefix length 0 given", Update.INSERT, E(table_entry=entry(fields=[(1, "lpm", b"\x00", 0)], **NHOP)), "INVALID_ARGUMENT"),
    ("non-canonical lpm value", Update.INSERT, E(table_entry=entry(fields=[(1, "lpm", b"\x0b\x00\x00\x01", 24)], **NHOP)), "INVALID_ARGUMENT"),
    ("wrong match kind", Update.INSERT, E(table_entry=entry(fields=[(1, "exact", b"\x0b\x00\x00\x00")], **NHOP)), "INVALID_ARGUMENT"),
    ("ternary without priority", Update.INSERT, E(table_entry=entry(T_ACL, [(1, "ternary", b"\x08\x00", b"\xff\xff")], A_NOACTION)), "INVALID_ARGUMENT"),
    ("priority on lpm-only table", Update.INSERT, E(table_entry=entry(fields=LPM_24, priority=3, **NHOP)), "INVALID_ARGUMENT"),
    ("priority on exact-only table", Update.INSERT, E(table_entry=entry(T_DMAC, [(1, "exact", b"\x09")], A_FORWARD, [(1, b"\x01")], priority=1)), "INVALID_ARGUMENT"),
    ("ternary value outside mask", Update.INSERT, E(table_entry=entry(T_ACL, [(1, "ternary", b"\x08\x01", b"\xff\x00")], A_NOACTION, priority=2)), "INVALID_ARGUMENT"),
    ("zero ternary mask", Update.INSERT, E(table_entry=entry(T_ACL, [(1, "ternary", b"\x00", b"\x00")], A_NOACTION, priority=2)), "INVALID_ARGUMENT"),
    ("range low above high", Update.INSERT, E(table_entry=entry(T_ACL, [(2, "range", b"\x05", b"\x01")], A_NOACTION, priority=2)), "INVALID_ARGUMENT"),
    ("missing exact field", Update.INSERT, E(table_entry=entry(T_DMAC, [], A_FORWARD, [(1, b"\x01")])), "INVALID_ARGUMENT"),
    ("action not in table", Update.INSERT, E(table_entry=entry(fields=LPM_24, action_id=A_FORWARD, params=[(1, b"\x01")])), "INVALID_ARGUMENT"),
    ("@defaultonly action in entry", Update.INSERT, E(table_entry=entry(T_DMAC, [(1, "exact", b"\x09")], A_LEARN)), "PERMISSION_DENIED"),
    ("@tableonly action as default", Update.MODIFY, E(table_entry=entry(T_DMAC, [], A_FORWARD, [(1, b"\x01")], default=True)), "PERMISSION_DENIED"),
    ("insert of the default entry", Update.INSERT, E(table_entry=entry(T_LPM, [], A_DROP, default=True)), "INVALID_ARGUMENT"),
    ("const default action", Update.MODIFY, E(table_entry=entry(T_CONST, [], A_DROP, default=True)), "PERMISSION_DENIED"),
    ("entry without action", Update.INSERT, E(table_entry=entry(fields=LPM_24)), "INVALID_ARGUMENT"),
    ("action profile member in a direct table", Update.INSERT, E(table_entry=profile_member_entry()), "INVALID_ARGUMENT"),
    ("duplicate insert", Update.INSERT, E(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=3)), "ALREADY_EXISTS"),
    ("delete of a missing entry", Update.DELETE, E(table_entry=entry(fields=LPM_24)), "NOT_FOUND"),
    ("modify of a missing entry", Update.MODIFY, E(table_entry=entry(fields=LPM_24, **NHOP)), "NOT_FOUND"),
    ("update type unspecified", Update.UNSPECIFIED, E(table_entry=entry(fields=LPM_24, **NHOP)), "INVALID_ARGUMENT"),
    ("empty entity", Update.INSERT, E(), "UNIMPLEMENTED"),
    ("counter index out of range", Update.MODIFY, E(counter_entry=counter(8)), "OUT_OF_RANGE"),
    ("negative counter index", Update.MODIFY, E(counter_entry=counter(-1)), "INVALID_ARGUMENT"),
    ("negative register index", Update.MODIFY, E(register_entry=register(-3, b"\x01")), "INVALID_ARGUMENT"),
    ("empty register value", Update.MODIFY, E(register_entry=register(0, b"")), "OUT_OF_RANGE"),
    ("replica port wider than 32 bits", Update.INSERT, E(packet_replication_engine_entry=byte_port_group(5, b"\x01" + bytes(4))), "OUT_OF_RANGE"),
    ("unknown counter id", Update.MODIFY, E(counter_entry=counter(0, object_id=4242)), "NOT_FOUND"),
    ("counter insert", Update.INSERT, E(counter_entry=counter(0)), "INVALID_ARGUMENT"),
    ("register value wider than 32 bits", Update.MODIFY, E(register_entry=register(0, b"\x01\x00\x00\x00\x00")), "OUT_OF_RANGE"),  # spec 8.3
    ("register index out of range", Update.MODIFY, E(register_entry=register(16, b"\x01")), "OUT_OF_RANGE"),
    ("meter cir above pir", Update.MODIFY, E(meter_entry=meter(cir=100, pir=10)), "INVALID_ARGUMENT"),
    ("direct counter on a table without one", Update.MODIFY, E(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(table_entry=acl_entry(0x0806, priority=3))), "INVALID_ARGUMENT"),
    ("direct counter of a missing entry", Update.MODIFY, E(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(table_entry=entry(fields=LPM_24))), "NOT_FOUND"),
    ("multicast group inserted twice", Update.INSERT, E(packet_replication_engine_entry=group(1, 2)), "ALREADY_EXISTS"),
    ("multicast group id 0", Update.INSERT, E(packet_replication_engine_entry=group(0, 1)), "INVALID_ARGUMENT"),
    ("duplicate replica", Update.INSERT, E(packet_replication_engine_entry=group(2, 1, 1)), "INVALID_ARGUMENT"),
    ("clone session modify of a missing one", Update.MODIFY, E(packet_replication_engine_entry=session(9)), "NOT_FOUND"),
    ("unknown digest id", Update.INSERT, E(digest_entry=p4runtime_pb2.DigestEntry(digest_id=77)), "NOT_FOUND"),
    ("digest config inserted twice", Update.INSERT, E(digest_entry=p4runtime_pb2.DigestEntry(digest_id=D_LEARN)), "ALREADY_EXISTS"),
]


@pytest.mark.parametrize("name,update_type,entity,code", UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_invalid_update_is_refused_and_changes_nothing(switch, name, update_type, entity, code):
    _, _, primary, _ = switch
    before = snapshot(primary)
    with pytest.raises(grpc.RpcError) as info:
        primary.write(Update(type=update_type, entity=entity))
    assert write_error_codes(info.value) == [code]
    assert snapshot(primary) == before


def test_batch_applies_valid_updates_and_reports_each(switch):
    _, _, primary, _ = switch
    good = Update(type=Update.INSERT, entity=E(table_entry=entry(fields=LPM_24, **NHOP)))
    bad = Update(type=Update.INSERT, entity=E(table_entry=entry(fields=[(1, "lpm", b"\x0c", 40)], **NHOP)))
    with pytest.raises(grpc.RpcError) as info:
        primary.write(bad, good)
    assert write_error_codes(info.value) == ["INVALID_ARGUMENT", "OK"]
    assert len(primary.read(table_entry=TE(table_id=T_LPM))) == 2
    primary.write(Update(type=Update.DELETE, entity=E(table_entry=entry(fields=LPM_24))))


def test_full_table_is_resource_exhausted(switch):
    _, _, primary, _ = switch
    updates = []
    for mac in range(2, 6):   # dmac holds 4 entries, one is already there
        e = entry(T_DMAC, [(1, "exact", bytes([mac]))], A_FORWARD, [(1, b"\x01")])
        updates.append(Update(type=Update.INSERT, entity=E(table_entry=e)))
    with pytest.raises(grpc.RpcError) as info:
        primary.write(*updates)
    assert write_error_codes(info.value) == ["OK", "OK", "OK", "RESOURCE_EXHAUSTED"]
    for u in updates[:3]:
        primary.write(Update(type=Update.DELETE, entity=u.entity))


def _mismatched_json():
    doc = json.loads(mini_json())
    next(a for a in doc["actions"] if a["name"] == "MyIngress.set_nhop")["runtime_data"][1]["bitwidth"] = 32
    return json.dumps(doc).encode()


def _engine_rejected_json():
    doc = json.loads(mini_json())
    next(a for a in doc["actions"] if a["name"] == "MyIngress.drop")["primitives"][0]["op"] = "no_such_primitive"
    return json.dumps(doc).encode()


def _p4info_without_lpm_table():
    p4info = mini_p4info()
    del p4info.tables[0]            # MyIngress.ipv4_lpm, which holds an entry
    del p4info.direct_counters[0]   # its direct counter
    return p4info


def _reconcile_dropping_a_table(client):
    client.set_pipeline(_p4info_without_lpm_table(), mini_json(),
                        action=SetAction.RECONCILE_AND_COMMIT)


def _set(client, p4info=True, device_config=None, action=SetAction.VERIFY_AND_COMMIT, role=""):
    if role:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(action=action, role=role)
        req.election_id.low = PRIMARY
        req.config.p4info.CopyFrom(mini_p4info())
        req.config.p4_device_config = mini_json()
        client.stub.SetForwardingPipelineConfig(req)
        return
    client.set_pipeline(mini_p4info() if p4info else None,
                        mini_json() if device_config is None else device_config, action=action)


def _read(client, device_id=0, role="", **entity):
    req = p4runtime_pb2.ReadRequest(device_id=device_id, role=role, entities=[E(**entity)])
    return list(client.stub.Read(req))


def _write_as(client, device_id=0, election_id=PRIMARY, atomicity=0, role=""):
    req = p4runtime_pb2.WriteRequest(device_id=device_id, atomicity=atomicity, role=role, updates=[
        Update(type=Update.INSERT, entity=E(table_entry=entry(fields=LPM_24, **NHOP)))])
    req.election_id.low = election_id
    client.stub.Write(req)


# (name, call(primary, backup), gRPC status of the whole call)
REQUEST_CASES = [
    ("write from a backup client", lambda p, b: b.insert(table_entry=entry(fields=LPM_24, **NHOP)), "PERMISSION_DENIED"),
    ("write with a stale election id", lambda p, b: _write_as(p, election_id=PRIMARY - 1), "PERMISSION_DENIED"),
    ("write to another device id", lambda p, b: _write_as(p, device_id=9), "NOT_FOUND"),
    ("write with rollback atomicity", lambda p, b: _write_as(p, atomicity=1), "UNIMPLEMENTED"),
    ("malformed pipeline json", lambda p, b: _set(p, device_config=b'{"pipelines": [ oops'), "INVALID_ARGUMENT"),
    ("pipeline json that is not bmv2", lambda p, b: _set(p, device_config=b'{"hello": 1}'), "INVALID_ARGUMENT"),
    ("p4info and json mismatch", lambda p, b: _set(p, device_config=_mismatched_json()), "INVALID_ARGUMENT"),
    ("json the engine refuses", lambda p, b: _set(p, device_config=_engine_rejected_json()), "INVALID_ARGUMENT"),
    ("pipeline without p4info", lambda p, b: _set(p, p4info=False), "INVALID_ARGUMENT"),
    ("verify of a bad pipeline", lambda p, b: _set(p, device_config=b"[]", action=SetAction.VERIFY), "INVALID_ARGUMENT"),
    ("pipeline from a backup client", lambda p, b: _set(b), "PERMISSION_DENIED"),
    ("reconcile that drops a table in use", lambda p, b: _reconcile_dropping_a_table(p), "INVALID_ARGUMENT"),
    ("commit with nothing saved", lambda p, b: _set(p, action=SetAction.COMMIT), "FAILED_PRECONDITION"),
    ("read of another device id", lambda p, b: _read(p, device_id=3, table_entry=TE()), "NOT_FOUND"),
    ("read of an unknown table", lambda p, b: _read(p, table_entry=TE(table_id=5)), "NOT_FOUND"),
    ("read of a counter index out of range", lambda p, b: _read(p, counter_entry=counter(100)), "OUT_OF_RANGE"),
    ("read of a negative counter index", lambda p, b: _read(p, counter_entry=counter(-1)), "INVALID_ARGUMENT"),
    ("read of a negative meter index", lambda p, b: _read(p, meter_entry=indexed(p4runtime_pb2.MeterEntry, "meter_id", M_PORT, -2)), "INVALID_ARGUMENT"),
    ("read with an unknown role", lambda p, b: _read(p, role="backup-team", table_entry=TE()), "NOT_FOUND"),
    ("write with an unknown role", lambda p, b: _write_as(p, role="backup-team"), "NOT_FOUND"),
    ("pipeline with an unknown role", lambda p, b: _set(p, role="backup-team"), "NOT_FOUND"),
    ("read of an unknown register", lambda p, b: _read(p, register_entry=p4runtime_pb2.RegisterEntry(register_id=3)), "NOT_FOUND"),
]


@pytest.mark.parametrize("name,call,code", REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
def test_invalid_request_is_refused_and_changes_nothing(switch, name, call, code):
    _, _, primary, backup = switch
    before = snapshot(primary)
    with pytest.raises(grpc.RpcError) as info:
        call(primary, backup)
    assert info.value.code().name == code
    assert snapshot(primary) == before


def test_write_before_any_pipeline_is_failed_precondition():
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    try:
        with pytest.raises(grpc.RpcError) as info:
            client.insert(table_entry=entry(fields=LPM_24, **NHOP))
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.RpcError) as info:
            client.read(table_entry=TE())
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        client.close()
        srv.stop()


@pytest.mark.parametrize("election_id,device_id,role,code", [(PRIMARY, 0, "", "INVALID_ARGUMENT"),
                                                             (7, 5, "", "NOT_FOUND"),
                                                             (7, 0, "backup-team", "NOT_FOUND")])
def test_bad_arbitration_ends_the_stream(switch, election_id, device_id, role, code):
    srv, address, primary, _ = switch
    before = snapshot(primary)
    intruder = P4RTClient(address, arbitrate=False)
    try:
        if role:
            request = p4runtime_pb2.StreamMessageRequest()
            request.arbitration.election_id.low = election_id
            request.arbitration.role.name = role
            intruder.send(request)
            assert intruder.next_message("arbitration") is None
        else:
            assert intruder.arbitrate(election_id, device_id=device_id) is None
        assert intruder.stream_error.code().name == code
        assert srv.arbitrator.primary_election_id() == PRIMARY
        assert snapshot(primary) == before
    finally:
        intruder.close()
