// Initial table entries with the P4-16 1.2.4 properties `largest_priority_wins` and
// `priority_delta`: entries without their own priority keep source order (the first
// match wins), whatever the spacing the compiler gives their priorities.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action set_b2(bit<8> v) { hdr.data.b2 = v; }
    table classify {
        key = { hdr.data.b1 : ternary; }
        actions = { set_b2; NoAction; }
        default_action = NoAction();
        largest_priority_wins = false;
        priority_delta = 10;
        entries = {
            0x01 &&& 0x0F : set_b2(1);
            0x11 &&& 0xFF : set_b2(2);
            _             : set_b2(3);
        }
    }
    apply { classify.apply(); }
}
DATA_SWITCH(DataIngress, NoEgress)
