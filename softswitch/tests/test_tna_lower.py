"""The TNA back-end (softswitch_p4c/tna_lower.py, issue 14): hw/tofino/red_ecn.p4 lowers to
BMv2 JSON + P4Info for both archs, and what the built-in target cannot run the same way
as Tofino is refused at its line. The engine runs it in hw/tofino/tests."""
import json
import math
import zlib
from pathlib import Path

import pytest
import softswitch_engine as se

from softswitch_p4c.errors import CompileError
from softswitch_p4c.driver import compile_tna_to_objects
from softswitch_p4c.validate import loader_problems

RED_TNA = Path(__file__).resolve().parents[2] / "hw" / "tofino" / "red_ecn.p4"


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_the_red_program_lowers_to_loader_clean_json_with_its_control_plane_names(arch):
    bmv2_json, p4info = compile_tna_to_objects(str(RED_TNA), arch)
    assert loader_problems(bmv2_json) == []
    tables = {t.preamble.name for t in p4info.tables}
    registers = {r.preamble.name for r in p4info.registers}
    counters = {c.preamble.name for c in p4info.counters}
    assert {"MyIngress.ipv4_lpm", "MyEgress.red_config", "MyEgress.red_pb"} <= tables
    assert {"MyEgress.red_budget", "MyEgress.red_avg", "MyEgress.last_qdepth",
            "MyEgress.last_decision", "MyEgress.last_sample_time", "MyEgress.red_avg_lpf"} <= registers
    assert {"MyEgress.port_tx", "MyEgress.early_marks", "MyEgress.early_drops",
            "MyEgress.forced_drops"} <= counters
    keys = {t.preamble.name: [m.name for m in t.match_fields] for t in p4info.tables}
    assert keys["MyEgress.red_pb"] == ["eg_intr_md.egress_port", "meta.red.avg"]   # as bf-p4c names them
    assert keys["MyEgress.red_config"] == ["eg_intr_md.egress_port"]
    prims = {p["op"] for a in bmv2_json["actions"] for p in a["primitives"]}
    assert {"tna_lpf_sample", "register_read", "register_write", "modify_field_rng_uniform",
            "mark_to_drop", "count"} <= prims


@pytest.mark.parametrize("old, new, line, words", [
    ("meta.red.selected = red_budget_step.execute(eg_intr_md.egress_port);\n"
     "                if (meta.red.region == REGION_FORCED) {",
     "if (red_budget_step.execute(eg_intr_md.egress_port) == 1) {",
     "if (red_budget_step.execute", "statement, a declaration's initializer or an assignment's source"),
    ("    Random<bit<32>>() red_rng;", "    Random<bit<32>>() red_rng;\n    Meter<PortId_t>(512, MeterType_t.BYTES) m;",
     "Meter<PortId_t>", "'Meter' is not supported on the built-in target"),
    ("    Random<bit<32>>() red_rng;", "    Random<bit<32>>() red_rng;\n    Hash<bit<16>>(HashAlgorithm_t.CRC8) h;",
     "Hash<bit<16>>", "Hash algorithm must be one of"),
    ("        pkt.emit(hdr.bridged);\n", "        pkt.emit(hdr.bridged);\n        hdr.ipv4.ttl = 1;\n",
     "hdr.ipv4.ttl = 1;", "ingress deparser may only emit headers, not an assignment"),
])
def test_what_the_built_in_target_cannot_run_like_tofino_is_refused_at_its_line(tmp_path, old, new,
                                                                                   line, words):
    text = RED_TNA.read_text()
    assert old in text
    bad = tmp_path / "red_ecn.p4"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(CompileError) as err:
        compile_tna_to_objects(str(bad), "tna")
    want = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if line in t)
    assert err.value.loc.line == want and words in err.value.message, err.value.render()


def test_a_lint_problem_stops_the_build(tmp_path):
    text = RED_TNA.read_text()
    bad = tmp_path / "red_ecn.p4"
    old = "                budget = budget - meta.red.pb;"
    assert old in text
    bad.write_text(text.replace(old, "                budget = budget * meta.red.pb;", 1))
    with pytest.raises(CompileError) as err:
        compile_tna_to_objects(str(bad), "tna")
    assert "budget * meta.red.pb" in bad.read_text().splitlines()[err.value.loc.line - 1]


def crc16_arc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


@pytest.mark.parametrize("algo, width, expect", [
    ("CRC16", 16, crc16_arc), ("CRC32", 32, zlib.crc32), ("IDENTITY", 16, lambda d: int.from_bytes(d, "big"))])
def test_hash_get_is_the_low_bits_of_the_named_crc(tmp_path, algo, width, expect):
    """Hash.get({src, dst}) written into the IPv4 identification (CRC32: its low 16 bits)."""
    text = RED_TNA.read_text()
    local, use = "    action drop() {\n        ig_dprsr_md.drop_ctl = 1;", "        ipv4_lpm.apply();"
    assert local in text and use in text
    text = text.replace(local, f"    Hash<bit<{width}>>(HashAlgorithm_t.{algo}) flow_hash;\n" + local, 1)
    text = text.replace(use, use + "\n            hdr.ipv4.identification = (bit<16>) "
                        "flow_hash.get({hdr.ipv4.srcAddr, hdr.ipv4.dstAddr});", 1)
    prog = tmp_path / "hashed.p4"
    prog.write_text(text)
    bmv2_json, _ = compile_tna_to_objects(str(prog), "tna")
    sw = se.Switch(ports={}, seed=1)
    sw.load_pipeline(json.dumps(bmv2_json))
    sw.table_add("MyIngress.ipv4_lpm", [("lpm", bytes([10, 0, 1, 0]), 24)], "MyIngress.ipv4_forward",
                 [bytes(6), bytes(6), (1).to_bytes(2, "big")])
    addrs = bytes([10, 0, 0, 1, 10, 0, 1, 2])
    frame = bytes(12) + b"\x08\x00" + bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0]) + addrs
    (port, out), = sw.process_packet(0, frame)
    assert int.from_bytes(out[18:20], "big") == expect(addrs) & 0xFFFF


def test_a_hash_algorithm_named_by_a_constant_is_the_constants_value(tmp_path):
    """The algorithm is the value the checker folded, however the argument spells it."""
    text = RED_TNA.read_text()
    local, use = "    action drop() {\n        ig_dprsr_md.drop_ctl = 1;", "        ipv4_lpm.apply();"
    assert local in text and use in text and "control MyIngress" in text
    text = text.replace("control MyIngress", "const HashAlgorithm_t FLOW_HASH = "
                        "HashAlgorithm_t.CRC32;\ncontrol MyIngress", 1)
    text = text.replace(local, "    Hash<bit<16>>(FLOW_HASH) flow_hash;\n" + local, 1)
    text = text.replace(use, use + "\n            hdr.ipv4.identification = "
                        "flow_hash.get({hdr.ipv4.srcAddr});", 1)
    prog = tmp_path / "hashed.p4"
    prog.write_text(text)
    bmv2_json, _ = compile_tna_to_objects(str(prog), "tna")
    assert "crc32" in [c["algo"] for c in bmv2_json["calculations"]]


QUEUE_TNA = r"""
#include <core.p4>
#include <tna.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header depths_t { bit<32> enq_qdepth; bit<32> deq_qdepth; }
struct headers_t { ethernet_t ethernet; depths_t depths; }
struct meta_t { }
parser IgParser(packet_in pkt, out headers_t hdr, out meta_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start { pkt.extract(ig_intr_md); pkt.advance(PORT_METADATA_SIZE); pkt.extract(hdr.ethernet);
                  pkt.extract(hdr.depths); transition accept; }
}
control Ing(inout headers_t hdr, inout meta_t md, in ingress_intrinsic_metadata_t ig_intr_md,
            in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
            inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
            inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply { ig_tm_md.ucast_egress_port = CPU_PORT; }
}
control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}
parser EgParser(packet_in pkt, out headers_t hdr, out meta_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); pkt.extract(hdr.ethernet); pkt.extract(hdr.depths); transition accept; }
}
control Eg(inout headers_t hdr, inout meta_t md, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        hdr.depths.enq_qdepth = (bit<32>) eg_intr_md.enq_qdepth;
        hdr.depths.deq_qdepth = (bit<32>) eg_intr_md.deq_qdepth;
    }
}
control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}
Pipeline(IgParser(), Ing(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
"""
CPU_PORT = 64


def tna_engine_switch(tmp_path, source, arch, **switch_args):
    prog = tmp_path / "prog.p4"
    prog.write_text(source)
    bmv2_json, _ = compile_tna_to_objects(str(prog), arch)
    sw = se.Switch(ports={}, seed=1, **switch_args)
    sw.load_pipeline(json.dumps(bmv2_json))
    return sw


@pytest.mark.parametrize("arch, cell", [("tna", 80), ("t2na", 176)])
def test_the_traffic_manager_counts_the_cells_of_the_frames_queued(tmp_path, arch, cell):
    """Mixed frame sizes behind a slow port: each frame's enq_qdepth is the cells of the
    frames waiting when it arrived, its deq_qdepth those left behind it (Tofino's count,
    ceil(bytes / cell) per frame), not packets x the cells of the frame at hand."""
    source = QUEUE_TNA.replace("CPU_PORT", str(CPU_PORT))
    sw = tna_engine_switch(tmp_path, source, arch, cpu_port=CPU_PORT)
    # 10 kb/s: the first frame holds the link 1.2 s, so all the others queue behind it
    # (they arrive within milliseconds; the margin covers a loaded host).
    sw.configure_port(CPU_PORT, rate_bps=10_000, buffer_packets=64)
    sizes = [1500, 64, 161, 1500, 81, 100, 400]
    sw.start()
    try:
        for n in sizes:
            sw.packet_out(bytes(12) + b"\x88\xb5" + bytes(n - 14))
        got = [sw.poll_packet_in(10.0) for _ in sizes]
    finally:
        sw.stop()
    assert all(got), "every frame leaves through the CPU port"
    cells = [-(-n // cell) for n in sizes]
    waiting = [sum(cells[1:k]) for k in range(len(sizes))]     # frame 0 is on the wire at once
    left = [0] + [sum(cells[k + 1:]) for k in range(1, len(sizes))]   # frame 0 left an empty queue
    depths = [(int.from_bytes(f[14:18], "big"), int.from_bytes(f[18:22], "big")) for f in got]
    assert depths == list(zip(waiting, left))
    assert len(set(cells)) > 2, "the sizes differ, so packets x cells would not fit"


BRIDGED_BYTES = 8
BRIDGED_QUEUE_TNA = (QUEUE_TNA
    .replace("struct headers_t {", "header bridged_t { bit<64> stamp; }\nstruct headers_t { bridged_t bridged;")
    .replace("apply { ig_tm_md.ucast_egress_port", "apply { hdr.bridged.setValid(); ig_tm_md.ucast_egress_port")
    .replace("pkt.extract(eg_intr_md); pkt.extract(hdr.ethernet);",
             "pkt.extract(eg_intr_md); pkt.extract(hdr.bridged); pkt.extract(hdr.ethernet);")
    .replace("        hdr.depths.enq_qdepth = (bit<32>) eg_intr_md.enq_qdepth;",
             "        hdr.bridged.setInvalid();\n        hdr.depths.enq_qdepth = (bit<32>) eg_intr_md.enq_qdepth;"))


def test_the_traffic_manager_counts_the_bridged_header_in_the_cells(tmp_path):
    """Tofino buffers what the ingress deparser emits, bridged metadata included: a frame
    of 75 bytes with 8 bridged bytes takes 2 cells of 80, not 1. The bridged header
    does not reach the wire (egress invalidates it), so the frames leave as they came."""
    source = BRIDGED_QUEUE_TNA.replace("CPU_PORT", str(CPU_PORT))
    assert source.count("bridged") == 6, "every replacement applied"
    sw = tna_engine_switch(tmp_path, source, "tna", cpu_port=CPU_PORT)
    sw.configure_port(CPU_PORT, rate_bps=10_000, buffer_packets=64)
    sizes = [1500, 75, 72, 160, 153, 400]
    sent = [bytes(12) + b"\x88\xb5" + bytes(n - 14) for n in sizes]
    sw.start()
    try:
        for frame in sent:
            sw.packet_out(frame)
        got = [sw.poll_packet_in(10.0) for _ in sizes]
    finally:
        sw.stop()
    assert [len(f) for f in got] == sizes
    cells = [-(-(n + BRIDGED_BYTES) // 80) for n in sizes]
    waiting = [sum(cells[1:k]) for k in range(len(sizes))]
    assert [int.from_bytes(f[14:18], "big") for f in got] == waiting
    assert cells != [-(-n // 80) for n in sizes], "the sizes straddle cell boundaries"


def queue_program(ingress="", egress="", eg_locals=""):
    """QUEUE_TNA with statements added to ingress and egress (and egress locals)."""
    text = QUEUE_TNA.replace("CPU_PORT", str(CPU_PORT))
    text = text.replace("    apply { ig_tm_md.ucast_egress_port", f"    apply {{ {ingress} ig_tm_md.ucast_egress_port", 1)
    eg_apply = "    apply {\n        hdr.depths.enq_qdepth"
    return text.replace(eg_apply, f"{eg_locals}\n    apply {{\n        {egress}\n        hdr.depths.enq_qdepth", 1)


WRED_EGRESS = dict(
    eg_locals="    Wred<bit<19>, bit<9>>(512, 1, 0) wred;",
    egress="bit<8> verdict = wred.execute(eg_intr_md.enq_qdepth, eg_intr_md.egress_port);\n"
           "        if (verdict == 1) { eg_dprsr_md.drop_ctl = 1; }")
MIN_CELLS, MAX_CELLS, MAXP = 10, 30, 0.5


@pytest.fixture
def wred_switch(tmp_path):
    sw = tna_engine_switch(tmp_path, queue_program(**WRED_EGRESS), "tna")
    for suffix, value in (("__min", MIN_CELLS), ("__max", MAX_CELLS), ("__maxp", round(MAXP * 2**32))):
        sw.register_write(f"Eg.wred{suffix}", CPU_PORT, value)
    return sw


def wred_drops(sw, depth, n, t0=1000):
    """Drops among n frames meeting a queue of `depth` cells (time constant 0: avg = depth)."""
    frame = bytes(12) + b"\x88\xb5" + bytes(50)
    return sum(not sw.process_packet(1, frame, enq_qdepth=depth, enq_timestamp=t0 + i, deq_timedelta=0)
               for i in range(n))


@pytest.mark.parametrize("depth, p", [(20, 0.25), (25, 0.375), (12, 0.05)])
def test_wred_drops_with_reds_probability_between_the_thresholds(wred_switch, depth, p):
    """Between min and max Wred drops each frame independently with maxp (avg - min) /
    (max - min): the count is Binomial(n, p), checked in its 99.9 % normal band."""
    n = 4000
    drops = wred_drops(wred_switch, depth, n)
    assert abs(drops - n * p) <= 3.2905 * (n * p * (1 - p)) ** 0.5, (drops, n * p)


def test_wred_never_drops_below_min_and_always_from_max(wred_switch):
    assert wred_drops(wred_switch, MIN_CELLS - 1, 300) == 0
    assert wred_drops(wred_switch, MAX_CELLS, 300) == 300
    assert wred_drops(wred_switch, 1000, 50) == 50


def test_an_unconfigured_wred_index_never_drops(tmp_path):
    sw = tna_engine_switch(tmp_path, queue_program(**WRED_EGRESS), "tna")
    assert wred_drops(sw, 5000, 200) == 0


def test_wred_averages_like_the_lpf_with_its_time_constant(wred_switch):
    """One step from 0 to 100 cells after 10 us with tau = 10 us: avg = 100 (1 - 1/e)."""
    wred_switch.register_write("Eg.wred", CPU_PORT, 10_000)
    frame = bytes(12) + b"\x88\xb5" + bytes(50)
    wred_switch.process_packet(1, frame, enq_qdepth=0, enq_timestamp=5_000, deq_timedelta=0)
    wred_switch.process_packet(1, frame, enq_qdepth=100, enq_timestamp=5_010, deq_timedelta=0)
    assert wred_switch.register_read("Eg.wred__avg", CPU_PORT) == round(100 * (1 - math.exp(-1)))


BRIDGE_TNA = r"""
#include <core.p4>
#include <tna.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header bridged_t { bit<16> tag; }
header depths_t { bit<32> enq_qdepth; bit<32> deq_qdepth; }
struct headers_t { bridged_t bridged; ethernet_t ethernet; depths_t depths; }
struct meta_t { }
parser IgParser(packet_in pkt, out headers_t hdr, out meta_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start { pkt.extract(ig_intr_md); pkt.advance(PORT_METADATA_SIZE); pkt.extract(hdr.ethernet);
                  transition select(hdr.ethernet.ether_type) { 0x88b5: depths; default: accept; } }
    state depths { pkt.extract(hdr.depths); transition accept; }
}
control Ing(inout headers_t hdr, inout meta_t md, in ingress_intrinsic_metadata_t ig_intr_md,
            in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
            inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
            inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply {
        ig_tm_md.ucast_egress_port = 1;
        hdr.bridged.setValid();
        hdr.bridged.tag = 0xbeef;
        if (hdr.ethernet.dst == 1) { hdr.ethernet.ether_type = 0x0800; }
    }
}
control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr.bridged); pkt.emit(hdr.ethernet); pkt.emit(hdr.depths); }
}
parser EgParser(packet_in pkt, out headers_t hdr, out meta_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); pkt.extract(hdr.bridged); pkt.extract(hdr.ethernet);
                  transition select(hdr.ethernet.ether_type) { 0x88b5: depths; default: accept; } }
    state depths { pkt.extract(hdr.depths); transition accept; }
}
control Eg(inout headers_t hdr, inout meta_t md, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.depths.isValid()) { hdr.depths.enq_qdepth = (bit<32>) hdr.bridged.tag; }
        else { hdr.ethernet.src = 0xbad; }
    }
}
control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.depths); }
}
Pipeline(IgParser(), Ing(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
"""


def bridge_frame(dst):
    return dst.to_bytes(6, "big") + bytes(6) + b"\x88\xb5" + bytes(8) + b"payload"


def test_the_bridged_header_travels_through_the_ingress_deparser_and_the_egress_parser(tmp_path):
    """Ingress fills a bridged header that only its deparser emits; the egress parser
    extracts it from those bytes; the egress deparser leaves it out of the frame."""
    sw = tna_engine_switch(tmp_path, BRIDGE_TNA, "tna")
    sent = bridge_frame(2)
    (port, out), = sw.process_packet(0, sent)
    assert port == 1 and len(out) == len(sent) and out.endswith(b"payload")
    assert int.from_bytes(out[14:18], "big") == 0xbeef


def test_a_name_is_lowered_as_what_the_checker_resolved_it_to_not_by_its_spelling(tmp_path):
    """An action parameter named as the egress intrinsic metadata parameter is the action's
    value (the name used to be rewritten into the metadata, leaving the JSON a null operand)."""
    old = "    apply {\n        if (hdr.depths.isValid())"
    assert old in BRIDGE_TNA
    sw = tna_engine_switch(tmp_path, BRIDGE_TNA.replace(old, (
        "    action note(bit<32> eg_intr_md) { hdr.depths.deq_qdepth = eg_intr_md; }\n"
        "    apply {\n        note(7);\n        if (hdr.depths.isValid())"), 1), "tna")
    (port, out), = sw.process_packet(0, bridge_frame(2))
    assert int.from_bytes(out[18:22], "big") == 7


def test_egress_parses_what_the_ingress_deparser_emitted_not_what_ingress_parsed(tmp_path):
    """Ingress rewrites the EtherType the parsers select on: the egress parser, run on the
    deparsed bytes, no longer extracts the depths header (the bytes stay payload)."""
    sw = tna_engine_switch(tmp_path, BRIDGE_TNA, "tna")
    sent = bridge_frame(1)
    (_, out), = sw.process_packet(0, sent)
    assert out[12:14] == b"\x08\x00" and int.from_bytes(out[6:12], "big") == 0xbad
    assert out[14:] == sent[14:], "the depths bytes went through as payload"


@pytest.mark.parametrize("old, new, words", [
    ("    apply { pkt.emit(hdr.bridged);", "    Mirror() mirror;\n    apply { mirror.emit<ethernet_t>(1, hdr.ethernet); pkt.emit(hdr.bridged);",
     "may only emit headers, not Mirror.emit()"),
    ("    apply { pkt.emit(hdr.bridged);", "    Digest<bridged_t>() dg;\n"
     "    apply { if (ig_dprsr_md.digest_type == 1) { dg.pack(hdr.bridged); } pkt.emit(hdr.bridged);",
     "may only emit headers, not Digest.pack()"),
    ("    apply { pkt.emit(hdr.bridged);", "    Resubmit() rs;\n    apply { rs.emit(); pkt.emit(hdr.bridged);",
     "may only emit headers, not Resubmit.emit()"),
    ("    state start { pkt.extract(eg_intr_md);", "    ParserCounter() pc;\n    state start { pkt.extract(eg_intr_md);",
     "TNA extern 'ParserCounter' is not supported"),
    ("    apply {\n        if (hdr.depths.isValid())", "    Meter<bit<9>>(512, MeterType_t.BYTES) meter;\n"
     "    apply {\n        if (hdr.depths.isValid())", "TNA extern 'Meter' is not supported"),
    ("    apply {\n        if (hdr.depths.isValid())", "    DirectCounter<bit<32>>(CounterType_t.PACKETS) dc;\n"
     "    apply {\n        if (hdr.depths.isValid())", "TNA extern 'DirectCounter' is not supported"),
])
def test_tna_externs_the_built_in_target_lacks_are_refused_in_one_line_naming_theirs(tmp_path, old, new,
                                                                                       words):
    assert old in BRIDGE_TNA
    prog = tmp_path / "prog.p4"
    prog.write_text(BRIDGE_TNA.replace(old, new, 1))
    with pytest.raises(CompileError) as err:
        compile_tna_to_objects(str(prog), "tna")
    first_new_line = new.split("\n")[0].strip() or new.split("\n")[1].strip()
    line = prog.read_text().splitlines()[err.value.loc.line - 1]
    assert words in err.value.message and "\n" not in err.value.render().strip(), err.value.render()
    assert any(w in line for w in ("mirror", "dg.pack", "rs.emit", "ParserCounter", "Meter", "DirectCounter")), line


DONT_CARE_TNA = queue_program(ingress="keep_type(_);").replace(
    "struct headers_t {", "header skip_t { bit<16> junk; }\nstruct headers_t {").replace(
    "pkt.extract(hdr.ethernet);\n", "pkt.extract(hdr.ethernet); pkt.extract<skip_t>(_);\n", 1).replace(
    "    apply { keep_type(_);", "    action keep_type(out bit<16> was) {\n"
    "        was = hdr.ethernet.ether_type; hdr.ethernet.ether_type = 0x1234;\n    }\n"
    "    apply { keep_type(_);", 1)


def test_dont_care_arguments_become_temporaries_on_tna_too(tmp_path):
    """`_` for an out parameter is a temporary on the TNA path as on v1model's (the same
    pass, desugar.dontcare_args, after tna.check_program): the ingress parser's
    `extract<skip_t>(_)` consumes 2 bytes nobody emits, and an action's unwanted out
    result lands in a local while its other effect (the EtherType) happens."""
    assert DONT_CARE_TNA.count("_)") == 2 and "action keep_type" in DONT_CARE_TNA
    sw = tna_engine_switch(tmp_path, DONT_CARE_TNA, "tna")
    sent = bytes(12) + b"\x88\xb5" + b"\xaa\xbb" + bytes(8) + b"payload"
    (_, out), = sw.process_packet(1, sent)
    assert out[12:14] == b"\x12\x34"
    assert len(out) == len(sent) - 2 and out.endswith(b"payload") and b"\xaa\xbb" not in out


def test_a_deprecated_call_warns_on_tna_too(tmp_path):
    """tna.check_program's checker records the warnings as check_v1model's does; the
    program still compiles (ir.Program.warnings, driver.compile_tna_to_objects)."""
    prog = tmp_path / "prog.p4"
    prog.write_text(queue_program(ingress="old();").replace(
        "    apply { old();", '    @deprecated("Use new.") action old() { }\n    apply { old();', 1))
    warnings = []
    compile_tna_to_objects(str(prog), "tna", warnings=warnings)
    line = next(i for i, x in enumerate(prog.read_text().splitlines(), 1) if "{ old();" in x)
    assert [(w.loc.line, w.message) for w in warnings] == [(line, "'old' is deprecated: Use new.")]


@pytest.mark.parametrize("arch, bits", [("tna", 18), ("t2na", 32)])
def test_queue_timestamps_reach_egress_in_ns_wrapping_at_their_declared_width(tmp_path, arch, bits):
    """enq_tstamp / deq_timedelta are the engine's us x 1000, wrapping at the intrinsic
    field's width as Tofino's counters do: 18 bits on Tofino 1 (262 us), 32 on Tofino 2,
    as the public tna.p4/t2na.p4 declare them."""
    program = queue_program(egress="hdr.depths.enq_qdepth = (bit<32>) eg_intr_md.enq_tstamp;\n"
                                   "        hdr.depths.deq_qdepth = (bit<32>) eg_intr_md.deq_timedelta;")
    program = program.replace("hdr.depths.enq_qdepth = (bit<32>) eg_intr_md.enq_qdepth;", "")
    program = program.replace("hdr.depths.deq_qdepth = (bit<32>) eg_intr_md.deq_qdepth;", "")
    sw = tna_engine_switch(tmp_path, program, arch)
    frame = bytes(12) + b"\x88\xb5" + bytes(50)
    (_, out), = sw.process_packet(1, frame, enq_qdepth=0, enq_timestamp=5_000_000, deq_timedelta=300)
    assert int.from_bytes(out[14:18], "big") == 5_000_000_000 % 2**bits
    assert int.from_bytes(out[18:22], "big") == 300_000 % 2**bits


@pytest.mark.parametrize("tna, words", [
    ({"cell_bytes": 0}, "__tna__.cell_bytes: expected a cell size in bytes"),
    ({"cell_bytes": 80, "egress_parser": "nope"}, "no parser named 'nope'"),
    ({"cell_bytes": 80, "ingress_deparser": "nope"}, "no deparser named 'nope'"),
])
def test_the_engine_refuses_a_bad_tna_block_in_one_line(tmp_path, tna, words):
    prog = tmp_path / "prog.p4"
    prog.write_text(BRIDGE_TNA)
    bmv2_json, _ = compile_tna_to_objects(str(prog), "tna")
    with pytest.raises(se.PipelineError, match=words):
        se.Switch(ports={}).verify_pipeline(json.dumps({**bmv2_json, "__tna__": tna}))
