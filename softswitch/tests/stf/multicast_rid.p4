// Multicast replication: ingress picks the group from h1; each replica reaches
// egress with its own egress_port and egress_rid, written into the packet along
// with the instance type (5 = replication in BMv2).
#define HAS_EGRESS
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply { standard_metadata.mcast_grp = hdr.data.h1; }
}

control DataEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        hdr.data.h2 = standard_metadata.egress_rid;
        hdr.data.b1 = (bit<8>) standard_metadata.egress_port;
        hdr.data.b2 = (bit<8>) standard_metadata.instance_type;
    }
}
DATA_SWITCH(DataIngress, DataEgress)
