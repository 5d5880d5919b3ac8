/* Shift by a run-time amount (v1model's avg >> wq_log). */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    apply {
        md.c = md.a >> md.k;                     // LINT
    }
}
#include "../pipeline.p4"
