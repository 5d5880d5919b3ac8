/* RegisterActions of one register in different actions of one table. */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) dec = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v - 1; rv = v; }
    };
    action up() { md.a = inc.execute(eg_intr_md.egress_port); }
    action down() { md.a = dec.execute(eg_intr_md.egress_port); }
    table t {
        key = { hdr.ethernet.dst: exact; }
        actions = { up; down; }
        default_action = up();
    }
    apply { t.apply(); }
}
#include "../pipeline.p4"
