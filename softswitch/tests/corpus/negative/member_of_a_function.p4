// expect-error: 20:17: 'forward' has no member 'apply'
// Defect: `.apply()` on an action (a table was meant); actions, functions and extern
// functions have no members (it used to crash the compiler).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> x; }
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action forward() { sm.egress_spec = 1; }
    apply {
        forward.apply();
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
