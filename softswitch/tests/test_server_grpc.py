"""The P4Runtime server over real gRPC with the real engine: every entity kind,
pipeline actions, arbitration, and that entries reach the data plane."""
import json

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from server_support import (A_DROP, A_NOACTION, A_SET_NHOP, C_PORT, D_LEARN,
                            M_PORT, R_FLOW, SetAction, T_ACL, T_LPM, P4RTClient,
                            acl_entry, lpm_entry, mini_json, mini_p4info, snapshot,
                            wait_for_no_clients, write_error_codes)

from softswitch_p4c.driver import compile_source
from test_frontend_lowering import program

GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest.ResponseType


@pytest.fixture
def client(server):
    c = P4RTClient(server[1], election_id=10)
    c.set_pipeline(mini_p4info(), mini_json())
    yield c
    c.close()
    wait_for_no_clients(server[0])


def ipv4_frame(dst: bytes, ether_type=b"\x08\x00") -> bytes:
    ip = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0]) + bytes([10, 0, 0, 1]) + dst
    return b"\x00\x00\x00\x00\x00\x02" + b"\x00\x00\x00\x00\x00\x01" + ether_type + ip


def test_capabilities_and_empty_config_before_a_pipeline(server):
    c = P4RTClient(server[1], election_id=3)
    try:
        reply = c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
        assert reply.p4runtime_api_version.startswith("1.")
    finally:
        c.close()


def test_get_pipeline_returns_what_was_pushed(client):
    client.set_pipeline(mini_p4info(), mini_json(), cookie=77)
    get = lambda t: client.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0, response_type=t)).config
    full = get(GetType.ALL)
    assert full.p4info == mini_p4info() and full.p4_device_config == mini_json()
    assert full.cookie.cookie == 77
    cookie_only = get(GetType.COOKIE_ONLY)
    assert cookie_only.cookie.cookie == 77 and not cookie_only.HasField("p4info")
    assert cookie_only.p4_device_config == b""
    assert get(GetType.P4INFO_AND_COOKIE).p4_device_config == b""
    assert not get(GetType.DEVICE_CONFIG_AND_COOKIE).HasField("p4info")


def test_table_entry_insert_read_modify_delete(client):
    client.insert(table_entry=lpm_entry(b"\x0a\x00\x01\x00", 24, port=1, dmac=0xAABB, padded=True))
    [read] = client.read(table_entry=p4runtime_pb2.TableEntry(table_id=T_LPM))
    # read back canonical: shortest byte strings
    assert read == lpm_entry(b"\x0a\x00\x01\x00", 24, port=1, dmac=0xAABB)
    client.modify(table_entry=lpm_entry(b"\x0a\x00\x01\x00", 24, port=2, dmac=0xCC))
    [read] = client.read(table_entry=p4runtime_pb2.TableEntry())
    assert [p.value for p in read.action.action.params] == [b"\x02", b"\xcc"]
    client.delete(table_entry=lpm_entry(b"\x0a\x00\x01\x00", 24))
    assert client.read(table_entry=p4runtime_pb2.TableEntry(table_id=T_LPM)) == []


def test_entries_reach_the_data_plane(server, client):
    sw = server[0].sw
    assert sw.process_packet(0, ipv4_frame(bytes([10, 0, 1, 7]))) == []  # default: drop
    client.insert(table_entry=lpm_entry(b"\x0a\x00\x01\x00", 24, port=3, dmac=0x0A0B0C0D0E0F))
    [(port, frame)] = sw.process_packet(0, ipv4_frame(bytes([10, 0, 1, 7])))
    assert port == 3 and frame[:6] == bytes.fromhex("0a0b0c0d0e0f")
    read = p4runtime_pb2.TableEntry(table_id=T_LPM)
    read.counter_data.SetInParent()
    [entry] = client.read(table_entry=read)
    assert entry.counter_data.packet_count == 1
    assert entry.counter_data.byte_count == len(ipv4_frame(bytes(4)))


def test_default_entry_modify_and_reset(server, client):
    read_default = lambda: client.read(table_entry=p4runtime_pb2.TableEntry(
        table_id=T_LPM, is_default_action=True))
    [d] = read_default()
    assert d.is_default_action and d.action.action.action_id == A_DROP
    new = p4runtime_pb2.TableEntry(table_id=T_LPM, is_default_action=True)
    new.action.action.action_id = A_SET_NHOP
    new.action.action.params.add(param_id=1, value=b"\x04")
    new.action.action.params.add(param_id=2, value=b"\x01")
    client.modify(table_entry=new)
    assert read_default() == [new]
    [(port, _)] = server[0].sw.process_packet(0, ipv4_frame(bytes([192, 168, 0, 1])))
    assert port == 4
    client.modify(table_entry=p4runtime_pb2.TableEntry(table_id=T_LPM, is_default_action=True))
    assert read_default()[0].action.action.action_id == A_DROP


def test_ternary_range_entries_with_priorities(client):
    client.insert(table_entry=acl_entry(0x0800, 0xFF00, priority=5, ports=(1, 4)))
    client.insert(table_entry=acl_entry(0x0800, 0xFF00, priority=6, action=A_NOACTION))
    entries = client.read(table_entry=p4runtime_pb2.TableEntry(table_id=T_ACL))
    assert sorted(e.priority for e in entries) == [5, 6]
    assert {e.match[0].ternary.value for e in entries} == {b"\x08\x00"}


def test_counters_read_write_and_wildcards(client):
    cells = client.read(counter_entry=p4runtime_pb2.CounterEntry(counter_id=C_PORT))
    assert [c.index.index for c in cells] == list(range(8))
    assert all(c.data.packet_count == 0 for c in cells)
    e = p4runtime_pb2.CounterEntry(counter_id=C_PORT)
    e.index.index = 3
    e.data.packet_count, e.data.byte_count = 5, 500
    client.modify(counter_entry=e)
    one = p4runtime_pb2.CounterEntry(counter_id=C_PORT)
    one.index.index = 3
    assert client.read(counter_entry=one) == [e]
    assert len(client.read(counter_entry=p4runtime_pb2.CounterEntry())) == 8


def test_counter_counts_real_packets(server, client):
    server[0].sw.process_packet(2, ipv4_frame(bytes(4)))
    one = p4runtime_pb2.CounterEntry(counter_id=C_PORT)
    one.index.index = 2
    [cell] = client.read(counter_entry=one)
    assert cell.data.packet_count == 1


def test_direct_counter_entry(client):
    client.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=1))
    d = p4runtime_pb2.DirectCounterEntry(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8))
    d.data.packet_count, d.data.byte_count = 9, 900
    client.modify(direct_counter_entry=d)
    [read] = client.read(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(
        table_entry=p4runtime_pb2.TableEntry(table_id=T_LPM)))
    assert (read.data.packet_count, read.data.byte_count) == (9, 900)
    assert read.table_entry.match == lpm_entry(b"\x0a\x00\x00\x00", 8).match


def test_meters_and_direct_meters(client):
    m = p4runtime_pb2.MeterEntry(meter_id=M_PORT)
    m.index.index = 1
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 1000, 100, 2000, 200
    client.modify(meter_entry=m)
    cells = client.read(meter_entry=p4runtime_pb2.MeterEntry(meter_id=M_PORT))
    assert len(cells) == 8 and cells[1] == m and not cells[0].HasField("config")
    reset = p4runtime_pb2.MeterEntry(meter_id=M_PORT)
    reset.index.index = 1
    client.modify(meter_entry=reset)
    assert not client.read(meter_entry=p4runtime_pb2.MeterEntry(meter_id=M_PORT))[1].HasField("config")
    client.insert(table_entry=acl_entry(0x0806))
    dm = p4runtime_pb2.DirectMeterEntry(table_entry=acl_entry(0x0806))
    dm.table_entry.ClearField("action")
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 10, 1, 20, 2
    client.modify(direct_meter_entry=dm)
    [read] = client.read(direct_meter_entry=p4runtime_pb2.DirectMeterEntry())
    assert read.config == dm.config and read.table_entry.table_id == T_ACL


def test_registers(client):
    r = p4runtime_pb2.RegisterEntry(register_id=R_FLOW)
    r.index.index = 15
    r.data.bitstring = b"\x00\x00\x12\x34"
    client.modify(register_entry=r)
    cells = client.read(register_entry=p4runtime_pb2.RegisterEntry(register_id=R_FLOW))
    assert len(cells) == 16 and cells[15].data.bitstring == b"\x12\x34"
    assert cells[0].data.bitstring == b"\x00"


def test_bool_and_signed_registers_as_p4runtime_types_them(client, tmp_path):
    # register<bool>: P4Info type_spec bool, cells read and written as P4Data bool (the
    # front-end used to crash writing its P4Info); register<int<8>>: a two's-complement
    # bitstring, type_spec int
    source = program(ingress="register<bool>(4) flags; register<int<8>>(2) deltas;",
                     apply="bool f; flags.read(f, 0); flags.write(1, !f); "
                           "int<8> d; deltas.read(d, 0); deltas.write(1, d - 1);")
    j, info = compile_source(source, tmp_path)
    flags, deltas = sorted(info.registers, key=lambda r: r.preamble.name)[::-1]
    assert flags.type_spec.HasField("bool") and deltas.type_spec.bitstring.int.bitwidth == 8
    client.set_pipeline(info, json.dumps(j).encode())
    r = p4runtime_pb2.RegisterEntry(register_id=flags.preamble.id)
    r.index.index = 2
    r.data.bool = True
    client.modify(register_entry=r)
    cells = client.read(register_entry=p4runtime_pb2.RegisterEntry(register_id=flags.preamble.id))
    assert [c.data.bool for c in cells] == [False, False, True, False]
    assert all(c.data.WhichOneof("data") == "bool" for c in cells)
    r.data.bitstring = b"\x01"
    with pytest.raises(grpc.RpcError) as e:
        client.modify(register_entry=r)
    assert write_error_codes(e.value) == ["INVALID_ARGUMENT"]
    d = p4runtime_pb2.RegisterEntry(register_id=deltas.preamble.id)
    d.index.index = 0
    d.data.bitstring = b"\xff"         # -1
    client.modify(register_entry=d)
    assert client.read(register_entry=d)[0].data.bitstring == b"\xff"


def test_multicast_groups_and_clone_sessions(client):
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    g = pre.multicast_group_entry
    g.multicast_group_id = 7
    g.replicas.add(egress_port=1, instance=0)
    g.replicas.add(egress_port=2, instance=1)
    client.insert(packet_replication_engine_entry=pre)
    s = p4runtime_pb2.PacketReplicationEngineEntry()
    s.clone_session_entry.session_id = 5
    s.clone_session_entry.replicas.add(egress_port=255, instance=0)
    s.clone_session_entry.packet_length_bytes = 128
    client.insert(packet_replication_engine_entry=s)
    assert client.read(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()) == [pre, s]
    del g.replicas[1]
    client.modify(packet_replication_engine_entry=pre)
    wanted = p4runtime_pb2.PacketReplicationEngineEntry()
    wanted.multicast_group_entry.multicast_group_id = 7
    assert client.read(packet_replication_engine_entry=wanted) == [pre]
    client.delete(packet_replication_engine_entry=pre)
    assert client.read(packet_replication_engine_entry=wanted) == []


def test_replica_ports_given_as_bytes_read_back_canonical(client):
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 9
    pre.multicast_group_entry.replicas.add(port=b"\x00\x00\x00\x03", instance=2)
    client.insert(packet_replication_engine_entry=pre)
    [read] = client.read(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry())
    assert read.multicast_group_entry.replicas[0].port == b"\x03"


def test_digest_config(client):
    d = p4runtime_pb2.DigestEntry(digest_id=D_LEARN)
    d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns = 1000, 10, 10**9
    client.insert(digest_entry=d)
    assert client.read(digest_entry=p4runtime_pb2.DigestEntry()) == [d]
    client.delete(digest_entry=p4runtime_pb2.DigestEntry(digest_id=D_LEARN))
    assert client.read(digest_entry=p4runtime_pb2.DigestEntry()) == []


def test_verify_and_save_then_commit(client):
    client.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=1))
    client.set_pipeline(mini_p4info(), mini_json(), action=SetAction.VERIFY)
    client.set_pipeline(mini_p4info(), mini_json(), action=SetAction.VERIFY_AND_SAVE)
    assert len(client.read(table_entry=p4runtime_pb2.TableEntry())) == 1  # not committed yet
    client.set_pipeline(action=SetAction.COMMIT)
    assert client.read(table_entry=p4runtime_pb2.TableEntry()) == []
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(action=SetAction.COMMIT)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_reconcile_and_commit_keeps_state(server, client):
    client.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=6))
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 3
    pre.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    client.insert(packet_replication_engine_entry=pre)
    before = snapshot(client)
    client.set_pipeline(mini_p4info(), mini_json(), action=SetAction.RECONCILE_AND_COMMIT)
    assert snapshot(client) == before
    assert server[0].sw.process_packet(0, ipv4_frame(bytes([10, 9, 9, 9])))[0][0] == 6


def test_backup_cannot_write_and_takes_over_when_primary_leaves(server, client):
    backup = P4RTClient(server[1], election_id=4)
    try:
        with pytest.raises(grpc.RpcError) as info:
            backup.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=1))
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        client.close()
        update = backup.next_message("arbitration")
        assert update.status.code == code_pb2.OK
        backup.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=1))
        assert len(backup.read(table_entry=p4runtime_pb2.TableEntry())) == 1
    finally:
        backup.close()


def test_new_primary_is_announced_to_the_old_one(server, client):
    higher = P4RTClient(server[1], election_id=2**70)
    try:
        update = client.next_message("arbitration")
        assert update.status.code == code_pb2.ALREADY_EXISTS
        assert update.election_id.high == 2**6
    finally:
        higher.close()


def test_counter_and_meter_writes_without_index_set_the_whole_array(client):
    """Spec, CounterEntry/MeterEntry MODIFY: no index = every cell; a counter
    write without data changes nothing; a meter write without config resets."""
    every = p4runtime_pb2.CounterEntry(counter_id=C_PORT)
    every.data.packet_count, every.data.byte_count = 7, 70
    client.modify(counter_entry=every)
    cells = client.read(counter_entry=p4runtime_pb2.CounterEntry(counter_id=C_PORT))
    assert [(c.data.packet_count, c.data.byte_count) for c in cells] == [(7, 70)] * 8
    no_data = p4runtime_pb2.CounterEntry(counter_id=C_PORT)
    no_data.index.index = 4
    client.modify(counter_entry=no_data)
    assert client.read(counter_entry=p4runtime_pb2.CounterEntry(counter_id=C_PORT)) == cells
    client.modify(counter_entry=p4runtime_pb2.CounterEntry(counter_id=C_PORT, data={}))
    meters = p4runtime_pb2.MeterEntry(meter_id=M_PORT)
    meters.config.cir, meters.config.cburst, meters.config.pir, meters.config.pburst = 5, 1, 9, 2
    client.modify(meter_entry=meters)
    assert all(c.config == meters.config
               for c in client.read(meter_entry=p4runtime_pb2.MeterEntry(meter_id=M_PORT)))
    client.modify(meter_entry=p4runtime_pb2.MeterEntry(meter_id=M_PORT))
    assert not any(c.HasField("config")
                   for c in client.read(meter_entry=p4runtime_pb2.MeterEntry(meter_id=M_PORT)))
