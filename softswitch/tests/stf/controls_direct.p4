// Controls applied without a declared instance and controls passed to controls:
// `Bump.apply(x)` on a control type without constructor parameters applies an instance
// of its own (P4-16 15.1, direct type invocation; p4c names it `Bump_inst`), and a control
// instance given as a constructor argument is applied through it, sharing its externs.
#include "include/data.p4"
struct metadata { }

control Step(inout bit<16> x);

control Bump(inout bit<16> x) {
    counter(4, CounterType.packets) bumps;
    apply {
        x = x + 1;
        bumps.count(0);
    }
}

control ShiftThen(inout bit<16> x)(Step then) {
    apply {
        x = x << 1;
        then.apply(x);
    }
}

control Twice(inout bit<16> x) {
    Bump() shared;
    ShiftThen(shared) first;
    ShiftThen(shared) second;
    apply {
        first.apply(x);
        second.apply(x);
    }
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.data.f1 == 1) {
            Bump.apply(hdr.data.h1);
        } else {
            Twice.apply(hdr.data.h2);
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
