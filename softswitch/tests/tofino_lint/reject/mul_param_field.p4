/* Multiplication of an action parameter (run-time data) by a field. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    action scale(bit<32> factor) {
        md.c = md.a * factor;                    // LINT
    }
    table t {
        key = { ig_intr_md.ingress_port: exact; }
        actions = { scale; }
    }
    apply { t.apply(); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
