"""A small synchronous P4Runtime client (official p4.v1 stubs over grpcio).

Used by the server's tests and benchmark, and handy for scripts: one
StreamChannel for arbitration, PacketIn/Out and digests, plus unary Write,
Read and pipeline RPCs.

    c = P4RTClient("127.0.0.1:9559", election_id=1)
    c.set_pipeline(p4info, open("build/red_ecn.json", "rb").read())
    c.insert(table_entry=entry); c.read(table_entry=p4runtime_pb2.TableEntry())
"""
import queue
import threading

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

Update = p4runtime_pb2.Update
SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest.Action


class P4RTClient:
    """A minimal P4Runtime client: one StreamChannel plus unary RPCs."""

    def __init__(self, address: str, election_id: int = 1, device_id: int = 0, arbitrate=True):
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.requests = queue.Queue()
        self.responses = {kind: queue.Queue() for kind in
                          ("arbitration", "packet", "digest", "error", "other")}
        self.stream = self.stub.StreamChannel(iter(self.requests.get, None))
        self.stream_error = None
        threading.Thread(target=self._receive, daemon=True).start()
        if arbitrate:
            self.arbitrate(election_id)

    def _receive(self):
        try:
            for message in self.stream:
                kind = message.WhichOneof("update")
                self.responses.get(kind, self.responses["other"]).put(getattr(message, kind))
        except grpc.RpcError as e:
            self.stream_error = e
            for q in self.responses.values():
                q.put(None)

    def arbitrate(self, election_id: int, device_id=None):
        self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        req.arbitration.election_id.high = election_id >> 64
        req.arbitration.election_id.low = election_id & (2**64 - 1)
        self.requests.put(req)
        return self.next_message("arbitration")

    def next_message(self, kind: str, timeout: float = 5.0):
        """The next stream message of `kind`; None on timeout or stream end."""
        try:
            return self.responses[kind].get(timeout=timeout)
        except queue.Empty:
            return None

    def send(self, request: p4runtime_pb2.StreamMessageRequest):
        self.requests.put(request)

    def _ids(self, request):
        request.device_id = self.device_id
        request.election_id.high = self.election_id >> 64
        request.election_id.low = self.election_id & (2**64 - 1)
        return request

    def write(self, *updates):
        self.stub.Write(self._ids(p4runtime_pb2.WriteRequest(updates=updates)))

    def insert(self, **entity):
        self.write(Update(type=Update.INSERT, entity=p4runtime_pb2.Entity(**entity)))

    def modify(self, **entity):
        self.write(Update(type=Update.MODIFY, entity=p4runtime_pb2.Entity(**entity)))

    def delete(self, **entity):
        self.write(Update(type=Update.DELETE, entity=p4runtime_pb2.Entity(**entity)))

    def read(self, **entity) -> list:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id,
                                        entities=[p4runtime_pb2.Entity(**entity)])
        return [getattr(e, e.WhichOneof("entity")) for r in self.stub.Read(req) for e in r.entities]

    def set_pipeline(self, p4info=None, device_config=None, action=SetAction.VERIFY_AND_COMMIT,
                     cookie=None):
        req = self._ids(p4runtime_pb2.SetForwardingPipelineConfigRequest(action=action))
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        if device_config is not None:
            req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req)

    def close(self):
        self.requests.put(None)
        self.channel.close()


def write_error_codes(error: grpc.RpcError) -> list:
    """Per-update status code names of a failed Write batch (spec: UNKNOWN +
    one p4.v1.Error per update in grpc-status-details-bin)."""
    details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    if error.code() != grpc.StatusCode.UNKNOWN or details is None:
        raise ValueError(f"not a Write batch failure: {error.code().name} {error.details()}")
    codes = []
    for packed in status_pb2.Status.FromString(details).details:
        e = p4runtime_pb2.Error()
        if not packed.Unpack(e):
            raise ValueError(f"batch detail is not a p4.v1.Error: {packed.type_url}")
        codes.append(_CODE_NAMES[e.canonical_code])
    return codes


_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}
