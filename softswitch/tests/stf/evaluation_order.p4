// Operands are evaluated left to right (P4-16 8.1): an operand read before a call
// that writes it keeps the value it had when it was read, in every operator, in list
// expressions and in the arguments of a call.
#include "include/data.p4"
struct metadata { }
struct pair_t { bit<8> first; bit<8> second; }

bit<16> join(in bit<8> a, in bit<8> b) {
    return a ++ b;
}

bit<8> set_to_one(inout bit<8> x) {
    x = 1;
    return 1;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.data.f1 == 1) {
            // b1 is read (5) before set_to_one writes 1 to it: 5 + 1
            hdr.data.b2 = hdr.data.b1 + set_to_one(hdr.data.b1);
        } else if (hdr.data.f1 == 2) {
            // the same order in a comparison and a concatenation
            bool before = hdr.data.b1 == set_to_one(hdr.data.b1);
            hdr.data.h1 = hdr.data.b2 ++ set_to_one(hdr.data.b2);
            hdr.data.h2 = before ? 16w0xAAAA : 16w0x5555;
        } else if (hdr.data.f1 == 3) {
            pair_t p = { hdr.data.b1, set_to_one(hdr.data.b1) };
            hdr.data.h2 = p.first ++ p.second;
            hdr.data.h1 = join(hdr.data.b2, set_to_one(hdr.data.b2));
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
