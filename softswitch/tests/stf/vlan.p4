// 802.1Q access and trunk ports: frames from an access port get a VLAN tag
// pushed (TPID 0x8100, the port's VLAN id) on the way to the trunk, tagged
// frames from the trunk have their tag popped toward the access port of their
// VLAN; a VLAN without a port is dropped. Tags are added and removed with
// setValid/setInvalid, moving the EtherType between the headers.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header vlan_t { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> etherType; }
struct metadata { }
struct headers { ethernet_t ethernet; vlan_t vlan; }

parser VlanParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x8100: parse_vlan; default: accept; }
    }
    state parse_vlan { packet.extract(hdr.vlan); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control VlanIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action push_tag(bit<12> vid, bit<9> trunk) {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = vid;
        hdr.vlan.etherType = hdr.ethernet.etherType;
        hdr.ethernet.etherType = 0x8100;
        standard_metadata.egress_spec = trunk;
    }
    action pop_tag(bit<9> port) {
        hdr.ethernet.etherType = hdr.vlan.etherType;
        hdr.vlan.setInvalid();
        standard_metadata.egress_spec = port;
    }
    table access_in {
        key = { standard_metadata.ingress_port: exact; }
        actions = { push_tag; drop; }
        default_action = drop();
    }
    table trunk_in {
        key = { hdr.vlan.vid: exact; }
        actions = { pop_tag; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.vlan.isValid()) { trunk_in.apply(); } else { access_in.apply(); }
    }
}

control VlanDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.vlan); }
}

V1Switch(VlanParser(), NoVerify(), VlanIngress(), NoEgress(), NoCompute(), VlanDeparser()) main;
