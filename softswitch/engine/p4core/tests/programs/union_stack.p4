// A stack of header unions filled by the parser; ingress writes the stack's
// last index into tag.kind. union_stack.json is this
// program's softswitch-p4c output with last_stack_index's operand pointed at
// the union stack `us` (what p4c writes for `hdr.us.lastIndex`).
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
header tag_t { bit<8> kind; }
struct headers { tag_t tag; u_t[2] us; tag_t tag2; tag_t[2] ts; }
struct metadata { }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
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
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { hdr.tag.kind = (bit<8>) hdr.ts.lastIndex; sm.egress_spec = 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.tag); packet.emit(hdr.us); packet.emit(hdr.tag2); }
}
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
