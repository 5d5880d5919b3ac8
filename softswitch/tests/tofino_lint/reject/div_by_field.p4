/* Division by a run-time value. */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    apply {
        md.c = md.a / md.b;                      // LINT
    }
}
#include "../pipeline.p4"
