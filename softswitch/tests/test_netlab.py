"""netlab: namespaces and veth pairs are made as described and always removed.
Needs root; names start with `nl` plus a random tag."""
import signal
import subprocess
import sys
import uuid

import pytest

from softswitch_server import netlab

pytestmark = pytest.mark.root

# `ethtool -k` feature names of the offloads OFFLOADS_OFF turns off
OFFLOAD_FEATURES = ("rx-checksumming", "tx-checksumming", "tcp-segmentation-offload",
                    "generic-segmentation-offload", "generic-receive-offload")


@pytest.fixture
def tag():
    return "nl" + uuid.uuid4().hex[:6]


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def leftovers(tag: str) -> list[str]:
    return sorted(n for n in namespaces() | root_links() if tag in n)


def offloads(ifname: str, ns: str | None = None) -> dict[str, str]:
    out = netlab.sh("ethtool", "-k", ifname, ns=ns).stdout
    pairs = (line.split(":", 1) for line in out.splitlines() if ":" in line)
    return {k.strip(): v.split()[0] for k, v in pairs if k.strip() in OFFLOAD_FEATURES}


def test_pair_into_namespace_is_up_with_offloads_off_and_then_removed(tag):
    with netlab.Namespace(f"{tag}h") as host, \
            netlab.VethPair(f"{tag}s", f"{tag}p", peer_ns=host.name, peer_rename="eth0") as pair:
        assert host.name in namespaces()
        assert pair.end in root_links() and f"{tag}p" not in root_links()
        assert "state UP" in host.run("ip", "link", "show", "eth0").stdout
        assert offloads(pair.end) == dict.fromkeys(OFFLOAD_FEATURES, "off")
        assert offloads("eth0", ns=host.name) == dict.fromkeys(OFFLOAD_FEATURES, "off")
        assert host.run("sysctl", "-n", "net.ipv6.conf.eth0.disable_ipv6").stdout.strip() == "1"
    assert leftovers(tag) == []


def test_pair_inside_one_namespace(tag):
    with netlab.Namespace(f"{tag}n") as ns:
        pair = netlab.VethPair(f"{tag}a", f"{tag}b", ns=ns.name, peer_ns=ns.name).create()
        assert {pair.end, pair.peer} <= set(ns.run("ls", "/sys/class/net").stdout.split())
        assert offloads(pair.peer, ns=ns.name) == dict.fromkeys(OFFLOAD_FEATURES, "off")
    assert leftovers(tag) == []


def test_nothing_is_left_after_an_exception_inside_the_block(tag):
    with pytest.raises(RuntimeError, match="inside"):
        with netlab.Namespace(f"{tag}h") as host, \
                netlab.VethPair(f"{tag}s", f"{tag}p", peer_ns=host.name):
            raise RuntimeError("inside")
    assert leftovers(tag) == []


def test_failed_setup_removes_what_it_made_and_reports_stderr(tag):
    with pytest.raises(netlab.CommandError, match="Cannot find device|does not exist"):
        with netlab.Namespace(f"{tag}h") as host:
            host.run("ip", "link", "set", f"{tag}x", "up")
    with pytest.raises(netlab.CommandError):   # no such namespace to move the peer into
        netlab.VethPair(f"{tag}s", f"{tag}p", peer_ns=f"{tag}missing").create()
    assert leftovers(tag) == []


def test_bad_names_are_refused_before_anything_is_made(tag):
    with pytest.raises(ValueError, match="15"):
        netlab.VethPair(f"{tag}-much-too-long", f"{tag}p")
    with pytest.raises(ValueError):
        netlab.Namespace("a/b")
    assert leftovers(tag) == []


def test_stop_signals_then_kills_a_process_that_does_not_exit(tag):
    with netlab.Namespace(f"{tag}h") as host:
        polite = host.popen("sleep", "30")
        netlab.stop(polite)
        assert polite.returncode == -signal.SIGINT
        stubborn = host.popen(sys.executable, "-c", "import signal, sys, time\n"
                              "signal.signal(signal.SIGINT, signal.SIG_IGN)\nprint(flush=True)\ntime.sleep(30)",
                              stdout=subprocess.PIPE)
        stubborn.stdout.readline()   # SIGINT is ignored from here on
        netlab.stop(stubborn, timeout_s=0.5)
        assert stubborn.returncode == -signal.SIGKILL
        netlab.stop(stubborn)        # already ended: nothing to do
    assert leftovers(tag) == []
