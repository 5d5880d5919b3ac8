"""Read streams its answer in bounded replies and stops when the client goes.

A wildcard read of a large table used to be built whole in memory before the
first byte was sent (one read of 16k entries: +70 MB at its peak), and a read
the client abandoned ran to the end.
"""
import json
import subprocess
import sys
import threading

import grpc
import pytest
from google.protobuf import text_format
from p4.v1 import p4runtime_pb2

from server_support import (A_FORWARD, T_DMAC, P4RTClient, free_port, mini_json, mini_p4info,
                            start_server, wait_for_no_clients)
from softswitch_server.device import READ_MAX_ENTITIES

ENTRIES = 16384
SMALL = 2048        # enough for several replies, for the in-process tests
BIG_SIZE = 20000
READS = 4
# One whole answer of 16k entries held ~70 MB at once (ten concurrent reads: ~1 GB).
PEAK_GROWTH_LIMIT_KB = 32 * 1024


def big_pipeline():
    """The mini fixture with its exact-match dmac table enlarged to BIG_SIZE."""
    p4info = mini_p4info()
    next(t for t in p4info.tables if t.preamble.id == T_DMAC).size = BIG_SIZE
    doc = json.loads(mini_json())
    for table in doc["pipelines"][0]["tables"]:
        if table["name"] == "MyIngress.dmac":
            table["max_size"] = BIG_SIZE
    return p4info, json.dumps(doc).encode()


def dmac_updates(first, count):
    updates = []
    for mac in range(first, first + count):
        e = p4runtime_pb2.TableEntry(table_id=T_DMAC)
        e.match.add(field_id=1).exact.value = mac.to_bytes(6, "big").lstrip(b"\0") or b"\0"
        e.action.action.action_id = A_FORWARD
        e.action.action.params.add(param_id=1, value=b"\x01")
        updates.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                            entity=p4runtime_pb2.Entity(table_entry=e)))
    return updates


def fill(client, count=ENTRIES):
    for first in range(0, count, 1024):
        client.write(*dmac_updates(first, 1024))


def wildcard_read(stub):
    request = p4runtime_pb2.ReadRequest(entities=[p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(table_id=T_DMAC))])
    return stub.Read(request)


def concurrent_reads(stub) -> list:
    """READS wildcard reads at once; the number of entries each returned."""
    counts = []
    readers = [threading.Thread(target=lambda: counts.append(
        sum(len(r.entities) for r in wildcard_read(stub)))) for _ in range(READS)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    return counts


def status_kb(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_large_wildcard_reads_keep_the_server_memory_bounded(tmp_path):
    p4info, device_json = big_pipeline()
    (tmp_path / "big.json").write_bytes(device_json)
    (tmp_path / "big.p4info.txtpb").write_text(text_format.MessageToString(p4info))
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch_server.cli", str(tmp_path / "big.json"),
                             "--p4info", str(tmp_path / "big.p4info.txtpb"),
                             "--grpc-server-addr", address], stderr=subprocess.PIPE, text=True)
    try:
        grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=30)
        client = P4RTClient(address, election_id=1)
        fill(client)
        sizes = [len(r.entities) for r in wildcard_read(client.stub)]
        assert sum(sizes) == ENTRIES and max(sizes) <= READ_MAX_ENTITIES
        assert concurrent_reads(client.stub) == [ENTRIES] * READS  # warms threads and arenas
        before = status_kb(proc.pid, "VmRSS")
        with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
            f.write("5")   # reset the peak (VmHWM) to the current RSS
        assert concurrent_reads(client.stub) == [ENTRIES] * READS
        peak, after = status_kb(proc.pid, "VmHWM"), status_kb(proc.pid, "VmRSS")
        print(f"server RSS {before} kB before {READS} concurrent reads of {ENTRIES} entries, "
              f"peak {peak} kB, {after} kB after")
        assert peak - before < PEAK_GROWTH_LIMIT_KB
        client.close()
    finally:
        proc.kill()
        proc.wait()


class FakeContext:
    """The part of grpc.ServicerContext that Read uses; the client leaves on demand."""

    def __init__(self):
        self.active = True

    def is_active(self):
        return self.active

    def abort(self, code, details):
        raise AssertionError(f"unexpected abort {code}: {details}")


@pytest.fixture(scope="module")
def filled_server():
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    p4info, device_json = big_pipeline()
    client.set_pipeline(p4info, device_json)
    fill(client, SMALL)
    yield srv, client
    client.close()
    wait_for_no_clients(srv)
    srv.stop()


def service_read(srv, context):
    from softswitch_server.service import P4RuntimeService
    service = P4RuntimeService(srv.device, srv.arbitrator, srv.packet_io)
    request = p4runtime_pb2.ReadRequest(entities=[p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(table_id=T_DMAC))])
    return service.Read(request, context)


def test_a_read_stops_when_the_client_goes_away(filled_server):
    srv, _ = filled_server
    context = FakeContext()
    replies = service_read(srv, context)
    first = next(replies)
    assert len(first.entities) == READ_MAX_ENTITIES
    context.active = False
    assert list(replies) == []


def test_the_device_is_not_locked_while_a_reply_waits_to_be_sent(filled_server):
    srv, client = filled_server
    replies = service_read(srv, FakeContext())
    next(replies)   # suspended between two replies, as when the client reads slowly
    acquired = []

    def try_lock():
        # the digest pump also takes the lock for a moment now and then
        acquired.append(srv.device.lock.acquire(timeout=30))
        if acquired[-1]:
            srv.device.lock.release()
    other = threading.Thread(target=try_lock)
    other.start()
    other.join()
    assert acquired == [True]
    client.write(*dmac_updates(SMALL, 1))   # a write between two replies
    rest = sum(len(r.entities) for r in replies)
    assert READ_MAX_ENTITIES + rest in (SMALL, SMALL + 1)
    client.write(*[p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE, entity=u.entity)
                  for u in dmac_updates(SMALL, 1)])


def test_a_cancelled_grpc_read_ends_on_the_server(filled_server):
    srv, client = filled_server
    call = wildcard_read(client.stub)
    assert len(next(call).entities) == READ_MAX_ENTITIES
    call.cancel()
    with pytest.raises(grpc.RpcError) as info:
        list(call)
    assert info.value.code() == grpc.StatusCode.CANCELLED
    assert len(client.read(table_entry=p4runtime_pb2.TableEntry(table_id=T_DMAC))) == SMALL
