"""The P4Runtime gRPC service (official p4.v1 stubs) over a `Device`."""
import collections
import logging
import threading

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .arbitration import Arbitrator, Client
from .errors import (P4RuntimeError, internal, not_found, permission_denied, unimplemented,
                     unknown_role)
from .packetio import encode_packet_out

log = logging.getLogger("softswitch.p4runtime")
API_VERSION = "1.4.1"
_END = object()
Atomicity = p4runtime_pb2.WriteRequest.Atomicity


def _abort(context, error: P4RuntimeError):
    context.abort(error.code, error.message)


# A default gRPC client refuses trailing metadata above 8 KB (some of the time)
# and 16 KB (always); the per-update details travel in a trailer.
DETAILS_BUDGET = 6 * 1024
MESSAGE_CHARS = 160       # per-update message
SUMMARY_FAILURES = 3      # failures quoted in the status message


def write_failure_status(results: list) -> status_pb2.Status:
    """google.rpc.Status for a failed batch: one p4.v1.Error per update, in
    order, as the spec says, while they fit DETAILS_BUDGET. Past half the
    budget, details carry the code without the message; past the budget they
    stop (a prefix, so detail i is still update i) and the message says so.
    The message always counts the failures by code and quotes the first ones."""
    failed = [(i, e) for i, e in enumerate(results) if e is not None]
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=_summary(failed, len(results)))
    size = 0
    for error in results:
        packed = any_pb2.Any()
        packed.Pack(_detail(error, with_message=size < DETAILS_BUDGET // 2))
        size += packed.ByteSize() + 4   # field tag and length
        if size > DETAILS_BUDGET:
            status.message += (f"; per-update details cover updates 0..{len(status.details) - 1} "
                               f"only (gRPC metadata limit)")
            break
        status.details.append(packed)
    return status


def _detail(error, with_message: bool) -> p4runtime_pb2.Error:
    if error is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    detail = p4runtime_pb2.Error(canonical_code=error.canonical_code)
    if with_message:
        detail.message = _cut(error.message, MESSAGE_CHARS)
    return detail


def _summary(failed: list, total: int) -> str:
    counts = collections.Counter(e.code.name for _, e in failed)
    by_code = ", ".join(f"{n} {code}" for code, n in counts.most_common())
    first = "; ".join(f"update {i}: {e.code.name}: {_cut(e.message, MESSAGE_CHARS)}"
                      for i, e in failed[:SUMMARY_FAILURES])
    return f"{len(failed)} of {total} updates failed ({by_code}); {first}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device, arbitrator: Arbitrator, packet_io):
        self.device = device
        self.arbitrator = arbitrator
        self.packet_io = packet_io

    def _check_device(self, device_id):
        if device_id != self.device.device_id:
            raise not_found(f"unknown device id {device_id} (this is device {self.device.device_id})")

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request, context):
        try:
            self.arbitrator.check_primary(request.device_id, request.election_id, request.role)
            self.device.set_pipeline(request.action, request.config)
            self.packet_io.pipeline_changed()
        except P4RuntimeError as e:
            log.info("SetForwardingPipelineConfig refused: %s", e)
            _abort(context, e)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            config = self.device.get_pipeline(request.response_type)
        except P4RuntimeError as e:
            _abort(context, e)
        return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=config)

    def Write(self, request, context):
        try:
            self.arbitrator.check_primary(request.device_id, request.election_id, request.role)
            if request.atomicity != Atomicity.CONTINUE_ON_ERROR:
                raise unimplemented("only CONTINUE_ON_ERROR atomicity is supported")
            self.device.require_pipeline()
        except P4RuntimeError as e:
            _abort(context, e)
        results = [self._write_one(u) for u in request.updates]
        if any(r is not None for r in results):
            status = write_failure_status(results)
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.abort(grpc.StatusCode.UNKNOWN, status.message)
        return p4runtime_pb2.WriteResponse()

    def _write_one(self, update):
        try:
            self.device.write(update)
            return None
        except P4RuntimeError as e:
            log.info("update refused: %s", e)
            return e
        except Exception as e:  # a server bug must not hide the other updates' results
            log.exception("update failed unexpectedly")
            return internal(f"{type(e).__name__}: {e}")

    def Read(self, request, context):
        """Streams bounded replies; stops as soon as the client has gone."""
        try:
            self._check_device(request.device_id)
            if request.role:
                raise unknown_role(request.role)
            for reply in self.device.read(request.entities):
                if not context.is_active():
                    return
                yield reply
        except P4RuntimeError as e:
            _abort(context, e)

    # ---- stream -------------------------------------------------------
    def StreamChannel(self, request_iterator, context):
        client = Client()
        self.arbitrator.add(client)
        context.add_callback(lambda: client.outbox.put(_END))
        reader = threading.Thread(target=self._read_stream, args=(client, request_iterator),
                                  daemon=True, name=f"p4rt-stream-{client.id}")
        reader.start()
        try:
            while True:
                message = client.outbox.get()
                if message is _END:
                    return
                if isinstance(message, P4RuntimeError):
                    _abort(context, message)
                yield message
        finally:
            self.arbitrator.remove(client)

    def _read_stream(self, client, request_iterator):
        try:
            for request in request_iterator:
                self._handle_stream_request(client, request)
        except P4RuntimeError as e:
            client.outbox.put(e)
        except grpc.RpcError:
            pass  # the client went away
        finally:
            client.outbox.put(_END)

    def _handle_stream_request(self, client, request):
        kind = request.WhichOneof("update")
        if kind == "arbitration":
            self.arbitrator.update(client, request.arbitration)
        elif kind == "packet":
            self._packet_out(client, request)
        elif kind == "digest_ack":
            self.packet_io.digest_ack(request.digest_ack)
        else:
            client.send(_stream_error(unimplemented(f"stream message '{kind}' is not supported"), request))

    def _packet_out(self, client, request):
        try:
            if not self.arbitrator.is_primary(client):
                raise permission_denied("only the primary client may send PacketOut")
            frame = encode_packet_out(self.packet_io.packet_out_info(), request.packet)
            self.packet_io.inject(frame)
        except P4RuntimeError as e:
            client.send(_stream_error(e, request))


def _stream_error(error: P4RuntimeError, request) -> p4runtime_pb2.StreamMessageResponse:
    msg = p4runtime_pb2.StreamMessageResponse()
    msg.error.canonical_code = error.canonical_code
    msg.error.message = error.message
    if request.HasField("packet"):
        msg.error.packet_out.packet_out.CopyFrom(request.packet)
    return msg
