// multicast: an Ethernet switch. Known destination MACs go out of one port;
// every other frame (broadcast, unknown unicast) is replicated to multicast
// group 1, and egress drops the copy that would return to the ingress port.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct metadata { }
struct headers { ethernet_t ethernet; }

parser L2Parser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.ethernet); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control L2Ingress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action mac_forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action flood() { standard_metadata.mcast_grp = 1; }
    table mac_lookup {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { mac_forward; flood; }
        default_action = flood();
    }
    apply { mac_lookup.apply(); }
}

control L2Egress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control NoCompute(inout headers hdr, inout metadata meta) { apply { } }

control L2Deparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); } }

V1Switch(L2Parser(), NoVerify(), L2Ingress(), L2Egress(), NoCompute(), L2Deparser()) main;
