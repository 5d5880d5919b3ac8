/* An extern call (Random) inside a RegisterAction. */
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    Random<bit<32>>() rng;
    Register<bit<32>, bit<9>>(512) reg;
    RegisterAction<bit<32>, bit<9>, bit<32>>(reg) redraw = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = rng.get();                                   // LINT
            rv = v;
        }
    };
    apply { md.c = redraw.execute(ig_intr_md.ingress_port); }
}
EMPTY_EGRESS
#include "../pipeline.p4"
