// Const entries: without annotations the first entry written wins among the
// matching ones; @priority(N) follows p4c and BMv2, where the smallest N wins,
// written before the key or (as P4's grammar also allows) after the action.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action set(bit<8> v) { hdr.data.b1 = v; }
    table in_order {
        key = { hdr.data.f1: ternary; }
        actions = { set; }
        const entries = {
            0x00000001 &&& 0x0000000F: set(1);
            0x00000011 &&& 0x000000FF: set(2);
            _: set(3);
        }
    }
    table annotated {
        key = { hdr.data.f2: ternary; }
        actions = { set; NoAction; }
        const entries = {
            @priority(30) 0x00000000 &&& 0x00000000: set(0x30);
            @priority(20) 0x00000001 &&& 0x0000000F: set(0x20);
            @priority(10) 0x00000011 &&& 0x000000FF: set(0x10);
        }
    }
    action set16(bit<16> v) { hdr.data.h2 = v; }
    table trailing {
        key = { hdr.data.h1: ternary; }
        actions = { set16; NoAction; }
        default_action = NoAction;
        const entries = {
            0x0011 &&& 0x00FF: set16(0x30) @priority(30);
            0x0001 &&& 0x000F: set16(0x20) @priority(20);
            0x0011 &&& 0xFFFF: set16(0x10) @priority(10);
        }
    }
    apply {
        trailing.apply();
        in_order.apply();
        hdr.data.b2 = hdr.data.b1;
        annotated.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
