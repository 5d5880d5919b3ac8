/* qos_dscp.p4 — DiffServ edge: classify traffic into a DSCP class and a
 * strict-priority queue from fixed rules, then police each class with a
 * per-entry two-rate meter (out-of-profile traffic is re-marked or dropped).
 * Covers: serializable enum with casts, const entries with explicit
 * priorities, ternary/range keys with don't-care (_) and masks (&&&),
 * direct_meter + direct_counter on one table, standard_metadata.priority,
 * actions annotated @defaultonly / @tableonly. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;

enum bit<6> Dscp_t {
    BE   = 0,
    AF11 = 10,
    AF12 = 12,
    AF21 = 18,
    AF41 = 34,
    EF   = 46,
    CS6  = 48
}

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

header l4_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct metadata {
    bit<2> color;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_ports_t l4;
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
        transition select(hdr.ipv4.protocol) {
            PROTO_TCP: parse_l4;
            PROTO_UDP: parse_l4;
            default: accept;
        }
    }

    state parse_l4 {
        packet.extract(hdr.l4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    direct_meter<bit<2>>(MeterType.bytes) class_policer;
    direct_counter(CounterType.packets_and_bytes) class_stats;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_class(bit<6> dscp, bit<3> queue) {
        hdr.ipv4.dscp = dscp;
        standard_metadata.priority = queue;
    }

    action best_effort() {
        hdr.ipv4.dscp = (bit<6>) Dscp_t.BE;
        standard_metadata.priority = 0;
    }

    table classify {
        key = {
            hdr.ipv4.protocol: ternary;
            hdr.l4.dstPort: range;
            hdr.ipv4.dscp: ternary;
        }
        actions = {
            set_class;
            @defaultonly best_effort;
        }
        const default_action = best_effort();
        // Overlapping rules: the largest priority wins (P4-16 default).
        const entries = {
            // Network control keeps its marking and gets the top queue.
            priority=100: (_, _, (bit<6>) Dscp_t.CS6) : set_class((bit<6>) Dscp_t.CS6, 7);
            // Voice (RTP) and signalling.
            priority=90: (PROTO_UDP, 16384 .. 32767, _) : set_class((bit<6>) Dscp_t.EF, 6);
            priority=81: (PROTO_TCP, 5060 .. 5061, _) : set_class((bit<6>) Dscp_t.AF41, 5);
            priority=80: (PROTO_UDP, 5060 .. 5061, _) : set_class((bit<6>) Dscp_t.AF41, 5);
            // Interactive traffic (ssh, telnet).
            priority=70: (PROTO_TCP, 22 .. 23, _) : set_class((bit<6>) Dscp_t.AF21, 3);
            // Bulk traffic already marked AF1x by the host keeps its class.
            priority=60: (_, _, 0x08 &&& 0x38) : set_class((bit<6>) Dscp_t.AF11, 1);
        }
    }

    action police(egressSpec_t port) {
        standard_metadata.egress_spec = port;
        class_policer.read(meta.color);
    }

    action forward_unpoliced(egressSpec_t port) {
        standard_metadata.egress_spec = port;
        meta.color = V1MODEL_METER_COLOR_GREEN;
    }

    table policer {
        key = {
            hdr.ipv4.dscp: exact;
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            police;
            @tableonly forward_unpoliced;
            @defaultonly drop;
        }
        meters = class_policer;
        counters = class_stats;
        size = 512;
        default_action = drop();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            classify.apply();
            policer.apply();
            if (meta.color == V1MODEL_METER_COLOR_RED) {
                drop();
            } else if (meta.color == V1MODEL_METER_COLOR_YELLOW) {
                // Out of profile: demote to a higher drop precedence.
                hdr.ipv4.dscp = (bit<6>) Dscp_t.AF12;
                standard_metadata.priority = 1;
            }
        }
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
        packet.emit(hdr.l4);
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
