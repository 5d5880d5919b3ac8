// ecn: the switch marks ECN-capable packets Congestion Experienced (ECN = 3)
// when the egress queue it joined was at least a threshold deep. The tutorial's
// threshold is a constant; here a table sets it so a synchronous test (queue
// depth 0) can exercise both sides of the comparison.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> diffserv; bit<2> ecn; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct metadata { bit<19> threshold; }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }

parser EcnParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control EcnIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
    }
    apply { if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); } }
}

control EcnEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action set_threshold(bit<19> depth) { meta.threshold = depth; }
    action no_marking() { meta.threshold = 19w0x7ffff; }
    table ecn_threshold {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_threshold; no_marking; }
        default_action = no_marking();
    }
    apply {
        ecn_threshold.apply();
        if (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2) {
            if (standard_metadata.enq_qdepth >= meta.threshold) { hdr.ipv4.ecn = 3; }
        }
    }
}

control EcnChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.ecn, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control EcnDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}

V1Switch(EcnParser(), NoVerify(), EcnIngress(), EcnEgress(), EcnChecksum(), EcnDeparser()) main;
