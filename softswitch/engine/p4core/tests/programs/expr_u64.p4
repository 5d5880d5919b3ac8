// Expressions the compiled pipeline runs in u64 (p4core compile.rs `expr64`)
// next to ones it must leave in 128 bits: wraparound, shifts by run-time
// amounts up to 255, 64-bit products, signed and 96-bit fields, logic and
// ternaries over them, register indices and action parameters. The frame is
// the header `h` directly; `o` receives the results. expr_u64.json is this
// program's softswitch-p4c output; tests/engines.rs runs it
// on both engines with random frames and table entries.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  s;
    bit<32> a;
    bit<32> b;
    bit<64> x;
    bit<64> y;
    int<16> i;
    int<16> j;
    bit<96> w;
    bit<8>  k;
}
header o_t {
    bit<32> sub;
    bit<32> shl;
    bit<32> shr;
    bit<64> mul;
    bit<64> hi;
    bit<8>  cmp;
    int<16> sdiff;
    bit<8>  scmp;
    bit<96> wsum;
    bit<8>  wcmp;
    bit<32> tern;
    bit<32> param;
    bit<32> reg;
    bit<16> narrow;
}
struct headers { h_t h; o_t o; }
struct metadata { bit<32> p; }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.h); transition accept; }
}
control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<32>>(16) r;
    action set_param(bit<32> p) {
        meta.p = p;
        hdr.o.param = hdr.h.a - p + (p << hdr.h.s);
    }
    table t {
        key = { hdr.h.k: exact; }
        actions = { set_param; NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.o.setValid();
        sm.egress_spec = 1;
        t.apply();
        hdr.o.sub = hdr.h.a - hdr.h.b;
        hdr.o.shl = hdr.h.a << hdr.h.s;
        hdr.o.shr = hdr.h.a >> hdr.h.s;
        hdr.o.mul = hdr.h.x * hdr.h.y;
        hdr.o.hi = (bit<64>) (((bit<128>) hdr.h.x * (bit<128>) hdr.h.y) >> 64);
        if (hdr.h.a - hdr.h.b > hdr.h.b && (hdr.h.x + hdr.h.y < hdr.h.x || hdr.h.s == 0)) {
            hdr.o.cmp = 1;
        } else if (!(hdr.h.k > 7) && hdr.h.a != 0) {
            hdr.o.cmp = 2;
        }
        hdr.o.sdiff = hdr.h.i - hdr.h.j;
        hdr.o.scmp = hdr.h.i < hdr.h.j ? 8w1 : 8w0;
        hdr.o.wsum = hdr.h.w + (bit<96>) hdr.h.x;
        hdr.o.wcmp = hdr.h.w > (bit<96>) hdr.h.y ? 8w1 : 8w0;
        hdr.o.tern = hdr.h.k > 3 ? hdr.h.a - meta.p : hdr.h.b & 0xff00ff00;
        bit<32> old;
        r.read(old, (bit<32>) hdr.h.k);
        r.write((bit<32>) hdr.h.k, old + hdr.h.a);
        hdr.o.reg = old;
        hdr.o.narrow = (bit<16>) (hdr.h.a + hdr.h.b) ^ (bit<16>) hdr.h.x;
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.h); packet.emit(hdr.o); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
