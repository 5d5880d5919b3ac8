"""A failed Write batch stays readable by a default gRPC client.

The per-update p4.v1.Error list travels in the grpc-status-details-bin
trailer; a default grpcio client refuses trailers over 8-16 KB, so a failed
batch of ~200 updates used to reach it as RESOURCE_EXHAUSTED "Stream removed"
with no errors at all (and each message quoted whole oversized values).
"""
import grpc
import pytest
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2

from server_support import (P4RTClient, Update, lpm_entry, mini_json, mini_p4info, start_server,
                            wait_for_no_clients)
from softswitch_server.service import DETAILS_BUDGET, MESSAGE_CHARS

BATCH = 1000


@pytest.fixture(scope="module")
def client():
    srv, address = start_server()
    c = P4RTClient(address, election_id=1)   # grpc.insecure_channel with default options
    c.set_pipeline(mini_p4info(), mini_json())
    yield c
    c.close()
    wait_for_no_clients(srv)
    srv.stop()


def failed_status(error: grpc.RpcError) -> status_pb2.Status:
    assert error.code() == grpc.StatusCode.UNKNOWN, error.details()
    raw = dict(error.trailing_metadata())["grpc-status-details-bin"]
    assert len(raw) <= DETAILS_BUDGET + 1024
    return status_pb2.Status.FromString(raw)


def errors_of(status):
    out = []
    for packed in status.details:
        e = p4runtime_pb2.Error()
        assert packed.Unpack(e)
        out.append(e)
    return out


def delete(i):
    return Update(type=Update.DELETE, entity=p4runtime_pb2.Entity(
        table_entry=lpm_entry(bytes([10, 1, i >> 8, i & 255]), 32)))


def oversized(i):
    """An entry whose match value is 2 KB long (the value must fit 32 bits)."""
    return Update(type=Update.INSERT, entity=p4runtime_pb2.Entity(
        table_entry=lpm_entry(bytes([1 + i % 200]) * 2048, 32, port=1)))


def test_a_failed_batch_of_1000_updates_reaches_a_default_client(client):
    updates = [delete(i) if i % 2 else oversized(i) for i in range(BATCH)]
    with pytest.raises(grpc.RpcError) as info:
        client.write(*updates)
    status = failed_status(info.value)
    assert status.message.startswith(f"{BATCH} of {BATCH} updates failed (")
    assert "500 NOT_FOUND" in status.message and "500 OUT_OF_RANGE" in status.message
    assert "update 0: OUT_OF_RANGE" in status.message
    errors = errors_of(status)
    assert 50 < len(errors) < BATCH and f"cover updates 0..{len(errors) - 1} only" in status.message
    for i, e in enumerate(errors):   # detail i is update i
        assert e.canonical_code == (grpc.StatusCode.NOT_FOUND if i % 2 else
                                    grpc.StatusCode.OUT_OF_RANGE).value[0]
        assert len(e.message) <= MESSAGE_CHARS
    assert "(2048 bytes)" in errors[0].message and "no such entry" in errors[1].message


def test_a_small_failed_batch_keeps_one_error_per_update(client):
    ok = Update(type=Update.INSERT, entity=p4runtime_pb2.Entity(
        table_entry=lpm_entry(b"\x0b\x00\x00\x00", 8, port=1)))
    with pytest.raises(grpc.RpcError) as info:
        client.write(delete(1), ok, delete(2))
    errors = errors_of(failed_status(info.value))
    assert [e.canonical_code for e in errors] == [5, 0, 5]   # NOT_FOUND, OK, NOT_FOUND
    client.write(Update(type=Update.DELETE, entity=ok.entity))
