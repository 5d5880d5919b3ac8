// p4runtime: the program a P4Runtime controller drives in the tutorials' P4Runtime
// exercise. The ingress switch wraps IPv4 packets in a tunnel header (etherType
// 0x1212, destination id from its LPM route), transit switches forward on the id,
// and the egress switch strips the header; indexed counters count the packets
// and bytes entering and leaving each tunnel.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_TUNNEL = 0x1212;
const bit<16> TYPE_IPV4 = 0x0800;

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header tunnel_t { bit<16> proto_id; bit<16> dst_id; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; tunnel_t tunnel; ipv4_t ipv4; }

parser TunnelParser(packet_in packet, out headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_TUNNEL: parse_tunnel;
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_tunnel {
        packet.extract(hdr.tunnel);
        transition select(hdr.tunnel.proto_id) { TYPE_IPV4: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control TunnelIngress(inout headers hdr, inout metadata meta,
                      inout standard_metadata_t standard_metadata) {
    counter(1024, CounterType.packets_and_bytes) ingressTunnelCounter;
    counter(1024, CounterType.packets_and_bytes) egressTunnelCounter;

    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action tunnel_ingress(bit<16> dst_id) {
        hdr.tunnel.setValid();
        hdr.tunnel.dst_id = dst_id;
        hdr.tunnel.proto_id = hdr.ethernet.etherType;
        hdr.ethernet.etherType = TYPE_TUNNEL;
        ingressTunnelCounter.count((bit<32>) dst_id);
    }
    action tunnel_forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action tunnel_egress(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ethernet.etherType = hdr.tunnel.proto_id;
        egressTunnelCounter.count((bit<32>) hdr.tunnel.dst_id);
        hdr.tunnel.setInvalid();
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; tunnel_ingress; drop; NoAction; }
        default_action = NoAction();
    }
    table tunnel_exact {
        key = { hdr.tunnel.dst_id: exact; }
        actions = { tunnel_forward; tunnel_egress; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid() && !hdr.tunnel.isValid()) { ipv4_lpm.apply(); }
        if (hdr.tunnel.isValid()) { tunnel_exact.apply(); }
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

control TunnelDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.tunnel); packet.emit(hdr.ipv4); }
}

V1Switch(TunnelParser(), NoVerify(), TunnelIngress(), NoEgress(), Ipv4Checksum(),
         TunnelDeparser()) main;
