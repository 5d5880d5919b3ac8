"""Count, per source address, the IPv4 packets an interface receives and
how many carry ECN CE. Run inside the receiver's namespace:

    flowcount.py IFACE OUT.json        # until SIGTERM/SIGINT

Writes {src: {"packets", "tcp_data", "ce", "ect", "not_ect", "payload_bytes"}} and
the kernel's capture drop count, so the demonstration can compare what
receivers saw with the switch's counters.
"""
import json
import signal
import socket
import struct
import sys
from collections import defaultdict

ETH_P_IP = 0x0800
PACKET_HOST = 0
SOL_PACKET = 263
PACKET_STATISTICS = 6
RCVBUF = 8 << 20


def _count(frame: bytes, stats: dict) -> None:
    ihl = (frame[0] & 0x0F) * 4
    total_len, proto, src = struct.unpack_from("!H5xB2x4s", frame, 2)
    ecn = frame[1] & 0x03
    s = stats[socket.inet_ntoa(src)]
    s["packets"] += 1
    s["ce" if ecn == 3 else "not_ect" if ecn == 0 else "ect"] += 1
    if proto == socket.IPPROTO_TCP:
        payload = total_len - ihl - (frame[ihl + 12] >> 4) * 4
        if payload > 0:
            s["tcp_data"] += 1
            s["payload_bytes"] += payload


def main(iface: str, out: str) -> None:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    sock.bind((iface, ETH_P_IP))
    stats = defaultdict(lambda: defaultdict(int))
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sock.settimeout(0.2)
    print("ready", flush=True)
    while running:
        try:
            frame, addr = sock.recvfrom(65535)
        except (socket.timeout, InterruptedError):
            continue
        if addr[2] == PACKET_HOST:
            _count(frame, stats)
    _, capture_drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    with open(out, "w") as f:
        json.dump({"flows": stats, "capture_drops": capture_drops}, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
