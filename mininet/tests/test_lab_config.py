"""Experiment files: presets, overrides, and errors that name the field."""

import re

import pytest

from aqmlab.config import ConfigError, load_experiment, parse_experiment
from labhelpers import REPO

MINIMAL = {"name": "x", "workload": [{"kind": "bulk"}]}


def test_default_experiment_is_valid_and_has_red_and_droptail():
    experiment = load_experiment(REPO / "mininet/experiments/default.toml")
    modes = {s.name: s.aqm.mode for s in experiment.scenarios}
    assert modes == {"red": "red", "droptail": "droptail"}
    ecn = {w.name: w.tcp.ecn for w in experiment.scenarios[0].workloads}
    assert ecn == {"ecn": True, "non-ecn": False}


def test_every_experiment_file_is_valid():
    for path in sorted((REPO / "mininet/experiments").glob("*.toml")):
        assert load_experiment(path).scenarios, path


def test_preset_values_and_overrides():
    scenario = parse_experiment({**MINIMAL, "topology": {
        "kind": "rfc2884", "bottleneck": {"delay": "30ms"}}}).scenarios[0]
    assert scenario.topology.shared_server
    assert scenario.topology.bottleneck.rate_bps == 1_500_000
    assert scenario.topology.bottleneck.delay_s == pytest.approx(0.030)


def test_scenario_overrides_merge_into_the_base():
    experiment = parse_experiment({**MINIMAL, "aqm": {"minth": 8, "maxth": 24},
                                   "scenario": [{"name": "a"}, {"name": "b", "aqm": {"maxp": 0.5}}]})
    a, b = experiment.scenarios
    assert (a.aqm.minth, a.aqm.maxp) == (8, 0.1)
    assert (b.aqm.minth, b.aqm.maxth, b.aqm.maxp) == (8, 24, 0.5)


def test_quick_mode_shrinks_duration_warmup_and_start_times():
    experiment = parse_experiment({"name": "x", "duration": 100, "quick_duration": 10,
                                   "warmup": 20, "workload": [{"kind": "crr", "start": 30}]})
    quick = experiment.for_quick()
    assert (quick.duration, quick.warmup) == (10, 2)
    assert quick.scenarios[0].workloads[0].start == pytest.approx(3)


def test_workload_tcp_inherits_the_file_defaults():
    scenario = parse_experiment({**MINIMAL, "tcp": {"initcwnd": 3}, "workload": [
        {"kind": "bulk", "tcp": {"ecn": True}}]}).scenarios[0]
    assert (scenario.workloads[0].tcp.initcwnd, scenario.workloads[0].tcp.ecn) == (3, True)


@pytest.mark.parametrize("change, field", [
    ({"name": "bad name"}, "name"),
    ({"workload": []}, "workload"),
    ({"workload": [{"kind": "ftp"}]}, "workload[0].kind"),
    ({"workload": [{"kind": "bulk", "pairs": 0}]}, "workload[0].pairs"),
    ({"workload": [{"kind": "crr", "size": "unlimited"}]}, "workload[0].size"),
    ({"workload": [{"kind": "bulk", "tcp": {"cc": "vegas"}}]}, "workload[0].tcp.cc"),
    ({"workload": [{"kind": "bulk", "tcp": {"mss": 20}}]}, "workload[0].tcp.mss"),
    ({"workload": [{"kind": "surge", "think": {"dist": "pareto", "k": 1}}]},
     "workload[0].think.alpha"),
    ({"workload": [{"kind": "bulk"}, {"kind": "bulk"}]}, "workload[1].name"),
    ({"aqm": {"maxp": 1.5}}, "aqm.maxp"),
    ({"aqm": {"minth": 20, "maxth": 10}}, "aqm.maxth"),
    ({"aqm": {"mode": "codel"}}, "aqm.mode"),
    ({"aqm": {"maxth": 30}, "topology": {"bottleneck": {"buffer": 20}}}, "aqm.maxth"),
    ({"topology": {"bottleneck": {"rate": "fast"}}}, "topology.bottleneck.rate"),
    ({"topology": {"bottleneck": {"buffer": "huge"}}}, "topology.bottleneck.buffer"),
    ({"topology": {"kind": "ring"}}, "topology.kind"),
    ({"topology": {"colour": "red"}}, "topology.colour"),
    ({"duration": 0}, "duration"),
    ({"scenario": [{"name": "a"}, {"name": "a"}]}, "scenario[1].name"),
    ({"scenario": [{"name": "a", "aqm": {"maxp": 0}}]}, "scenario[0].aqm.maxp"),
    ({"target": "tofino"}, "target"),
    ({"workload": [{"kind": "crr", "tool": "iperf3"}]}, "workload[0].tool"),
])
def test_mistakes_are_reported_with_their_field(change, field):
    with pytest.raises(ConfigError) as error:
        parse_experiment({**MINIMAL, **change})
    assert str(error.value).startswith(f"{field}:"), str(error.value)


@pytest.mark.parametrize("bottleneck, message", [
    ({"rate": "3furlong"}, "unknown rate unit 'furlong' in '3furlong' (use bit, kbit, mbit, gbit)"),
    ({"rate": "0mbit"}, "rate must be positive, got '0mbit'"),
    ({"buffer": "2parsec"}, "must be a packet count or one of bdp, bdp/sqrtn, got '2parsec'"),
    ({"delay": "5h"}, "unknown time unit 'h' in '5h' (use us, ms, s)"),
])
def test_unit_mistakes_say_which_units_exist(bottleneck, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_experiment({**MINIMAL, "topology": {"bottleneck": bottleneck}})


def test_unreadable_files_get_clear_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_experiment(bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_experiment(tmp_path / "missing.toml")
