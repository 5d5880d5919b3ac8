// Run-time indices into a stack of header unions (`hdr.us[hdr.idx.i]`), lowered as
// p4c's BMv2 back end does: dereference_union_stack, then access_union_header for a
// member; validity of the chosen union and of its members, member writes and setValid,
// also inside an action (access_union_header with an integer member offset).
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
header idx_t { bit<8> i; bit<8> op; bit<8> valid; }
struct headers { idx_t idx; u_t[2] us; }
struct metadata { }

parser UsParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.idx);
        packet.extract(hdr.us.next.a);
        packet.extract(hdr.us.next.b);
        transition accept;
    }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control UsIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action set_x(bit<8> v) { hdr.us[hdr.idx.i].a.x = v; }
    table by_op {
        key = { hdr.idx.op: exact; }
        actions = { set_x; NoAction; }
        default_action = NoAction();
    }
    apply {
        by_op.apply();
        if (hdr.us[hdr.idx.i].a.isValid()) {
            hdr.us[hdr.idx.i].a.x = hdr.us[hdr.idx.i].a.x + 1;
        }
        if (hdr.us[hdr.idx.i].b.isValid()) {
            hdr.us[hdr.idx.i].b.y = hdr.us[hdr.idx.i].b.y + 1;
        }
        hdr.idx.valid = hdr.us[hdr.idx.i].isValid() ? 8w1 : 8w0;
        if (hdr.idx.op == 1) {
            hdr.us[hdr.idx.i].b.setValid();     // the union's other member becomes invalid
            hdr.us[hdr.idx.i].b.y = 0xBEEF;
        }
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control UsDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.idx); packet.emit(hdr.us); }
}

V1Switch(UsParser(), NoCk(), UsIngress(), NoEgress(), NoCk(), UsDeparser()) main;
