"""Assembles the P4Runtime server: engine switch, device, arbitration, pumps.

Two daemon threads move data from the engine to the primary client: PacketIn
frames from the CPU port and digests (batched per the DigestEntry config).
Both block inside the engine with the GIL released.
"""
import logging
import threading
import time
from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from . import engine_calls as ec
from .arbitration import Arbitrator
from .device import Device
from .digests import DigestBatcher
from .errors import P4RuntimeError, failed_precondition
from .liveness import LivenessMonitor, PortLiveness
from .packetio import decode_packet_in
from .service import P4RuntimeService

log = logging.getLogger("softswitch.server")
POLL_S = 0.05
MAX_STREAMS = 32


class PacketIO:
    """PacketIn/PacketOut and digest delivery between engine and primary client."""

    def __init__(self, sw, device: Device, arbitrator: Arbitrator):
        self.sw, self.device, self.arbitrator = sw, device, arbitrator
        self.batcher = DigestBatcher()
        self.running = threading.Event()
        self.threads = []

    def packet_out_info(self):
        return self._metadata("packet_out")

    def _metadata(self, name):
        with self.device.lock:
            if self.device.active is None:
                raise failed_precondition("no forwarding pipeline config has been set")
            return self.device.active.index.packet_metadata.get(name)

    def inject(self, frame: bytes) -> None:
        ec.call(self.sw.packet_out, frame)

    def pipeline_changed(self) -> None:
        self.batcher.clear()

    def digest_ack(self, ack) -> None:
        self.batcher.ack(ack.digest_id, ack.list_id)

    def start(self) -> None:
        self.running.set()
        for target in (self._pump_packet_in, self._pump_digests):
            t = threading.Thread(target=target, daemon=True, name=target.__name__)
            t.start()
            self.threads.append(t)

    def stop(self) -> None:
        self.running.clear()
        for t in self.threads:
            t.join(timeout=2)

    def _send_to_primary(self, message) -> None:
        primary = self.arbitrator.primary_client()
        if primary is not None:
            primary.send(message)

    def _pump_packet_in(self):
        while self.running.is_set():
            try:
                frame = self.sw.poll_packet_in(POLL_S)
            except RuntimeError:
                time.sleep(POLL_S)
                continue
            if frame is None:
                continue
            try:
                packet = decode_packet_in(self._metadata("packet_in"), bytes(frame))
            except P4RuntimeError as e:
                log.warning("dropping a CPU-port frame: %s", e)
                continue
            self._send_to_primary(p4runtime_pb2.StreamMessageResponse(packet=packet))

    def _pump_digests(self):
        while self.running.is_set():
            try:
                digest = self.sw.poll_digest(POLL_S)
            except RuntimeError:
                digest = None
                time.sleep(POLL_S)
            if digest is not None:
                self._queue_digest(*digest)
            self._flush_digests()

    def _queue_digest(self, name, fields):
        with self.device.lock:
            state, active = self.device.state, self.device.active
            if state is None:
                return
            info = next((d for d in active.index.digests.values() if d.name == name), None)
            config = state.digests.configs.get(info.id) if info else None
        if config is not None:
            self.batcher.add(info.id, tuple(bytes(f) for f in fields), info.is_struct,
                             config, time.monotonic_ns())

    def _flush_digests(self):
        with self.device.lock:
            configs = dict(self.device.state.digests.configs) if self.device.state else {}
        for msg in self.batcher.due_lists(configs, time.monotonic_ns(), time.time_ns()):
            self._send_to_primary(p4runtime_pb2.StreamMessageResponse(digest=msg))


class SoftswitchServer:
    """The P4Runtime server for one engine `Switch` (call start(), then stop()).
    `interfaces` ({port: interface name}, the Switch's ports) are watched for
    action selector watch ports."""

    def __init__(self, sw, address: str = "127.0.0.1:9559", device_id: int = 0,
                 interfaces: dict = None):
        self.sw = sw
        liveness = PortLiveness(interfaces or {})
        self.device = Device(sw, device_id, port_up=liveness.is_up)
        self.liveness = LivenessMonitor(liveness, self.device.ports_changed)
        self.arbitrator = Arbitrator(device_id)
        self.packet_io = PacketIO(sw, self.device, self.arbitrator)
        # gRPC sets SO_REUSEPORT by default: a second switch on the same
        # address would also listen and take a random half of the clients.
        self.grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_STREAMS + 8),
                                maximum_concurrent_rpcs=MAX_STREAMS * 2,
                                options=[("grpc.so_reuseport", 0)])
        service = P4RuntimeService(self.device, self.arbitrator, self.packet_io)
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, self.grpc)
        try:
            self.port = self.grpc.add_insecure_port(address)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen on {address}: the address is in use (another "
                          "switch?) or not local")
        self.address = address

    def start(self) -> None:
        self.packet_io.start()
        self.liveness.start()
        self.grpc.start()
        log.info("P4Runtime server listening on %s (device id %d)", self.address,
                 self.device.device_id)

    def stop(self, grace_s: float = 1.0) -> None:
        self.grpc.stop(grace_s).wait()
        self.packet_io.stop()
        self.liveness.stop()
