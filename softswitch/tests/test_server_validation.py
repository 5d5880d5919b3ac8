"""Request validation without a switch: byte strings, match keys, actions."""
import pytest
from hypothesis import given, strategies as st
from p4.v1 import p4runtime_pb2

from server_support import (A_DROP, A_FORWARD, A_LEARN, A_SET_NHOP, T_ACL, T_DMAC, T_LPM,
                            mini_p4info)
from softswitch_server.bytestrings import canonical, decode, padded
from softswitch_server.errors import P4RuntimeError
from softswitch_server.p4info_index import P4InfoIndex
from softswitch_server.tables import (action_spec, engine_keys, fill_match, match_key)

INDEX = P4InfoIndex(mini_p4info())


def lpm_entry(value: bytes, plen: int) -> p4runtime_pb2.TableEntry:
    e = p4runtime_pb2.TableEntry(table_id=T_LPM)
    m = e.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = value, plen
    return e


def acl_entry(value, mask, low, high, priority=10):
    e = p4runtime_pb2.TableEntry(table_id=T_ACL, priority=priority)
    if mask is not None:
        m = e.match.add(field_id=1)
        m.ternary.value, m.ternary.mask = value, mask
    if low is not None:
        m = e.match.add(field_id=2)
        m.range.low, m.range.high = low, high
    return e


def code_of(fn, *args):
    with pytest.raises(P4RuntimeError) as info:
        fn(*args)
    return info.value.code.name


def test_bytestrings_accept_padding_and_reject_overflow():
    assert decode(b"\x00\x00\x01\xff", 9, "x") == 511
    assert code_of(decode, b"\x02\x00", 9, "x") == "OUT_OF_RANGE"   # spec 8.3
    assert code_of(decode, b"", 9, "x") == "OUT_OF_RANGE"
    assert canonical(0) == b"\x00" and canonical(256) == b"\x01\x00"
    assert padded(1, 9) == b"\x00\x01"


@pytest.mark.parametrize("entry", [
    lpm_entry(b"\x0a\x00\x00\x01", 24),      # bits beyond the prefix
    lpm_entry(b"\x0a\x00\x00\x00", 33),      # prefix longer than the field
    lpm_entry(b"\x0a\x00\x00\x00", 0),       # /0 must be omitted
    acl_entry(b"\x08\x01", b"\xff\x00", None, None),   # value outside mask
    acl_entry(b"\x00", b"\x00", None, None),           # zero mask
    acl_entry(None, None, b"\x05", b"\x01"),           # low > high
    acl_entry(None, None, b"\x00", b"\x01\xff"),       # full range
    acl_entry(b"\x08\x00", b"\xff\xff", None, None, priority=0),  # ternary needs priority
    p4runtime_pb2.TableEntry(table_id=T_LPM, priority=5,
                             match=[lpm_entry(b"\x0a", 8).match[0]]),  # priority on lpm table
    p4runtime_pb2.TableEntry(table_id=T_DMAC),          # exact field missing
])
def test_invalid_match_is_invalid_argument(entry):
    table = INDEX.table(entry.table_id)
    assert code_of(match_key, table, entry) == "INVALID_ARGUMENT"


@pytest.mark.parametrize("entry", [
    lpm_entry(b"\x01\x0a\x00\x00\x00", 8),   # value wider than 32 bits
    lpm_entry(b"", 8),                        # empty value
    acl_entry(b"\x08\x00", b"\x01\xff\xff", None, None),  # mask wider than 16 bits
    acl_entry(None, None, b"\x00", b""),      # empty range bound
])
def test_too_wide_or_empty_match_value_is_out_of_range(entry):
    assert code_of(match_key, INDEX.table(entry.table_id), entry) == "OUT_OF_RANGE"


def test_long_values_are_cut_short_in_messages():
    with pytest.raises(P4RuntimeError) as info:
        decode(b"\x01" * 4096, 32, "x")
    assert len(info.value.message) < 100 and "4096 bytes" in info.value.message


def test_unknown_table_is_not_found():
    assert code_of(INDEX.table, 1234) == "NOT_FOUND"


def test_match_kind_must_follow_p4info():
    e = p4runtime_pb2.TableEntry(table_id=T_LPM)
    e.match.add(field_id=1).exact.value = b"\x0a\x00\x00\x01"
    assert code_of(match_key, INDEX.table(T_LPM), e) == "INVALID_ARGUMENT"


def _action(action_id, *params):
    ta = p4runtime_pb2.TableAction()
    ta.action.action_id = action_id
    for pid, value in params:
        ta.action.params.add(param_id=pid, value=value)
    return ta


@pytest.mark.parametrize("table_id,ta,default", [
    (T_LPM, _action(A_SET_NHOP, (1, b"\x01")), False),                    # missing param
    (T_LPM, _action(A_SET_NHOP, (1, b"\x01"), (2, b"\x01"), (3, b"\x01")), False),  # unknown param
    (T_LPM, _action(A_FORWARD, (1, b"\x01")), False),                     # not a table action
    (T_LPM, p4runtime_pb2.TableAction(), False),                          # no action
])
def test_invalid_action_is_invalid_argument(table_id, ta, default):
    assert code_of(action_spec, INDEX, INDEX.table(table_id), ta, default) == "INVALID_ARGUMENT"


@pytest.mark.parametrize("table_id,ta,default", [
    (T_DMAC, _action(A_LEARN), False),                                    # @defaultonly in entry
    (T_DMAC, _action(A_FORWARD, (1, b"\x01")), True),                     # @tableonly as default
])
def test_action_out_of_its_scope_is_permission_denied(table_id, ta, default):
    """Spec §9.1.2: a valid action used against its P4Info scope."""
    assert code_of(action_spec, INDEX, INDEX.table(table_id), ta, default) == "PERMISSION_DENIED"


def test_too_wide_action_param_is_out_of_range():
    ta = _action(A_SET_NHOP, (1, b"\x02\x00"), (2, b"\x01"))   # port > 9 bits
    assert code_of(action_spec, INDEX, INDEX.table(T_LPM), ta, False) == "OUT_OF_RANGE"


def test_valid_action_keeps_params_in_order():
    spec = action_spec(INDEX, INDEX.table(T_LPM),
                       _action(A_SET_NHOP, (2, b"\x00\x00\x00\x00\x00\x01"), (1, b"\x00\x03")), False)
    assert spec.action_id == A_SET_NHOP and spec.params == (3, 1)
    assert action_spec(INDEX, INDEX.table(T_LPM), _action(A_DROP), True).params == ()


@given(value=st.integers(0, 2**16 - 1), mask=st.integers(1, 2**16 - 1),
       low=st.integers(0, 511), span=st.integers(0, 510), priority=st.integers(1, 2**31 - 1),
       pad=st.integers(0, 3))
def test_match_round_trips_canonically(value, mask, low, span, priority, pad):
    """Write with any padding, read back canonical bytes that mean the same key."""
    high = min(low + span, 511)
    if low == 0 and high == 511:
        high = 510
    value &= mask
    entry = acl_entry(b"\x00" * pad + value.to_bytes(2, "big"), mask.to_bytes(2, "big"),
                      low.to_bytes(2, "big"), high.to_bytes(2, "big"), priority)
    table = INDEX.table(T_ACL)
    key = match_key(table, entry)
    out = p4runtime_pb2.TableEntry(table_id=T_ACL)
    fill_match(table, key, out)
    assert match_key(table, out) == key
    assert out.match[0].ternary.value == canonical(value)
    assert engine_keys(table, key) == [
        ("ternary", value.to_bytes(2, "big"), mask.to_bytes(2, "big")),
        ("range", low.to_bytes(2, "big"), high.to_bytes(2, "big"))]


def test_dont_care_fields_become_wildcards_for_the_engine():
    table = INDEX.table(T_ACL)
    key = match_key(table, acl_entry(b"\x08\x00", b"\xff\xff", None, None))
    assert engine_keys(table, key)[1] == ("range", b"\x00\x00", b"\x01\xff")
