"""Parsing of the human units used in experiment files: rates, delays, sizes."""

import re

_RATE = {"": 1, "bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
_TIME = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_SIZE = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9,
         "kib": 2**10, "mib": 2**20, "gib": 2**30}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$")


def _split(text):
    match = _NUMBER_UNIT.match(str(text).lower())
    if not match:
        raise ValueError(f"cannot read {text!r}")
    return float(match.group(1)), match.group(2)


def _positive_count(value, units, what, known):
    """A number with an optional unit from `units` (or a bare number) -> a positive int."""
    number, unit = _split(value) if isinstance(value, str) else (float(value), "")
    if unit not in units:
        raise ValueError(f"unknown {what} unit {unit!r} in {value!r} (use {known})")
    count = int(round(number * units[unit]))
    if count <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return count


def parse_rate(value):
    """'10mbit' / 1.5e6 -> bit/s (int > 0)."""
    return _positive_count(value, _RATE, "rate", "bit, kbit, mbit, gbit")


def parse_delay(value):
    """'20ms' / '100us' / 0.02 (seconds) -> seconds (float >= 0)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        number, unit = _split(value)
        if unit not in _TIME:
            raise ValueError(f"unknown time unit {unit!r} in {value!r} (use us, ms, s)")
        seconds = number * _TIME[unit]
    if seconds < 0:
        raise ValueError(f"delay must not be negative, got {value!r}")
    return seconds


def parse_size(value):
    """'20MB' / '5KB' / 1460 -> bytes (int > 0)."""
    return _positive_count(value, _SIZE, "size", "B, KB, MB, GB, KiB, MiB")


def rate_arg(bps):
    """bit/s -> the `--tm rate=` form the softswitch command takes."""
    return f"{int(bps)}"


def delay_arg(seconds):
    """seconds -> microseconds with the `us` suffix the softswitch command takes."""
    return f"{int(round(seconds * 1e6))}us"
