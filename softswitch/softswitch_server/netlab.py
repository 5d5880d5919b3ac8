"""Network namespaces and veth pairs for labs that put a softswitch between
real Linux hosts: the one place the repository creates, configures and
deletes them (engine benchmarks, server tests, redctl tests, demos, PTF).

    from softswitch_server import netlab

    with netlab.Namespace("xyh1") as host, \\
            netlab.VethPair("xys1", "xyh1-e", peer_ns=host.name, peer_rename="eth0"):
        host.run("ip", "addr", "add", "10.0.0.1/24", "dev", "eth0")
        server = host.popen("iperf3", "-s")

Processes started in a lab are ended with `stop(proc)` before the lab goes.

Every name is chosen by the caller, who gives it a prefix of its own so
concurrent labs never collide; interface names must fit Linux's 15
characters. Both context managers delete what they made on exit, also when
the block raises; a namespace's deletion takes its veths with it.

Each veth end gets what a raw-frame switch needs (see REFERENCE.md): IPv6 off
(no router solicitations or MLD among the test frames), link up, and
checksum/segmentation offloads off, so every frame carries a real checksum and
is at most one MTU long.
"""
from __future__ import annotations

import signal
import subprocess

#: ethtool -K arguments that turn off what a frame-copying switch cannot honour
OFFLOADS_OFF = ("rx", "off", "tx", "off", "tso", "off", "gso", "off", "gro", "off")
IFNAMSIZ = 15  # longest interface name Linux accepts


class CommandError(subprocess.CalledProcessError):
    """A failed command; unlike CalledProcessError its message shows stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}: {(self.stderr or '').strip()}"


def netns_argv(ns: str | None, *cmd: str) -> list[str]:
    """The argv that runs `cmd` inside namespace `ns` (as is if `ns` is None)."""
    return (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]


def sh(*cmd: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Runs a command (inside namespace `ns` if given), capturing its output as
    text; raises CommandError if it fails and `check` is set."""
    done = subprocess.run(netns_argv(ns, *cmd), capture_output=True, text=True)
    if check and done.returncode != 0:
        raise CommandError(done.returncode, done.args, done.stdout, done.stderr)
    return done


def heed_sigint() -> None:
    """Restores SIGINT's default handling if this process was started ignoring
    it, as a shell without job control starts every `cmd &`. Ignored signals
    stay ignored across exec, so each process a lab starts would ignore the
    SIGINT that `stop` ends it with, and every clean stop would turn into a
    10 s wait and a SIGKILL."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def stop(proc: subprocess.Popen, signum: int = signal.SIGINT, timeout_s: float = 10.0) -> None:
    """Ends a process politely: `signum`, then SIGKILL if it has not exited
    within `timeout_s`; nothing if it had exited already."""
    if proc.poll() is not None:
        return
    proc.send_signal(signum)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def disable_offloads(ifname: str, ns: str | None = None) -> None:
    """Turns off checksum and segmentation offloads on one interface."""
    sh("ethtool", "-K", ifname, *OFFLOADS_OFF, ns=ns)


def disable_ipv6(ifname: str, ns: str | None = None) -> None:
    sh("sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1", ns=ns)


def check_ifname(name: str) -> None:
    if not name or len(name) > IFNAMSIZ or "/" in name or any(c.isspace() for c in name):
        raise ValueError(f"bad interface name {name!r}: 1-{IFNAMSIZ} characters, no '/' or spaces")


class Namespace:
    """A network namespace with loopback up and IPv6 off; deleted on exit."""

    def __init__(self, name: str):
        if not name or "/" in name or any(c.isspace() for c in name):
            raise ValueError(f"bad namespace name {name!r}")
        self.name = name

    def create(self) -> "Namespace":
        sh("ip", "netns", "add", self.name)
        try:
            for scope in ("all", "default"):  # "default" covers interfaces moved in later
                self.run("sysctl", "-qw", f"net.ipv6.conf.{scope}.disable_ipv6=1")
            self.run("ip", "link", "set", "lo", "up")
        except BaseException:
            self.delete()
            raise
        return self

    def delete(self) -> None:
        sh("ip", "netns", "del", self.name, check=False)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh(*cmd, ns=self.name, check=check)

    def popen(self, *cmd: str, **kwargs) -> subprocess.Popen:
        """Starts `cmd` in the namespace; kwargs go to subprocess.Popen."""
        return subprocess.Popen(netns_argv(self.name, *cmd), **kwargs)

    def __enter__(self) -> "Namespace":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()


class VethPair:
    """A veth pair made in namespace `ns` (None: the root namespace); the
    `peer` end is moved to `peer_ns` if that differs, and renamed
    `peer_rename` there if given (so every peer may be called e.g. eth0).
    Both ends: IPv6 off, up, offloads off. Deleted on exit."""

    def __init__(self, end: str, peer: str, *, ns: str | None = None,
                 peer_ns: str | None = None, peer_rename: str | None = None):
        for name in (end, peer) + ((peer_rename,) if peer_rename is not None else ()):
            check_ifname(name)
        if peer_rename is not None and peer_ns == ns:
            raise ValueError("peer_rename needs the peer in another namespace")
        self.end, self.ns = end, ns
        self.peer_ns = peer_ns
        self._created_peer = peer
        self.peer = peer_rename or peer

    def create(self) -> "VethPair":
        sh("ip", "link", "add", self.end, "type", "veth", "peer", "name", self._created_peer, ns=self.ns)
        try:
            if self.peer_ns != self.ns:
                sh("ip", "link", "set", self._created_peer, "netns", self.peer_ns or "1",
                   "name", self.peer, ns=self.ns)
            for ifname, ns in ((self.end, self.ns), (self.peer, self.peer_ns)):
                disable_ipv6(ifname, ns=ns)
                sh("ip", "link", "set", ifname, "up", ns=ns)
                disable_offloads(ifname, ns=ns)
        except BaseException:
            self.delete()
            raise
        return self

    def delete(self) -> None:
        """Deletes both ends (gone already if their namespace was deleted)."""
        sh("ip", "link", "del", self.end, ns=self.ns, check=False)

    def __enter__(self) -> "VethPair":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()
