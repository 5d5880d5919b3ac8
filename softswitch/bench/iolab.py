"""A two-host veth lab for the engine's tests and benchmarks.

    host A (netns) a-eth ==veth== port 0 (root ns)  [switch]  port 1 (root ns) ==veth== b-eth host B (netns)

Both hosts are in 10.77.0.0/24 (A .1, B .2) and reach each other through the
switch: each host's neighbour entry for the other points at ROUTER_MAC, and
the switch program rewrites the MACs. Namespaces and veths come from
softswitch_server.netlab: offloads are off on every veth end (the switch
copies raw frames, so checksums and segment sizes must be real) and IPv6 is
off so no stray frames cross the switch.

Names carry the prefix ``io`` plus a random tag, so labs never collide; a lab
is a context manager and always deletes what it made.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from softswitch_server import netlab
from softswitch_server.netlab import sh

HERE = Path(__file__).resolve().parent
FORWARD_PROGRAM = HERE / "programs" / "forward_stamp.json"
ROUTER_MAC = "02:00:00:00:00:fe"
HOST_IP = {"a": "10.77.0.1", "b": "10.77.0.2"}


def mac_of(ifname: str, ns: str | None = None) -> str:
    out = sh("ip", "-j", "link", "show", ifname, ns=ns).stdout
    return json.loads(out)[0]["address"]


def ip_to_bytes(ip: str) -> bytes:
    return bytes(int(x) for x in ip.split("."))


def mac_to_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


@dataclass
class Host:
    ns: str
    ifname: str  # inside the namespace
    switch_if: str  # the peer end, in the root namespace: the switch port
    ip: str
    mac: str = ""

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh(*cmd, ns=self.ns, check=check)

    def popen(self, *cmd: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(netlab.netns_argv(self.ns, *cmd), **kw)

    def rx_stats(self) -> tuple[int, int]:
        """(packets, bytes) received on the host's interface, from the kernel's counters."""
        base = f"/sys/class/net/{self.ifname}/statistics"
        out = self.run("cat", f"{base}/rx_packets", f"{base}/rx_bytes").stdout.split()
        return int(out[0]), int(out[1])


#: ethtool -K arguments giving a veth the offloads Linux creates it with
DEFAULT_OFFLOADS = ("rx", "on", "tx", "on", "sg", "on", "tso", "on", "gso", "on", "gro", "off")


@dataclass
class VethLab:
    """Two hosts in namespaces, each wired to a switch port in the root namespace."""

    tag: str = field(default_factory=lambda: secrets.token_hex(4))  # names <= 12 of 15 chars
    hosts: dict[str, Host] = field(default_factory=dict)
    _made: list = field(default_factory=list)  # netlab objects, deleted in reverse order

    def __enter__(self) -> "VethLab":
        try:
            for name in ("a", "b"):
                self.hosts[name] = self._make_host(name)
            self._wire_neighbours()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def ports(self) -> dict[int, str]:
        """The switch's port map: port 0 faces host A, port 1 host B."""
        return {0: self.hosts["a"].switch_if, 1: self.hosts["b"].switch_if}

    def _make_host(self, name: str) -> Host:
        ns = f"io{self.tag}{name}"
        host = Host(ns=ns, ifname=f"{name}-eth", switch_if=f"io{self.tag}{name}s", ip=HOST_IP[name])
        self._made.append(netlab.Namespace(ns).create())
        self._made.append(netlab.VethPair(host.switch_if, f"io{self.tag}{name}h",
                                          peer_ns=ns, peer_rename=host.ifname).create())
        host.run("ip", "addr", "add", f"{host.ip}/24", "dev", host.ifname)
        host.mac = mac_of(host.ifname, ns=ns)
        return host

    def _wire_neighbours(self, direct: bool = False) -> None:
        a, b = self.hosts["a"], self.hosts["b"]
        for src, dst in ((a, b), (b, a)):
            mac = dst.mac if direct else ROUTER_MAC
            src.run("ip", "neigh", "replace", dst.ip, "lladdr", mac, "dev", src.ifname, "nud", "permanent")

    def restore_default_offloads(self) -> None:
        """Turns checksum and segmentation offloads back on, on both ends of
        every veth (netlab turns them off), as a fresh veth has them: the
        switch then receives partial checksums and 64 KB TSO super-frames."""
        for host in self.hosts.values():
            for ifname, ns in ((host.switch_if, None), (host.ifname, host.ns)):
                netlab.sh("ethtool", "-K", ifname, *DEFAULT_OFFLOADS, ns=ns)

    def address_hosts_directly(self) -> None:
        """For a forwarder that rewrites nothing: each host sends to the other's own MAC."""
        self._wire_neighbours(direct=True)

    def close(self) -> None:
        while self._made:
            self._made.pop().delete()
        self.hosts.clear()

    def install_routes(self, sw, dst_macs: dict[str, str] | None = None) -> None:
        """Routes each host's /32 to its port. `dst_macs` may override the MAC
        written into forwarded frames (the benchmark uses one the host ignores)."""
        dst_macs = dst_macs or {}
        for port, name in ((0, "a"), (1, "b")):
            host = self.hosts[name]
            mac = dst_macs.get(name, host.mac)
            sw.table_add("MyIngress.ipv4_lpm", [("lpm", ip_to_bytes(host.ip), 32)],
                         "MyIngress.ipv4_forward",
                         [mac_to_bytes(mac), mac_to_bytes(ROUTER_MAC), port.to_bytes(2, "big")])


def forward_program() -> str:
    """The hand-written p4c-style BMv2 JSON the engine tests and benchmarks use
    (IPv4 LPM forwarding, TTL-1, MAC rewrite, priority = IP precedence, enq_qdepth stamped into the IPv4
    identification field by egress, IPv4 checksum update)."""
    return FORWARD_PROGRAM.read_text()


def red_ecn_program() -> str:
    """p4src/red_ecn.p4 as BMv2 JSON: build/red_ecn.json if `make build` made it,
    else compiled now with softswitch-p4c (raises CalledProcessError if it fails)."""
    import sys
    import tempfile
    root = HERE.parents[1]
    built = root / "build" / "red_ecn.json"
    if built.exists():
        return built.read_text()
    p4c = Path(sys.executable).with_name("softswitch-p4c")
    with tempfile.TemporaryDirectory(prefix="iop4c") as out:
        subprocess.run([str(p4c), str(root / "p4src" / "red_ecn.p4"), "-o", out,
                        "--p4runtime-files", f"{out}/red_ecn.p4info.txtpb"], check=True, capture_output=True)
        return (Path(out) / "red_ecn.json").read_text()


def pin_to_cpu(cpu: int) -> None:
    """Keeps the calling process (and threads it starts later) on one CPU."""
    os.sched_setaffinity(0, {cpu})


# --- traffic tools run inside a namespace: `python iolab.py send|recv ...` ---

# Linux values, for Pythons whose socket module lacks the names.
SO_TIMESTAMPNS = getattr(__import__("socket"), "SO_TIMESTAMPNS", 35)
IP_RECVTTL = getattr(__import__("socket"), "IP_RECVTTL", 12)
SO_RCVBUFFORCE = getattr(__import__("socket"), "SO_RCVBUFFORCE", 33)


HIGH_SEQ = 1000  # first sequence number of the high-precedence datagrams


def udp_send(dst: str, port: int, count: int, size: int, high: int = 0) -> dict:
    """Sends `count` numbered datagrams of `size` payload bytes back to back,
    then `high` more with IP precedence 7 (TOS 0xe0), numbered from HIGH_SEQ."""
    import socket
    import struct
    low_s, high_s = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    high_s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xE0)
    pad = bytes(max(0, size - 4))
    for sock, seqs in ((low_s, range(count)), (high_s, range(HIGH_SEQ, HIGH_SEQ + high))):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        for seq in seqs:
            sock.sendto(struct.pack("!I", seq) + pad, (dst, port))
    return {"sent": count + high}


def udp_recv(port: int, count: int, timeout: float) -> dict:
    """Receives up to `count` datagrams; reports each one's sequence number,
    TTL and kernel arrival time (ns), stopping after `timeout` s of silence."""
    import socket
    import struct
    import sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)  # root: past rmem_max, so bursts fit
    s.setsockopt(socket.IPPROTO_IP, IP_RECVTTL, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    s.settimeout(timeout)
    print("ready", flush=True, file=sys.stderr)
    got = []
    while len(got) < count:
        try:
            data, anc, _, _ = s.recvmsg(65536, 256)
        except TimeoutError:
            break
        item = {"seq": struct.unpack("!I", data[:4])[0], "len": len(data)}
        for level, kind, value in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TTL:
                item["ttl"] = int.from_bytes(value[:4], "little")
            elif level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                item["t_ns"] = sec * 1_000_000_000 + nsec
        got.append(item)
    return {"received": got}


SOL_PACKET, PACKET_STATISTICS, PACKET_OUTGOING = 263, 6, 4
SEQ_OFFSET = 42  # afp_tool's train: the first 4 bytes of the UDP payload (untagged IPv4, no options)


def capture_train(ifname: str, udp_port: int) -> dict:
    """Records, for each frame of afp_tool's train (UDP to `udp_port`) that
    `ifname` receives, its sequence number, length and kernel receive
    timestamp (SO_TIMESTAMPNS, ns). Reads nothing until stdin closes, so it
    takes no CPU while the frames flow: the kernel stamps each frame as it
    arrives and keeps it in a socket buffer sized for the whole train."""
    import socket
    import struct
    import sys
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((ifname, 0))
    print("ready", flush=True, file=sys.stderr)
    sys.stdin.read()
    s.setblocking(False)
    frames = []
    while True:
        try:
            data, anc, _, addr = s.recvmsg(65536, 256)
        except BlockingIOError:
            break
        is_train = (addr[2] != PACKET_OUTGOING and data[12:14] == b"\x08\x00" and data[23] == 17
                    and int.from_bytes(data[36:38], "big") == udp_port)
        stamps = [struct.unpack("qq", v[:16]) for level, kind, v in anc if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
        if is_train and stamps:
            sec, nsec = stamps[0]
            frames.append([int.from_bytes(data[SEQ_OFFSET:SEQ_OFFSET + 4], "big"), sec * 1_000_000_000 + nsec, len(data)])
    _, kernel_drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return {"frames": frames, "kernel_drops": kernel_drops}


def _ready(proc: subprocess.Popen, what: str) -> subprocess.Popen:
    """Waits for a helper process's "ready" line on stderr; kills it and raises if another comes."""
    line = proc.stderr.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"{what} did not start: {line}{proc.stderr.read()}")
    return proc


def start_capture(ifname: str, udp_port: int, ns: str | None = None) -> subprocess.Popen:
    """Starts `capture_train` on `ifname` (inside namespace `ns`, if given) and
    waits until its socket is bound; `finish_capture` ends it."""
    proc = subprocess.Popen(netlab.netns_argv(ns, _python(), __file__, "capture", ifname, str(udp_port)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _ready(proc, "capture")


def finish_capture(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(input="", timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"capture failed: {err}")
    return json.loads(out)


def tcp_payload(nbytes: int) -> bytes:
    import random
    return random.Random(nbytes).randbytes(nbytes)


def tcp_recv(port: int, timeout: float) -> dict:
    """Accepts one TCP connection and reads it to the end; reports length and SHA-256."""
    import hashlib
    import socket
    import sys
    srv = socket.create_server(("0.0.0.0", port))
    srv.settimeout(timeout)
    print("ready", flush=True, file=sys.stderr)
    conn, _ = srv.accept()
    conn.settimeout(timeout)
    digest, total = hashlib.sha256(), 0
    while chunk := conn.recv(1 << 16):
        digest.update(chunk)
        total += len(chunk)
    return {"bytes": total, "sha256": digest.hexdigest()}


def tcp_send(dst: str, port: int, nbytes: int) -> dict:
    import socket
    with socket.create_connection((dst, port), timeout=30) as s:
        s.sendall(tcp_payload(nbytes))
    return {"sent": nbytes}


def start_receiver(host: Host, port: int, count: int, timeout: float, mode: str = "recv") -> subprocess.Popen:
    """Starts `udp_recv` (or `tcp_recv`, mode "tcp-recv") in the host's
    namespace and waits until it is listening."""
    extra = [str(count)] if mode == "recv" else []
    proc = host.popen(_python(), __file__, mode, str(port), *extra, str(timeout),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _ready(proc, "receiver")


def finish_receiver(proc: subprocess.Popen) -> list[dict]:
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"receiver failed: {err}")
    return json.loads(out)


def send_tcp(host: Host, dst: str, port: int, nbytes: int) -> None:
    host.run(_python(), __file__, "tcp-send", dst, str(port), str(nbytes))


def send_udp(host: Host, dst: str, port: int, count: int, size: int, high: int = 0) -> None:
    host.run(_python(), __file__, "send", dst, str(port), str(count), str(size), str(high))


def _python() -> str:
    import sys
    return sys.executable


if __name__ == "__main__":
    import sys
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "send":
        result = udp_send(args[0], int(args[1]), int(args[2]), int(args[3]), int(args[4]))
    elif cmd == "recv":
        result = udp_recv(int(args[0]), int(args[1]), float(args[2]))
    elif cmd == "tcp-recv":
        result = tcp_recv(int(args[0]), float(args[1]))
    elif cmd == "tcp-send":
        result = tcp_send(args[0], int(args[1]), int(args[2]))
    elif cmd == "capture":
        result = capture_train(args[0], int(args[1]))
    else:
        sys.exit(f"usage: {sys.argv[0]} send DST PORT COUNT SIZE HIGH | recv PORT COUNT TIMEOUT"
                 " | tcp-recv PORT TIMEOUT | tcp-send DST PORT NBYTES | capture IFNAME UDP_PORT")
    print(json.dumps(result))
