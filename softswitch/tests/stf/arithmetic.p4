// Expressions on bit<W> and int<W>: wrap-around, saturating ops, shifts,
// slices, concatenation, casts (sign extension), comparisons after type
// unification (8w255 == -1 is true: -1 becomes 8w255), and constant folding.
#include "include/data.p4"
struct metadata { }

const bit<8> K = 0xF0;

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> a = hdr.data.b1;
        bit<8> b = hdr.data.b2;
        if (hdr.data.f1 == 0) {
            hdr.data.b1 = a + b;                 // wraps modulo 2^8
            hdr.data.b2 = a - b;
            hdr.data.h1 = (bit<16>) a * (bit<16>) b;
            hdr.data.h2 = a ++ b;                // concatenation
        } else if (hdr.data.f1 == 1) {
            hdr.data.b1 = a |+| b;               // saturating
            hdr.data.b2 = a |-| b;
            hdr.data.h1 = ((a << 3) ++ 8w0) >> 4;   // bits shifted out of bit<8> are lost
            hdr.data.h2 = (bit<16>) ((int<16>) (int<8>) a);   // sign extension
        } else if (hdr.data.f1 == 2) {
            hdr.data.b1 = (a & K) | (~b & 0x0F);
            hdr.data.b2 = a ^ b;
            hdr.data.h1[3:0] = a[7:4];
            hdr.data.h2 = (bit<16>) (a >> 1) + (bit<16>) (b >> (a & 7));
        } else {
            bit<8> flags = 0;
            if (8w255 == -1) { flags = flags | 1; }
            if ((int<8>) a < 0) { flags = flags | 2; }
            if (a > b) { flags = flags | 4; }
            if (-8s1 < 8s0) { flags = flags | 8; }
            if ((bit<8>) -8s1 == 255) { flags = flags | 16; }
            hdr.data.b1 = flags;
            hdr.data.h1 = (bit<16>) (5 * 7 + (1 << 4));   // folded at compile time: 51
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
