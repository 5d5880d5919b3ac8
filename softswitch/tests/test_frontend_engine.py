"""The front-end's lowering, executed: compiled programs run on the real engine
(`softswitch_engine.Switch.process_packet`) with Scapy packets."""
import json

import softswitch_engine as se
from scapy.all import IP, UDP, Ether, raw

from softswitch_p4c.driver import compile_source
from test_frontend_lowering import program

def switch_for(tmp_path, **kw):
    j, _ = compile_source(program(**kw), tmp_path)
    sw = se.Switch(ports={})
    sw.load_pipeline(json.dumps(j))
    return sw


def packet(ttl=64, dst="10.0.1.5", ident=1, ethertype=None):
    eth = Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02")
    if ethertype is not None:
        eth.type = ethertype
    return raw(eth / IP(src="10.0.0.1", dst=dst, ttl=ttl, id=ident) / UDP() / (b"x" * 10))


def only(out):
    assert len(out) == 1, out
    port, frame = out[0]
    return port, Ether(frame)


def test_l3_forwarding_runs(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action fwd(bit<48> dmac, bit<9> port) {
            sm.egress_spec = port; hdr.ethernet.src = hdr.ethernet.dst; hdr.ethernet.dst = dmac;
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
        action drop() { mark_to_drop(sm); }
        table lpm { key = { hdr.ipv4.dstAddr: lpm; } actions = { fwd; drop; }
                    default_action = drop(); }""",
                    apply="if (hdr.ipv4.isValid()) { lpm.apply(); } else { drop(); }")
    sw.table_add("I.lpm", [("lpm", bytes([10, 0, 1, 0]), 24)], "I.fwd",
                 [bytes.fromhex("aabbccddeeff"), (3).to_bytes(2, "big")])
    port, p = only(sw.process_packet(1, packet()))
    assert port == 3 and p.dst == "aa:bb:cc:dd:ee:ff" and p.src == "00:00:00:00:00:01"
    assert p[IP].ttl == 63
    assert sw.process_packet(1, packet(dst="10.9.9.9")) == []


def test_arithmetic_and_jumps_compute_what_p4_says(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action calc(bit<8> limit) {
            if (hdr.ipv4.ttl > limit) { hdr.ipv4.ttl = hdr.ipv4.ttl |+| 8w250; }
            else { hdr.ipv4.ttl = hdr.ipv4.ttl |-| 8w100; }
            hdr.ipv4.identification = hdr.ipv4.srcAddr[7:0] ++ hdr.ipv4.srcAddr[31:24];
        }
        table t { key = { hdr.ipv4.isValid(): exact; } actions = { calc; } }""",
                    apply="sm.egress_spec = 2; t.apply(); hdr.ipv4.dstAddr[7:0] = 8w9;"
                          " hdr.ipv4.protocol = (bit<8>) (hdr.ipv4.totalLen - 16w60);")
    sw.table_add("I.t", [("exact", b"\x01")], "I.calc", [bytes([50])])
    _, hi = only(sw.process_packet(0, packet(ttl=60)))
    _, lo = only(sw.process_packet(0, packet(ttl=40)))
    assert hi[IP].ttl == 255 and lo[IP].ttl == 0
    assert hi[IP].id == 0x010A
    assert hi[IP].dst == "10.0.1.9"
    assert hi[IP].proto == (38 - 60) & 0xFF


def test_hit_miss_and_action_run_routing(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action a() { } action b() { }
        table t { key = { hdr.ipv4.dstAddr: exact; } actions = { a; b; NoAction; } }
        table u { key = { hdr.ipv4.dstAddr: exact; } actions = { a; } }""",
                    apply="""
        switch (t.apply().action_run) {
            a: { sm.egress_spec = 1; }
            b: { sm.egress_spec = 2; }
            default: { sm.egress_spec = 3; }
        }
        if (!u.apply().hit) { sm.egress_spec = sm.egress_spec + 4; }""")
    for last, action in ((1, "I.a"), (2, "I.b")):
        sw.table_add("I.t", [("exact", bytes([10, 0, 1, last]))], action, [])
    sw.table_add("I.u", [("exact", bytes([10, 0, 1, 1]))], "I.a", [])
    ports = [only(sw.process_packet(0, packet(dst=f"10.0.1.{i}")))[0] for i in (1, 2, 3)]
    assert ports == [1, 6, 7]


def test_parser_select_masks_and_ranges(tmp_path):
    states = """
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) {
                0x0800: parse_ipv4;
                0x8800 &&& 0xff00: masked;
                0x9000 .. 0x9005: ranged;
                default: accept;
            }
        }
        state masked { meta.m8 = 2; transition accept; }
        state ranged { meta.m8 = 3; transition accept; }
        state parse_ipv4 { pkt.extract(hdr.ipv4); meta.m8 = 1; transition accept; }"""
    sw = switch_for(tmp_path, states=states, apply="sm.egress_spec = (bit<9>) meta.m8;")
    got = {t: only(sw.process_packet(0, packet(ethertype=t)))[0]
           for t in (0x0800, 0x88AB, 0x9000, 0x9005, 0x9006, 0x1234)}
    assert got == {0x0800: 1, 0x88AB: 2, 0x9000: 3, 0x9005: 3, 0x9006: 0, 0x1234: 0}


def test_expression_keys_are_computed_before_the_table(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action to(bit<9> p) { sm.egress_spec = p; }
        table t { key = { hdr.ipv4.ttl + 8w1: exact @name("ttl_plus_one"); } actions = { to; } }""",
                    apply="t.apply();")
    sw.table_add("I.t", [("exact", bytes([65]))], "I.to", [(5).to_bytes(2, "big")])
    assert only(sw.process_packet(0, packet(ttl=64)))[0] == 5
    assert only(sw.process_packet(0, packet(ttl=63)))[0] == 0


def test_action_arguments_are_copied_in(tmp_path):
    sw = switch_for(tmp_path, ingress="""
        action set_port(bit<8> v) { hdr.ipv4.ttl = 0; sm.egress_spec = (bit<9>) v; }""",
                    apply="set_port(hdr.ipv4.ttl);")
    port, p = only(sw.process_packet(0, packet(ttl=9)))
    assert port == 9 and p[IP].ttl == 0


def test_sub_controls_are_inlined(tmp_path):
    sub = """
        control Route(inout headers hdr, inout standard_metadata_t sm, in bit<9> fallback) {
            action to(bit<9> p) { sm.egress_spec = p; }
            table routes { key = { hdr.ipv4.dstAddr: exact; } actions = { to; NoAction; } }
            apply { if (!routes.apply().hit) { sm.egress_spec = fallback; } }
        }"""
    j, info = compile_source(program(controls=sub, ingress="Route() route;",
                                     apply="route.apply(hdr, sm, 9w6);"), tmp_path)
    assert "I.route.routes" in {t.preamble.name for t in info.tables}
    sw = se.Switch(ports={})
    sw.load_pipeline(json.dumps(j))
    sw.table_add("I.route.routes", [("exact", bytes([10, 0, 1, 5]))], "I.route.to",
                 [(2).to_bytes(2, "big")])
    assert only(sw.process_packet(0, packet()))[0] == 2
    assert only(sw.process_packet(0, packet(dst="10.0.1.6")))[0] == 6


def test_switch_on_a_value_becomes_conditionals(tmp_path):
    sw = switch_for(tmp_path, apply="""
        switch (hdr.ipv4.ttl) {
            1: 2: { sm.egress_spec = 1; }
            3: { sm.egress_spec = 3; }
            default: { sm.egress_spec = 9; }
        }""")
    ports = [only(sw.process_packet(0, packet(ttl=t)))[0] for t in (1, 2, 3, 4)]
    assert ports == [1, 1, 3, 9]


def test_tuple_assignment_reads_before_writing(tmp_path):
    sw = switch_for(tmp_path, decls="struct pair_t { bit<8> a; bit<8> b; }",
                    meta="pair_t p;",
                    apply="""meta.p = { hdr.ipv4.ttl, hdr.ipv4.protocol };
                             meta.p = { meta.p.b, meta.p.a };
                             hdr.ipv4.ttl = meta.p.a; hdr.ipv4.protocol = meta.p.b;
                             sm.egress_spec = 1;""")
    _, p = only(sw.process_packet(0, packet(ttl=5)))
    assert (p[IP].ttl, p[IP].proto) == (17, 5)


def test_checksum_updates_match_scapy(tmp_path):
    udp_header = "header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }"
    states = """
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 {
            pkt.extract(hdr.ipv4);
            transition select(hdr.ipv4.protocol) { 17: parse_udp; default: accept; }
        }
        state parse_udp { pkt.extract(hdr.udp); transition accept; }"""
    checksum = """
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);"""
    sw = switch_for(tmp_path, decls=udp_header, states=states, checksum=checksum,
                    headers="ethernet_t ethernet; ipv4_t ipv4; udp_t udp;",
                    apply="sm.egress_spec = 1; hdr.ipv4.ttl = hdr.ipv4.ttl - 1; "
                          "hdr.ipv4.ecn = 3; hdr.udp.dport = 4242;",
                    deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); pkt.emit(hdr.udp);")
    _, p = only(sw.process_packet(0, packet(ttl=30)))
    expected = Ether(raw(p))
    del expected[IP].chksum
    del expected[UDP].chksum
    expected = Ether(raw(expected))
    assert p[IP].tos & 3 == 3 and p[UDP].dport == 4242
    assert p[IP].chksum == expected[IP].chksum
    assert p[UDP].chksum == expected[UDP].chksum


def test_if_in_a_parser_state_splits_the_state(tmp_path):
    states = """
        state start {
            pkt.extract(hdr.ethernet);
            meta.m8 = 1;
            if (hdr.ethernet.etherType == 0x0800) {
                pkt.extract(hdr.ipv4);
                if (hdr.ipv4.ttl < 10) { meta.m8 = 2; } else { meta.m8 = 3; }
            }
            meta.m16 = 7;
            transition accept;
        }"""
    sw = switch_for(tmp_path, states=states,
                    apply="sm.egress_spec = (bit<9>) meta.m8 + (bit<9>) meta.m16;")
    assert only(sw.process_packet(0, packet(ttl=5)))[0] == 9
    assert only(sw.process_packet(0, packet(ttl=50)))[0] == 10
    assert only(sw.process_packet(0, packet(ethertype=0x86DD)))[0] == 8


def test_varbit_ipv4_options_are_extracted_and_emitted(tmp_path):
    states = """
        state start {
            pkt.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
        }
        state parse_ipv4 {
            pkt.extract(hdr.ipv4);
            pkt.extract(hdr.opts, ((bit<32>) hdr.ipv4.ihl - 5) * 32);
            transition accept;
        }"""
    sw = switch_for(tmp_path, decls="header opts_t { varbit<320> options; }", states=states,
                    headers="ethernet_t ethernet; ipv4_t ipv4; opts_t opts;",
                    apply="sm.egress_spec = hdr.opts.isValid() ? 9w1 : 9w2; "
                          "hdr.ipv4.ttl = hdr.ipv4.ttl - 1;",
                    deparse="pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); pkt.emit(hdr.opts);")
    eth = Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02")
    with_opts = raw(eth / IP(dst="10.0.1.5", ttl=9, options=[b"\x01\x01\x01\x00"]) / UDP())
    port, p = only(sw.process_packet(0, with_opts))
    assert port == 1 and p[IP].ihl == 6 and raw(p)[34:38] == b"\x01\x01\x01\x00"
    assert p[IP].ttl == 8 and p[UDP].dport == 53
