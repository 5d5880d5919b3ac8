// The deprecated `mark_to_drop()` without an argument, which p4c's v1model.p4 still
// declares for older programs: the same effect as mark_to_drop(standard_metadata), in
// an apply block, in an action applied by a table, in egress; a later write to
// egress_spec still wins over it, as with the one-argument form.
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action drop_old_style() { mark_to_drop(); }
    action forward() { }
    table by_b2 {
        key = { hdr.data.b2: exact; }
        actions = { drop_old_style; forward; }
        const entries = { 0x22: drop_old_style(); }
        default_action = forward();
    }
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.data.b1 == 1) { mark_to_drop(); }
        if (hdr.data.b1 == 2) {
            mark_to_drop();
            standard_metadata.egress_spec = 2;
        }
        by_b2.apply();
    }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.data.b1 == 3) { mark_to_drop(); }
    }
}
DATA_SWITCH(DataIngress, DataEgress)
