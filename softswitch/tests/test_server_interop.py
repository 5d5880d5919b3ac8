"""Interop: controllers written by others drive the `softswitch` command.

The switch runs as a separate process started through its CLI; p4runtime-shell
(main venv) and finsy (.venv-finsy, it needs protobuf >= 4) each push the
fixture pipeline, insert and read back a table entry and read a counter.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from server_support import FIXTURES, MINI_JSON, MINI_P4INFO, free_port

REPO = pathlib.Path(__file__).resolve().parents[2]
FINSY_PYTHON = REPO / ".venv-finsy" / "bin" / "python"


@pytest.fixture
def softswitch():
    """`softswitch --cpu-port 255` on a free port; stopped with SIGTERM afterwards."""
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch_server.cli",
                             "--grpc-server-addr", address, "--cpu-port", "255"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(channel).result(timeout=30)
        p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest())
        channel.close()
        yield address, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def run_client(python, script, address):
    proc = subprocess.run([str(python), str(FIXTURES / script), address, str(MINI_P4INFO),
                           str(MINI_JSON)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ""} if python == FINSY_PYTHON else None)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_p4runtime_shell_drives_softswitch(softswitch):
    address, proc = softswitch
    report = run_client(sys.executable, "p4rtsh_client.py", address)
    [entry] = report["entries"]
    assert entry == {"prefix": "0a000100", "prefix_len": 24, "port": "03", "dmac": "aa"}
    assert report["counter"] == [[2, 0, 0]]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0   # clean shutdown


def test_finsy_drives_softswitch(softswitch):
    address, _ = softswitch
    report = run_client(FINSY_PYTHON, "finsy_client.py", address)
    assert report["primary"] is True
    [entry] = report["entries"]
    assert entry["match"] == {"dstAddr": "0xa000200/24"}
    assert entry["action"] == "set_nhop(port=0x5, dmac=0xbb)"
    assert [c[0] for c in report["counter"]] == list(range(8))
