// A header union holds at most one valid member: the parser extracts one of
// them by a tag; ingress converts a short member into a long one (setValid on
// a member invalidates the other), and the deparser emits whichever is valid.
// Passed to an action, two members are copies (P4-16 6.8): making the copy of one
// valid leaves the copy of the other as it was at the call.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> kind; }
header short_t { bit<8> v; }
header long_t { bit<16> v; }
header_union either_t { short_t s; long_t l; }
struct metadata { }
struct headers { tag_t tag; either_t u; }

parser UParser(packet_in packet, out headers hdr, inout metadata meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.tag);
        transition select(hdr.tag.kind) { 1: parse_short; 2: parse_long; 4: parse_short; default: accept; }
    }
    state parse_short { packet.extract(hdr.u.s); transition accept; }
    state parse_long { packet.extract(hdr.u.l); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control UIngress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action widen(inout long_t l, in short_t s) {
        l.setValid();
        l.v = s.isValid() ? 16w0x5500 | (bit<16>) s.v : 16w0xDEAD;
    }
    apply {
        if (hdr.tag.kind == 4) {
            widen(hdr.u.l, hdr.u.s);
            hdr.tag.kind = 2;
        } else if (hdr.u.s.isValid()) {
            bit<8> v = hdr.u.s.v;
            hdr.u.l.setValid();              // invalidates u.s
            hdr.u.l.v = 0xAB00 | (bit<16>) v;
            hdr.tag.kind = 2;
        } else if (hdr.u.l.isValid()) {
            hdr.u.l.v = hdr.u.l.v + 1;
        } else {
            hdr.tag.kind = 0xFF;
        }
    }
}

control UDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.tag); packet.emit(hdr.u); }
}

V1Switch(UParser(), NoVerify(), UIngress(), NoEgress(), NoCompute(), UDeparser()) main;
