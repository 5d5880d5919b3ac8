"""The benchmark in its short form (`run.py --quick`), so CI keeps it working.
It checks that every measurement ran and was written, not how fast: the
numbers belong to softswitch/bench/RESULTS.md."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "run.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_run", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_link_that_is_the_ideal_serialiser_has_no_timing_error():
    # A saturating train at 100 Mb/s (a 1514-byte frame every 60.56 us, one leaving
    # every 121.12 us) with kernel stamps, ns since the epoch: a float ideal drifted
    # 32 ns per frame there, 64 us by the 2000th.
    bench, t0 = load_bench(), 1_795_883_537_139_571_846
    ingress = {"frames": [[seq, t0 + seq * 60_560, 1514] for seq in range(2000)]}
    egress = {"frames": [[seq, t0 + (seq + 1) * 121_120, 1514] for seq in range(2000)]}
    assert bench.timing_errors_us(ingress, egress, 100_000_000, 0) == [0.0] * 2000


@pytest.mark.root
def test_quick_benchmark_measures_everything(tmp_path):
    out = tmp_path / "RESULTS.md"
    run = subprocess.run([sys.executable, str(BENCH), "--quick", "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()
    raw = json.loads(text.split("```json")[1].split("```")[0])
    for size in ("64", "1500"):
        assert {"c", "c-ring", "softswitch", "softswitch-recvmmsg", "softswitch-minimal", "softswitch-interpreter",
                "softswitch-minimal-interpreter"} <= raw["pps"][size].keys()
        assert all(r["delivered_pps"] > 0 and r["cpu_ns_per_frame"] > 0 for r in raw["pps"][size].values())
    assert [r["rate_mbps"] for r in raw["rate"]] == [1.5, 10.0, 100.0]
    assert all(r["wire_mbps"] > 0 for r in raw["rate"])
    assert len(raw["latency"]) == 2 and len(raw["delay"]) == 2
    assert [r["forwarder"] for r in raw["traversal"]] == ["softswitch", "c-ring", "softswitch-busy", "c-ring-spin"]
    assert all(r["delivered"] > 0 and {"p50", "p99", "max"} <= r["us"].keys() for r in raw["traversal"])
    assert raw["traversal_added_us"].keys() == {"softswitch", "softswitch-busy"}
    assert all(added.keys() == {"p50", "p90", "p99", "p99.9", "max"} for added in raw["traversal_added_us"].values())
    assert [r["spin_us"] for r in raw["floor"]] == [0, 20, 60, 240]
    assert all(r["deadlines"] == 2000 and r["late_us"]["p50"] >= 0 for r in raw["floor"])
    assert raw["send_floor"]["delivered"] == raw["send_floor"]["sent"] == 200
    trains = [(r["switch"], r["rate_mbps"], r["pattern"], r["delay_us"] > 0) for r in raw["timing"]]
    assert trains == [(switch, rate, pattern, delayed) for switch in ("softswitch", "softswitch-busy")
                      for rate in (10.0, 100.0, 1000.0)
                      for pattern, delayed in (("saturating", False), ("paced", False), ("paced", True))]
    assert all(r["delivered"] > 0 and {"p50", "p99", "max"} <= r["error_us"].keys() for r in raw["timing"])
    assert "## Link timing" in text
    assert "| 64 |" in text and "| 100.0 |" in text
    assert [r["program"] for r in raw["instructions"]] == ["benchmark program", "minimal program"]
    assert all(r["compiled"] > 0 and r["interpreter"] > 0 for r in raw["instructions"])
