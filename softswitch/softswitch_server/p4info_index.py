"""Lookup tables over a P4Info message: objects by id and by name.

Built once per pipeline so request validation is a few dict lookups.
Construction also rejects P4Info messages that cannot be served
(duplicate ids, unknown references, unsupported match kinds).
"""
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from .errors import invalid, not_found

MatchType = p4info_pb2.MatchField.MatchType
Scope = p4info_pb2.ActionRef.Scope
SUPPORTED_MATCH = {MatchType.EXACT, MatchType.LPM, MatchType.TERNARY,
                   MatchType.RANGE, MatchType.OPTIONAL}
PRIORITY_MATCH = {MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL}


@dataclass
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int
    # An `error`-typed key (P4Info bitwidth 0, as p4c writes it): values are the
    # error's name (P4Runtime spec: error members have no integer value). The
    # pipeline check fills the names' codes and the data-plane width from the JSON.
    error_codes: dict = None
    engine_width: int = 0

    @property
    def is_error(self) -> bool:
        return self.bitwidth == 0


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict  # id -> (name, bitwidth), in declaration order


@dataclass
class TableInfo:
    id: int
    name: str
    match_fields: dict  # id -> MatchFieldInfo, in key order
    action_scopes: dict  # action id -> ActionRef scope
    const_default_action_id: int
    is_const: bool
    size: int
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    implementation_id: int = 0   # the action profile/selector of an indirect table

    @property
    def is_indirect(self) -> bool:
        return bool(self.implementation_id)

    @property
    def needs_priority(self) -> bool:
        return any(f.match_type in PRIORITY_MATCH for f in self.match_fields.values())


@dataclass
class ProfileInfo:
    """An action profile (with_selector: an action selector) and its tables."""
    id: int
    name: str
    table_ids: list
    with_selector: bool
    size: int
    max_group_size: int
    sum_of_members: bool   # selector_size_semantics: group size counts members, not weights
    max_member_weight: int
    action_scopes: dict    # the actions its members may call (those of its tables)


@dataclass
class ArrayInfo:
    """An indexed extern (counter, meter, register): name, size, width; `boolean`: a
    register of bool cells (its data is P4Data's bool, not a bitstring)."""
    id: int
    name: str
    size: int
    bitwidth: int = 0
    unit: int = 0
    boolean: bool = False


@dataclass
class DirectInfo:
    id: int
    name: str
    table_id: int
    unit: int = 0


@dataclass
class DigestInfo:
    id: int
    name: str
    field_widths: list = field(default_factory=list)
    is_struct: bool = True


@dataclass
class PacketMetadataInfo:
    name: str
    fields: list  # [(id, name, bitwidth)] in header order


class P4InfoIndex:
    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self._seen_ids = set()
        self.actions = {a.preamble.id: self._action(a) for a in p4info.actions}
        self.tables = {t.preamble.id: self._table(t) for t in p4info.tables}
        self.counters = {c.preamble.id: self._array(c, c.size, unit=c.spec.unit)
                         for c in p4info.counters}
        self.meters = {m.preamble.id: self._array(m, m.size, unit=m.spec.unit)
                       for m in p4info.meters}
        self.registers = {r.preamble.id: self._register(r) for r in p4info.registers}
        self.direct_counters = {d.preamble.id: self._direct(d, "direct_counter_id")
                                for d in p4info.direct_counters}
        self.direct_meters = {d.preamble.id: self._direct(d, "direct_meter_id")
                              for d in p4info.direct_meters}
        self.digests = {d.preamble.id: self._digest(d) for d in p4info.digests}
        self.packet_metadata = {c.preamble.name: self._packet_metadata(c)
                                for c in p4info.controller_packet_metadata}
        self.action_profiles = {p.preamble.id: self._profile(p) for p in p4info.action_profiles}
        self._check_implementations()
        for unsupported in ("value_sets", "externs"):
            if len(getattr(p4info, unsupported)):
                raise invalid(f"P4Info: {unsupported} are not supported by this target")
        self.action_by_name = {a.name: a for a in self.actions.values()}

    def _claim_id(self, preamble):
        if preamble.id == 0 or preamble.id in self._seen_ids:
            raise invalid(f"P4Info: object '{preamble.name}' has a zero or duplicate id {preamble.id}")
        self._seen_ids.add(preamble.id)

    def _action(self, a):
        self._claim_id(a.preamble)
        params = {}
        for p in a.params:
            if p.id in params or p.bitwidth <= 0:
                raise invalid(f"P4Info: action '{a.preamble.name}' param '{p.name}' has a duplicate id or no width")
            params[p.id] = (p.name, p.bitwidth)
        return ActionInfo(a.preamble.id, a.preamble.name, params)

    def _table(self, t):
        self._claim_id(t.preamble)
        fields = {}
        for mf in t.match_fields:
            if mf.id in fields or mf.bitwidth < 0 or mf.match_type not in SUPPORTED_MATCH:
                raise invalid(f"P4Info: table '{t.preamble.name}' match field '{mf.name}' "
                              "has a duplicate id or an unsupported match kind")
            if mf.bitwidth == 0 and not self._error_key(mf):
                raise invalid(f"P4Info: table '{t.preamble.name}' match field '{mf.name}' has no "
                              "width (only an exact or optional key of type error may have none)")
            fields[mf.id] = MatchFieldInfo(mf.id, mf.name, mf.bitwidth, mf.match_type)
        scopes = {}
        for ref in t.action_refs:
            if ref.id not in self.actions:
                raise invalid(f"P4Info: table '{t.preamble.name}' refers to unknown action {ref.id}")
            scopes[ref.id] = ref.scope
        return TableInfo(t.preamble.id, t.preamble.name, fields, scopes,
                         t.const_default_action_id, t.is_const_table, t.size,
                         implementation_id=t.implementation_id)

    def _profile(self, p):
        self._claim_id(p.preamble)
        name = p.preamble.name
        tables = [self.tables.get(tid) for tid in p.table_ids]
        if not tables or None in tables or p.size <= 0 or p.max_group_size < 0:
            raise invalid(f"P4Info: action profile '{name}' needs known table_ids and a positive size")
        if p.max_group_size > p.size:   # spec §9.2.2: the target must hold such groups
            raise invalid(f"P4Info: action profile '{name}': max_group_size {p.max_group_size} "
                          f"exceeds its size {p.size} (a group's members, with their weights, "
                          "take that many of the profile's entries on this target)")
        scopes = tables[0].action_scopes
        if any(t.action_scopes.keys() != scopes.keys() for t in tables):
            raise invalid(f"P4Info: the tables of action profile '{name}' must have the same actions")
        by_members = p.WhichOneof("selector_size_semantics") == "sum_of_members"
        return ProfileInfo(p.preamble.id, name, list(p.table_ids), p.with_selector, p.size,
                           p.max_group_size, by_members,
                           p.sum_of_members.max_member_weight if by_members else 0, scopes)

    def _check_implementations(self):
        """Each indirect table names a profile that lists it, and conversely."""
        for table in self.tables.values():
            profile = self.action_profiles.get(table.implementation_id)
            if table.is_indirect and (profile is None or table.id not in profile.table_ids):
                raise invalid(f"P4Info: table '{table.name}' has implementation_id "
                              f"{table.implementation_id}, not an action profile listing it")
        for profile in self.action_profiles.values():
            for tid in profile.table_ids:
                if self.tables[tid].implementation_id != profile.id:
                    raise invalid(f"P4Info: action profile '{profile.name}' lists table "
                                  f"'{self.tables[tid].name}', whose implementation_id differs")

    def _error_key(self, mf) -> bool:
        """p4c gives an error-typed key bitwidth 0 and lists the errors in type_info."""
        return (self.p4info.type_info.HasField("error") and not mf.HasField("type_name")
                and mf.match_type in (MatchType.EXACT, MatchType.OPTIONAL))

    def _array(self, obj, size, unit=0, bitwidth=0):
        self._claim_id(obj.preamble)
        if size <= 0:
            raise invalid(f"P4Info: '{obj.preamble.name}' has size {size}")
        return ArrayInfo(obj.preamble.id, obj.preamble.name, size, bitwidth, unit)

    def _register(self, r):
        if r.type_spec.HasField("bool"):
            info = self._array(r, r.size, bitwidth=1)
            info.boolean = True
            return info
        if not r.type_spec.HasField("bitstring"):
            raise invalid(f"P4Info: register '{r.preamble.name}' is neither a bitstring nor "
                          f"a bool register")
        bitstring = r.type_spec.bitstring
        width = bitstring.bit.bitwidth or bitstring.int.bitwidth
        return self._array(r, r.size, bitwidth=width)

    def _direct(self, d, slot):
        self._claim_id(d.preamble)
        table = self.tables.get(d.direct_table_id)
        if table is None:
            raise invalid(f"P4Info: '{d.preamble.name}' is attached to unknown table {d.direct_table_id}")
        setattr(table, slot, d.preamble.id)
        return DirectInfo(d.preamble.id, d.preamble.name, d.direct_table_id, d.spec.unit)

    def _digest(self, d):
        self._claim_id(d.preamble)
        return DigestInfo(d.preamble.id, d.preamble.name, self._digest_widths(d),
                          d.type_spec.HasField("struct"))

    def _digest_widths(self, d):
        """Field widths of the digest's struct (or single bitstring)."""
        spec = d.type_spec
        if spec.HasField("bitstring"):
            return [spec.bitstring.bit.bitwidth]
        if spec.HasField("struct"):
            struct = self.p4info.type_info.structs.get(spec.struct.name)
            if struct is None:
                raise invalid(f"P4Info: digest '{d.preamble.name}' uses unknown struct '{spec.struct.name}'")
            return [m.type_spec.bitstring.bit.bitwidth for m in struct.members]
        raise invalid(f"P4Info: digest '{d.preamble.name}' has an unsupported type")

    def _packet_metadata(self, c):
        self._claim_id(c.preamble)
        return PacketMetadataInfo(c.preamble.name, [(m.id, m.name, m.bitwidth) for m in c.metadata])

    def table(self, table_id: int) -> TableInfo:
        info = self.tables.get(table_id)
        if info is None:
            raise not_found(f"unknown table id {table_id}")
        return info

    def profile(self, profile_id: int) -> ProfileInfo:
        info = self.action_profiles.get(profile_id)
        if info is None:
            raise not_found(f"unknown action profile id {profile_id}")
        return info

    def action(self, action_id: int) -> ActionInfo:
        info = self.actions.get(action_id)
        if info is None:
            raise invalid(f"unknown action id {action_id}")
        return info
