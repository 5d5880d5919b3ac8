// load_balance: ECMP. Packets to the virtual address pick one of several next
// hops by a CRC-16 hash of their 5-tuple (so a flow always takes the same path):
// the group table gives the hash's base and the number of members, the next-hop
// table rewrites the destination (MAC and IPv4) and port, egress rewrites the
// source MAC of the port.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header tcp_t {
    bit<16> srcPort; bit<16> dstPort; bit<32> seqNo; bit<32> ackNo;
    bit<4> dataOffset; bit<4> res; bit<8> flags; bit<16> window; bit<16> checksum;
    bit<16> urgentPtr;
}
struct metadata { bit<14> ecmp_select; }
struct headers { ethernet_t ethernet; ipv4_t ipv4; tcp_t tcp; }

parser LbParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 6: parse_tcp; default: accept; }
    }
    state parse_tcp { packet.extract(hdr.tcp); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control LbIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action set_ecmp_select(bit<16> ecmp_base, bit<32> ecmp_count) {
        hash(meta.ecmp_select, HashAlgorithm.crc16, ecmp_base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.tcp.srcPort, hdr.tcp.dstPort }, ecmp_count);
    }
    action set_nhop(bit<48> nhop_dmac, bit<32> nhop_ipv4, bit<9> port) {
        hdr.ethernet.dstAddr = nhop_dmac;
        hdr.ipv4.dstAddr = nhop_ipv4;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ecmp_group {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { drop; set_ecmp_select; }
        default_action = drop();
    }
    table ecmp_nhop {
        key = { meta.ecmp_select: exact; }
        actions = { drop; set_nhop; }
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 0) {
            ecmp_group.apply();
            ecmp_nhop.apply();
        }
    }
}

control LbEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action rewrite_mac(bit<48> smac) { hdr.ethernet.srcAddr = smac; }
    action drop() { mark_to_drop(standard_metadata); }
    table send_frame {
        key = { standard_metadata.egress_port: exact; }
        actions = { rewrite_mac; drop; }
        default_action = drop();
    }
    apply { send_frame.apply(); }
}

control Ipv4Checksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control LbDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); packet.emit(hdr.tcp); }
}

V1Switch(LbParser(), NoVerify(), LbIngress(), LbEgress(), Ipv4Checksum(), LbDeparser()) main;
