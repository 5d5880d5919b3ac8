"""Shared base for the aqmlab PTF tests: P4Runtime set-up, packets, bursts.

Port map (run_ptf.py wires it): 0 = sender, 1 = fast egress, 2 = bottleneck
egress (rate-limited, deep buffer: bursts build known queue depths),
3 = second fast egress for unrelated traffic and LPM checks.
"""
import atexit
import logging
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ptf
from ptf.base_tests import BaseTest
from ptf.testutils import simple_udp_packet, test_param_get
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from redctl import Controller, PortSpec, compiler

SENDER, FAST, BOTTLENECK, OTHER = 0, 1, 2, 3
HOST_MAC = "00:00:00:00:00:aa"
ROUTER_MAC = "00:00:00:00:00:01"

# A burst sent too slowly (host busy) is retried this many times.
SEND_ATTEMPTS = 20

# How long a burst's frames may lag behind the line-rate schedule.
COLLECT_GRACE_S = 3.0

# ECN codepoints (RFC 3168)
NOT_ECT, ECT1, ECT0, CE = 0b00, 0b01, 0b10, 0b11


@dataclass(frozen=True)
class Route:
    prefix: str
    port: int
    dst_mac: str
    src_mac: str


ROUTES = (
    Route("10.0.1.0/24", FAST, "00:00:00:00:01:01", "00:00:00:00:00:11"),
    Route("10.0.1.128/25", OTHER, "00:00:00:00:03:02", "00:00:00:00:00:13"),
    Route("10.0.2.0/24", BOTTLENECK, "00:00:00:00:02:01", "00:00:00:00:00:12"),
    Route("10.0.3.0/24", OTHER, "00:00:00:00:03:01", "00:00:00:00:00:13"),
    Route("10.0.0.0/16", OTHER, "00:00:00:00:03:03", "00:00:00:00:00:13"),
)
# One destination per egress port, matched by exactly one /24 route.
DST = {FAST: "10.0.1.5", BOTTLENECK: "10.0.2.5", OTHER: "10.0.3.5"}


def param(name):
    value = test_param_get(name)
    if value is None:
        raise RuntimeError(f"test parameter {name!r} missing: run through run_ptf.py")
    return value


def frame_bytes():
    return int(param("frame_bytes"))


def arch():
    """"v1model" (p4src/red_ecn.p4) or "tna" (hw/tofino/red_ecn.p4, the TNA profile)."""
    return param("arch")


def red_model():
    """Keyword arguments telling redstats which program's RED to predict: the
    architecture and the bottleneck's PortSpec (the TNA program's thresholds are
    in cells of its mean packet)."""
    return {"arch": arch(), "spec": port_specs()[BOTTLENECK]}


def tx_time_s(length=None):
    """Serialisation time of a frame on the bottleneck port.  BMv2 limits
    queues in packets per second, so there every frame takes the time of
    a suite-sized one."""
    if param("target") == "bmv2" or length is None:
        length = frame_bytes()
    return length * 8 / int(param("bottleneck_bps"))


_controller = None


def port_specs():
    """What the controller must know of the traffic manager: the buffers
    (maxth is checked against them) and, for the bottleneck, the typical
    frame time used by the idle decay: 1000 bytes, 20 ms at 400 kbit/s."""
    bottleneck = PortSpec(buffer_packets=int(param("bottleneck_buffer")),
                          rate_bps=int(param("bottleneck_bps")),
                          mean_packet_bytes=int(param("bottleneck_mean_bytes")))
    return {SENDER: PortSpec(), FAST: PortSpec(), BOTTLENECK: bottleneck, OTHER: PortSpec()}


def controller():
    """One primary P4Runtime connection for the whole PTF run."""
    global _controller
    if _controller is None:
        _controller = Controller(param("grpc"), device_id=0, ports=port_specs())
        atexit.register(_controller.close)
    return _controller


def route_for(port):
    return next(r for r in ROUTES if r.port == port and r.prefix.endswith("/24"))


def udp(dst_ip, ecn=ECT0, seq=0, ttl=64, length=None, dscp=0, src_ip="10.0.0.1"):
    """A suite frame as the sender emits it (IPv4 id carries ``seq``)."""
    return simple_udp_packet(pktlen=length or frame_bytes(), eth_dst=ROUTER_MAC,
                             eth_src=HOST_MAC, ip_src=src_ip, ip_dst=dst_ip,
                             ip_tos=dscp << 2 | ecn, ip_id=seq, ip_ttl=ttl)


def forwarded(pkt, route, ecn=None):
    """What ``pkt`` must look like after the switch: new MACs, TTL-1,
    ECN ``ecn`` if given, and a correct checksum (recomputed by Scapy)."""
    out = pkt.copy()
    out[Ether].src, out[Ether].dst = route.src_mac, route.dst_mac
    out[IP].ttl -= 1
    if ecn is not None:
        out[IP].tos = (out[IP].tos & ~0b11) | ecn
    del out[IP].chksum
    return Ether(bytes(out))


class AqmTest(BaseTest):
    """Fresh pipeline, the suite's routes, RED off on every port."""

    def setUp(self):
        super().setUp()
        self.dataplane = ptf.dataplane_instance
        self.ctl = controller()
        self.push_pipeline(param("json"))
        self.dataplane.flush()

    def push_pipeline(self, json_path, p4info_path=None):
        self.ctl.push_pipeline(p4info_path or param("p4info"), json_path)
        hook = param("after_push")
        if hook:
            done = subprocess.run(hook, shell=True, capture_output=True, text=True)
            output = (done.stdout + done.stderr).strip()
            if done.returncode != 0 or "Error" in output:
                raise AssertionError(f"after-push command failed: {hook}\n{output}")
        for route in ROUTES:
            self.ctl.add_route(route.prefix, port=route.port,
                               dst_mac=route.dst_mac, src_mac=route.src_mac)

    def fresh_red(self, cfg, port=BOTTLENECK):
        """A new pipeline (every RED average 0, routes in place) with ``cfg`` on ``port``."""
        self.push_pipeline(param("json"))
        self.ctl.set_red(port, cfg)

    # --- packet I/O -------------------------------------------------------

    def send_frames(self, port, frames):
        """Send pre-built frames back to back; returns the wall-clock window
        (time.time() before and after) of the first frame's send call, and the
        seconds the whole burst took.

        Straight on the PTF port's raw socket: DataPlane.send formats a log
        line and takes the lock the receive thread holds, which spreads a
        burst over milliseconds.  A send on a veth stamps the frame for the
        switch's socket inside the call, so the window brackets the time the
        built-in target gives the first frame."""
        raw = [bytes(f) for f in frames]
        sock = self.dataplane.ports[(0, port)].socket
        start = time.monotonic()
        before = time.time()
        sock.send(raw[0])
        first_sent = (before, time.time())
        for frame in raw[1:]:
            sock.send(frame)
        return first_sent, time.monotonic() - start

    def receive_all(self, port, quiet_s=0.25, timeout_s=30.0):
        """Every frame that arrives on ``port`` until it stays quiet."""
        frames = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            got = self.dataplane.poll(device_number=0, port_number=port, timeout=quiet_s)
            if not isinstance(got, self.dataplane.PollSuccess):
                return frames
            frames.append(bytes(got.packet))
        raise AssertionError(f"port {port} still busy after {timeout_s} s")

    def burst(self, length, ecn=ECT0, frame_len=None, port=BOTTLENECK, max_send_s=None,
              counters=False, expect=None, quiet_s=None, reset=None):
        """Send ``length`` frames back to back into the idle queue of
        ``port``, so frame i sees i - 1 frames queued (redstats.burst_depths),
        and collect what comes out.

        A burst only counts if the sender put all frames on the wire within
        0.8 transmission times (frame i must be queued before frame 1 starts
        serialising); a slower one (the test host was busy) is drained and
        sent again, so depths are known without looking inside the switch.  ``max_send_s`` relaxes that for tests that account for
        the send time themselves (``Burst.took``).  With ``counters`` the
        burst carries the change of the port's counters over its accepted
        attempt (``Burst.counted``).  ``expect``: how many frames a correct
        switch lets through; collection waits for them (a busy host can
        delay the switch far beyond the line-rate schedule), then for
        ``quiet_s`` of silence (default: 4 frame times, at least 50 ms).
        ``reset``: called before a resend to restore the state the burst
        assumes (a rejected attempt leaves its mark on a slow average).
        """
        tx = tx_time_s(frame_len)
        max_send_s = 0.8 * tx if max_send_s is None else max_send_s
        sent = [udp(DST[port], ecn=ecn, seq=i, length=frame_len) for i in range(length)]
        for attempt in range(SEND_ATTEMPTS):
            if attempt and reset:
                reset()
            before = self.ctl.port_counters(port) if counters else None
            first_sent, took = self.send_frames(SENDER, sent)
            frames = self.collect_burst(port, deadline=time.monotonic() + length * tx + 0.02,
                                        quiet_s=quiet_s or max(0.05, 4 * tx), expect=expect)
            if took < max_send_s:
                burst = Burst(sent, frames, port, first_sent, took)
                if counters:
                    after = self.ctl.port_counters(port)
                    burst.counted = {k: after[k] - before[k] for k in after}
                return burst
            logging.info("burst of %d resent: sending took %.2f ms", length, took * 1e3)
        raise AssertionError(f"could not send {length} frames within {max_send_s * 1e3:.1f} ms "
                             "(test host too busy)")

    def collect_burst(self, port, deadline, quiet_s, expect=None):
        """(frame, arrival time.time()) pairs until ``expect`` frames came
        (or, without ``expect``, the deadline passed; with it, at most
        COLLECT_GRACE_S after the deadline) and the port then stayed quiet
        for ``quiet_s``."""
        frames = []
        while True:
            if expect is None:
                until = deadline
            elif len(frames) < expect:
                until = deadline + COLLECT_GRACE_S
            else:
                until = 0.0
            wait = max(quiet_s, until - time.monotonic())
            got = self.dataplane.poll(device_number=0, port_number=port, timeout=wait)
            if not isinstance(got, self.dataplane.PollSuccess):
                return frames
            frames.append((bytes(got.packet), got.time))

    def assert_quiet(self, ports=(SENDER, FAST, BOTTLENECK, OTHER), quiet_s=0.2):
        time.sleep(quiet_s)
        for port in ports:
            stray = self.receive_all(port, quiet_s=0.01)
            self.assertEqual(stray, [], f"unexpected frames on port {port}")


class Burst:
    """Frames sent in one burst and what arrived, by sequence number."""

    def __init__(self, sent, frames, port, first_sent, took):
        self.sent, self.port, self.first_sent, self.took = sent, port, first_sent, took
        self.last_arrival = max((t for _f, t in frames), default=None)
        self.arrived = {}
        for frame, _t in frames:
            seq = seq_of(frame)
            assert seq < len(sent) and seq not in self.arrived, \
                f"unexpected or duplicate frame (IPv4 id {seq}) on port {port}"
            self.arrived[seq] = frame

    def missing(self):
        return [i for i in range(len(self.sent)) if i not in self.arrived]

    def with_ecn(self, codepoint):
        return [i for i, f in sorted(self.arrived.items()) if ecn_of(f) == codepoint]

    def changed(self):
        """Positions that arrived with another ECN field than they were sent with."""
        return [i for i, f in sorted(self.arrived.items())
                if ecn_of(f) != self.sent[i][IP].tos & 0b11]

    def assert_intact(self, test, route):
        """Every arrived frame is its sent frame, forwarded, with its ECN as seen."""
        for i, frame in self.arrived.items():
            expect = forwarded(self.sent[i], route, ecn=ecn_of(frame))
            test.assertEqual(frame, bytes(expect), f"frame {i} altered beyond ECN/TTL/MACs")


def ecn_of(frame):
    return Ether(frame)[IP].tos & 0b11


def seq_of(frame):
    return Ether(frame)[IP].id


def compile_program(source, out_dir):
    """Compile a variant of the suite's program; returns (p4info path, json
    path).  v1model: the configured compiler ($P4C: softswitch-p4c, p4c-bm2-ss
    or p4c; redctl.compiler), every compiler's artifact pair runs on every
    target.  TNA: softswitch-p4c --arch tna (the built-in target's back-end)."""
    if arch() == "v1model":
        return compiler.compile_program(source, out_dir)
    p4info, json_path = Path(out_dir) / "red_ecn.p4info.txtpb", Path(out_dir) / "red_ecn.json"
    done = subprocess.run([str(Path(sys.executable).parent / "softswitch-p4c"), "--arch", "tna",
                           str(source), "-o", str(out_dir), "--p4runtime-files", str(p4info)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"softswitch-p4c --arch tna {source}: {done.stderr.strip()}")
    return str(p4info), str(json_path)
