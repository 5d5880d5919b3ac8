"""P4Info indexing and the P4Info <-> BMv2 JSON consistency check (no switch)."""
import json

import pytest

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
