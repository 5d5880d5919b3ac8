/* Lpf average, Random draw and counters (the fixed-function externs). */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Lpf<bit<32>, bit<9>>(512) avg;
    Random<bit<32>>() rng;
    Counter<bit<64>, bit<9>>(512, CounterType_t.PACKETS) seen;
    apply {
        md.a = avg.execute((bit<32>) eg_intr_md.enq_qdepth, eg_intr_md.egress_port);
        md.b = rng.get();
        seen.count(eg_intr_md.egress_port);
        eg_dprsr_md.drop_ctl = 0;
    }
}
#include "../pipeline.p4"
