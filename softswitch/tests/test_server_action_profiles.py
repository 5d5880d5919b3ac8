"""Action profiles and selectors over P4Runtime (spec §9.2): members, groups
with weights, table entries naming them, one-shot action sets, the spec's
status code for every refusal (with nothing changed), and packets through
members and groups. fixtures/selector.p4: `ecmp` (action selector,
@max_group_size(4), 8 members) and `tos_by_port` (action profile, 4 members)."""
import math
import pathlib
import random
import subprocess
import sys

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from server_support import (FIXTURES, P4RTClient, SetAction, Update, compile_fixture, start_server,
                            wait_for_no_clients, write_error_codes)



@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_fixture(tmp_path_factory.mktemp("selector"), "selector")


@pytest.fixture(scope="module")
def ids(program):
    p4info = text_format.Parse(program[0].read_text(), p4info_pb2.P4Info())
    objects = list(p4info.tables) + list(p4info.actions) + list(p4info.action_profiles)
    return {o.preamble.alias: o.preamble.id for o in objects}


def pair(program):
    p4info = text_format.Parse(program[0].read_text(), p4info_pb2.P4Info())
    return p4info, program[1].read_bytes()


@pytest.fixture
def switch(program):
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    client.set_pipeline(*pair(program))
    try:
        yield srv, client
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()


# ---- message builders ------------------------------------------------------
def nexthop(ids, port: int, dmac: int = 0xAA) -> pb.Action:
    a = pb.Action(action_id=ids["set_nexthop"])
    a.params.add(param_id=1, value=bytes([port]))
    a.params.add(param_id=2, value=bytes([dmac]))
    return a


def tos(ids, value: int) -> pb.Action:
    a = pb.Action(action_id=ids["set_tos"])
    a.params.add(param_id=1, value=bytes([value]))
    return a


def member(ids, member_id, action=None, profile="ecmp_selector"):
    m = pb.ActionProfileMember(action_profile_id=ids[profile], member_id=member_id)
    if action is not None:
        m.action.CopyFrom(action)
    return m


def group(ids, group_id, members, max_size=4, profile="ecmp_selector"):
    """members: [member_id or (member_id, weight)]."""
    g = pb.ActionProfileGroup(action_profile_id=ids[profile], group_id=group_id, max_size=max_size)
    for m in members:
        mid, weight = m if isinstance(m, tuple) else (m, 1)
        g.members.add(member_id=mid, weight=weight)
    return g


def ecmp_entry(ids, prefix: bytes, plen: int, **action) -> pb.TableEntry:
    e = pb.TableEntry(table_id=ids["ecmp"])
    m = e.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = prefix, plen
    for kind, value in action.items():
        if kind == "action_set":
            for a, weight in value:
                e.action.action_profile_action_set.action_profile_actions.add(
                    action=a, weight=weight)
        elif kind == "action":
            e.action.action.CopyFrom(value)
        else:
            setattr(e.action, kind, value)
    return e


def tos_entry(ids, port: int, member_id: int) -> pb.TableEntry:
    e = pb.TableEntry(table_id=ids["tos_by_port"])
    e.match.add(field_id=1).exact.value = bytes([port])
    e.action.action_profile_member_id = member_id
    return e


def ipv4_frame(src: int, dst: int, protocol: int = 17) -> bytes:
    header = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, protocol, 0, 0])
    return (bytes(6) + bytes([0, 0, 0, 0, 0, 1]) + b"\x08\x00" + header
            + src.to_bytes(4, "big") + dst.to_bytes(4, "big"))


def egress(srv, frame: bytes, port: int = 0) -> tuple:
    """(egress port, ToS, destination MAC low byte) of the one copy out."""
    [(out_port, out)] = srv.sw.process_packet(port, frame)
    return out_port, out[15], out[5]


def everything(client) -> list:
    """All members, groups and table entries, serialized: proves a refusal changed nothing."""
    reads = [dict(action_profile_member=pb.ActionProfileMember()),
             dict(action_profile_group=pb.ActionProfileGroup()),
             dict(table_entry=pb.TableEntry())]
    return [m.SerializeToString(deterministic=True) for kw in reads for m in client.read(**kw)]


def refused(client, update_type, **entity) -> str:
    with pytest.raises(grpc.RpcError) as e:
        client.write(Update(type=update_type, entity=pb.Entity(**entity)))
    [code] = write_error_codes(e.value)
    return code


def program_base(client, ids):
    """Members 1-3 (ports 1-3), group 10 = {1, 2}, 10/8 -> group 10, 10.1/16 ->
    member 3; tos_profile member 1 (ToS 0x20) for ingress port 0."""
    for i in (1, 2, 3):
        client.insert(action_profile_member=member(ids, i, nexthop(ids, i, 0xA0 + i)))
    client.insert(action_profile_group=group(ids, 10, [1, 2]))
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_profile_group_id=10))
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x01\x00\x00", 16, action_profile_member_id=3))
    client.insert(action_profile_member=member(ids, 1, tos(ids, 0x20), profile="tos_profile"))
    client.insert(table_entry=tos_entry(ids, 0, 1))


# ---- behaviour ---------------------------------------------------------------
def test_packets_go_through_members_and_groups(switch, ids):
    srv, client = switch
    program_base(client, ids)
    port, tos_value, dmac = egress(srv, ipv4_frame(0x01020304, 0x0A010005))
    assert (port, tos_value, dmac) == (3, 0x20, 0xA3)            # member 3, ToS by member 1
    seen = {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(64)}
    assert seen == {1, 2}                                        # the group's two members
    for src in range(16):                                        # a flow keeps its member
        frame = ipv4_frame(src, 0x0A000001)
        assert egress(srv, frame) == egress(srv, frame)
    client.modify(action_profile_member=member(ids, 2, nexthop(ids, 7, 0xB7)))
    seen = {egress(srv, ipv4_frame(src, 0x0A000001))[:3:2] for src in range(64)}
    assert seen == {(1, 0xA1), (7, 0xB7)}                        # MODIFY reaches the group
    client.modify(action_profile_group=group(ids, 10, [3]))
    assert {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(16)} == {3}


def test_reads_return_what_was_written(switch, ids):
    _, client = switch
    program_base(client, ids)
    members = client.read(action_profile_member=pb.ActionProfileMember())
    assert [(m.action_profile_id, m.member_id) for m in members] == [
        (ids["ecmp_selector"], 1), (ids["ecmp_selector"], 2), (ids["ecmp_selector"], 3),
        (ids["tos_profile"], 1)]
    assert members[1] == member(ids, 2, nexthop(ids, 2, 0xA2))
    only = client.read(action_profile_member=member(ids, 1, profile="tos_profile"))
    assert only == [member(ids, 1, tos(ids, 0x20), profile="tos_profile")]
    by_profile = client.read(action_profile_member=pb.ActionProfileMember(
        action_profile_id=ids["tos_profile"]))
    assert [m.member_id for m in by_profile] == [1]
    weighted = group(ids, 11, [(3, 2), (1, 1)])
    client.insert(action_profile_group=weighted)
    assert client.read(action_profile_group=pb.ActionProfileGroup()) == [
        group(ids, 10, [1, 2]), weighted]
    assert client.read(action_profile_group=group(ids, 11, [])) == [weighted]
    assert client.read(action_profile_group=group(ids, 12, [])) == []
    entries = client.read(table_entry=pb.TableEntry(table_id=ids["ecmp"]))
    assert sorted(e.action.WhichOneof("type") for e in entries) == [
        "action_profile_group_id", "action_profile_member_id"]


def test_member_weights_set_the_share_of_flows(switch, ids):
    """Member 1 at weight 3 and member 2 at weight 1: 3/4 of 4,000 random flows
    (fixed seed) go to member 1; the bound is the 99.9 % binomial interval."""
    srv, client = switch
    for i in (1, 2):
        client.insert(action_profile_member=member(ids, i, nexthop(ids, i)))
    client.insert(action_profile_group=group(ids, 10, [(1, 3), (2, 1)]))
    client.insert(table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_profile_group_id=10))
    rng = random.Random(18)
    flows = 4000
    to_first = sum(egress(srv, ipv4_frame(rng.getrandbits(32), 0x0A000001,
                                          rng.choice([6, 17])))[0] == 1 for _ in range(flows))
    half_width = 3.29 * math.sqrt(0.75 * 0.25 / flows)
    assert abs(to_first / flows - 0.75) < half_width, to_first


def test_one_shot_action_sets(switch, ids):
    srv, client = switch
    one_shot = ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_set=[
        (nexthop(ids, 1, 0xA1), 1), (nexthop(ids, 2, 0xA2), 2)])
    client.insert(table_entry=one_shot)
    assert client.read(table_entry=pb.TableEntry(table_id=ids["ecmp"])) == [one_shot]
    assert client.read(action_profile_member=pb.ActionProfileMember()) == []   # hidden
    seen = {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(64)}
    assert seen == {1, 2}
    # the selector is now programmed with action sets: members and groups are refused
    assert refused(client, Update.INSERT,
                   action_profile_member=member(ids, 1, nexthop(ids, 1))) == "INVALID_ARGUMENT"
    changed = ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_set=[(nexthop(ids, 4), 4)])
    client.modify(table_entry=changed)
    assert {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(16)} == {4}
    assert client.read(table_entry=pb.TableEntry(table_id=ids["ecmp"])) == [changed]
    client.delete(table_entry=changed)
    client.insert(action_profile_member=member(ids, 1, nexthop(ids, 1)))   # free again
    big = ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_set=[(nexthop(ids, 1), 4)])
    assert refused(client, Update.INSERT, table_entry=big) == "INVALID_ARGUMENT"  # mixing


def test_members_and_groups_survive_reconcile(switch, program, ids):
    srv, client = switch
    program_base(client, ids)
    before = everything(client)
    client.set_pipeline(*pair(program), action=SetAction.RECONCILE_AND_COMMIT)
    assert everything(client) == before
    assert egress(srv, ipv4_frame(1, 0x0A010005))[0] == 3


# ---- refusals: the spec's code, nothing changed --------------------------------
def _cases(ids):
    M, G, E = member, group, ecmp_entry
    nh = nexthop(ids, 5)
    return {
        "duplicate member": (Update.INSERT, dict(action_profile_member=M(ids, 1, nh)), "ALREADY_EXISTS"),
        "member id 0": (Update.INSERT, dict(action_profile_member=M(ids, 0, nh)), "INVALID_ARGUMENT"),
        "member without action": (Update.INSERT, dict(action_profile_member=M(ids, 4)), "INVALID_ARGUMENT"),
        "member action of other tables": (Update.INSERT, dict(action_profile_member=M(ids, 4, tos(ids, 1))), "INVALID_ARGUMENT"),
        "member of an unknown profile": (Update.INSERT, dict(action_profile_member=pb.ActionProfileMember(
            action_profile_id=ids["ecmp"], member_id=4, action=nh)), "NOT_FOUND"),
        "modify of a missing member": (Update.MODIFY, dict(action_profile_member=M(ids, 9, nh)), "NOT_FOUND"),
        "delete of a missing member": (Update.DELETE, dict(action_profile_member=M(ids, 9)), "NOT_FOUND"),
        "delete of a member in a group": (Update.DELETE, dict(action_profile_member=M(ids, 1)), "FAILED_PRECONDITION"),
        "delete of a member an entry uses": (Update.DELETE, dict(action_profile_member=M(ids, 3)), "FAILED_PRECONDITION"),
        "group in a profile without selector": (Update.INSERT, dict(action_profile_group=G(ids, 1, [1], profile="tos_profile")), "INVALID_ARGUMENT"),
        "group id 0": (Update.INSERT, dict(action_profile_group=G(ids, 0, [1])), "INVALID_ARGUMENT"),
        "duplicate group": (Update.INSERT, dict(action_profile_group=G(ids, 10, [3])), "ALREADY_EXISTS"),
        "group with an unknown member": (Update.INSERT, dict(action_profile_group=G(ids, 11, [1, 9])), "NOT_FOUND"),
        "member twice in a group": (Update.INSERT, dict(action_profile_group=G(ids, 11, [1, 1])), "INVALID_ARGUMENT"),
        "weight 0": (Update.INSERT, dict(action_profile_group=G(ids, 11, [(1, 0)])), "INVALID_ARGUMENT"),
        "max_size 0 with max_group_size": (Update.INSERT, dict(action_profile_group=G(ids, 11, [1], max_size=0)), "INVALID_ARGUMENT"),
        "max_size above max_group_size": (Update.INSERT, dict(action_profile_group=G(ids, 11, [1], max_size=5)), "INVALID_ARGUMENT"),
        "group too big": (Update.INSERT, dict(action_profile_group=G(ids, 11, [1, 2, 3], max_size=2)), "RESOURCE_EXHAUSTED"),
        "weights too big": (Update.INSERT, dict(action_profile_group=G(ids, 11, [(1, 3), (2, 2)])), "RESOURCE_EXHAUSTED"),
        "max_size changed": (Update.MODIFY, dict(action_profile_group=G(ids, 10, [1], max_size=3)), "INVALID_ARGUMENT"),
        "modify of a missing group": (Update.MODIFY, dict(action_profile_group=G(ids, 11, [1])), "NOT_FOUND"),
        "delete of a group an entry uses": (Update.DELETE, dict(action_profile_group=G(ids, 10, [])), "FAILED_PRECONDITION"),
        "delete of a missing group": (Update.DELETE, dict(action_profile_group=G(ids, 11, [])), "NOT_FOUND"),
        "watch port not on the switch": (Update.INSERT, dict(action_profile_group=pb.ActionProfileGroup(
            action_profile_id=ids["ecmp_selector"], group_id=11, max_size=4,
            members=[pb.ActionProfileGroup.Member(member_id=1, weight=1, watch_port=b"\x07")])), "INVALID_ARGUMENT"),
        "direct action in an indirect table": (Update.INSERT, dict(table_entry=E(ids, b"\x0b\x00\x00\x00", 8, action=nh)), "INVALID_ARGUMENT"),
        "unknown member in an entry": (Update.INSERT, dict(table_entry=E(ids, b"\x0b\x00\x00\x00", 8, action_profile_member_id=9)), "NOT_FOUND"),
        "unknown group in an entry": (Update.INSERT, dict(table_entry=E(ids, b"\x0b\x00\x00\x00", 8, action_profile_group_id=9)), "NOT_FOUND"),
        "group in a table without selector": (Update.INSERT, dict(table_entry=pb.TableEntry(
            table_id=ids["tos_by_port"], match=[pb.FieldMatch(field_id=1, exact=pb.FieldMatch.Exact(value=b"\x01"))],
            action=pb.TableAction(action_profile_group_id=10))), "INVALID_ARGUMENT"),
        "action set beside members": (Update.INSERT, dict(table_entry=E(ids, b"\x0b\x00\x00\x00", 8, action_set=[(nh, 1)])), "INVALID_ARGUMENT"),
        "default entry of an indirect table": (Update.MODIFY, dict(table_entry=pb.TableEntry(
            table_id=ids["ecmp"], is_default_action=True)), "PERMISSION_DENIED"),
        "profile full": (Update.INSERT, dict(action_profile_member=M(ids, 5, tos(ids, 5), profile="tos_profile")), "RESOURCE_EXHAUSTED"),
    }


CASES = list(_cases({k: 1 for k in ("set_nexthop", "set_tos", "ecmp_selector", "tos_profile",
                                    "ecmp", "tos_by_port")}))


@pytest.mark.parametrize("case", CASES)
def test_refusals_use_the_spec_codes_and_change_nothing(switch, ids, case):
    srv, client = switch
    program_base(client, ids)
    for i in (2, 3, 4):    # tos_profile: full with 4 members
        client.insert(action_profile_member=member(ids, i, tos(ids, i), profile="tos_profile"))
    update_type, entity, code = _cases(ids)[case]
    before = everything(client)
    assert refused(client, update_type, **entity) == code
    assert everything(client) == before
    assert egress(srv, ipv4_frame(1, 0x0A010005))[0] == 3


@pytest.mark.parametrize("actions,code", [([(nexthop, 1)] * 5, "INVALID_ARGUMENT"),
                                       ([(nexthop, 3), (nexthop, 2)], "INVALID_ARGUMENT"),
                                       ([(nexthop, 0)], "INVALID_ARGUMENT"),
                                       ([], "INVALID_ARGUMENT")])
def test_action_sets_beyond_max_group_size_are_refused(switch, ids, actions, code):
    _, client = switch
    entry = ecmp_entry(ids, b"\x0a\x00\x00\x00", 8,
                       action_set=[(make(ids, 1), w) for make, w in actions])
    assert refused(client, Update.INSERT, table_entry=entry) == code
    assert everything(client) == []


def test_pipeline_whose_profiles_differ_is_refused(switch, program, ids):
    _, client = switch
    p4info, device_json = pair(program)
    del p4info.action_profiles[1]
    p4info.tables[1].implementation_id = 0
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(p4info, device_json, action=SetAction.VERIFY)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "tos_profile" in e.value.details() or "tos_by_port" in e.value.details()
    p4info, _ = pair(program)
    p4info.action_profiles[0].size = 9
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(p4info, device_json, action=SetAction.VERIFY)
    assert "ecmp_selector" in e.value.details()


# ---- a third-party client ----------------------------------------------------
def test_p4runtime_shell_programs_members_groups_and_action_sets(program, ids):
    """p4runtime-shell (PyPI) writes members, a weighted group and entries naming
    them, reads them back, then programs a one-shot entry on a fresh pipeline."""
    srv, address = start_server()
    try:
        done = subprocess.run([sys.executable, str(FIXTURES / "p4rtsh_profiles.py"), address,
                               str(program[0]), str(program[1])],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        import json
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["members"] == [[1, "set_nexthop", ["01", "a1"]], [2, "set_nexthop", ["02", "a2"]]]
        assert report["groups"] == [[10, 4, [[1, 3], [2, 1]]]]
        assert sorted(report["entries"]) == [["group", 10], ["member", 2]]
        assert report["one_shot"] == [[["set_nexthop", 3], ["set_nexthop", 1]]]
        # the one-shot pipeline is the one left installed: 3:1 over ports 1 and 2
        seen = {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(64)}
        assert seen == {1, 2}
    finally:
        wait_for_no_clients(srv)
        srv.stop()


def test_modify_without_action_keeps_the_action(switch, ids):
    """Spec §9.1.2: the action of a MODIFY may be left unset; the entry keeps its own."""
    srv, client = switch
    program_base(client, ids)
    entry = ecmp_entry(ids, b"\x0a\x01\x00\x00", 16)
    entry.metadata = b"note"
    client.modify(table_entry=entry)
    [read] = client.read(table_entry=entry)
    assert read.action.action_profile_member_id == 3 and read.metadata == b"note"
    assert egress(srv, ipv4_frame(1, 0x0A010005))[0] == 3


def test_sum_of_members_semantics_counts_members_and_caps_weights(program, ids):
    """A P4Info whose selector says sum_of_members (max_member_weight 2): a group's
    size is its number of members, and a weight above 2 is INVALID_ARGUMENT."""
    p4info, device_json = pair(program)
    selector = next(p for p in p4info.action_profiles if p.with_selector)
    selector.sum_of_members.max_member_weight = 2
    srv, address = start_server()
    client = P4RTClient(address, election_id=1)
    try:
        client.set_pipeline(p4info, device_json)
        for i in (1, 2, 3):
            client.insert(action_profile_member=member(ids, i, nexthop(ids, i)))
        client.insert(action_profile_group=group(ids, 10, [(1, 2), (2, 2), (3, 2)]))  # 3 members, weights 6
        assert refused(client, Update.INSERT,
                       action_profile_group=group(ids, 11, [(1, 3)])) == "INVALID_ARGUMENT"
        assert refused(client, Update.INSERT,
                       action_profile_group=group(ids, 11, [1, 2, 3], max_size=2)) == "RESOURCE_EXHAUSTED"
        assert [g.group_id for g in client.read(action_profile_group=pb.ActionProfileGroup())] == [10]
    finally:
        client.close()
        wait_for_no_clients(srv)
        srv.stop()


# ---- watch ports ---------------------------------------------------------------
def test_members_watching_a_down_port_leave_their_group(program, ids):
    """Spec §9.2.2: a member whose watch port is down is not selected; it is back
    when the port is up. Read-back keeps the watch fields as written."""
    import softswitch_engine as se
    from softswitch_server.device import Device
    ports_up = {1: True, 255: True}
    device = Device(se.Switch(ports={1: "lo"}, cpu_port=255), port_up=ports_up.__getitem__)
    device.load_json(program[1].read_text(), pair(program)[0])
    write = lambda kind, **entity: device.write(Update(type=kind, entity=pb.Entity(**entity)))  # noqa: E731
    for i, port in ((1, 1), (2, 2)):
        write(Update.INSERT, action_profile_member=member(ids, i, nexthop(ids, port)))
    watched = pb.ActionProfileGroup(action_profile_id=ids["ecmp_selector"], group_id=10, max_size=4)
    watched.members.add(member_id=1, weight=1, watch_port=b"\x01")
    watched.members.add(member_id=2, weight=1, watch=255)
    write(Update.INSERT, action_profile_group=watched)
    write(Update.INSERT, table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_profile_group_id=10))
    one_shot = ecmp_entry(ids, b"\x0b\x00\x00\x00", 8)
    for port in (1, 2):
        item = one_shot.action.action_profile_action_set.action_profile_actions.add(
            action=nexthop(ids, port), weight=1)
        if port == 1:
            item.watch_port = b"\x01"
    [reply] = device.read([pb.Entity(action_profile_group=pb.ActionProfileGroup())])
    assert reply.entities[0].action_profile_group == watched

    def ports_of(dst):
        return {device.sw.process_packet(0, ipv4_frame(src, dst))[0][0] for src in range(64)}
    assert ports_of(0x0A000001) == {1, 2}
    ports_up[1] = False
    device.ports_changed({1})
    assert ports_of(0x0A000001) == {2}
    ports_up[1] = True
    device.ports_changed({1})
    assert ports_of(0x0A000001) == {1, 2}
    # a one-shot set obeys the same rule (a second selector table would share the
    # profile, so the group above goes first: one style per selector)
    write(Update.DELETE, table_entry=ecmp_entry(ids, b"\x0a\x00\x00\x00", 8))
    write(Update.DELETE, action_profile_group=group(ids, 10, []))
    for i in (1, 2):
        write(Update.DELETE, action_profile_member=member(ids, i))
    write(Update.INSERT, table_entry=one_shot)
    [reply] = device.read([pb.Entity(table_entry=pb.TableEntry(table_id=ids["ecmp"]))])
    assert reply.entities[0].table_entry == one_shot
    ports_up[1] = False
    device.ports_changed({1})
    assert ports_of(0x0B000001) == {2}


def test_max_group_size_beyond_the_profile_size_is_refused(program):
    """Spec §9.2.2: a pipeline whose groups the target cannot hold is refused."""
    from softswitch_server.errors import P4RuntimeError
    from softswitch_server.p4info_index import P4InfoIndex
    p4info, _ = pair(program)
    next(p for p in p4info.action_profiles if p.with_selector).max_group_size = 9
    with pytest.raises(P4RuntimeError) as e:
        P4InfoIndex(p4info)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "max_group_size 9" in e.value.message


def test_finsy_programs_members_groups_and_action_sets(program, ids):
    """finsy (a second third-party client, protobuf >= 4) does the same through its
    own P4Runtime bindings; the one-shot entry it leaves forwards over both ports."""
    import json
    import os
    finsy_python = pathlib.Path(__file__).resolve().parents[2] / ".venv-finsy" / "bin" / "python"
    srv, address = start_server()
    try:
        done = subprocess.run([str(finsy_python), str(FIXTURES / "finsy_profiles.py"), address,
                               str(program[0]), str(program[1])], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": ""})
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["members"] == [[1, "set_nexthop(port=0x1, dmac=0xa1)"],
                                     [2, "set_nexthop(port=0x2, dmac=0xa2)"]]
        assert report["groups"] == [[10, 4, [[1, 3], [2, 1]]]]
        assert report["entries"] == [[0, 10], [2, 0]]
        assert report["one_shot"] == [[[3, "set_nexthop"], [1, "set_nexthop"]]]
        assert {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(64)} == {1, 2}
    finally:
        wait_for_no_clients(srv)
        srv.stop()


def test_one_shot_entries_survive_reconcile(switch, program, ids):
    srv, client = switch
    one_shot = ecmp_entry(ids, b"\x0a\x00\x00\x00", 8, action_set=[
        (nexthop(ids, 1, 0xA1), 3), (nexthop(ids, 2, 0xA2), 1)])
    one_shot.action.action_profile_action_set.action_profile_actions[0].watch_port = b"\xff"
    client.insert(table_entry=one_shot)
    client.set_pipeline(*pair(program), action=SetAction.RECONCILE_AND_COMMIT)
    assert client.read(table_entry=pb.TableEntry(table_id=ids["ecmp"])) == [one_shot]
    assert {egress(srv, ipv4_frame(src, 0x0A000001))[0] for src in range(64)} == {1, 2}
