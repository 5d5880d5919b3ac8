// expect-error: 8:26: static assertion failed: the table needs 16 entries
// Defect: a static_assert (core.p4) whose condition is false at compile time.
#include <core.p4>
#include <v1model.p4>

const bit<32> TABLE_SIZE = 8;
const bool size_checked = static_assert(TABLE_SIZE >= 4);
const bool size_enough = static_assert(TABLE_SIZE >= 16, "the table needs 16 entries");

header h_t { bit<8> a; }
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
