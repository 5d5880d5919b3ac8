"""Shared helpers of the test_server_* tests: the hand-written fixture pipeline."""
import pathlib

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MINI_P4INFO = FIXTURES / "mini.p4info.txtpb"
MINI_JSON = FIXTURES / "mini.json"

# Ids of mini.p4info.txtpb
T_LPM, T_ACL, T_DMAC, T_CONST = 33554433, 33554434, 33554435, 33554436
A_NOACTION, A_DROP, A_SET_NHOP, A_TO_CPU, A_FORWARD, A_LEARN = range(16777217, 16777223)
C_PORT, DC_LPM, M_PORT, DM_ACL, R_FLOW, D_LEARN = (
    301989889, 318767105, 335544321, 352321537, 369098753, 385875969)


def mini_p4info() -> p4info_pb2.P4Info:
    return text_format.Parse(MINI_P4INFO.read_text(), p4info_pb2.P4Info())


def mini_json() -> bytes:
    return MINI_JSON.read_bytes()
