"""Error-typed table keys and p4c's own P4Info through the real server.

p4c writes a key on `standard_metadata.parser_error` with P4Info bitwidth 0
and lists the errors in type_info; the P4Runtime specification gives error
members no integer value, so a controller names them ("NoError"). The server
maps names to the JSON's error codes and reads entries back by name.
Every p4c reference pair (softswitch/tests/p4c_reference) is accepted as it is.
"""
import json
import pathlib

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from server_support import FIXTURES, P4RTClient, wait_for_no_clients
from softswitch_p4c.driver import compile_to_objects

REFERENCE = pathlib.Path(__file__).parent / "p4c_reference"
ETH_IPV4 = bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + bytes(20)


@pytest.fixture
def client(server):
    c = P4RTClient(server[1], election_id=10)
    yield c
    c.close()
    wait_for_no_clients(server[0])


@pytest.mark.parametrize("stem", sorted(p.stem for p in REFERENCE.glob("*.json")))
def test_p4c_reference_pairs_are_accepted(client, stem):
    p4info = text_format.Parse((REFERENCE / f"{stem}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    client.set_pipeline(p4info, (REFERENCE / f"{stem}.json").read_bytes())


@pytest.fixture
def error_key_pipeline(client):
    doc, p4info = compile_to_objects(str(FIXTURES / "error_key.p4"))
    table = p4info.tables[0]
    assert table.match_fields[0].name == "sm.parser_error" and table.match_fields[0].bitwidth == 0
    client.set_pipeline(p4info, json.dumps(doc).encode())
    fwd = next(a for a in p4info.actions if a.preamble.name == "I.fwd")
    return p4info, table, fwd


def _entry(table, fwd, error_name: bytes):
    e = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    e.match.add(field_id=1).exact.value = error_name
    e.match.add(field_id=2).exact.value = b"\x08\x00"
    e.action.action.action_id = fwd.preamble.id
    e.action.action.params.add(param_id=1, value=b"\x03")
    e.action.action.params.add(param_id=2, value=b"\x02")
    return e


def test_error_key_takes_the_error_name_and_reads_it_back(server, client, error_key_pipeline):
    _, table, fwd = error_key_pipeline
    client.insert(table_entry=_entry(table, fwd, b"NoError"))
    [read] = client.read(table_entry=p4runtime_pb2.TableEntry(table_id=table.preamble.id))
    assert read.match[0].exact.value == b"NoError"
    # a well-formed IPv4/Ethernet frame parses with NoError (code 0) and hits the entry
    assert [port for port, _ in server[0].sw.process_packet(0, ETH_IPV4)] == [3]


def test_unknown_error_name_is_refused(client, error_key_pipeline):
    _, table, fwd = error_key_pipeline
    with pytest.raises(grpc.RpcError) as info:
        client.insert(table_entry=_entry(table, fwd, b"NoSuchError"))
    assert "not an error name" in str(info.value.details() or info.value.trailing_metadata())


def test_width_zero_key_without_error_type_is_refused(client, error_key_pipeline):
    p4info, table, _ = error_key_pipeline
    broken = p4info_pb2.P4Info()
    broken.CopyFrom(p4info)
    broken.tables[0].match_fields[1].bitwidth = 0       # h.eth.type: a bit<16> field
    doc, _ = compile_to_objects(str(FIXTURES / "error_key.p4"))
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(broken, json.dumps(doc).encode())
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
