"""How softswitch-p4c lowers each P4 construct to BMv2 JSON / P4Info (LOWERING.md)."""
import pytest
from p4.config.v1 import p4info_pb2

from softswitch_p4c.driver import compile_source
from softswitch_p4c.validate import problems

HEADERS = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol;
    bit<16> hdrChecksum; bit<32> srcAddr; bit<32> dstAddr;
}
header hop_t { bit<7> port; bit<1> bos; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
"""


def program(ingress="", apply="", decls="", meta="bit<8> m8; bit<16> m16; bit<32> m32;",
            states=None, headers="ethernet_t ethernet; ipv4_t ipv4; hop_t[4] hops; ab_t ab;",
            egress_apply="", deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4);", controls="",
            checksum=""):
    states = states or """
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }"""
    return HEADERS + decls + f"""
struct headers {{ {headers} }}
struct metadata {{ {meta} }}
{controls}
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
    {states}
}}
control VC(inout headers hdr, inout metadata meta) {{ apply {{ }} }}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
    {ingress}
    apply {{ {apply} }}
}}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
    apply {{ {egress_apply} }}
}}
control CC(inout headers hdr, inout metadata meta) {{ apply {{ {checksum} }} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ {deparse} }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def build(tmp_path):
    def _build(**kw):
        j, info = compile_source(program(**kw), tmp_path)
        assert problems(j) == []
        return j, info
    return _build


def action(j, name):
    return next(a for a in j["actions"] if a["name"] == name)


def tables(j, pipeline="ingress"):
    p = next(p for p in j["pipelines"] if p["name"] == pipeline)
    return {t["name"]: t for t in p["tables"]}


def ops(a):
    return [p["op"] for p in a["primitives"]]


def test_if_inside_action_becomes_jumps(build):
    j, _ = build(ingress="""
        action a() {
            if (hdr.ipv4.ttl == 0) { meta.m8 = 1; } else { meta.m8 = 2; meta.m16 = 3; }
            meta.m32 = 4;
        }
        table t { key = { hdr.ipv4.dstAddr: exact; } actions = { a; } }""",
                 apply="t.apply();")
    a = action(j, "I.a")
    assert ops(a) == ["_jump_if_zero", "assign", "_jump", "assign", "assign", "assign"]
    assert a["primitives"][0]["parameters"][1] == {"type": "hexstr", "value": "0x03"}
    assert a["primitives"][2]["parameters"][0] == {"type": "hexstr", "value": "0x05"}
    assert a["primitives"][0]["parameters"][0]["value"]["value"]["op"] == "b2d"


def test_hit_miss_and_action_run(build):
    j, _ = build(ingress="""
        action a() { meta.m8 = 1; }
        action b() { meta.m8 = 2; }
        table t1 { key = { hdr.ipv4.dstAddr: exact; } actions = { a; b; } }
        table t2 { key = { meta.m8: exact; } actions = { a; b; NoAction; } }
        table t3 { key = { meta.m16: exact; } actions = { a; } }""",
                 apply="""
        if (!t1.apply().hit) { meta.m16 = 7; }
        switch (t2.apply().action_run) {
            a: { t3.apply(); }
            default: { meta.m32 = 9; }
        }""")
    t = tables(j)
    after = [n for n in t if n.startswith("tbl_act")]
    assert t["I.t1"]["next_tables"] == {"__MISS__": after[0], "__HIT__": "I.t2"}
    t2 = t["I.t2"]["next_tables"]
    assert t2["I.a"] == "I.t3" and t2["I.b"] == after[1] and t2["NoAction"] == after[1]
    assert t["I.t3"]["base_default_next"] is None


def test_switch_fallthrough_labels(build):
    j, _ = build(ingress="""
        action a() { } action b() { } action c() { }
        table t { key = { meta.m8: exact; } actions = { a; b; c; } }""",
                 apply="switch (t.apply().action_run) { a: b: { meta.m8 = 1; } }")
    nt = tables(j)["I.t"]["next_tables"]
    assert nt["I.a"] == nt["I.b"] and nt["I.a"].startswith("tbl_act") and nt["I.c"] is None


def test_arithmetic_lowering(build):
    j, _ = build(apply="""
        meta.m8 = meta.m8 |+| 8w200;
        meta.m16 = hdr.ipv4.dstAddr[31:16];
        meta.m32 = meta.m16 ++ meta.m8 ++ 8w1;
        meta.m8 = (bit<8>) hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr[7:0] = 8w5;
        meta.m16 = (bit<16>) ((int<16>) meta.m16 - 16s1);
        meta.m32 = meta.m32 << 3;""")
    prims = [p for a in j["actions"] for p in a["primitives"]]
    sat = prims[0]["parameters"][1]["value"]["value"]
    assert sat["op"] == "usat_cast" and sat["right"] == {"type": "hexstr", "value": "0x08"}
    sl = prims[1]["parameters"][1]["value"]["value"]
    assert sl["op"] == "&" and sl["right"]["value"] == "0xffff" and sl["left"]["value"]["op"] == ">>"
    assert prims[3]["parameters"][1]["value"]["value"]["right"]["value"] == "0xff"
    slice_assign = prims[4]["parameters"]
    assert slice_assign[0]["value"] == ["ipv4", "dstAddr"]
    assert slice_assign[1]["value"]["value"]["op"] == "|"
    assert "two_comp_mod" in str(prims[5])


def test_constant_folding(build):
    j, _ = build(decls="const bit<32> K = (1 << 4) * 3 + 2;", apply="meta.m32 = K;")
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert prims[0]["parameters"][1] == {"type": "hexstr", "value": "0x00000032"}


def test_header_stacks_and_unions(build):
    states = """
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x1234: parse_hop; default: accept; }
        }
        state parse_hop {
            pkt.extract(hdr.hops.next);
            transition select(hdr.hops.last.bos) { 1: accept; default: parse_hop; }
        }"""
    j, _ = build(states=states, apply="""
        hdr.hops.pop_front(1);
        hdr.hops.push_front(2);
        hdr.hops[0].setValid();
        meta.m32 = hdr.hops.lastIndex;
        if (hdr.ab.isValid()) { hdr.ab.a.setInvalid(); }""",
                 deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.hops); pkt.emit(hdr.ab);")
    (stack,) = j["header_stacks"]
    assert stack["name"] == "hops" and stack["size"] == 4 and len(stack["header_ids"]) == 4
    hop = j["parsers"][0]["parse_states"][1]
    assert hop["parser_ops"] == [{"op": "extract", "parameters": [{"type": "stack",
                                                                   "value": "hops"}]}]
    assert hop["transition_key"] == [{"type": "stack_field", "value": ["hops", "bos"]}]
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert [p["op"] for p in prims[:4]] == ["pop", "push", "add_header", "assign"]
    assert prims[3]["parameters"][1]["value"]["value"]["op"] == "last_stack_index"
    (u,) = j["header_unions"]
    assert u["name"] == "ab" and j["header_union_types"][0]["headers"] == [["a", "a_t"],
                                                                           ["b", "b_t"]]
    cond = next(p for p in j["pipelines"] if p["name"] == "ingress")["conditionals"][0]
    assert cond["expression"]["value"]["op"] == "valid_union"
    assert j["deparsers"][0]["order"] == ["ethernet", "hops[0]", "hops[1]", "hops[2]",
                                          "hops[3]", "ab.a", "ab.b"]


def test_run_time_stack_indices(build):
    # apply blocks: an if-chain over the constant indices (p4c's HSIndexSimplifier), the
    # index expression computed once; actions keep BMv2's run-time dereference
    j, _ = build(ingress="action a() { hdr.hops[meta.m8].port = 1; }",
                 apply="hdr.hops[meta.m8 + 1].bos = 1; a();")
    conds = next(p for p in j["pipelines"] if p["name"] == "ingress")["conditionals"]
    tests = [c["expression"]["value"] for c in conds]
    assert [t["op"] for t in tests] == ["=="] * 4
    assert [t["left"]["value"] for t in tests] == [["scalars", "hsiVar$0"]] * 4
    assert [t["right"]["value"] for t in tests] == ["0x00", "0x01", "0x02", "0x03"]
    written = [p["parameters"][0]["value"] for a in j["actions"] for p in a["primitives"]
               if p["op"] == "assign" and p["parameters"][0]["type"] == "field"]
    assert all([f"hops[{i}]", "bos"] in written for i in range(4))
    (assign,) = action(j, "I.a")["primitives"]
    target = assign["parameters"][0]["value"]["value"]
    assert target["op"] == "access_field"
    assert target["left"]["value"]["op"] == "dereference_header_stack"


def test_select_masks_ranges_tuples_value_sets_and_lookahead(build):
    states = """
        value_set<bit<16>>(4) pvs;
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType, pkt.lookahead<bit<8>>()) {
                (0x0800 &&& 0xff00, _): parse_ipv4;
                (0x0a00 .. 0x0a02, 0x45): accept;
                (_, 8w1): reject;
                default: accept;
            }
        }
        state parse_ipv4 {
            pkt.extract(hdr.ipv4);
            verify(hdr.ipv4.version == 4, error.HeaderTooShort);
            transition select(hdr.ethernet.etherType) { pvs: accept; default: accept; }
        }"""
    j, info = build(states=states)
    start, ipv4 = j["parsers"][0]["parse_states"]
    assert start["transition_key"][1] == {"type": "lookahead", "value": [0, 8]}
    tr = start["transitions"]
    assert tr[0] == {"type": "hexstr", "value": "0x080000", "mask": "0xff0000",
                     "next_state": "parse_ipv4"}
    assert [t["value"] for t in tr[1:3]] == ["0x0a0045", "0x0a0245"]
    assert tr[1]["mask"] == "0xfffeff" and tr[2]["mask"] is None
    assert tr[3] == {"type": "hexstr", "value": "0x000001", "mask": "0x0000ff",
                     "next_state": None}
    assert tr[-1]["type"] == "default"
    assert ipv4["parser_ops"][1]["op"] == "verify"
    assert ipv4["parser_ops"][1]["parameters"][1] == {"type": "hexstr", "value": "0x00000004"}
    assert ipv4["transitions"][0] == {"type": "parse_vset", "value": "P.pvs", "mask": None,
                                      "next_state": None}
    assert j["parse_vsets"][0]["compressed_bitwidth"] == 16
    assert info.value_sets[0].preamble.name == "P.pvs" and info.value_sets[0].size == 4
    assert ["HeaderTooShort", 4] in j["errors"]


def test_struct_lookahead_reads_each_field_and_a_discarded_lookahead_is_set(build):
    """lookahead<S>() of a struct reads its fields at their offsets (p4c's ExpandLookahead);
    a lookahead whose value is discarded still reads the packet (a set of a temporary), so a
    too-short packet gets PacketTooShort as in BMv2."""
    decls = "struct in_t { bit<4> x; bit<4> y; } struct la_t { bit<8> a; in_t b; }"
    states = """
        state start {
            la_t v = pkt.lookahead<la_t>();
            meta.m8 = v.a;
            meta.m16 = (bit<16>) v.b.y;
            pkt.lookahead<bit<24>>();
            transition accept;
        }"""
    j, _ = build(decls=decls, states=states)
    sets = [op["parameters"][1] for op in j["parsers"][0]["parse_states"][0]["parser_ops"]
            if op["parameters"][1].get("type") == "lookahead"]
    assert {"type": "lookahead", "value": [0, 8]} in sets          # v.a
    assert {"type": "lookahead", "value": [12, 4]} in sets         # v.b.y
    assert sets[-1] == {"type": "lookahead", "value": [0, 24]}     # the discarded one


def test_static_assert_is_checked_while_compiling_and_emits_nothing(build):
    """core.p4's static_assert (P4-16 1.2.3+): true conditions compile to nothing, at top
    level and as a statement (a false one is in corpus/negative/static_assert_false.p4)."""
    j, _ = build(decls="const bool ok = static_assert(8w3 < 8w4, \"ordered\");",
                 apply="static_assert(true); meta.m8 = 1;")
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert [p["op"] for p in prims] == ["assign"]


def test_enums_serializable_enums_and_errors(build):
    j, _ = build(decls="""
        enum Color { RED, GREEN }
        enum bit<8> Proto { TCP = 6, UDP = 17 }""",
                 ingress="Color c;",
                 apply="""
        c = Color.GREEN;
        if (hdr.ipv4.protocol == (bit<8>) Proto.UDP && c == Color.GREEN) { meta.m8 = 1; }
        if (sm.parser_error != error.NoError) { meta.m8 = 2; }""")
    assert {"name": "Color", "entries": [["RED", 0], ["GREEN", 1]]} in j["enums"]
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert prims[0]["parameters"][1] == {"type": "hexstr", "value": "0x00000001"}
    conds = next(p for p in j["pipelines"] if p["name"] == "ingress")["conditionals"]
    assert "0x11" in str(conds[0]["expression"])


def test_tables_const_entries_priorities_and_p4info(build):
    j, info = build(ingress="""
        action set(bit<8> v) { meta.m8 = v; }
        @name("classify") @id(0x0200abcd)
        table t {
            key = { hdr.ipv4.dscp: ternary @name("dscp"); hdr.ipv4.totalLen: range;
                    meta.m8: optional; }
            actions = { set; @defaultonly NoAction; }
            const entries = {
                (6w46 &&& 6w63, 0 .. 1500, _): set(1);
                priority=100: (_, _, 8w3): set(2);
            }
            const default_action = NoAction();
            size = 64;
        }""", apply="t.apply();")
    t = tables(j)["I.classify"]
    assert t["match_type"] == "range" and t["max_size"] == 64
    assert t["key"][2]["match_type"] == "ternary"
    e1, e2 = t["entries"]
    assert e1["match_key"][0] == {"match_type": "ternary", "key": "0x2e", "mask": "0x3f"}
    assert e1["match_key"][1] == {"match_type": "range", "start": "0x0000", "end": "0x05dc"}
    assert e2["priority"] < e1["priority"]
    assert t["default_entry"]["action_const"] is True
    (pt,) = info.tables
    assert pt.preamble.id == 0x0200ABCD and pt.is_const_table
    assert [m.match_type for m in pt.match_fields] == [
        p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.RANGE, p4info_pb2.MatchField.OPTIONAL]
    assert pt.match_fields[0].name == "dscp"
    noaction = next(a for a in info.actions if a.preamble.name == "NoAction")
    assert pt.const_default_action_id == noaction.preamble.id
    assert [r.scope for r in pt.action_refs] == [p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
                                                 p4info_pb2.ActionRef.DEFAULT_ONLY]


def test_direct_and_indirect_counters_and_meters(build):
    j, info = build(meta="bit<8> m8; bit<16> m16; bit<2> color;", ingress="""
        direct_counter(CounterType.packets_and_bytes) dc;
        direct_meter<bit<2>>(MeterType.bytes) dm;
        meter(16, MeterType.packets) m;
        counter(8, CounterType.bytes) c;
        action a() { dm.read(meta.color); }
        action b() { m.execute_meter(32w3, meta.m16); c.count(32w1); }
        table t { key = { meta.m8: exact; } actions = { a; } counters = dc; meters = dm; }
        table u { key = { meta.m8: exact; } actions = { b; } }""",
                    apply="t.apply(); u.apply();")
    t = tables(j)["I.t"]
    assert t["with_counters"] is True and t["direct_meters"] == "I.dm"
    dc = next(c for c in j["counter_arrays"] if c["name"] == "I.dc")
    assert dc["is_direct"] and dc["binding"] == "I.t"
    assert ops(action(j, "I.b")) == ["execute_meter", "count"]
    assert {d.preamble.name for d in info.direct_counters} == {"I.dc"}
    (dmi,) = info.direct_meters
    assert dmi.spec.unit == p4info_pb2.MeterSpec.BYTES
    (ti,) = [x for x in info.tables if x.preamble.name == "I.t"]
    assert set(ti.direct_resource_ids) == {info.direct_counters[0].preamble.id,
                                           dmi.preamble.id}
    assert info.meters[0].size == 16 and info.counters[0].spec.unit == p4info_pb2.CounterSpec.BYTES


def test_v1model_externs(build):
    j, info = build(decls="struct learn_t { bit<48> src; bit<9> port; } const bit<8> FL = 1;",
                    meta="bit<8> m8; bit<16> m16; bit<32> m32; @field_list(FL) bit<9> keep;",
                    apply="""
        hash(meta.m16, HashAlgorithm.crc16, 16w0, { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }, 16w64);
        random(meta.m32, 0, 100);
        digest<learn_t>(1, { hdr.ethernet.src, sm.ingress_port });
        clone(CloneType.I2E, 5);
        clone_preserving_field_list(CloneType.I2E, 6, 1);
        resubmit_preserving_field_list(1);
        recirculate_preserving_field_list(1);
        truncate(64);
        log_msg("ttl={}", { hdr.ipv4.ttl });
        assert(hdr.ipv4.ttl > 0);
        assume(hdr.ipv4.ttl > 0);
        mark_to_drop(sm);""")
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert [p["op"] for p in prims] == [
        "modify_field_with_hash_based_offset", "modify_field_rng_uniform", "generate_digest",
        "clone_ingress_pkt_to_egress", "clone_ingress_pkt_to_egress", "resubmit",
        "recirculate", "truncate", "log_msg", "assert", "assume", "mark_to_drop"]
    calc = next(c for c in j["calculations"] if c["name"] == prims[0]["parameters"][2]["value"])
    assert calc["algo"] == "crc16" and len(calc["input"]) == 2
    (ll,) = j["learn_lists"]
    assert ll["name"] == "learn_t" and len(ll["elements"]) == 2
    (fl,) = j["field_lists"]
    assert fl["elements"] == [{"type": "field", "value": ["scalars", "metadata.keep"]}]
    assert prims[8]["parameters"][0] == {"type": "string", "value": "ttl={}"}
    assert info.digests[0].preamble.name == "learn_t"


def test_controller_header_and_exit(build):
    j, info = build(decls="""
        @controller_header("packet_in") header packet_in_t { bit<9> ingress_port; bit<7> pad; }
        @controller_header("packet_out") header packet_out_t { bit<9> egress_port; bit<7> pad; }""",
                    headers="ethernet_t ethernet; ipv4_t ipv4; packet_in_t pin; packet_out_t pout;",
                    apply="if (hdr.pout.isValid()) { sm.egress_spec = hdr.pout.egress_port; exit; }"
                          " meta.m8 = 1;")
    names = [(c.preamble.name, [(m.name, m.bitwidth) for m in c.metadata])
             for c in info.controller_packet_metadata]
    assert names == [("packet_in", [("ingress_port", 9), ("pad", 7)]),
                     ("packet_out", [("egress_port", 9), ("pad", 7)])]
    t = tables(j)
    exit_tables = [n for n in t if "exit" in ops(action(j, t[n]["actions"][0]))]
    assert len(exit_tables) == 1 and t[exit_tables[0]]["base_default_next"] is None


def test_functions_and_nested_actions_are_inlined(build):
    j, _ = build(decls="""
        bit<8> dec(in bit<8> x) { return x - 1; }""",
                 ingress="""
        action inner(bit<8> v) { meta.m8 = v; }
        action outer(bit<8> w) { inner(w); hdr.ipv4.ttl = dec(hdr.ipv4.ttl); }
        table t { key = { meta.m8: exact; } actions = { outer; } }""",
                 apply="t.apply();")
    a = action(j, "I.outer")
    assert ops(a) == ["assign", "assign", "assign"]    # dec's final return: no jump
    assert a["primitives"][0]["parameters"][1] == {"type": "runtime_data", "value": 0}


def test_locals_become_scalars(build):
    j, _ = build(apply="bit<32> tmp = hdr.ipv4.srcAddr; bool flag = tmp == 0; "
                       "if (flag) { meta.m8 = 1; }")
    scalars = j["header_types"][0]
    assert scalars["name"] == "scalars_0"
    names = [f[0] for f in scalars["fields"]]
    assert "tmp" in names and "flag" in names and "metadata.m8" in names
    assert sum(f[1] for f in scalars["fields"]) % 8 == 0


def test_control_variables_with_initializers_are_set_first(build):
    j, _ = build(ingress="bit<8> base = 8w7;", apply="meta.m8 = base + 1;")
    (act,) = [a for a in j["actions"] if a["name"].startswith("act")]
    assert [p["parameters"][0]["value"][1] for p in act["primitives"]] == ["base",
                                                                          "metadata.m8"]


def test_new_types_are_named_in_the_p4info(build):
    _, info = build(decls="type bit<9> Port_t; typedef bit<8> Plain_t;",
                    meta="bit<8> m8; Port_t port;",
                    ingress="""
        action to(Port_t p, Plain_t x) { sm.egress_spec = (bit<9>) p; meta.m8 = x; }
        table t { key = { meta.port: exact; } actions = { to; } }""", apply="t.apply();")
    (t,) = info.tables
    assert t.match_fields[0].type_name.name == "Port_t"
    to = next(a for a in info.actions if a.preamble.name == "I.to")
    assert [p.type_name.name for p in to.params] == ["Port_t", ""]
    assert info.type_info.new_types["Port_t"].original_type.bitstring.bit.bitwidth == 9
    assert "Plain_t" not in info.type_info.new_types


def test_action_profiles_and_selectors_as_p4c_lowers_them(build):
    j, info = build(ingress="""
        action fwd(bit<9> port) { sm.egress_spec = port; }
        @max_group_size(16)
        action_selector(HashAlgorithm.crc16, 32w128, 32w14) ecmp;
        action_profile(32w64) nexthops;
        table route {
            key = { hdr.ipv4.dstAddr: lpm; hdr.ipv4.srcAddr: selector;
                    hdr.ipv4.protocol: selector; }
            actions = { fwd; NoAction; }
            implementation = ecmp;
        }
        table by_port { key = { sm.ingress_port: exact; } actions = { fwd; }
                        implementation = nexthops; }""",
                    apply="route.apply(); by_port.apply();")
    pipeline = j["pipelines"][0]
    route, by_port = (tables(j)[n] for n in ("I.route", "I.by_port"))
    assert (route["type"], route["action_profile"]) == ("indirect_ws", "I.ecmp")
    assert [k["target"] for k in route["key"]] == [["ipv4", "dstAddr"]]
    assert (by_port["type"], by_port["action_profile"]) == ("indirect", "I.nexthops")
    assert "default_entry" not in route
    ecmp, nexthops = pipeline["action_profiles"]
    assert ecmp["max_size"] == 128 and ecmp["selector"] == {
        "algo": "crc16", "input": [{"type": "field", "value": ["ipv4", "srcAddr"]},
                                   {"type": "field", "value": ["ipv4", "protocol"]}]}
    assert nexthops["max_size"] == 64 and "selector" not in nexthops
    profiles = {p.preamble.name: p for p in info.action_profiles}
    sel, prof = profiles["I.ecmp"], profiles["I.nexthops"]
    assert (sel.with_selector, sel.size, sel.max_group_size) == (True, 128, 16)
    assert (prof.with_selector, prof.size) == (False, 64)
    assert sel.preamble.id >> 24 == p4info_pb2.P4Ids.ACTION_PROFILE
    p4_tables = {t.preamble.name: t for t in info.tables}
    assert p4_tables["I.route"].implementation_id == sel.preamble.id
    assert list(sel.table_ids) == [p4_tables["I.route"].preamble.id]
    assert [m.name for m in p4_tables["I.route"].match_fields] == ["hdr.ipv4.dstAddr"]


def test_expression_keys_are_named_by_their_text(build):
    # frontend-gaps.md (SERVER): two unannotated expression keys were both "binary"
    _, info = build(ingress="""
        table t { key = { hdr.ipv4.ttl ^ 8w0xff: exact; hdr.ipv4.dstAddr + 1: lpm;
                          (bit<8>) hdr.ipv4.protocol: exact; }
                  actions = { NoAction; } }""", apply="t.apply();")
    assert [m.name for m in info.tables[0].match_fields] == [
        "hdr.ipv4.ttl ^ 8w255", "hdr.ipv4.dstAddr + 1", "(bit<8>)hdr.ipv4.protocol"]


def test_backend_entry_point_takes_extern_handlers(tmp_path):
    # driver.compile_ast(program, name, backend): the entry after parsing that other
    # back-ends (the TNA lowering) use, with `fn_NAME` handlers for extern functions
    from softswitch_p4c.compiler import Compiler
    from softswitch_p4c.driver import compile_ast
    from softswitch_p4c.parser import parse
    from softswitch_p4c.preprocess import preprocess
    from softswitch_p4c.values import as_data

    class Backend(Compiler):
        def fn_sample(self, call, args, ctx, dest):
            self.emit(ctx, "sample_prim", [self.dst_json(args["avg"]), as_data(args["x"])],
                      call.loc)

    path = tmp_path / "prog.p4"
    path.write_text(program(decls="extern void sample(inout bit<8> avg, in bit<8> x);",
                            apply="sample(meta.m8, hdr.ipv4.ttl);"))
    j, info = compile_ast(parse(preprocess(str(path), [], []), str(path)), str(path), Backend)
    (prim,) = [p for a in j["actions"] for p in a["primitives"] if p["op"] == "sample_prim"]
    assert prim["parameters"] == [{"type": "field", "value": ["scalars", "metadata.m8"]},
                                  {"type": "field", "value": ["ipv4", "ttl"]}]
    assert info.pkg_info.arch == "v1model"
