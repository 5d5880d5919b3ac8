// A stack of header unions: the parser fills successive elements (`.next`),
// each with the member a tag byte before it chooses; ingress makes the second
// element valid through member b when the packet carried only one element.
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
header tag_t { bit<8> kind; }
struct headers { tag_t tag; u_t[2] us; tag_t tag2; }
struct metadata { }

parser UsParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.tag);
        transition select(hdr.tag.kind) { 1: parse_a; default: parse_b; }
    }
    state parse_a { packet.extract(hdr.us.next.a); transition more; }
    state parse_b { packet.extract(hdr.us.next.b); transition more; }
    state more {
        packet.extract(hdr.tag2);
        transition select(hdr.tag2.kind) { 1: parse_a2; 2: parse_b2; default: accept; }
    }
    state parse_a2 { packet.extract(hdr.us.next.a); transition accept; }
    state parse_b2 { packet.extract(hdr.us.next.b); transition accept; }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control UsIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.us[0].a.isValid() && !hdr.us[1].a.isValid() && !hdr.us[1].b.isValid()) {
            hdr.us[1].b.setValid();
            hdr.us[1].b.y = 0xBEEF;
        }
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control UsDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.tag); packet.emit(hdr.us); packet.emit(hdr.tag2); }
}

V1Switch(UsParser(), NoCk(), UsIngress(), NoEgress(), NoCk(), UsDeparser()) main;
