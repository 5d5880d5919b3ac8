//! Behaviour fingerprint: runs seeded random and mutated IPv4/UDP frames
//! through a program (RED configured as in p4bench, queue depth sweeping) and
//! prints one hash over every output frame, port, drop, parser error and
//! digest. Two builds of p4core that print the same hash behave the same on
//! these frames, which is how interpreter optimisations are checked.
//!   cargo run --release -p p4core --example p4trace -- build/red_ecn.json [FRAMES]
//! P4CORE_ENGINE=interpreter|compiled picks the engine (default compiled): the
//! two must print the same fingerprint.
use p4core::*;
use std::hash::Hasher;
use std::sync::Arc;

/// xorshift64: a fixed, dependency-free frame generator.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// An Ethernet/IPv4/UDP frame with random addresses, TTL, ECN and length,
/// sometimes mutated or truncated so parser and checksum errors occur too.
fn frame(g: &mut Gen) -> Vec<u8> {
    let len = 42 + (g.next() % 1500) as usize;
    let mut f: Vec<u8> = (0..len).map(|_| g.next() as u8).collect();
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[22] = (g.next() % 4) as u8; // TTL 0..3 exercises the ttl > 1 condition
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[26..30].copy_from_slice(&[10, 0, (g.next() % 3) as u8, 1]);
    f[30..34].copy_from_slice(&[if g.next() % 4 == 0 { 11 } else { 10 }, 0, 0, 2]);
    match g.next() % 8 {
        0 => {
            let i = (g.next() as usize) % len;
            f[i] = g.next() as u8;
        }
        1 => f.truncate((g.next() as usize) % len),
        _ => {}
    }
    f
}

fn configure(st: &State) {
    if st.program().table_index("MyIngress.ipv4_lpm").is_none() {
        return;
    }
    let b = |v: u64, n: usize| v.to_be_bytes()[8 - n..].to_vec();
    st.table_add("MyIngress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "MyIngress.ipv4_forward", &[b(2, 6), b(1, 6), b(1, 2)], 0)
        .unwrap();
    st.table_add("MyIngress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 1, 0], 24)], "MyIngress.ipv4_forward", &[b(3, 6), b(1, 6), b(2, 2)], 0)
        .unwrap();
    if st.program().table_index("MyEgress.red_config").is_none() {
        return; // the bench's minimal router: the routes only
    }
    st.table_add("MyIngress.telemetry_sampling", &[MatchKey::Exact(b(1, 2))], "MyIngress.set_sampling", &[b(7, 4)], 0).unwrap();
    let (minth, maxth, maxp) = (5u64 << 16, 15u64 << 16, (0.1 * 4294967296.0) as u64);
    let slope = (maxp << 16) / (maxth - minth);
    let args = [b(1, 1), b(1, 1), b(1, 1), b(2, 1), b(minth, 4), b(maxth, 4), b(maxp, 4), b(slope, 6), b(slope, 6), b(10, 1)];
    st.table_add("MyEgress.red_config", &[MatchKey::Exact(b(1, 2))], "MyEgress.set_red", &args, 0).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("usage: p4trace PROGRAM.json [FRAMES]");
    let frames: u64 = args.get(1).map_or(200_000, |n| n.parse().expect("FRAMES is a number"));
    let prog = Arc::new(Program::from_json(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{path}: {e}")));
    let st = State::new(&prog);
    configure(&st);
    let mut ex = Executor::new(prog.clone(), 3);
    let mut g = Gen(0x2545_f491_4f6c_dd1d);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut forwarded = 0u64;
    for i in 0..frames {
        let now = i * 7;
        let out = ex.ingress(&st, (g.next() % 4) as u32, &frame(&mut g), now);
        h.write_u8(out.dropped as u8);
        h.write_i128(out.parser_error);
        for d in &out.digests {
            h.write(d.name.as_bytes());
            d.fields.iter().for_each(|f| h.write(f));
        }
        for q in out.queued {
            h.write_u32(q.egress_port);
            h.write_usize(q.wire_len);
            let meta = QueueMeta { enq_timestamp: now, enq_qdepth: g.next() % 64, deq_timedelta: g.next() % 50, deq_qdepth: 0 };
            if let Some((port, bytes)) = ex.egress(&st, q, meta, now + g.next() % 3000).out {
                forwarded += 1;
                h.write_u32(port);
                h.write(&bytes);
            }
        }
    }
    println!("{path}: {frames} frames, {forwarded} forwarded, fingerprint {:016x} ({:?})", h.finish(), ex.engine());
}
