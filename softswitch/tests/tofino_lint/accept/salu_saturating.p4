/* Saturating add and compare-select in a RegisterAction. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) sat = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (v > md.a) {
                rv = v;
            } else {
                rv = md.a;
            }
            v = v |+| md.b;
        }
    };
    apply { md.c = sat.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
