/* The same RegisterAction executed twice for one packet. */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    apply {
        md.a = inc.execute(eg_intr_md.egress_port);
        if (md.flag == 1) {
            md.b = inc.execute(eg_intr_md.egress_port);      // LINT
        }
    }
}
#include "../pipeline.p4"
