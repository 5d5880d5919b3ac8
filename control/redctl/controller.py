"""Controller: the Python API of control/README.md ("Contract") over P4Runtime."""
from __future__ import annotations

import collections
import ipaddress
import queue
import time
from dataclasses import dataclass
from typing import Iterator

import grpc
from p4.v1 import p4runtime_pb2

from . import names
from .convert import (AVG_ONE, PortSpec, RedConfig, RedConstants, TnaConstants,
                      TnaRange, from_constants, from_tna_constants, tna_cells, to_constants,
                      to_tna_constants)
from .labconfig import parse_mac
from .p4rt import P4InfoIndex, P4RuntimeError, Session, decode, encode

MAX_PORT = 510                      # 9-bit ports; 511 is v1model's drop port
DECISIONS = ("pass", "mark", "early_drop", "forced_drop")
DIGEST_CONFIG = {"max_timeout_ns": 0, "max_list_size": 1, "ack_timeout_ns": 10_000_000}


@dataclass(frozen=True)
class Sample:
    """One telemetry digest: the latest packet dequeued on `port`."""
    time_us: int
    port: int
    qdepth: int
    avg: float                      # packets
    decision: str                   # one of DECISIONS


class Controller:
    """Primary P4Runtime client for one red_ecn.p4 switch.

    ports: {port: PortSpec} — the ports that exist, with their buffer and
    rate (P4Runtime cannot report them). None accepts ports 0..510 with the
    target's default 64-packet buffer.
    """

    def __init__(self, address: str = "127.0.0.1:9559", device_id: int = 0,
                 ports: dict[int, PortSpec] | None = None, election_id: int | None = None):
        self.session = Session(address, device_id, election_id)
        self.ports = dict(ports) if ports is not None else None
        self._index: P4InfoIndex | None = None
        self._digest_enabled = False
        self._pending: collections.deque[Sample] = collections.deque()
        # port -> the red_idle_decay entries this session last wrote or read; lets
        # set_red skip re-reading ~2000 entries when only maxp/thresholds change
        # (Adaptive RED every 0.5 s). Assumes no other client rewrites them.
        self._decay_known: dict[int, dict[int, int]] = {}

    # -- pipeline and forwarding --------------------------------------------
    def push_pipeline(self, p4info_path: str, json_path: str) -> None:
        """SetForwardingPipelineConfig with the P4Info + BMv2 JSON pair."""
        index = P4InfoIndex.from_file(p4info_path)
        with open(json_path, "rb") as f:
            device_config = f.read()
        self.session.set_pipeline(index.p4info, device_config)
        self._index, self._digest_enabled = index, False
        self._decay_known = {}

    @property
    def index(self) -> P4InfoIndex:
        if self._index is None:
            self._index = P4InfoIndex(self.session.get_p4info())
        return self._index

    def add_route(self, prefix: str, port: int, dst_mac: str, src_mac: str) -> None:
        """LPM route: packets to prefix leave on port with these MACs."""
        self._check_port(port)
        net = ipaddress.IPv4Network(prefix, strict=True)
        entry = self._table_entry(
            names.IPV4_LPM, [(names.IPV4_LPM_KEY, "lpm", int(net.network_address), net.prefixlen)],
            names.IPV4_FORWARD, {"dstAddr": parse_mac(dst_mac), "srcAddr": parse_mac(src_mac), "port": port})
        self.session.write([_update(p4runtime_pb2.Update.INSERT, entry)])

    # -- RED ------------------------------------------------------------------
    def port_spec(self, port: int) -> PortSpec:
        self._check_port(port)
        return self.ports[port] if self.ports is not None else PortSpec()

    @property
    def is_tna(self) -> bool:
        """The pipeline is hw/tofino/red_ecn.p4 (TNA profile of p4src/README.md)."""
        return names.TNA_RED_PB in self.index.tables

    def set_red(self, port: int, cfg: RedConfig) -> RedConstants | TnaConstants:
        """Validate cfg (ValueError, nothing written) and install it on port."""
        if self.is_tna:
            return self._set_red_tna(port, cfg)
        constants = to_constants(cfg, self.port_spec(port))
        config = self._read_table(names.RED_CONFIG, port)
        updates = [_update(p4runtime_pb2.Update.MODIFY if config else p4runtime_pb2.Update.INSERT,
                           self._red_config_entry(port, constants))]
        if self._decay_known.get(port) != constants.decay_factors:
            updates += self._decay_updates(port, self._read_decay(port), constants.decay_factors)
        self.session.write(updates)
        self._decay_known[port] = dict(constants.decay_factors)
        return constants

    def _set_red_tna(self, port: int, cfg: RedConfig, target: str = "tofino") -> TnaConstants:
        """set_red(mode, ecn), the port's red_pb ranges (replaced) and the Lpf time constant."""
        c = to_tna_constants(cfg, self.port_spec(port), target)
        U = p4runtime_pb2.Update
        config = self._table_entry(names.RED_CONFIG, [(names.TNA_RED_CONFIG_KEY, "exact", port)],
                                   names.SET_RED, c.action_params())
        old = self._read_table(names.TNA_RED_PB, port)
        if old:
            self.session.write([_update(U.DELETE, e) for e in old])
        updates = [_update(U.MODIFY if self._read_table(names.RED_CONFIG, port) else U.INSERT, config)]
        updates += [_update(U.INSERT, self._pb_entry(port, r)) for r in c.ranges]
        updates.append(_update(U.MODIFY, self._register_entry(names.TNA_LPF, port, c.lpf_tau_ns)))
        self.session.write(updates)
        return c

    def _get_red_tna(self, port: int, target: str = "tofino") -> RedConfig | None:
        config = self._read_table(names.RED_CONFIG, port)
        if not config:
            return None
        params = self._action_params(config[0].table_entry.action.action)
        ranges = []
        for e in self._read_table(names.TNA_RED_PB, port):
            te = e.table_entry
            avg = te.match[1].range
            action = self.index.action_names[te.action.action.action_id].split(".")[-1]
            ranges.append(TnaRange(decode(avg.low), decode(avg.high), action,
                                   self._action_params(te.action.action).get("pb", 0)))
        spec = self.port_spec(port)
        installed = TnaConstants(mode=params["mode"], ecn=params["ecn"],
                                 cells_per_packet=tna_cells(spec.mean_packet_bytes, target),
                                 ranges=tuple(sorted(ranges, key=lambda r: r.lo)),
                                 lpf_tau_ns=self._read_register(names.TNA_LPF, port))
        try:
            return from_tna_constants(installed, spec, target)
        except ValueError as e:
            raise P4RuntimeError(f"port {port}: {e}") from None

    def _read_register(self, name: str, index: int) -> int:
        req = self._register_entry(name, index, 0)
        req.register_entry.ClearField("data")
        return decode(next(iter(self.session.read([req]))).register_entry.data.bitstring)

    def _pb_entry(self, port: int, r) -> p4runtime_pb2.Entity:
        keys = [(names.TNA_RED_PB_KEYS[0], "exact", port), (names.TNA_RED_PB_KEYS[1], "range", r.lo, r.hi)]
        action = names.TNA_SET_PB if r.action == "set_pb" else names.TNA_RED_FORCED
        entity = self._table_entry(names.TNA_RED_PB, keys, action,
                                   {"pb": r.pb} if r.action == "set_pb" else {})
        entity.table_entry.priority = 1          # ranges never overlap
        return entity

    def _register_entry(self, name: str, index: int, value: int) -> p4runtime_pb2.Entity:
        reg = self.index.register(name)
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = reg.preamble.id
        entity.register_entry.index.index = index
        entity.register_entry.data.bitstring = encode(value, reg.type_spec.bitstring.bit.bitwidth)
        return entity

    def get_red(self, port: int) -> RedConfig | None:
        """Installed parameters; None if the port has no entry (drop-tail, avg = q)."""
        if self.is_tna:
            return self._get_red_tna(port)
        constants = self.get_red_constants(port)
        return from_constants(constants) if constants else None

    def get_red_constants(self, port: int) -> RedConstants | None:
        entries = self._read_red_entries(port)
        if entries.config is None:
            return None
        params = self._action_params(entries.config.action.action)
        return RedConstants(**params, decay_factors=entries.decay)

    def red_ports(self) -> list[int]:
        """Ports that have a red_config entry."""
        key_id = self._match_field_id(names.RED_CONFIG, names.RED_CONFIG_KEY)
        req = p4runtime_pb2.Entity()
        req.table_entry.table_id = self.index.table(names.RED_CONFIG).preamble.id
        return sorted(decode(m.exact.value) for e in self.session.read([req])
                      for m in e.table_entry.match if m.field_id == key_id)

    def port_counters(self, port: int) -> dict[str, int]:
        """Packets/bytes transmitted and RED's marks and drops on port (one Read)."""
        self._check_port(port)
        ids = {self.index.counter(name).preamble.id: key for key, name in names.COUNTERS.items()}
        requests = []
        for counter_id in ids:
            req = p4runtime_pb2.Entity()
            req.counter_entry.counter_id = counter_id
            req.counter_entry.index.index = port
            requests.append(req)
        data = {ids[e.counter_entry.counter_id]: e.counter_entry.data for e in self.session.read(requests)
                if e.counter_entry.index.index == port}
        if set(data) != set(ids.values()):
            raise P4RuntimeError(f"counters of port {port}: the switch returned {sorted(data)}")
        out = {"packets": data["packets"].packet_count, "bytes": data["packets"].byte_count}
        out.update({key: data[key].packet_count for key in names.COUNTERS if key != "packets"})
        return out

    # -- telemetry ---------------------------------------------------------------
    def set_sampling(self, port: int, period: int) -> None:
        """One telemetry sample every `period` packets to port; 0 turns it off.
        Samples are queued for poll_sample()/telemetry() from now on."""
        self._check_port(port)
        if not 0 <= period < 1 << 32:
            raise ValueError(f"sampling period must be in [0, 2^32), got {period}")
        self._enable_digest()
        existing = self._read_table(names.SAMPLING, port)
        if period == 0:
            if existing:
                self.session.write([_update(p4runtime_pb2.Update.DELETE, existing[0])])
            return
        entry = self._table_entry(names.SAMPLING, [(names.SAMPLING_KEY, "exact", port)],
                                  names.SET_SAMPLING, {"period": period})
        kind = p4runtime_pb2.Update.MODIFY if existing else p4runtime_pb2.Update.INSERT
        self.session.write([_update(kind, entry)])

    def get_sampling(self, port: int) -> int:
        """Installed sampling period of port (0: off)."""
        self._check_port(port)
        entries = self._read_table(names.SAMPLING, port)
        return self._action_params(entries[0].table_entry.action.action)["period"] if entries else 0

    def telemetry(self, timeout: float | None = None) -> Iterator[Sample]:
        """Samples as they arrive; stops after `timeout` seconds without one
        (None: never) or when the connection closes."""
        while (sample := self.poll_sample(timeout)) is not None:
            yield sample

    def poll_sample(self, timeout: float | None = None) -> Sample | None:
        """The next telemetry sample, or None after `timeout` seconds
        (None: wait forever) or when the connection has closed."""
        self._enable_digest()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                msg = self.session.digests.get(timeout=wait)
            except queue.Empty:
                return None
            if msg is None:
                self.session.put_end_marker(self.session.digests)   # keep reporting the closed stream
                return None
            if msg.digest_id == self.index.digest(names.TELEMETRY_DIGEST).preamble.id:
                self._pending.extend(_sample(data) for data in msg.data)
        return self._pending.popleft()

    def close(self) -> None:
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- helpers -----------------------------------------------------------------
    def _check_port(self, port: int) -> None:
        if not isinstance(port, int) or not 0 <= port <= MAX_PORT:
            raise ValueError(f"port must be an integer in [0, {MAX_PORT}], got {port!r}")
        if self.ports is not None and port not in self.ports:
            raise ValueError(f"unknown port {port}: the switch has ports {sorted(self.ports)}")

    def _enable_digest(self):
        if self._digest_enabled:
            return
        entry = p4runtime_pb2.Entity()
        entry.digest_entry.digest_id = self.index.digest(names.TELEMETRY_DIGEST).preamble.id
        for key, value in DIGEST_CONFIG.items():
            setattr(entry.digest_entry.config, key, value)
        try:
            self.session.write([_update(p4runtime_pb2.Update.INSERT, entry)])
        except P4RuntimeError as e:
            if "ALREADY_EXISTS" not in str(e):
                raise
        self._digest_enabled = True

    def _table_entry(self, table: str, keys: list[tuple], action: str,
                     params: dict[str, int]) -> p4runtime_pb2.Entity:
        t = self.index.table(table)
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        te.table_id = t.preamble.id
        fields = {mf.name: mf for mf in t.match_fields}
        for name, kind, value, *rest in keys:
            mf = fields[name]
            m = te.match.add(field_id=mf.id)
            if kind == "lpm":
                m.lpm.value, m.lpm.prefix_len = encode(value, mf.bitwidth), rest[0]
            elif kind == "range":
                m.range.low, m.range.high = encode(value, mf.bitwidth), encode(rest[0], mf.bitwidth)
            else:
                m.exact.value = encode(value, mf.bitwidth)
        a = self.index.action(action)
        te.action.action.action_id = a.preamble.id
        widths = {p.name: p for p in a.params}
        for name, value in params.items():
            te.action.action.params.add(param_id=widths[name].id,
                                        value=encode(value, widths[name].bitwidth))
        return entity

    def _red_config_entry(self, port: int, c: RedConstants) -> p4runtime_pb2.Entity:
        return self._table_entry(names.RED_CONFIG, [(names.RED_CONFIG_KEY, "exact", port)],
                                 names.SET_RED, c.action_params())

    def _decay_entry(self, port: int, bucket: int, factor: int) -> p4runtime_pb2.Entity:
        keys = [(names.RED_DECAY_KEYS[0], "exact", port), (names.RED_DECAY_KEYS[1], "exact", bucket)]
        return self._table_entry(names.RED_DECAY, keys, names.SET_DECAY_FACTOR, {"factor": factor})

    def _decay_updates(self, port: int, old: dict[int, int], new: dict[int, int]):
        """MODIFY/INSERT/DELETE per bucket, so no key is touched twice in a batch."""
        U = p4runtime_pb2.Update
        ups = [_update(U.MODIFY if b in old else U.INSERT, self._decay_entry(port, b, s))
               for b, s in sorted(new.items()) if old.get(b) != s]
        ups += [_update(U.DELETE, self._decay_entry(port, b, old[b]))
                for b in sorted(old) if b not in new]
        return ups

    def _read_red_entries(self, port: int) -> "_RedEntries":
        config = self._read_table(names.RED_CONFIG, port)
        return _RedEntries(config[0].table_entry if config else None, self._read_decay(port))

    def _read_decay(self, port: int) -> dict[int, int]:
        """{bucket: factor} installed for port (and remembered)."""
        bucket_id = self._match_field_id(names.RED_DECAY, names.RED_DECAY_KEYS[1])
        decay = {}
        for e in self._read_table(names.RED_DECAY, port):
            match = {m.field_id: m for m in e.table_entry.match}
            decay[decode(match[bucket_id].exact.value)] = \
                self._action_params(e.table_entry.action.action)["factor"]
        self._decay_known[port] = dict(decay)
        return decay

    def _match_field_id(self, table: str, field: str) -> int:
        for mf in self.index.table(table).match_fields:
            if mf.name == field:
                return mf.id
        raise P4RuntimeError(f"table {table} has no key {field!r}")

    def _read_table(self, table: str, port: int) -> list[p4runtime_pb2.Entity]:
        """Entries of `table` whose first key (the port) equals port; filtered
        here because not every server filters reads by match."""
        req = p4runtime_pb2.Entity()
        req.table_entry.table_id = self.index.table(table).preamble.id
        first_key = self.index.table(table).match_fields[0].id
        out = []
        for e in self.session.read([req]):
            keys = {m.field_id: m for m in e.table_entry.match}
            if first_key in keys and decode(keys[first_key].exact.value) == port:
                out.append(e)
        return out

    def _action_params(self, action: p4runtime_pb2.Action) -> dict[str, int]:
        a = self.index.actions[self.index.action_names[action.action_id]]
        ids = {p.id: p.name for p in a.params}
        return {ids[p.param_id]: decode(p.value) for p in action.params}


@dataclass
class _RedEntries:
    config: p4runtime_pb2.TableEntry | None
    decay: dict[int, int]


def _update(kind, entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=kind, entity=entity)


def _sample(data: p4runtime_pb2.P4Data) -> Sample:
    time_us, port, qdepth, avg, decision = (decode(m.bitstring) for m in data.struct.members)
    label = DECISIONS[decision] if decision < len(DECISIONS) else f"unknown({decision})"
    return Sample(time_us, port, qdepth, avg / AVG_ONE, label)


def wait_for_server(address: str, timeout_s: float = 10.0) -> None:
    """Block until a P4Runtime server accepts connections (used by tests and the lab)."""
    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        raise P4RuntimeError(f"no P4Runtime server at {address} after {timeout_s} s") from None
    finally:
        channel.close()
