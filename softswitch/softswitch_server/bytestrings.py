"""P4Runtime binary strings (spec section 8.3).

Values arrive as big-endian byte strings of any length; the value (not the
length) must fit the P4Info bitwidth and the string must not be empty, else
OUT_OF_RANGE (spec section 8.3, "Bytestrings").
Replies use the canonical form: the shortest string that holds the value,
one zero byte for zero.
"""
from .errors import out_of_range

SHOWN_BYTES = 8   # error messages quote at most this much of a value


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """Return the unsigned value of `data`, checking it fits `bitwidth` bits."""
    if len(data) == 0:
        raise out_of_range(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise out_of_range(f"{what}: value {shown(data)} does not fit in {bitwidth} bits")
    return value


def shown(data: bytes) -> str:
    """`data` in hex for a message, cut short when long."""
    if len(data) <= SHOWN_BYTES:
        return "0x" + data.hex()
    return f"0x{data[:SHOWN_BYTES].hex()}... ({len(data)} bytes)"


def canonical(value: int) -> bytes:
    """Shortest big-endian encoding of a non-negative integer."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def padded(value: int, bitwidth: int) -> bytes:
    """Fixed-width big-endian encoding: ceil(bitwidth / 8) bytes."""
    return value.to_bytes((bitwidth + 7) // 8, "big")


def lpm_mask(prefix_len: int, bitwidth: int) -> int:
    """The mask selecting the top `prefix_len` bits of a `bitwidth`-bit field."""
    return ((1 << prefix_len) - 1) << (bitwidth - prefix_len)
