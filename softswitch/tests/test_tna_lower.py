"""The TNA back-end (softswitch_p4c/tna_lower.py, issue 14): hw/tofino/red_ecn.p4 lowers to
BMv2 JSON + P4Info for both archs, and what the built-in target cannot run the same way
as Tofino is refused at its line. The engine runs it in hw/tofino/tests."""
import json
import zlib
from pathlib import Path

import pytest

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
    ("        pkt.extract(hdr.bridged);\n", "        pkt.extract(hdr.bridged);\n        meta.red.mode = 1;\n",
     "parser MyEgressParser", "egress parser re-parses"),
    ("meta.red.selected = red_budget_step.execute(eg_intr_md.egress_port);\n"
     "                if (meta.red.region == REGION_FORCED) {",
     "if (red_budget_step.execute(eg_intr_md.egress_port) == 1) {",
     "if (red_budget_step.execute", "statement or the right side of an assignment"),
    ("        hdr.ethernet.srcAddr = srcAddr;", "        hdr.ethernet.etherType = 0x86dd;",
     "hdr.ethernet.etherType = 0x86dd", "selects on"),
    ("        hdr.bridged.setValid();", "        hdr.bridged.setValid();\n        hdr.ipv4.setInvalid();",
     "hdr.ipv4.setInvalid()", "parsed header"),
    ("    Random<bit<32>>() red_rng;", "    Random<bit<32>>() red_rng;\n    Meter<PortId_t>(512, MeterType_t.BYTES) m;",
     "Meter<PortId_t>", "'Meter' is not supported on the built-in target"),
    ("    Random<bit<32>>() red_rng;", "    Random<bit<32>>() red_rng;\n    Hash<bit<16>>(HashAlgorithm_t.CRC8) h;",
     "Hash<bit<16>>", "Hash algorithm must be one of"),
    ("        pkt.emit(hdr.bridged);\n", "        pkt.emit(hdr.bridged);\n        hdr.ipv4.ttl = 1;\n",
     "hdr.ipv4.ttl = 1;", "ingress deparser may only emit"),
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
    se = pytest.importorskip("softswitch_engine")
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
