"""Link impairments from the experiment file (loss, jitter, glitches on the
bottleneck) and the `echo` probe workload: the keys reach the softswitch as
exactly what its own `--tm` parser takes, bad values are one-line errors
naming the field, and through the lab the probe measures the configured loss
and jitter within a stated confidence (99.9 %)."""

import copy
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats
from softswitch_server.tm import build_port_configs

from aqmlab.config import ConfigError, parse_experiment
from aqmlab.p4switch import PortQueue, netem_impairments, tm_option
from aqmlab.reproductions.rfc889 import read_volleys

CONFIDENCE = 0.999

BASE = {"name": "impaired", "workload": [{"name": "probe", "kind": "echo"}],
        "topology": {"bottleneck": {"rate": "1mbit", "delay": "20ms 5ms",
                                    "distribution": "normal", "loss": "gemodel 1% 30%",
                                    "glitch": "2s 300ms"}}}


def parsed(data):
    return parse_experiment(data).scenarios[0]


def test_bottleneck_impairment_keys_are_parsed_with_netem_names():
    link = parsed(BASE).topology.bottleneck
    assert (link.delay_s, link.jitter_s) == pytest.approx((0.020, 0.005))
    assert (link.distribution, link.loss, link.glitch) == ("normal", "gemodel 1% 30%", "2s 300ms")
    plain = parsed({"name": "x", "workload": [{"kind": "bulk"}]}).topology.bottleneck
    assert (plain.jitter_s, plain.loss, plain.glitch) == (0.0, "", "")


def test_an_empirical_table_is_a_netem_dist_file(tmp_path):
    table = tmp_path / "measured.dist"
    table.write_text("-8192 0 8192 16384\n")
    data = copy.deepcopy(BASE)
    data["topology"]["bottleneck"]["distribution"] = str(table)
    link = parsed(data).topology.bottleneck
    assert link.distribution == str(table)
    queue = PortQueue(0, 25, 0.02, jitter_s=link.jitter_s, distribution=link.distribution)
    config = build_port_configs([f"1:{tm_option(queue)}"], None, {1})[1]
    assert (config.distribution, config.distribution_table) == ("table", (-1.0, 0.0, 1.0, 2.0))


def test_the_switch_parses_what_the_lab_emits():
    queue = PortQueue(1_000_000, 25, 0.020, 0.0, jitter_s=0.005, distribution="pareto",
                      loss="gemodel 1% 30%", glitch="2s 300ms")
    config = build_port_configs([f"1:{tm_option(queue)}"], None, {1})[1]
    assert (config.rate_bps, config.buffer_packets, config.delay_us, config.jitter_us) == \
        (1_000_000, 25, 20_000, 5_000)
    assert config.distribution == "pareto"
    assert config.loss_gemodel == pytest.approx((0.01, 0.3, 1.0, 0.0))
    assert (config.glitch_every_us, config.glitch_hold_us) == (2_000_000, 300_000)
    plain = build_port_configs([f"1:{tm_option(PortQueue(0, 64, 0.001))}"], None, {1})[1]
    assert (plain.loss, plain.loss_gemodel, plain.jitter_us, plain.glitch_every_us) == \
        (0.0, None, 0, 0)


def test_netem_gets_the_same_impairments_for_bmv2():
    queue = PortQueue(0, 64, 0.02, jitter_s=0.005, distribution="normal", loss="0.01")
    assert netem_impairments(queue) == " 5000us distribution normal loss 1%"
    assert netem_impairments(PortQueue(0, 64, 0.02, jitter_s=0.005)) == " 5000us"
    assert netem_impairments(PortQueue(0, 64, 0.02, jitter_s=0.005, distribution="paretonormal")) \
        == " 5000us distribution paretonormal"
    with pytest.raises(RuntimeError, match="glitch needs target softswitch"):
        netem_impairments(PortQueue(glitch="2s 300ms"))
    with pytest.raises(RuntimeError, match="netem reads tables by name"):
        netem_impairments(PortQueue(0, 64, 0.02, jitter_s=0.005, distribution="/data/measured.dist"))


@pytest.mark.parametrize("link, field, message", [
    ({"loss": "2"}, "topology.bottleneck.loss", "expected N% (0-100%) or a fraction below 1"),
    ({"loss": "gemodel 1%"}, "topology.bottleneck.loss", "expected gemodel p r"),
    ({"glitch": "2s"}, "topology.bottleneck.glitch", "expected MEAN_GAP HOLD"),
    ({"glitch": "0s 1s"}, "topology.bottleneck.glitch", "gap and hold must be above 0"),
    ({"distribution": "cauchy"}, "topology.bottleneck.distribution", "expected one of uniform"),
    ({"distribution": "/no/such.dist"}, "topology.bottleneck.distribution", "No such file"),
    ({"delay": "20ms 5xs"}, "topology.bottleneck.delay", "unknown time unit"),
])
def test_bad_impairments_are_one_line_errors_naming_the_field(link, field, message):
    data = copy.deepcopy(BASE)
    data["topology"]["bottleneck"].update(link)
    with pytest.raises(ConfigError) as error:
        parse_experiment(data)
    text = str(error.value)
    assert text.startswith(f"{field}: ") and message in text and "\n" not in text


def test_impairments_are_refused_on_access_links():
    for link, field in (({"loss": "1%"}, "loss"), ({"delay": "1ms 1ms"}, "delay")):
        data = copy.deepcopy(BASE)
        data["topology"]["server_access"] = {"rate": "10mbit", **link}
        with pytest.raises(ConfigError, match=rf"^topology\.server_access\.{field}: "):
            parse_experiment(data)


@pytest.mark.parametrize("workload, field", [
    ({"object_size": {"dist": "uniform", "low": 20, "high": 256}}, "object_size"),
    ({"object_size": {"dist": "lognormal", "mu": 5, "sigma": 1}}, "object_size.dist"),
    ({"timeout": "0s"}, "timeout"),
    ({"volleys": 0}, "volleys"),
])
def test_bad_echo_workloads_are_refused(workload, field):
    data = copy.deepcopy(BASE)
    data["workload"] = [{"name": "probe", "kind": "echo", **workload}]
    with pytest.raises(ConfigError, match=rf"^workload\[0\]\.{field}: "):
        parse_experiment(data)


# ---------------------------------------------------------------- through the lab

def lab_file(bottleneck, volleys, timeout):
    return f"""name = "impairment-check"
seed = 5
duration = 120
until_complete = true
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10gbit", buffer = 50, {bottleneck} }}
server_access = {{ rate = "10gbit", delay = "0ms" }}
client_access = {{ rate = "10gbit", delay = "0ms" }}
[aqm]
mode = "droptail"
[[workload]]
name = "probe"
kind = "echo"
volleys = {volleys}
timeout = "{timeout}"
object_size = {{ dist = "fixed", value = 100 }}
"""


def probe(tmp_path, bottleneck, volleys, timeout="1s"):
    (tmp_path / "check.toml").write_text(lab_file(bottleneck, volleys, timeout))
    out = subprocess.run([sys.executable, "-m", "aqmlab", "run", str(tmp_path / "check.toml"),
                          "--out", str(tmp_path / "study"), "--no-progress"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return read_volleys(tmp_path / "study" / "p00-r0")


def test_echo_loss_through_the_lab_is_binomial_at_the_configured_rate(tmp_path):
    """Loss on each direction of the line: an echo survives both with
    (1 - p)^2; the lost count must lie in the 99.9 % binomial interval."""
    p, volleys = 0.05, 600
    found = probe(tmp_path, f'delay = "2ms", loss = "{p:.0%}"', volleys, timeout="200ms")
    assert len(found) == volleys
    lost = sum(v.lost for v in found)
    expected = 1 - (1 - p) ** 2
    low, high = scipy_stats.binom.interval(CONFIDENCE, volleys, expected)
    assert low <= lost <= high, (lost, expected * volleys)


def test_echo_jitter_through_the_lab_has_the_configured_spread(tmp_path):
    """Normal jitter J on each direction: the round trip's variance is 2 J^2
    (plus the host's own, small at J = 10 ms); the sample variance must lie in
    the 99.9 % chi-square interval, the mean within 4 standard errors of 2 x
    the delay (no reordering with one echo in flight, nothing truncated)."""
    jitter, delay, volleys = 0.010, 0.040, 400
    found = probe(tmp_path, f'delay = "{delay * 1e3:g}ms {jitter * 1e3:g}ms", '
                            f'distribution = "normal"', volleys)
    rtt = np.array([v.rtt for v in found if not v.lost])
    assert len(rtt) == volleys
    variance = 2 * jitter ** 2
    low, high = scipy_stats.chi2.interval(CONFIDENCE, volleys - 1)
    assert low <= (volleys - 1) * rtt.var(ddof=1) / variance <= high, rtt.std()
    assert abs(rtt.mean() - 2 * delay) < 4 * math.sqrt(variance / volleys) + 0.5e-3
