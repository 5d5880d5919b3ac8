"""redctl against the real built-in target: pipeline push over P4Runtime,
RED settings written and read back, invalid settings leave the switch
untouched, and counters/telemetry agree with the frames that come out.

Port 1 is a 100 kb/s bottleneck: a burst of 1000-byte frames sent within a
millisecond builds the queue 0, (0), 1, 2, ... (one frame leaves every 80 ms),
which with wq = 1 (avg = q) puts known frames into known RED regions.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from redctl_testnet import BIN, FRAME_BYTES, HOST_IP, HOST_MAC, PORTS, SWITCH_MAC, burst, delta
from redctl import RedConfig
from redctl.convert import to_constants

pytestmark = pytest.mark.root

# wq = 1, gentle, maxp = 1: q = 0 passes, q = 1 is always selected
# (p_b = 1 in [maxth, 2 maxth)), q >= 2 = 2 maxth is a forced drop.
SELECT_Q1 = RedConfig(minth=0.5, maxth=1, maxp=1.0, wq_log=0, gentle=True, mode="red", ecn=True)


def test_set_then_get_returns_the_settings(ctl):
    cfg = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9, gentle=False, mode="red", ecn=True)
    ctl.set_red(1, cfg)
    assert ctl.get_red(1) == cfg
    installed = ctl.get_red_constants(1)
    assert installed.decay_factors == to_constants(cfg, PORTS[1]).decay_factors
    changed = RedConfig(minth=20, maxth=60, maxp=0.25, wq_log=4, gentle=True, mode="droptail", ecn=False)
    ctl.set_red(1, changed)
    assert ctl.get_red(1) == changed
    assert ctl.get_red_constants(1).decay_factors == to_constants(changed, PORTS[1]).decay_factors
    assert 1 in ctl.red_ports()


@pytest.mark.parametrize("port, cfg, message", [
    (1, RedConfig(minth=15, maxth=5, maxp=0.1), "below maxth"),
    (1, RedConfig(minth=5, maxth=101, maxp=0.1), "buffer"),
    (1, RedConfig(minth=5, maxth=15, maxp=0.0), "maxp"),
    (1, RedConfig(minth=5, maxth=15, maxp=1.5), "maxp"),
    (1, RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=20), "wq_log"),
    (7, RedConfig(minth=5, maxth=15, maxp=0.1), "unknown port"),
])
def test_invalid_set_changes_nothing(ctl, port, cfg, message):
    good = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9)
    ctl.set_red(1, good)
    before = ctl.get_red_constants(1)
    with pytest.raises(ValueError, match=message):
        ctl.set_red(port, cfg)
    after = ctl.get_red_constants(1)
    assert after == before and after.decay_factors == before.decay_factors


def _redctl(switch, tmp_path, *args):
    config = tmp_path / "switch.toml"
    config.write_text("[[port]]\nid = 0\n\n[[port]]\nid = 1\nbuffer = 100\nrate = \"100kbit\"\n")
    return subprocess.run([str(BIN / "redctl"), "--address", switch["address"], "--config", str(config),
                           *args], capture_output=True, text=True, timeout=60)


def test_cli_invalid_set_exits_2_and_changes_nothing(ctl, switch, tmp_path):
    ctl.set_red(1, RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9))
    before = ctl.get_red_constants(1)
    result = _redctl(switch, tmp_path, "set", "--port", "1", "--minth", "20", "--maxth", "10")
    assert result.returncode == 2
    assert "minth (20.0) must be below maxth (10.0)" in result.stderr
    assert ctl.get_red_constants(1) == before


def test_cli_set_changes_only_given_options_and_show_reports_them(ctl, switch, tmp_path):
    ctl.set_red(1, RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9))
    result = _redctl(switch, tmp_path, "set", "--port", "1", "--maxp", "0.2", "--wq", "0.002", "--gentle")
    assert result.returncode == 0, result.stderr
    assert ctl.get_red(1) == RedConfig(minth=5, maxth=15, maxp=0.2, wq_log=9, gentle=True)
    shown = json.loads(_redctl(switch, tmp_path, "show", "--port", "1", "--json").stdout)
    assert shown["1"]["red"]["maxp"] == 0.2 and shown["1"]["red"]["gentle"] is True
    assert set(shown["1"]["counters"]) == {"packets", "bytes", "early_marks", "early_drops", "forced_drops"}


def test_frames_below_minth_are_forwarded_and_counted(ctl, wire):
    ctl.set_red(1, RedConfig(minth=50, maxth=90, maxp=0.1, wq_log=0))
    before = ctl.port_counters(1)
    got = burst(wire, ecn=2, n=10)
    assert len(got) == 10
    for pkt in got:
        assert pkt[Ether].dst == HOST_MAC[1] and pkt[Ether].src == SWITCH_MAC[1]
        assert pkt[IP].ttl == 63 and pkt[IP].tos & 3 == 2
        assert _valid_checksum(pkt)
    assert delta(before, ctl.port_counters(1)) == {
        "packets": 10, "bytes": 10 * FRAME_BYTES, "early_marks": 0, "early_drops": 0, "forced_drops": 0}


def _valid_checksum(pkt) -> bool:
    ip = pkt[IP].copy()
    del ip.chksum
    return IP(bytes(ip)).chksum == pkt[IP].chksum


@pytest.mark.parametrize("ecn_codepoint, port_ecn, expect", [
    (2, True, "mark"),            # ECT(0) -> CE
    (1, True, "mark"),            # ECT(1) -> CE
    (3, True, "mark"),            # CE stays CE
    (0, True, "drop"),            # Not-ECT is dropped
    (2, False, "drop"),           # ECN off on the port: selected ECT is dropped
])
def test_selected_frames_are_marked_or_dropped_per_rfc3168(ctl, wire, ecn_codepoint, port_ecn, expect):
    ctl.set_red(1, dataclasses.replace(SELECT_Q1, ecn=port_ecn))
    before = ctl.port_counters(1)
    sent = 6
    got = burst(wire, ecn=ecn_codepoint, n=sent)
    d = delta(before, ctl.port_counters(1))
    ce = [p for p in got if p[IP].tos & 3 == 3]
    assert all(_valid_checksum(p) for p in got)
    assert d["packets"] == len(got)
    assert d["packets"] + d["early_drops"] + d["forced_drops"] == sent
    assert d["forced_drops"] >= sent - 3          # every frame that found q >= 2
    if expect == "mark":
        assert d["early_marks"] >= 1 and d["early_drops"] == 0
        expected_ce = d["early_marks"] + (d["packets"] - d["early_marks"] if ecn_codepoint == 3 else 0)
        assert len(ce) == expected_ce
    else:
        assert d["early_drops"] >= 1 and d["early_marks"] == 0 and not ce


def test_forced_drops_above_maxth_in_classic_mode(ctl, wire):
    ctl.set_red(1, RedConfig(minth=0.5, maxth=1, maxp=0.1, wq_log=0, gentle=False))
    before = ctl.port_counters(1)
    got = burst(wire, ecn=2, n=6)
    d = delta(before, ctl.port_counters(1))
    assert d["forced_drops"] >= 4 and d["packets"] == len(got) and not any(p[IP].tos & 3 == 3 for p in got)


def test_droptail_mode_never_drops_in_the_program(ctl, wire):
    ctl.set_red(1, RedConfig(minth=0.5, maxth=1, maxp=1.0, wq_log=0, mode="droptail"))
    before = ctl.port_counters(1)
    got = burst(wire, ecn=0, n=6)
    assert len(got) == 6
    assert delta(before, ctl.port_counters(1))["packets"] == 6


def test_telemetry_reports_queue_average_and_decisions(ctl, wire):
    """A sample is taken in ingress and describes the latest frame that left
    egress on the port (see p4src/README.md)."""
    ctl.set_red(1, SELECT_Q1)
    ctl.set_sampling(1, 1)
    assert ctl.get_sampling(1) == 1
    while ctl.poll_sample(0.2) is not None:
        pass
    burst(wire, ecn=2, n=6)
    burst(wire, ecn=2, n=1)        # its sample describes the burst's last frame
    samples = []
    while (s := ctl.poll_sample(0.5)) is not None:
        samples.append(s)
    ctl.set_sampling(1, 0)
    assert samples and all(s.port == 1 for s in samples)
    assert all(s.avg == s.qdepth for s in samples)            # wq = 1
    assert {s.decision for s in samples} <= {"pass", "mark", "forced_drop"}
    assert any(s.qdepth >= 2 and s.decision == "forced_drop" for s in samples)


def test_changing_maxp_only_rewrites_the_config_entry(ctl, monkeypatch):
    """Adaptive RED changes maxp every 0.5 s: the ~2000 idle-decay entries,
    unchanged, are neither re-read nor rewritten (one update per call)."""
    base = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9)
    ctl.set_red(1, base)
    batches = []
    write = ctl.session.write
    monkeypatch.setattr(ctl.session, "write", lambda updates: (batches.append(len(updates)), write(updates)))
    ctl.set_red(1, dataclasses.replace(base, maxp=0.12))
    assert batches == [1]
    assert ctl.get_red(1).maxp == 0.12
    assert ctl.get_red_constants(1).decay_factors == to_constants(base, PORTS[1]).decay_factors
