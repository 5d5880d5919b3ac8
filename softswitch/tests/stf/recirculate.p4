// resubmit and recirculate: a resubmitted packet re-enters ingress unchanged
// with instance type 6, a recirculated one re-enters the parser as egress
// deparsed it with instance type 4; metadata fields named by the field list
// annotation survive the trip (v1model's *_preserving_field_list).
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { @field_list(1) bit<8> trips; }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (standard_metadata.instance_type == 6) { hdr.data.b2 = hdr.data.b2 | 0x60; }
        if (standard_metadata.instance_type == 4) { hdr.data.b2 = hdr.data.b2 | 0x04; }
        if (hdr.data.b1 == 1 && standard_metadata.instance_type == 0) {
            meta.trips = 7;
            resubmit_preserving_field_list(1);
        }
        hdr.data.h1 = (bit<16>) meta.trips;
    }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.data.b1 == 2 && hdr.data.h2 < 3) {
            hdr.data.h2 = hdr.data.h2 + 1;          // one more pass through the pipeline
            meta.trips = (bit<8>) hdr.data.h2 + 0x10;
            recirculate_preserving_field_list(1);
        }
    }
}
DATA_SWITCH(DataIngress, DataEgress)
