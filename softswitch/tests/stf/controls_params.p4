// Controls as reusable blocks: constructor parameters (two instances of one
// control with different constants), one instance applied twice, a control
// holding its own table (each instance gets its own copy).
#include "include/data.p4"
struct metadata { }

control AddConst(inout bit<16> x)(bit<16> k) {
    apply { x = x + k; }
}

control Lookup(inout bit<8> v) {
    action set(bit<8> n) { v = n; }
    table map {
        key = { v: exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { map.apply(); }
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    AddConst(16w1) plus_one;
    AddConst(16w0x100) plus_256;
    Lookup() first;
    Lookup() second;
    apply {
        plus_one.apply(hdr.data.h1);
        plus_one.apply(hdr.data.h1);
        plus_256.apply(hdr.data.h2);
        first.apply(hdr.data.b1);
        second.apply(hdr.data.b2);
    }
}
DATA_SWITCH(DataIngress, NoEgress)
