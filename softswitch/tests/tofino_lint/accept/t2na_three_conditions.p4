/* target: tofino2 -- three conditions in a RegisterAction: too many for Tofino 1, fine on Tofino 2. */
#define ARCH_T2NA
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<1>>(reg) step = {
        void apply(inout bit<32> v, out bit<1> rv) {
            rv = 0;
            if (v < md.a) {
                v = md.b;
            } else if (v > md.c) {
                v = 0;
            } else if (md.flag == 1) {
                rv = 1;
            }
        }
    };
    apply { md.k[0:0] = step.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
