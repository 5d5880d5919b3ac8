"""Helpers for the lab tests: a direct veth link between two tuned hosts,
workload pairs on it, a check that a lab left nothing behind, and a
reproduction's quick variant run end to end."""

import re
import subprocess
import sys
from pathlib import Path

from aqmlab.config import parse_workload
from aqmlab.lab import STATE_DIR
from aqmlab.topology import Endpoint, Pair, tbf_command
from aqmlab.tuning import TcpTuning, apply_sysctls

REPO = Path(__file__).resolve().parents[2]


def direct_link(lab, rate_bps=10_000_000, tuning=TcpTuning()):
    """server --(tbf at rate on the server's egress)--> client, 10.9.0.1 -> 10.9.0.2."""
    server, client = lab.add_host(ip=None), lab.add_host(ip=None)
    lab.add_link(server, client, "02:09:00:00:00:01", "02:09:00:00:00:02")
    lab.start()
    endpoints = []
    for host, ip, mac in ((server, "10.9.0.1", "02:09:00:00:00:01"),
                          (client, "10.9.0.2", "02:09:00:00:00:02")):
        intf = host.defaultIntf().name
        host.cmd(f"ip addr flush dev {intf}; ip addr add {ip}/24 dev {intf}; ip link set {intf} up")
        host.cmd(f"ip route replace 10.9.0.0/24 dev {intf} {tuning.route_options()}")
        apply_sysctls(host, tuning)
        endpoints.append(Endpoint(host, ip, mac, 0, "", tuning))
    if rate_bps:
        server.cmd(tbf_command(server.defaultIntf().name, rate_bps))
    return endpoints


def make_pairs(server, client, **workload):
    spec = parse_workload({"name": "w", **workload}, "workload", server.tuning)
    return [Pair(spec, 0, server, client, 5001)]


def leftovers(tag, state_dir=STATE_DIR):
    """Interfaces, processes and the state file (in the state directory the
    lab's run used) of a lab tag that still exist."""
    pattern = re.compile(rf"\b{tag}[hs]\d+")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found = [f"interface {m}" for m in pattern.findall(links)]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if pattern.search(cmdline):
                found.append(f"process {proc.name}: {cmdline}")
    if (Path(state_dir) / f"{tag}.json").exists():
        found.append("state file")
    return found


def run_quick_study(name, out):
    """`aqmlab study NAME --quick --out OUT` through the lab; asserts exit 0 and
    returns (stdout, report.md text)."""
    done = subprocess.run([sys.executable, "-m", "aqmlab", "study", name, "--quick", "--out",
                           str(out), "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return done.stdout, (Path(out) / "report.md").read_text()
