"""The engine's Python API (contract in softswitch/README.md): control-plane
calls, error types, and synchronous packet processing, without any ports."""

import json
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

import softswitch_engine as se
from softswitch_p4c.driver import compile_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import iolab  # noqa: E402

ROUTER = iolab.ROUTER_MAC
B_MAC = "02:00:00:00:00:0b"
TABLE = "MyIngress.ipv4_lpm"
FORWARD = "MyIngress.ipv4_forward"


def route(sw, ip="10.77.0.2", plen=32, mac=B_MAC, port=1):
    return sw.table_add(TABLE, [("lpm", iolab.ip_to_bytes(ip), plen)], FORWARD,
                        [iolab.mac_to_bytes(mac), iolab.mac_to_bytes(ROUTER), port.to_bytes(2, "big")])


@pytest.fixture
def sw():
    switch = se.Switch(ports={})
    switch.load_pipeline(iolab.forward_program())
    return switch


def udp_frame(dst="10.77.0.2", ttl=64):
    return bytes(Ether(src="02:00:00:00:00:0a", dst=ROUTER) / IP(src="10.77.0.1", dst=dst, ttl=ttl)
                 / UDP(sport=1000, dport=2000) / b"payload")


def test_forwarded_frame_is_rewritten_with_a_valid_checksum(sw):
    route(sw)
    [(port, out)] = sw.process_packet(0, udp_frame())
    pkt = Ether(out)
    assert port == 1
    assert (pkt.dst, pkt.src) == (B_MAC, ROUTER)
    assert pkt[IP].ttl == 63
    assert pkt[IP].id == 0  # egress stamps enq_qdepth: no queue in synchronous mode
    sent_checksum = pkt[IP].chksum
    del pkt[IP].chksum
    assert Ether(bytes(pkt))[IP].chksum == sent_checksum
    assert bytes(pkt[UDP].payload) == b"payload"


def test_unrouted_and_non_ipv4_frames_are_dropped(sw):
    route(sw)
    assert sw.process_packet(0, udp_frame(dst="10.99.0.1")) == []
    assert sw.process_packet(0, bytes(Ether(dst=ROUTER, type=0x86DD) / (b"x" * 60))) == []


def test_longest_prefix_wins_and_delete_restores(sw):
    route(sw, ip="10.77.0.0", plen=16, port=0)
    h = route(sw, ip="10.77.0.0", plen=24, port=1)
    assert [p for p, _ in sw.process_packet(0, udp_frame())] == [1]
    sw.table_delete(TABLE, h)
    assert [p for p, _ in sw.process_packet(0, udp_frame())] == [0]


def test_default_action_roundtrip(sw):
    sw.table_set_default(TABLE, "NoAction", [])
    assert sw.table_get_default(TABLE) == ("NoAction", [])


def test_control_plane_errors_use_the_documented_types(sw):
    route(sw)
    with pytest.raises(se.DuplicateEntryError):
        route(sw)
    with pytest.raises(KeyError):
        sw.table_add("MyIngress.nope", [("lpm", b"\x0a\x00\x00\x00", 8)], FORWARD, [])
    with pytest.raises(KeyError):
        sw.table_delete(TABLE, 987654)
    with pytest.raises(ValueError):  # key value wider than 32 bits
        sw.table_add(TABLE, [("lpm", b"\x01\x0a\x00\x00\x00", 8)], FORWARD,
                     [b"\x00" * 6, b"\x00" * 6, b"\x00\x01"])
    with pytest.raises(ValueError):
        sw.table_add(TABLE, [("fuzzy", b"\x0a\x00\x00\x00", 8)], FORWARD, [])


def test_failed_calls_change_nothing(sw):
    route(sw)
    with pytest.raises(se.DuplicateEntryError):
        route(sw, port=0)
    assert [p for p, _ in sw.process_packet(0, udp_frame())] == [1]


def test_invalid_pipeline_is_refused_and_the_old_one_kept(sw):
    route(sw)
    with pytest.raises(se.PipelineError):
        sw.load_pipeline('{"header_types": 5}')
    with pytest.raises(se.PipelineError):
        sw.verify_pipeline("not json")
    assert [p for p, _ in sw.process_packet(0, udp_frame())] == [1]


def test_calls_before_a_pipeline_raise_runtime_error():
    sw = se.Switch(ports={})
    with pytest.raises(RuntimeError):
        sw.table_clear(TABLE)
    with pytest.raises(RuntimeError):
        sw.process_packet(0, udp_frame())


def test_load_pipeline_resets_state(sw):
    route(sw)
    sw.load_pipeline(iolab.forward_program())
    assert sw.process_packet(0, udp_frame()) == []


def test_configure_port_validates(sw):
    with pytest.raises(KeyError):
        sw.configure_port(7, rate_bps=1000)
    cpu = se.Switch(ports={}, cpu_port=255)
    cpu.configure_port(255, rate_bps=10_000_000, buffer_packets=10, delay_us=100)
    with pytest.raises(ValueError):
        cpu.configure_port(255, buffer_packets=0)
    with pytest.raises(ValueError):
        cpu.configure_port(255, prio_queues=9)


def test_constructor_rejects_bad_ports():
    with pytest.raises(OSError):
        se.Switch(ports={0: "io-no-such-if"})
    with pytest.raises(ValueError):
        se.Switch(ports={}, cpu_port=511)


def test_packet_out_needs_a_cpu_port(sw):
    with pytest.raises(RuntimeError):
        sw.packet_out(udp_frame())
    assert sw.poll_packet_in(0.01) is None
    assert sw.poll_digest(0.01) is None


def test_optional_key_is_parsed_and_checked_against_the_table(sw):
    # The fixture's table is LPM-only, so p4core refuses an optional element.
    with pytest.raises(ValueError):
        sw.table_add(TABLE, [("optional", None)], FORWARD, [b"\x00" * 6, b"\x00" * 6, b"\x00\x01"])
    with pytest.raises(ValueError):
        sw.table_add(TABLE, [("optional", b"\x0a\x00\x00\x01", 5)], FORWARD, [])


def test_process_packet_emits_copies_in_replication_order():
    """BMv2 queues copies FIFO: multicast replicas on one port in replica
    order, an I2E clone before its original (p4c's STF tests compare per port)."""
    sw = se.Switch(ports={})
    sw.load_pipeline((Path(__file__).resolve().parents[1]
                      / "engine/p4core/tests/programs/pre.json").read_text())
    dst = bytes.fromhex("020000000001")
    sw.table_add("ingress.fwd", [("exact", dst)], "ingress.mcast", [b"\x00\x01"])
    sw.mc_group_set(1, [(1, 10), (1, 20), (2, 30)])
    frame = dst + bytes.fromhex("00000000000a") + b"\x08\x00" + b"\x45" * 30
    copies = sw.process_packet(0, frame)
    # egress writes egress_rid into the source MAC
    assert [(p, int.from_bytes(f[6:12], "big")) for p, f in copies] == [(1, 10), (1, 20), (2, 30)]


VARBIT_EQ_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header len_t { bit<8> bits; bit<8> status; }
header opts_t { varbit<32> data; }
struct meta_t { }
struct headers_t { len_t len; opts_t a; opts_t b; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.len);
        pkt.extract(h.a, (bit<32>) h.len.bits);
        pkt.extract(h.b, (bit<32>) h.len.bits);
        transition accept;
    }
}
control NoCk(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.a.data == h.b.data) { h.len.status = 1; }
        if (h.a.data != h.b.data) { h.len.status = h.len.status | 2; }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.len); pkt.emit(h.a); pkt.emit(h.b); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
"""


@pytest.mark.parametrize("a, b, status", [("aabb", "aabb", 1), ("aabb", "aacc", 2)])
def test_varbit_fields_compare_by_value(tmp_path, a, b, status):
    bmv2_json, _ = compile_source(VARBIT_EQ_P4, tmp_path)
    sw = se.Switch(ports={})
    sw.load_pipeline(json.dumps(bmv2_json))
    [(port, out)] = sw.process_packet(0, bytes.fromhex("1000" + a + b + "ff"))
    assert (port, out) == (1, bytes.fromhex(f"10{status:02x}" + a + b + "ff"))


#: Two action-profile tables: `route` through a selector (hash of the source MAC), `by_type` through members.
ACTION_PROFILES_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control NoCk(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;
    action_profile(32w2) prof;
    table route { key = { h.eth.dst: exact; h.eth.src: selector; } actions = { fwd; } implementation = sel; }
    table by_type { key = { h.eth.ether_type: exact; } actions = { fwd; } implementation = prof; }
    apply { if (h.eth.ether_type == 0x0800) { route.apply(); } else { by_type.apply(); } }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
"""


def crc16_arc(data: bytes) -> int:
    """BMv2's crc16 (CRC-16/ARC), computed independently of the engine."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


@pytest.fixture
def profiles_sw(tmp_path):
    bmv2_json, _ = compile_source(ACTION_PROFILES_P4, tmp_path)
    switch = se.Switch(ports={})
    switch.load_pipeline(json.dumps(bmv2_json))
    return switch


def eth_frame(dst: bytes, src: bytes, ether_type: int) -> bytes:
    return dst + src + ether_type.to_bytes(2, "big") + bytes(46)


def test_action_profile_members_run_their_action(profiles_sw):
    sw = profiles_sw
    sw.act_prof_member_set("I.prof", 1, "I.fwd", [b"\x00\x03"])
    sw.table_add("I.by_type", [("exact", b"\x88\xb5")], ("member", 1), [])
    [(port, _)] = sw.process_packet(0, eth_frame(bytes(6), bytes(6), 0x88b5))
    assert port == 3
    sw.act_prof_member_set("I.prof", 1, "I.fwd", [b"\x00\x04"])  # a member changed in place
    assert [p for p, _ in sw.process_packet(0, eth_frame(bytes(6), bytes(6), 0x88b5))] == [4]
    sw.act_prof_member_set("I.prof", 2, "I.fwd", [b"\x00\x05"])
    with pytest.raises(se.TableFullError):
        sw.act_prof_member_set("I.prof", 3, "I.fwd", [b"\x00\x06"])  # profile size 2
    sw.table_set_default("I.by_type", ("member", 2), [])
    assert [p for p, _ in sw.process_packet(0, eth_frame(bytes(6), bytes(6), 0x1234))] == [5]


def test_selector_picks_a_group_member_by_the_hash_of_its_fields(profiles_sw):
    sw = profiles_sw
    for member, port in ((10, 1), (11, 2), (12, 3)):
        sw.act_prof_member_set("I.sel", member, "I.fwd", [port.to_bytes(2, "big")])
    sw.act_prof_group_set("I.sel", 7, [12, 10, 11])
    dst = bytes.fromhex("020000000001")
    sw.table_add("I.route", [("exact", dst)], ("group", 7), [])
    seen = set()
    for i in range(64):
        src = bytes.fromhex("0200000000") + bytes([i])
        [(port, _)] = sw.process_packet(0, eth_frame(dst, src, 0x0800))
        # BMv2: hash % group size picks among the members in ascending id order (ports 1, 2, 3)
        assert port == 1 + crc16_arc(src) % 3
        seen.add(port)
    assert seen == {1, 2, 3}


def test_action_profile_refusals_change_nothing(profiles_sw):
    sw = profiles_sw
    sw.act_prof_member_set("I.sel", 10, "I.fwd", [b"\x00\x01"])
    sw.act_prof_group_set("I.sel", 7, [10])
    dst = bytes.fromhex("020000000001")
    sw.table_add("I.route", [("exact", dst)], ("group", 7), [])
    with pytest.raises(ValueError, match="in group 7"):
        sw.act_prof_member_delete("I.sel", 10)
    with pytest.raises(ValueError, match="used by table 'I.route'"):
        sw.act_prof_group_delete("I.sel", 7)
    with pytest.raises(ValueError, match="give a member or a group"):
        sw.table_add("I.route", [("exact", bytes(6))], "I.fwd", [b"\x00\x01"])
    with pytest.raises(KeyError):
        sw.table_add("I.route", [("exact", bytes(6))], ("member", 99), [])
    with pytest.raises(KeyError):
        sw.act_prof_group_set("I.sel", 8, [10, 99])
    with pytest.raises(ValueError, match="no selector"):
        sw.act_prof_group_set("I.prof", 1, [])
    src = bytes.fromhex("020000000009")
    assert [p for p, _ in sw.process_packet(0, eth_frame(dst, src, 0x0800))] == [1]


QUEUE_META_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header q_t { bit<32> enq_timestamp; bit<32> enq_qdepth; bit<32> deq_timedelta; bit<32> deq_qdepth; }
struct meta_t { }
struct headers_t { q_t q; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.q); transition accept; }
}
control NoCk(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.q.enq_timestamp = sm.enq_timestamp;
        h.q.enq_qdepth = (bit<32>) sm.enq_qdepth;
        h.q.deq_timedelta = sm.deq_timedelta;
        h.q.deq_qdepth = (bit<32>) sm.deq_qdepth;
    }
}
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.q); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
"""


@pytest.fixture
def queue_meta_sw(tmp_path):
    bmv2_json, _ = compile_source(QUEUE_META_P4, tmp_path)
    switch = se.Switch(ports={})
    switch.load_pipeline(json.dumps(bmv2_json))
    return switch


def egress_queue_meta(sw, **meta):
    [(_, out)] = sw.process_packet(0, bytes(16), **meta)
    return [int.from_bytes(out[i:i + 4], "big") for i in range(0, 16, 4)]


def test_process_packet_gives_egress_the_queue_metadata_asked_for(queue_meta_sw):
    """Tests replay a queue exactly: egress sees the given enq_timestamp,
    enq_qdepth, deq_timedelta and deq_qdepth, up to their v1model widths."""
    assert egress_queue_meta(queue_meta_sw, enq_qdepth=7, enq_timestamp=123_456, deq_timedelta=89,
                             deq_qdepth=3) == [123_456, 7, 89, 3]
    top = egress_queue_meta(queue_meta_sw, enq_qdepth=(1 << 19) - 1, enq_timestamp=(1 << 32) - 1,
                            deq_timedelta=(1 << 32) - 1, deq_qdepth=(1 << 19) - 1)
    assert top == [(1 << 32) - 1, (1 << 19) - 1, (1 << 32) - 1, (1 << 19) - 1]


def test_process_packet_queue_metadata_defaults_to_an_empty_queue_now(queue_meta_sw):
    clock, enq_qdepth, deq_timedelta, deq_qdepth = egress_queue_meta(queue_meta_sw, enq_qdepth=4)
    assert (enq_qdepth, deq_timedelta, deq_qdepth) == (4, 0, 0)
    later = egress_queue_meta(queue_meta_sw)[0]
    assert clock > 0 and later >= clock       # the switch clock, in microseconds


@pytest.mark.parametrize("field, bits", [("enq_qdepth", 19), ("enq_timestamp", 32),
                                         ("deq_timedelta", 32), ("deq_qdepth", 19)])
def test_process_packet_refuses_queue_metadata_wider_than_its_field(queue_meta_sw, field, bits):
    with pytest.raises(ValueError, match=f"{field} {1 << bits} does not fit in bit<{bits}>"):
        queue_meta_sw.process_packet(0, bytes(16), **{field: 1 << bits})
