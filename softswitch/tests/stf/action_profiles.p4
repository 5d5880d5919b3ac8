// Action profiles and action selectors: a table whose entries point at members
// of a profile (shared action calls), and one whose entries point at members or
// at a group, from which a CRC-16 hash of the selector key picks one member.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action_profile(32w16) shared;
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) balancer;
    action set_b1(bit<8> v) { hdr.data.b1 = v; }
    action forward(bit<9> port, bit<8> tag) {
        standard_metadata.egress_spec = port;
        hdr.data.b2 = tag;
    }
    table by_profile {
        key = { hdr.data.f1: exact; }
        actions = { set_b1; NoAction; }
        implementation = shared;
        default_action = NoAction();
    }
    table by_selector {
        key = { hdr.data.h1: exact; hdr.data.f2: selector; }
        actions = { forward; NoAction; }
        implementation = balancer;
        default_action = NoAction();
    }
    apply {
        by_profile.apply();
        by_selector.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
