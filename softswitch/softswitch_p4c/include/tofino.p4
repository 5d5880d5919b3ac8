/* aqmlab softswitch-p4c: types and externs shared by TNA (tna.p4) and T2NA
 * (t2na.p4), written to the public Tofino Native Architecture API (the
 * tna.p4/t2na.p4 headers published with open-p4studio and p4c's Tofino
 * back-end). Used by `softswitch-p4c --arch tna|t2na` to check programs. */
#ifndef _AQMLAB_TOFINO_P4_
#define _AQMLAB_TOFINO_P4_

#include "core.p4"

match_kind {
    range,
    selector,
    atcam_partition_index,
    dleft_hash
}

typedef bit<9>  PortId_t;
typedef bit<16> MulticastGroupId_t;
/* The generation comes from --arch (tna: __TARGET_TOFINO__ 1, t2na: 2), as in
 * bf-p4c, where tna.p4 picks Tofino 1's or Tofino 2's declarations by it.
 * Tofino 2 widens queue and mirror ids. */
#if __TARGET_TOFINO__ == 2
typedef bit<7>  QueueId_t;
typedef bit<4>  MirrorType_t;
#else
typedef bit<5>  QueueId_t;
typedef bit<3>  MirrorType_t;
#endif
typedef bit<10> MirrorId_t;
typedef bit<16> ReplicationId_t;
typedef bit<3>  DigestType_t;
typedef error   ParserError_t;

/* Bits of port metadata after ig_intr_md: 64 on Tofino 1, 192 on Tofino 2. */
#if __TARGET_TOFINO__ == 2
const bit<32> PORT_METADATA_SIZE = 32w192;
#else
const bit<32> PORT_METADATA_SIZE = 32w64;
#endif

enum HashAlgorithm_t {
    IDENTITY,
    RANDOM,
    CRC8,
    CRC16,
    CRC32,
    CRC64,
    CUSTOM
}

enum CounterType_t {
    PACKETS,
    BYTES,
    PACKETS_AND_BYTES
}

enum MeterType_t {
    PACKETS,
    BYTES
}

enum bit<8> MeterColor_t { GREEN = 8w0, YELLOW = 8w1, RED = 8w3 }

enum SelectorMode_t {
    FAIR,
    RESILIENT
}

enum LpfType_t {
    RATE,
    SAMPLE
}

@__intrinsic_metadata
header ingress_intrinsic_metadata_t {
    bit<1> resubmit_flag;
    bit<1> _pad1;
    bit<2> packet_version;
    bit<3> _pad2;
    PortId_t ingress_port;
    bit<48> ingress_mac_tstamp;
}

@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t ucast_egress_port;
    bit<1> bypass_egress;
    bit<1> deflect_on_drop;
    bit<3> ingress_cos;
    QueueId_t qid;
    bit<3> icos_for_copy_to_cpu;
    bit<1> copy_to_cpu;
    bit<2> packet_color;
    bit<1> disable_ucast_cutthru;
    bit<1> enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;
    MulticastGroupId_t mcast_grp_b;
    bit<13> level1_mcast_hash;
    bit<13> level2_mcast_hash;
    bit<16> level1_exclusion_id;
    bit<9> level2_exclusion_id;
    bit<16> rid;
}

@__intrinsic_metadata
struct ingress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3> drop_ctl;
    DigestType_t digest_type;
    bit<3> resubmit_type;
    MirrorType_t mirror_type;
}

/* The time fields are ns: 18 bits on Tofino 1 (they wrap after 262 us, hence
 * the bridged 48-bit global timestamp for idle time), 32 bits on Tofino 2. */
@__intrinsic_metadata
header egress_intrinsic_metadata_t {
    bit<7> _pad0;
    PortId_t egress_port;
    bit<5> _pad1;
    bit<19> enq_qdepth;
    bit<6> _pad2;
    bit<2> enq_congest_stat;
#if __TARGET_TOFINO__ == 2
    bit<32> enq_tstamp;
#else
    bit<14> _pad3;
    bit<18> enq_tstamp;
#endif
    bit<5> _pad4;
    bit<19> deq_qdepth;
    bit<6> _pad5;
    bit<2> deq_congest_stat;
    bit<8> app_pool_congest_stat;
#if __TARGET_TOFINO__ == 2
    bit<32> deq_timedelta;
#else
    bit<14> _pad6;
    bit<18> deq_timedelta;
#endif
    bit<16> egress_rid;
    bit<7> _pad7;
    bit<1> egress_rid_first;
#if __TARGET_TOFINO__ == 2
    bit<1> _pad8;
#else
    bit<3> _pad8;
#endif
    QueueId_t egress_qid;
    bit<5> _pad9;
    bit<3> egress_cos;
    bit<7> _pad10;
    bit<1> deflection_flag;
    bit<16> pkt_length;
#if __TARGET_TOFINO__ == 2
    bit<8> _pad11;
#endif
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_deparser_t {
    bit<3> drop_ctl;
    MirrorType_t mirror_type;
    bit<1> coalesce_flush;
    bit<7> coalesce_length;
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_output_port_t {
    bit<1> capture_tstamp_on_tx;
    bit<1> update_delay_on_tx;
    bit<1> force_tx_error;
}

extern Checksum {
    Checksum();
    void add<T>(in T data);
    void subtract<T>(in T data);
    bool verify();
    bit<16> get();
    bit<16> update<T>(in T data);
}

extern ParserCounter {
    ParserCounter();
    void set<T>(in T value);
    bool is_zero();
    bool is_negative();
    void increment(in bit<8> value);
    void decrement(in bit<8> value);
}

extern ParserPriority {
    ParserPriority();
    void set(in bit<3> prio);
}

extern CRCPolynomial<T> {
    CRCPolynomial(T coeff, bool reversed, bool msb, bool extended, T init, T xor);
}

extern Hash<W> {
    Hash(HashAlgorithm_t algo);
    W get<D>(in D data);
}

extern Random<W> {
    Random();
    W get();
}

extern Counter<W, I> {
    Counter(bit<32> size, CounterType_t type);
    void count(in I index);
}

extern DirectCounter<W> {
    DirectCounter(CounterType_t type);
    void count();
}

extern Meter<I> {
    Meter(bit<32> size, MeterType_t type);
    bit<8> execute(in I index, in MeterColor_t color);
    bit<8> execute(in I index);
}

extern DirectMeter {
    DirectMeter(MeterType_t type);
    bit<8> execute(in MeterColor_t color);
    bit<8> execute();
}

extern Lpf<T, I> {
    Lpf(bit<32> size);
    T execute(in T val, in I index);
}

extern DirectLpf<T> {
    DirectLpf();
    T execute(in T val);
}

extern Wred<T, I> {
    Wred(bit<32> size, bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in T val, in I index);
}

extern DirectWred<T> {
    DirectWred(bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in T val);
}

extern Register<T, I> {
    Register(bit<32> size);
    Register(bit<32> size, T initial_value);
    T read(in I index);
    void write(in I index, in T value);
}

extern DirectRegister<T> {
    DirectRegister();
    DirectRegister(T initial_value);
    T read();
    void write(in T value);
}

extern RegisterParam<T> {
    RegisterParam(T initial_value);
    T read();
}

extern RegisterAction<T, I, U> {
    RegisterAction(Register<T, I> reg);
    U execute(in I index);
    abstract void apply(inout T value, @optional out U rv);
}

extern DirectRegisterAction<T, U> {
    DirectRegisterAction(DirectRegister<T> reg);
    U execute();
    abstract void apply(inout T value, @optional out U rv);
}

extern ActionProfile {
    ActionProfile(bit<32> size);
}

extern ActionSelector {
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   bit<32> max_group_size, bit<32> num_groups);
}

extern Mirror {
    Mirror();
    void emit(in MirrorId_t session_id);
    void emit<T>(in MirrorId_t session_id, in T hdr);
}

extern Resubmit {
    Resubmit();
    void emit();
    void emit<T>(in T hdr);
}

extern Digest<T> {
    Digest();
    void pack(in T data);
}

parser IngressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M ig_md,
    out ingress_intrinsic_metadata_t ig_intr_md);

parser EgressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M eg_md,
    out egress_intrinsic_metadata_t eg_intr_md);

control IngressT<H, M>(
    inout H hdr,
    inout M ig_md,
    in ingress_intrinsic_metadata_t ig_intr_md,
    in ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr,
    inout ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    inout ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm);

control EgressT<H, M>(
    inout H hdr,
    inout M eg_md,
    in egress_intrinsic_metadata_t eg_intr_md,
    in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    inout egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    inout egress_intrinsic_metadata_for_output_port_t eg_intr_md_for_oport);

control IngressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    in ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr);

control EgressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    in egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr);

package Pipeline<IH, IM, EH, EM>(
    IngressParserT<IH, IM> ingress_parser,
    IngressT<IH, IM> ingress,
    IngressDeparserT<IH, IM> ingress_deparser,
    EgressParserT<EH, EM> egress_parser,
    EgressT<EH, EM> egress,
    EgressDeparserT<EH, EM> egress_deparser);

package Switch<IH0, IM0, EH0, EM0, IH1, IM1, EH1, EM1,
               IH2, IM2, EH2, EM2, IH3, IM3, EH3, EM3>(
    Pipeline<IH0, IM0, EH0, EM0> pipe0,
    @optional Pipeline<IH1, IM1, EH1, EM1> pipe1,
    @optional Pipeline<IH2, IM2, EH2, EM2> pipe2,
    @optional Pipeline<IH3, IM3, EH3, EM3> pipe3);

#endif
