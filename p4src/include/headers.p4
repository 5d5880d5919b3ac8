/* aqmlab: headers, metadata and the telemetry digest of the RED/ECN switch. */
#ifndef AQMLAB_HEADERS_P4
#define AQMLAB_HEADERS_P4

const bit<16> TYPE_IPV4 = 0x0800;

/* ECN codepoints (RFC 3168), the low two bits of the former TOS byte. */
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE      = 3;

/* RED operating modes (action parameter `mode` of red_config). */
const bit<8> MODE_DROPTAIL = 0;
const bit<8> MODE_RED      = 1;

/* Decision codes, reported in telemetry samples. */
const bit<8> DECISION_PASS        = 0;
const bit<8> DECISION_MARK        = 1;
const bit<8> DECISION_EARLY_DROP  = 2;
const bit<8> DECISION_FORCED_DROP = 3;

/* Fixed point: queue lengths and thresholds carry 16 fraction bits;
 * probabilities are scaled by 2^32 (see p4src/README.md). */
#define AVG_FRAC_BITS 16
const bit<32> QDEPTH_MAX = 0xFFFF;      /* q << 16 must fit in 32 bits */
const bit<32> IDLE_BUCKET_MAX = 1023;   /* coarse idle buckets 1..1023 */
const bit<32> IDLE_COARSE = 1024;       /* key of coarse bucket c: 1024 + c */
const bit<8>  IDLE_FINE_LOG = 10;       /* 1024 fine buckets inside the first coarse one */
#define DECAY_FRAC_BITS 32                 /* decay factor = (1 - wq)^m * 2^32 */

#define MAX_PORTS 512

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<6>    diffserv;
    bit<2>    ecn;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

/* One queue sample for the controller (digest). */
struct telemetry_t {
    bit<32> time_us;      /* enq_timestamp of the sampled packet */
    bit<16> port;
    bit<32> qdepth;       /* enq_qdepth in packets */
    bit<32> avg;          /* RED average, 16 fraction bits */
    bit<8>  decision;     /* DECISION_* for the sampled packet */
}

/* Per-packet RED configuration (from red_config) and scratch values. */
struct red_meta_t {
    bit<8>  mode;
    bit<1>  ecn;
    bit<1>  gentle;
    bit<8>  wq_log;
    bit<32> minth;        /* packets, 16 fraction bits */
    bit<32> maxth;
    bit<32> maxp;         /* probability * 2^32 */
    bit<48> slope;        /* maxp / (maxth - minth) * 2^32, per packet of avg */
    bit<48> gentle_slope; /* (1 - maxp) / maxth * 2^32 */
    bit<8>  idle_log;     /* coarse idle bucket = idle_us >> idle_log */
    bit<11> idle_bucket;  /* fine (0..1023) or 1024 + coarse (1..1023) */
    bit<32> decay_factor; /* (1 - wq)^m * 2^32 for the idle bucket */
}

struct metadata {
    telemetry_t sample;
    red_meta_t red;
    bit<32>    sampling_period;
}

#endif
