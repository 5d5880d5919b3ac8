/* meters.p4 — two-level rate limiting: a per-flow meter (indirect, the
 * index comes from the flow table) and a per-port direct meter on the port
 * table. The packet takes the worse of the two colours; yellow packets get
 * a lower-priority DSCP, red packets are dropped, and a counter per colour
 * shows how much traffic each policy touched.
 * Covers: meter (indirect) execute_meter, direct_meter read, colour values
 * GREEN/YELLOW/RED, const entries on a colour table, counters indexed by a
 * metadata field, ternary keys. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;

#define FLOW_METERS 1024

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<6>    dscp;
    bit<2>    ecn;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

struct metadata {
    bit<2> flow_color;
    bit<2> port_color;
    bit<2> color;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    meter(FLOW_METERS, MeterType.bytes) flow_meter;
    direct_meter<bit<2>>(MeterType.packets) port_meter;
    counter(4, CounterType.packets_and_bytes) color_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action meter_flow(bit<32> meter_index) {
        flow_meter.execute_meter<bit<2>>(meter_index, meta.flow_color);
    }

    table flow_policer {
        key = {
            hdr.ipv4.srcAddr: ternary;
            hdr.ipv4.dstAddr: ternary;
            hdr.ipv4.protocol: ternary;
        }
        actions = {
            meter_flow;
            NoAction;
        }
        size = FLOW_METERS;
        default_action = NoAction();
    }

    action forward(egressSpec_t port) {
        standard_metadata.egress_spec = port;
        port_meter.read(meta.port_color);
    }

    table port_forward {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            forward;
            drop;
        }
        meters = port_meter;
        size = 1024;
        default_action = drop();
    }

    action demote() {
        hdr.ipv4.dscp = 8;     // CS1, "lower effort"
    }

    table color_action {
        key = {
            meta.color: exact;
        }
        actions = {
            NoAction;
            demote;
            drop;
        }
        const default_action = drop();
        const entries = {
            V1MODEL_METER_COLOR_GREEN  : NoAction();
            V1MODEL_METER_COLOR_YELLOW : demote();
            V1MODEL_METER_COLOR_RED    : drop();
        }
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        meta.flow_color = V1MODEL_METER_COLOR_GREEN;
        meta.port_color = V1MODEL_METER_COLOR_GREEN;
        flow_policer.apply();
        port_forward.apply();
        // The worse (numerically larger) of the two colours wins.
        meta.color = meta.flow_color > meta.port_color ? meta.flow_color : meta.port_color;
        color_counter.count((bit<32>) meta.color);
        color_action.apply();
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
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
