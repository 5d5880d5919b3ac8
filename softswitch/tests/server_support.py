"""Shared helpers of the test_server_* tests: the hand-written fixture pipeline."""
import pathlib
import subprocess
import sys

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MINI_P4INFO = FIXTURES / "mini.p4info.txtpb"
MINI_JSON = FIXTURES / "mini.json"
P4C = pathlib.Path(sys.executable).parent / "softswitch-p4c"


def compile_fixture(out: pathlib.Path, name: str):
    """softswitch-p4c fixtures/NAME.p4 into `out` -> (P4Info text path, BMv2 JSON path)."""
    p4info = out / f"{name}.p4info.txtpb"
    subprocess.run([str(P4C), str(FIXTURES / f"{name}.p4"), "-o", str(out),
                    "--p4runtime-files", str(p4info)], check=True)
    return p4info, out / f"{name}.json"

# Ids of mini.p4info.txtpb
T_LPM, T_ACL, T_DMAC, T_CONST = 33554433, 33554434, 33554435, 33554436
A_NOACTION, A_DROP, A_SET_NHOP, A_TO_CPU, A_FORWARD, A_LEARN = range(16777217, 16777223)
C_PORT, DC_LPM, M_PORT, DM_ACL, R_FLOW, D_LEARN = (
    301989889, 318767105, 335544321, 352321537, 369098753, 385875969)


def mini_p4info() -> p4info_pb2.P4Info:
    return text_format.Parse(MINI_P4INFO.read_text(), p4info_pb2.P4Info())


def mini_json() -> bytes:
    return MINI_JSON.read_bytes()


# ---- helpers for tests that need the engine ----
from p4.v1 import p4runtime_pb2  # noqa: E402

from softswitch_server.client import P4RTClient, SetAction, Update, write_error_codes  # noqa: E402,F401


def start_server(cpu_port=255, ports=None, seed=1, device_id=0):
    """A real engine switch behind a P4Runtime server on a free local port."""
    import softswitch_engine as se
    from softswitch_server.server import SoftswitchServer
    sw = se.Switch(ports=ports or {}, cpu_port=cpu_port, seed=seed)
    server = SoftswitchServer(sw, "127.0.0.1:0", device_id, interfaces=ports)
    server.start()
    return server, f"127.0.0.1:{server.port}"


def lpm_entry(prefix: bytes, plen: int, port: int = None, dmac: int = 0, padded=False):
    e = p4runtime_pb2.TableEntry(table_id=T_LPM)
    m = e.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = prefix, plen
    if port is not None:
        a = e.action.action
        a.action_id = A_SET_NHOP
        width = 2 if padded else max(1, (port.bit_length() + 7) // 8)
        a.params.add(param_id=1, value=port.to_bytes(width, "big"))
        a.params.add(param_id=2, value=dmac.to_bytes(6 if padded else max(1, (dmac.bit_length() + 7) // 8), "big"))
    return e


def acl_entry(ether_type: int, mask: int = 0xFFFF, priority: int = 10, action=A_TO_CPU, ports=None):
    e = p4runtime_pb2.TableEntry(table_id=T_ACL, priority=priority)
    m = e.match.add(field_id=1)
    m.ternary.value, m.ternary.mask = ether_type.to_bytes(2, "big"), mask.to_bytes(2, "big")
    if ports is not None:
        r = e.match.add(field_id=2)
        r.range.low, r.range.high = ports[0].to_bytes(2, "big"), ports[1].to_bytes(2, "big")
    e.action.action.action_id = action
    return e


def snapshot(client: P4RTClient) -> list:
    """Everything a client can read, serialized, to prove a request changed nothing."""
    reads = [
        dict(table_entry=p4runtime_pb2.TableEntry()),
        dict(counter_entry=p4runtime_pb2.CounterEntry()),
        dict(meter_entry=p4runtime_pb2.MeterEntry()),
        dict(register_entry=p4runtime_pb2.RegisterEntry()),
        dict(direct_counter_entry=p4runtime_pb2.DirectCounterEntry()),
        dict(direct_meter_entry=p4runtime_pb2.DirectMeterEntry()),
        dict(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()),
        dict(digest_entry=p4runtime_pb2.DigestEntry()),
    ]
    for table_id in (T_LPM, T_ACL, T_DMAC, T_CONST):
        reads.append(dict(table_entry=p4runtime_pb2.TableEntry(table_id=table_id, is_default_action=True)))
    return [m.SerializeToString(deterministic=True) for kw in reads for m in client.read(**kw)]


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_no_clients(server, timeout_s: float = 5.0):
    """Block until every closed client's stream has ended on the server side."""
    import time
    deadline = time.monotonic() + timeout_s
    while server.arbitrator.clients and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.arbitrator.clients, "a client stream did not end"
