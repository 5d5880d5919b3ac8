/* A Digest in the ingress deparser, selected by digest_type. */
#define CUSTOM_DEPARSERS
#include "../prelude.p4"
control Ing(ING_PARAMS) {
    apply { ig_dprsr_md.digest_type = 1; }
}
EMPTY_EGRESS
control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Digest<meta_t>() sample;
    apply {
        if (ig_dprsr_md.digest_type == 1) {
            sample.pack(md);
        }
        pkt.emit(hdr.ethernet);
    }
}
control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t md,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr.ethernet); }
}
#include "../pipeline.p4"
