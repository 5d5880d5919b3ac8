"""P4Runtime errors: one exception type carrying a gRPC status code.

Every validation step raises `P4RuntimeError`; the gRPC layer turns it into a
call status (or, inside a Write batch, into one `p4.v1.Error` per update).
"""
import grpc
from google.rpc import code_pb2


class P4RuntimeError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def canonical_code(self) -> int:
        """The google.rpc.Code number of this status (for p4.v1.Error)."""
        return self.code.value[0]

    def __str__(self):
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def unknown_role(role: str) -> P4RuntimeError:
    """Only the default (empty) role exists; the spec answers others NOT_FOUND."""
    return not_found(f"unknown role '{role[:64]}' (only the default role exists)")


def already_exists(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, message)


def out_of_range(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE, message)


def permission_denied(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, message)


def failed_precondition(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, message)


def aborted(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.ABORTED, message)


def unimplemented(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, message)


def internal(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INTERNAL, message)


OK_CODE = code_pb2.OK
