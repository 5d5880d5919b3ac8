// An action selector hashes its `selector` keys; a key that is not a field (an
// expression, a call with side effects) is computed before the table is applied,
// the call once (as p4c's SimplifyKey and KeySideEffect do), and the selector hashes
// the value computed.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct metadata { }
struct headers { h_t h; }

bit<8> inc(inout bit<8> x) { x = x + 1; return x; }

parser SelParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.h); transition accept; }
}

control SelIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w8) pick;
    action send(bit<9> port) { standard_metadata.egress_spec = port; }
    table spread {
        key = {
            hdr.h.a: exact;
            hdr.h.b ^ 8w0xFF: selector;
            inc(hdr.h.c): selector;
        }
        actions = { send; NoAction; }
        implementation = pick;
        default_action = NoAction();
    }
    apply { spread.apply(); }
}

control SelVerify(inout headers hdr, inout metadata meta) { apply { } }
control SelCompute(inout headers hdr, inout metadata meta) { apply { } }
control SelEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) { apply { } }
control SelDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.h); } }

V1Switch(SelParser(), SelVerify(), SelIngress(), SelEgress(), SelCompute(),
         SelDeparser()) main;
