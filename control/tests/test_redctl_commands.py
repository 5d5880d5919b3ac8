"""`redctl push`, `redctl watch` and Adaptive RED against a running softswitch.

Samples are taken when frames arrive, so the tests keep a trickle of probe
frames flowing; a burst into the 100 kb/s port makes the reported queue grow
(the n-th frame of a burst was enqueued behind n - 1 others).
"""
from __future__ import annotations

import subprocess
import threading
import time

import pytest

from redctl_testnet import BIN, HOST_IP, HOST_MAC, PORTS, SWITCH_MAC, burst, frame
from redctl import Controller, RedConfig, adaptive

pytestmark = pytest.mark.root

PUSHED_RED = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9, gentle=False, mode="red", ecn=True)


@pytest.fixture(scope="module")
def pushed(switch, tmp_path_factory):
    """The switch configured by `redctl push` from a TOML file."""
    path = tmp_path_factory.mktemp("push") / "switch.toml"
    routes = "".join(f'[[route]]\nprefix = "{HOST_IP[p]}/32"\nport = {p}\ndst_mac = "{HOST_MAC[p]}"\n'
                     f'src_mac = "{SWITCH_MAC[p]}"\n\n' for p in PORTS)
    path.write_text(f'''[switch]
address = "{switch["address"]}"
p4info = "{switch["p4info"]}"
json = "{switch["json"]}"

[[port]]
id = 0

[[port]]
id = 1
buffer = 100
rate = "100kbit"
sampling = 2
red = {{ minth = 5, maxth = 15, maxp = 0.1, wq = 0.002 }}

{routes}''')
    result = subprocess.run([str(BIN / "redctl"), "push", str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def ctl(switch, pushed):
    with Controller(switch["address"], ports=PORTS) as c:
        yield c


def probes(wire, burst_size: int, seconds: float, every: float = 0.1) -> threading.Thread:
    """Send a burst, then one frame every `every` s, in the background."""
    def run():
        for i in range(burst_size):
            wire[0].send(frame(2, i))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            wire[0].send(frame(2, 0))
            time.sleep(every)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def drain(wire, ctl):
    """Wait until the bottleneck queue is empty again (it drains at 80 ms/frame)."""
    burst(wire, ecn=2, n=1, quiet_s=1.0)
    while ctl.poll_sample(0.1) is not None:
        pass


def test_push_installs_pipeline_routes_red_and_sampling(ctl, wire):
    assert ctl.get_red(1) == PUSHED_RED
    assert ctl.get_sampling(1) == 2
    assert len(burst(wire, ecn=2, n=3)) == 3


def test_watch_prints_average_queue_and_rates(switch, pushed, wire):
    watch = subprocess.Popen([str(BIN / "redctl"), "--config", str(pushed), "watch", "--port", "1",
                              "--interval", "0.5", "--duration", "1.5", "--sampling", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)                     # connected and primary: digests now go to it
    probes(wire, burst_size=10, seconds=1.0).join()
    out, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    header, *lines = out.strip().splitlines()
    assert header.split() == ["t[s]", "avg[pkt]", "q[pkt]", "age[s]", "samples", "tx[pkt/s]",
                              "marks[/s]", "edrops[/s]", "fdrops[/s]"]
    assert len(lines) == 3
    rows = [line.split() for line in lines]
    assert any(row[1] not in ("-", "idle") and int(row[4]) > 0 and float(row[5]) > 0 for row in rows)


@pytest.mark.parametrize("burst_size, expected_maxp", [
    (0, 0.1 * 0.9 * 0.9),               # queue empty: below the band twice, maxp *= 0.9
    (40, 0.1 + 0.01 + 0.01),            # queue reported >= 4 > band [1.1, 1.4]: maxp += 0.01
])
def test_adaptive_red_moves_maxp_towards_the_target_band(ctl, wire, burst_size, expected_maxp):
    cfg = RedConfig(minth=0.5, maxth=2, maxp=0.1, wq_log=0, gentle=True)
    ctl.set_red(1, cfg)
    ctl.set_sampling(1, 1)
    drain(wire, ctl)
    traffic = probes(wire, burst_size, seconds=1.3)
    steps = []
    final = adaptive.run(ctl, 1, duration_s=1.0, report=lambda t, avg, maxp: steps.append((t, avg, maxp)))
    traffic.join()
    assert len(steps) == 2, steps
    assert final.maxp == pytest.approx(expected_maxp), steps
    assert ctl.get_red(1).maxp == pytest.approx(expected_maxp)
    drain(wire, ctl)


def test_show_prints_parameters_and_counters(switch, pushed, ctl):
    ctl.set_red(1, PUSHED_RED)
    result = subprocess.run([str(BIN / "redctl"), "--config", str(pushed), "show"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "port 0: drop-tail (no RED entry)" in result.stdout
    assert "port 1: mode=red minth=5 maxth=15 maxp=0.1 wq=2^-9 gentle=off ecn=on" in result.stdout
    assert "early_marks=" in result.stdout and "forced_drops=" in result.stdout


def test_adaptive_command_reports_each_step(switch, pushed, wire):
    cmd = subprocess.Popen([str(BIN / "redctl"), "--config", str(pushed), "adaptive", "--port", "1",
                            "--duration", "1", "--sampling", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)                     # connected: the run's first 0.5 s may have no samples
    probes(wire, burst_size=0, seconds=1.5).join()
    out, err = cmd.communicate(timeout=30)
    assert cmd.returncode == 0, err
    lines = out.strip().splitlines()
    assert lines[-1].startswith("port 1: mode=red")
    assert all(line.startswith("t=") and "maxp=" in line for line in lines[:-1])
