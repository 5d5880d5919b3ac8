//! Robustness: at least one million random, truncated, mutated and oversized
//! frames (release build; 100k in debug) go through both test programs with
//! every extern and replication path configured. Nothing may panic, and
//! resident memory must stay flat (no per-packet leak).

mod common;
use common::*;
use p4core::*;
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::time::Instant;

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

/// Builds a fuzz frame from a seed frame: random, truncated, mutated or oversized.
fn fuzz_frame(rng: &mut Pcg64Mcg, seeds: &[Vec<u8>], buf: &mut Vec<u8>) {
    buf.clear();
    let seed = &seeds[rng.next_u32() as usize % seeds.len()];
    match rng.next_u32() % 64 {
        0..=15 => {
            let len = rng.next_u32() as usize % 1600;
            buf.extend((0..len).map(|_| rng.next_u32() as u8));
        }
        16..=31 => buf.extend_from_slice(&seed[..rng.next_u32() as usize % (seed.len() + 1)]),
        32..=62 => {
            buf.extend_from_slice(seed);
            for _ in 0..1 + rng.next_u32() % 8 {
                let i = rng.next_u32() as usize % buf.len();
                buf[i] = rng.next_u32() as u8;
            }
        }
        _ => {
            buf.extend_from_slice(seed);
            let extra = 9000 + rng.next_u32() as usize % 8000;
            buf.extend((0..extra).map(|_| rng.next_u32() as u8));
        }
    }
}

fn run(st: &State, ex: &mut Executor, rng: &mut Pcg64Mcg, seeds: &[Vec<u8>], n: usize) -> (usize, usize) {
    let mut buf = Vec::new();
    let (mut out_frames, mut parse_errors) = (0, 0);
    for i in 0..n {
        fuzz_frame(rng, seeds, &mut buf);
        let now = i as u64 * 7;
        let mut io = ex.ingress(st, rng.next_u32() % 8, &buf, now);
        parse_errors += (io.parser_error != 0) as usize;
        let mut queue = std::mem::take(&mut io.queued);
        let mut budget = 16;
        while let Some(q) = queue.pop() {
            let meta = QueueMeta { enq_timestamp: now, enq_qdepth: rng.next_u32() as u64 % 80, deq_timedelta: 3, deq_qdepth: 1 };
            let eo = ex.egress(st, q, meta, now + 3);
            out_frames += eo.out.is_some() as usize;
            if budget > 0 {
                budget -= 1;
                queue.extend(eo.clones);
                if let Some(r) = eo.recirculate {
                    queue.extend(ex.ingress_recirculated(st, r, now).queued);
                }
            }
        }
    }
    (out_frames, parse_errors)
}

fn l3_setup() -> (State, Executor, Vec<Vec<u8>>) {
    let (_, st, ex) = load("l3_stack.json");
    st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], MAC_A.to_vec()], 0).unwrap();
    st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![0; 4], 0)], "ingress.set_nhop", &[vec![2], MAC_B.to_vec()], 0).unwrap();
    let any = [MatchKey::Ternary(vec![0; 4], vec![0; 4]), MatchKey::Range(vec![0, 0], vec![0x7f, 0xff])];
    st.table_add("ingress.acl", &any, "ingress.meter_acl", &[vec![1]], 2).unwrap();
    let hi = [MatchKey::Ternary(vec![0; 4], vec![0; 4]), MatchKey::Range(vec![0x80, 0], vec![0xff, 0xff])];
    st.table_add("ingress.acl", &hi, "ingress.count_acl", &[vec![7]], 1).unwrap();
    st.meter_set("acl_meter", 1, Some(MeterConfig { cir: 1000, cburst: 10, pir: 2000, pburst: 20 })).unwrap();
    st.table_add("ingress.l2", &[MatchKey::Exact(MAC_B.to_vec())], "ingress.l2_forward", &[vec![3]], 0).unwrap();
    let mut mpls_frame = Vec::new();
    for l in 0..3 {
        mpls_frame.extend_from_slice(&mpls(l, l == 2, 5));
    }
    mpls_frame.extend_from_slice(&ipv4([1, 2, 3, 4], [10, 0, 0, 1], 17, &[1; 8], &udp(1, 2, &[0; 30])));
    let seeds = vec![
        udp_frame([192, 168, 1, 1], [10, 1, 2, 3], 53),
        udp_frame([192, 168, 1, 1], [172, 16, 0, 1], 40000),
        eth(MAC_B, MAC_A, 0x8847, &mpls_frame),
        eth(MAC_B, MAC_A, 0x0800, &ipv4([1, 1, 1, 1], [10, 0, 0, 1], 6, &[0; 40], &[0; 100])),
        eth(MAC_B, MAC_A, 0x09ff, &[1, 2, 3]),
    ];
    (st, ex, seeds)
}

fn pre_setup() -> (State, Executor, Vec<Vec<u8>>) {
    let (_, st, ex) = load("pre.json");
    let actions: [(&str, Vec<Vec<u8>>); 9] = [
        ("ingress.mcast", vec![vec![0, 1]]),
        ("ingress.clone_i2e", vec![vec![2], vec![0, 0, 0, 5]]),
        ("ingress.resubmit_once", vec![vec![3]]),
        ("ingress.recirc_to", vec![vec![4]]),
        ("ingress.push_vlan", vec![vec![1], vec![0, 7]]),
        ("ingress.pop_vlan", vec![vec![1]]),
        ("ingress.e2e_fwd", vec![vec![2], vec![0, 0, 0, 9]]),
        ("ingress.trunc_fwd", vec![vec![1], vec![0, 0]]),
        ("ingress.copy_vlan", vec![vec![5]]),
    ];
    let mut seeds = Vec::new();
    for (i, (a, args)) in actions.iter().enumerate() {
        let mac = [0x02, 0, 0, 0, 0, i as u8];
        st.table_add("ingress.fwd", &[MatchKey::Exact(mac.to_vec())], a, args, 0).unwrap();
        seeds.push(eth(mac, MAC_A, 0x8100, &[0, 7, 0x81, 0, 0, 8, 0x08, 0, 1, 2, 3, 4]));
        seeds.push(eth(mac, MAC_A, 0x88b5, &[9; 40]));
    }
    st.mc_group_set(1, &[(1, 1), (2, 2), (3, 3)]).unwrap();
    st.clone_session_set(5, &[(6, 0), (7, 1)], 64).unwrap();
    st.clone_session_set(9, &[(8, 0)], 0).unwrap();
    st.value_set_add("pvs", &[0x88, 0xb5]).unwrap();
    (st, ex, seeds)
}

#[test]
fn a_million_hostile_frames_do_not_panic_or_leak() {
    let total = if cfg!(debug_assertions) { 100_000 } else { 1_000_000 };
    let mut rng = Pcg64Mcg::seed_from_u64(0x5eed_f00d);
    let start = Instant::now();
    let (l3, mut l3_ex, l3_seeds) = l3_setup();
    let (pre, mut pre_ex, pre_seeds) = pre_setup();
    // Warm up (allocator pools, table state) before taking the memory baseline.
    run(&l3, &mut l3_ex, &mut rng, &l3_seeds, total / 20);
    run(&pre, &mut pre_ex, &mut rng, &pre_seeds, total / 20);
    let rss_before = rss_kib();
    let (out_a, err_a) = run(&l3, &mut l3_ex, &mut rng, &l3_seeds, total / 2);
    let (out_b, err_b) = run(&pre, &mut pre_ex, &mut rng, &pre_seeds, total * 4 / 10);
    let grown = rss_kib().saturating_sub(rss_before);
    println!("{total} frames in {:?}; out {out_a}+{out_b}, parser errors {err_a}+{err_b}, rss +{grown} KiB", start.elapsed());
    assert!(out_a > total / 20 && out_b > total / 20, "the programs still forward traffic");
    assert!(err_a > total / 20, "hostile frames exercise parser errors");
    assert!(grown < 16 * 1024, "resident memory grew by {grown} KiB");
}
