// Header fields wider than 128 bits (BMv2 allows any width): the built-in target keeps
// them as consecutive pieces of at most 128 bits, so extract, emit, whole-header copies,
// header equality and checksums over the header see the same bits as on the wire.
#include <core.p4>
#include <v1model.p4>

header big_t { bit<200> blob; bit<8> tag; }
header sum_t { bit<16> csum; }
struct headers { big_t big; big_t copy; sum_t sum; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.big);
        pkt.extract(hdr.copy);
        pkt.extract(hdr.sum);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.big.tag == 1) {
            hdr.copy = hdr.big;                 // a whole-header copy
        }
        if (hdr.big == hdr.copy) {
            hdr.big.tag = 0xEE;                 // equal after the copy
        }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(true, { hdr.big }, hdr.sum.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.big); pkt.emit(hdr.copy); pkt.emit(hdr.sum); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
