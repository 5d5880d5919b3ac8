"""`until_complete = true`: a run ends when every fixed-size bulk transfer is
done (the file's duration is the cap), and the window and every metric end
there too."""

import csv
import json
import subprocess
import sys

import pytest

from aqmlab import metrics
from aqmlab.config import ConfigError, parse_experiment

TINY = """name = "until-complete"
duration = 60
warmup = 1
seed = 3
until_complete = true

[topology]
kind = "rfc2884"
bottleneck = { rate = "10mbit", delay = "5ms", buffer = 60 }

[aqm]
mode = "droptail"

[[workload]]
name = "background"
kind = "bulk"

[[workload]]
name = "measured"
kind = "bulk"
size = "300KB"
start = 1
"""


def test_until_complete_needs_a_fixed_size_bulk_workload():
    with pytest.raises(ConfigError) as error:
        parse_experiment({"name": "x", "until_complete": True,
                          "workload": [{"name": "w", "kind": "bulk"}]})
    assert str(error.value) == ("until_complete: needs an echo workload or a bulk workload "
                                "with a fixed size and repeat = false")


def test_a_flow_stopped_before_its_deadline_counts_its_samples():
    records = [{"kind": "sample", "t": t, "bytes": 1000 * t} for t in range(1, 11)]
    assert metrics.window_bytes(records, (2, 8)) == pytest.approx(6000)


def test_a_transfer_cut_off_at_the_cap_counts_its_partial_bytes_and_is_flagged():
    cut = {"kind": "bulk", "workload": "m", "flow": "m.0", "start": 20.0, "end": 60.004,
           "bytes": 1_700_000, "size": 20_000_000, "complete": False}
    assert metrics.window_bytes([cut], (20, 60)) == 1_700_000
    summary = metrics.workload_summary([cut], (20, 60))["m"]
    assert summary["goodput_bps"] == pytest.approx(8 * 1_700_000 / 40)
    assert summary["incomplete_transfers"] == 1


def test_run_ends_when_the_measured_transfer_completes(tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY)
    out = subprocess.run([sys.executable, "-m", "aqmlab", "run", str(tmp_path / "tiny.toml"),
                          "--out", str(tmp_path / "study"), "--no-progress"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads((tmp_path / "study" / "p00-r0" / "result.json").read_text())
    start, end = result["window"]
    assert end - result["epoch"] < 30          # well before the 60 s cap
    with open(tmp_path / "study" / "p00-r0" / "transfers.csv", newline="") as handle:
        measured = [row for row in csv.DictReader(handle) if row["workload"] == "measured"]
    assert len(measured) == 1 and measured[0]["complete"] == "True"
    background = [g for flow, g in result["goodputs"].items() if flow.startswith("background/")]
    assert len(background) == 1 and background[0] > 1e6, result["goodputs"]  # up to the end
