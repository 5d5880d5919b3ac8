// Action profiles and selectors written inline in the table (anonymous instances,
// P4-16 14.2.1.4): lowered as p4c's BMv2 back end does, named by the property's
// @name ("balancer" here) or, without one, p4c's fresh name "action_profile_0".
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action set_b1(bit<8> v) { hdr.data.b1 = v; }
    action forward(bit<9> port, bit<8> tag) {
        standard_metadata.egress_spec = port;
        hdr.data.b2 = tag;
    }
    table by_profile {
        key = { hdr.data.f1: exact; }
        actions = { set_b1; NoAction; }
        implementation = action_profile(32w4);
        default_action = NoAction();
    }
    table by_selector {
        key = { hdr.data.h1: exact; hdr.data.f2: selector; }
        actions = { forward; NoAction; }
        @name("balancer") implementation = action_selector(HashAlgorithm.crc16, 32w16, 32w16);
        default_action = NoAction();
    }
    apply {
        by_profile.apply();
        by_selector.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
