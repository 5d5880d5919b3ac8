"""Calls into the Rust engine with its exceptions mapped to P4Runtime codes.

The engine contract (softswitch/README.md): KeyError = unknown name/handle,
ValueError = bad width/arity/value, DuplicateEntryError = same key present,
TableFullError = table at max_size,
PipelineError = invalid JSON, RuntimeError = no pipeline.
"""
import grpc
import softswitch_engine as se

from .errors import (P4RuntimeError, already_exists, failed_precondition, invalid,
                     not_found)


def call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except se.DuplicateEntryError as e:
        raise already_exists(f"engine: {e}") from None
    except se.TableFullError as e:
        raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"engine: {e}") from None
    except se.PipelineError as e:
        raise invalid(f"engine rejected the pipeline: {e}") from None
    except KeyError as e:
        raise not_found(f"engine: {e}") from None
    except ValueError as e:
        raise invalid(f"engine: {e}") from None
    except RuntimeError as e:
        raise failed_precondition(f"engine: {e}") from None


def as_int(value) -> int:
    """Engine values come back as big-endian bytes or ints."""
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    return int(value)
