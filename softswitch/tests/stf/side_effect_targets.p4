// An assignment's target and an `out` argument are evaluated before the value and the
// later arguments (P4-16 8.x): the index of s[j] is read before bump(j) writes j, in an
// apply block (expanded over the indices), in an action and as a call's argument.
// `a op= b` evaluates `a` once (P4-16 1.2.4): the call in its index runs once.
#include <core.p4>
#include <v1model.p4>

header idx_t { bit<8> i; bit<8> j; }
header slot_t { bit<8> v; }
struct headers { idx_t idx; slot_t[4] s; }
struct metadata { }

bit<8> bump(inout bit<8> x) { x = x + 1; return 0xEE; }
void put(out bit<8> y, in bit<8> v) { y = v; }
bit<8> next_of(inout bit<8> x) { x = x + 1; return x - 1; }

parser TargetParser(packet_in pkt, out headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.idx);
        pkt.extract(hdr.s[0]);
        pkt.extract(hdr.s[1]);
        pkt.extract(hdr.s[2]);
        pkt.extract(hdr.s[3]);
        transition accept;
    }
}

control TargetIngress(inout headers hdr, inout metadata meta,
                      inout standard_metadata_t standard_metadata) {
    action in_action() { hdr.s[hdr.idx.j].v = bump(hdr.idx.j); }
    action compound_in_action() { hdr.s[next_of(hdr.idx.j) & 3].v |= 0x10; }
    apply {
        if (hdr.idx.i == 0) {
            hdr.s[hdr.idx.j].v = bump(hdr.idx.j);
        } else if (hdr.idx.i == 1) {
            in_action();
        } else if (hdr.idx.i == 2) {
            put(hdr.s[hdr.idx.j].v, bump(hdr.idx.j));
        } else if (hdr.idx.i == 3) {
            hdr.s[next_of(hdr.idx.j) & 3].v |= 0x10;
        } else if (hdr.idx.i == 4) {
            compound_in_action();
        }
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control TargetDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.idx); pkt.emit(hdr.s); }
}

V1Switch(TargetParser(), NoVerify(), TargetIngress(), NoEgress(), NoCompute(),
         TargetDeparser()) main;
