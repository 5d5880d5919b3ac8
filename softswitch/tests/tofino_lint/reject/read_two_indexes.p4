/* Register.read at two indexes for one packet: two stateful-ALU accesses. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Register<bit<32>, bit<9>>(512) reg;
    apply {
        md.a = reg.read(ig_intr_md.ingress_port);
        md.b = reg.read(9w0);                                // LINT
    }
}
EMPTY_EGRESS
#include "../pipeline.p4"
