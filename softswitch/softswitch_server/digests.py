"""Digest lists (P4Runtime spec section 16): batching, dedup and acks.

Digests polled from the engine are grouped per digest id into DigestLists,
sent when `max_list_size` entries are waiting or the oldest has waited
`max_timeout_ns`. Data already in an unacknowledged list is not sent again
until that list is acked or `ack_timeout_ns` passes.
"""
import threading
from dataclasses import dataclass, field

from p4.v1 import p4data_pb2, p4runtime_pb2

from .bytestrings import canonical


@dataclass
class _Pending:
    first_ns: int
    data: list = field(default_factory=list)


class DigestBatcher:
    def __init__(self):
        self.lock = threading.Lock()
        self.pending = {}      # digest id -> _Pending
        self.outstanding = {}  # (digest id, list id) -> (sent_ns, set of data)
        self.next_list_id = 1
        self.is_struct = {}    # digest id -> whether its P4Data is a struct

    def add(self, digest_id: int, data: tuple, is_struct: bool, config, now_ns: int) -> None:
        with self.lock:
            self.is_struct[digest_id] = is_struct
            self._expire(config, digest_id, now_ns)
            if any(data in sent for (d, _), (_, sent) in self.outstanding.items() if d == digest_id):
                return
            pending = self.pending.setdefault(digest_id, _Pending(now_ns))
            if data not in pending.data:
                pending.data.append(data)

    def _expire(self, config, digest_id, now_ns):
        for key, (sent_ns, _) in list(self.outstanding.items()):
            if key[0] == digest_id and now_ns - sent_ns >= config.ack_timeout_ns:
                del self.outstanding[key]

    def due_lists(self, configs: dict, now_ns: int, timestamp_ns: int) -> list:
        """DigestList messages ready to send now (they become outstanding)."""
        out = []
        with self.lock:
            for digest_id, pending in list(self.pending.items()):
                config = configs.get(digest_id)
                if config is None:
                    del self.pending[digest_id]
                    continue
                out.extend(self._cut(digest_id, pending, config, now_ns, timestamp_ns))
                if not pending.data:
                    del self.pending[digest_id]
        return out

    def _cut(self, digest_id, pending, config, now_ns, timestamp_ns):
        size = config.max_list_size if config.max_list_size > 0 else len(pending.data)
        lists = []
        while len(pending.data) >= size or (pending.data and now_ns - pending.first_ns >= config.max_timeout_ns):
            chunk, pending.data = pending.data[:size], pending.data[size:]
            pending.first_ns = now_ns
            lists.append(self._make_list(digest_id, chunk, config, now_ns, timestamp_ns))
            if not pending.data:
                break
        return lists

    def _make_list(self, digest_id, chunk, config, now_ns, timestamp_ns):
        list_id = self.next_list_id
        self.next_list_id += 1
        if config.ack_timeout_ns > 0:
            self.outstanding[(digest_id, list_id)] = (now_ns, set(chunk))
        msg = p4runtime_pb2.DigestList(digest_id=digest_id, list_id=list_id, timestamp=timestamp_ns)
        for data in chunk:
            msg.data.append(_p4data(data, self.is_struct.get(digest_id, True)))
        return msg

    def ack(self, digest_id: int, list_id: int) -> None:
        with self.lock:
            self.outstanding.pop((digest_id, list_id), None)

    def clear(self) -> None:
        with self.lock:
            self.pending.clear()
            self.outstanding.clear()


def _p4data(fields: tuple, is_struct: bool) -> p4data_pb2.P4Data:
    """A digest as P4Data: a struct of bitstrings, or one bitstring."""
    data = p4data_pb2.P4Data()
    if not is_struct:
        data.bitstring = canonical(int.from_bytes(fields[0], "big"))
        return data
    for value in fields:
        data.struct.members.add(bitstring=canonical(int.from_bytes(value, "big")))
    return data
