//! The compiled pipeline against the interpreter (the oracle): every program
//! of the repository's corpora, tables filled with the same seeded random
//! entries, the same random and mutated frames; every output (frames, ports,
//! drops, parser errors, digests, clones, recirculations) and the final
//! registers and counters must be identical.

use p4core::*;
use std::sync::Arc;

/// xorshift64: a fixed, dependency-free generator.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// `width` bits as big-endian bytes, mostly small values so that entries match frames.
    fn value(&mut self, width: u32) -> Vec<u8> {
        let n = width.div_ceil(8) as usize;
        let v: u128 = match self.below(4) {
            0 => self.below(4) as u128,
            1 => (0x0a00_0000 | self.below(3) << 8 | 1) as u128,
            _ => (self.next() as u128) << 64 | self.next() as u128,
        };
        let v = if width >= 128 { v } else { v & ((1u128 << width) - 1) };
        v.to_be_bytes()[16 - n..].to_vec()
    }
}

const CORPORA: [&str; 4] = ["tests/programs", "../../tests/corpus/golden", "../../tests/p4c_reference", "../../bench/programs"];

fn programs() -> Vec<String> {
    let mut out = Vec::new();
    for dir in CORPORA {
        let dir = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let p = e.unwrap().path();
            let name = p.to_string_lossy().to_string();
            if name.ends_with(".json") && !name.ends_with("strict_corpus.json") {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

fn match_key(g: &mut Gen, kind: MatchKind, width: u32) -> MatchKey {
    let v = g.value(width);
    match kind {
        MatchKind::Exact | MatchKind::Valid => MatchKey::Exact(v),
        MatchKind::Lpm => {
            let plen = g.below(width as u64 + 1) as u32;
            // Bits past the prefix must be zero (counted from the first of the value's bits).
            let pad = width.div_ceil(8) as i64 * 8 - width as i64;
            let mut v = v;
            for (i, b) in v.iter_mut().enumerate() {
                let keep = (pad + plen as i64 - 8 * i as i64).clamp(0, 8);
                *b &= !(0xffu16 >> keep) as u8;
            }
            MatchKey::Lpm(v, plen)
        }
        MatchKind::Ternary => {
            let mask = g.value(width);
            MatchKey::Ternary(v.iter().zip(&mask).map(|(a, m)| a & m).collect(), mask)
        }
        MatchKind::Range => {
            let hi = g.value(width);
            if v <= hi {
                MatchKey::Range(v, hi)
            } else {
                MatchKey::Range(hi, v)
            }
        }
        MatchKind::Optional => MatchKey::Optional(if g.below(2) == 0 { None } else { Some(v) }),
    }
}

/// The same entries, groups and sessions for a given seed (errors are skipped: they change nothing).
fn configure(st: &State, seed: u64) {
    let prog = st.program().clone();
    let mut g = Gen(seed);
    for t in &prog.tables {
        if t.keys.is_empty() {
            continue;
        }
        for _ in 0..6 {
            let keys: Vec<MatchKey> = t.keys.iter().map(|k| match_key(&mut g, k.kind, k.width)).collect();
            let a = &prog.actions[t.actions[g.below(t.actions.len() as u64) as usize]];
            let args: Vec<Vec<u8>> = a.params.iter().map(|(_, w)| g.value(*w)).collect();
            let _ = st.table_add(&t.name, &keys, &a.name, &args, 1 + g.below(50) as i32);
        }
    }
    st.mc_group_set(1, &[(1, 0), (2, 1)]).unwrap();
    st.clone_session_set(1, &[(3, 0)], 0).unwrap();
    st.clone_session_set(2, &[(2, 0)], 60).unwrap();
}

/// A random frame: Ethernet with a common EtherType, an IPv4 header often well formed, random rest.
fn frame(g: &mut Gen) -> Vec<u8> {
    let len = 14 + g.below(200) as usize;
    let mut f: Vec<u8> = (0..len).map(|_| g.next() as u8).collect();
    let ethertype: [u16; 5] = [0x0800, 0x0800, 0x86dd, 0x0806, 0x8100];
    f[12..14].copy_from_slice(&ethertype[g.below(5) as usize].to_be_bytes());
    if len >= 34 && f[12..14] == [8, 0] {
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[22] = g.below(4) as u8;
        f[30..34].copy_from_slice(&[10, 0, g.below(3) as u8, 1]);
    }
    if g.below(8) == 0 {
        f.truncate(g.below(len as u64) as usize);
    }
    f
}

/// Runs `frames` frames through one engine; returns one line per observable event.
fn run(path: &str, prog: &Arc<Program>, engine: Engine, frames: u64) -> Vec<String> {
    let st = State::new(prog);
    configure(&st, 0x9e37_79b9_7f4a_7c15);
    let mut ex = Executor::with_engine(prog.clone(), 5, engine);
    assert_eq!(ex.engine(), engine, "{path}: engine");
    let mut g = Gen(0x2545_f491_4f6c_dd1d);
    let mut log = Vec::new();
    for i in 0..frames {
        let now = i * 13;
        let mut pending = vec![ex.ingress(&st, g.below(4) as u32, &frame(&mut g), now)];
        let mut rounds = 0;
        while let Some(out) = pending.pop() {
            rounds += 1;
            log.push(format!("{i} in: dropped={} err={} assert={} digests={:?}", out.dropped, out.parser_error, out.assert_failed, out.digests));
            let mut queue = out.queued;
            while let Some(q) = queue.pop() {
                log.push(format!("{i} queued: port={} prio={} type={} len={}", q.egress_port, q.priority, q.instance_type, q.wire_len));
                let meta = QueueMeta { enq_timestamp: now, enq_qdepth: g.below(64), deq_timedelta: g.below(50), deq_qdepth: g.below(8) };
                let eo = ex.egress(&st, q, meta, now + 5);
                log.push(format!("{i} out: {:?} assert={}", eo.out, eo.assert_failed));
                queue.extend(eo.clones);
                if let (Some(r), true) = (eo.recirculate, rounds < 4) {
                    pending.push(ex.ingress_recirculated(&st, r, now + 6));
                }
            }
        }
    }
    for r in &prog.registers {
        for i in 0..r.size.min(16) {
            log.push(format!("register {}[{i}] = {}", r.name, st.register_read(&r.name, i).unwrap()));
        }
    }
    for c in prog.counters.iter().filter(|c| c.direct_table.is_none()) {
        for i in 0..c.size.min(16) {
            log.push(format!("counter {}[{i}] = {:?}", c.name, st.counter_read(&c.name, i).unwrap()));
        }
    }
    log
}

#[test]
fn compiled_pipeline_behaves_as_the_interpreter_on_every_corpus_program() {
    let all = programs();
    let (mut compared, mut forwarded) = (0, 0);
    for path in all {
        let text = std::fs::read_to_string(&path).unwrap();
        let prog = match Program::from_json(&text).or_else(|_| Program::from_json_lenient(&text)) {
            Ok(p) => Arc::new(p),
            Err(_) => continue, // documents p4core refuses (e.g. extern instances) run nowhere
        };
        let want = run(&path, &prog, Engine::Interpreter, 3000);
        let got = run(&path, &prog, Engine::Compiled, 3000);
        if let Some(i) = (0..want.len().max(got.len())).find(|i| want.get(*i) != got.get(*i)) {
            panic!("{path}: first difference at event {i}:\n interpreter: {:?}\n compiled:    {:?}", want.get(i), got.get(i));
        }
        compared += 1;
        forwarded += want.iter().filter(|e| e.contains("out: Some")).count();
    }
    // The corpora are there and the frames exercise them (not all dropped by the parsers).
    assert!(compared >= 20 && forwarded >= 10_000, "{compared} programs, {forwarded} frames out");
}
