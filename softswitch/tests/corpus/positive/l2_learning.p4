/* l2_learning.p4 — a learning Ethernet switch. Unknown source MACs are sent
 * to the controller as digests (so it can install smac/dmac entries);
 * unknown destinations are flooded through a multicast group, and the copy
 * going back out of the ingress port is pruned in egress.
 * Covers: digest<struct> (learn lists), optional match kind, @defaultonly,
 * mcast_grp flooding, egress_rid/ingress_port in egress, hit/miss chains. */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> macAddr_t;
typedef bit<9>  portId_t;

const bit<16> FLOOD_GROUP = 1;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

struct learn_t {
    macAddr_t srcAddr;
    portId_t  ingress_port;
}

struct metadata {
    /* empty */
}

struct headers {
    ethernet_t ethernet;
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action learn() {
        digest<learn_t>(1, { hdr.ethernet.srcAddr, standard_metadata.ingress_port });
    }

    action forward(portId_t port) {
        standard_metadata.egress_spec = port;
    }

    action broadcast() {
        standard_metadata.mcast_grp = FLOOD_GROUP;
    }

    // Operator-installed filters: each field may be matched or left out.
    table l2_acl {
        key = {
            standard_metadata.ingress_port: optional;
            hdr.ethernet.srcAddr: optional;
            hdr.ethernet.dstAddr: optional;
            hdr.ethernet.etherType: optional;
        }
        actions = {
            drop;
            @defaultonly NoAction;
        }
        size = 128;
        default_action = NoAction();
    }

    table smac {
        key = {
            hdr.ethernet.srcAddr: exact;
        }
        actions = {
            @defaultonly learn;
            NoAction;
        }
        size = 4096;
        default_action = learn();
    }

    table dmac {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            forward;
            @defaultonly broadcast;
        }
        size = 4096;
        default_action = broadcast();
    }

    apply {
        if (l2_acl.apply().hit) {
            return;     // only drop entries can hit
        }
        smac.apply();
        dmac.apply();
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    action drop() {
        mark_to_drop(standard_metadata);
    }

    apply {
        // A flooded copy (the controller gives flood replicas rid 1) never
        // goes back out of the port it came in on.
        if (standard_metadata.egress_rid != 0 &&
                standard_metadata.egress_port == standard_metadata.ingress_port) {
            drop();
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
