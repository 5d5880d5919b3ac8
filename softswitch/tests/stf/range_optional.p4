// Range and optional match kinds (a range on h1, an optional on b2, an exact
// on b1), with priorities deciding between overlapping ranges.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port, bit<16> tag) {
        standard_metadata.egress_spec = port;
        hdr.data.h2 = tag;
    }
    action drop() { mark_to_drop(standard_metadata); }
    table classify {
        key = { hdr.data.h1: range; hdr.data.b2: optional; hdr.data.b1: exact; }
        actions = { forward; drop; }
        default_action = drop();
    }
    apply { classify.apply(); }
}
DATA_SWITCH(DataIngress, NoEgress)
