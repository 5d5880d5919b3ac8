/* The RED budget: two conditions, one output (hw/tofino's red_budget_step). */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) budget;
    RegisterAction<bit<32>, bit<9>, bit<1>>(budget) step = {
        void apply(inout bit<32> d, out bit<1> selected) {
            if (md.flag == 0) {
                d = md.b;
                selected = 0;
            } else if (d < md.a) {
                d = md.b;
                selected = 1;
            } else {
                d = d - md.a;
                selected = 0;
            }
        }
    };
    apply { md.k[0:0] = step.execute(eg_intr_md.egress_port); }
}
#include "../pipeline.p4"
