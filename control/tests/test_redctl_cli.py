"""`redctl` reports mistakes clearly, with exit status 2, before touching a switch."""
import socket
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def redctl(*args):
    return subprocess.run([str(BIN / "redctl"), *args], capture_output=True, text=True, timeout=60)


def test_config_mistake_is_reported_before_connecting(tmp_path):
    bad = tmp_path / "switch.toml"
    bad.write_text("[[port]]\nid = 1\nbuffer = 10\nred = { minth = 5, maxth = 15, maxp = 0.1 }\n")
    result = redctl("push", str(bad))
    assert result.returncode == 2
    assert "port[0]" in result.stderr and "buffer" in result.stderr


def test_unreachable_switch_is_a_clear_error():
    with socket.socket() as s:             # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    result = redctl("--address", address, "show")
    assert result.returncode == 2
    assert f"no P4Runtime server at {address}" in result.stderr


def test_wq_and_wq_log_are_exclusive():
    result = redctl("set", "--port", "1", "--wq", "0.002", "--wq-log", "9")
    assert result.returncode == 2 and "not allowed with" in result.stderr
