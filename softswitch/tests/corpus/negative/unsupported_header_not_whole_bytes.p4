// expect-error: 10:8: 12 bits
// Defect: a header whose fields total 12 bits, not a whole number of bytes. P4-16
// allows it, but the BMv2 target does not (p4c's BMv2 back end refuses it too; it
// pads only structs): the error names the header's declaration.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> kind; bit<8> len; }

header flags_t {
    bit<4> flags;
    bit<8> ttl;
}

struct headers { tag_t tag; flags_t flags; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        pkt.extract(hdr.flags);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
