"""Counters, meters, registers, packet replication and digest configuration.

Each class validates a P4Runtime entity against the P4Info, applies it to
the engine in one step, and answers Reads (with the spec's wildcards: id 0 =
every instance, no index = every cell).
"""
import itertools

from p4.v1 import p4runtime_pb2

from . import engine_calls as ec
from .bytestrings import canonical, decode
from .errors import already_exists, invalid, not_found, out_of_range
from .tables import match_key

Update = p4runtime_pb2.Update
# The engine has no "unconfigured" meter call: an unconfigured v1model meter
# marks every packet green, which unlimited rates and bursts reproduce.
UNLIMITED = 2**63 - 1  # MeterConfig fields are int64
RESET_METER = p4runtime_pb2.MeterConfig(cir=UNLIMITED, cburst=UNLIMITED,
                                        pir=UNLIMITED, pburst=UNLIMITED)


def validate_meter_config(c: p4runtime_pb2.MeterConfig) -> None:
    if min(c.cir, c.cburst, c.pir, c.pburst) < 0:
        raise invalid("meter config: rates and bursts must be non-negative")
    if c.cir > c.pir:
        raise invalid(f"meter config: cir {c.cir} exceeds pir {c.pir}")
    if c.eburst:
        raise invalid("meter config: eburst is not supported by v1model meters")


def _require_modify(update_type, what):
    if update_type != Update.MODIFY:
        raise invalid(f"{what} entries exist for every index: only MODIFY is allowed")


def _lookup(table: dict, object_id: int, what: str):
    info = table.get(object_id)
    if info is None:
        raise not_found(f"unknown {what} id {object_id}")
    return info


def _indices(info, entity, what):
    """The cells a request names: one checked index, or all of them."""
    if not entity.HasField("index"):
        return range(info.size)
    index = entity.index.index
    if index < 0:
        raise invalid(f"{what} '{info.name}': negative index {index}")
    if index >= info.size:
        raise out_of_range(f"{what} '{info.name}': index {index} not in 0..{info.size - 1}")
    return [index]


def _targets(table: dict, object_id: int, what: str):
    return [_lookup(table, object_id, what)] if object_id else list(table.values())


def _cells(table: dict, request, object_id: int, what: str) -> list:
    """(info, indices) of every array a read names, all checked up front."""
    return [(info, _indices(info, request, what)) for info in _targets(table, object_id, what)]


class Counters:
    def __init__(self, sw, index):
        self.sw, self.index = sw, index

    def write(self, update_type, entry: p4runtime_pb2.CounterEntry):
        """MODIFY sets one cell, or every cell when the index is omitted; without
        `data` nothing changes (spec, CounterEntry)."""
        info = _lookup(self.index.counters, entry.counter_id, "counter")
        _require_modify(update_type, "counter")
        indices = _indices(info, entry, "counter")
        if not entry.HasField("data"):
            return
        d = entry.data
        for index in indices:
            ec.call(self.sw.counter_write, info.name, index, d.packet_count, d.byte_count)

    def read(self, request: p4runtime_pb2.CounterEntry, add):
        return self._read(_cells(self.index.counters, request, request.counter_id, "counter"), add)

    def _read(self, cells, add):
        for info, indices in cells:
            for i in indices:
                packets, nbytes = ec.call(self.sw.counter_read, info.name, i)
                e = add()
                e.counter_id, e.index.index = info.id, i
                e.data.packet_count, e.data.byte_count = packets, nbytes
                yield


class Meters:
    """Indexed meters; the configs are kept here because the engine only sets them."""

    def __init__(self, sw, index):
        self.sw, self.index = sw, index
        self.configs = {}  # (meter id, index) -> MeterConfig

    def write(self, update_type, entry: p4runtime_pb2.MeterEntry):
        """MODIFY configures one meter, or every meter of the array when the
        index is omitted; no config means the default (spec, MeterEntry)."""
        info = _lookup(self.index.meters, entry.meter_id, "meter")
        _require_modify(update_type, "meter")
        indices = _indices(info, entry, "meter")
        config = entry.config if entry.HasField("config") else RESET_METER
        validate_meter_config(config)
        for index in indices:
            ec.call(self.sw.meter_set, info.name, index, config.cir, config.cburst,
                    config.pir, config.pburst)
            if entry.HasField("config"):
                self.configs[(info.id, index)] = p4runtime_pb2.MeterConfig()
                self.configs[(info.id, index)].CopyFrom(config)
            else:
                self.configs.pop((info.id, index), None)

    def read(self, request: p4runtime_pb2.MeterEntry, add):
        return self._read(_cells(self.index.meters, request, request.meter_id, "meter"), add)

    def _read(self, cells, add):
        for info, indices in cells:
            for i in indices:
                e = add()
                e.meter_id, e.index.index = info.id, i
                if (info.id, i) in self.configs:
                    e.config.CopyFrom(self.configs[(info.id, i)])
                yield


class Registers:
    def __init__(self, sw, index):
        self.sw, self.index = sw, index

    def write(self, update_type, entry: p4runtime_pb2.RegisterEntry):
        info = _lookup(self.index.registers, entry.register_id, "register")
        _require_modify(update_type, "register")
        if not entry.HasField("index"):
            raise invalid(f"register '{info.name}': writes need an index")
        [index] = _indices(info, entry, "register")
        kind = "bool" if info.boolean else "bitstring"
        if entry.data.WhichOneof("data") != kind:
            raise invalid(f"register '{info.name}': data must be a {kind}")
        value = int(entry.data.bool) if info.boolean else \
            decode(entry.data.bitstring, info.bitwidth, f"register '{info.name}'")
        ec.call(self.sw.register_write, info.name, index, value)

    def read(self, request: p4runtime_pb2.RegisterEntry, add):
        cells = _cells(self.index.registers, request, request.register_id, "register")
        return self._read(cells, add)

    def _read(self, cells, add):
        for info, indices in cells:
            for i in indices:
                value = ec.as_int(ec.call(self.sw.register_read, info.name, i))
                e = add()
                e.register_id, e.index.index = info.id, i
                if info.boolean:
                    e.data.bool = bool(value)
                else:
                    e.data.bitstring = canonical(value)
                yield


class DirectResources:
    """Direct counters and direct meters, addressed through their table entry."""

    def __init__(self, sw, index, tables):
        self.sw, self.index, self.tables = sw, index, tables

    def write_counter(self, update_type, entry: p4runtime_pb2.DirectCounterEntry):
        _require_modify(update_type, "direct counter")
        table, _, stored = self._entry(entry.table_entry, "direct_counter_id", "direct counter")
        d = entry.data
        ec.call(self.sw.direct_counter_write, table.name, stored.handle,
                d.packet_count, d.byte_count)

    def read_counters(self, request: p4runtime_pb2.DirectCounterEntry, add):
        return self._read_counters(self._selection(request.table_entry, "direct_counter_id"), add)

    def _read_counters(self, selection, add):
        for table, key, stored in self._entries(selection):
            e = add()
            self.tables.fill_entry(e.table_entry, table, key, stored, False)
            self.tables.fill_counter_data(e.data, table, stored)
            yield

    def write_meter(self, update_type, entry: p4runtime_pb2.DirectMeterEntry):
        _require_modify(update_type, "direct meter")
        table, _, stored = self._entry(entry.table_entry, "direct_meter_id", "direct meter")
        config = entry.config if entry.HasField("config") else RESET_METER
        validate_meter_config(config)
        ec.call(self.sw.direct_meter_set, table.name, stored.handle,
                config.cir, config.cburst, config.pir, config.pburst)
        if entry.HasField("config"):
            stored.meter_config = p4runtime_pb2.MeterConfig()
            stored.meter_config.CopyFrom(config)
        else:
            stored.meter_config = None

    def read_meters(self, request: p4runtime_pb2.DirectMeterEntry, add):
        return self._read_meters(self._selection(request.table_entry, "direct_meter_id"), add)

    def _read_meters(self, selection, add):
        for table, key, stored in self._entries(selection):
            e = add()
            self.tables.fill_entry(e.table_entry, table, key, stored, False)
            if stored.meter_config is not None:
                e.config.CopyFrom(stored.meter_config)
            yield

    def _entry(self, table_entry, slot, what):
        table = self.index.table(table_entry.table_id)
        if not getattr(table, slot):
            raise invalid(f"table '{table.name}' has no {what}")
        return self.tables.find(table_entry)

    def _selection(self, table_entry, slot):
        """(tables, key or None) a direct resource read names, checked up front."""
        if table_entry.table_id:
            tables = [self.index.table(table_entry.table_id)]
        else:
            tables = [t for t in self.index.tables.values() if getattr(t, slot)]
        for table in tables:
            if not getattr(table, slot):
                raise invalid(f"table '{table.name}' has no such direct resource")
        key = match_key(tables[0], table_entry) if len(table_entry.match) else None
        return tables, key

    def _entries(self, selection):
        tables, key = selection
        for table in tables:
            entries = self.tables.entries[table.id]
            items = ([(key, entries[key])] if key in entries else []) if key is not None \
                else list(entries.items())
            for k, stored in items:
                if entries.get(k) is stored:  # not deleted between two pieces of the read
                    yield table, k, stored


class ReplicationEngine:
    """Multicast groups and clone sessions (PacketReplicationEngineEntry)."""

    def __init__(self, sw):
        self.sw = sw
        self.groups = {}    # id -> MulticastGroupEntry
        self.sessions = {}  # id -> CloneSessionEntry

    def write(self, update_type, entry: p4runtime_pb2.PacketReplicationEngineEntry):
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            self._write_group(update_type, entry.multicast_group_entry)
        elif kind == "clone_session_entry":
            self._write_session(update_type, entry.clone_session_entry)
        else:
            raise invalid("PacketReplicationEngineEntry names neither a group nor a session")

    def _write_group(self, update_type, g):
        gid = g.multicast_group_id
        if gid == 0:
            raise invalid("multicast group id 0 is reserved")
        _check_presence(update_type, gid in self.groups, f"multicast group {gid}")
        if update_type == Update.DELETE:
            ec.call(self.sw.mc_group_delete, gid)
            del self.groups[gid]
            return
        ec.call(self.sw.mc_group_set, gid, _replicas(g.replicas, f"multicast group {gid}"))
        self.groups[gid] = _canonical_replicas(g)

    def _write_session(self, update_type, s):
        sid = s.session_id
        if sid == 0:
            raise invalid("clone session id 0 is reserved")
        if s.packet_length_bytes < 0:
            raise invalid(f"clone session {sid}: negative packet_length_bytes")
        _check_presence(update_type, sid in self.sessions, f"clone session {sid}")
        if update_type == Update.DELETE:
            ec.call(self.sw.clone_session_delete, sid)
            del self.sessions[sid]
            return
        ec.call(self.sw.clone_session_set, sid, _replicas(s.replicas, f"clone session {sid}"),
                truncate=s.packet_length_bytes)
        self.sessions[sid] = _canonical_replicas(s)

    def read(self, request: p4runtime_pb2.PacketReplicationEngineEntry, add):
        kind = request.WhichOneof("type")
        if kind is None:   # no type given: everything
            return itertools.chain(self.read(_pre_wildcard("multicast_group_entry"), add),
                                   self.read(_pre_wildcard("clone_session_entry"), add))
        if kind == "multicast_group_entry":
            wanted, have = request.multicast_group_entry.multicast_group_id, self.groups
        else:
            wanted, have = request.clone_session_entry.session_id, self.sessions
        return _copy_out([m for i, m in have.items() if wanted in (0, i)], kind, add)


def _copy_out(messages, kind, add):
    for message in messages:
        getattr(add(), kind).CopyFrom(message)
        yield


def _pre_wildcard(kind):
    e = p4runtime_pb2.PacketReplicationEngineEntry()
    getattr(e, kind).SetInParent()
    return e


def _check_presence(update_type, present, what):
    if update_type == Update.INSERT and present:
        raise already_exists(f"{what} already exists")
    if update_type in (Update.MODIFY, Update.DELETE) and not present:
        raise not_found(f"{what} does not exist")
    if update_type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid("update type must be INSERT, MODIFY or DELETE")


def _replicas(replicas, what):
    out = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            port = decode(r.port, 32, f"{what} replica port")
        else:
            port = r.egress_port
        if (port, r.instance) in out:
            raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
        if r.instance >> 16:
            raise invalid(f"{what}: replica instance {r.instance} does not fit 16 bits")
        out.append((port, r.instance))
    return out


def _canonical_replicas(message):
    """A copy whose byte-string replica ports are canonical (read-write symmetry)."""
    copy = _copy(message)
    for r in copy.replicas:
        if r.WhichOneof("port_kind") == "port":
            r.port = canonical(int.from_bytes(r.port, "big"))
    return copy


def _copy(message):
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


class DigestConfigs:
    def __init__(self, index):
        self.index = index
        self.configs = {}  # digest id -> DigestEntry.Config

    def write(self, update_type, entry: p4runtime_pb2.DigestEntry):
        info = _lookup(self.index.digests, entry.digest_id, "digest")
        _check_presence(update_type, info.id in self.configs, f"digest '{info.name}' config")
        if update_type == Update.DELETE:
            del self.configs[info.id]
            return
        c = entry.config
        if c.max_timeout_ns < 0 or c.max_list_size < 0 or c.ack_timeout_ns < 0:
            raise invalid(f"digest '{info.name}': negative config value")
        self.configs[info.id] = _copy(c)

    def read(self, request: p4runtime_pb2.DigestEntry, add):
        if request.digest_id:
            _lookup(self.index.digests, request.digest_id, "digest")
        wanted = [(i, c) for i, c in self.configs.items() if request.digest_id in (0, i)]
        return self._read(wanted, add)

    @staticmethod
    def _read(wanted, add):
        for digest_id, config in wanted:
            e = add()
            e.digest_id = digest_id
            e.config.CopyFrom(config)
            yield

