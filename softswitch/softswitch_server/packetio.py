"""PacketIn / PacketOut: the program's controller headers <-> P4Runtime metadata.

The P4Info's `controller_packet_metadata` lists the fields of the
`@controller_header("packet_out")` and `("packet_in")` headers in order.
A PacketOut's metadata is packed MSB-first into that header in front of the
payload (the frame the program's parser sees on the CPU port); a frame the
program sends to the CPU port starts with the packet_in header, which is
split off into PacketIn metadata.
"""
from p4.v1 import p4runtime_pb2

from .bytestrings import canonical, decode
from .errors import invalid
from .p4info_index import PacketMetadataInfo


def header_bytes(info: PacketMetadataInfo) -> int:
    bits = sum(width for _, _, width in info.fields)
    if bits % 8:
        raise invalid(f"controller header '{info.name}' is {bits} bits, not whole bytes")
    return bits // 8


def encode_packet_out(info: PacketMetadataInfo, packet: p4runtime_pb2.PacketOut) -> bytes:
    """The frame to inject: packet_out header (from the metadata) + payload."""
    if info is None:
        if len(packet.metadata):
            raise invalid("the program has no packet_out header: metadata not allowed")
        return packet.payload
    given = {}
    for m in packet.metadata:
        if m.metadata_id in given:
            raise invalid(f"packet_out metadata {m.metadata_id} given twice")
        given[m.metadata_id] = m.value
    known = {mid for mid, _, _ in info.fields}
    unknown = set(given) - known
    if unknown:
        raise invalid(f"unknown packet_out metadata ids {sorted(unknown)}")
    header = 0
    for mid, name, width in info.fields:
        if mid not in given:
            raise invalid(f"packet_out metadata '{name}' (id {mid}) is missing")
        header = (header << width) | decode(given[mid], width, f"packet_out metadata '{name}'")
    return header.to_bytes(header_bytes(info), "big") + packet.payload


def decode_packet_in(info: PacketMetadataInfo, frame: bytes) -> p4runtime_pb2.PacketIn:
    """Split the packet_in header off a frame sent to the CPU port."""
    packet = p4runtime_pb2.PacketIn()
    if info is None:
        packet.payload = frame
        return packet
    size = header_bytes(info)
    if len(frame) < size:
        raise invalid(f"frame of {len(frame)} bytes is shorter than the packet_in header")
    header = int.from_bytes(frame[:size], "big")
    shift = size * 8
    for mid, _, width in info.fields:
        shift -= width
        value = (header >> shift) & ((1 << width) - 1)
        packet.metadata.add(metadata_id=mid, value=canonical(value))
    packet.payload = frame[size:]
    return packet
