/* Multiplication by a constant (a shift-and-add), division by a power of two. */
#include "../prelude.p4"
const bit<32> SCALE = 3;
control Ing(ING_PARAMS) {
    apply {
        md.c = md.a * SCALE;
        md.b = md.a / 8;
        md.a = md.a % 16;
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
