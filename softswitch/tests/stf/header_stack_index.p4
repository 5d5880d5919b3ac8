// Run-time header stack indices in a parser and in ingress, lowered as p4c's BMv2
// mid-end does (HSIndexSimplifier): each statement becomes an if/else-if chain over
// the constant indices, an index expression is computed once first, and an index out
// of range runs no branch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; bit<8> g; }
header idx_t { bit<8> i; bit<8> j; }
struct headers { idx_t idx; h_t[3] s; }
struct metadata { }

parser HsParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.idx);
        packet.extract(hdr.s.next);
        transition select(hdr.idx.j) { 1: second; default: accept; }
    }
    state second {
        packet.extract(hdr.s[hdr.idx.j]);
        hdr.s[hdr.idx.j].g = hdr.s[hdr.idx.j].g + 1;
        transition accept;
    }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control HsIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.s[hdr.idx.i].f = hdr.s[hdr.idx.i].f + 0x10;
        if (hdr.s[hdr.idx.i + 1].isValid()) {
            hdr.idx.j = 0xAA;
        }
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control HsDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.idx); packet.emit(hdr.s); }
}

V1Switch(HsParser(), NoCk(), HsIngress(), NoEgress(), NoCk(), HsDeparser()) main;
