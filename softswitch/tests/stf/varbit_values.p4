// varbit values: a varbit local, varbit equality (equal when both the widths
// and the values are), header equality over headers holding varbits, and a
// varbit assigned back into a header.
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> bits; bit<8> status; }
header opts_t { varbit<32> data; }
struct metadata { }
struct headers { len_t len; opts_t a; opts_t b; }

parser VParser(packet_in packet, out headers hdr, inout metadata meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.len);
        packet.extract(hdr.a, (bit<32>) hdr.len.bits);
        packet.extract(hdr.b, (bit<32>) hdr.len.bits);
        transition accept;
    }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control VIngress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        varbit<32> local = hdr.a.data;
        if (hdr.a.data == hdr.b.data) { hdr.len.status = 1; }
        if (hdr.a == hdr.b) { hdr.len.status = hdr.len.status | 2; }
        hdr.b.data = local;
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control VDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.len); packet.emit(hdr.a); packet.emit(hdr.b); }
}

V1Switch(VParser(), NoCk(), VIngress(), NoEgress(), NoCk(), VDeparser()) main;
