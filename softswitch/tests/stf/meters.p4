// Meters that the control plane has not configured color every packet GREEN
// (0), as in BMv2: an indexed meter (execute_meter) and a direct meter read by
// a table's action. (STF has no command to set meter rates.)
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    meter(8, MeterType.packets) by_index;
    direct_meter<bit<8>>(MeterType.bytes) by_entry;
    action read_color() { by_entry.read(hdr.data.b2); }
    table colored {
        key = { hdr.data.f1: exact; }
        actions = { read_color; NoAction; }
        default_action = NoAction();
        meters = by_entry;
    }
    apply {
        by_index.execute_meter((bit<32>) hdr.data.h1, hdr.data.b1);
        colored.apply();
    }
}
DATA_SWITCH(DataIngress, NoEgress)
