"""Action selector on a running switch: frames sent into port 0 leave through a
member (one port) and through a group (a flow keeps its port, the group's two
ports share the flows), as the pipeline computes. Needs root (namespace and
veths made by softswitch_server.netlab, names starting `svs`, removed)."""
import contextlib
import subprocess
import sys
import uuid

import pytest
from p4.v1 import p4runtime_pb2 as pb
from softswitch_server import netlab

from server_support import P4RTClient, start_server, wait_for_no_clients
from test_server_action_profiles import (ecmp_entry, group, ids, ipv4_frame, member,  # noqa: F401
                                         nexthop, pair, program)

pytestmark = pytest.mark.root

RECEIVER = r"""
import select, socket, sys, time
socks = {}
for name in sys.argv[1].split(","):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((name, 0))
    socks[s] = name
print("ready", flush=True)
wanted, deadline = int(sys.argv[2]), time.time() + float(sys.argv[3])
seen = 0
while seen < wanted and time.time() < deadline:
    for s in select.select(list(socks), [], [], 0.2)[0]:
        frame = s.recv(65535)
        if frame[23] == 253:   # our experimental protocol number
            print(socks[s], frame.hex(), flush=True)
            seen += 1
"""

SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for frame in sys.argv[2].split(","):
    s.send(bytes.fromhex(frame))
"""
PAD = bytes(26)   # to a 60-byte frame


@pytest.fixture
def wired_switch(program):
    """Ports 0-2 of a running switch, their peers in one namespace."""
    tag = uuid.uuid4().hex[:6]
    with contextlib.ExitStack() as stack:
        ns = stack.enter_context(netlab.Namespace(f"svsel{tag}"))
        pairs = [stack.enter_context(netlab.VethPair(f"svs{tag}{i}a", f"svs{tag}{i}b", peer_ns=ns.name))
                 for i in range(3)]
        srv, address = start_server(ports={i: p.end for i, p in enumerate(pairs)}, cpu_port=255)
        srv.sw.start()
        client = P4RTClient(address, election_id=1)
        client.set_pipeline(*pair(program))
        try:
            yield srv, client, ns.name, [p.peer for p in pairs]
        finally:
            client.close()
            wait_for_no_clients(srv)
            srv.stop()
            srv.sw.stop()


def test_frames_leave_through_a_member_and_a_group(wired_switch, ids):
    srv, client, ns, peers = wired_switch
    for i in (1, 2):
        client.insert(action_profile_member=member(ids, i, nexthop(ids, i, 0xA0 + i)))
    client.insert(action_profile_group=group(ids, 10, [1, 2]))
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_profile_group_id=10))
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x01\x00\x00", 16, action_profile_member_id=1))
    to_member = [ipv4_frame(src, 0x0A010005, protocol=253) + PAD for src in range(8)]
    to_group = [ipv4_frame(src, 0x0A000001, protocol=253) + PAD for src in range(32)] * 2
    frames = to_member + to_group
    expected = {f.hex(): srv.sw.process_packet(0, f)[0][0] for f in frames}
    receiver = subprocess.Popen(netlab.netns_argv(ns, sys.executable, "-c", RECEIVER,
                                                  f"{peers[1]},{peers[2]}", str(len(frames)), "20"),
                                stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        netlab.sh(sys.executable, "-c", SENDER, peers[0], ",".join(f.hex() for f in frames), ns=ns)
        lines = receiver.communicate(timeout=30)[0].split()
    finally:
        if receiver.poll() is None:
            receiver.kill()
    arrived = [(peers.index(name), bytes.fromhex(data)) for name, data in zip(lines[::2], lines[1::2])]
    assert len(arrived) == len(frames)
    sources = {}
    for port, frame in arrived:
        original = frame[:5] + b"\x00" + frame[6:]           # the sent frame had dmac 0
        assert expected[original.hex()] == port == frame[5] - 0xA0
        sources.setdefault(frame[26:34], set()).add(port)   # (source, destination)
    assert all(len(ports) == 1 for ports in sources.values())   # a flow keeps its port
    member_ports = {port for port, frame in arrived if frame[30:32] == b"\x0a\x01"}
    group_ports = {port for port, frame in arrived if frame[30:32] == b"\x0a\x00"}
    assert member_ports == {1} and group_ports == {1, 2}


def test_a_member_leaves_its_group_while_its_watch_port_is_down(wired_switch, ids):
    """The peer of port 2 goes down (carrier lost on the switch's end): the member
    watching port 2 stops being selected, and is selected again once it is up."""
    import time
    srv, client, ns, peers = wired_switch
    for i in (1, 2):
        client.insert(action_profile_member=member(ids, i, nexthop(ids, i)))
    watched = group(ids, 10, [1, 2])
    for m in watched.members:
        m.watch_port = bytes([m.member_id])
    client.insert(action_profile_group=watched)
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_profile_group_id=10))

    def ports_once_settled(want, timeout_s=10.0):
        """The group's ports over 32 flows, waiting for the liveness poll (100 ms)."""
        deadline = time.monotonic() + timeout_s
        while True:
            seen = {srv.sw.process_packet(0, ipv4_frame(src, 0x0A000001))[0][0] for src in range(32)}
            if seen == want or time.monotonic() > deadline:
                return seen
            time.sleep(0.05)
    assert ports_once_settled({1, 2}) == {1, 2}
    netlab.sh("ip", "link", "set", "dev", peers[2], "down", ns=ns)
    assert ports_once_settled({1}) == {1}
    netlab.sh("ip", "link", "set", "dev", peers[2], "up", ns=ns)
    assert ports_once_settled({1, 2}) == {1, 2}
