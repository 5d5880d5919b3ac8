/* Register.read and Register.write on one path (v1model style). */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    apply {
        md.a = reg.read(ig_intr_md.ingress_port);
        reg.write(ig_intr_md.ingress_port, md.a + 1);        // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
