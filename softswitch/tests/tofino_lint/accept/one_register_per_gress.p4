/* A register in each gress, each used once per packet. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) rx;
    RegisterAction<bit<32>, bit<9>, bit<32>>(rx) count_rx = {
        void apply(inout bit<32> v) { v = v + 1; }
    };
    apply { count_rx.execute(ig_intr_md.ingress_port); }
}
control Eg(EG_PARAMS) {
    Register<bit<32>, bit<9>>(512) tx;
    RegisterAction<bit<32>, bit<9>, bit<32>>(tx) count_tx = {
        void apply(inout bit<32> v) { v = v + 1; }
    };
    apply { count_tx.execute(eg_intr_md.egress_port); }
}
#include "../pipeline.p4"
