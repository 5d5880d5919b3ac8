// `last` and `lastIndex` of a header union stack: the union extracted last and its
// index (BMv2's last_stack_index on the union stack, as p4c lowers them), in the parser
// and in the ingress control.
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
header out_t { bit<8> parsed_index; bit<8> index; bit<16> last_y; }
struct headers { out_t o; u_t[3] us; }
struct metadata { bit<8> parsed_index; bit<16> last_y; }

parser UsParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.o);
        packet.extract(hdr.us.next.a);
        transition select(hdr.us.last.a.x) {
            0: done;
            default: second;
        }
    }
    state second {
        packet.extract(hdr.us.next.b);
        meta.last_y = hdr.us.last.b.y;
        transition done;
    }
    state done {
        meta.parsed_index = (bit<8>) hdr.us.lastIndex;
        transition accept;
    }
}

control NoCk(inout headers hdr, inout metadata meta) { apply { } }
control UsIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.o.parsed_index = meta.parsed_index;
        hdr.o.last_y = meta.last_y;
        hdr.o.index = (bit<8>) hdr.us.lastIndex;
        if (hdr.us.last.b.isValid()) {
            hdr.us.last.b.y = hdr.us.last.b.y + 1;
        } else {
            hdr.us.last.a.x = 0xAA;
        }
    }
}
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control UsDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.o); packet.emit(hdr.us); }
}

V1Switch(UsParser(), NoCk(), UsIngress(), NoEgress(), NoCk(), UsDeparser()) main;
