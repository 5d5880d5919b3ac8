// Run-time unsigned division and modulo by a power of two: `x / 2^k` is `x >> k` and
// `x % 2^k` is `x & (2^k - 1)` (p4c's strength reduction; BMv2 has no run-time
// division, so other divisors are refused). A function whose only return ends its body
// with a constant gives that constant (p4c propagates it), so it can be the divisor.
#include "include/data.p4"
struct metadata { bit<9> len; }

bit<8> all_ones() {
    return -1;                  // the constant is a bit<8>: 0xFF
}

bit<16> four_after_marking(inout bit<32> x) {
    x = 7;
    return 4;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        meta.len = (bit<9>) hdr.data.b1;
        // the padding to the next multiple of 64 bits, as in a variable-length option
        bit<9> padding = (64 - (meta.len % 64)) % 64;
        hdr.data.b2 = (bit<8>) padding;
        hdr.data.h1 = hdr.data.h1 / 16;
        hdr.data.h2 = hdr.data.h2 % 1;
        hdr.data.f2 = hdr.data.f1 / 1;
        if (hdr.data.f1 == 2) {
            hdr.data.h2 = hdr.data.h1 / four_after_marking(hdr.data.f2);
        } else if (hdr.data.f1 == 3) {
            hdr.data.h1 = (bit<16>) all_ones();
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
