// `_` (don't care) for an `out` parameter: each one becomes a temporary of the
// parameter's type that nothing reads (p4c's front end does the same). In the parser,
// `extract<skip_t>(_)` reads one skip_t from the packet into a scratch header, so the
// bytes are consumed but never emitted; in ingress, `_` takes the out result of an
// action (also as a named argument, and bound in a table's actions list), of a
// function, of register.read and of a sub-control's apply, while their other effects
// happen.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> skips; }
header skip_t { bit<16> junk; }
header data_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; }
struct headers { tag_t tag; data_t data; }
struct metadata { }

parser SkipParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.tag);
        transition select(hdr.tag.skips) {
            0: parse_data;
            1: skip_one;
            default: skip_two;
        }
    }
    state skip_one {
        packet.extract<skip_t>(_);
        transition parse_data;
    }
    state skip_two {
        packet.extract<skip_t>(_);
        packet.extract<skip_t>(_);
        transition parse_data;
    }
    state parse_data { packet.extract(hdr.data); transition accept; }
}

bit<8> double_it(in bit<8> x, out bit<8> old) {
    old = x;
    return x + x;
}

control Bump(out bit<8> seen, inout data_t d) {
    apply { seen = d.c; d.c = d.c + 1; }
}

control NoCheck(inout headers hdr, inout metadata meta) { apply { } }
control DontCareIngress(inout headers hdr, inout metadata meta,
                        inout standard_metadata_t standard_metadata) {
    register<bit<8>>(2) last_a;
    Bump() bump;

    action set_b(out bit<8> previous, bit<8> value) {
        previous = hdr.data.b;
        hdr.data.b = value;
    }

    table set_b_by_op {
        key = { hdr.data.op: exact; }
        actions = { set_b(_); NoAction; }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = 1;
        last_a.read(_, 0);
        last_a.write(0, hdr.data.a);
        if (hdr.data.op == 1) { set_b(_, 0x77); }
        if (hdr.data.op == 2) { set_b(value = 0x55, previous = _); }
        if (hdr.data.op == 3) { hdr.data.a = double_it(hdr.data.a, _); }
        if (hdr.data.op == 4) { bump.apply(_, hdr.data); }
        set_b_by_op.apply();
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control SkipDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.tag); packet.emit(hdr.data); }
}
V1Switch(SkipParser(), NoCheck(), DontCareIngress(), NoEgress(), NoCompute(),
         SkipDeparser()) main;
