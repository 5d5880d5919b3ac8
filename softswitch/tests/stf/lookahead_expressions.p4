// lookahead inside expressions: a varbit length computed from a looked-ahead header
// field, a slice of a looked-ahead value, and a select on a looked-ahead sum. BMv2
// reads `lookahead` only as the whole source of a `set`, so each is read into a
// temporary first, at the same packet position.
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n; }
header var_t { bit<8> n; varbit<64> data; }
header tail_t { bit<8> peek; bit<8> rest; }
struct headers { var_t v; tail_t t; }
struct metadata { bit<8> peek; }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t standard_metadata) {
    state start {
        meta.peek = pkt.lookahead<bit<16>>()[7:0] ^ 0xFF;
        pkt.extract(hdr.v, (bit<32>)(8 * (bit<9>)pkt.lookahead<len_t>().n));
        transition select(pkt.lookahead<bit<8>>() + 1) { 0: accept; default: parse_tail; }
    }
    state parse_tail {
        pkt.extract(hdr.t);
        hdr.t.peek = meta.peek;
        transition accept;
    }
}

control NoChecksum(inout headers hdr, inout metadata meta) { apply { } }
control Forward(inout headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    apply { standard_metadata.egress_spec = 1; }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control Deparse(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.v); packet.emit(hdr.t); }
}

V1Switch(P(), NoChecksum(), Forward(), NoEgress(), NoChecksum(), Deparse()) main;
