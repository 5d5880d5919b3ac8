"""Forwarding: LPM choice, MAC rewrite, TTL, checksum, non-IPv4, malformed."""
from ptf.testutils import (send_packet, simple_arp_packet, simple_eth_packet,
                           simple_tcp_packet, simple_udpv6_packet, verify_packets)
from scapy.layers.l2 import Ether

from aqm import (DST, ECT0, FAST, HOST_MAC, NOT_ECT, OTHER, ROUTER_MAC, ROUTES, SENDER,
                 AqmTest, forwarded, udp)


def route(prefix):
    return next(r for r in ROUTES if r.prefix == prefix)


class LongestPrefixWins(AqmTest):
    """Each destination leaves on the port of its longest matching prefix,
    with that route's MACs; no route means drop."""

    def runTest(self):
        cases = (("10.0.1.5", "10.0.1.0/24"), ("10.0.1.200", "10.0.1.128/25"),
                 ("10.0.9.9", "10.0.0.0/16"), ("10.0.3.5", "10.0.3.0/24"))
        for dst, prefix in cases:
            pkt = udp(dst, ecn=NOT_ECT)
            send_packet(self, SENDER, pkt)
            verify_packets(self, forwarded(pkt, route(prefix)), [route(prefix).port])
        send_packet(self, SENDER, udp("192.168.7.7"))
        self.assert_quiet()


class RewriteTtlChecksum(AqmTest):
    """MACs rewritten, TTL - 1, checksum recomputed, everything else intact
    (DSCP, ECN, payload, TCP); TTL <= 1 is dropped."""

    def runTest(self):
        fast = route("10.0.1.0/24")
        sent = [udp(DST[FAST], ttl=ttl, ecn=NOT_ECT) for ttl in (64, 2, 255)]
        sent.append(udp(DST[FAST], dscp=46, ecn=ECT0))
        sent.append(simple_tcp_packet(eth_dst=ROUTER_MAC, eth_src=HOST_MAC,
                                      ip_dst=DST[FAST], ip_ttl=30, tcp_flags="S"))
        for pkt in sent:
            send_packet(self, SENDER, pkt)
            verify_packets(self, forwarded(pkt, fast), [FAST])
        for ttl in (1, 0):
            send_packet(self, SENDER, udp(DST[FAST], ttl=ttl))
        self.assert_quiet()


class NonIpv4AndMalformedDropped(AqmTest):
    """ARP, IPv6, other EtherTypes and IPv4 headers cut short are dropped
    silently, and the switch keeps forwarding afterwards."""

    def runTest(self):
        junk = [
            simple_arp_packet(eth_dst="ff:ff:ff:ff:ff:ff", eth_src=HOST_MAC),
            simple_udpv6_packet(eth_dst=ROUTER_MAC, eth_src=HOST_MAC),
            simple_eth_packet(eth_dst=ROUTER_MAC, eth_src=HOST_MAC, eth_type=0x88B5),
            Ether(dst=ROUTER_MAC, src=HOST_MAC, type=0x0800) / bytes(udp(DST[FAST]))[14:24],
            Ether(dst=ROUTER_MAC, src=HOST_MAC, type=0x0800),
        ]
        for frame in junk:
            send_packet(self, SENDER, frame)
        self.assert_quiet()
        pkt = udp(DST[OTHER])
        send_packet(self, SENDER, pkt)
        verify_packets(self, forwarded(pkt, route("10.0.3.0/24")), [OTHER])
