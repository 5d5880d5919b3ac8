// for loops inside an action whose bounds or break/continue conditions are run-time
// values: lowered with jumps (p4c's _jump/_jump_if_zero), not unrolled.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action loops() {
        bit<16> sum = 0;                       // 1 + 2 + ... + b1
        for (bit<8> i = 1; i <= hdr.data.b1; i = i + 1) {
            sum = sum + (bit<16>)i;
        }
        hdr.data.h1 = sum;
        bit<16> evens = 0;                     // even j below min(b2, 200)
        for (bit<8> j = 0; j < 200; j = j + 1) {
            if (j == hdr.data.b2) {
                break;
            }
            if (j[0:0] == 1) {
                continue;
            }
            evens = evens + 1;
        }
        hdr.data.h2 = evens;
        bit<32> product = 0;                   // b1 * b2 by nested loops
        for (bit<8> a = 0; a < hdr.data.b1; a = a + 1) {
            for (bit<8> b = 0; b < hdr.data.b2; b = b + 1) {
                product = product + 1;
            }
        }
        hdr.data.f2 = product;
    }
    apply { loops(); }
}
DATA_SWITCH(DataIngress, NoEgress)
