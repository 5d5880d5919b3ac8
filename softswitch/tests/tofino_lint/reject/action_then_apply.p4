/* A RegisterAction in a table's action, then another on the same register in apply. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) clear = {
        void apply(inout bit<32> v) { v = 0; }
    };
    action count_it() { md.a = inc.execute(ig_intr_md.ingress_port); }
    table t {
        key = { hdr.ethernet.dst: exact; }
        actions = { count_it; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
        clear.execute(ig_intr_md.ingress_port);             // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
