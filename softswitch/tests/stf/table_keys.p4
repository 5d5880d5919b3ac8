// Key shapes: a slice of a field (compiled, like p4c, into a temporary holding
// the slice, so STF gives the slice's value), a header validity test, an LPM
// key, and a table whose hit is tested inside a compound condition.
#include <core.p4>
#include <v1model.p4>

header data_t { bit<32> f1; bit<32> f2; bit<16> h1; bit<16> h2; bit<8> b1; bit<8> b2; }
header extra_t { bit<8> x; }
struct metadata { }
struct headers { data_t data; extra_t extra; }

parser KeyParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.data);
        transition select(hdr.data.b2) { 0xEE: parse_extra; default: accept; }
    }
    state parse_extra { packet.extract(hdr.extra); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control KeyIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action set_b1(bit<8> v) { hdr.data.b1 = v; }
    action set_h1(bit<16> v) { hdr.data.h1 = v; }
    action set_h2(bit<16> v) { hdr.data.h2 = v; }
    table by_slice {
        key = { hdr.data.f1[22:18]: exact; }
        actions = { set_b1; NoAction; }
        default_action = NoAction();
    }
    table by_validity {
        key = { hdr.extra.isValid(): exact; }
        actions = { set_h1; NoAction; }
        default_action = NoAction();
    }
    table by_prefix {
        key = { hdr.data.f2: lpm; }
        actions = { set_h2; NoAction; }
        default_action = NoAction();
    }
    apply {
        by_slice.apply();
        by_validity.apply();
        if (by_prefix.apply().hit && hdr.data.b1 != 0) { hdr.data.b2 = hdr.data.b2 + 1; }
    }
}

control KeyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.data); packet.emit(hdr.extra); }
}

V1Switch(KeyParser(), NoVerify(), KeyIngress(), NoEgress(), NoCompute(), KeyDeparser()) main;
