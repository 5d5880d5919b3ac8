// load_balance_selector: the load_balance exercise with an action selector in
// place of the hash-and-table pair. Entries for a virtual address name a group
// of next hops; the selector hashes the 5-tuple (CRC-16) to pick a member, so a
// flow keeps its path. Members set the next hop's MAC and port; TTL - 1 and
// the IPv4 checksum are updated as a router would.
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
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; tcp_t tcp; }

parser LbsParser(packet_in packet, out headers hdr, inout metadata meta,
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

control LbsVerify(inout headers hdr, inout metadata meta) { apply { } }

control LbsIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) next_hops;

    action drop() { mark_to_drop(standard_metadata); }
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ecmp {
        key = {
            hdr.ipv4.dstAddr: lpm;
            hdr.ipv4.srcAddr: selector;
            hdr.ipv4.dstAddr: selector;
            hdr.ipv4.protocol: selector;
            hdr.tcp.srcPort: selector;
            hdr.tcp.dstPort: selector;
        }
        actions = { drop; set_nhop; }
        implementation = next_hops;
        size = 64;
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ecmp.apply();
        } else {
            drop();
        }
    }
}

control LbsEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) { apply { } }

control LbsComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control LbsDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); packet.emit(hdr.tcp); }
}

V1Switch(LbsParser(), LbsVerify(), LbsIngress(), LbsEgress(), LbsComputeChecksum(),
         LbsDeparser()) main;
