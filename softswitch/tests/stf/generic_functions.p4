// Generic functions (P4-16 10.2): each call is specialized with its type arguments,
// given (`pick<bit<16>>(...)`) or inferred from the arguments, including a return type
// and locals of the type parameter.
#include "include/data.p4"
struct metadata { }

T pick<T>(in bool first, in T a, in T b) {
    T chosen = b;
    if (first) {
        chosen = a;
    }
    return chosen;
}

void swap<T>(inout T a, inout T b) {
    T t = a;
    a = b;
    b = t;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        hdr.data.h2 = pick<bit<16>>(hdr.data.f1 == 1, hdr.data.h1, 16w0xBEEF);
        hdr.data.f2 = pick(hdr.data.f1 == 1, 32w7, hdr.data.f2);
        swap(hdr.data.b1, hdr.data.b2);
    }
}
DATA_SWITCH(DataIngress, NoEgress)
