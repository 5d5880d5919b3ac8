"""Issue 18: P4 semantics the front-end got wrong or refused, each pinned by running the
compiled program on the engine (`process_packet`) and checking the packet P4 says.

Every test here failed before its fix (wrong packet, compile error, or a JSON the engine
refused)."""
import json

import pytest
from scapy.all import IP, Ether

from softswitch_p4c.driver import compile_source
from softswitch_p4c.errors import CompileError
from softswitch_p4c.validate import problems
from test_frontend_engine import only, packet, switch_for
from test_frontend_lowering import program


def ident(sw, **kw):
    """The IPv4 identification field of the one packet the switch sends."""
    return only(sw.process_packet(0, packet(**kw)))[1][IP].id


def test_priority_annotation_smallest_wins_as_in_p4c(tmp_path):
    # p4c passes @priority(N) to BMv2 unchanged, and BMv2 lets the smallest value win
    sw = switch_for(tmp_path, ingress="""
        action set(bit<16> v) { hdr.ipv4.identification = v; }
        table t {
            key = { hdr.ipv4.ttl: ternary; }
            actions = { set; }
            const entries = {
                @priority(2) 8w64 &&& 8w0xff: set(2);
                @priority(1) 8w0 &&& 8w0: set(1);
            }
        }""", apply="sm.egress_spec = 1; t.apply();")
    assert ident(sw, ttl=64) == 1


def test_inout_arguments_are_copied_in_and_out(tmp_path):
    # f(x, x): both parameters start from x; x ends with the last copy-out (6 -> 12)
    sw = switch_for(tmp_path, decls="""
        void twice(inout bit<16> a, inout bit<16> b) { a = a + 1; b = b * 2; }""",
                    apply="sm.egress_spec = 1;"
                          " twice(hdr.ipv4.identification, hdr.ipv4.identification);")
    assert ident(sw, ident=6) == 0x0C


def test_an_in_argument_is_copied_when_a_switch_case_or_a_loop_writes_its_storage(tmp_path):
    # the action writes hdr.ipv4.ttl by its own name inside a switch case (or a loop the
    # emitter unrolls), then reads x: x is the ttl copied in (64), not the 1 written; the
    # writes there were not seen, so x was bound to the field itself
    for body in ("switch (hdr.ipv4.ttl) { default: { hdr.ipv4.ttl = 1; hdr.ipv4.protocol = x; } }",
                 "for (bit<8> i = 0; i < n; i = i + 1) { hdr.ipv4.ttl = 1; hdr.ipv4.protocol = x; }"):
        sw = switch_for(tmp_path, ingress=f"action a(in bit<8> x, bit<8> n) {{ {body} }}",
                        apply="sm.egress_spec = 1; a(hdr.ipv4.ttl, 1);")
        p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
        assert (p.ttl, p.proto) == (1, 64)


def test_inout_argument_is_not_the_storage_it_came_from(tmp_path):
    # the action writes the field by its own name; the parameter keeps the copied-in value
    sw = switch_for(tmp_path, ingress="""
        action bump(inout bit<16> x) { hdr.ipv4.identification = 1; x = x + 2; }""",
                    apply="sm.egress_spec = 1; bump(hdr.ipv4.identification);")
    assert ident(sw, ident=6) == 8


def test_in_argument_is_copied_before_an_out_argument_writes_the_same_storage(tmp_path):
    sw = switch_for(tmp_path, decls="""
        void put(out bit<16> o, in bit<16> i) { o = 5; o = o + i; }""",
                    apply="sm.egress_spec = 1;"
                          " put(hdr.ipv4.identification, hdr.ipv4.identification);")
    assert ident(sw, ident=6) == 11


def test_comparison_folds_after_the_literal_takes_the_other_operands_type(tmp_path):
    # -1 becomes 8w255 before comparing (P4-16 8.9.2): both conditions hold
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        if (8w255 == -1) { hdr.ipv4.identification = 1; }
        if (hdr.ipv4.ttl == -1) { hdr.ipv4.identification = hdr.ipv4.identification + 2; }""")
    assert ident(sw, ident=0, ttl=255) == 3


def test_and_or_skip_the_right_operand_when_the_left_decides(tmp_path):
    # bump() has a side effect; P4 evaluates && / || left to right and stops early
    sw = switch_for(tmp_path, decls="""
        bit<16> bump(inout bit<16> x) { x = x + 1; return x; }""", ingress="""
        action check() {
            if (hdr.ipv4.ttl == 0 && bump(hdr.ipv4.identification) == 5) { hdr.ipv4.protocol = 1; }
            if (hdr.ipv4.ttl != 0 || bump(hdr.ipv4.identification) == 5) { hdr.ipv4.protocol = 2; }
            if (hdr.ipv4.ttl != 0 && bump(hdr.ipv4.identification) == 7) { hdr.ipv4.protocol = 3; }
        }""", apply="sm.egress_spec = 1; check();")
    p = only(sw.process_packet(0, packet(ident=6, ttl=64)))[1]
    assert p[IP].id == 7 and p[IP].proto == 3


def test_table_hit_inside_a_compound_condition(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action mark(bit<16> v) { hdr.ipv4.identification = v; }
        table t { key = { hdr.ipv4.ttl: exact; } actions = { mark; NoAction; }
                  default_action = NoAction(); }
        table never { actions = { mark; } default_action = mark(99); }""", apply="""
        sm.egress_spec = 1;
        if (hdr.ipv4.ttl == 0 && never.apply().hit) { hdr.ipv4.protocol = 9; }
        if (hdr.ipv4.ttl > 1 && t.apply().hit || hdr.ipv4.ttl == 1) { hdr.ipv4.protocol = 1; }
        else { hdr.ipv4.protocol = 2; }""")
    sw.table_add("I.t", [("exact", bytes([64]))], "I.mark", [(5).to_bytes(2, "big")])
    hit = only(sw.process_packet(0, packet(ident=0, ttl=64)))[1][IP]
    miss = only(sw.process_packet(0, packet(ident=0, ttl=63)))[1][IP]
    assert (hit.id, hit.proto) == (5, 1)
    assert (miss.id, miss.proto) == (0, 2)


def test_table_hit_as_a_value(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        table t { key = { hdr.ipv4.ttl: exact; } actions = { NoAction; } }""", apply="""
        sm.egress_spec = 1;
        bool seen = t.apply().hit;
        if (!seen) { hdr.ipv4.identification = 2; } else { hdr.ipv4.identification = 1; }""")
    sw.table_add("I.t", [("exact", bytes([64]))], "NoAction", [])
    assert ident(sw, ttl=64) == 1 and ident(sw, ttl=63) == 2


def test_function_returning_a_header(tmp_path):
    sw = switch_for(tmp_path, decls="""
        ipv4_t older(in ipv4_t h) { ipv4_t r = h; r.ttl = r.ttl - 10; return r; }""",
                    apply="sm.egress_spec = 1; hdr.ipv4 = older(hdr.ipv4);")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 54


def test_header_and_struct_equality(tmp_path):
    # equal when both invalid, or both valid with equal fields (P4-16 8.17)
    sw = switch_for(tmp_path, headers="ethernet_t ethernet; ipv4_t ipv4; ipv4_t copy;", apply="""
        sm.egress_spec = 1;
        if (hdr.copy == hdr.ipv4) { hdr.ipv4.identification = 1; }
        hdr.copy = hdr.ipv4;
        if (hdr.copy == hdr.ipv4) { hdr.ipv4.identification = hdr.ipv4.identification + 2; }
        hdr.copy.ttl = 1;
        if (hdr.copy != hdr.ipv4) { hdr.ipv4.identification = hdr.ipv4.identification + 4; }
        hdr.copy.setInvalid();""")
    assert ident(sw, ident=0) == 6


def test_identical_typedef_of_a_v1model_type(tmp_path):
    sw = switch_for(tmp_path, decls="typedef bit<9> PortId_t;",
                    apply="PortId_t p = 3; sm.egress_spec = p;")
    assert only(sw.process_packet(0, packet()))[0] == 3


def test_compound_assignment(tmp_path):
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        hdr.ipv4.identification += 3; hdr.ipv4.identification <<= 2;
        hdr.ipv4.identification >>= 1; hdr.ipv4.identification ^= 1;
        hdr.ipv4.ttl |-|= 100; hdr.ipv4.protocol |+|= 250;""")
    p = only(sw.process_packet(0, packet(ident=5, ttl=64)))[1][IP]
    assert (p.id, p.ttl, p.proto) == (((5 + 3) << 2 >> 1) ^ 1, 0, 255)


def test_for_loops_with_constant_bounds_are_unrolled(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action sum() {
            bit<16> s = 0;
            for (bit<16> i = 1; i <= 4; i += 1) { s = s + i; }
            hdr.ipv4.identification = s;
        }""", apply="""
        sm.egress_spec = 1; sum();
        for (bit<8> k in 1 .. 3) { hdr.ipv4.ttl = hdr.ipv4.ttl - k; }""")
    p = only(sw.process_packet(0, packet(ident=0, ttl=64)))[1][IP]
    assert (p.id, p.ttl) == (10, 58)


def test_control_applied_twice_with_different_arguments(tmp_path):
    sw = switch_for(tmp_path, controls="""
        control AddOne(inout bit<8> v) {
            action inc() { v = v + 1; }
            apply { inc(); }
        }""", ingress="AddOne() add;", apply="""
        sm.egress_spec = 1; add.apply(hdr.ipv4.ttl); add.apply(hdr.ipv4.protocol);""")
    p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
    assert (p.ttl, p.proto) == (65, 18)          # UDP (17) + 1


def test_control_constructor_parameters(tmp_path):
    sw = switch_for(tmp_path, controls="""
        control Add(inout bit<8> v)(bit<8> k) { apply { v = v + k; } }""",
                    ingress="Add(8w3) three; Add(8w10) ten;", apply="""
        sm.egress_spec = 1; three.apply(hdr.ipv4.ttl); ten.apply(hdr.ipv4.protocol);""")
    p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
    assert (p.ttl, p.proto) == (67, 27)


def test_table_hit_inside_a_conditional_expression(tmp_path):
    # from frontend-gaps.md (STF): t is applied only when the outer condition holds
    sw = switch_for(tmp_path, ingress="""
        action mark() { hdr.ipv4.identification = 7; }
        table t { key = { hdr.ipv4.ttl: exact; } actions = { mark; NoAction; }
                  default_action = NoAction(); }""", apply="""
        sm.egress_spec = 1;
        hdr.ipv4.protocol = hdr.ipv4.ttl > 10 ? (t.apply().hit ? 8w5 : 8w6) : 8w9;""")
    for ttl in (64, 9):
        sw.table_add("I.t", [("exact", bytes([ttl]))], "I.mark", [])
    hit = only(sw.process_packet(0, packet(ident=0, ttl=64)))[1][IP]
    skipped = only(sw.process_packet(0, packet(ident=0, ttl=9)))[1][IP]
    assert (hit.proto, hit.id) == (5, 7)
    assert (skipped.proto, skipped.id) == (9, 0)


def test_return_inside_an_applied_sub_control(tmp_path):
    # from frontend-gaps.md (STF): return ends that control's apply, not the pipeline
    sw = switch_for(tmp_path, controls="""
        control Finish(inout bit<8> v) {
            apply { if (v == 0xFF) { return; } v = v + 1; }
        }""", ingress="Finish() finish;", apply="""
        finish.apply(hdr.ipv4.ttl); sm.egress_spec = 1;""")
    assert only(sw.process_packet(0, packet(ttl=255)))[1][IP].ttl == 255
    assert only(sw.process_packet(0, packet(ttl=0)))[1][IP].ttl == 1


def test_tuples_as_values(tmp_path):
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        tuple<bit<8>, bit<16>> pair = { hdr.ipv4.ttl, 16w300 };
        tuple<bit<8>, bit<16>> other;
        other = pair;
        hdr.ipv4.protocol = other[0] + 1;
        hdr.ipv4.identification = pair[1];""")
    p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
    assert (p.proto, p.id) == (65, 300)


def test_action_arguments_bound_in_the_actions_list(tmp_path):
    # x is bound by the table; only `by` is action data (runtime_data, P4Info param)
    sw = switch_for(tmp_path, ingress="""
        action add(inout bit<8> x, bit<8> by) { x = x + by; }
        table t { key = { hdr.ipv4.protocol: exact; } actions = { add(hdr.ipv4.ttl); }
                  default_action = add(hdr.ipv4.ttl, 1); }""", apply="sm.egress_spec = 1; t.apply();")
    sw.table_add("I.t", [("exact", bytes([17]))], "I.add", [bytes([3])])
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 67


def test_sub_parser(tmp_path):
    sw = switch_for(tmp_path, controls="""
        parser IpParser(packet_in pkt, out ipv4_t ip)(bit<8> mark) {
            state start { pkt.extract(ip); transition select(ip.ttl) { 0: reject; default: done; } }
            state done { ip.protocol = mark; transition accept; }
        }""", states="""
        IpParser(8w99) ip_parser;
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 {
            ip_parser.apply(pkt, hdr.ipv4);
            hdr.ipv4.identification = hdr.ipv4.identification + 1;
            transition accept;
        }""", apply="sm.egress_spec = 1;")
    p = only(sw.process_packet(0, packet(ident=4, ttl=64)))[1][IP]
    assert (p.proto, p.id) == (99, 5)


def test_one_action_bound_differently_in_two_tables(tmp_path):
    # from frontend-gaps.md (STF): one BMv2 action per binding; `table t()` accepted
    sw = switch_for(tmp_path, ingress="""
        action setbyte(out bit<8> dst, bit<8> val) { dst = val; }
        table to_ttl() { key = { hdr.ipv4.ttl: exact; }
                         actions = { setbyte(hdr.ipv4.ttl); NoAction; } default_action = NoAction(); }
        table to_proto { key = { hdr.ipv4.protocol: exact; }
                         actions = { setbyte(hdr.ipv4.protocol); NoAction; }
                         default_action = NoAction(); }""",
                    apply="sm.egress_spec = 1; to_ttl.apply(); to_proto.apply();")
    sw.table_add("I.to_ttl", [("exact", bytes([64]))], "I.setbyte", [bytes([0x11])])
    sw.table_add("I.to_proto", [("exact", bytes([17]))], "I.setbyte", [bytes([0x22])])
    p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
    assert (p.ttl, p.proto) == (0x11, 0x22)


def test_break_and_continue_in_unrolled_loops(tmp_path):
    # from frontend-gaps.md (STF): 1 + 3 + 5
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        bit<16> odd = 0;
        for (bit<8> i in 0 .. 9) {
            if (i == 7) { break; }
            if ((i & 1) == 0) { continue; }
            odd += (bit<16>) i;
        }
        hdr.ipv4.identification = odd;""")
    assert ident(sw) == 9


def test_a_choice_of_headers_evaluates_its_destination_once(tmp_path):
    # `x = c ? a : b` on headers assigns only the chosen side; it was rewritten into
    # `if (c) x = a; else x = b;`, evaluating x's index again in each branch, so the
    # call in it ran twice on the path taken (n = 7, not 6)
    sw = switch_for(tmp_path, decls="bit<2> slot(inout bit<8> n) { n = n + 1; return 0; }",
                    ingress="""
        action a() {
            meta.m8 = 5;
            hdr.hops[slot(meta.m8)] = hdr.ipv4.ttl == 0 ? hdr.hops[1] : hdr.hops[2];
            hdr.ipv4.ttl = meta.m8;
        }""", apply="sm.egress_spec = 1; a();")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 6


def test_a_choice_of_headers_initializes_a_local(tmp_path):
    # was refused: "unsupported construct: '?:' on header ethernet_t values"
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        ethernet_t e = hdr.ipv4.ttl == 64 ? hdr.ethernet : hdr.ethernet;
        e.dst = 7;
        hdr.ethernet = e;""")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][Ether].dst == "00:00:00:00:00:07"


def test_a_value_switch_with_only_a_default_body_runs_it(tmp_path):
    # crashed with "AttributeError: 'Block' object has no attribute 'cond'" in an apply
    # block (its if-chain is the default body alone); an action lowered it already
    sw = switch_for(tmp_path, apply="""
        sm.egress_spec = 1;
        switch (hdr.ipv4.ttl) { default: { hdr.ipv4.identification = 7; } }""")
    assert ident(sw) == 7


def test_a_loop_variable_assigned_in_a_switch_case_is_refused_as_in_an_if(tmp_path):
    # the unroller did not look into switch cases: the iteration's constant was then
    # "not assignable" at the assignment instead of the loop's own message
    body = "switch (hdr.ipv4.ttl) { 1: { i = 5; } default: { hdr.ipv4.ttl = i; } }"
    for kw in (dict(apply=f"for (bit<8> i = 0; i < 3; i = i + 1) {{ {body} }}"),
               dict(controls=f"""control S(inout headers hdr)(bit<8> n) {{
                        apply {{ for (bit<8> i = 0; i < n; i = i + 1) {{ {body} }} }} }}""",
                    ingress="S(2) s;", apply="s.apply(hdr);")):
        with pytest.raises(CompileError, match="assignment to loop variable 'i' inside the "
                                               "loop body"):
            compile_source(program(**kw), tmp_path)


def test_varbit_locals_and_equality(tmp_path):
    # from frontend-gaps.md (STF). A varbit local is its own metadata header's field;
    # == on varbits is BMv2's == on the two fields (as p4c writes it).
    kw = dict(decls="header opt_t { varbit<32> data; }",
              headers="ethernet_t ethernet; opt_t a; opt_t b;", states="""
        state start {
            pkt.extract(hdr.ethernet); pkt.extract(hdr.a, 16); pkt.extract(hdr.b, 16);
            transition accept;
        }""", deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.a); pkt.emit(hdr.b);", apply="""
        sm.egress_spec = 1;
        varbit<32> local = hdr.a.data;
        if (hdr.a.data == hdr.b.data) { hdr.ethernet.etherType = 1; }
        if (hdr.a == hdr.b) { hdr.ethernet.etherType = 2; }
        hdr.b.data = local;""")
    j, _ = compile_source(program(**kw), tmp_path)
    conds = [c["expression"]["value"] for c in j["pipelines"][0]["conditionals"]]
    assert conds[0] == {"op": "==", "left": {"type": "field", "value": ["a", "data"]},
                        "right": {"type": "field", "value": ["b", "data"]}}
    assert '"data"' in json.dumps(conds[1])          # the header comparison includes it
    local = next(h for h in j["headers"] if h["header_type"] == "varbit32_t")
    assert local["metadata"] and local["name"] == "local"
    prims = [p for a in j["actions"] for p in a["primitives"]]
    assert {"op": "assign_VL", "parameters": [{"type": "field", "value": ["local", "field"]},
                                              {"type": "field", "value": ["a", "data"]}]} in \
        [{k: p[k] for k in ("op", "parameters")} for p in prims]
    # runs: the local keeps a's bytes and is copied into b
    sw = switch_for(tmp_path, **kw)
    frame = bytes(6) + bytes([0, 0, 0, 0, 0, 2]) + b"\x12\x34" + b"\xaa\xbb\xaa\xcc" + b"x" * 40
    (_, out), = sw.process_packet(0, frame)
    assert out[14:18] == b"\xaa\xbb\xaa\xbb"


def test_table_key_on_a_slice_is_the_slice(tmp_path):
    # p4c computes a slice key into a temporary (SimplifyKey): the key and the P4Info are
    # 5 bits, so a controller's 0x1f matches dstAddr[22:18] == 0x1f
    kw = dict(ingress="""
        action mark() { hdr.ipv4.identification = 1; }
        table t { key = { hdr.ipv4.dstAddr[22:18]: exact; hdr.ipv4.srcAddr & 0xff: ternary; }
                  actions = { mark; NoAction; } default_action = NoAction(); }""",
              apply="sm.egress_spec = 1; t.apply();")
    j, info = compile_source(program(**kw), tmp_path)
    slice_key, masked = info.tables[0].match_fields
    assert (slice_key.name, slice_key.bitwidth) == ("hdr.ipv4.dstAddr[22:18]", 5)
    assert masked.bitwidth == 32                           # a masked field keeps its width
    (t,) = [t for t in j["pipelines"][0]["tables"] if t["name"] == "I.t"]
    assert t["key"][1]["target"] == ["ipv4", "srcAddr"] and t["key"][1]["mask"] == "0x000000ff"
    sw = switch_for(tmp_path, **kw)
    sw.table_add("I.t", [("exact", bytes([0x1f])),
                         ("ternary", (1).to_bytes(4, "big"), (0xff).to_bytes(4, "big"))],
                 "I.mark", [], 1)
    assert ident(sw, ident=0, dst="10.124.0.5") == 1      # bits 22..18 all ones
    assert ident(sw, ident=0, dst="10.128.0.5") == 0


def test_header_union_stack(tmp_path):
    # two options, each an 8-bit or a 16-bit header chosen by its first byte
    kw = dict(decls="""
        header o1_t { bit<8> kind; }
        header o2_t { bit<8> kind; bit<8> data; }
        header_union opt_t { o1_t short; o2_t long; }""",
              headers="ethernet_t ethernet; opt_t[2] opts;", states="""
        state start { pkt.extract(hdr.ethernet); transition opt; }
        state opt {
            transition select(pkt.lookahead<bit<8>>()) { 1: short; 2: long; default: accept; }
        }
        state short { pkt.extract(hdr.opts.next.short); transition opt; }
        state long { pkt.extract(hdr.opts.next.long); transition opt; }""",
              deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.opts);", apply="""
        sm.egress_spec = 1;
        if (hdr.opts[0].short.isValid() && hdr.opts[1].long.isValid()) {
            hdr.opts[1].long.data = hdr.opts[1].long.data + 1;
        }""")
    j, _ = compile_source(program(**kw), tmp_path)
    (stack,) = j["header_union_stacks"]
    assert stack["name"] == "opts" and stack["union_type"] == "opt_t"
    assert problems(j) == []
    sw = switch_for(tmp_path, **kw)
    frame = bytes(12) + b"\x12\x34" + b"\x01" + b"\x02\x07" + b"x" * 40
    (_, out), = sw.process_packet(0, frame)
    assert out[14:17] == b"\x01\x02\x08"


def test_conditional_expression_on_headers_and_function_calls_in_apply_conditions(tmp_path):
    sw = switch_for(tmp_path, headers="ethernet_t ethernet; ipv4_t ipv4; ipv4_t spare;", decls="""
        bit<8> ttl_of(in ipv4_t h) { return h.ttl; }""", apply="""
        sm.egress_spec = 1;
        hdr.spare = hdr.ipv4;
        hdr.spare.identification = 7;
        hdr.ipv4 = hdr.ipv4.ttl > 10 ? hdr.spare : hdr.ipv4;
        hdr.spare.setInvalid();
        if (ttl_of(hdr.ipv4) == 64) { hdr.ipv4.protocol = 1; }""")
    p = only(sw.process_packet(0, packet(ident=0, ttl=64)))[1][IP]
    assert (p.id, p.proto) == (7, 1)
    assert ident(sw, ident=0, ttl=9) == 0


def test_sub_control_arguments_are_copied_in_and_out(tmp_path):
    # both parameters start from ttl; ttl ends with the last copy-out (64 -> 128)
    sw = switch_for(tmp_path, controls="""
        control Twice(inout bit<8> a, inout bit<8> b) { apply { a = a + 1; b = b + b; } }""",
                    ingress="Twice() twice;",
                    apply="sm.egress_spec = 1; twice.apply(hdr.ipv4.ttl, hdr.ipv4.ttl);")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 128


def test_sub_parser_arguments_are_copied_in_and_out(tmp_path):
    # as for controls (P4-16 6.8): both parameters start from ttl, the last copy-out wins
    sw = switch_for(tmp_path, controls="""
        parser Twice(packet_in pkt, inout bit<8> a, inout bit<8> b) {
            state start { a = a + 1; b = b + b; transition accept; }
        }""", states="""
        Twice() twice;
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 { pkt.extract(hdr.ipv4); twice.apply(pkt, hdr.ipv4.ttl, hdr.ipv4.ttl);
                           transition accept; }""", apply="sm.egress_spec = 1;")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 128


def test_run_time_stack_index_with_side_effects_is_evaluated_once(tmp_path):
    # the if-chain over constant indices tests a temporary, not the call again
    sw = switch_for(tmp_path, decls="""
        bit<8> bump(inout bit<8> x) { x = x + 1; return 8w1; }""",
                    apply="sm.egress_spec = 1; hdr.hops[bump(hdr.ipv4.ttl)].bos = 1;")
    assert only(sw.process_packet(0, packet(ttl=64)))[1][IP].ttl == 65


def test_parser_assigns_a_field_of_a_stacks_last_element(tmp_path):
    # `x = s.last.f` in a state: BMv2's parser `set` takes no stack_field source
    sw = switch_for(tmp_path, decls="header byte_t { bit<8> v; }",
                    headers="ethernet_t ethernet; byte_t[2] bytes;", states="""
        state start {
            pkt.extract(hdr.ethernet); pkt.extract(hdr.bytes.next); pkt.extract(hdr.bytes.next);
            meta.m8 = hdr.bytes.last.v;
            transition accept;
        }""", deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.bytes);",
                    apply="sm.egress_spec = 1; hdr.ethernet.etherType = (bit<16>) meta.m8;")
    (_, out), = sw.process_packet(0, bytes(12) + b"\x12\x34\x11\x22" + b"x" * 46)
    assert out[12:16] == b"\x00\x22\x11\x22"


def test_run_time_stack_index_next_to_a_table_apply_in_a_condition(tmp_path):
    # the table is applied once, before the if-chain over the stack's indices
    sw = switch_for(tmp_path, ingress="""
        action mark() { hdr.ipv4.identification = 9; }
        table t { key = { hdr.ipv4.ttl: exact; } actions = { mark; NoAction; }
                  const entries = { 64: mark(); } default_action = NoAction(); }""",
                    apply="""sm.egress_spec = 1;
        if (t.apply().hit && !hdr.hops[meta.m8].isValid()) { hdr.ipv4.protocol = 7; }""")
    p = only(sw.process_packet(0, packet(ttl=64)))[1][IP]
    assert (p.id, p.proto) == (9, 7)


def test_sub_control_applied_to_a_run_time_stack_index(tmp_path):
    # the control (with a table) is inlined once; its argument keeps the run-time index
    sw = switch_for(tmp_path, controls="""
        control Bump(inout hop_t h) {
            action set() { h.port = 5; }
            table t { key = { h.bos: exact; } actions = { set; NoAction; }
                      const entries = { 0: set(); } default_action = NoAction(); }
            apply { t.apply(); }
        }""", ingress="Bump() bump;", states="""
        state start { pkt.extract(hdr.ethernet); pkt.extract(hdr.hops.next);
                      pkt.extract(hdr.hops.next); transition accept; }""",
                    deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.hops);",
                    apply="sm.egress_spec = 1; bump.apply(hdr.hops[hdr.ethernet.etherType]);")
    hops = [sw.process_packet(0, bytes(13) + bytes([i, 0x02, 0x04]) + b"x" * 40)[0][1][14:16]
            for i in (0, 1)]
    assert hops == [b"\x0a\x04", b"\x02\x0a"]


def test_header_union_stack_push_front(tmp_path):
    sw = switch_for(tmp_path, decls="""
        header o1_t { bit<8> kind; }
        header o2_t { bit<8> kind; bit<8> data; }
        header_union opt_t { o1_t short; o2_t long; }""",
                    headers="ethernet_t ethernet; opt_t[2] opts;", states="""
        state start { pkt.extract(hdr.ethernet); pkt.extract(hdr.opts.next.short);
                      transition accept; }""",
                    deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.opts);", apply="""
        sm.egress_spec = 1;
        hdr.opts.push_front(1);
        hdr.opts[0].long.setValid();
        hdr.opts[0].long.kind = 2; hdr.opts[0].long.data = 9;""")
    frame = bytes(12) + b"\x12\x34" + b"\x01" + b"x" * 40
    (_, out), = sw.process_packet(0, frame)
    assert out[14:18] == b"\x02\x09\x01x"


def test_if_inside_a_block_of_a_parser_state(tmp_path):
    sw = switch_for(tmp_path, states="""
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 {
            pkt.extract(hdr.ipv4);
            {
                if (hdr.ipv4.ttl == 64) { hdr.ipv4.identification = 1; }
            }
            transition accept;
        }""", apply="sm.egress_spec = 1;")
    assert ident(sw, ident=0, ttl=64) == 1 and ident(sw, ident=0, ttl=63) == 0
