//! Behaviour of tests/programs/l3_stack.json (parser with masks, stacks,
//! varbit and verify; checksums; lpm/ternary/range tables; counters,
//! meters, registers, hash, random; egress queue metadata).

mod common;
use common::*;
use p4core::*;

fn lpm_routes(st: &State) -> (u64, u64) {
    let a = st
        .table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], MAC_A.to_vec()], 0)
        .unwrap();
    let b = st
        .table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 1, 0, 0], 16)], "ingress.set_nhop", &[vec![2], vec![0xee; 6]], 0)
        .unwrap();
    (a, b)
}

#[test]
fn longest_prefix_wins_and_rewrites_are_checksummed() {
    let (_, st, mut ex) = load("l3_stack.json");
    let (a, b) = lpm_routes(&st);
    let frame = udp_frame([192, 168, 0, 1], [10, 1, 2, 3], 53);
    let out = forward(&st, &mut ex, 0, &frame);
    assert_eq!(out.len(), 1);
    let (port, f) = &out[0];
    assert_eq!(*port, 2);
    assert_eq!(&f[0..6], &[0xee; 6]);
    assert_eq!(f.len(), frame.len());
    let ip = &f[14..];
    assert_eq!(ip[8], 63, "ttl decremented");
    assert_eq!(csum(&ip[..20]), 0, "IPv4 checksum recomputed");
    assert_eq!(u16::from_be_bytes([ip[26], ip[27]]), udp_checksum(ip), "UDP checksum over pseudo-header and payload");
    assert_eq!(st.direct_counter_read("ingress.ipv4_lpm", b).unwrap(), (1, frame.len() as u64));
    assert_eq!(st.direct_counter_read("ingress.ipv4_lpm", a).unwrap(), (0, 0));

    let out = forward(&st, &mut ex, 0, &udp_frame([192, 168, 0, 1], [10, 9, 9, 9], 53));
    assert_eq!(out[0].0, 1, "shorter prefix for other 10/8 addresses");
    let miss = ex.ingress(&st, 0, &udp_frame([192, 168, 0, 1], [11, 0, 0, 1], 53), 0);
    assert!(miss.dropped && miss.queued.is_empty(), "default action drop on miss");
}

#[test]
fn bad_ipv4_checksum_sets_checksum_error() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let ce = field(&prog, "standard_metadata", "checksum_error");
    let good = udp_frame([1, 2, 3, 4], [10, 0, 0, 1], 9);
    assert_eq!(ex.ingress(&st, 0, &good, 0).queued[0].field(ce), 0);
    let mut bad = good.clone();
    bad[14 + 10] ^= 0xff;
    let out = ex.ingress(&st, 0, &bad, 0);
    assert_eq!(out.queued[0].field(ce), 1);
    assert_eq!(out.parser_error, 0);
}

#[test]
fn mpls_stack_is_parsed_and_deparsed_in_order() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let ip = ipv4([1, 1, 1, 1], [10, 1, 0, 9], 6, &[], &[0u8; 20]);
    let mut labels = Vec::new();
    labels.extend_from_slice(&mpls(100, false, 9));
    labels.extend_from_slice(&mpls(200, true, 8));
    labels.extend_from_slice(&ip);
    let frame = eth(MAC_B, MAC_A, 0x8847, &labels);
    let out = ex.ingress(&st, 3, &frame, 0);
    assert_eq!(out.parser_error, 0);
    let q = &out.queued[0];
    assert_eq!(q.field(field(&prog, "mpls[0]", "label")), 100);
    assert_eq!(q.field(field(&prog, "mpls[1]", "label")), 200);
    assert_eq!(q.field(field(&prog, "mpls[1]", "bos")), 1);
    let f = forward(&st, &mut ex, 3, &frame).pop().unwrap().1;
    assert_eq!(&f[14..22], &labels[..8], "both labels re-emitted in stack order");
    assert_eq!(f[22 + 8], 63, "inner IPv4 routed (ttl decremented)");
}

#[test]
fn too_many_labels_is_stack_out_of_bounds_and_continues_to_ingress() {
    let (prog, st, mut ex) = load("l3_stack.json");
    st.table_add("ingress.l2", &[MatchKey::Exact(MAC_B.to_vec())], "ingress.l2_forward", &[vec![4]], 0).unwrap();
    let mut labels = Vec::new();
    for i in 0..4 {
        labels.extend_from_slice(&mpls(i, false, 1));
    }
    let frame = eth(MAC_B, MAC_A, 0x8847, &labels);
    let out = ex.ingress(&st, 0, &frame, 0);
    assert_eq!(out.parser_error, 3, "StackOutOfBounds");
    let q = &out.queued[0];
    assert_eq!(q.egress_port, 4, "v1model: parser errors do not drop, ingress runs (l2 path)");
    assert_eq!(q.field(field(&prog, "standard_metadata", "parser_error")), 3);
    let f = ex.egress(&st, out.queued.into_iter().next().unwrap(), QueueMeta::default(), 0).out.unwrap().1;
    assert_eq!(f, frame, "unparsed bytes are carried as payload");
}

#[test]
fn verify_and_varbit_options() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    // IHL 4: verify(ihl >= 5, IPv4BadIHL = 7) fails.
    let mut bad = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 7);
    bad[14] = 0x44;
    assert_eq!(ex.ingress(&st, 0, &bad, 0).parser_error, 7);
    // IHL 7: 8 bytes of options extracted with extract_VL and covered by the checksum.
    let opts = [1, 1, 1, 1, 0x94, 0x04, 0, 0];
    let frame = eth(MAC_B, MAC_A, 0x0800, &ipv4([1, 1, 1, 1], [10, 0, 0, 1], 17, &opts, &udp(5, 6, b"x")));
    let out = ex.ingress(&st, 0, &frame, 0);
    assert_eq!(out.parser_error, 0);
    assert_eq!(out.queued[0].field(field(&prog, "standard_metadata", "checksum_error")), 0);
    let f = ex.egress(&st, out.queued.into_iter().next().unwrap(), QueueMeta::default(), 0).out.unwrap().1;
    assert_eq!(f.len(), frame.len());
    assert_eq!(&f[34..42], &opts);
    assert_eq!(csum(&f[14..42]), 0);
    // IHL 15 with a short frame: options cannot be extracted.
    let mut short = frame.clone();
    short[14] = 0x4f;
    assert_eq!(ex.ingress(&st, 0, &short, 0).parser_error, 1, "PacketTooShort");
}

#[test]
fn varbit_and_advance_errors_in_bmv2_order() {
    let opts = [1, 1, 1, 1, 0x94, 0x04, 0, 0];
    let frame = eth(MAC_B, MAC_A, 0x0800, &ipv4([1, 1, 1, 1], [10, 0, 0, 1], 17, &opts, &udp(5, 6, b"x")));
    let vl_len = "/parsers/0/parse_states/3/parser_ops/2/parameters/1/value";
    // A length that is not a whole number of bytes: ParserInvalidArgument (6), as BMv2's extract_VL.
    let (_, st, mut ex) = load_edited(|v| *v.pointer_mut(vl_len).unwrap() = serde_json::json!({"type": "hexstr", "value": "0x0c"}));
    assert_eq!(ex.ingress(&st, 0, &frame, 0).parser_error, 6, "ParserInvalidArgument");
    // Options longer than max_length: HeaderTooShort (4) ...
    let (_, st, mut ex) = load_edited(|v| v["header_types"][5]["max_length"] = serde_json::json!(4));
    assert_eq!(ex.ingress(&st, 0, &frame, 0).parser_error, 4, "HeaderTooShort");
    // ... but a frame too short for them is PacketTooShort (1) first.
    let mut short = frame.clone();
    short[14] = 0x4f;
    assert_eq!(ex.ingress(&st, 0, &short, 0).parser_error, 1, "PacketTooShort");
    // advance by a bit count that is not a whole number of bytes: ParserInvalidArgument.
    let advance = serde_json::json!({"op": "advance", "parameters": [{"type": "hexstr", "value": "0x0b"}]});
    let (_, st, mut ex) = load_edited(|v| v["parsers"][0]["parse_states"][4]["parser_ops"].as_array_mut().unwrap().insert(0, advance));
    assert_eq!(ex.ingress(&st, 0, &frame, 0).parser_error, 6, "ParserInvalidArgument");
}

#[test]
fn truncated_frames_report_packet_too_short() {
    let (_, st, mut ex) = load("l3_stack.json");
    let frame = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 7);
    for len in [0, 5, 13, 20, 33] {
        let out = ex.ingress(&st, 0, &frame[..len], 0);
        assert_eq!(out.parser_error, 1, "len {len}");
    }
}

#[test]
fn masked_transition_and_lookahead() {
    let (prog, st, mut ex) = load("l3_stack.json");
    let tag = field(&prog, "scalars", "meta.tag");
    st.table_add("ingress.l2", &[MatchKey::Exact(MAC_B.to_vec())], "ingress.l2_forward", &[vec![1]], 0).unwrap();
    for (ethertype, want) in [(0x09ab, 0x5a), (0x0900, 0x5a), (0x0a00, 0)] {
        let out = ex.ingress(&st, 0, &eth(MAC_B, MAC_A, ethertype, &[0x5a, 1, 2]), 0);
        assert_eq!(out.queued[0].field(tag), want, "ethertype {ethertype:#x}");
    }
}

#[test]
fn ternary_and_range_priority_larger_wins() {
    let (_, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let any_port = MatchKey::Range(vec![0, 0], vec![0xff, 0xff]);
    st.table_add("ingress.acl", &[MatchKey::Ternary(vec![10, 0, 0, 0], vec![255, 0, 0, 0]), any_port], "ingress.count_acl", &[vec![1]], 10)
        .unwrap();
    let narrow = [MatchKey::Ternary(vec![10, 0, 0, 5], vec![255; 4]), MatchKey::Range(1000u16.to_be_bytes().to_vec(), 2000u16.to_be_bytes().to_vec())];
    let h = st.table_add("ingress.acl", &narrow, "ingress.count_acl", &[vec![2]], 20).unwrap();
    forward(&st, &mut ex, 0, &udp_frame([10, 0, 0, 5], [10, 0, 0, 1], 1500));
    forward(&st, &mut ex, 0, &udp_frame([10, 0, 0, 5], [10, 0, 0, 1], 3000));
    assert_eq!(st.counter_read("acl_counter", 2).unwrap().0, 1);
    assert_eq!(st.counter_read("acl_counter", 1).unwrap().0, 1);
    st.table_delete("ingress.acl", h).unwrap();
    st.table_add("ingress.acl", &narrow, "ingress.count_acl", &[vec![2]], 5).unwrap();
    forward(&st, &mut ex, 0, &udp_frame([10, 0, 0, 5], [10, 0, 0, 1], 1500));
    assert_eq!(st.counter_read("acl_counter", 1).unwrap().0, 2, "priority 10 now beats 5");
    assert_eq!(st.counter_read("acl_counter", 2).unwrap().0, 1);
}

#[test]
fn trtcm_meter_colors_and_red_drops() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let color = field(&prog, "scalars", "meta.color");
    let any = [MatchKey::Ternary(vec![0; 4], vec![0; 4]), MatchKey::Range(vec![0, 0], vec![0xff, 0xff])];
    st.table_add("ingress.acl", &any, "ingress.meter_acl", &[vec![0]], 1).unwrap();
    st.meter_set("acl_meter", 0, Some(MeterConfig { cir: 1, cburst: 1, pir: 2, pburst: 2 })).unwrap();
    let frame = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80);
    let t0 = 5_000_000;
    let o1 = ex.ingress(&st, 0, &frame, t0);
    let o2 = ex.ingress(&st, 0, &frame, t0);
    let o3 = ex.ingress(&st, 0, &frame, t0);
    assert_eq!(o1.queued[0].field(color), COLOR_GREEN);
    assert_eq!(o2.queued[0].field(color), COLOR_YELLOW);
    assert!(o3.dropped, "red packets are dropped by the program");
    let later = ex.ingress(&st, 0, &frame, t0 + 1_000_000);
    assert_eq!(later.queued[0].field(color), COLOR_GREEN, "buckets refill at cir/pir");
    st.meter_set("acl_meter", 0, None).unwrap();
    for _ in 0..10 {
        assert_eq!(ex.ingress(&st, 0, &frame, t0).queued[0].field(color), COLOR_GREEN, "unconfigured meter is green");
    }
}

#[test]
fn stats_action_registers_hash_random_saturation_and_jumps() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let f = |n: &str| field(&prog, "scalars", n);
    let frame = udp_frame([192, 0, 2, 1], [10, 0, 0, 1], 80);
    for i in 1..=3u128 {
        let out = ex.ingress(&st, 0, &frame, 0);
        let q = &out.queued[0];
        assert_eq!(st.register_read("pkt_count", 0).unwrap(), i);
        assert_eq!(q.field(f("meta.count")), i as i128 - 1);
        let crc = crc::Crc::<u16>::new(&crc::CRC_16_ARC).checksum(&[192, 0, 2, 1, 10, 0, 0, 1]);
        assert_eq!(q.field(f("meta.hash")), crc as i128, "crc16 over src,dst");
        let r = q.field(f("meta.rand"));
        assert!((10..=20).contains(&r), "random({r}) within [10, 20]");
        assert_eq!(q.field(f("meta.sat")), 255, "usat_cast saturates at 2^8-1");
        assert_eq!(q.field(f("meta.sv")), -128, "sat_cast saturates a signed 8-bit field at -128");
        assert_eq!(q.field(f("meta.flag")), 0, "_jump_if_zero skipped the assignment");
    }
}

#[test]
fn random_is_uniform_and_reproducible_with_a_seed() {
    let (prog, st, _) = load("l3_stack.json");
    lpm_routes(&st);
    let rand = field(&prog, "scalars", "meta.rand");
    let frame = udp_frame([192, 0, 2, 1], [10, 0, 0, 1], 80);
    let draw = |seed: u64, n: usize| {
        let mut ex = Executor::new(prog.clone(), seed);
        (0..n).map(|_| ex.ingress(&st, 0, &frame, 0).queued[0].field(rand)).collect::<Vec<_>>()
    };
    assert_eq!(draw(42, 50), draw(42, 50), "same seed, same sequence");
    assert_ne!(draw(42, 50), draw(43, 50));
    let mut hist = [0usize; 11];
    for v in draw(1, 11_000) {
        hist[(v - 10) as usize] += 1;
    }
    // Each bucket ~ Binomial(11000, 1/11): mean 1000, sd ~30; 850..1150 is a 5-sigma band
    // (a false failure has probability < 1e-5).
    assert!(hist.iter().all(|c| (850..1150).contains(c)), "{hist:?}");
}

#[test]
fn egress_sees_queue_metadata() {
    let (prog, st, mut ex) = load("l3_stack.json");
    lpm_routes(&st);
    let frame = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80);
    for (depth, ecn) in [(4u64, 2u8), (5, 3), (100, 3)] {
        let q = ex.ingress(&st, 0, &frame, 0).queued.pop().unwrap();
        let meta = QueueMeta { enq_timestamp: 10, enq_qdepth: depth, deq_timedelta: 7, deq_qdepth: 1 };
        let out = ex.egress(&st, q, meta, 17).out.unwrap().1;
        assert_eq!(out[15] & 3, ecn, "enq_qdepth {depth}");
        assert_eq!(csum(&out[14..34]), 0);
    }
    let _ = prog;
}

#[test]
fn checksums_skip_invalid_target_headers() {
    let path = format!("{}/tests/programs/l3_stack.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["checksums"][0]["if_cond"] = serde_json::Value::Null;
    v["checksums"][1]["if_cond"] = serde_json::Value::Null;
    let prog = std::sync::Arc::new(Program::from_json(&v.to_string()).unwrap());
    let st = State::new(&prog);
    let mut ex = Executor::new(prog.clone(), 1);
    st.table_add("ingress.l2", &[MatchKey::Exact(MAC_B.to_vec())], "ingress.l2_forward", &[vec![1]], 0).unwrap();
    let arp = eth(MAC_B, MAC_A, 0x0806, &[7; 28]);
    let out = ex.ingress(&st, 0, &arp, 0);
    assert_eq!(out.queued[0].field(field(&prog, "standard_metadata", "checksum_error")), 0, "no IPv4 header: nothing to verify");
    assert_eq!(forward(&st, &mut ex, 0, &arp), vec![(1, arp.clone())]);
}

/// The per-prefix-length index picks the same route as a brute-force longest-prefix match.
#[test]
fn lpm_index_agrees_with_brute_force() {
    use rand_core::{RngCore, SeedableRng};
    let (prog, st, mut ex) = load("l3_stack.json");
    let dmac = field(&prog, "ethernet", "dstAddr");
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let mut routes: Vec<(u32, u32, u64)> = Vec::new(); // (prefix, plen, id)
    for id in 1..=300u64 {
        let plen = rng.next_u32() % 33;
        let mask = if plen == 0 { 0 } else { u32::MAX << (32 - plen) };
        let prefix = rng.next_u32() & mask & 0x0fff_ffff; // share high bits so prefixes nest
        if routes.iter().any(|(p, l, _)| *p == prefix && *l == plen) {
            continue;
        }
        let h = st
            .table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(prefix.to_be_bytes().to_vec(), plen)], "ingress.set_nhop", &[vec![1], id.to_be_bytes()[2..].to_vec()], 0)
            .unwrap();
        if id % 7 == 0 {
            st.table_delete("ingress.ipv4_lpm", h).unwrap(); // deletions keep the index consistent
        } else {
            routes.push((prefix, plen, id));
        }
    }
    for _ in 0..3000 {
        let addr = rng.next_u32() & 0x0fff_ffff;
        let want = routes
            .iter()
            .filter(|(p, l, _)| *l == 0 || addr >> (32 - l) == p >> (32 - l))
            .max_by_key(|(_, l, _)| *l)
            .map(|(_, _, id)| *id as i128);
        let out = ex.ingress(&st, 0, &udp_frame([1, 1, 1, 1], addr.to_be_bytes(), 9), 0);
        assert_eq!(out.queued.first().map(|q| q.field(dmac)), want, "address {addr:#010x}");
    }
}

/// Deleting any entry (not only the newest) leaves every other entry of an exact
/// or lpm table matching: the indexes follow the entry that fills the freed slot.
#[test]
fn deletions_anywhere_keep_exact_and_lpm_entries_matching() {
    let (_, st, mut ex) = load("l3_stack.json");
    let mac = |i: u8| [0, 0, 0, 0, 1, i];
    let port_of = |ex: &mut Executor, frame: &[u8]| ex.ingress(&st, 0, frame, 0).queued.first().map(|q| q.egress_port);
    let l2: Vec<u64> = (1..=6u8)
        .map(|i| st.table_add("ingress.l2", &[MatchKey::Exact(mac(i).to_vec())], "ingress.l2_forward", &[vec![0, i]], 0).unwrap())
        .collect();
    let lpm: Vec<u64> = (1..=6u8)
        .map(|i| st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, i, 0, 0], 16)], "ingress.set_nhop", &[vec![0, i], mac(i).to_vec()], 0).unwrap())
        .collect();
    for gone in [0, 3, 1] {
        st.table_delete("ingress.l2", l2[gone]).unwrap();
        st.table_delete("ingress.ipv4_lpm", lpm[gone]).unwrap();
    }
    for i in 1..=6u8 {
        let kept = ![1, 4, 2].contains(&i);
        let want = kept.then_some(i as u32);
        assert_eq!(port_of(&mut ex, &eth(mac(i), MAC_A, 0x9000, &[0; 46])), want, "l2 entry {i}");
        assert_eq!(port_of(&mut ex, &udp_frame([1, 1, 1, 1], [10, i, 0, 1], 80)), want, "route {i}");
    }
    assert_eq!(st.table_len("ingress.l2").unwrap(), 3);
}

/// l3_stack.json edited in place: returns the program, state and executor.
fn load_edited(edit: impl FnOnce(&mut serde_json::Value)) -> (std::sync::Arc<Program>, State, Executor) {
    let path = format!("{}/tests/programs/l3_stack.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut v);
    let prog = std::sync::Arc::new(Program::from_json(&v.to_string()).unwrap());
    let st = State::new(&prog);
    let ex = Executor::new(prog.clone(), 1);
    (prog, st, ex)
}

#[test]
fn hit_and_miss_next_tables() {
    let (_, st, mut ex) = load_edited(|v| {
        v["pipelines"][0]["tables"][0]["next_tables"] = serde_json::json!({"__HIT__": "ingress.acl", "__MISS__": "tbl_stats"});
    });
    let any = [MatchKey::Ternary(vec![0; 4], vec![0; 4]), MatchKey::Range(vec![0, 0], vec![0xff, 0xff])];
    st.table_add("ingress.acl", &any, "ingress.count_acl", &[vec![3]], 1).unwrap();
    st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], MAC_A.to_vec()], 0).unwrap();
    let miss = ex.ingress(&st, 0, &udp_frame([1, 1, 1, 1], [11, 0, 0, 1], 80), 0);
    assert!(miss.dropped);
    assert_eq!(st.counter_read("acl_counter", 3).unwrap().0, 0, "__MISS__ skips the acl");
    assert_eq!(st.register_read("pkt_count", 0).unwrap(), 1, "__MISS__ goes to tbl_stats");
    ex.ingress(&st, 0, &udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80), 0);
    assert_eq!(st.counter_read("acl_counter", 3).unwrap().0, 1, "__HIT__ goes to the acl");
    assert_eq!(st.register_read("pkt_count", 0).unwrap(), 2);
}

#[test]
fn direct_meter_colors_per_entry() {
    let (prog, st, mut ex) = load_edited(|v| {
        v["meter_arrays"].as_array_mut().unwrap().push(serde_json::json!({"name": "lpm_meter", "id": 1, "is_direct": true,
            "binding": "ingress.ipv4_lpm", "rate_count": 2, "type": "bytes", "result_target": ["scalars", "meta.color"]}));
        v["pipelines"][0]["tables"][0]["direct_meters"] = serde_json::json!("lpm_meter");
    });
    let color = field(&prog, "scalars", "meta.color");
    let h = st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], MAC_A.to_vec()], 0).unwrap();
    let frame = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80);
    let n = frame.len() as u64;
    // Bytes meter: committed bucket holds one frame, peak bucket two.
    st.direct_meter_set("ingress.ipv4_lpm", h, Some(MeterConfig { cir: n, cburst: n, pir: 2 * n, pburst: 2 * n })).unwrap();
    let t = 1_000_000;
    assert_eq!(ex.ingress(&st, 0, &frame, t).queued[0].field(color), COLOR_GREEN);
    assert_eq!(ex.ingress(&st, 0, &frame, t).queued[0].field(color), COLOR_YELLOW);
    assert!(ex.ingress(&st, 0, &frame, t).dropped, "red: dropped by the program");
    assert_eq!(st.direct_meter_get("ingress.ipv4_lpm", h).unwrap().unwrap().pir, 2 * n);
}

#[test]
fn const_entries_follow_bmv2_ordering() {
    let route = |prefix: &str, plen: u32, port: &str, prio: i64| {
        serde_json::json!({"match_key": [{"match_type": "lpm", "key": prefix, "prefix_length": plen}],
                           "action_entry": {"action_id": 1, "action_data": [port, "0x000000000001"]}, "priority": prio})
    };
    let acl = |src: &str, mask: &str, idx: &str, prio: i64| {
        serde_json::json!({"match_key": [{"match_type": "ternary", "key": src, "mask": mask}, {"match_type": "range", "start": "0x0000", "end": "0xffff"}],
                           "action_entry": {"action_id": 3, "action_data": [idx]}, "priority": prio})
    };
    let (_, st, mut ex) = load_edited(|v| {
        v["pipelines"][0]["tables"][0]["entries"] = serde_json::json!([route("0x0a000000", 8, "0x1", 1), route("0x0a010000", 16, "0x2", 2)]);
        v["pipelines"][0]["tables"][1]["entries"] = serde_json::json!([acl("0x0a000005", "0xffffffff", "0x4", 1), acl("0x0a000000", "0xff000000", "0x5", 2)]);
    });
    let out = ex.ingress(&st, 0, &udp_frame([10, 0, 0, 5], [10, 1, 2, 3], 80), 0);
    assert_eq!(out.queued[0].egress_port, 2, "lpm const entries: longest prefix wins regardless of priority");
    assert_eq!(st.counter_read("acl_counter", 4).unwrap().0, 1, "ternary const entries: BMv2 priority 1 beats 2");
    assert_eq!(st.counter_read("acl_counter", 5).unwrap().0, 0);
    let e = st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![11, 0, 0, 0], 8)], "ingress.drop", &[], 0);
    assert!(matches!(e, Err(RuntimeError::Immutable(_))), "tables with const entries are immutable");
}
