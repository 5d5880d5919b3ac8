// P4-16 1.2.4 statements: compound assignments (+=, -=, |=, &=, ^=, <<=, >>=,
// and the saturating |+|= / |-|=), for loops in the C form and the `in range`
// form, break and continue.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        hdr.data.b1 += 3;
        hdr.data.b2 |+|= 0xF0;
        hdr.data.h1 <<= 4;
        hdr.data.h1 |= 0x000F;
        hdr.data.h2 ^= 0xFFFF;
        bit<32> sum = 0;
        for (bit<8> i = 1; i <= 4; i = i + 1) { sum = sum + (bit<32>) i; }
        bit<32> odd = 0;
        for (bit<8> i in 0 .. 9) {
            if (i == 7) { break; }
            if ((i & 1) == 0) { continue; }
            odd += (bit<32>) i;
        }
        hdr.data.f1 = sum;
        hdr.data.f2 = odd;
    }
}
DATA_SWITCH(DataIngress, NoEgress)
