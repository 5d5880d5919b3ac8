/* A Digest in the egress deparser (TNA digests exist only in the ingress deparser). */
#define CUSTOM_DEPARSERS
#include "../prelude.p4"
EMPTY_INGRESS
EMPTY_EGRESS
control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr.ethernet); }
}
control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Digest<meta_t>() sample;                                 // LINT
    apply {
        sample.pack(md);
        pkt.emit(hdr.ethernet);
    }
}
#include "../pipeline.p4"
