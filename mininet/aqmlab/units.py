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


def parse_rate(value):
    """'10mbit' / 1.5e6 -> bit/s (int > 0)."""
    number, unit = _split(value) if isinstance(value, str) else (float(value), "")
    if unit not in _RATE:
        raise ValueError(f"unknown rate unit {unit!r} in {value!r} (use bit, kbit, mbit, gbit)")
    bps = int(round(number * _RATE[unit]))
    if bps <= 0:
        raise ValueError(f"rate must be positive, got {value!r}")
    return bps


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
    number, unit = _split(value) if isinstance(value, str) else (float(value), "")
    if unit not in _SIZE:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (use B, KB, MB, GB, KiB, MiB)")
    size = int(round(number * _SIZE[unit]))
    if size <= 0:
        raise ValueError(f"size must be positive, got {value!r}")
    return size


def rate_arg(bps):
    """bit/s -> the `--tm rate=` form the softswitch command takes."""
    return f"{int(bps)}"


def delay_arg(seconds):
    """seconds -> microseconds with the `us` suffix the softswitch command takes."""
    return f"{int(round(seconds * 1e6))}us"
