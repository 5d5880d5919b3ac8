/* mirror_recirc.p4 — the packet-replication primitives of v1model in one
 * small switch:
 *  - sampling: one packet in N (per port) is mirrored to a collector with
 *    the sampling reason preserved; mirrored copies are truncated to 64 B;
 *  - port security: a frame from an unknown (port, MAC) is resubmitted once
 *    with a "quarantined" flag and then steered to a quarantine port;
 *  - loopback: frames carrying a loop header are recirculated until its
 *    pass counter runs out, then the loop header is removed.
 * Covers: clone_preserving_field_list, resubmit_preserving_field_list,
 * recirculate_preserving_field_list, @field_list, truncate, random,
 * instance_type, assert/assume, log_msg with arguments. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_LOOP = 0x88b5;
const bit<32> MIRROR_SESSION = 500;
const bit<9>  QUARANTINE_PORT = 63;
const bit<8>  MAX_PASSES = 4;

const bit<8> FL_MIRROR   = 1;
const bit<8> FL_RESUBMIT = 2;
const bit<8> FL_RECIRC   = 3;

const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_RESUBMIT      = 6;

const bit<8> MIRROR_REASON_SAMPLE = 1;

typedef bit<48> macAddr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header loop_t {
    bit<8>  passes_left;
    bit<16> etherType;
}

struct metadata {
    @field_list(FL_MIRROR)
    bit<8> mirror_reason;
    @field_list(FL_RESUBMIT)
    bit<1> quarantined;
    @field_list(FL_RECIRC)
    bit<8> pass;
}

struct headers {
    ethernet_t ethernet;
    loop_t     loop;
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_LOOP: parse_loop;
            default: accept;
        }
    }

    state parse_loop {
        packet.extract(hdr.loop);
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

    action sample(bit<32> one_in_n) {
        bit<32> draw;
        random(draw, 0, one_in_n - 1);
        if (draw == 0) {
            meta.mirror_reason = MIRROR_REASON_SAMPLE;
            clone_preserving_field_list(CloneType.I2E, MIRROR_SESSION, FL_MIRROR);
        }
    }

    table sampler {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            sample;
            NoAction;
        }
        size = 512;
        default_action = NoAction();
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table port_security {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.ethernet.srcAddr: exact;
        }
        actions = {
            forward;
            @defaultonly NoAction;
        }
        size = 4096;
        default_action = NoAction();
    }

    apply {
        assume(meta.pass <= MAX_PASSES);
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_RESUBMIT) {
            assert(meta.quarantined == 1);
            standard_metadata.egress_spec = QUARANTINE_PORT;
            return;
        }
        sampler.apply();
        if (port_security.apply().miss) {
            meta.quarantined = 1;
            resubmit_preserving_field_list(FL_RESUBMIT);
        }
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            // The collector needs the headers, not the payload.
            truncate(64);
            return;
        }
        if (hdr.loop.isValid()) {
            if (hdr.loop.passes_left > 0 && meta.pass < MAX_PASSES) {
                hdr.loop.passes_left = hdr.loop.passes_left - 1;
                meta.pass = meta.pass + 1;
                log_msg("loop: pass {} on port {}", {meta.pass, standard_metadata.egress_port});
                recirculate_preserving_field_list(FL_RECIRC);
            } else {
                hdr.ethernet.etherType = hdr.loop.etherType;
                hdr.loop.setInvalid();
            }
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.loop);
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
