// Tuples and list expressions as values: a tuple local initialised from a list
// expression, indexed with constants, and a struct assigned from a list.
#include "include/data.p4"
struct pair_t { bit<8> lo; bit<8> hi; }
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        tuple<bit<8>, bit<32>> t = { 8w0x5A, hdr.data.f2 + 1 };
        pair_t p = { hdr.data.b2, hdr.data.b1 };
        hdr.data.f1 = (bit<32>) t[0];
        hdr.data.f2 = t[1];
        hdr.data.b1 = p.lo;
        hdr.data.b2 = p.hi;
    }
}
DATA_SWITCH(DataIngress, NoEgress)
