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


class QuietAfterOneInterval:
    """A controller whose port sends and samples packets in the first
    interval of `redctl watch`, then nothing: traffic has stopped."""

    def __init__(self):
        from redctl.controller import Sample
        self.counter_reads = 0
        self.pending = [Sample(time_us=1, port=1, qdepth=7, avg=6.5, decision="pass")]

    def get_sampling(self, port):
        return 1

    def port_counters(self, port):
        self.counter_reads += 1
        packets = 0 if self.counter_reads == 1 else 100   # 100 packets in interval 1 only
        return {"packets": packets, "bytes": 0, "early_marks": 0, "early_drops": 0, "forced_drops": 0}

    def poll_sample(self, timeout):
        if self.pending and self.counter_reads == 1:
            return self.pending.pop()
        import time
        time.sleep(timeout)
        return None


def test_watch_says_idle_instead_of_repeating_a_stale_average(capsys):
    import argparse
    from redctl.cli import cmd_watch
    args = argparse.Namespace(port=1, interval=0.05, duration=0.15, sampling=None)
    cmd_watch(QuietAfterOneInterval(), args, None)
    header, *rows = capsys.readouterr().out.strip().splitlines()
    assert header.split() == ["t[s]", "avg[pkt]", "q[pkt]", "age[s]", "samples", "tx[pkt/s]",
                              "marks[/s]", "edrops[/s]", "fdrops[/s]"]
    first, *later = [r.split() for r in rows]
    assert first[1:3] == ["6.50", "7"] and first[4] == "1"
    assert later and all(r[1:3] == ["idle", "idle"] and r[4] == "0" for r in later)
    assert [float(r[3]) for r in later] == sorted(float(r[3]) for r in later)   # the sample ages
