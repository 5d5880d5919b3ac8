/* Two operations for one value in a RegisterAction (a + b + c). */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) acc = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + md.a + md.b;                             // LINT
            rv = v;
        }
    };
    apply { md.c = acc.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
