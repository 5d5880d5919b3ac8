/* Shifts by constants, slices and concatenation. */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    apply {
        md.c = (bit<32>) eg_intr_md.enq_qdepth << 8;
        md.b = md.c >> 4;
        md.a = md.b[15:0] ++ md.c[15:0];
    }
}
#include "../pipeline.p4"
