// A parser `set` from a 64-bit lookahead: BMv2 fails the parser with
// PacketTooShort when the frame is shorter than the bits looked at (p4c's
// issue1768-bmv2 sample); ingress drops on a parser error, else forwards.
// lookahead_short.json is this program's softswitch-p4c output.
#include <core.p4>
#include <v1model.p4>

header b_t { bit<8> x; }
struct headers { b_t b; }
struct metadata { bit<64> peek; }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        meta.peek = packet.lookahead<bit<64>>();
        packet.extract(hdr.b);
        transition accept;
    }
}
control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            mark_to_drop(sm);
        } else {
            sm.egress_spec = 1;
        }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.b); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
