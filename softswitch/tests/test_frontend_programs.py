"""softswitch-p4c on whole programs: p4src/ (what `make build` compiles) and an L3 router.

Golden-free structural checks: the BMv2 JSON passes the schema and cross-reference
check, and the P4Info (parsed with p4info_pb2) lists the right entities.
"""
import glob
import json
import os
import subprocess
import sys

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from softswitch_p4c.driver import compile_source, compile_to_objects
from softswitch_p4c.validate import problems

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
P4SRC = sorted(glob.glob(os.path.join(ROOT, "p4src", "*.p4")))

L3 = r"""
#include <core.p4>
#include <v1model.p4>
typedef bit<48> mac_t;
header ethernet_t { mac_t dst; mac_t src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action ipv4_forward(mac_t dstAddr, bit<9> port) {
        sm.egress_spec = port;
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); } else { drop(); }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def run_cli(prog, outdir):
    p4info = os.path.join(outdir, "out.p4info.txtpb")
    proc = subprocess.run([sys.executable, "-m", "softswitch_p4c.cli", prog, "-o", outdir,
                           "--p4runtime-files", p4info], capture_output=True, text=True)
    return proc, p4info


def load_p4info(path):
    info = p4info_pb2.P4Info()
    with open(path) as f:
        text_format.Parse(f.read(), info)
    return info


@pytest.mark.parametrize("prog", P4SRC, ids=os.path.basename)
def test_p4src_programs_compile_to_valid_outputs(prog, tmp_path):
    proc, p4info_path = run_cli(prog, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    base = os.path.splitext(os.path.basename(prog))[0]
    with open(tmp_path / f"{base}.json") as f:
        j = json.load(f)
    assert problems(j) == []
    info = load_p4info(p4info_path)
    json_tables = {t["name"] for p in j["pipelines"] for t in p["tables"]}
    json_actions = {a["name"] for a in j["actions"]}
    assert {t.preamble.name for t in info.tables} <= json_tables
    assert {a.preamble.name for a in info.actions} <= json_actions


def test_red_ecn_exposes_the_controller_contract(tmp_path):
    prog = os.path.join(ROOT, "p4src", "red_ecn.p4")
    if not os.path.exists(prog):
        pytest.fail("p4src/red_ecn.p4 is missing")
    j, info = compile_to_objects(prog)
    tables = {t.preamble.name: t for t in info.tables}
    lpm = tables["MyIngress.ipv4_lpm"]
    assert [(m.name, m.bitwidth, m.match_type) for m in lpm.match_fields] == [
        ("hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)]
    actions = {a.preamble.name: a for a in info.actions}
    assert [(p.name, p.bitwidth) for p in actions["MyIngress.ipv4_forward"].params] == [
        ("dstAddr", 48), ("srcAddr", 48), ("port", 9)]
    assert "NoAction" in actions
    counters = {c.preamble.name: c for c in info.counters}
    assert counters["MyEgress.port_tx"].spec.unit == p4info_pb2.CounterSpec.BOTH
    assert counters["MyEgress.early_marks"].size == 512
    assert [d.preamble.name for d in info.digests] == ["telemetry_t"]
    members = info.type_info.structs["telemetry_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [
        ("time_us", 32), ("port", 16), ("qdepth", 32), ("avg", 32), ("decision", 8)]
    assert {r.preamble.name for r in info.registers} >= {"red_avg", "MyEgress.red_count"}
    prims = {p["op"] for a in j["actions"] for p in a["primitives"]}
    assert {"register_read", "register_write", "count", "modify_field_rng_uniform",
            "generate_digest", "mark_to_drop"} <= prims


def test_l3_router_lowering(tmp_path):
    j, info = compile_source(L3, tmp_path)
    assert problems(j) == []
    ingress = next(p for p in j["pipelines"] if p["name"] == "ingress")
    cond = ingress["conditionals"][0]
    assert ingress["init_table"] == cond["name"]
    assert cond["expression"]["value"] == {
        "op": "d2b", "left": None, "right": {"type": "field", "value": ["ipv4", "$valid$"]}}
    tables = {t["name"]: t for t in ingress["tables"]}
    assert cond["true_next"] == "I.ipv4_lpm" and cond["false_next"] == "tbl_drop"
    lpm = tables["I.ipv4_lpm"]
    assert lpm["match_type"] == "lpm"
    assert lpm["key"] == [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr",
                           "target": ["ipv4", "dstAddr"], "mask": None}]
    assert lpm["default_entry"]["action_data"] == []
    drop_table = tables["tbl_drop"]
    assert drop_table["default_entry"]["action_const"] is True
    fwd = next(a for a in j["actions"] if a["name"] == "I.ipv4_forward")
    assert fwd["runtime_data"] == [{"name": "dstAddr", "bitwidth": 48},
                                   {"name": "port", "bitwidth": 9}]
    ttl = fwd["primitives"][3]["parameters"][1]["value"]["value"]
    assert ttl["op"] == "&" and ttl["right"]["value"] == "0xff"
    (cksum,) = j["checksums"]
    assert cksum["target"] == ["ipv4", "hdrChecksum"] and cksum["update"] and not cksum["verify"]
    calc = next(c for c in j["calculations"] if c["name"] == cksum["calculation"])
    assert calc["algo"] == "csum16" and len(calc["input"]) == 11
    assert j["deparsers"][0]["order"] == ["ethernet", "ipv4"]
    start = j["parsers"][0]["parse_states"][0]
    assert start["transition_key"] == [{"type": "field", "value": ["ethernet", "etherType"]}]
    assert start["transitions"][0] == {"type": "hexstr", "value": "0x0800", "mask": None,
                                       "next_state": "parse_ipv4"}
    (table,) = info.tables
    assert table.preamble.name == "I.ipv4_lpm" and table.preamble.alias == "ipv4_lpm"
    assert table.preamble.id >> 24 == p4info_pb2.P4Ids.TABLE


def test_compiling_twice_gives_identical_output(tmp_path):
    src = tmp_path / "l3.p4"
    src.write_text(L3)
    outs = []
    for run in ("a", "b"):
        out = tmp_path / run
        proc, p4info = run_cli(str(src), str(out))
        assert proc.returncode == 0, proc.stderr
        outs.append(((out / "l3.json").read_text(), open(p4info).read()))
    assert outs[0] == outs[1]


def test_ids_are_unique_and_prefixed(tmp_path):
    _, info = compile_source(L3, tmp_path)
    entities = [(p4info_pb2.P4Ids.TABLE, t.preamble.id) for t in info.tables] + \
               [(p4info_pb2.P4Ids.ACTION, a.preamble.id) for a in info.actions]
    ids = [i for _, i in entities]
    assert len(ids) == len(set(ids))
    assert all(i >> 24 == prefix for prefix, i in entities)
