// `switch` on a value inside an action or a function (an if/else-if chain, labels
// without a body falling through to the next body); a table's action_run switch stays in
// the control (action_run.p4).
#include "include/data.p4"
struct metadata { }
enum bit<8> Kind { SMALL = 1, MEDIUM = 2, LARGE = 3 }

bit<16> weight(in Kind k) {
    switch (k) {
        Kind.SMALL: { return 16w10; }
        Kind.MEDIUM:
        Kind.LARGE: { return 16w20; }
    }
    return 16w0;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action classify(bit<8> k) {
        switch (k) {
            1: { hdr.data.b2 = 0x11; }
            2:
            3: { hdr.data.b2 = 0x23; }
            default: { hdr.data.b2 = 0xFF; }
        }
        hdr.data.h2 = weight((Kind) k);
    }
    apply {
        classify(hdr.data.b1);
    }
}
DATA_SWITCH(DataIngress, NoEgress)
