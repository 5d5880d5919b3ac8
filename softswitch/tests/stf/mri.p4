// mri: Multi-Hop Route Inspection. Packets carry an IPv4 option (number 31)
// holding a count and a list of (switch id, queue depth) records; each switch
// that forwards such a packet prepends its own record and grows the option, the
// IPv4 header length and the total length accordingly. The IPv4 checksum covers
// the options (RFC 791).
#include <core.p4>
#include <v1model.p4>

const bit<5> IPV4_OPTION_MRI = 31;
#define MAX_HOPS 3

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header ipv4_option_t { bit<1> copyFlag; bit<2> optClass; bit<5> option; bit<8> optionLength; }
header mri_t { bit<16> count; }
header switch_t { bit<32> swid; bit<32> qdepth; }

struct parser_metadata_t { bit<16> remaining; }
struct metadata { parser_metadata_t parser_metadata; }
struct headers {
    ethernet_t ethernet; ipv4_t ipv4; ipv4_option_t ipv4_option; mri_t mri;
    switch_t[MAX_HOPS] swtraces;
}

parser MriParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) { 5: accept; default: parse_ipv4_option; }
    }
    state parse_ipv4_option {
        packet.extract(hdr.ipv4_option);
        transition select(hdr.ipv4_option.option) { IPV4_OPTION_MRI: parse_mri; default: accept; }
    }
    state parse_mri {
        packet.extract(hdr.mri);
        meta.parser_metadata.remaining = hdr.mri.count;
        transition select(meta.parser_metadata.remaining) { 0: accept; default: parse_swtrace; }
    }
    state parse_swtrace {
        packet.extract(hdr.swtraces.next);
        meta.parser_metadata.remaining = meta.parser_metadata.remaining - 1;
        transition select(meta.parser_metadata.remaining) { 0: accept; default: parse_swtrace; }
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control MriIngress(inout headers hdr, inout metadata meta,
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

control MriEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action add_swtrace(bit<32> swid) {
        hdr.mri.count = hdr.mri.count + 1;
        hdr.swtraces.push_front(1);
        hdr.swtraces[0].setValid();
        hdr.swtraces[0].swid = swid;
        hdr.swtraces[0].qdepth = (bit<32>) standard_metadata.deq_qdepth;
        hdr.ipv4.ihl = hdr.ipv4.ihl + 2;
        hdr.ipv4_option.optionLength = hdr.ipv4_option.optionLength + 8;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen + 8;
    }
    table swtrace {
        actions = { add_swtrace; NoAction; }
        default_action = NoAction();
    }
    apply { if (hdr.mri.isValid()) { swtrace.apply(); } }
}

control MriChecksum(inout headers hdr, inout metadata meta) {
    apply {
        // Fields of headers that are not valid are zero and add nothing to the sum.
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
              hdr.ipv4_option.copyFlag, hdr.ipv4_option.optClass, hdr.ipv4_option.option,
              hdr.ipv4_option.optionLength, hdr.mri.count,
              hdr.swtraces[0].swid, hdr.swtraces[0].qdepth,
              hdr.swtraces[1].swid, hdr.swtraces[1].qdepth,
              hdr.swtraces[2].swid, hdr.swtraces[2].qdepth },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MriDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_option);
        packet.emit(hdr.mri);
        packet.emit(hdr.swtraces);
    }
}

V1Switch(MriParser(), NoVerify(), MriIngress(), MriEgress(), MriChecksum(), MriDeparser()) main;
