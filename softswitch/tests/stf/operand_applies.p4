// Table applies inside operands (`f(t.apply().hit ? a : b)`, `(t.apply().miss ? a : b) + c`)
// run first, in operand order, and an action that exits stops the rest of the control;
// a list expression passed to a struct parameter (`f({{...}})`) is a struct value.
#include "include/data.p4"
struct metadata { }
struct pair_t { bit<8> a; bit<8> b; }
struct wrap_t { data_t d; }

bit<16> twice(in bit<16> x) { return x + x; }
bit<8> sum(pair_t p) { return p.a + p.b; }
bit<16> inner_h1(wrap_t w) { return w.d.isValid() ? w.d.h1 : 16w0xFFFF; }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action set_b1(bit<8> v) { hdr.data.b1 = v; }
    table pick { key = { hdr.data.f1: exact; } actions = { set_b1; NoAction; }
                 default_action = NoAction; }
    action stop() { exit; }
    table quit { key = { hdr.data.f2: exact; } actions = { stop; NoAction; }
                 default_action = NoAction; }
    apply {
        hdr.data.h1 = twice(pick.apply().hit ? 16w5 : 16w7);
        hdr.data.h2 = (quit.apply().miss ? 16w1 : 16w2) + 16w0x100;
        hdr.data.b2 = sum({hdr.data.b1, 8w1});
        hdr.data.f2 = (bit<32>)inner_h1({{32w1, 32w2, 16w3, 16w4, 8w5, 8w6}});
    }
}
DATA_SWITCH(DataIngress, NoEgress)
