// Sub-parsers: parsers instantiated inside another (with a constructor
// parameter) and applied from its states; one instance is applied twice
// (P4-16 12.9).
#include <core.p4>
#include <v1model.p4>

header byte_t { bit<8> x; }
struct headers { byte_t a; byte_t b; byte_t c; }
struct metadata { }

parser OneByte(packet_in packet, out byte_t h)(bit<8> bias) {
    state start {
        packet.extract(h);
        h.x = h.x + bias;
        transition accept;
    }
}

parser SubParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    OneByte(8w0) plain;
    OneByte(8w0x10) plus16;
    state start { plain.apply(packet, hdr.a); transition second; }
    state second { plain.apply(packet, hdr.b); transition third; }
    state third { plus16.apply(packet, hdr.c); transition accept; }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control SumIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply { hdr.b.x = hdr.a.x + hdr.b.x; }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control SubDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.a); packet.emit(hdr.b); packet.emit(hdr.c); }
}

V1Switch(SubParser(), NoCk(), SumIngress(), NoEgress(), NoCk(), SubDeparser()) main;
