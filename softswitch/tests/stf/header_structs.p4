// Structs inside headers (P4-16 7.2.2): a header field of struct type is laid out as
// the struct's fields, in order, on the wire; its members are read, written, matched
// and assigned as a whole like any struct (p4c flattens them: `_pair_lo1`, ...).
#include <core.p4>
#include <v1model.p4>

struct inner_t { bit<4> x; bit<4> y; }
struct pair_t { bit<8> hi; inner_t lo; }
header rec_t {
    bit<8> tag;
    pair_t pair;
    bit<16> tail;
}
struct headers { rec_t rec; }
struct metadata { }

parser RecParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.rec); transition accept; }
}

control RecIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action to_port(bit<9> port) { standard_metadata.egress_spec = port; }
    table by_pair {
        key = { hdr.rec.pair.hi : exact; hdr.rec.pair.lo.y : exact; }
        actions = { to_port; NoAction; }
        default_action = NoAction();
        const entries = { (0xAB, 0x5) : to_port(2); }
    }
    apply {
        by_pair.apply();
        if (hdr.rec.tag == 1) {
            pair_t swapped = { hdr.rec.pair.lo.x ++ hdr.rec.pair.lo.y,
                               { hdr.rec.pair.hi[7:4], hdr.rec.pair.hi[3:0] } };
            hdr.rec.pair = swapped;
        } else if (hdr.rec.tag == 2) {
            hdr.rec.pair.lo.x = 0xF;
            hdr.rec.tail = (bit<16>) hdr.rec.pair.lo.y;
        }
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control RecDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.rec); } }

V1Switch(RecParser(), NoVerify(), RecIngress(), NoEgress(), NoCompute(), RecDeparser()) main;
