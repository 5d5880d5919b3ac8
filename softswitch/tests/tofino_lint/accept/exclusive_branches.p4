/* Two RegisterActions of one register on exclusive branches of an if. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) clear = {
        void apply(inout bit<32> v) { v = 0; }
    };
    apply {
        if (md.flag == 1) {
            md.a = inc.execute(ig_intr_md.ingress_port);
        } else {
            clear.execute(ig_intr_md.ingress_port);
        }
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
