/* -*- P4_16 -*- */
/*
 * aqmlab hw/tofino/red_ecn.p4: the RED/ECN bottleneck switch for Tofino.
 *
 * TNA (Tofino 1) by default; T2NA (Tofino 2) when compiled with
 * `bf-p4c --target tofino2 --arch t2na` (which defines __TARGET_TOFINO__ = 2)
 * or with -DTOFINO2. Same RED as p4src/red_ecn.p4 (the specification is
 * p4src/README.md); how and why this version differs is its "TNA profile":
 *  - average: the Lpf extern in SAMPLE mode (the stateful ALU cannot shift
 *    its register value, so `avg += (q - avg) >> wq_log` is not expressible in
 *    a RegisterAction); its time constant also gives the idle decay;
 *  - p_b: table `red_pb` on ranges of the average, filled by the controller
 *    (no multiplier in the pipeline);
 *  - count law: one register `red_budget` holding D = R - sum(p_b) (the
 *    accumulator form): select when D < p_b, then D = a fresh uniform R;
 *  - queue depth in cells (80 B on Tofino 1, 176 B on Tofino 2);
 *  - telemetry by register polling and counters (no egress digests in TNA).
 */
#include <core.p4>
/* enq_qdepth counts cells: 80 B on Tofino 1, 176 B on Tofino 2 (the
 * controller converts thresholds; see the TNA profile). */
#if defined(TOFINO2) || (defined(__TARGET_TOFINO__) && __TARGET_TOFINO__ == 2)
#include <t2na.p4>
#else
#include <tna.p4>
#endif

const bit<16> TYPE_IPV4 = 0x0800;
const bit<2>  ECN_NOT_ECT = 0;
const bit<2>  ECN_CE      = 3;
const bit<8>  MODE_DROPTAIL = 0;
const bit<8>  MODE_RED      = 1;
const bit<8>  DECISION_PASS        = 0;
const bit<8>  DECISION_MARK        = 1;
const bit<8>  DECISION_EARLY_DROP  = 2;
const bit<8>  DECISION_FORCED_DROP = 3;
/* Region of the average, chosen by red_pb. */
const bit<2>  REGION_BELOW  = 0;       /* avg < minth: pass, restart the count */
const bit<2>  REGION_PROB   = 1;       /* probabilistic: p_b from the entry */
const bit<2>  REGION_FORCED = 2;       /* avg >= maxth (gentle: 2 maxth) */
#define AVG_FRAC_BITS 8                /* Lpf input: cells * 2^8 */
#define MAX_PORTS 512

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
    bit<6>    diffserv;
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

/* Carried from ingress to egress in front of the packet. */
header bridged_md_t {
    bit<48> ingress_tstamp;            /* global time at ingress parsing, ns */
}

struct headers {
    bridged_md_t bridged;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
}

struct ingress_metadata_t { }

struct red_meta_t {
    bit<8>  mode;
    bit<1>  ecn;
    bit<32> q;                         /* enq_qdepth in cells, 8 fraction bits */
    bit<32> avg;                       /* Lpf output, same scale */
    bit<2>  region;
    bit<32> pb;                        /* p_b * 2^32 of the avg range */
    bit<32> rand;                      /* uniform on [0, 2^32) */
    bit<1>  selected;
    bit<8>  decision;
    bit<32> time_us;                   /* ingress time in units of 1.024 us */
}

struct egress_metadata_t {
    red_meta_t red;
}

/*************************************************************************
 *********************  I N G R E S S  ***********************************
 *************************************************************************/

parser MyIngressParser(packet_in pkt,
                       out headers hdr,
                       out ingress_metadata_t meta,
                       out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyIngress(inout headers hdr,
                  inout ingress_metadata_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    action ipv4_forward(macAddr_t dstAddr, macAddr_t srcAddr, PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.srcAddr = srcAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
            NoAction;
        }
        size = 1024;
        default_action = drop();
    }

    apply {
        ig_dprsr_md.drop_ctl = 0;
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ipv4_lpm.apply();
        } else {
            drop();
        }
        hdr.bridged.setValid();
        hdr.bridged.ingress_tstamp = ig_prsr_md.global_tstamp;
    }
}

control MyIngressDeparser(packet_out pkt,
                          inout headers hdr,
                          in ingress_metadata_t meta,
                          in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

/*************************************************************************
 **********************  E G R E S S  ************************************
 *************************************************************************/

parser MyEgressParser(packet_in pkt,
                      out headers hdr,
                      out egress_metadata_t meta,
                      out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyEgress(inout headers hdr,
                 inout egress_metadata_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    /* The average queue: time constant(s) set per port by the controller
     * (SAMPLE mode, tau = s / wq for a packet time s; see the TNA profile). */
    Lpf<bit<32>, PortId_t>(MAX_PORTS) red_avg_lpf;
    Random<bit<32>>() red_rng;

    /* D = R - (sum of p_b since the last selection); select when D < p_b.
     * Identical to Linux sch_red's count * p_b > R while p_b is constant. */
    Register<bit<32>, PortId_t>(MAX_PORTS) red_budget;
    RegisterAction<bit<32>, PortId_t, bit<1>>(red_budget) red_budget_step = {
        void apply(inout bit<32> budget, out bit<1> selected) {
            if (meta.red.region != REGION_PROB) {
                budget = meta.red.rand;
                selected = 0;
            } else if (budget < meta.red.pb) {
                budget = meta.red.rand;
                selected = 1;
            } else {
                budget = budget - meta.red.pb;
                selected = 0;
            }
        }
    };

    /* Telemetry, polled by the controller (egress cannot send digests):
     * red_avg in cells * 2^8, last_qdepth in cells, last_sample_time in
     * units of 1.024 us (bits 41..10 of the bridged ingress timestamp). */
    Register<bit<32>, PortId_t>(MAX_PORTS) red_avg;
    RegisterAction<bit<32>, PortId_t, bit<32>>(red_avg) red_avg_store = {
        void apply(inout bit<32> value) {
            value = meta.red.avg;
        }
    };
    Register<bit<32>, PortId_t>(MAX_PORTS) last_qdepth;
    RegisterAction<bit<32>, PortId_t, bit<32>>(last_qdepth) last_qdepth_store = {
        void apply(inout bit<32> value) {
            value = (bit<32>) eg_intr_md.enq_qdepth;       /* cells */
        }
    };
    Register<bit<8>, PortId_t>(MAX_PORTS) last_decision;
    RegisterAction<bit<8>, PortId_t, bit<8>>(last_decision) last_decision_store = {
        void apply(inout bit<8> value) {
            value = meta.red.decision;
        }
    };
    Register<bit<32>, PortId_t>(MAX_PORTS) last_sample_time;
    RegisterAction<bit<32>, PortId_t, bit<32>>(last_sample_time) last_sample_time_store = {
        void apply(inout bit<32> value) {
            value = meta.red.time_us;
        }
    };

    Counter<bit<64>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_tx;
    Counter<bit<64>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS) early_marks;
    Counter<bit<64>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS) early_drops;
    Counter<bit<64>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS) forced_drops;

    action set_red(bit<8> mode, bit<1> ecn) {
        meta.red.mode = mode;
        meta.red.ecn = ecn;
    }

    /* Ports without an entry run drop-tail (the average is still kept). */
    table red_config {
        key = {
            eg_intr_md.egress_port: exact;
        }
        actions = {
            set_red;
            NoAction;
        }
        size = MAX_PORTS;
        default_action = NoAction();
    }

    action red_below() {
        meta.red.region = REGION_BELOW;
    }

    action set_pb(bit<32> pb) {
        meta.red.region = REGION_PROB;
        meta.red.pb = pb;
    }

    action red_forced() {
        meta.red.region = REGION_FORCED;
    }

    /* p_b on ranges of the average (cells, 8 fraction bits): the controller
     * installs red_below up to minth, set_pb ranges up to maxth (gentle:
     * 2 maxth) and red_forced above. A miss is the region below minth. */
    table red_pb {
        key = {
            eg_intr_md.egress_port: exact;
            meta.red.avg: range;
        }
        actions = {
            red_below;
            set_pb;
            red_forced;
        }
        size = 16384;                  /* 64 ports x 256 ranges */
        default_action = red_below();
    }

    action drop() {
        eg_dprsr_md.drop_ctl = 1;
    }

    apply {
        eg_dprsr_md.drop_ctl = 0;
        if (hdr.ipv4.isValid()) {
            meta.red.mode = MODE_DROPTAIL;
            meta.red.ecn = 0;
            red_config.apply();

            meta.red.q = (bit<32>) eg_intr_md.enq_qdepth << AVG_FRAC_BITS;
            meta.red.avg = red_avg_lpf.execute(meta.red.q, eg_intr_md.egress_port);
            meta.red.time_us = hdr.bridged.ingress_tstamp[41:10];
            meta.red.rand = red_rng.get();
            meta.red.decision = DECISION_PASS;

            if (meta.red.mode == MODE_RED) {
                red_pb.apply();
                meta.red.selected = red_budget_step.execute(eg_intr_md.egress_port);
                if (meta.red.region == REGION_FORCED) {
                    meta.red.decision = DECISION_FORCED_DROP;
                    forced_drops.count(eg_intr_md.egress_port);
                    drop();
                } else if (meta.red.selected == 1) {
                    if (meta.red.ecn == 1 && hdr.ipv4.ecn != ECN_NOT_ECT) {
                        hdr.ipv4.ecn = ECN_CE;
                        meta.red.decision = DECISION_MARK;
                        early_marks.count(eg_intr_md.egress_port);
                    } else {
                        meta.red.decision = DECISION_EARLY_DROP;
                        early_drops.count(eg_intr_md.egress_port);
                        drop();
                    }
                }
            }

            red_avg_store.execute(eg_intr_md.egress_port);
            last_qdepth_store.execute(eg_intr_md.egress_port);
            last_decision_store.execute(eg_intr_md.egress_port);
            last_sample_time_store.execute(eg_intr_md.egress_port);
            if (meta.red.decision == DECISION_PASS || meta.red.decision == DECISION_MARK) {
                port_tx.count(eg_intr_md.egress_port);
            }
        }
        hdr.bridged.setInvalid();
    }
}

control MyEgressDeparser(packet_out pkt,
                         inout headers hdr,
                         in egress_metadata_t meta,
                         in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    /* TTL (ingress) and ECN (egress) changed: recompute the header checksum. */
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdrChecksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.ecn,
                hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.srcAddr, hdr.ipv4.dstAddr});
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

Pipeline(MyIngressParser(),
         MyIngress(),
         MyIngressDeparser(),
         MyEgressParser(),
         MyEgress(),
         MyEgressDeparser()) pipe;

Switch(pipe) main;
