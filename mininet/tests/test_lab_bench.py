"""The lab benchmark (`make bench`, mininet/bench/run.py) measures real flows:
its scale probe reads every flow's records before the lab removes their logs
(it once reported 0 flows and 0 Mb/s because it read them after close)."""

import importlib.util
import subprocess

from labhelpers import REPO


def bench_module():
    spec = importlib.util.spec_from_file_location("lab_bench", REPO / "mininet/bench/run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_probe_reports_every_flow_and_the_link_carries_them():
    before = links()
    result = bench_module().scale(pairs=2, connections=1)
    assert result["flows_reporting"] == 2
    # 100 Mb/s bottleneck, 15 s, goodput after 5 s: far above 0 whatever the machine's load.
    assert result["goodput_mbps"] > 20
    assert links() == before


def links():
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.count("\n")
