/* Modulo by a constant that is not a power of two. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    apply {
        md.c = md.a % 3;                         // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
