"""P4Info built with the official p4.config.v1.p4info_pb2 classes, named as p4c names things.

Ids are p4c-style: the entity type's prefix byte followed by 24 bits of a hash of
the fully qualified name (collisions are resolved by probing); `@id` wins.
"""
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2 as P

from . import ast as A
from .errors import CompileError
from .types import BoolT, EnumT, ErrorT

PREFIX = {"action": P.P4Ids.ACTION, "table": P.P4Ids.TABLE, "value_set": P.P4Ids.VALUE_SET,
          "controller_header": P.P4Ids.CONTROLLER_HEADER, "counter": P.P4Ids.COUNTER,
          "direct_counter": P.P4Ids.DIRECT_COUNTER, "meter": P.P4Ids.METER,
          "direct_meter": P.P4Ids.DIRECT_METER, "register": P.P4Ids.REGISTER,
          "digest": P.P4Ids.DIGEST, "action_profile": P.P4Ids.ACTION_PROFILE}
_MATCH = {"exact": P.MatchField.EXACT, "lpm": P.MatchField.LPM, "ternary": P.MatchField.TERNARY,
          "range": P.MatchField.RANGE, "optional": P.MatchField.OPTIONAL}
_COUNTER_UNIT = {"packets": P.CounterSpec.PACKETS, "bytes": P.CounterSpec.BYTES,
                 "packets_and_bytes": P.CounterSpec.BOTH}
_METER_UNIT = {"packets": P.MeterSpec.PACKETS, "bytes": P.MeterSpec.BYTES}


def name_hash(name):
    """Jenkins one-at-a-time hash (32 bits)."""
    h = 0
    for b in name.encode():
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


class IdAllocator:
    def __init__(self):
        self.used = {}

    def explicit(self, kind, value, loc, name):
        prefix = PREFIX[kind]
        if value >> 24 == 0:
            value |= prefix << 24
        elif value >> 24 != prefix:
            raise CompileError(loc, f"@id 0x{value:08x} of '{name}' does not carry the {kind} "
                                    f"prefix 0x{prefix:02x}")
        if value in self.used and self.used[value] != name:
            raise CompileError(loc, f"@id 0x{value:08x} of '{name}' is already used by "
                                    f"'{self.used[value]}'")
        self.used[value] = name
        return value

    def derived(self, kind, name):
        prefix = PREFIX[kind] << 24
        low = name_hash(name) & 0xFFFFFF
        while True:
            candidate = prefix | low
            if self.used.get(candidate, name) == name:
                self.used[candidate] = name
                return candidate
            low = (low + 1) & 0xFFFFFF


class P4InfoBuilder:
    def __init__(self, comp):
        self.comp = comp
        self.ids = IdAllocator()
        self.info = P.P4Info()
        self.info.pkg_info.arch = "v1model"
        self.pending = []            # (kind, name, annos, loc, preamble) awaiting ids

    def build(self):
        c = self.comp
        for name in self.p4info_actions():
            self.add_action(name)
        for t in c.tables_info:
            self.add_table(t)
        for inst in c.instances:
            self.add_instance(inst)
        for d in c.digests:
            self.add_digest(*d)
        for vs in c.value_sets:
            self.add_value_set(vs)
        self.add_controller_headers()
        self.add_new_types()
        self.info.type_info.SetInParent()        # p4c always writes type_info
        self.assign_ids()
        self.link_ids()
        return self.info

    # ------------------------------------------------------------ preambles
    def preamble(self, msg, kind, name, annos, loc):
        msg.preamble.name = name
        for a in annos or ():
            if a.name == "brief" and a.args and isinstance(a.args[0], A.StrLit):
                msg.preamble.doc.brief = a.args[0].value
            elif a.name in ("id", "name", "brief", "hidden", "defaultonly", "tableonly"):
                continue
            else:
                msg.preamble.annotations.append(_render_annotation(a))
        self.pending.append((kind, name, annos, loc, msg.preamble))

    def assign_ids(self):
        for kind, name, annos, loc, pre in self.pending:
            a = A.find_annotation(annos, "id")
            if a and a.args and isinstance(a.args[0], A.IntLit):
                pre.id = self.ids.explicit(kind, a.args[0].value, loc, name)
        for kind, name, annos, loc, pre in self.pending:
            if not pre.id:
                pre.id = self.ids.derived(kind, name)
        self.assign_aliases()

    def assign_aliases(self):
        names = [pre.name for _, _, _, _, pre in self.pending]
        for _, name, _, _, pre in self.pending:
            parts = name.split(".")
            for i in range(len(parts) - 1, -1, -1):
                alias = ".".join(parts[i:])
                clash = [n for n in names if n != name and
                         (n == alias or n.endswith("." + alias))]
                if not clash:
                    break
            pre.alias = alias

    # ------------------------------------------------------------ tables and actions
    def p4info_actions(self):
        """Every action the program uses (from tables or called directly), except @hidden
        ones, in p4c's order."""
        meta = self.comp.action_meta
        names = [n for n, m in meta.items() if not A.find_annotation(m["annos"], "hidden")]
        return sorted(names, key=lambda n: meta[n]["order"])

    def add_action(self, name):
        meta = self.comp.action_meta[name]
        a = self.info.actions.add()
        self.preamble(a, "action", name, meta["annos"], meta["decl"].loc)
        for i, p in enumerate(meta["params"]):
            prm = a.params.add()
            prm.id, prm.name = i + 1, p["name"]
            self.set_type(prm, p["type"], p["bitwidth"])
        self.action_msgs = getattr(self, "action_msgs", {})
        self.action_msgs[name] = a

    def add_table(self, t):
        sym = t["sym"]
        msg = self.info.tables.add()
        self.preamble(msg, "table", sym.name, sym.decl.annos, sym.decl.loc)
        for i, k in enumerate(t["keys"]):
            mf = msg.match_fields.add()
            mf.id, mf.name = i + 1, k["name"]
            mf.match_type = _MATCH[k["match_type"]]
            self.set_type(mf, k["type"], k["bitwidth"])
        msg.size = t["size"]
        msg.is_const_table = t["is_const"]
        msg.has_initial_entries = t["has_entries"]
        self.table_msgs = getattr(self, "table_msgs", [])
        self.table_msgs.append((msg, t))

    def set_type(self, msg, t, width):
        """Width and type of a match field or action parameter, as p4c's P4Info gives them:
        `error` has width 0 and lists the errors in type_info; a plain enum has no width and
        names its type; a serializable enum has its width and its members in type_info;
        `type bit<W> T` names T (add_new_types)."""
        if isinstance(t, ErrorT):
            self.info.type_info.error.members[:] = list(self.comp.errors)
            return
        if isinstance(t, EnumT) and t.base is None:
            msg.type_name.name = t.name
            spec = self.info.type_info.enums[t.name]
            if not spec.members:
                for name, _ in sorted(t.members.items(), key=lambda m: m[1]):
                    spec.members.add().name = name
            return
        msg.bitwidth = width
        if isinstance(t, EnumT):
            self.add_serializable_enum(t)
        elif getattr(t, "type_name", None):
            msg.type_name.name = t.type_name

    def add_serializable_enum(self, t):
        spec = self.info.type_info.serializable_enums[t.name]
        if spec.members:
            return
        spec.underlying_type.bitwidth = t.base.width
        for name, value in t.members.items():
            m = spec.members.add()
            m.name = name
            m.value = (value & ((1 << t.base.width) - 1)).to_bytes((t.base.width + 7) // 8, "big")

    def link_ids(self):
        for msg, t in getattr(self, "table_msgs", []):
            for r in t["actions"]:
                ref = msg.action_refs.add()
                ref.id = self.action_msgs[r["name"]].preamble.id
                ref.scope = getattr(P.ActionRef, r["scope"])
                for a in r["annos"]:
                    if a.name not in ("defaultonly", "tableonly"):
                        ref.annotations.append(_render_annotation(a))
                    else:
                        ref.annotations.append("@" + a.name)
            if t["const_default"]:
                msg.const_default_action_id = self.action_msgs[t["const_default"]].preamble.id
            self.initial_default_action(msg, t)
            if t.get("implementation"):
                profile = t["implementation"].info["p4info_msg"]
                msg.implementation_id = profile.preamble.id
                profile.table_ids.append(msg.preamble.id)
            for inst in t["direct"]:
                msg.direct_resource_ids.append(inst.info["p4info_msg"].preamble.id)
            for inst in t["direct"]:
                inst.info["p4info_msg"].direct_table_id = msg.preamble.id

    def initial_default_action(self, msg, t):
        name, data = t["default_action"]
        action = self.action_msgs[name]
        msg.initial_default_action.action_id = action.preamble.id
        for prm, value in zip(action.params, data):
            arg = msg.initial_default_action.arguments.add()
            arg.param_id = prm.id
            arg.value = int(value, 16).to_bytes((prm.bitwidth + 7) // 8, "big")

    # ------------------------------------------------------------ externs
    def add_instance(self, inst):
        kind = inst.type.name
        if kind == "register":
            m = self.info.registers.add()
            self.preamble(m, "register", inst.name, inst.annos, inst.loc)
            m.size = inst.info["size"]
            _scalar_spec(m.type_spec, inst.info["value_type"])
        elif kind in ("counter", "direct_counter"):
            if kind == "direct_counter" and "table" not in inst.info:
                return
            m = (self.info.counters if kind == "counter" else self.info.direct_counters).add()
            self.preamble(m, kind, inst.name, inst.annos, inst.loc)
            m.spec.unit = _COUNTER_UNIT[inst.info["unit"]]
            if kind == "counter":
                m.size = inst.info["size"]
        elif kind in ("meter", "direct_meter"):
            if kind == "direct_meter" and "table" not in inst.info:
                return
            m = (self.info.meters if kind == "meter" else self.info.direct_meters).add()
            self.preamble(m, kind, inst.name, inst.annos, inst.loc)
            m.spec.unit = _METER_UNIT[inst.info["unit"]]
            if kind == "meter":
                m.size = inst.info["size"]
        elif kind in ("action_profile", "action_selector"):
            if not inst.info["tables"]:
                return
            m = self.info.action_profiles.add()
            self.preamble(m, "action_profile", inst.name,
                          [a for a in inst.annos or () if a.name != "max_group_size"], inst.loc)
            m.with_selector = kind == "action_selector"
            m.size = inst.info["size"]
            group = A.find_annotation(inst.annos, "max_group_size")
            if group and group.args and isinstance(group.args[0], A.IntLit) and m.with_selector:
                m.max_group_size = group.args[0].value
        else:
            return
        inst.info["p4info_msg"] = m

    def add_digest(self, name, members, list_id, t):
        m = self.info.digests.add()
        self.preamble(m, "digest", name, getattr(t, "annos", []), None)
        m.type_spec.struct.name = name
        st = self.info.type_info.structs[name]
        for fname, width in members:
            mem = st.members.add()
            mem.name = fname
            mem.type_spec.bitstring.bit.bitwidth = width

    def add_value_set(self, vs):
        m = self.info.value_sets.add()
        self.preamble(m, "value_set", vs.name, vs.annos, vs.loc)
        m.size = vs.size
        mf = m.match.add()
        mf.id, mf.name, mf.bitwidth = 1, vs.name.split(".")[-1], vs.width
        mf.match_type = P.MatchField.EXACT

    def add_controller_headers(self):
        from .symbols import TypeSym
        for sym in self.comp.globals.names.values():
            if not isinstance(sym, TypeSym) or not hasattr(sym.type, "annos"):
                continue
            t = sym.type
            a = A.find_annotation(t.annos, "controller_header")
            if not (a and t.kind == "header") or sym is not self.comp.globals.names.get(t.name):
                continue
            if not a.args or not isinstance(a.args[0], A.StrLit):
                raise CompileError(a.loc, "@controller_header needs a name string")
            m = self.info.controller_packet_metadata.add()
            self.preamble(m, "controller_header", a.args[0].value, [], a.loc)
            for i, (fname, ft) in enumerate(t.fields):
                md = m.metadata.add()
                md.id, md.name, md.bitwidth = i + 1, fname, ft.width


    def add_new_types(self):
        """`type bit<W> Name` used in the P4Info gets a type_info.new_types entry."""
        used = {mf.type_name.name for t in self.info.tables for mf in t.match_fields} | \
            {p.type_name.name for a in self.info.actions for p in a.params}
        for name, t in self.comp.new_types.items():
            if name in used:
                self.info.type_info.new_types[name].original_type.bitstring.bit.bitwidth = \
                    t.width


def _render_annotation(a):
    if not a.args:
        return "@" + a.name
    parts = []
    for x in a.args:
        if isinstance(x, A.StrLit):
            parts.append('"' + x.value + '"')
        elif isinstance(x, A.IntLit):
            parts.append(str(x.value))
        else:
            parts.append(getattr(x, "name", str(x)))
    return f"@{a.name}({', '.join(parts)})"


def build_p4info(comp):
    return P4InfoBuilder(comp).build()


_TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def to_text(info):
    """Text format as p4c writes it (with the proto-file/proto-message header)."""
    return _TEXT_HEADER + text_format.MessageToString(info)


def _scalar_spec(spec, t):
    """A P4DataTypeSpec for a bit<W>, int<W> or bool value (a register's element)."""
    if isinstance(t, BoolT):
        spec.bool.SetInParent()
    elif t.signed:
        spec.bitstring.int.bitwidth = t.width
    else:
        spec.bitstring.bit.bitwidth = t.width
