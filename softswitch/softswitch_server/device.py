"""The device behind the P4Runtime service: pipeline configs and entity state.

All state changes go through `Device` under one lock, so a Write batch, a
pipeline change and a Read never interleave mid-update.
"""
import itertools
import threading
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import engine_calls as ec
from .errors import P4RuntimeError, aborted, failed_precondition, invalid, unimplemented
from .action_profiles import ActionProfiles
from .externs import (Counters, DigestConfigs, DirectResources, Meters, Registers,
                      ReplicationEngine)
from .p4info_index import P4InfoIndex
from .pipeline import check_consistent, parse_device_config
from .table_store import TableStore
from .tables import action_call, action_spec, match_key

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest.Action
ResponseType = p4runtime_pb2.GetForwardingPipelineConfigRequest.ResponseType
Update = p4runtime_pb2.Update
READ_MAX_ENTITIES = 256   # ~1 MB of pure-Python protobuf objects per reply
READ_MAX_BYTES = 1 << 20   # gRPC clients accept 4 MB messages by default


@dataclass
class PipelineConfig:
    """A verified (P4Info, BMv2 JSON, cookie) triple."""
    config: p4runtime_pb2.ForwardingPipelineConfig
    index: P4InfoIndex
    json_text: str


class EntityState:
    """Everything the controller wrote for one committed pipeline."""

    def __init__(self, sw, index: P4InfoIndex, port_up):
        self.profiles = ActionProfiles(sw, index, port_up)
        self.tables = TableStore(sw, index, self.profiles)
        self.counters = Counters(sw, index)
        self.meters = Meters(sw, index)
        self.registers = Registers(sw, index)
        self.direct = DirectResources(sw, index, self.tables)
        self.pre = ReplicationEngine(sw)
        self.digests = DigestConfigs(index)

    def writers(self):
        return {
            "table_entry": self.tables.write,
            "action_profile_member": self.profiles.write_member,
            "action_profile_group": self.profiles.write_group,
            "counter_entry": self.counters.write,
            "direct_counter_entry": self.direct.write_counter,
            "meter_entry": self.meters.write,
            "direct_meter_entry": self.direct.write_meter,
            "register_entry": self.registers.write,
            "packet_replication_engine_entry": self.pre.write,
            "digest_entry": self.digests.write,
        }

    def readers(self):
        return {
            "table_entry": self.tables.read,
            "action_profile_member": self.profiles.read_members,
            "action_profile_group": self.profiles.read_groups,
            "counter_entry": self.counters.read,
            "direct_counter_entry": self.direct.read_counters,
            "meter_entry": self.meters.read,
            "direct_meter_entry": self.direct.read_meters,
            "register_entry": self.registers.read,
            "packet_replication_engine_entry": self.pre.read,
            "digest_entry": self.digests.read,
        }


class Device:
    def __init__(self, sw, device_id: int = 0, port_up=lambda port: True):
        self.sw = sw
        self.device_id = device_id
        self.port_up = port_up   # liveness of watch ports (liveness.PortLiveness.is_up)
        self.lock = threading.RLock()
        self.active = None   # PipelineConfig
        self.saved = None    # PipelineConfig from VERIFY_AND_SAVE
        self.state = None    # EntityState of the active pipeline

    # ---- pipeline -----------------------------------------------------
    def verify(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineConfig:
        if not config.HasField("p4info"):
            raise invalid("ForwardingPipelineConfig has no p4info")
        index = P4InfoIndex(config.p4info)
        doc = parse_device_config(config.p4_device_config)
        check_consistent(index, doc)
        json_text = config.p4_device_config.decode("utf-8")
        ec.call(self.sw.verify_pipeline, json_text)
        kept = p4runtime_pb2.ForwardingPipelineConfig()
        kept.CopyFrom(config)
        return PipelineConfig(kept, index, json_text)

    def set_pipeline(self, action: int, config) -> None:
        with self.lock:
            if action == SetAction.VERIFY:
                self.verify(config)
            elif action == SetAction.VERIFY_AND_SAVE:
                self.saved = self.verify(config)
            elif action == SetAction.VERIFY_AND_COMMIT:
                self._commit(self.verify(config), replay=[])
            elif action == SetAction.COMMIT:
                if self.saved is None:
                    raise failed_precondition("COMMIT without a config saved by VERIFY_AND_SAVE")
                self._commit(self.saved, replay=[])
            elif action == SetAction.RECONCILE_AND_COMMIT:
                self._reconcile(self.verify(config))
            else:
                raise invalid(f"unknown SetForwardingPipelineConfig action {action}")

    def load_json(self, json_text: str, p4info: p4info_pb2.P4Info) -> None:
        """Start with a pipeline given on the command line (JSON + P4Info)."""
        config = p4runtime_pb2.ForwardingPipelineConfig(
            p4info=p4info, p4_device_config=json_text.encode())
        self.set_pipeline(SetAction.VERIFY_AND_COMMIT, config)

    def _commit(self, pipeline: PipelineConfig, replay: list) -> None:
        ec.call(self.sw.load_pipeline, pipeline.json_text)
        self.active, self.saved = pipeline, None
        self.state = EntityState(self.sw, pipeline.index, self.port_up)
        for update_type, entity in replay:
            self._apply(update_type, entity)

    def _reconcile(self, pipeline: PipelineConfig) -> None:
        """Commit `pipeline` keeping table entries (with direct meter configs),
        default actions, multicast groups, clone sessions and digest configs.
        Counters, registers and indexed meters restart, as after any load.

        Every kept entity is first validated against the new P4Info; if one
        no longer fits, nothing changes.
        """
        if self.state is None:
            return self._commit(pipeline, replay=[])
        replay = self._replay_list()
        for update_type, entity in replay:
            _check_entity_fits(pipeline.index, entity)
        self._commit(pipeline, replay)

    def _replay_list(self) -> list:
        """Kept entities as INSERT/MODIFY updates, members before the groups
        and groups before the table entries that use them."""
        s = self.state
        profiles = []
        add_profile = lambda: profiles.append(p4runtime_pb2.Entity()) or profiles[-1]  # noqa: E731
        for _ in itertools.chain(
                s.profiles.read_members(p4runtime_pb2.ActionProfileMember(),
                                        lambda: add_profile().action_profile_member),
                s.profiles.read_groups(p4runtime_pb2.ActionProfileGroup(),
                                       lambda: add_profile().action_profile_group)):
            pass
        items = [(Update.INSERT, entity) for entity in profiles] + [(Update.MODIFY if e.is_default_action else Update.INSERT,
                  p4runtime_pb2.Entity(table_entry=e)) for e in s.tables.replay_protos()]
        kept = []
        add = lambda: kept.append(p4runtime_pb2.Entity()) or kept[-1]  # noqa: E731
        for _ in itertools.chain(
                s.pre.read(p4runtime_pb2.PacketReplicationEngineEntry(),
                           lambda: add().packet_replication_engine_entry),
                s.digests.read(p4runtime_pb2.DigestEntry(), lambda: add().digest_entry)):
            pass
        return items + [(Update.INSERT, entity) for entity in kept]

    def get_pipeline(self, response_type: int) -> p4runtime_pb2.ForwardingPipelineConfig:
        with self.lock:
            out = p4runtime_pb2.ForwardingPipelineConfig()
            if self.active is None:
                return out
            cfg = self.active.config
            if cfg.HasField("cookie"):
                out.cookie.CopyFrom(cfg.cookie)
            if response_type in (ResponseType.ALL, ResponseType.P4INFO_AND_COOKIE):
                out.p4info.CopyFrom(cfg.p4info)
            if response_type in (ResponseType.ALL, ResponseType.DEVICE_CONFIG_AND_COOKIE):
                out.p4_device_config = cfg.p4_device_config
            if response_type not in ResponseType.values():
                raise invalid(f"unknown response_type {response_type}")
            return out

    def ports_changed(self, ports: set) -> None:
        """Watch ports went up or down: re-install the groups that watch them."""
        with self.lock:
            if self.state is not None:
                self.state.profiles.ports_changed(ports)

    def require_pipeline(self) -> None:
        if self.state is None:
            raise failed_precondition("no forwarding pipeline config has been set")

    # ---- entities -----------------------------------------------------
    def write(self, update: p4runtime_pb2.Update) -> None:
        """Apply one update; raise P4RuntimeError (and change nothing) if it is invalid."""
        with self.lock:
            self.require_pipeline()
            self._apply(update.type, update.entity)

    def _apply(self, update_type, entity):
        if update_type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
            raise invalid(f"update type {update_type} is not INSERT, MODIFY or DELETE")
        kind = entity.WhichOneof("entity")
        writer = self.state.writers().get(kind)
        if writer is None:
            raise unimplemented(f"writing {kind or 'an empty entity'} is not supported")
        writer(update_type, getattr(entity, kind))

    def read(self, entities, max_entities: int = READ_MAX_ENTITIES,
             max_bytes: int = READ_MAX_BYTES):
        """ReadResponses holding the entities matching `entities` (with
        wildcards), each at most `max_entities` entities or about `max_bytes`.

        Every request is validated before the first reply. Each reply is
        filled under the lock, which is released while it is sent, so a slow
        or vanished client neither holds up writes nor makes the server build
        its whole answer in memory. Entries deleted meanwhile are left out; a
        pipeline change ends the read with ABORTED.
        """
        reply = _ReplyBuffer()
        with self.lock:
            self.require_pipeline()
            state = self.state
            steps = itertools.chain.from_iterable(
                [self._reader(want)(reply.slot_for(want)) for want in entities])
        sent = False
        while True:
            with self.lock:
                if self.state is not state:
                    raise aborted("the forwarding pipeline changed during the Read")
                done = reply.fill(steps, max_entities, max_bytes)
            if len(reply.message.entities) or (done and not sent):
                yield reply.take()
                sent = True
            if done:
                return

    def _reader(self, entity: p4runtime_pb2.Entity):
        """The validating reader for `entity`, as a function of the `add` callback."""
        kind = entity.WhichOneof("entity")
        reader = self.state.readers().get(kind)
        if reader is None:
            raise unimplemented(f"reading {kind or 'an empty entity'} is not supported")
        return lambda add: reader(getattr(entity, kind), add)


class _ReplyBuffer:
    """The ReadResponse being filled, with a running size estimate."""

    def __init__(self):
        self.message = p4runtime_pb2.ReadResponse()
        self.size = 0

    def slot_for(self, entity):
        kind = entity.WhichOneof("entity")
        return lambda: getattr(self.message.entities.add(), kind)

    def fill(self, steps, max_entities: int, max_bytes: int) -> bool:
        """Step the readers until the reply is full; True once they are exhausted."""
        entities = self.message.entities
        while len(entities) < max_entities and self.size < max_bytes:
            if next(steps, _DONE) is _DONE:
                return True
            self.size += entities[-1].ByteSize()
        return False

    def take(self) -> p4runtime_pb2.ReadResponse:
        message, self.message, self.size = self.message, p4runtime_pb2.ReadResponse(), 0
        return message


_DONE = object()


def _check_entity_fits(index: P4InfoIndex, entity) -> None:
    """Raise INVALID_ARGUMENT if a kept entity does not validate under `index`."""
    kind = entity.WhichOneof("entity")
    try:
        if kind == "table_entry":
            e = entity.table_entry
            table = index.table(e.table_id)
            if not e.is_default_action:
                match_key(table, e)
            if table.is_indirect:
                _check_indirect_action_fits(index, table, e.action)
            else:
                action_spec(index, table, e.action, default=e.is_default_action)
        elif kind == "action_profile_member":
            m = entity.action_profile_member
            profile = index.profile(m.action_profile_id)
            action_call(index, profile.name, profile.action_scopes, m.action, default=False)
        elif kind == "action_profile_group" and \
                not index.profile(entity.action_profile_group.action_profile_id).with_selector:
            raise invalid("a group's action profile has no selector any more")
        elif kind == "digest_entry" and entity.digest_entry.digest_id not in index.digests:
            raise invalid(f"digest {entity.digest_entry.digest_id} is gone")
    except P4RuntimeError as e:
        raise invalid(f"RECONCILE_AND_COMMIT: kept state does not fit the new pipeline: {e.message}") from None


def _check_indirect_action_fits(index, table, table_action) -> None:
    profile = index.profile(table.implementation_id)
    kind = table_action.WhichOneof("type")
    if kind == "action" or (kind != "action_profile_member_id" and not profile.with_selector):
        raise invalid(f"table '{table.name}' cannot run {kind} any more")
    if kind == "action_profile_action_set":
        for item in table_action.action_profile_action_set.action_profile_actions:
            action_call(index, table.name, table.action_scopes, item.action, default=False)
