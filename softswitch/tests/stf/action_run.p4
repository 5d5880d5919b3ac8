// Control flow: switch on a table's action_run (with a shared case body and a
// default), hit/miss, an action calling another, `exit` (the rest of ingress
// is skipped; egress and the deparser still run) and `return` from a sub-control.
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { }

control Finish(inout headers hdr) {
    apply {
        if (hdr.data.b2 == 0xFF) { return; }
        hdr.data.b2 = hdr.data.b2 + 1;
    }
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    Finish() finish;
    action to_port(bit<9> port) { standard_metadata.egress_spec = port; }
    action tag(bit<8> v) { hdr.data.b1 = v; }
    action tag_and_forward(bit<8> v, bit<9> port) { tag(v); to_port(port); }
    action stop() { }
    table dispatch {
        key = { hdr.data.f1: exact; }
        actions = { to_port; tag; tag_and_forward; stop; NoAction; }
        default_action = NoAction();
    }
    apply {
        switch (dispatch.apply().action_run) {
            to_port: { hdr.data.h1 = 1; }
            tag:
            tag_and_forward: { hdr.data.h1 = 2; }
            stop: { hdr.data.h1 = 3; exit; }
            default: { hdr.data.h1 = 4; }
        }
        hdr.data.h2 = 0x1111;
        finish.apply(hdr);
    }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply { hdr.data.f2 = hdr.data.f2 + 1; }
}
DATA_SWITCH(DataIngress, DataEgress)
