//! The loader refuses corrupted JSON with an error, never a panic; programs
//! it accepts after mutation still process frames without panicking.

mod common;
use common::*;
use p4core::*;
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::{json, Value};
use std::sync::Arc;

/// Every node of a JSON tree, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| pointers(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| pointers(x, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn random_value(rng: &mut Pcg64Mcg) -> Value {
    match rng.next_u32() % 9 {
        0 => Value::Null,
        1 => json!(rng.next_u32() % 4),
        2 => json!(-1),
        3 => json!(u64::MAX),
        4 => json!("0x1ff"),
        5 => json!("ingress.acl"),
        6 => json!([]),
        7 => json!({}),
        _ => json!(true),
    }
}

#[test]
fn mutated_l3_stack_is_refused_or_runs() {
    mutate("l3_stack.json", udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80));
}

#[test]
fn mutated_pre_is_refused_or_runs() {
    mutate("pre.json", eth([2, 0, 0, 0, 0, 1], MAC_A, 0x8100, &[0, 7, 0x88, 0xb6, 1, 2, 3, 4]));
}

fn mutate(name: &str, frame: Vec<u8>) {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    let base: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut ptrs = Vec::new();
    pointers(&base, String::new(), &mut ptrs);
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut v = base.clone();
        for _ in 0..1 + rng.next_u32() % 3 {
            let p = &ptrs[rng.next_u32() as usize % ptrs.len()];
            if let Some(node) = v.pointer_mut(p) {
                *node = random_value(&mut rng);
            }
        }
        match Program::from_json(&v.to_string()) {
            Err(e) => {
                assert!(e.to_string().contains(':'), "error names a part: {e}");
                refused += 1;
            }
            Ok(prog) => {
                accepted += 1;
                let prog = Arc::new(prog);
                let st = State::new(&prog);
                let mut ex = Executor::new(prog.clone(), 1);
                let _ = st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], vec![0; 6]], 0);
                let _ = st.table_add("ingress.fwd", &[MatchKey::Exact(vec![2, 0, 0, 0, 0, 1])], "ingress.dyn_vid", &[vec![1], vec![1]], 0);
                for q in ex.ingress(&st, 0, &frame, 0).queued {
                    ex.egress(&st, q, QueueMeta::default(), 0);
                }
            }
        }
    }
    assert!(refused > 1000 && accepted > 100, "{name}: refused {refused}, accepted {accepted}");
}
