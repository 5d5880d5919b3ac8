// Const entries: without annotations the first entry written wins among the
// matching ones; @priority(N) follows p4c and BMv2, where the smallest N wins.
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
    apply {
        in_order.apply();
        hdr.data.b2 = hdr.data.b1;
        annotated.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
