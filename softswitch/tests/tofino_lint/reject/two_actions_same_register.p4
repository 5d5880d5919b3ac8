/* Two RegisterActions of one register executed one after the other. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) rd = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    apply {
        md.a = inc.execute(ig_intr_md.ingress_port);
        md.b = rd.execute(ig_intr_md.ingress_port);          // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
