"""The `softswitch` command line: flags, traffic-manager options, bad input."""
import statistics
import subprocess
import sys

import pytest

from softswitch_server.cli import parse_args
from softswitch_server.tm import PortConfig, TmError, apply_settings, build_port_configs, parse_delay, parse_rate


def test_flags_mirror_simple_switch_grpc():
    args = parse_args(["-i", "0@sv0", "-i", "1@sv1", "--grpc-server-addr", "127.0.0.1:50001",
                       "--device-id", "3", "--cpu-port", "255", "--seed", "7", "--log-console",
                       "--tm", "1:rate=1.5mbit,buffer=100,buffer-bytes=150000,delay=20ms,"
                               "ingress-delay=250us,prio-queues=2"])
    assert args.ports == {0: "sv0", 1: "sv1"}
    assert (args.device_id, args.cpu_port, args.seed) == (3, 255, 7)
    assert args.port_configs == {1: PortConfig(1_500_000, 100, 150000, 20_000, 250, 2)}


@pytest.mark.parametrize("text,bps", [("10mbit", 10**7), ("1.5mbit", 1_500_000),
                                      ("100000", 100000), ("2gbit", 2 * 10**9), (64000, 64000)])
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text,us", [("20ms", 20000), ("250us", 250), ("1.5s", 1_500_000)])
def test_delays(text, us):
    assert parse_delay(text) == us


def test_tm_file_then_flags_override(tmp_path):
    f = tmp_path / "tm.toml"
    f.write_text('[ports.1]\nrate = "10mbit"\nbuffer = 50\ndelay = "5ms"\n'
                 '[ports.0]\nrate = 1000000\n')
    configs = build_port_configs(["1:buffer=80"], str(f), {0: "a", 1: "b"})
    assert configs[1] == PortConfig(rate_bps=10**7, buffer_packets=80, delay_us=5000)
    assert configs[0] == PortConfig(rate_bps=10**6)


@pytest.mark.parametrize("text,loss,gemodel", [
    ("0.01", 0.01, None), ("1%", 0.01, None), ("random 0.5%", 0.005, None), (0.25, 0.25, None),
    ("100%", 1.0, None), ("gemodel 2% 25%", 0.0, (0.02, 0.25, 1.0, 0.0)),
    ("gemodel 0.02 0.25 90% 1%", 0.0, (0.02, 0.25, 0.9, 0.01)),
])
def test_loss_follows_netem_syntax(text, loss, gemodel):
    config = PortConfig()
    apply_settings(config, {"loss": text}, "test")
    assert config.loss == pytest.approx(loss)
    assert config.loss_gemodel == (pytest.approx(gemodel) if gemodel else None)


def test_delay_takes_netem_jitter_and_distribution():
    config = build_port_configs(["1:delay=20ms 5ms,distribution=pareto"], None, {1: "b"})[1]
    assert (config.delay_us, config.jitter_us, config.distribution) == (20000, 5000, "pareto")
    assert build_port_configs(["1:delay=20ms"], None, {1: "b"})[1].jitter_us == 0


def test_distribution_takes_netem_tables(tmp_path):
    """An empirical table: a .dist file in netem's format (standard deviations
    x 8192, '#' comments), or a table name iproute2 installs."""
    table = tmp_path / "measured.dist"
    table.write_text("# measured\n-8192 0\n4096 16384 # two sd\n")
    config = build_port_configs([f"1:delay=20ms 5ms,distribution={table}"], None, {1: "b"})[1]
    assert (config.distribution, config.distribution_table) == ("table", (-1.0, 0.0, 0.5, 2.0))
    assert config.engine_kwargs()["distribution_table"] == [-1.0, 0.0, 0.5, 2.0]
    assert "distribution_table" not in build_port_configs(["1:delay=1ms"], None, {1: "b"})[1] \
        .engine_kwargs()
    for bad in ("1 2 x\n", "40000\n"):
        (tmp_path / "bad.dist").write_text(bad)
        with pytest.raises(TmError, match="entries must be integers in -32768..32767"):
            build_port_configs([f"1:distribution={tmp_path / 'bad.dist'}"], None, {1: "b"})


def test_distribution_takes_the_tables_iproute2_installs():
    # iproute2 (requirements-apt.txt) ships paretonormal.dist: 4096 entries, mean ~0.
    config = build_port_configs(["1:delay=20ms 5ms,distribution=paretonormal"], None, {1: "b"})[1]
    assert config.distribution == "table" and len(config.distribution_table) == 4096
    assert abs(statistics.fmean(config.distribution_table)) < 0.05


def test_glitch_is_mean_gap_and_hold():
    config = build_port_configs(["1:glitch=2s 300ms"], None, {1: "b"})[1]
    assert (config.glitch_every_us, config.glitch_hold_us) == (2_000_000, 300_000)


def test_a_later_loss_replaces_the_earlier_model(tmp_path):
    f = tmp_path / "tm.toml"
    f.write_text('[ports.1]\nloss = "gemodel 1% 30%"\n')
    assert build_port_configs([], str(f), {1: "b"})[1].loss_gemodel == pytest.approx((0.01, 0.3, 1.0, 0.0))
    config = build_port_configs(["1:loss=2%"], str(f), {1: "b"})[1]
    assert (config.loss, config.loss_gemodel) == (pytest.approx(0.02), None)


@pytest.mark.parametrize("flags,contents", [
    (["1:rate=fast"], None), (["1:delay=20"], None), (["1:buffer=0"], None),
    (["1:color=red"], None), (["1"], None), (["7:rate=1mbit"], None),
    (["1:prio-queues=9"], None), ([], "[ports.1]\nrate = [1]\n"), ([], "not toml ="),
    (["1:loss=1"], None), (["1:loss=101%"], None), (["1:loss=random 1% 25%"], None),
    (["1:loss=gemodel 1%"], None), (["1:loss=gemodel 1% 2% 3% 4% 5%"], None), (["1:loss=-0.1"], None),
    (["1:loss=lots"], None), ([], "[ports.1]\nloss = 2.5\n"),
    (["1:delay=20ms 5"], None), (["1:delay=20ms 5ms 25%"], None), (["1:distribution=cauchy"], None),
    (["1:distribution=/no/such/table.dist"], None), ([], "[ports.1]\ndistribution = \"t.dist\"\n"),
    (["1:glitch=2s"], None), (["1:glitch=0s 1ms"], None), (["1:glitch=2s 300"], None),
    ([], "[switch]\nx = 1\n"),
])
def test_bad_tm_options_name_the_problem(tmp_path, flags, contents):
    path = None
    if contents is not None:
        path = tmp_path / "tm.toml"
        path.write_text(contents)
    with pytest.raises(TmError):
        build_port_configs(flags, path and str(path), {0: "a", 1: "b"})


@pytest.mark.parametrize("argv", [
    ["--bogus"], ["-i", "veth0"], ["-i", "0@a", "-i", "0@b"], ["-i", "600@a"],
    ["-i", "0@a", "--cpu-port", "0"], ["-i", "0@a", "--tm", "0:rate=x"],
    ["/nonexistent.json"], ["--device-id", "x"], ["-i", "0@a", "--p4info", "x.txt"],
    ["-i", "0@averyveryverylongname"], ["-i", "0@a", "--realtime", "100"],
    ["-i", "0@a", "--realtime", "-1"], ["-i", "0@a", "--realtime", "10", "--busy-poll"],
])
def test_bad_flags_exit_2_with_a_message(argv):
    proc = subprocess.run([sys.executable, "-m", "softswitch_server.cli", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "softswitch: error:" in proc.stderr


def run_cli(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "softswitch_server.cli", *argv],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("name", ["red.p4", "red.json"])
def test_p4_source_gets_a_one_line_hint_to_compile_it(tmp_path, name):
    source = tmp_path / name
    source.write_text("#include <v1model.p4>\nheader h_t { bit<8> f; }\n")
    done = run_cli(str(source))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "P4 source" in done.stderr and "compile it first" in done.stderr
    assert f"softswitch-p4c {source}" in done.stderr and "JSON syntax" not in done.stderr


def test_the_p4info_next_to_the_json_is_the_default(tmp_path):
    (tmp_path / "prog.json").write_text("{}")
    assert parse_args([str(tmp_path / "prog.json")]).p4info is None
    (tmp_path / "prog.p4info.txtpb").write_text("")
    assert parse_args([str(tmp_path / "prog.json")]).p4info == str(tmp_path / "prog.p4info.txtpb")
    other = tmp_path / "other.txtpb"
    other.write_text("")
    assert parse_args([str(tmp_path / "prog.json"), "--p4info", str(other)]).p4info == str(other)


def test_a_second_switch_on_a_used_address_fails_in_one_line():
    """gRPC enables SO_REUSEPORT: both used to listen and share the clients."""
    import grpc
    from server_support import free_port
    address = f"127.0.0.1:{free_port()}"
    first = subprocess.Popen([sys.executable, "-m", "softswitch_server.cli",
                              "--grpc-server-addr", address],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=30)
        second = run_cli("--grpc-server-addr", address)
        assert second.returncode == 1
        assert second.stderr == (f"softswitch: cannot listen on {address}: the address is in use "
                                 "(another switch?) or not local\n")
        assert first.poll() is None
    finally:
        first.kill()
        first.wait()
