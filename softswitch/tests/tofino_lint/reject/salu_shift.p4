/* A shift inside a RegisterAction (an EWMA by wq = 2^-4). */
#include "../prelude.p4"
EMPTY_INGRESS
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) avg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(avg) ewma = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + (md.a >> 4);                             // LINT
            rv = v;
        }
    };
    apply { md.b = ewma.execute(eg_intr_md.egress_port); }
}
#include "../pipeline.p4"
