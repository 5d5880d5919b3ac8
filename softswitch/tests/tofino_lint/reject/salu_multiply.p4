/* A multiplication inside a RegisterAction. */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) scale = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v * md.a;                                    // LINT
            rv = v;
        }
    };
    apply { md.b = scale.execute(eg_intr_md.egress_port); }
}
#include "../pipeline.p4"
