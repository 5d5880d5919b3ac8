/* dual_stack.p4 — an IPv4/IPv6 router behind optional VLAN tags. The L3
 * header is a header union (exactly one of v4/v6 is valid); the VLAN tag
 * protocol ids are a control-plane value set (802.1Q by default, others
 * such as 0x88a8 or 0x9100 can be added at run time).
 * Covers: header union, value_set in select, select with ranges, masks
 * and default, lookahead<bit<4>>, a plain enum in control locals, errors
 * declared by the program and tested in ingress, 128-bit lpm keys. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_IPV6 = 0x86dd;

typedef bit<9>   egressSpec_t;
typedef bit<48>  macAddr_t;
typedef bit<32>  ip4Addr_t;
typedef bit<128> ip6Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
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

header ipv6_t {
    bit<4>    version;
    bit<8>    trafficClass;
    bit<20>   flowLabel;
    bit<16>   payloadLen;
    bit<8>    nextHdr;
    bit<8>    hopLimit;
    ip6Addr_t srcAddr;
    ip6Addr_t dstAddr;
}

header_union ip_t {
    ipv4_t v4;
    ipv6_t v6;
}

struct metadata {
    bit<1> is_fragment;
}

struct headers {
    ethernet_t ethernet;
    vlan_t     vlan;
    ip_t       ip;
}

error { IPv4OptionsNotSupported }

enum L3Kind { NONE, V4, V6 }

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {

    value_set<bit<16>>(4) vlan_tpids;

    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0000 .. 0x05dc: accept;     // an 802.3 length, not an EtherType
            vlan_tpids: parse_vlan;
            0x8100: parse_vlan;
            TYPE_IPV4: parse_ip;
            TYPE_IPV6: parse_ip;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.etherType) {
            TYPE_IPV4: parse_ip;
            TYPE_IPV6: parse_ip;
            default: accept;
        }
    }

    // The version nibble, not the EtherType, decides which member to use.
    state parse_ip {
        transition select(packet.lookahead<bit<4>>()) {
            4: parse_ipv4;
            6: parse_ipv6;
            default: reject;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ip.v4);
        verify(hdr.ip.v4.ihl == 5, error.IPv4OptionsNotSupported);
        transition select(hdr.ip.v4.flags, hdr.ip.v4.fragOffset) {
            (3w0 &&& 3w1, 0): accept;       // MF clear and offset 0: whole
            default: ipv4_fragment;
        }
    }

    state ipv4_fragment {
        meta.is_fragment = 1;
        transition accept;
    }

    state parse_ipv6 {
        packet.extract(hdr.ip.v6);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(
            hdr.ip.v4.isValid(),
            { hdr.ip.v4.version,
              hdr.ip.v4.ihl,
              hdr.ip.v4.diffserv,
              hdr.ip.v4.totalLen,
              hdr.ip.v4.identification,
              hdr.ip.v4.flags,
              hdr.ip.v4.fragOffset,
              hdr.ip.v4.ttl,
              hdr.ip.v4.protocol,
              hdr.ip.v4.srcAddr,
              hdr.ip.v4.dstAddr },
            hdr.ip.v4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    counter(2, CounterType.packets) dropped_by_reason;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_nhop(macAddr_t dmac, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dmac;
    }

    table ipv4_lpm {
        key = {
            hdr.ip.v4.dstAddr: lpm;
        }
        actions = {
            set_nhop;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    table ipv6_lpm {
        key = {
            hdr.ip.v6.dstAddr: lpm;
        }
        actions = {
            set_nhop;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    apply {
        L3Kind kind = L3Kind.NONE;
        if (hdr.ip.v4.isValid()) {
            kind = L3Kind.V4;
        } else if (hdr.ip.v6.isValid()) {
            kind = L3Kind.V6;
        }

        if (standard_metadata.parser_error == error.IPv4OptionsNotSupported) {
            dropped_by_reason.count(32w0);
            drop();
        } else if (kind == L3Kind.V4 && meta.is_fragment == 0) {
            ipv4_lpm.apply();
            hdr.ip.v4.ttl = hdr.ip.v4.ttl - 1;
        } else if (kind == L3Kind.V6) {
            ipv6_lpm.apply();
            hdr.ip.v6.hopLimit = hdr.ip.v6.hopLimit - 1;
        } else {
            dropped_by_reason.count(32w1);
            drop();
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
            hdr.ip.v4.isValid(),
            { hdr.ip.v4.version,
              hdr.ip.v4.ihl,
              hdr.ip.v4.diffserv,
              hdr.ip.v4.totalLen,
              hdr.ip.v4.identification,
              hdr.ip.v4.flags,
              hdr.ip.v4.fragOffset,
              hdr.ip.v4.ttl,
              hdr.ip.v4.protocol,
              hdr.ip.v4.srcAddr,
              hdr.ip.v4.dstAddr },
            hdr.ip.v4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.ip);
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
