//! Engine speed: ingress + egress per packet for BMv2 JSON programs, single
//! thread, no I/O, on the compiled pipeline and on the interpreter. For p4src's
//! RED program it installs a route, a sampling period and RED parameters first
//! so the full RED path runs; for a program with `MyIngress.ipv4_lpm` (the
//! bench's minimal router) or `FxIngress.route` (p4c_reference's f01_l3) the route.
//!   cargo run --release -p p4core --example p4bench -- build/red_ecn.json [MORE.json...]
//! P4BENCH_PACKETS=N sets the packets per frame size (default 500000); a small
//! N suits `valgrind --tool=callgrind`, which counts instructions exactly.
//! P4CORE_ENGINE=interpreter|compiled measures one engine (default: both).
use p4core::*;
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_PACKETS: u64 = 500_000;

fn packets() -> u64 {
    std::env::var("P4BENCH_PACKETS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_PACKETS)
}

fn udp_frame(len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(42)];
    f[0..6].copy_from_slice(&[0, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (f.len() - 14) as u16;
    f[14..34].copy_from_slice(&[0x45, 0x02, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[34..42].copy_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    f
}

/// Installs the route, and for the RED program the sampling and RED entries.
fn configure(st: &State) {
    let b = |v: u64, n: usize| v.to_be_bytes()[8 - n..].to_vec();
    if st.program().table_index("FxIngress.route").is_some() {
        // p4c_reference/f01_l3 (p4c's JSON or softswitch-p4c's): the same route
        st.table_add("FxIngress.route", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "FxIngress.forward", &[b(2, 6), b(1, 2)], 0)
            .unwrap();
        return;
    }
    if st.program().table_index("MyIngress.ipv4_lpm").is_none() {
        return;
    }
    st.table_add("MyIngress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "MyIngress.ipv4_forward", &[b(2, 6), b(1, 6), b(1, 2)], 0)
        .unwrap();
    if st.program().table_index("MyEgress.red_config").is_none() {
        return;
    }
    st.table_add("MyIngress.telemetry_sampling", &[MatchKey::Exact(b(1, 2))], "MyIngress.set_sampling", &[b(100, 4)], 0).unwrap();
    let (minth, maxth, maxp) = (5u64 << 16, 15u64 << 16, (0.1 * 4294967296.0) as u64);
    let slope = (maxp << 16) / (maxth - minth);
    let args = [b(1, 1), b(1, 1), b(1, 1), b(9, 1), b(minth, 4), b(maxth, 4), b(maxp, 4), b(slope, 6), b(slope, 6), b(10, 1)];
    st.table_add("MyEgress.red_config", &[MatchKey::Exact(b(1, 2))], "MyEgress.set_red", &args, 0).unwrap();
}

/// CPU time of this thread: the machine is shared, so wall time overstates the cost.
fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// Returns (wall ns/packet, CPU ns/packet, frames sent).
fn measure(prog: &Arc<Program>, engine: Engine, frame: &[u8]) -> (f64, f64, u64) {
    let packets = packets();
    let st = State::new(prog);
    configure(&st);
    let st = &st;
    let mut ex = Executor::with_engine(prog.clone(), 1, engine);
    let mut sent = 0;
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    for i in 0..packets {
        let now = i * 10;
        for q in ex.ingress(st, 0, frame, now).queued {
            let meta = QueueMeta { enq_timestamp: now, enq_qdepth: i % 40, deq_timedelta: 5, deq_qdepth: 0 };
            if let Some((_, frame)) = ex.egress(st, q, meta, now + 5).out {
                sent += 1;
                ex.recycle_frame(frame); // as the switch does once the frame is sent
            }
        }
    }
    let n = packets as f64;
    (start.elapsed().as_nanos() as f64 / n, (thread_cpu_ns() - cpu_start) as f64 / n, sent)
}

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    assert!(!paths.is_empty(), "usage: p4bench PROGRAM.json...");
    let engines = match std::env::var(ENGINE_ENV).as_deref() {
        Ok(_) => vec![Engine::from_env()],
        Err(_) => vec![Engine::Compiled, Engine::Interpreter],
    };
    println!("| program | engine | frame bytes | wall ns/packet | CPU ns/packet | kpps per core (CPU) | forwarded |\n|---|---|---|---|---|---|---|");
    for path in &paths {
        let prog = Arc::new(Program::from_json(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{path}: {e}")));
        let name = path.rsplit('/').next().unwrap();
        for &engine in &engines {
            for len in [64, 1500] {
                let (wall, cpu, sent) = measure(&prog, engine, &udp_frame(len));
                println!("| {name} | {engine:?} | {len} | {wall:.0} | {cpu:.0} | {:.0} | {sent}/{} |", 1e6 / cpu, packets());
            }
        }
    }
}
