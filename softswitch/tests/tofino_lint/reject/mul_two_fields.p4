/* Multiplication of two metadata fields in the ingress apply. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    apply {
        md.c = md.a * md.b;                      // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
