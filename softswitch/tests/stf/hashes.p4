// v1model hash(): CRC-32, CRC-16 (ARC), the Internet checksum (csum16), xor16
// and identity over the same data, each with base 0 and a modulus as wide as
// its output; expected values are computed independently of the target.
#include "include/data.p4"
struct metadata { }

control DataIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        bit<32> c32; bit<16> c16; bit<16> cs; bit<16> x16; bit<8> id; bit<8> ranged;
        hash(c32, HashAlgorithm.crc32, 32w0, { hdr.data.f1, hdr.data.b1 }, 64w0x100000000);
        hash(c16, HashAlgorithm.crc16, 32w0, { hdr.data.f1, hdr.data.b1 }, 32w0x10000);
        hash(cs, HashAlgorithm.csum16, 32w0, { hdr.data.f1, hdr.data.b1 }, 32w0x10000);
        hash(x16, HashAlgorithm.xor16, 32w0, { hdr.data.f1, hdr.data.b1 }, 32w0x10000);
        hash(id, HashAlgorithm.identity, 32w0, { hdr.data.f1, hdr.data.b1 }, 32w0x100);
        hash(ranged, HashAlgorithm.crc16, 32w100, { hdr.data.f1, hdr.data.b1 }, 32w10);
        hdr.data.f2 = c32;
        hdr.data.h1 = c16;
        hdr.data.h2 = cs;
        hdr.data.b2 = id;
        hdr.data.f1 = x16 ++ ranged ++ 8w0;
    }
}
DATA_SWITCH(DataIngress, NoEgress)
