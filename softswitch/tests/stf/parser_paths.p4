// Parser features: select on masks (&&&), ranges (..) and default; lookahead,
// advance, verify with a program-defined error, and what ingress sees after a
// parser error (v1model: the packet continues with parser_error set and the
// headers extracted until then; unparsed bytes follow as payload).
#include <core.p4>
#include <v1model.p4>

error { BadKind }
header kind_t { bit<8> kind; bit<8> path; }
header body_t { bit<16> v; }
struct metadata { bit<8> path; }
struct headers { kind_t kind; body_t body; }

parser PathParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.kind);
        transition select(hdr.kind.kind) {
            0x10 &&& 0xF0: by_mask;
            0x20 .. 0x2F: by_range;
            0x30: by_lookahead;
            0x31: by_advance;
            0x32: by_verify;
            0x33: no_default;
            default: accept;
        }
    }
    state by_mask { meta.path = 1; packet.extract(hdr.body); transition accept; }
    state by_range { meta.path = 2; packet.extract(hdr.body); transition accept; }
    state by_lookahead {
        meta.path = packet.lookahead<bit<8>>();
        packet.extract(hdr.body);
        transition accept;
    }
    state by_advance { packet.advance(16); meta.path = 4; packet.extract(hdr.body); transition accept; }
    state by_verify {
        packet.extract(hdr.body);
        verify(hdr.body.v != 0xBAD0, error.BadKind);
        meta.path = 5;
        transition accept;
    }
    state no_default {
        packet.extract(hdr.body);
        transition select(hdr.body.v) { 0x0001: accept; }
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control PathIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        hdr.kind.path = meta.path;
        if (standard_metadata.parser_error == error.PacketTooShort) { hdr.kind.path = 0xE1; }
        else if (standard_metadata.parser_error == error.BadKind) { hdr.kind.path = 0xE2; }
        else if (standard_metadata.parser_error == error.NoMatch) { hdr.kind.path = 0xE3; }
        if (!hdr.body.isValid()) { hdr.kind.path = hdr.kind.path | 0x80; }
    }
}

control PathDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.kind); packet.emit(hdr.body); }
}

V1Switch(PathParser(), NoVerify(), PathIngress(), NoEgress(), NoCompute(), PathDeparser()) main;
