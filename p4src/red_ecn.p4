/* -*- P4_16 -*- */
/*
 * aqmlab red_ecn.p4: the RED/ECN bottleneck switch (v1model).
 *
 * Ingress: IPv4 longest-prefix forwarding (next-hop MAC rewrite, TTL
 * decrement) and sampled queue telemetry sent to the controller by digest.
 * Egress: per egress port, RED (Floyd & Jacobson 1993) on the queue depth the
 * packet saw at enqueue: EWMA average with wq = 2^-wq_log, idle-time decay,
 * count-based marking without division, classic/gentle/drop-tail modes, and
 * ECN marking per RFC 3168. The semantics, the fixed-point formats and the
 * control-plane names are specified in p4src/README.md.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"

/* Per-port RED state shared by egress (writer) and ingress (telemetry reader).
 * Registers hold data-plane state only; all configuration is in tables. */
register<bit<32>>(MAX_PORTS) red_avg;           /* average queue, 16 fraction bits */
register<bit<32>>(MAX_PORTS) last_qdepth;       /* enq_qdepth of the latest packet */
register<bit<8>>(MAX_PORTS)  last_decision;     /* DECISION_* of the latest packet */
register<bit<32>>(MAX_PORTS) last_sample_time;  /* enq_timestamp of the latest packet */

/*************************************************************************
 **************  I N G R E S S   P R O C E S S I N G   *******************
 *************************************************************************/

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    register<bit<32>>(MAX_PORTS) sample_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(macAddr_t dstAddr, macAddr_t srcAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
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

    /* One telemetry sample every `period` packets forwarded to the port. */
    action set_sampling(bit<32> period) {
        meta.sampling_period = period;
    }

    table telemetry_sampling {
        key = {
            standard_metadata.egress_spec: exact;
        }
        actions = {
            set_sampling;
            NoAction;
        }
        size = MAX_PORTS;
        default_action = NoAction();
    }

    action send_sample(bit<32> port) {
        last_sample_time.read(meta.sample.time_us, port);
        last_qdepth.read(meta.sample.qdepth, port);
        red_avg.read(meta.sample.avg, port);
        last_decision.read(meta.sample.decision, port);
        meta.sample.port = (bit<16>) port;
        digest<telemetry_t>(1, meta.sample);
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ipv4_lpm.apply();
        } else {
            drop();
        }

        /* Dropped packets have egress_spec 511, which has no sampling entry. */
        telemetry_sampling.apply();
        if (meta.sampling_period != 0) {
            bit<32> port = (bit<32>) standard_metadata.egress_spec;
            bit<32> seen;
            sample_counter.read(seen, port);
            seen = seen + 1;
            if (seen >= meta.sampling_period) {
                seen = 0;
                send_sample(port);
            }
            sample_counter.write(port, seen);
        }
    }
}

/*************************************************************************
 ****************  E G R E S S   P R O C E S S I N G   *******************
 *************************************************************************/

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    register<bit<32>>(MAX_PORTS) red_count;       /* packets since the last mark/drop */
    register<bit<32>>(MAX_PORTS) red_rand;        /* uniform draw made after a mark/drop */
    register<bit<32>>(MAX_PORTS) last_departure;  /* dequeue time of the previous packet, us */

    counter(MAX_PORTS, CounterType.packets_and_bytes) port_tx;
    counter(MAX_PORTS, CounterType.packets) early_marks;
    counter(MAX_PORTS, CounterType.packets) early_drops;
    counter(MAX_PORTS, CounterType.packets) forced_drops;

    /* All constants come from the controller, which does the divisions. */
    action set_red(bit<8> mode, bit<1> ecn, bit<1> gentle, bit<8> wq_log,
                   bit<32> minth, bit<32> maxth, bit<32> maxp,
                   bit<48> slope, bit<48> gentle_slope, bit<8> idle_log) {
        meta.red.mode = mode;
        meta.red.ecn = ecn;
        meta.red.gentle = gentle;
        meta.red.wq_log = wq_log;
        meta.red.minth = minth;
        meta.red.maxth = maxth;
        meta.red.maxp = maxp;
        meta.red.slope = slope;
        meta.red.gentle_slope = gentle_slope;
        meta.red.idle_log = idle_log;
    }

    /* Ports without an entry run drop-tail with avg = q (wq_log 0). */
    table red_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_red;
            NoAction;
        }
        size = MAX_PORTS;
        default_action = NoAction();
    }

    /* avg *= (1 - wq)^m after an idle period: the factor for the bucket's
     * idle time, 32 fraction bits. A miss means no decay (factor 1). */
    action set_decay_factor(bit<32> factor) {
        meta.red.decay_factor = factor;
    }

    table red_idle_decay {
        key = {
            standard_metadata.egress_port: exact;
            meta.red.idle_bucket: exact;
        }
        actions = {
            set_decay_factor;
            NoAction;
        }
        size = 131072;                  /* 64 ports x 2048 buckets */
        default_action = NoAction();
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    apply {
        if (hdr.ipv4.isValid()) {
            bit<32> port = (bit<32>) standard_metadata.egress_port;
            red_config.apply();

            /* Queue length the packet saw at enqueue (itself not counted). */
            bit<32> q = (bit<32>) standard_metadata.enq_qdepth;
            if (q > QDEPTH_MAX) {
                q = QDEPTH_MAX;
            }
            bit<32> now = standard_metadata.enq_timestamp;

            bit<32> avg;
            red_avg.read(avg, port);

            /* Idle decay: the queue was empty since the previous dequeue. */
            bit<32> departed;
            last_departure.read(departed, port);
            if (q == 0 && now > departed) {
                /* Idle periods shorter than one coarse bucket (2^idle_log us)
                 * use 1024 fine buckets, so the short gaps of light traffic
                 * decay by their own length, not by half a coarse bucket. */
                bit<32> idle = now - departed;
                bit<32> bucket;
                if (idle < (32w1 << meta.red.idle_log)) {
                    bit<8> fine_log = 0;
                    if (meta.red.idle_log > IDLE_FINE_LOG) {
                        fine_log = meta.red.idle_log - IDLE_FINE_LOG;
                    }
                    bucket = idle >> fine_log;
                } else {
                    bucket = idle >> meta.red.idle_log;
                    if (bucket > IDLE_BUCKET_MAX) {
                        bucket = IDLE_BUCKET_MAX;
                    }
                    bucket = IDLE_COARSE + bucket;
                }
                meta.red.idle_bucket = (bit<11>) bucket;
                if (red_idle_decay.apply().hit) {
                    avg = (bit<32>) (((bit<64>) avg * (bit<64>) meta.red.decay_factor)
                                     >> DECAY_FRAC_BITS);
                }
            }
            last_departure.write(port, now + standard_metadata.deq_timedelta);

            /* EWMA: avg += (q - avg) * 2^-wq_log, without signed arithmetic. */
            bit<32> q_fixed = q << AVG_FRAC_BITS;
            if (q_fixed >= avg) {
                avg = avg + ((q_fixed - avg) >> meta.red.wq_log);
            } else {
                avg = avg - ((avg - q_fixed) >> meta.red.wq_log);
            }
            red_avg.write(port, avg);

            bit<8> decision = DECISION_PASS;
            if (meta.red.mode == MODE_RED) {
                bit<32> count;
                red_count.read(count, port);
                bit<64> pb = 0;            /* p_b * 2^32 */
                bool in_region = false;
                bool forced = false;

                if (avg < meta.red.minth) {
                    count = 0;
                } else if (avg < meta.red.maxth) {
                    pb = ((bit<64>) (avg - meta.red.minth) * (bit<64>) meta.red.slope)
                         >> AVG_FRAC_BITS;
                    in_region = true;
                } else if (meta.red.gentle == 1 && avg - meta.red.maxth < meta.red.maxth) {
                    pb = (bit<64>) meta.red.maxp
                         + (((bit<64>) (avg - meta.red.maxth) * (bit<64>) meta.red.gentle_slope)
                            >> AVG_FRAC_BITS);
                    in_region = true;
                } else {
                    forced = true;
                }

                /* Count-based selection (Linux sch_red): with R uniform in
                 * [0, 2^32) drawn after each mark, select when count * p_b > R;
                 * marks are then spaced uniformly in 1 .. 1/p_b packets, the
                 * same law as p_a = p_b / (1 - count * p_b). */
                if (in_region) {
                    bit<32> r;
                    if (count == 0) {
                        random<bit<32>>(r, 0, 0xFFFFFFFF);
                        red_rand.write(port, r);
                    } else {
                        red_rand.read(r, port);
                    }
                    count = count + 1;
                    if ((bit<64>) r < (bit<64>) count * pb) {
                        count = 0;
                        if (meta.red.ecn == 1 && hdr.ipv4.ecn != ECN_NOT_ECT) {
                            hdr.ipv4.ecn = ECN_CE;
                            decision = DECISION_MARK;
                            early_marks.count(port);
                        } else {
                            decision = DECISION_EARLY_DROP;
                            early_drops.count(port);
                            drop();
                        }
                    }
                }
                if (forced) {
                    count = 0;
                    decision = DECISION_FORCED_DROP;
                    forced_drops.count(port);
                    drop();
                }
                red_count.write(port, count);
            }

            last_qdepth.write(port, q);
            last_decision.write(port, decision);
            last_sample_time.write(port, now);
            if (decision == DECISION_PASS || decision == DECISION_MARK) {
                port_tx.count(port);
            }
        }
    }
}

/*************************************************************************
 ***********************  S W I T C H  *******************************
 *************************************************************************/

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
