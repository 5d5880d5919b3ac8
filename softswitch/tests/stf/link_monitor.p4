// link_monitor: probe packets (etherType 0x0812) measure how busy each link is.
// A probe carries its route (a bottom-of-stack terminated list of egress ports,
// popped at each hop) and collects one record per hop: switch id, egress port,
// the bytes that left that port since the previous probe (this probe included),
// and the times of the previous and this probe. Other traffic is IPv4-routed
// and only counted.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_PROBE = 0x0812;
#define MAX_HOPS 10
#define MAX_PORTS 8

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header probe_t { bit<8> hop_cnt; }
header probe_fwd_t { bit<1> bos; bit<7> egress_spec; }
header probe_data_t {
    bit<1> bos; bit<7> swid; bit<8> port; bit<32> byte_cnt;
    bit<48> last_time; bit<48> cur_time;
}
struct metadata { }
struct headers {
    ethernet_t ethernet; probe_t probe; probe_fwd_t[MAX_HOPS] probe_fwd;
    probe_data_t[MAX_HOPS] probe_data; ipv4_t ipv4;
}

parser ProbeParser(packet_in packet, out headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            TYPE_PROBE: parse_probe;
            default: accept;
        }
    }
    state parse_probe { packet.extract(hdr.probe); transition parse_probe_fwd; }
    state parse_probe_fwd {
        packet.extract(hdr.probe_fwd.next);
        transition select(hdr.probe_fwd.last.bos) { 1: check_probe_data; default: parse_probe_fwd; }
    }
    state check_probe_data {
        transition select(hdr.probe.hop_cnt) { 0: accept; default: parse_probe_data; }
    }
    state parse_probe_data {
        packet.extract(hdr.probe_data.next);
        transition select(hdr.probe_data.last.bos) { 1: accept; default: parse_probe_data; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }

control ProbeIngress(inout headers hdr, inout metadata meta,
                     inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else if (hdr.probe.isValid() && hdr.probe_fwd[0].isValid()) {
            standard_metadata.egress_spec = (bit<9>) hdr.probe_fwd[0].egress_spec;
            hdr.probe_fwd.pop_front(1);
            hdr.probe.hop_cnt = hdr.probe.hop_cnt + 1;
        } else {
            drop();
        }
    }
}

control ProbeEgress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    register<bit<32>>(MAX_PORTS) byte_cnt_reg;
    register<bit<48>>(MAX_PORTS) last_time_reg;

    action set_swid(bit<7> swid) { hdr.probe_data[0].swid = swid; }
    table swid {
        actions = { set_swid; NoAction; }
        default_action = NoAction();
    }
    apply {
        bit<32> byte_cnt;
        bit<48> last_time;
        bit<32> port = (bit<32>) standard_metadata.egress_port;
        byte_cnt_reg.read(byte_cnt, port);
        byte_cnt = byte_cnt + standard_metadata.packet_length;
        byte_cnt_reg.write(port, hdr.probe.isValid() ? 32w0 : byte_cnt);
        if (hdr.probe.isValid()) {
            hdr.probe_data.push_front(1);
            hdr.probe_data[0].setValid();
            hdr.probe_data[0].bos = hdr.probe.hop_cnt == 1 ? 1w1 : 1w0;
            swid.apply();
            hdr.probe_data[0].port = (bit<8>) standard_metadata.egress_port;
            hdr.probe_data[0].byte_cnt = byte_cnt;
            last_time_reg.read(last_time, port);
            last_time_reg.write(port, standard_metadata.egress_global_timestamp);
            hdr.probe_data[0].last_time = last_time;
            hdr.probe_data[0].cur_time = standard_metadata.egress_global_timestamp;
        }
    }
}

control Ipv4Checksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control ProbeDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.probe);
        packet.emit(hdr.probe_fwd);
        packet.emit(hdr.probe_data);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(ProbeParser(), NoVerify(), ProbeIngress(), ProbeEgress(), Ipv4Checksum(),
         ProbeDeparser()) main;
