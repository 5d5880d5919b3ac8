"""Port liveness for action selector watch ports (spec §9.2.2).

A port is up while its interface is administratively up and has carrier
(IFF_UP and IFF_RUNNING, as `ip link` shows UP and LOWER_UP): a veth whose peer
goes down, or a cable pulled, takes it down. Ports without an interface (the
CPU port) are always up. The server polls the switch's interfaces and tells
the device which ports changed, so groups drop and regain their members.
"""
import fcntl
import socket
import struct
import threading

SIOCGIFFLAGS = 0x8913
IFF_UP, IFF_RUNNING = 0x1, 0x40
POLL_S = 0.1


def interface_up(ifname: str) -> bool:
    """IFF_UP and IFF_RUNNING of `ifname` (False if it does not exist)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            request = struct.pack("16sH14x", ifname.encode()[:15], 0)
            flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request))[1]
        except OSError:
            return False
    return flags & (IFF_UP | IFF_RUNNING) == IFF_UP | IFF_RUNNING


class PortLiveness:
    """Up/down of the switch's ports; `poll()` returns the ports that changed."""

    def __init__(self, interfaces: dict):
        self.interfaces = dict(interfaces)   # port -> interface name
        self.state = {port: interface_up(name) for port, name in self.interfaces.items()}

    def is_up(self, port: int) -> bool:
        return self.state.get(port, True)

    def poll(self) -> set:
        changed = set()
        for port, name in self.interfaces.items():
            up = interface_up(name)
            if up != self.state[port]:
                self.state[port] = up
                changed.add(port)
        return changed


class LivenessMonitor:
    """A daemon thread that polls `liveness` and calls `on_change(ports)`."""

    def __init__(self, liveness: PortLiveness, on_change):
        self.liveness, self.on_change = liveness, on_change
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="port-liveness")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)

    def _run(self):
        while not self.stopping.wait(POLL_S):
            changed = self.liveness.poll()
            if changed:
                self.on_change(changed)
