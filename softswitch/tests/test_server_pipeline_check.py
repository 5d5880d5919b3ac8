"""P4Info indexing and the P4Info <-> BMv2 JSON consistency check (no switch)."""
import json
import pathlib

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from server_support import mini_json, mini_p4info
from softswitch_server.errors import P4RuntimeError
from softswitch_server.p4info_index import P4InfoIndex
from softswitch_server.pipeline import check_consistent, parse_device_config


def check(p4info, doc):
    check_consistent(P4InfoIndex(p4info), doc)


def refused(p4info, doc) -> str:
    with pytest.raises(P4RuntimeError) as info:
        check(p4info, doc)
    assert info.value.code.name == "INVALID_ARGUMENT"
    return info.value.message


def test_fixture_pair_is_consistent():
    check(mini_p4info(), parse_device_config(mini_json()))


@pytest.mark.parametrize("data", [b"{not json", b"\xff\xfe", b"[]", b'{"actions": []}'])
def test_malformed_device_config_is_refused(data):
    with pytest.raises(P4RuntimeError) as info:
        parse_device_config(data)
    assert info.value.code.name == "INVALID_ARGUMENT"


def _doc():
    return json.loads(mini_json())


def _tables(doc):
    return {t["name"]: t for t in doc["pipelines"][0]["tables"]}


def test_missing_table_is_named():
    doc = _doc()
    doc["pipelines"][0]["tables"] = [t for t in doc["pipelines"][0]["tables"]
                                     if t["name"] != "MyIngress.dmac"]
    assert "MyIngress.dmac" in refused(mini_p4info(), doc)


def test_param_width_mismatch_is_named():
    doc = _doc()
    next(a for a in doc["actions"] if a["name"] == "MyIngress.set_nhop")["runtime_data"][0]["bitwidth"] = 16
    assert "MyIngress.set_nhop" in refused(mini_p4info(), doc)


def test_match_kind_mismatch_is_named():
    doc = _doc()
    _tables(doc)["MyIngress.ipv4_lpm"]["key"][0]["match_type"] = "exact"
    assert "hdr.ipv4.dstAddr" in refused(mini_p4info(), doc)


def test_key_width_mismatch_is_named():
    p4info = mini_p4info()
    p4info.tables[0].match_fields[0].bitwidth = 16
    assert "16" in refused(p4info, _doc())


def test_counter_size_mismatch_is_named():
    doc = _doc()
    next(c for c in doc["counter_arrays"] if c["name"] == "MyIngress.port_counter")["size"] = 4
    assert "MyIngress.port_counter" in refused(mini_p4info(), doc)


def test_register_digest_and_direct_resources_are_checked():
    for mutate, name in [
        (lambda d: d["register_arrays"][0].update(bitwidth=16), "MyIngress.flow_reg"),
        (lambda d: d.update(learn_lists=[]), "mac_learn_t"),
        (lambda d: d["counter_arrays"][0].update(binding="MyIngress.acl"), "MyIngress.ipv4_lpm_counter"),
        (lambda d: d["meter_arrays"][1].update(is_direct=False), "MyIngress.acl_meter"),
    ]:
        doc = _doc()
        mutate(doc)
        assert name in refused(mini_p4info(), doc)


def test_p4info_with_duplicate_ids_is_refused():
    p4info = mini_p4info()
    p4info.actions[1].preamble.id = p4info.actions[0].preamble.id
    with pytest.raises(P4RuntimeError) as info:
        P4InfoIndex(p4info)
    assert info.value.code.name == "INVALID_ARGUMENT"


def test_p4info_with_dangling_action_ref_is_refused():
    p4info = mini_p4info()
    p4info.tables[0].action_refs.add(id=99)
    with pytest.raises(P4RuntimeError):
        P4InfoIndex(p4info)


GOLDEN = pathlib.Path(__file__).parent / "corpus" / "golden"
GOLDEN_PAIRS = sorted(p.stem for p in GOLDEN.glob("*.json"))


def _golden(stem):
    p4info = text_format.Parse((GOLDEN / f"{stem}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return p4info, json.loads((GOLDEN / f"{stem}.json").read_text())


UNSERVED = {"dual_stack": "value_sets"}   # P4Info objects this target refuses


@pytest.mark.parametrize("stem", GOLDEN_PAIRS)
def test_compiled_pairs_are_consistent(stem):
    """Every pair the front-end emits passes both directions of the check."""
    if stem in UNSERVED:
        assert UNSERVED[stem] in refused(*_golden(stem))
    else:
        check(*_golden(stem))


def test_empty_p4info_is_refused():
    assert "MyIngress.ipv4_lpm" in refused(p4info_pb2.P4Info(), _doc())


@pytest.mark.parametrize("omit", ["tables", "counters", "direct_counters", "meters",
                                  "direct_meters", "registers", "digests"])
def test_p4info_missing_any_json_object_is_refused(omit):
    p4info = mini_p4info()
    name = getattr(p4info, omit)[0].preamble.name
    if omit == "tables":  # its direct resources go with it
        table_id = p4info.tables[0].preamble.id
        for kind in ("direct_counters", "direct_meters"):
            kept = [d for d in getattr(p4info, kind) if d.direct_table_id != table_id]
            p4info.ClearField(kind)
            getattr(p4info, kind).extend(kept)
    del getattr(p4info, omit)[0]
    assert name in refused(p4info, _doc())


def test_json_parser_value_set_without_p4info_entry_is_refused():
    doc = _doc()
    doc["parse_vsets"] = [{"name": "MyParser.ports", "id": 0, "compressed_bitwidth": 16, "max_size": 4}]
    assert "MyParser.ports" in refused(mini_p4info(), doc)


def test_table_missing_a_json_action_is_refused():
    p4info = mini_p4info()
    table = p4info.tables[0]
    dropped = table.action_refs[0].id
    del table.action_refs[0]
    name = next(a.preamble.name for a in p4info.actions if a.preamble.id == dropped)
    assert name in refused(p4info, _doc())
