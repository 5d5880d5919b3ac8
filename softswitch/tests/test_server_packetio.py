"""PacketIn/PacketOut header packing and digest batching (no switch)."""
import pytest
from hypothesis import given, strategies as st
from p4.v1 import p4runtime_pb2

from server_support import mini_p4info
from softswitch_server.bytestrings import canonical
from softswitch_server.digests import DigestBatcher
from softswitch_server.errors import P4RuntimeError
from softswitch_server.p4info_index import P4InfoIndex

from softswitch_server.packetio import decode_packet_in, encode_packet_out

INDEX = P4InfoIndex(mini_p4info())
PKT_OUT = INDEX.packet_metadata["packet_out"]
PKT_IN = INDEX.packet_metadata["packet_in"]


def packet_out(payload, **meta):
    p = p4runtime_pb2.PacketOut(payload=payload)
    for mid, value in meta.items():
        p.metadata.add(metadata_id=int(mid[1:]), value=value)
    return p


def test_packet_out_metadata_is_packed_msb_first_in_front():
    frame = encode_packet_out(PKT_OUT, packet_out(b"payload", m1=b"\x01\x03", m2=b"\x00"))
    # egress_port 0x103 (9 bits) then 7 zero pad bits: 1 0000 0011 0000000
    assert frame == bytes([0b10000001, 0b10000000]) + b"payload"


@pytest.mark.parametrize("packet,code", [
    (packet_out(b"x", m1=b"\x01"), "INVALID_ARGUMENT"),                        # _pad missing
    (packet_out(b"x", m1=b"\x02\x00", m2=b"\x00"), "OUT_OF_RANGE"),            # 512 > 9 bits (spec 8.3)
    (packet_out(b"x", m1=b"\x01", m2=b"\x00", m3=b"\x00"), "INVALID_ARGUMENT"),  # unknown id
])
def test_bad_packet_out_metadata_is_refused(packet, code):
    with pytest.raises(P4RuntimeError) as info:
        encode_packet_out(PKT_OUT, packet)
    assert info.value.code.name == code


@given(port=st.integers(0, 511), payload=st.binary(max_size=64))
def test_packet_in_header_is_split_into_metadata(port, payload):
    header = (port << 7).to_bytes(2, "big")
    packet = decode_packet_in(PKT_IN, header + payload)
    assert packet.payload == payload
    assert [(m.metadata_id, m.value) for m in packet.metadata] == [(1, canonical(port)), (2, b"\x00")]


def test_short_cpu_frame_is_refused():
    with pytest.raises(P4RuntimeError):
        decode_packet_in(PKT_IN, b"\x01")


def config(max_list_size=0, max_timeout_ns=0, ack_timeout_ns=10**9):
    return p4runtime_pb2.DigestEntry.Config(max_list_size=max_list_size,
                                            max_timeout_ns=max_timeout_ns,
                                            ack_timeout_ns=ack_timeout_ns)


def test_digests_are_batched_by_size_and_deduplicated_until_ack():
    b, cfg = DigestBatcher(), config(max_list_size=2, max_timeout_ns=10**12)
    b.add(7, (b"\x00\x01", b"\x02"), True, cfg, now_ns=0)
    b.add(7, (b"\x00\x01", b"\x02"), True, cfg, now_ns=1)   # duplicate while pending
    assert b.due_lists({7: cfg}, now_ns=2, timestamp_ns=5) == []
    b.add(7, (b"\x00\x03", b"\x04"), True, cfg, now_ns=3)
    [lst] = b.due_lists({7: cfg}, now_ns=4, timestamp_ns=5)
    assert lst.digest_id == 7 and len(lst.data) == 2 and lst.timestamp == 5
    assert [m.bitstring for m in lst.data[0].struct.members] == [b"\x01", b"\x02"]
    b.add(7, (b"\x00\x01", b"\x02"), True, cfg, now_ns=5)    # outstanding: suppressed
    b.add(7, (b"\x00\x09", b"\x02"), True, cfg, now_ns=5)
    b.ack(7, lst.list_id)
    b.add(7, (b"\x00\x01", b"\x02"), True, cfg, now_ns=6)    # acked: allowed again
    [second] = b.due_lists({7: cfg}, now_ns=7, timestamp_ns=8)
    assert second.list_id == lst.list_id + 1 and len(second.data) == 2


def test_digests_flush_on_timeout_and_after_ack_timeout():
    b, cfg = DigestBatcher(), config(max_list_size=100, max_timeout_ns=1000, ack_timeout_ns=500)
    b.add(1, (b"\x05",), False, cfg, now_ns=0)
    assert b.due_lists({1: cfg}, now_ns=999, timestamp_ns=0) == []
    [lst] = b.due_lists({1: cfg}, now_ns=1000, timestamp_ns=0)
    assert lst.data[0].bitstring == b"\x05"
    b.add(1, (b"\x05",), False, cfg, now_ns=1200)   # unacked, within ack timeout
    assert b.pending == {}
    b.add(1, (b"\x05",), False, cfg, now_ns=1600)   # ack timeout passed
    assert len(b.pending[1].data) == 1


def test_digests_of_an_unconfigured_id_are_dropped():
    b = DigestBatcher()
    b.add(1, (b"\x05",), False, config(), now_ns=0)
    assert b.due_lists({}, now_ns=10, timestamp_ns=0) == [] and b.pending == {}
