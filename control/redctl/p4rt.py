"""A small P4Runtime 1.x client: one primary session on one device.

Uses the official p4runtime protobufs and grpcio only, so it talks to any
P4Runtime server (softswitch, simple_switch_grpc). Objects are addressed by
their P4Info names; values are Python ints, encoded as canonical bytestrings.
"""
from __future__ import annotations

import queue
import threading
import time

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

CONNECT_TIMEOUT_S = 5.0
MAX_QUEUED_DIGESTS = 100_000        # unread digest lists beyond this are dropped
ARBITRATION_TIMEOUT_S = 5.0
# A failed Write batch reports one error per update in a trailer, and a wildcard
# Read of a large table is long: accept more than grpcio's defaults (8 KB of
# metadata, 4 MB messages).
CHANNEL_OPTIONS = [
    ("grpc.max_metadata_size", 1 << 20),
    ("grpc.absolute_max_metadata_size", 1 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
]
SHOWN_UPDATE_ERRORS = 10   # per-update errors quoted in a P4RuntimeError


class P4RuntimeError(RuntimeError):
    """A P4Runtime request failed; the message names the request and the cause."""


def encode(value: int, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytestring (no leading zero bytes) of an unsigned int."""
    if not 0 <= value < (1 << bitwidth):
        raise ValueError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


class P4InfoIndex:
    """Name -> P4Info object lookups with errors that name what is missing."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.tables = {t.preamble.name: t for t in p4info.tables}
        self.actions = {a.preamble.name: a for a in p4info.actions}
        self.counters = {c.preamble.name: c for c in p4info.counters}
        self.registers = {r.preamble.name: r for r in p4info.registers}
        self.digests = {d.preamble.name: d for d in p4info.digests}
        self.action_names = {a.preamble.id: a.preamble.name for a in p4info.actions}

    @classmethod
    def from_file(cls, path: str) -> "P4InfoIndex":
        p4info = p4info_pb2.P4Info()
        with open(path, encoding="utf-8") as f:
            try:
                text_format.Merge(f.read(), p4info, allow_unknown_field=True)
            except text_format.ParseError as error:
                raise P4RuntimeError(f"{path}: not a P4Info in text format ({error})") from None
        return cls(p4info)

    @staticmethod
    def _get(kind: str, objects: dict, name: str):
        if name not in objects:
            raise P4RuntimeError(f"the pipeline has no {kind} named {name!r}")
        return objects[name]

    def table(self, name):
        return self._get("table", self.tables, name)

    def action(self, name):
        return self._get("action", self.actions, name)

    def counter(self, name):
        return self._get("counter", self.counters, name)

    def register(self, name):
        return self._get("register", self.registers, name)

    def digest(self, name):
        return self._get("digest", self.digests, name)


class Session:
    """Stream channel + arbitration; the newest session becomes primary
    (election id = wall-clock microseconds), older ones regain it when it ends."""

    def __init__(self, address: str, device_id: int = 0, election_id: int | None = None):
        self.address, self.device_id = address, device_id
        self.election_id = election_id or int(time.time() * 1e6)
        self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=CONNECT_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            self.channel.close()
            raise P4RuntimeError(f"no P4Runtime server at {address}") from None
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._outgoing: queue.Queue = queue.Queue()
        self.arbitration: queue.Queue = queue.Queue()
        self.digests: queue.Queue = queue.Queue(MAX_QUEUED_DIGESTS)
        self.digests_dropped = 0
        self._stream = self.stub.StreamChannel(iter(self._outgoing.get, None))
        self._receiver = threading.Thread(target=self._receive, daemon=True)
        self._receiver.start()
        self._become_primary()

    def _receive(self):
        try:
            for msg in self._stream:
                if msg.HasField("arbitration"):
                    self.arbitration.put(msg.arbitration)
                elif msg.HasField("digest"):
                    self._ack_digest(msg.digest.digest_id, msg.digest.list_id)
                    try:
                        self.digests.put_nowait(msg.digest)
                    except queue.Full:
                        self.digests_dropped += 1
        except grpc.RpcError:
            pass                    # closed by us or by the server; close() reports nothing
        finally:
            self.put_end_marker(self.digests)
            self.arbitration.put(None)

    def _become_primary(self):
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = self.election_id >> 64
        req.arbitration.election_id.low = self.election_id & ((1 << 64) - 1)
        self._outgoing.put(req)
        try:
            reply = self.arbitration.get(timeout=ARBITRATION_TIMEOUT_S)
        except queue.Empty:
            reply = None
        if reply is None:
            self.close()
            raise P4RuntimeError(f"{self.address}: no arbitration reply for device {self.device_id}")
        if reply.status.code != code_pb2.OK:
            self.close()
            raise P4RuntimeError(f"{self.address}: not primary for device {self.device_id} "
                                 f"({reply.status.message})")

    def _stamp(self, req):
        req.device_id = self.device_id
        req.election_id.high = self.election_id >> 64
        req.election_id.low = self.election_id & ((1 << 64) - 1)
        return req

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes):
        req = self._stamp(p4runtime_pb2.SetForwardingPipelineConfigRequest())
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        self._call("SetForwardingPipelineConfig", self.stub.SetForwardingPipelineConfig, req)

    def get_p4info(self) -> p4info_pb2.P4Info:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        reply = self._call("GetForwardingPipelineConfig", self.stub.GetForwardingPipelineConfig, req)
        if not reply.config.HasField("p4info"):
            raise P4RuntimeError(f"{self.address}: the switch serves no pipeline: start softswitch "
                                 "with the P4Info (--p4info, or PROG.p4info.txtpb next to "
                                 "PROG.json) or install one with `redctl push`")
        return reply.config.p4info

    def write(self, updates: list[p4runtime_pb2.Update]):
        if not updates:
            return
        req = self._stamp(p4runtime_pb2.WriteRequest())
        req.updates.extend(updates)
        self._call("Write", self.stub.Write, req)

    def read(self, entities: list[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
        try:
            return [e for reply in self.stub.Read(req) for e in reply.entities]
        except grpc.RpcError as e:
            raise P4RuntimeError(f"Read: {e.code().name}: {e.details()}") from None

    @staticmethod
    def put_end_marker(q: queue.Queue):
        """Mark the end of the stream, even in a full queue."""
        while True:
            try:
                q.put_nowait(None)
                return
            except queue.Full:
                q.get_nowait()

    def _ack_digest(self, digest_id: int, list_id: int):
        req = p4runtime_pb2.StreamMessageRequest()
        req.digest_ack.digest_id = digest_id
        req.digest_ack.list_id = list_id
        self._outgoing.put(req)

    def _call(self, name, method, req):
        try:
            return method(req)
        except grpc.RpcError as e:
            raise P4RuntimeError(f"{name}: {e.code().name}: {e.details()}{_write_errors(e)}") from None

    def close(self):
        self._outgoing.put(None)
        self.channel.close()
        self._receiver.join(timeout=2)


def _write_errors(error: grpc.RpcError) -> str:
    """The failed updates that a Write error lists in its google.rpc.Status
    (the first SHOWN_UPDATE_ERRORS, then how many more)."""
    from google.rpc import status_pb2
    for key, value in (error.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            details = []
            for i, any_msg in enumerate(status.details):
                err = p4runtime_pb2.Error()
                if any_msg.Unpack(err) and err.canonical_code != code_pb2.OK:
                    details.append(f"update {i}: {code_pb2.Code.Name(err.canonical_code)} {err.message}".rstrip())
            more = len(details) - SHOWN_UPDATE_ERRORS
            shown = details[:SHOWN_UPDATE_ERRORS] + ([f"{more} more"] if more > 0 else [])
            return ("; " + "; ".join(shown)) if shown else ""
    return ""
