// Ternary matches: among the entries that match, the one with the largest STF
// priority wins, whatever the order they were added in.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action setb1(bit<8> val, bit<9> port) {
        hdr.data.b1 = val;
        standard_metadata.egress_spec = port;
    }
    action noop() { }
    table test1 {
        key = { hdr.data.f1: ternary; hdr.data.h1: ternary; }
        actions = { setb1; noop; }
        default_action = noop();
    }
    apply { test1.apply(); }
}
DATA_SWITCH(DataIngress, NoEgress)
