"""redctl's P4Runtime session against an in-process softswitch: a failed batch
of 1,000 updates reaches the controller as the switch's per-update errors,
not as a gRPC RESOURCE_EXHAUSTED about metadata size."""
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

import softswitch_engine as se
from redctl import names
from redctl.p4rt import SHOWN_UPDATE_ERRORS, P4InfoIndex, P4RuntimeError, Session
from softswitch_server.server import SoftswitchServer


@pytest.fixture
def session(compiled):
    p4info_path, json_path = compiled
    server = SoftswitchServer(se.Switch(ports={}, seed=1), "127.0.0.1:0")
    server.start()
    s = Session(f"127.0.0.1:{server.port}")
    try:
        p4info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
        s.set_pipeline(p4info, json_path.read_bytes())
        yield s, p4info
    finally:
        s.close()
        server.stop()


def test_a_failed_batch_of_1000_updates_lists_the_switch_errors(session):
    s, p4info = session
    table = next(t for t in p4info.tables if t.preamble.name == names.IPV4_LPM)
    updates = []
    for i in range(1000):   # deletes of routes that do not exist
        entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        m = entry.match.add(field_id=table.match_fields[0].id)
        m.lpm.value, m.lpm.prefix_len = bytes([10, 2, i >> 8, i & 255]), 32
        updates.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE,
                                            entity=p4runtime_pb2.Entity(table_entry=entry)))
    with pytest.raises(P4RuntimeError) as info:
        s.write(updates)
    message = str(info.value)
    assert message.startswith("Write: UNKNOWN: 1000 of 1000 updates failed (1000 NOT_FOUND)")
    assert "update 0: NOT_FOUND" in message and f"update {SHOWN_UPDATE_ERRORS}:" not in message
    assert "RESOURCE_EXHAUSTED" not in message


def test_a_broken_p4info_file_is_named_in_one_line(tmp_path):
    broken = tmp_path / "prog.p4info.txtpb"
    broken.write_text("tables {\n  preamble { id: 1\n")
    with pytest.raises(P4RuntimeError, match=f"^{broken}: not a P4Info in text format") as error:
        P4InfoIndex.from_file(str(broken))
    assert "\n" not in str(error.value)
