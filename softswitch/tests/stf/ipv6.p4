// IPv6 routing: longest-prefix match on the 128-bit destination, hop limit
// decremented, packets whose hop limit would reach 0 dropped (RFC 8200; IPv6 has
// no header checksum to update).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv6_t {
    bit<4> version; bit<8> trafficClass; bit<20> flowLabel;
    bit<16> payloadLen; bit<8> nextHdr; bit<8> hopLimit;
    bit<128> srcAddr; bit<128> dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; ipv6_t ipv6; }

parser V6Parser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x86DD: parse_ipv6; default: accept; }
    }
    state parse_ipv6 { packet.extract(hdr.ipv6); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control V6Ingress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action ipv6_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv6.hopLimit = hdr.ipv6.hopLimit - 1;
    }
    table ipv6_lpm {
        key = { hdr.ipv6.dstAddr: lpm; }
        actions = { ipv6_forward; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.ipv6.isValid() && hdr.ipv6.hopLimit > 1) { ipv6_lpm.apply(); } else { drop(); }
    }
}

control V6Deparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv6); }
}

V1Switch(V6Parser(), NoVerify(), V6Ingress(), NoEgress(), NoCompute(), V6Deparser()) main;
