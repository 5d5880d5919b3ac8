"""The engine's ports deliver frames as they were on the wire whatever the
interfaces' offload settings (issue 18): the 802.1Q tag the kernel strips is
put back before the P4 parser runs (as BMv2 sees it through libpcap), partial
checksums are completed and TSO super-frames are cut into MTU-sized segments.
Real veth pairs between namespaces (prefix ``io``); needs root."""

import hashlib
import json
import sys
import time
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.utils import rdpcap

import softswitch_engine as se
from softswitch_p4c.driver import compile_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import iolab  # noqa: E402

pytestmark = pytest.mark.root

#: Forwards VLAN-tagged frames from port 0 to port 1 with the VLAN id + 1; drops untagged ones.
VLAN_BUMP_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header vlan_t { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> ether_type; }
struct headers_t { ethernet_t eth; vlan_t vlan; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.ether_type) { 0x8100: parse_vlan; default: accept; }
    }
    state parse_vlan { pkt.extract(h.vlan); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (h.vlan.isValid()) {
            h.vlan.vid = h.vlan.vid + 1;
            sm.egress_spec = 1;
        } else {
            mark_to_drop(sm);
        }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); pkt.emit(h.vlan); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


@pytest.fixture
def lab():
    with iolab.VethLab() as lab:
        yield lab


@pytest.fixture(params=("ring", "recvmmsg"))
def rx_path(request, monkeypatch):
    """Both receive paths (SOFTSWITCH_RX): the ring, where frames longer than
    a slot come whole through the socket queue, and the recvmmsg fallback."""
    monkeypatch.setenv("SOFTSWITCH_RX", request.param)
    return request.param


def wait_for(condition, timeout_s=5.0):
    """Polls `condition` until it holds (True) or the timeout passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_vlan_tagged_frame_reaches_the_parser_tagged(lab, tmp_path, rx_path):
    bmv2_json, _ = compile_source(VLAN_BUMP_P4, tmp_path)
    sw = se.Switch(ports=lab.ports, pcap_dir=str(tmp_path / "pcap"))
    sw.load_pipeline(json.dumps(bmv2_json))
    sw.start()
    a, b = lab.hosts["a"], lab.hosts["b"]
    frame = (Ether(src=a.mac, dst=b.mac) / Dot1Q(prio=5, vlan=100) / IP(src=a.ip, dst=b.ip)
             / UDP(sport=7, dport=7) / b"tagged")
    try:
        a.run(sys.executable, "-c", "import sys; from scapy.all import Ether, sendp; "
              "sendp(Ether(bytes.fromhex(sys.argv[1])), iface=sys.argv[2], verbose=False)",
              bytes(frame).hex(), a.ifname)
        assert wait_for(lambda: sw.port_stats()[1]["tx"] >= 1), sw.port_stats()
    finally:
        sw.stop()
    forwarded = [p for p in rdpcap(str(tmp_path / "pcap" / "port1.pcap")) if Dot1Q in p]
    assert len(forwarded) == 1
    tag = forwarded[0][Dot1Q]
    assert (tag.vlan, tag.prio, bytes(tag[UDP].payload)) == (101, 5, b"tagged")


def test_tcp_connects_and_transfers_with_the_kernels_default_offloads(lab, tmp_path, rx_path):
    lab.restore_default_offloads()
    sw = se.Switch(ports=lab.ports, pcap_dir=str(tmp_path / "pcap"))
    sw.load_pipeline(iolab.forward_program())
    lab.install_routes(sw)
    sw.start()
    a, b = lab.hosts["a"], lab.hosts["b"]
    nbytes = 4 << 20
    try:
        rx = iolab.start_receiver(b, 5203, 0, 30.0, mode="tcp-recv")
        iolab.send_tcp(a, b.ip, 5203, nbytes)
        got = iolab.finish_receiver(rx)
    finally:
        sw.stop()
    assert got == {"bytes": nbytes, "sha256": hashlib.sha256(iolab.tcp_payload(nbytes)).hexdigest()}
    # The bottleneck saw what a wire carries: no frame longer than the 1500-byte MTU allows.
    for port in (0, 1):
        frames = rdpcap(str(tmp_path / "pcap" / f"port{port}.pcap"))
        assert frames and max(len(f) for f in frames) <= 1514
