"""Action profile members and groups, and one-shot action sets (spec §9.2).

The controller's member and group ids are not the engine's: the server
allocates the engine's own, because a member of weight w in a group is w
engine members (the way PI lowers weights onto BMv2's unweighted groups), and
a one-shot `ActionProfileActionSet` is a hidden group of hidden members that
lives and dies with its table entry. Members watching a port that is down
(liveness.py) are left out of their groups' engine member lists until it is up
again. Every update is validated completely before the engine is touched.
"""
import itertools
from collections import Counter
from dataclasses import dataclass, field

import grpc
from p4.v1 import p4runtime_pb2

from . import engine_calls as ec
from .bytestrings import decode
from .errors import (already_exists, failed_precondition, invalid, not_found,
                     P4RuntimeError)
from .p4info_index import P4InfoIndex, ProfileInfo, TableInfo
from .tables import ActionSpec, action_call, engine_args, fill_call

Update = p4runtime_pb2.Update


def resource_exhausted(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


# What a table entry of an indirect table runs.
@dataclass(frozen=True)
class MemberRef:
    member_id: int


@dataclass(frozen=True)
class GroupRef:
    group_id: int


@dataclass(frozen=True)
class Watch:
    """A member's watch port, as written: `kind` "watch" (int32) or "watch_port" (bytes)."""
    kind: str
    value: object
    port: int


@dataclass
class OneShot:
    """An action set: (action, weight, watch) triples; engine ids once installed
    (engine_members[i] = the weight copies of action i)."""
    actions: tuple
    engine_group: int = 0
    engine_members: list = field(default_factory=list)


@dataclass
class Member:
    action: ActionSpec
    copies: list   # engine member ids; copies[:w] stand for it in a group at weight w


@dataclass
class Group:
    engine_id: int
    members: list  # [(member_id, weight, Watch or None)] as written (read back as written)
    max_size: int


class ProfileState:
    def __init__(self):
        self.members = {}
        self.groups = {}
        self.refs = Counter()     # MemberRef/GroupRef -> table entries using it
        self.oneshots = {}        # engine group -> OneShot of a table entry
        self.engine_members = 0   # engine members in use (copies included)
        self.member_ids = itertools.count(1)
        self.group_ids = itertools.count(1)


class ActionProfiles:
    def __init__(self, sw, index: P4InfoIndex, port_up=lambda port: True):
        self.sw = sw
        self.index = index
        self.port_up = port_up   # watch ports: is this port up now?
        self.state = {pid: ProfileState() for pid in index.action_profiles}

    # ---- members ------------------------------------------------------
    def write_member(self, update_type: int, m: p4runtime_pb2.ActionProfileMember) -> None:
        profile, st = self._profile(m.action_profile_id)
        current = _target(profile, st, "member", m.member_id, st.members, update_type)
        if update_type == Update.INSERT:
            spec = self._member_action(profile, m)
            self._reserve(profile, st, 1)
            eid = self._new_engine_member(profile, st, spec)
            st.members[m.member_id] = Member(spec, [eid])
            return
        if update_type == Update.MODIFY:
            spec = self._member_action(profile, m)
            for eid in current.copies:
                self._engine_member_set(profile, eid, spec)
            current.action = spec
            return
        in_group = next((g for g, grp in st.groups.items()
                         if any(mid == m.member_id for mid, _, _ in grp.members)), None)
        if in_group is not None:
            raise failed_precondition(f"action profile '{profile.name}': member {m.member_id} "
                                      f"is in group {in_group}")
        if st.refs[MemberRef(m.member_id)]:
            raise failed_precondition(f"action profile '{profile.name}': member {m.member_id} "
                                      "is used by a table entry")
        self._delete_engine_members(profile, st, current.copies)
        del st.members[m.member_id]

    def _member_action(self, profile, m) -> ActionSpec:
        if not m.HasField("action"):
            raise invalid(f"action profile '{profile.name}': member {m.member_id} has no action")
        return action_call(self.index, f"action profile '{profile.name}'",
                           profile.action_scopes, m.action, default=False)

    # ---- groups -------------------------------------------------------
    def write_group(self, update_type: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
        profile, st = self._profile(g.action_profile_id)
        if not profile.with_selector:
            raise invalid(f"action profile '{profile.name}' has no selector: it has no groups")
        current = _target(profile, st, "group", g.group_id, st.groups, update_type)
        if update_type == Update.INSERT:
            self._check_max_size(profile, g.max_size)
            members = self._group_members(profile, st, g, g.max_size)
            group = Group(next(st.group_ids), [], g.max_size)
            self._set_group(profile, st, group, members)
            st.groups[g.group_id] = group
            return
        if update_type == Update.MODIFY:
            if g.max_size != current.max_size:
                raise invalid(f"action profile '{profile.name}' group {g.group_id}: max_size is "
                              f"{current.max_size} since its INSERT and cannot change")
            self._set_group(profile, st, current,
                            self._group_members(profile, st, g, current.max_size))
            return
        if st.refs[GroupRef(g.group_id)]:
            raise failed_precondition(f"action profile '{profile.name}': group {g.group_id} "
                                      "is used by a table entry")
        ec.call(self.sw.act_prof_group_delete, profile.name, current.engine_id)
        del st.groups[g.group_id]
        self._trim_copies(profile, st, [mid for mid, _, _ in current.members])

    def _check_max_size(self, profile, max_size):
        """Spec §9.2.2, rules on setting max_size."""
        if max_size < 0:
            raise invalid(f"action profile '{profile.name}': negative max_size {max_size}")
        if profile.max_group_size and not 0 < max_size <= profile.max_group_size:
            raise invalid(f"action profile '{profile.name}': max_size must be in "
                          f"1..{profile.max_group_size} (max_group_size), got {max_size}")
        if max_size > profile.size:
            raise resource_exhausted(f"action profile '{profile.name}': groups of up to "
                                     f"{profile.size} are supported, max_size is {max_size}")

    def _group_members(self, profile, st, g, max_size) -> list:
        """[(member_id, weight, watch)] of `g`, validated."""
        members, seen = [], set()
        for m in g.members:
            if m.member_id in seen:
                raise invalid(f"action profile '{profile.name}' group {g.group_id}: member "
                              f"{m.member_id} given twice (use its weight)")
            seen.add(m.member_id)
            watch = self._check_weight_and_watch(profile, m, f"member {m.member_id}")
            if m.member_id not in st.members:
                raise not_found(f"action profile '{profile.name}': no member {m.member_id}")
            members.append((m.member_id, m.weight, watch))
        self._check_group_size(profile, g.group_id, [w for _, w, _ in members], max_size)
        return members

    def _check_weight_and_watch(self, profile, m, what):
        """Validate the weight; the Watch of `m` (None: always selected)."""
        if m.weight <= 0:
            raise invalid(f"action profile '{profile.name}' {what}: weight must be positive")
        if profile.sum_of_members and profile.max_member_weight and \
                m.weight > profile.max_member_weight:
            raise invalid(f"action profile '{profile.name}' {what}: weight {m.weight} > "
                          f"max_member_weight {profile.max_member_weight}")
        kind = m.WhichOneof("watch_kind")
        if kind is None or (kind == "watch_port" and m.watch_port == b""):
            return None
        port = m.watch if kind == "watch" else \
            decode(m.watch_port, 32, f"action profile '{profile.name}' {what} watch_port")
        if port not in ec.call(self.sw.port_stats):
            raise invalid(f"action profile '{profile.name}' {what}: watch port {port} "
                          "is not a port of the switch")
        return Watch(kind, getattr(m, kind), port)

    def _live(self, watch) -> bool:
        return watch is None or self.port_up(watch.port)

    def _check_group_size(self, profile, group_id, weights, max_size):
        size = len(weights) if profile.sum_of_members else sum(weights)
        limit = max_size or profile.max_group_size or profile.size
        if size > limit:
            unit = "members" if profile.sum_of_members else "weights summing to"
            raise resource_exhausted(f"action profile '{profile.name}' group {group_id}: "
                                     f"{unit} {size}, more than its maximum size {limit}")

    def _set_group(self, profile, st, group, members):
        """Give `group` these (member, weight, watch), creating weight copies first."""
        before = [mid for mid, _, _ in group.members]
        needed = {mid: max(w, len(st.members[mid].copies)) for mid, w, _ in members}
        self._reserve(profile, st, sum(n - len(st.members[mid].copies) for mid, n in needed.items()))
        for mid, n in needed.items():
            member = st.members[mid]
            while len(member.copies) < n:
                member.copies.append(self._new_engine_member(profile, st, member.action))
        self._install_group(profile, st, group.engine_id, members)
        group.members = members
        self._trim_copies(profile, st, before)

    def _install_group(self, profile, st, engine_id, members):
        """The engine group: each live member's first `weight` copies."""
        engine = [eid for mid, w, watch in members if self._live(watch)
                  for eid in st.members[mid].copies[:w]]
        ec.call(self.sw.act_prof_group_set, profile.name, engine_id, engine)

    def _install_oneshot(self, profile, target):
        engine = [eid for (_, _, watch), copies in zip(target.actions, target.engine_members)
                  if self._live(watch) for eid in copies]
        ec.call(self.sw.act_prof_group_set, profile.name, target.engine_group, engine)

    def ports_changed(self, ports: set) -> None:
        """Re-install every group and action set with a member watching one of `ports`."""
        for pid, st in self.state.items():
            profile = self.index.action_profiles[pid]
            for group in st.groups.values():
                if any(watch and watch.port in ports for _, _, watch in group.members):
                    self._install_group(profile, st, group.engine_id, group.members)
            for target in st.oneshots.values():
                if any(watch and watch.port in ports for _, _, watch in target.actions):
                    self._install_oneshot(profile, target)

    def _trim_copies(self, profile, st, member_ids):
        """Delete the weight copies no group needs any more."""
        for mid in set(member_ids):
            need = max([1] + [w for g in st.groups.values() for m, w, _ in g.members if m == mid])
            member = st.members[mid]
            self._delete_engine_members(profile, st, member.copies[need:])
            del member.copies[need:]

    # ---- table entries of indirect tables -----------------------------
    def entry_target(self, table: TableInfo, table_action):
        """Validate the action of an entry of indirect `table`: a MemberRef,
        GroupRef or OneShot (nothing is installed yet)."""
        profile, st = self._profile(table.implementation_id)
        kind = table_action.WhichOneof("type")
        if kind is None:
            raise invalid(f"table '{table.name}': entry has no action")
        if kind == "action":
            raise invalid(f"table '{table.name}' takes its actions from action profile "
                          f"'{profile.name}': give a member, a group or an action set")
        if kind != "action_profile_member_id" and not profile.with_selector:
            raise invalid(f"table '{table.name}': action profile '{profile.name}' has no "
                          f"selector, so no groups or action sets ({kind})")
        if kind == "action_profile_action_set":
            if st.members or st.groups:
                raise _mixing(profile)
            return self._oneshot(profile, st, table, table_action.action_profile_action_set)
        if st.oneshots:
            raise _mixing(profile)
        if kind == "action_profile_member_id":
            number, known, target = table_action.action_profile_member_id, st.members, MemberRef
        else:
            number, known, target = table_action.action_profile_group_id, st.groups, GroupRef
        if number not in known:
            what = "member" if target is MemberRef else "group"
            raise not_found(f"action profile '{profile.name}': no {what} {number}")
        return target(number)

    def _oneshot(self, profile, st, table, action_set) -> OneShot:
        actions = []
        for i, a in enumerate(action_set.action_profile_actions):
            watch = self._check_weight_and_watch(profile, a, f"action set item {i}")
            spec = action_call(self.index, f"table '{table.name}'", table.action_scopes,
                               a.action, default=False)
            actions.append((spec, a.weight, watch))
        if not actions:
            raise invalid(f"table '{table.name}': empty action set")
        weights = [w for _, w, _ in actions]
        size = len(weights) if profile.sum_of_members else sum(weights)
        if profile.max_group_size and size > profile.max_group_size:
            raise invalid(f"table '{table.name}': action set of size {size} exceeds "
                          f"max_group_size {profile.max_group_size}")
        self._check_group_size(profile, 0, weights, 0)
        self._reserve(profile, st, sum(weights))
        return OneShot(tuple(actions))

    def acquire(self, table: TableInfo, target):
        """Install what `target` needs and count its use; the engine's action."""
        profile, st = self._profile(table.implementation_id)
        if isinstance(target, MemberRef):
            st.refs[target] += 1
            return ("member", st.members[target.member_id].copies[0])
        if isinstance(target, GroupRef):
            st.refs[target] += 1
            return ("group", st.groups[target.group_id].engine_id)
        try:
            for spec, weight, _ in target.actions:
                target.engine_members.append([])
                for _ in range(weight):
                    target.engine_members[-1].append(self._new_engine_member(profile, st, spec))
            target.engine_group = next(st.group_ids)
            self._install_oneshot(profile, target)
        except P4RuntimeError:
            self._delete_engine_members(profile, st, _flat(target.engine_members))
            raise
        st.oneshots[target.engine_group] = target
        return ("group", target.engine_group)

    def release(self, table: TableInfo, target) -> None:
        """The entry no longer runs `target` (call after the engine entry changed)."""
        profile, st = self._profile(table.implementation_id)
        if isinstance(target, OneShot):
            ec.call(self.sw.act_prof_group_delete, profile.name, target.engine_group)
            self._delete_engine_members(profile, st, _flat(target.engine_members))
            del st.oneshots[target.engine_group]
        else:
            st.refs[target] -= 1

    def fill_target(self, target, action: p4runtime_pb2.TableAction) -> None:
        if isinstance(target, MemberRef):
            action.action_profile_member_id = target.member_id
        elif isinstance(target, GroupRef):
            action.action_profile_group_id = target.group_id
        else:
            action_set = action.action_profile_action_set
            for spec, weight, watch in target.actions:
                item = action_set.action_profile_actions.add(weight=weight)
                _fill_watch(item, watch)
                fill_call(self.index, spec, item.action)

    # ---- reads --------------------------------------------------------
    def read_members(self, request: p4runtime_pb2.ActionProfileMember, add):
        for profile, st in self._read_scope(request.action_profile_id):
            ids = [request.member_id] if request.member_id else sorted(st.members)
            for mid in ids:
                member = st.members.get(mid)
                if member is None:
                    continue
                out = add()
                out.action_profile_id, out.member_id = profile.id, mid
                fill_call(self.index, member.action, out.action)
                yield

    def read_groups(self, request: p4runtime_pb2.ActionProfileGroup, add):
        for profile, st in self._read_scope(request.action_profile_id):
            ids = [request.group_id] if request.group_id else sorted(st.groups)
            for gid in ids:
                group = st.groups.get(gid)
                if group is None:
                    continue
                out = add()
                out.action_profile_id, out.group_id, out.max_size = profile.id, gid, group.max_size
                for mid, weight, watch in group.members:
                    _fill_watch(out.members.add(member_id=mid, weight=weight), watch)
                yield

    def _read_scope(self, profile_id):
        if profile_id:
            profile, st = self._profile(profile_id)
            return [(profile, st)]
        return [(self.index.action_profiles[pid], st) for pid, st in self.state.items()]

    # ---- engine helpers -----------------------------------------------
    def _profile(self, profile_id) -> tuple:
        profile = self.index.profile(profile_id)
        return profile, self.state[profile_id]

    def _reserve(self, profile: ProfileInfo, st: ProfileState, more: int) -> None:
        if st.engine_members + more > profile.size:
            raise resource_exhausted(
                f"action profile '{profile.name}' is full: it holds {profile.size} members "
                f"(a member of weight w in a group counts w times), {st.engine_members} in use")

    def _new_engine_member(self, profile, st, spec) -> int:
        eid = next(st.member_ids)
        self._engine_member_set(profile, eid, spec)
        st.engine_members += 1
        return eid

    def _engine_member_set(self, profile, eid, spec):
        ec.call(self.sw.act_prof_member_set, profile.name, eid,
                self.index.actions[spec.action_id].name, engine_args(self.index, spec))

    def _delete_engine_members(self, profile, st, eids):
        for eid in eids:
            ec.call(self.sw.act_prof_member_delete, profile.name, eid)
            st.engine_members -= 1


def _flat(lists) -> list:
    return [x for items in lists for x in items]


def _fill_watch(message, watch) -> None:
    if watch is not None:
        setattr(message, watch.kind, watch.value)


def _target(profile, st: ProfileState, kind: str, ident: int, existing: dict, update_type: int):
    """The member or group an update names, checked as its update type requires
    (spec 9.2: non-zero id; INSERT of a new id, and not into a profile holding
    one-shot selections; MODIFY/DELETE of an existing one). None for INSERT."""
    if ident == 0:
        raise invalid(f"action profile '{profile.name}': {kind}_id must be non-zero")
    current = existing.get(ident)
    if update_type == Update.INSERT:
        if current is not None:
            raise already_exists(f"action profile '{profile.name}': {kind} {ident} exists")
        if st.oneshots:
            raise _mixing(profile)
    elif current is None:
        raise not_found(f"action profile '{profile.name}': no {kind} {ident}")
    return current


def _mixing(profile) -> P4RuntimeError:
    return invalid(f"action profile '{profile.name}': its tables are programmed either with "
                   "one-shot action sets or with members and groups, never both")
