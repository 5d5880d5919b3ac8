/* An extern call statement (Counter.count) inside a RegisterAction: a stateful ALU only assigns and branches. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Counter<bit<32>, bit<9>>(512, CounterType_t.PACKETS) seen;
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) bump = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + 1;
            seen.count(ig_intr_md.ingress_port);             // LINT
            rv = v;
        }
    };
    apply { md.c = bump.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
