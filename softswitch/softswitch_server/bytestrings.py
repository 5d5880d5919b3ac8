"""P4Runtime binary strings (spec section 8.3).

Values arrive as big-endian byte strings of any length; the value (not the
length) must fit the P4Info bitwidth and the string must not be empty.
Replies use the canonical form: the shortest string that holds the value,
one zero byte for zero.
"""
from .errors import invalid


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """Return the unsigned value of `data`, checking it fits `bitwidth` bits."""
    if len(data) == 0:
        raise invalid(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def canonical(value: int) -> bytes:
    """Shortest big-endian encoding of a non-negative integer."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def padded(value: int, bitwidth: int) -> bytes:
    """Fixed-width big-endian encoding: ceil(bitwidth / 8) bytes."""
    return value.to_bytes((bitwidth + 7) // 8, "big")


def lpm_mask(prefix_len: int, bitwidth: int) -> int:
    """The mask selecting the top `prefix_len` bits of a `bitwidth`-bit field."""
    return ((1 << prefix_len) - 1) << (bitwidth - prefix_len)
