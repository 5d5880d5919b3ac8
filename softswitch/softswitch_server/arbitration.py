"""Client arbitration (P4Runtime spec section 5): who is primary.

Each StreamChannel is a `Client`. The connected client with the highest
election id is the primary; only it may write, set the pipeline and send
packets, and only it receives PacketIn and digests. Whenever the primary
changes every client is told; a client that joins without changing the
primary is answered alone.
"""
import itertools
import queue
import threading

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .errors import invalid, not_found, permission_denied, unknown_role

_ids = itertools.count(1)


def election_int(uint128) -> int:
    return (uint128.high << 64) | uint128.low


class Client:
    """One StreamChannel: its election id and the queue of messages to send it."""

    def __init__(self):
        self.id = next(_ids)
        self.election_id = None  # int once arbitrated
        self.outbox = queue.Queue()

    def send(self, message: p4runtime_pb2.StreamMessageResponse) -> None:
        self.outbox.put(message)


class Arbitrator:
    def __init__(self, device_id: int):
        self.device_id = device_id
        self.lock = threading.Lock()
        self.clients = []
        self.highest_seen = None

    def _primary(self):
        arbitrated = [c for c in self.clients if c.election_id is not None]
        return max(arbitrated, key=lambda c: c.election_id, default=None)

    def primary_election_id(self):
        with self.lock:
            p = self._primary()
            return None if p is None else p.election_id

    def add(self, client: Client) -> None:
        with self.lock:
            self.clients.append(client)

    def update(self, client: Client, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a MasterArbitrationUpdate; raise P4RuntimeError to end the stream."""
        if update.device_id != self.device_id:
            raise not_found(f"unknown device id {update.device_id} (this is device {self.device_id})")
        if update.HasField("role") and (update.role.name or update.role.id):
            raise unknown_role(update.role.name or str(update.role.id))
        election_id = election_int(update.election_id)
        with self.lock:
            if any(c is not client and c.election_id == election_id for c in self.clients):
                raise invalid(f"election id {election_id} is already used by another client")
            before = self._primary()
            client.election_id = election_id
            self.highest_seen = max(election_id, self.highest_seen or 0)
            after = self._primary()
            targets = self.clients if after is not before else [client]
            self._notify(targets, after)

    def remove(self, client: Client) -> None:
        with self.lock:
            if client not in self.clients:
                return
            before = self._primary()
            self.clients.remove(client)
            after = self._primary()
            if after is not before:
                self._notify(self.clients, after)

    def _notify(self, targets, primary):
        for c in targets:
            if c.election_id is not None:
                c.send(self._status_message(c, primary))

    def _status_message(self, client, primary):
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        ref = primary.election_id if primary is not None else self.highest_seen
        arb.election_id.high, arb.election_id.low = ref >> 64, ref & (2**64 - 1)
        if client is primary:
            arb.status.code, arb.status.message = code_pb2.OK, "primary"
        elif primary is None:
            arb.status.code, arb.status.message = code_pb2.NOT_FOUND, "no primary"
        else:
            arb.status.code, arb.status.message = code_pb2.ALREADY_EXISTS, "backup"
        return msg

    def check_primary(self, device_id: int, election_id, role: str = "") -> None:
        """Raise unless a request with these ids comes from the primary."""
        if device_id != self.device_id:
            raise not_found(f"unknown device id {device_id} (this is device {self.device_id})")
        if role:
            raise unknown_role(role)
        primary = self.primary_election_id()
        if primary is None or election_int(election_id) != primary:
            raise permission_denied(
                f"election id {election_int(election_id)} is not the primary's ({primary})")

    def is_primary(self, client: Client) -> bool:
        with self.lock:
            return client is self._primary()

    def primary_client(self):
        with self.lock:
            return self._primary()
