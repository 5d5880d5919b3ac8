// Parameter passing is copy-in/copy-out (P4-16 6.8): a callee sees copies of
// its arguments and writes `out`/`inout` parameters back, left to right, when
// it returns, even when two arguments name the same storage.
#include "include/data.p4"
struct metadata { }

void twice(inout bit<8> x, inout bit<8> y) {
    x = 1;
    y = x + 2;      // the parameter x, now 1: y = 3
}

void swap_halves(in bit<16> v, out bit<8> hi, out bit<8> lo) {
    hi = v[15:8];
    lo = v[7:0];
}

void read_after_write(inout bit<8> x, in bit<8> original) {
    x = 0xEE;
    // `original` was copied in: still the caller's value, not 0xEE
    x = original;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action set_out(out bit<16> dst, bit<16> v) { dst = v; }
    action bump_b1() { hdr.data.b1 = hdr.data.b1 + 1; }
    // `before` is b1 as it was at the call, whatever the action it calls writes
    action keep_b1(in bit<8> before) { bump_b1(); hdr.data.b2 = before; }
    apply {
        if (hdr.data.f1 == 1) {
            twice(hdr.data.b1, hdr.data.b1);            // written back x then y: 3
        } else if (hdr.data.f1 == 2) {
            swap_halves(hdr.data.h1, hdr.data.b2, hdr.data.b1);
        } else if (hdr.data.f1 == 3) {
            read_after_write(hdr.data.b1, hdr.data.b1);
        } else if (hdr.data.f1 == 5) {
            keep_b1(hdr.data.b1);
        } else {
            set_out(hdr.data.h2, 0xBEEF);
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
