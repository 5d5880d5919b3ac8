"""Primary election (P4Runtime spec section 5), without gRPC."""
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from softswitch_server.arbitration import Arbitrator, Client
from softswitch_server.errors import P4RuntimeError


def arbitration(election_id, device_id=0):
    u = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
    u.election_id.high, u.election_id.low = election_id >> 64, election_id & (2**64 - 1)
    return u


def drain(client):
    out = []
    while not client.outbox.empty():
        out.append(client.outbox.get_nowait().arbitration)
    return out


def joined(arb, election_id):
    c = Client()
    arb.add(c)
    arb.update(c, arbitration(election_id))
    return c


def test_highest_election_id_is_primary_and_everyone_is_told():
    arb = Arbitrator(device_id=0)
    low = joined(arb, 5)
    assert [m.status.code for m in drain(low)] == [code_pb2.OK]
    high = joined(arb, 2**64 + 1)
    assert [m.status.code for m in drain(high)] == [code_pb2.OK]
    [told] = drain(low)
    assert told.status.code == code_pb2.ALREADY_EXISTS
    assert (told.election_id.high, told.election_id.low) == (1, 1)
    assert arb.primary_election_id() == 2**64 + 1


def test_backup_joining_tells_only_itself():
    arb = Arbitrator(device_id=0)
    primary = joined(arb, 10)
    drain(primary)
    backup = joined(arb, 3)
    assert [m.status.code for m in drain(backup)] == [code_pb2.ALREADY_EXISTS]
    assert drain(primary) == []


def test_primary_leaving_promotes_the_next_and_notifies():
    arb = Arbitrator(device_id=0)
    a, b = joined(arb, 10), joined(arb, 3)
    drain(a), drain(b)
    arb.remove(a)
    assert [m.status.code for m in drain(b)] == [code_pb2.OK]
    assert arb.is_primary(b)


def test_duplicate_election_id_and_wrong_device_are_refused():
    arb = Arbitrator(device_id=7)
    first = Client()
    arb.add(first)
    arb.update(first, arbitration(4, device_id=7))
    second = Client()
    arb.add(second)
    with pytest.raises(P4RuntimeError) as dup:
        arb.update(second, arbitration(4, device_id=7))
    assert dup.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(P4RuntimeError) as dev:
        arb.update(second, arbitration(5, device_id=1))
    assert dev.value.code.name == "NOT_FOUND"
    assert arb.primary_election_id() == 4


def test_only_the_primary_passes_the_write_check():
    arb = Arbitrator(device_id=0)
    joined(arb, 9), joined(arb, 2)
    arb.check_primary(0, arbitration(9).election_id)
    for device_id, eid in [(0, 2), (0, 0), (0, 11)]:
        with pytest.raises(P4RuntimeError) as info:
            arb.check_primary(device_id, arbitration(eid).election_id)
        assert info.value.code.name == "PERMISSION_DENIED"
    with pytest.raises(P4RuntimeError) as info:
        arb.check_primary(3, arbitration(9).election_id)
    assert info.value.code.name == "NOT_FOUND"


def test_no_client_means_no_write():
    with pytest.raises(P4RuntimeError) as info:
        Arbitrator(0).check_primary(0, arbitration(1).election_id)
    assert info.value.code.name == "PERMISSION_DENIED"
