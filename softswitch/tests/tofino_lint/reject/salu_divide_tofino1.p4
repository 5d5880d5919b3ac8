/* A division inside a RegisterAction: Tofino 1's stateful ALU has no divider. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) share = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v / md.a;                                   // LINT
        }
    };
    apply { md.c = share.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
