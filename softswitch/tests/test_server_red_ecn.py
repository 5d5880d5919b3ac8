"""The server with the project's real program: p4src/red_ecn.p4 compiled by
softswitch-p4c, pushed, written and read by P4Info names, forwarding a packet."""
import pathlib
import subprocess
import sys

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from server_support import P4RTClient, SetAction, start_server, wait_for_no_clients

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def red_ecn(tmp_path_factory):
    """(P4Info, JSON bytes) of p4src/red_ecn.p4, compiled now."""
    out = tmp_path_factory.mktemp("red_ecn")
    p4c = pathlib.Path(sys.executable).parent / "softswitch-p4c"
    subprocess.run([str(p4c), str(REPO / "p4src" / "red_ecn.p4"), "-o", str(out),
                    "--p4runtime-files", str(out / "red_ecn.p4info.txtpb")], check=True)
    p4info = text_format.Parse((out / "red_ecn.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return p4info, (out / "red_ecn.json").read_bytes()


def by_name(items, name):
    return next(i for i in items if i.preamble.name == name)


def test_red_ecn_pipeline_is_served(red_ecn):
    p4info, device_json = red_ecn
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    try:
        client.set_pipeline(p4info, device_json)
        for table in p4info.tables:   # every table has a readable default entry
            [default] = client.read(table_entry=p4runtime_pb2.TableEntry(
                table_id=table.preamble.id, is_default_action=True))
            assert default.action.action.action_id in {r.id for r in table.action_refs}
        lpm = by_name(p4info.tables, "MyIngress.ipv4_lpm")
        fwd = by_name(p4info.actions, "MyIngress.ipv4_forward")
        entry = p4runtime_pb2.TableEntry(table_id=lpm.preamble.id)
        m = entry.match.add(field_id=lpm.match_fields[0].id)
        m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 1, 0]), 24
        entry.action.action.action_id = fwd.preamble.id
        values = {"dstAddr": b"\x0a\x0b\x0c\x0d\x0e\x0f", "srcAddr": b"\x01", "port": b"\x01"}
        for p in fwd.params:
            entry.action.action.params.add(param_id=p.id, value=values[p.name])
        client.insert(table_entry=entry)
        assert client.read(table_entry=p4runtime_pb2.TableEntry(table_id=lpm.preamble.id)) == [entry]
        frame = (b"\x00\x00\x00\x00\x00\x01" * 2 + b"\x08\x00"
                 + bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 9]))
        [(port, out)] = srv.sw.process_packet(0, frame)
        assert port == 1 and out[:6] == values["dstAddr"] and out[22] == 63  # TTL decremented
        tx = by_name(p4info.counters, "MyEgress.port_tx")
        cells = client.read(counter_entry=p4runtime_pb2.CounterEntry(counter_id=tx.preamble.id))
        assert len(cells) == tx.size and cells[1].data.packet_count == 1
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()


def _forward_one(srv):
    frame = (b"\x00\x00\x00\x00\x00\x01" * 2 + b"\x08\x00"
             + bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 9]))
    return srv.sw.process_packet(0, frame)


def test_empty_or_partial_p4info_is_refused_and_changes_nothing(red_ecn):
    """A P4Info that omits JSON tables would leave them unaddressable (an empty
    one served no tables and stopped forwarding): INVALID_ARGUMENT, nothing changed."""
    p4info, device_json = red_ecn
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    try:
        client.set_pipeline(p4info, device_json)
        lpm = by_name(p4info.tables, "MyIngress.ipv4_lpm")
        fwd = by_name(p4info.actions, "MyIngress.ipv4_forward")
        entry = p4runtime_pb2.TableEntry(table_id=lpm.preamble.id)
        m = entry.match.add(field_id=lpm.match_fields[0].id)
        m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 1, 0]), 24
        entry.action.action.action_id = fwd.preamble.id
        for p in fwd.params:
            entry.action.action.params.add(param_id=p.id, value=b"\x01")
        client.insert(table_entry=entry)
        forwarded = _forward_one(srv)
        assert [port for port, _ in forwarded] == [1]

        with pytest.raises(grpc.RpcError) as empty:
            client.set_pipeline(p4info_pb2.P4Info(), device_json)
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "MyIngress.ipv4_lpm" in empty.value.details()

        partial = p4info_pb2.P4Info()
        partial.CopyFrom(p4info)
        del partial.tables[[t.preamble.name for t in partial.tables].index("MyEgress.red_config")]
        with pytest.raises(grpc.RpcError) as one_less:
            client.set_pipeline(partial, device_json, action=SetAction.VERIFY)
        assert one_less.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "MyEgress.red_config" in one_less.value.details()

        assert client.read(table_entry=p4runtime_pb2.TableEntry(table_id=lpm.preamble.id)) == [entry]
        served = client.stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE))
        assert served.config.p4info == p4info
        assert _forward_one(srv) == forwarded
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()
