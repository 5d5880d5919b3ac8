// `++` with a signed operand: the result takes the left operand's signedness, and
// each operand contributes exactly its own bits (an int<8> right operand is not
// sign-extended into the left one's bits).
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        int<8> s = (int<8>)hdr.data.b1;
        hdr.data.h1 = hdr.data.b2 ++ s;              // bit<16>
        hdr.data.h2 = (bit<16>)(s ++ hdr.data.b2);   // int<16>
        int<16> wide = (int<16>)(s ++ 8w0) >> 8;     // arithmetic shift of the signed result
        hdr.data.f2 = (bit<32>)(bit<16>)wide;
    }
}
DATA_SWITCH(DataIngress, NoEgress)
