// Registers and counters: a per-flow packet count kept in a register (read,
// add, write back, and the new value written into the packet), an indexed
// packets-and-bytes counter, and a direct counter attached to a table.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    register<bit<16>>(16) seen;
    counter(16, CounterType.packets_and_bytes) by_flow;
    direct_counter(CounterType.packets_and_bytes) hits;

    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    table route {
        key = { hdr.data.f2: exact; }
        actions = { forward; NoAction; }
        default_action = NoAction();
        counters = hits;
    }
    apply {
        bit<32> flow = (bit<32>) hdr.data.b1[3:0];
        bit<16> n;
        seen.read(n, flow);
        n = n + 1;
        seen.write(flow, n);
        hdr.data.h1 = n;
        by_flow.count(flow);
        route.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
