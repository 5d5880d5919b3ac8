// Header stacks: a parser loop with .next/.last and a select on the last
// element, push_front/pop_front, indexing, and an emit of the whole stack
// (only valid elements are emitted).
#include <core.p4>
#include <v1model.p4>

header count_t { bit<8> n; bit<8> op; }
header elem_t { bit<1> bos; bit<7> value; }
struct metadata { }
struct headers { count_t count; elem_t[4] stack; }

parser StackParser(packet_in packet, out headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.count);
        transition parse_elem;
    }
    state parse_elem {
        packet.extract(hdr.stack.next);
        transition select(hdr.stack.last.bos) { 1: accept; default: parse_elem; }
    }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control StackIngress(inout headers hdr, inout metadata meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.count.op == 1) {            // push a new top element 0x7F
            hdr.stack.push_front(1);
            hdr.stack[0].setValid();
            hdr.stack[0].bos = 0;
            hdr.stack[0].value = 0x7F;
        } else if (hdr.count.op == 2) {     // pop two
            hdr.stack.pop_front(2);
        } else if (hdr.count.op == 3) {     // swap the first two values
            bit<7> tmp = hdr.stack[0].value;
            hdr.stack[0].value = hdr.stack[1].value;
            hdr.stack[1].value = tmp;
        }
        hdr.count.n = (bit<8>) (hdr.stack[0].isValid() ? 8w1 : 8w0)
                    + (bit<8>) (hdr.stack[1].isValid() ? 8w1 : 8w0)
                    + (bit<8>) (hdr.stack[2].isValid() ? 8w1 : 8w0)
                    + (bit<8>) (hdr.stack[3].isValid() ? 8w1 : 8w0);
    }
}

control StackDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.count); packet.emit(hdr.stack); }
}

V1Switch(StackParser(), NoVerify(), StackIngress(), NoEgress(), NoCompute(), StackDeparser()) main;
