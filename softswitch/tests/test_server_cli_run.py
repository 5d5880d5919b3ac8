"""The `softswitch` command as a process: start-up pipeline, ports with
traffic-manager flags, clean exit on SIGINT, clear failure on a bad port."""
import signal
import subprocess
import sys
import uuid

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from server_support import MINI_JSON, MINI_P4INFO, P4RTClient, T_LPM, free_port, lpm_entry

pytestmark = pytest.mark.root


@pytest.fixture
def veth():
    name = f"svc{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "link", "add", name + "a", "type", "veth", "peer", "name", name + "b"],
                   check=True, capture_output=True)
    try:
        yield name + "a"
    finally:
        subprocess.run(["ip", "link", "del", name + "a"], capture_output=True)


def test_json_and_p4info_at_start_are_served_then_sigint_stops(veth, tmp_path):
    address = f"127.0.0.1:{free_port()}"
    pcap_dir = tmp_path / "pcap"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch_server.cli", str(MINI_JSON),
                             "--p4info", str(MINI_P4INFO), "-i", f"0@{veth}", "--cpu-port", "255",
                             "--tm", "0:rate=10mbit,buffer=10,delay=1ms", "--seed", "3",
                             "--pcap", str(pcap_dir), "--grpc-server-addr", address],
                            stderr=subprocess.PIPE, text=True)
    try:
        grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=30)
        client = P4RTClient(address, election_id=1)
        client.insert(table_entry=lpm_entry(b"\x0a\x00\x00\x00", 8, port=0))  # no push needed
        assert len(client.read(table_entry=p4runtime_pb2.TableEntry(table_id=T_LPM))) == 1
        client.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        pcap = (pcap_dir / "port0.pcap").read_bytes()
        assert pcap[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4")  # a pcap file header
    finally:
        if proc.poll() is None:
            proc.kill()


def test_missing_interface_is_a_clear_error():
    proc = subprocess.run([sys.executable, "-m", "softswitch_server.cli", "-i", "0@svnosuchif0",
                           "--grpc-server-addr", f"127.0.0.1:{free_port()}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "svnosuchif0" in proc.stderr


@pytest.mark.parametrize("flags, said", [
    (["--realtime", "10"], "realtime (SCHED_FIFO priority 10)"),
    (["--busy-poll"], "busy-polling (the packet thread never sleeps)"),
], ids=["realtime", "busy-poll"])
def test_packet_thread_flags_take_effect_and_say_so(veth, flags, said):
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch_server.cli", str(MINI_JSON), "-i", f"0@{veth}",
                             *flags, "--grpc-server-addr", address], stderr=subprocess.PIPE, text=True)
    try:
        grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert said in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
