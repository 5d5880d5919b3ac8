// Action arguments bound in a table's actions list: the directional (out)
// argument is fixed by the program, the rest comes from the entry, so one
// action serves two tables writing different fields (p4c lowers each binding
// to its own BMv2 action); a default action may bind the remaining ones too.
// A top-level action taking `inout standard_metadata_t` (bound to the control's
// standard_metadata) may call externs on it (mark_to_drop) and set its fields.
#include "include/data.p4"
struct metadata { }

action drop_or_send(inout standard_metadata_t sm, bit<9> port) {
    mark_to_drop(sm);
    if (port != 0) {
        sm.egress_spec = port;
    }
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action setbyte(out bit<8> dst, bit<8> val) { dst = val; }
    action setword(out bit<16> dst, bit<16> val) { dst = val; }
    table to_b1 {
        key = { hdr.data.f1: exact; }
        actions = { setbyte(hdr.data.b1); NoAction; }
        default_action = NoAction();
    }
    table to_h1 {
        key = { hdr.data.f2: exact; }
        actions = { setword(hdr.data.h1); }
        default_action = setword(hdr.data.h1, 16w0xDEF0);
    }
    table to_b2 {
        key = { hdr.data.h2: exact; }
        actions = { setbyte(hdr.data.b2); NoAction; }
        default_action = NoAction();
    }
    table route {
        key = { hdr.data.b1: exact; }
        actions = { drop_or_send(standard_metadata); NoAction; }
        default_action = NoAction();
    }
    apply { to_b1.apply(); to_h1.apply(); to_b2.apply(); route.apply(); }
}
DATA_SWITCH(DataIngress, NoEgress)
