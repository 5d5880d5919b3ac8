// expect-error: 23:28: 200-bit field
// Defect: reading a header field wider than 128 bits in an expression (the built-in
// target keeps such a field as 128-bit pieces; only whole-header operations work).
#include <core.p4>
#include <v1model.p4>

header big_t { bit<200> blob; }
struct headers { big_t big; }
struct metadata { bit<8> low; }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.big);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.low = hdr.big.blob[7:0];
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.big); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
