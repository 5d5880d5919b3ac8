/* packet_io.p4 — packet-in / packet-out with a P4Runtime controller. Frames
 * from the controller arrive on the CPU port prefixed by a packet_out header
 * naming the port to send them to; frames the ACL punts (or copies) to the
 * controller leave on the CPU port prefixed by a packet_in header.
 * Covers: @controller_header, CPU port, select on standard metadata,
 * clone(I2E) with a clone session, instance_type in egress, exit,
 * annotations @id / @name (local and global) / @hidden / @brief. */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255
#define CPU_CLONE_SESSION_ID 99

const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

typedef bit<9>  portId_t;
typedef bit<48> macAddr_t;

@controller_header("packet_in")
header packet_in_header_t {
    portId_t ingress_port;
    bit<7>   _pad;
}

@controller_header("packet_out")
header packet_out_header_t {
    portId_t egress_port;
    bit<7>   _pad;
}

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

struct metadata {
    /* empty */
}

struct headers {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    ethernet_t          ethernet;
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
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

    @id(0x01000042)
    @brief("Punt the frame to the controller instead of forwarding it")
    action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    @name("copy_to_cpu")
    action clone_to_cpu() {
        // The copy goes to the controller; the original is forwarded.
        clone(CloneType.I2E, CPU_CLONE_SESSION_ID);
    }

    action set_egress_port(portId_t port) {
        standard_metadata.egress_spec = port;
    }

    action strip_packet_out() {
        standard_metadata.egress_spec = hdr.packet_out.egress_port;
        hdr.packet_out.setInvalid();
    }

    // Applied only to frames from the controller; not a control-plane table.
    @hidden
    table packet_out_path {
        actions = {
            strip_packet_out;
        }
        const default_action = strip_packet_out();
    }

    @name(".l2_forward")
    table l2_forward {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            set_egress_port;
            send_to_cpu;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    table acl {
        key = {
            standard_metadata.ingress_port: ternary;
            hdr.ethernet.dstAddr: ternary;
            hdr.ethernet.srcAddr: ternary;
            hdr.ethernet.etherType: ternary;
        }
        actions = {
            send_to_cpu;
            clone_to_cpu;
            drop;
            NoAction;
        }
        size = 256;
        default_action = NoAction();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            packet_out_path.apply();
            exit;
        }
        if (hdr.ethernet.isValid()) {
            l2_forward.apply();
            acl.apply();
        }
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            // Punted or cloned: tell the controller where the frame came from.
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            // A clone session pointing elsewhere is a configuration error.
            mark_to_drop(standard_metadata);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
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
