// Shared by the small construct programs of the STF corpus that, like p4c's own
// STF tests, send bare 14-byte data headers: f1, f2 (32 bits), h1, h2 (16),
// b1, b2 (8). The program including it defines `struct metadata` first, then
// its ingress control `DataIngress` (and egress `DataEgress` when it defines
// HAS_EGRESS) before instantiating `DATA_SWITCH`.
#ifndef STF_DATA_P4
#define STF_DATA_P4
#include <core.p4>
#include <v1model.p4>

header data_t { bit<32> f1; bit<32> f2; bit<16> h1; bit<16> h2; bit<8> b1; bit<8> b2; }
struct headers { data_t data; }

parser DataParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.data); transition accept; }
}

control NoVerify(inout headers hdr, inout metadata meta) { apply { } }
control NoCompute(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control DataDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.data); } }

#define DATA_SWITCH(ingress, egress) \
    V1Switch(DataParser(), NoVerify(), ingress(), egress(), NoCompute(), DataDeparser()) main;
#endif
