// A local header variable named like a header of the program's headers struct
// (`data_t data` beside `hdr.data`) is a separate header instance.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        data_t data = hdr.data;
        data.b1 = data.b1 + 1;
        hdr.data.b2 = data.b1;
        if (data.isValid() && data != hdr.data) {
            hdr.data.h1 = 1;
        }
    }
}
DATA_SWITCH(DataIngress, NoEgress)
