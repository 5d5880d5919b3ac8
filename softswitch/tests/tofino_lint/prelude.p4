/* Shared by the Tofino lint corpus: headers, parsers and deparsers. A case
 * defines `control Ing(ING_PARAMS)` and `control Eg(EG_PARAMS)`, then includes
 * pipeline.p4. ARCH_T2NA selects t2na.p4. */
#include <core.p4>
#ifdef ARCH_T2NA
#include <t2na.p4>
#else
#include <tna.p4>
#endif

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct meta_t {
    bit<32> a;
    bit<32> b;
    bit<32> c;
    bit<8>  k;
    bit<1>  flag;
}

#define ING_PARAMS inout headers_t hdr, inout meta_t md, \
    in ingress_intrinsic_metadata_t ig_intr_md, \
    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md, \
    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md, \
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md
#define EG_PARAMS inout headers_t hdr, inout meta_t md, \
    in egress_intrinsic_metadata_t eg_intr_md, \
    in egress_intrinsic_metadata_from_parser_t eg_prsr_md, \
    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md, \
    inout egress_intrinsic_metadata_for_output_port_t eg_oport_md

parser IgParser(packet_in pkt, out headers_t hdr, out meta_t md,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

parser EgParser(packet_in pkt, out headers_t hdr, out meta_t md,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

#ifndef CUSTOM_DEPARSERS
control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr.ethernet); }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr.ethernet); }
}
#endif

#define EMPTY_INGRESS control Ing(ING_PARAMS) { apply { } }
#define EMPTY_EGRESS control Eg(EG_PARAMS) { apply { } }
