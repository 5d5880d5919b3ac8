/* Register.read then Register.write at the same index: bf-p4c merges them into one RegisterAction. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    apply {
        md.a = reg.read(ig_intr_md.ingress_port);
        reg.write(ig_intr_md.ingress_port, md.a + 1);
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
