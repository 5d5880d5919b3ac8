// `&&` and `||` evaluate their right operand only when the left one does not
// decide (P4-16 8.5): a table applied on the right is not applied (its action
// does not run) when the left side already decided. `?:` evaluates one branch.
// (A table may be applied once per control, so each test has its own tables.)
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action count_left() { hdr.data.h1 = hdr.data.h1 + 1; }
    action count_right() { hdr.data.h2 = hdr.data.h2 + 1; }
    table left_or {
        key = { hdr.data.f1: exact; }
        actions = { count_left; NoAction; }
        default_action = NoAction();
    }
    table right_or {
        key = { hdr.data.f2: exact; }
        actions = { count_right; NoAction; }
        default_action = NoAction();
    }
    table left_and {
        key = { hdr.data.f1: exact; }
        actions = { count_left; NoAction; }
        default_action = NoAction();
    }
    table right_and {
        key = { hdr.data.f2: exact; }
        actions = { count_right; NoAction; }
        default_action = NoAction();
    }
    table left_cond {
        key = { hdr.data.f1: exact; }
        actions = { count_left; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.data.b1 == 0) {
            if (left_or.apply().hit || right_or.apply().hit) { hdr.data.b2 = 1; } else { hdr.data.b2 = 2; }
        } else if (hdr.data.b1 == 1) {
            if (left_and.apply().hit && right_and.apply().hit) { hdr.data.b2 = 3; } else { hdr.data.b2 = 4; }
        } else {
            hdr.data.b2 = hdr.data.f2 == 8 ? (left_cond.apply().hit ? 8w5 : 8w6) : 8w9;
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
