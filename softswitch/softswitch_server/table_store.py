"""Table entries of the running pipeline: P4Runtime semantics over the engine.

The store keeps, per table, the canonical key of every entry with its engine
handle, so duplicate/missing checks and Read replies never depend on the
engine's internal representation. Each update is validated completely before
the engine is touched, and undone if its second engine step fails.
"""
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from . import engine_calls as ec
import grpc

from .errors import (already_exists, invalid, not_found, permission_denied,
                     P4RuntimeError)
from .externs import validate_meter_config
from .p4info_index import P4InfoIndex, TableInfo
from .tables import (ActionSpec, MatchKey, action_spec, engine_args, engine_keys,
                     fill_action, fill_match, match_key)

Update = p4runtime_pb2.Update


@dataclass
class StoredEntry:
    handle: int
    action: ActionSpec
    controller_metadata: int
    metadata: bytes
    meter_config: object  # p4runtime_pb2.MeterConfig or None


class TableStore:
    def __init__(self, sw, index: P4InfoIndex, profiles):
        self.sw = sw
        self.index = index
        self.profiles = profiles   # ActionProfiles: what entries of indirect tables run
        self.entries = {tid: {} for tid in index.tables}
        self.defaults = {tid: self._engine_default(t) for tid, t in index.tables.items()}
        self.initial_defaults = dict(self.defaults)

    def _engine_default(self, table: TableInfo):
        default = ec.call(self.sw.table_get_default, table.name)
        if default is None:
            return None
        action_name, args = default
        action = self.index.action_by_name.get(action_name)
        if action is None:
            return None
        return ActionSpec(action.id, tuple(ec.as_int(a) for a in args))

    # ---- writes -------------------------------------------------------
    def write(self, update_type: int, entry: p4runtime_pb2.TableEntry) -> None:
        table = self.index.table(entry.table_id)
        if entry.is_default_action:
            return self._write_default(update_type, table, entry)
        if table.is_const:
            raise permission_denied(f"table '{table.name}' is const")
        key = match_key(table, entry)
        if update_type == Update.INSERT:
            self._insert(table, key, entry)
        elif update_type == Update.MODIFY:
            self._modify(table, key, entry)
        elif update_type == Update.DELETE:
            self._delete(table, key)
        else:
            raise invalid("update type must be INSERT, MODIFY or DELETE")

    def _check_extras(self, table, entry):
        if entry.HasField("meter_config"):
            if not table.direct_meter_id:
                raise invalid(f"table '{table.name}' has no direct meter")
            validate_meter_config(entry.meter_config)
        if entry.HasField("counter_data") and not table.direct_counter_id:
            raise invalid(f"table '{table.name}' has no direct counter")
        if entry.idle_timeout_ns:
            raise invalid(f"table '{table.name}' does not support idle timeout")

    def _entry_action(self, table, entry):
        """An ActionSpec, or for an indirect table a member, group or action set."""
        if table.is_indirect:
            return self.profiles.entry_target(table, entry.action)
        return action_spec(self.index, table, entry.action, default=False)

    def _engine_action(self, table, action) -> tuple:
        """(engine action, args); installs an action set's members and group."""
        if table.is_indirect:
            return self.profiles.acquire(table, action), []
        return self.index.actions[action.action_id].name, engine_args(self.index, action)

    def _release(self, table, action) -> None:
        if table.is_indirect:
            self.profiles.release(table, action)

    def _insert(self, table, key, entry):
        spec = self._entry_action(table, entry)
        self._check_extras(table, entry)
        entries = self.entries[table.id]
        if key in entries:
            raise already_exists(f"table '{table.name}': entry already exists")
        if table.size and len(entries) >= table.size:
            raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                 f"table '{table.name}' is full ({table.size} entries)")
        engine_action, args = self._engine_action(table, spec)
        try:
            handle = ec.call(self.sw.table_add, table.name, engine_keys(table, key),
                             engine_action, args, priority=key.priority)
        except P4RuntimeError:
            self._release(table, spec)
            raise
        try:
            self._apply_extras(table, handle, entry)
        except P4RuntimeError:
            ec.call(self.sw.table_delete, table.name, handle)
            self._release(table, spec)
            raise
        entries[key] = StoredEntry(handle, spec, entry.controller_metadata, entry.metadata,
                                   _meter_or_none(entry))

    def _apply_extras(self, table, handle, entry):
        if entry.HasField("counter_data"):
            ec.call(self.sw.direct_counter_write, table.name, handle,
                    entry.counter_data.packet_count, entry.counter_data.byte_count)
        if entry.HasField("meter_config"):
            c = entry.meter_config
            ec.call(self.sw.direct_meter_set, table.name, handle, c.cir, c.cburst, c.pir, c.pburst)

    def _modify(self, table, key, entry):
        # spec §9.1.2: a MODIFY without action keeps the entry's action
        spec = self._entry_action(table, entry) if entry.HasField("action") else None
        self._check_extras(table, entry)
        stored = self._lookup(table, key)
        if spec is not None:
            self._change_action(table, stored, spec)
        self._apply_extras(table, stored.handle, entry)
        stored.controller_metadata = entry.controller_metadata
        stored.metadata = entry.metadata
        if entry.HasField("meter_config"):
            stored.meter_config = _meter_or_none(entry)

    def _change_action(self, table, stored, spec):
        engine_action, args = self._engine_action(table, spec)
        try:
            ec.call(self.sw.table_modify, table.name, stored.handle, engine_action, args)
        except P4RuntimeError:
            self._release(table, spec)
            raise
        self._release(table, stored.action)
        stored.action = spec

    def _delete(self, table, key):
        stored = self._lookup(table, key)
        ec.call(self.sw.table_delete, table.name, stored.handle)
        del self.entries[table.id][key]
        self._release(table, stored.action)

    def _lookup(self, table, key) -> StoredEntry:
        stored = self.entries[table.id].get(key)
        if stored is None:
            raise not_found(f"table '{table.name}': no such entry")
        return stored

    def _write_default(self, update_type, table, entry):
        if update_type != Update.MODIFY:
            raise invalid(f"table '{table.name}': the default entry can only be modified")
        if len(entry.match) or entry.priority:
            raise invalid(f"table '{table.name}': default entry must have no match and no priority")
        if table.const_default_action_id:
            raise permission_denied(f"table '{table.name}' has a const default action")
        if table.is_indirect:   # spec §9.1.3: an indirect table's default is a constant NoAction
            raise permission_denied(f"table '{table.name}' is indirect: its default entry is constant")
        if entry.HasField("action"):
            spec = action_spec(self.index, table, entry.action, default=True)
        else:
            spec = self.initial_defaults[table.id]
        if spec is None:
            raise invalid(f"table '{table.name}': no default action to restore")
        ec.call(self.sw.table_set_default, table.name,
                self.index.actions[spec.action_id].name, engine_args(self.index, spec))
        self.defaults[table.id] = spec

    # ---- reads --------------------------------------------------------
    # A reader validates the request at once, then returns an iterator that
    # fills one entity per step: `add()` returns a new empty TableEntry already
    # inside the reply. The caller steps it under the device lock, a bounded
    # number of steps at a time, so a large Read is sent in pieces.
    def read(self, request: p4runtime_pb2.TableEntry, add):
        tables = [self.index.table(request.table_id)] if request.table_id else \
            list(self.index.tables.values())
        if request.table_id == 0 and len(request.match):
            raise invalid("a wildcard table read cannot filter on match fields")
        key = match_key(tables[0], request) if len(request.match) else None
        return self._read_tables(tables, request, key, add)

    def _read_tables(self, tables, request, key, add):
        for table in tables:
            if request.is_default_action:
                if self._read_default(table, add):
                    yield
            else:
                yield from self._read_entries(table, request, key, add)

    def _read_default(self, table, add) -> bool:
        spec = self.defaults[table.id]
        if spec is None:
            return False
        entry = add()
        entry.table_id, entry.is_default_action = table.id, True
        fill_action(self.index, spec, entry)
        return True

    def _read_entries(self, table, request, key, add):
        entries = self.entries[table.id]
        if key is not None:
            items = [(key, entries[key])] if key in entries else []
        else:
            items = list(entries.items())
        want_counters = request.HasField("counter_data") and table.direct_counter_id
        for k, stored in items:
            if entries.get(k) is not stored:
                continue  # deleted between two pieces of this read
            self.fill_entry(add(), table, k, stored, want_counters)
            yield

    def fill_entry(self, entry, table: TableInfo, key: MatchKey, stored: StoredEntry, counters):
        entry.table_id = table.id
        entry.controller_metadata, entry.metadata = stored.controller_metadata, stored.metadata
        fill_match(table, key, entry)
        if table.is_indirect:
            self.profiles.fill_target(stored.action, entry.action)
        else:
            fill_action(self.index, stored.action, entry)
        if stored.meter_config is not None:
            entry.meter_config.CopyFrom(stored.meter_config)
        if counters:
            self.fill_counter_data(entry.counter_data, table, stored)

    def fill_counter_data(self, data, table, stored) -> None:
        data.packet_count, data.byte_count = ec.call(
            self.sw.direct_counter_read, table.name, stored.handle)

    def find(self, entry: p4runtime_pb2.TableEntry):
        """(table, key, stored) for the entry a direct resource request names."""
        table = self.index.table(entry.table_id)
        key = match_key(table, entry)
        return table, key, self._lookup(table, key)

    def replay_protos(self) -> list:
        """Every entry and non-initial default, as TableEntry messages (for reconcile)."""
        out = []
        add = lambda: out.append(p4runtime_pb2.TableEntry()) or out[-1]  # noqa: E731
        for tid, entries in self.entries.items():
            table = self.index.tables[tid]
            for key, stored in entries.items():
                self.fill_entry(add(), table, key, stored, False)
            if self.defaults[tid] != self.initial_defaults[tid]:
                self._read_default(table, add)
        return out


def _meter_or_none(entry):
    if not entry.HasField("meter_config"):
        return None
    config = p4runtime_pb2.MeterConfig()
    config.CopyFrom(entry.meter_config)
    return config
