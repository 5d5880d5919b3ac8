"""redctl drives the TNA program (hw/tofino/red_ecn.p4) on the built-in target through
P4Runtime: `set_red` writes set_red(mode, ecn), the port's red_pb ranges and the
Lpf time constant, as the TNA profile of p4src/README.md converts them."""
import subprocess
import sys
from pathlib import Path

import pytest

from redctl.controller import Controller, wait_for_server
from redctl.convert import PortSpec, RedConfig, to_tna_constants
from redctl.p4rt import decode
from redctl_testnet import _free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SPEC = PortSpec(buffer_packets=100, rate_bps=10e6)


@pytest.fixture(scope="module")
def tna_ctl(tmp_path_factory):
    out = tmp_path_factory.mktemp("tna")
    subprocess.run([str(BIN / "softswitch-p4c"), "--arch", "tna", str(ROOT / "hw/tofino/red_ecn.p4"),
                    "-o", str(out), "--p4runtime-files", str(out / "red_ecn.p4info.txtpb")], check=True)
    address = f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([str(BIN / "softswitch"), "--grpc-server-addr", address],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_server(address, timeout_s=20)
        c = Controller(address, ports={1: SPEC, 2: SPEC})
        c.push_pipeline(str(out / "red_ecn.p4info.txtpb"), str(out / "red_ecn.json"))
        yield c
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def installed(ctl, port):
    """(set_red params, [(lo, hi, action, pb)], Lpf tau) read back from the switch."""
    config = ctl._read_table("MyEgress.red_config", port)[0].table_entry.action.action
    ranges = []
    for e in ctl._read_table("MyEgress.red_pb", port):
        te = e.table_entry
        avg = te.match[1].range
        action = ctl.index.action_names[te.action.action.action_id].split(".")[-1]
        params = ctl._action_params(te.action.action)
        ranges.append((decode(avg.low), decode(avg.high), action, params.get("pb", 0)))
    tau = ctl._read_register("MyEgress.red_avg_lpf", port)
    return ctl._action_params(config), sorted(ranges), tau


def expected(cfg):
    c = to_tna_constants(cfg, SPEC)
    return c.action_params(), sorted((r.lo, r.hi, r.action, r.pb) for r in c.ranges), c.lpf_tau_ns


def test_set_red_installs_the_tna_profile_conversions(tna_ctl):
    cfg = RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9)
    assert tna_ctl.is_tna
    tna_ctl.set_red(1, cfg)
    assert installed(tna_ctl, 1) == expected(cfg)


@pytest.mark.parametrize("cfg", [RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9),
                                 RedConfig(minth=2.5, maxth=40, maxp=0.25, wq_log=4, gentle=True, ecn=False),
                                 RedConfig(minth=0, maxth=12.125, maxp=1, wq_log=0, mode="droptail")])
def test_get_red_reads_back_what_set_red_installed(tna_ctl, cfg):
    tna_ctl.set_red(2, cfg)
    assert tna_ctl.get_red(2) == cfg


def test_the_redctl_set_command_works_against_the_tna_program(tna_ctl):
    from redctl.cli import main
    tna_ctl.set_red(1, RedConfig(minth=5, maxth=15, maxp=0.1))
    assert main(["--address", tna_ctl.session.address, "set", "--port", "1", "--maxp", "0.2"]) == 0
    assert tna_ctl.get_red(1) == RedConfig(minth=5, maxth=15, maxp=0.2)


def test_a_live_change_replaces_the_ranges_and_leaves_other_ports_alone(tna_ctl):
    first, second = RedConfig(minth=5, maxth=15, maxp=0.1), RedConfig(minth=8, maxth=30, maxp=0.2,
                                                                        gentle=True, wq_log=4)
    tna_ctl.set_red(1, first)
    tna_ctl.set_red(2, first)
    tna_ctl.set_red(1, second)
    assert installed(tna_ctl, 1) == expected(second)
    assert installed(tna_ctl, 2) == expected(first)


def test_bad_parameters_change_nothing(tna_ctl):
    cfg = RedConfig(minth=5, maxth=15, maxp=0.1)
    tna_ctl.set_red(1, cfg)
    with pytest.raises(ValueError, match="maxth"):
        tna_ctl.set_red(1, RedConfig(minth=5, maxth=500, maxp=0.1))
    assert installed(tna_ctl, 1) == expected(cfg)
