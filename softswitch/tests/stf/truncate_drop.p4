// Dropping and truncation: mark_to_drop in ingress (egress does not run) and in
// egress, egress_spec set to the drop port 511, and truncate(n), which sends
// only the first n bytes of the deparsed packet.
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.data.b1 == 1) { mark_to_drop(standard_metadata); }
        if (hdr.data.b1 == 2) { standard_metadata.egress_spec = 511; }
        if (hdr.data.b1 == 4) { truncate(6); }
    }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.data.b1 == 3) { mark_to_drop(standard_metadata); }
        hdr.data.b2 = 0xE0;
    }
}
DATA_SWITCH(DataIngress, DataEgress)
