// varbit fields: a variable-length extract sized from a length byte, emitted
// back unchanged; a length that is not a multiple of 8 bits is a parser error
// (ParserInvalidArgument), and one longer than the field's maximum too
// (HeaderTooShort), as in BMv2.
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> bits; bit<8> status; }
header opts_t { varbit<64> data; }
header tail_t { bit<8> t; }
struct metadata { }
struct headers { len_t len; opts_t opts; tail_t tail; }

parser VParser(packet_in packet, out headers hdr, inout metadata meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.len);
        packet.extract(hdr.opts, (bit<32>) hdr.len.bits);
        packet.extract(hdr.tail);
        transition accept;
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control VIngress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.NoError) { hdr.len.status = 0x00; }
        else if (standard_metadata.parser_error == error.ParserInvalidArgument) { hdr.len.status = 0xE6; }
        else if (standard_metadata.parser_error == error.HeaderTooShort) { hdr.len.status = 0xE4; }
        else { hdr.len.status = 0xEE; }
        if (hdr.tail.isValid()) { hdr.tail.t = hdr.tail.t + 1; }
    }
}

control VDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.len); packet.emit(hdr.opts); packet.emit(hdr.tail); }
}

V1Switch(VParser(), NoVerify(), VIngress(), NoEgress(), NoCompute(), VDeparser()) main;
