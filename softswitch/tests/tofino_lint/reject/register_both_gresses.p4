/* One global register written from ingress and read from egress (v1model's telemetry pattern). */
#include "../prelude.p4"
Register<bit<32>, bit<9>>(512) shared;
RegisterAction<bit<32>, bit<9>, bit<32>>(shared) put = {
    void apply(inout bit<32> v) { v = 1; }
};
RegisterAction<bit<32>, bit<9>, bit<32>>(shared) get = {
    void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
};
control Ing(ING_PARAMS) {
    apply { put.execute(ig_intr_md.ingress_port); }
}
control Eg(EG_PARAMS) {
    apply { md.a = get.execute(eg_intr_md.egress_port); }  // LINT
}
#include "../pipeline.p4"
