// Mirroring: ingress-to-egress (I2E) and egress-to-egress (E2E) clones go to the
// port of their clone session; egress tags each copy with its instance type
// (v1model/BMv2: 0 normal, 1 ingress clone, 2 egress clone). An E2E copy is made
// of the packet egress deparsed, and then runs through egress itself. An I2E
// clone to the original's port leaves before it (BMv2 queues the clone first).
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.data.b1 == 1) { clone(CloneType.I2E, 5); }
        if (hdr.data.b1 == 4) { clone(CloneType.I2E, 7); }   // session 7 sends to port 1 too
    }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        hdr.data.b2 = (bit<8>) standard_metadata.instance_type;
        if (standard_metadata.instance_type == 0 && hdr.data.b1 == 2) {
            clone(CloneType.E2E, 6);
            hdr.data.h2 = 0xAAAA;   // BMv2 clones the packet as egress deparses it
        }
    }
}
DATA_SWITCH(DataIngress, DataEgress)
