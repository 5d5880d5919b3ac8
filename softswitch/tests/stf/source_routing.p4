// source_routing: the sender lists the egress port of every hop in a stack of
// source-route headers (etherType 0x1234); each switch pops the first entry and
// sends the packet out of its port; the entry marked bottom-of-stack restores
// the IPv4 etherType. No tables: the packet carries its own route.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_SRCROUTING = 0x1234;
#define MAX_HOPS 9

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header srcRoute_t { bit<1> bos; bit<15> port; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; srcRoute_t[MAX_HOPS] srcRoutes; ipv4_t ipv4; }

parser RouteParser(packet_in packet, out headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTING: parse_srcRouting;
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_srcRouting {
        packet.extract(hdr.srcRoutes.next);
        transition select(hdr.srcRoutes.last.bos) { 1: parse_ipv4; default: parse_srcRouting; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control RouteIngress(inout headers hdr, inout metadata meta,
                     inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action srcRoute_nhop() {
        standard_metadata.egress_spec = (bit<9>) hdr.srcRoutes[0].port;
        hdr.srcRoutes.pop_front(1);
    }
    action srcRoute_finish() { hdr.ethernet.etherType = TYPE_IPV4; }
    action update_ttl() { hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
    apply {
        if (hdr.srcRoutes[0].isValid()) {
            if (hdr.srcRoutes[0].bos == 1) { srcRoute_finish(); }
            srcRoute_nhop();
            if (hdr.ipv4.isValid()) { update_ttl(); }
        } else {
            drop();
        }
    }
}

control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control Ipv4Checksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control RouteDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.srcRoutes); packet.emit(hdr.ipv4); }
}

V1Switch(RouteParser(), NoVerify(), RouteIngress(), NoEgress(), Ipv4Checksum(),
         RouteDeparser()) main;
