"""Fixtures and helpers for redctl's integration tests: red_ecn.p4 compiled by the
built-in front-end, and a softswitch whose two ports are veths whose other
ends live in a private network namespace (prefix rd-, made by
softswitch_server.netlab)."""
from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from redctl import Controller, PortSpec, compiler
from softswitch_server import netlab

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NS = f"rd-it{os.getpid() % 10000}"
SWITCH_IFS = {0: f"rd-i{os.getpid() % 10000}a", 1: f"rd-i{os.getpid() % 10000}b"}
HOST_IFS = {0: "p0", 1: "p1"}
BOTTLENECK_TM = "1:rate=100kbit,buffer=100"
PORTS = {0: PortSpec(buffer_packets=64), 1: PortSpec(buffer_packets=100, rate_bps=1e5)}
SWITCH_MAC = {0: "02:00:00:00:00:00", 1: "02:00:00:00:00:01"}
HOST_MAC = {0: "02:00:00:00:01:00", 1: "02:00:00:00:01:01"}
HOST_IP = {0: "10.78.0.1", 1: "10.78.1.1"}
FRAME_BYTES = 1000
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


@contextmanager
def in_netns(name: str):
    """Run the block in network namespace `name` (this thread only); sockets
    opened inside stay in that namespace."""
    root = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns({name})")
        yield
    finally:
        _libc.setns(root, CLONE_NEWNET)
        os.close(root)
        os.close(target)


def packet_socket(ns: str, iface: str) -> socket.socket:
    with in_netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((iface, 0))
    s.settimeout(0.05)
    return s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """(p4info, json) of p4src/red_ecn.p4 from the configured compiler ($P4C)."""
    p4info, json_path = compiler.compile_program(ROOT / "p4src" / "red_ecn.p4",
                                                 tmp_path_factory.mktemp("red_ecn"))
    return Path(p4info), Path(json_path)


def _ports() -> list:
    """The namespace and one veth pair per switch port (switch end in the root
    namespace, host end renamed p0/p1 in NS), in creation order."""
    return [netlab.Namespace(NS)] + [
        netlab.VethPair(sw_if, f"{sw_if}h", peer_ns=NS, peer_rename=HOST_IFS[port])
        for port, sw_if in SWITCH_IFS.items()]


def _delete(parts: list) -> None:
    for part in reversed(parts):
        part.delete()


@pytest.fixture(scope="module")
def switch(compiled):
    """A running softswitch: {"address", "p4info", "json"}; port 1 is a
    100 kb/s, 100-packet bottleneck."""
    from redctl.controller import wait_for_server
    ports = _ports()
    _delete(ports)   # leftovers of an earlier run that had our pid
    proc = None
    try:
        for part in ports:
            part.create()
        address = f"127.0.0.1:{_free_port()}"
        proc = subprocess.Popen(
            [str(BIN / "softswitch"), *[a for p, i in SWITCH_IFS.items() for a in ("-i", f"{p}@{i}")],
             "--grpc-server-addr", address, "--tm", BOTTLENECK_TM, "--seed", "7"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for_server(address, timeout_s=20)
        yield {"address": address, "p4info": compiled[0], "json": compiled[1]}
    finally:
        if proc is not None:
            netlab.stop(proc)
        _delete(ports)


@pytest.fixture(scope="module")
def ctl(switch):
    c = Controller(switch["address"], ports=PORTS)
    c.push_pipeline(str(switch["p4info"]), str(switch["json"]))
    for port in PORTS:
        c.add_route(f"{HOST_IP[port]}/32", port, dst_mac=HOST_MAC[port], src_mac=SWITCH_MAC[port])
    yield c
    c.close()


@pytest.fixture(scope="module")
def wire(switch):
    socks = {port: packet_socket(NS, iface) for port, iface in HOST_IFS.items()}
    yield socks
    for s in socks.values():
        s.close()


def frame(ecn: int, seq: int) -> bytes:
    pkt = (Ether(src=HOST_MAC[0], dst=SWITCH_MAC[0]) /
           IP(src=HOST_IP[0], dst=HOST_IP[1], tos=ecn, ttl=64) / UDP(sport=4000 + seq, dport=5000))
    return bytes(pkt / bytes(FRAME_BYTES - len(pkt)))


def burst(wire, ecn: int, n: int, quiet_s: float = 0.6) -> list:
    """Send n frames at once from host 0 and collect what reaches host 1."""
    while _recv(wire[1]) is not None:
        pass
    for i in range(n):
        wire[0].send(frame(ecn, i))
    got, last = [], time.monotonic()
    while time.monotonic() - last < quiet_s:
        data = _recv(wire[1])
        if data is not None:
            pkt = Ether(data)
            if IP in pkt and pkt[IP].dst == HOST_IP[1]:
                got.append(pkt)
                last = time.monotonic()
    return got


def _recv(sock):
    try:
        return sock.recv(65535)
    except TimeoutError:
        return None


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in after}
