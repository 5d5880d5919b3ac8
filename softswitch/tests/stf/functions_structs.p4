// Functions returning values and headers, struct and header assignment, header
// comparison, enums (plain and serializable), typedefs and `type`, a typedef
// that v1model.p4 also declares (identical re-declaration), and local headers.
#include "include/data.p4"

typedef bit<9> PortId_t;
typedef bit<16> Word;
enum Colour { Red, Green }
enum bit<8> Opcode { Add = 1, Swap = 2, Copy = 3 }
struct pair_t { Word a; Word b; }
struct metadata { pair_t pair; }

Word sum(in Word a, in Word b) { return a + b; }
Word max16(in Word a, in Word b) { if (a > b) { return a; } return b; }
data_t with_b2(in data_t d, in bit<8> v) {
    data_t copy = d;
    copy.b2 = v;
    return copy;
}

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        Colour c = hdr.data.b2 == 0 ? Colour.Red : Colour.Green;
        PortId_t port = (PortId_t) hdr.data.b2;
        meta.pair = { hdr.data.h1, hdr.data.h2 };
        if ((Opcode) hdr.data.b1 == Opcode.Add) {
            hdr.data.h1 = sum(meta.pair.a, meta.pair.b);
            hdr.data.h2 = max16(meta.pair.a, meta.pair.b);
        } else if ((Opcode) hdr.data.b1 == Opcode.Swap) {
            pair_t p = { meta.pair.b, meta.pair.a };
            meta.pair = p;
            hdr.data.h1 = meta.pair.a;
            hdr.data.h2 = meta.pair.b;
        } else if ((Opcode) hdr.data.b1 == Opcode.Copy) {
            data_t saved = hdr.data;
            hdr.data = with_b2(saved, 0x77);
            if (hdr.data != saved && hdr.data.f1 == saved.f1) { hdr.data.f2 = 0xC0FFEE; }
        }
        if (c == Colour.Green) { standard_metadata.egress_spec = port; }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
