"""PacketIn, PacketOut and digests end to end: a veth port whose peer sits in
a network namespace, the real engine, and a P4Runtime client on the stream.
Needs root (namespaces, made by softswitch_server.netlab); names start with
the `sv` prefix and are removed."""
import subprocess
import sys
import uuid

import pytest
from p4.v1 import p4runtime_pb2
from softswitch_server import netlab

from server_support import (A_TO_CPU, D_LEARN, P4RTClient, acl_entry, mini_json,
                            mini_p4info, start_server, wait_for_no_clients)

pytestmark = pytest.mark.root

RECEIVER = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
print("ready", flush=True)
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    try:
        frame = s.recv(65535)
    except socket.timeout:
        continue
    if frame[12:14] == bytes.fromhex(sys.argv[3]):
        print(frame.hex(), flush=True)
        break
"""

SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
s.send(bytes.fromhex(sys.argv[2]))
"""


@pytest.fixture
def veth_in_netns():
    """(switch-side interface, namespace, peer interface), deleted afterwards."""
    tag = uuid.uuid4().hex[:6]
    # netlab turns IPv6 off on both ends: only our frames arrive
    with netlab.Namespace(f"svpio{tag}") as ns, \
            netlab.VethPair(f"svp{tag}a", f"svp{tag}b", peer_ns=ns.name) as pair:
        yield pair.end, ns.name, pair.peer


@pytest.fixture
def switch(veth_in_netns):
    port_if, ns, peer_if = veth_in_netns
    srv, address = start_server(ports={0: port_if}, cpu_port=255)
    srv.sw.start()
    client = P4RTClient(address, election_id=5)
    client.set_pipeline(mini_p4info(), mini_json())
    try:
        yield srv, address, client, ns, peer_if
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()
        srv.sw.stop()


def frame(ether_type: int, body=b"aqmlab-softswitch-server-test-frame-padding-to-60-bytes!") -> bytes:
    return bytes.fromhex("000000000002" "0000000000aa") + ether_type.to_bytes(2, "big") + body


def send_from_peer(ns, peer_if, data: bytes):
    netlab.sh(sys.executable, "-c", SENDER, peer_if, data.hex(), ns=ns)


def test_frame_sent_to_cpu_arrives_as_packet_in_with_digest(switch):
    _, _, client, ns, peer_if = switch
    client.insert(table_entry=acl_entry(0x0801, action=A_TO_CPU))
    digest = p4runtime_pb2.DigestEntry(digest_id=D_LEARN)
    digest.config.max_list_size, digest.config.ack_timeout_ns = 1, 10**9
    client.insert(digest_entry=digest)
    sent = frame(0x0801)
    send_from_peer(ns, peer_if, sent)
    packet = client.next_message("packet", timeout=10)
    assert packet is not None, "no PacketIn"
    assert packet.payload == sent
    assert [(m.metadata_id, m.value) for m in packet.metadata] == [(1, b"\x00"), (2, b"\x00")]
    learned = []
    while (digest_list := client.next_message("digest", timeout=5)) is not None:
        assert digest_list.digest_id == D_LEARN and len(digest_list.data) == 1
        learned.append([m.bitstring for m in digest_list.data[0].struct.members])
        ack = p4runtime_pb2.StreamMessageRequest()
        ack.digest_ack.digest_id, ack.digest_ack.list_id = D_LEARN, digest_list.list_id
        client.send(ack)
        if learned[-1] == [b"\xaa", b"\x00"]:
            break
    assert [b"\xaa", b"\x00"] in learned


def test_packet_out_leaves_on_the_port_named_in_its_metadata(switch):
    _, _, client, ns, peer_if = switch
    receiver = subprocess.Popen(netlab.netns_argv(ns, sys.executable, "-c", RECEIVER, peer_if, "10", "0802"),
                                stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        out = p4runtime_pb2.StreamMessageRequest()
        out.packet.payload = frame(0x0802)
        out.packet.metadata.add(metadata_id=1, value=b"\x00")
        out.packet.metadata.add(metadata_id=2, value=b"\x00")
        client.send(out)
        received = receiver.communicate(timeout=15)[0].strip()
    finally:
        if receiver.poll() is None:
            receiver.kill()
    assert bytes.fromhex(received) == frame(0x0802)


def test_bad_or_unauthorised_packet_out_gets_a_stream_error(switch):
    srv, address, client, _, _ = switch
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.packet.payload = frame(0x0802)
    bad.packet.metadata.add(metadata_id=1, value=b"\x02\x00")   # does not fit 9 bits
    bad.packet.metadata.add(metadata_id=2, value=b"\x00")
    client.send(bad)
    error = client.next_message("error")
    assert error.canonical_code == 11 and error.packet_out.packet_out == bad.packet  # OUT_OF_RANGE (spec 8.3)
    backup = P4RTClient(address, election_id=1)
    try:
        good = p4runtime_pb2.StreamMessageRequest()
        good.packet.CopyFrom(bad.packet)
        good.packet.metadata[0].value = b"\x00"
        backup.send(good)
        assert backup.next_message("error").canonical_code == 7   # PERMISSION_DENIED
    finally:
        backup.close()
