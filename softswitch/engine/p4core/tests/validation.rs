//! Corrupted or mismatched JSON is refused with an error naming the part;
//! invalid control-plane requests are refused and change nothing.

mod common;
use common::*;
use p4core::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn base() -> Value {
    let path = format!("{}/tests/programs/l3_stack.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Applies `edit` to l3_stack.json and returns the load error text.
fn load_err(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = base();
    edit(&mut v);
    match Program::from_json(&v.to_string()) {
        Ok(_) => panic!("corrupted program was accepted"),
        Err(e) => e.to_string(),
    }
}

fn assert_err(edit: impl FnOnce(&mut Value), want: &[&str]) {
    let e = load_err(edit);
    for w in want {
        assert!(e.contains(w), "error {e:?} should contain {w:?}");
    }
}

#[test]
fn base_program_loads() {
    assert!(Program::from_json(&base().to_string()).is_ok());
}

#[test]
fn syntax_and_version() {
    assert!(Program::from_json("{\"headers\": [").unwrap_err().to_string().starts_with("JSON syntax error"));
    assert_err(|v| v["__meta__"]["version"] = json!([3, 0]), &["__meta__.version", "major version number of 2"]);
    assert_err(|v| { v.as_object_mut().unwrap().remove("actions"); }, &["(root)", "missing attribute 'actions'"]);
}

#[test]
fn header_errors() {
    assert_err(|v| v["headers"][2]["header_type"] = json!("nope_t"), &["headers[2]", "unknown header_type 'nope_t'"]);
    assert_err(|v| v["header_types"][2]["fields"][0][1] = json!(200), &["header_types[2].fields[0]", "wider than 128 bits"]);
    assert_err(|v| v["header_types"][2]["fields"][0][1] = json!(47), &["headers[2]", "not a whole number of bytes"]);
    assert_err(|v| v["header_types"][1]["fields"][1][0] = json!("egress_specx"), &["standard_metadata.egress_spec", "missing"]);
    assert_err(|v| v["header_stacks"][0]["header_ids"][1] = json!(99), &["header_stacks[0].header_ids[1]", "unknown header id 99"]);
}

#[test]
fn parser_errors() {
    assert_err(|v| v["parsers"][0]["parse_states"][0]["transitions"][0]["next_state"] = json!("nowhere"),
        &["parsers[0].parse_states[0].transitions[0]", "unknown parse state 'nowhere'"]);
    assert_err(|v| v["parsers"][0]["parse_states"][0]["transitions"][0]["value"] = json!("0x123456"),
        &["parsers[0].parse_states[0].transitions[0]", "expected width is 2 bytes but actual width is 3 bytes"]);
    assert_err(|v| v["parsers"][0]["parse_states"][0]["parser_ops"][0]["op"] = json!("teleport"), &["parser_ops[0]", "Parser op 'teleport' not supported"]);
    assert_err(|v| v["parsers"][0]["parse_states"][0]["parser_ops"][0]["parameters"][0]["value"] = json!("scalars"), &["cannot extract metadata"]);
    assert_err(|v| v["parsers"][0]["parse_states"][0]["transitions"][1]["value"] = json!("0xZZ"), &["invalid hexstr '0xZZ'"]);
}

#[test]
fn action_errors() {
    assert_err(|v| v["actions"][1]["primitives"][1]["parameters"][0]["value"] = json!(["ethernet", "nope"]),
        &["actions[1].primitives[1].parameters[0]", "unknown field 'ethernet.nope'"]);
    assert_err(|v| v["actions"][1]["primitives"][0]["op"] = json!("frobnicate"), &["actions[1].primitives[0]", "Unknown primitive action: frobnicate"]);
    assert_err(|v| v["actions"][1]["primitives"][0]["parameters"][1]["value"] = json!(5), &["actions[1].primitives[0]", "offset 5 but the action has 2 parameter(s)"]);
    assert_err(|v| v["actions"][5]["primitives"][6]["parameters"][1]["value"] = json!("0x20"), &["actions[5].primitives[6]", "jump target 32"]);
    assert_err(|v| v["actions"][4]["primitives"][0]["parameters"][0]["value"] = json!("no_meter"), &["unknown meter array 'no_meter'"]);
    assert_err(|v| v["actions"][5]["primitives"][2]["parameters"][2]["value"] = json!("no_calc"), &["unknown calculation 'no_calc'"]);
    assert_err(|v| v["actions"][1]["id"] = json!(0), &["actions[1]", "Several objects of type 'action' have the same id 0"]);
}

#[test]
fn table_errors() {
    assert_err(|v| v["pipelines"][0]["tables"][1]["key"][1]["match_type"] = json!("foo"), &["pipelines[0].tables[1].key[1]: Invalid match type: 'foo'"]);
    assert_err(|v| v["pipelines"][0]["tables"][0]["next_tables"]["ingress.drop"] = json!("ghost"), &["pipelines[0].tables[0].next_tables", "unknown control node 'ghost'"]);
    assert_err(|v| v["pipelines"][0]["tables"][0]["default_entry"]["action_id"] = json!(77), &["pipelines[0].tables[0].default_entry", "unknown action id 77"]);
    assert_err(|v| v["pipelines"][0]["tables"][0]["default_entry"]["action_id"] = json!(8), &["default_entry", "not an action of the table"]);
    assert_err(|v| v["pipelines"][0]["tables"][0]["type"] = json!("indirect"), &["pipelines[0].tables[0]", "missing attribute 'action_profile'"]);
    assert_err(|v| { v["pipelines"][0]["tables"][0]["type"] = json!("indirect"); v["pipelines"][0]["tables"][0]["action_profile"] = json!("nope"); },
               &["pipelines[0].tables[0]", "unknown action profile 'nope'"]);
    assert_err(|v| v["pipelines"][0]["tables"][0]["actions"][0] = json!("ghost_action"), &["pipelines[0].tables[0].actions[0]", "unknown action 'ghost_action'"]);
    assert_err(|v| v["pipelines"][0]["conditionals"][0]["expression"]["value"]["op"] = json!("**"), &["conditionals[0].expression", "unknown expression op '**'"]);
    assert_err(|v| v["pipelines"][1]["name"] = json!("egress2"), &["pipelines[1]", "unknown pipeline 'egress2'"]);
    assert_err(|v| v["pipelines"][0]["tables"][4]["default_entry"]["action_data"] = json!(["0x1"]), &["takes 0 arguments, got 1"]);
}

#[test]
fn const_entry_errors() {
    let entry = json!({"match_key": [{"match_type": "exact", "key": "0x000000000001"}],
                       "action_entry": {"action_id": 8, "action_data": ["0x3"]}, "priority": 1});
    let with = |e: Value| move |v: &mut Value| v["pipelines"][0]["tables"][4]["entries"] = json!([e]);
    assert!(Program::from_json(&{ let mut v = base(); with(entry.clone())(&mut v); v }.to_string()).is_ok());
    let mut bad = entry.clone();
    bad["match_key"][0]["match_type"] = json!("lpm");
    assert_err(with(bad), &["entries[0].match_key[0]", "does not match the key's 'exact'"]);
    let mut bad = entry.clone();
    bad["match_key"][0]["key"] = json!("0x01000000000001");
    assert_err(with(bad), &["entries[0].match_key[0]", "does not fit in 48 bits"]);
    let mut bad = entry.clone();
    bad["action_entry"]["action_data"] = json!(["0x3ff"]);
    assert_err(with(bad), &["argument 'port' does not fit in 9 bits"]);
}

#[test]
fn resource_errors() {
    assert_err(|v| v["meter_arrays"][0]["rate_count"] = json!(3), &["meter_arrays[0]", "rate_count 3 unsupported"]);
    assert_err(|v| v["counter_arrays"][0]["binding"] = json!("ingress.nope"), &["counter_arrays[0]", "unknown table 'ingress.nope'"]);
    assert_err(|v| v["register_arrays"][0]["bitwidth"] = json!(0), &["register_arrays[0]", "bitwidth 0"]);
    assert_err(|v| v["checksums"][0]["calculation"] = json!("ghost"), &["checksums[0]", "unknown calculation 'ghost'"]);
    assert_err(|v| v["calculations"][0]["algo"] = json!("md5"), &["calculations[0]", "unsupported hash algorithm 'md5'"]);
    assert_err(|v| v["pipelines"][0]["tables"][1]["with_counters"] = json!(true), &["pipelines[0].tables[1]", "no direct counter"]);
}

/// Every rejected request leaves the table exactly as it was.
#[test]
fn invalid_control_plane_requests_change_nothing() {
    let (_, st, _) = load("l3_stack.json");
    let t = "ingress.ipv4_lpm";
    let h = st.table_add(t, &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], vec![0; 6]], 0).unwrap();
    let before = st.table_entries(t).unwrap();
    let lpm = |v: Vec<u8>, p| vec![MatchKey::Lpm(v, p)];
    let args = vec![vec![1], vec![0; 6]];
    let cases: Vec<(Result<u64, RuntimeError>, &str)> = vec![
        (st.table_add("ingress.nope", &lpm(vec![1, 0, 0, 0], 8), "ingress.set_nhop", &args, 0), "unknown name"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 0], 8), "ingress.l2_forward", &[vec![1]], 0), "unknown name"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 0], 8), "ingress.set_nhop", &[vec![1]], 0), "takes 2 arguments"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 0], 8), "ingress.set_nhop", &[vec![2, 0], vec![0; 6]], 0), "does not fit in 9 bits"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 0, 0], 8), "ingress.set_nhop", &args, 0), "does not fit in 32 bits"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 0], 33), "ingress.set_nhop", &args, 0), "prefix length 33"),
        (st.table_add(t, &lpm(vec![1, 0, 0, 1], 8), "ingress.set_nhop", &args, 0), "beyond the prefix"),
        (st.table_add(t, &[MatchKey::Exact(vec![1, 0, 0, 0])], "ingress.set_nhop", &args, 0), "lpm key given as"),
        (st.table_add(t, &[], "ingress.set_nhop", &args, 0), "has 1 key fields"),
        (st.table_add(t, &lpm(vec![10, 0, 0, 0], 8), "ingress.set_nhop", &args, 0), "duplicate"),
        (st.table_add("ingress.acl", &[MatchKey::Ternary(vec![1, 0, 0, 1], vec![255, 0, 0, 0]), MatchKey::Range(vec![0, 0], vec![0, 1])], "NoAction", &[], 1), "outside the mask"),
        (st.table_add("ingress.acl", &[MatchKey::Ternary(vec![1, 0, 0, 0], vec![255, 0, 0, 0]), MatchKey::Range(vec![0, 9], vec![0, 1])], "NoAction", &[], 1), "low bound above"),
        (st.table_modify(t, 999, "ingress.drop", &[]).map(|_| 0), "no entry 999"),
        (st.table_delete(t, 999).map(|_| 0), "no entry 999"),
        (st.table_modify(t, h, "ingress.set_nhop", &[vec![1]]).map(|_| 0), "takes 2 arguments"),
        (st.table_set_default("tbl_stats", "ingress.do_stats", &[vec![1]]).map(|_| 0), "takes 0 arguments"),
        (st.table_set_default(t, "ingress.count_acl", &[vec![1]]).map(|_| 0), "unknown name"),
        (st.table_set_default("tbl_stats", "ingress.do_stats", &[]).map(|_| 0), "const default"),
        (st.table_add("tbl_stats", &[], "ingress.do_stats", &[], 0), "has no key"),
        (st.direct_counter_read(t, 999).map(|_| 0), "no entry 999"),
        (st.direct_counter_read("ingress.acl", 0).map(|_| 0), "no entry 0"),
        (st.register_write("pkt_count", 4, 1).map(|_| 0), "index 4 out of range"),
        (st.register_write("pkt_count", 0, 1 << 32).map(|_| 0), "does not fit in 32 bits"),
        (st.register_read("nope", 0).map(|_| 0), "register 'nope'"),
        (st.counter_read("acl_counter", 8).map(|_| 0), "index 8 out of range"),
        (st.meter_set("acl_meter", 0, Some(MeterConfig { cir: 10, cburst: 1, pir: 5, pburst: 1 })).map(|_| 0), "pir must be >= cir"),
        (st.mc_group_set(0, &[(1, 1)]).map(|_| 0), "group 0"),
        (st.mc_group_set(3, &[(511, 1)]).map(|_| 0), "below the drop port"),
        (st.mc_group_delete(42).map(|_| 0), "multicast group 42"),
        (st.clone_session_delete(42).map(|_| 0), "clone session 42"),
        (st.value_set_add("nope", &[1]).map(|_| 0), "value set 'nope'"),
    ];
    for (i, (res, want)) in cases.into_iter().enumerate() {
        let e = res.expect_err(&format!("case {i} ({want}) should fail")).to_string();
        assert!(e.contains(want), "case {i}: {e:?} should contain {want:?}");
    }
    assert_eq!(st.table_entries(t).unwrap(), before);
    assert_eq!(st.table_entries("ingress.acl").unwrap(), vec![]);
    assert_eq!(st.register_read("pkt_count", 0).unwrap(), 0);
    assert_eq!(st.mc_group_get(3), None);
    assert_eq!(st.table_get_default("tbl_stats").unwrap().unwrap().0, "ingress.do_stats");
}

#[test]
fn table_size_limit_and_read_back() {
    let (_, st, _) = load("l3_stack.json");
    let t = "ingress.acl";
    for i in 0..64u8 {
        st.table_add(t, &[MatchKey::Ternary(vec![i, 0, 0, 0], vec![255, 0, 0, 0]), MatchKey::Range(vec![0, 0], vec![0, 9])], "ingress.count_acl", &[vec![i % 8]], i as i32 + 1)
            .unwrap();
    }
    let e = st.table_add(t, &[MatchKey::Ternary(vec![99, 0, 0, 0], vec![255, 0, 0, 0]), MatchKey::Range(vec![0, 0], vec![0, 9])], "NoAction", &[], 1);
    assert!(matches!(e, Err(RuntimeError::Full(_))));
    let entries = st.table_entries(t).unwrap();
    assert_eq!(entries.len(), 64);
    assert_eq!(entries[0].priority, 64, "read back in match order: highest priority first");
    assert_eq!(entries[0].keys[0], MatchKey::Ternary(vec![63, 0, 0, 0], vec![255, 0, 0, 0]));
    assert_eq!(entries[0].args, vec![vec![63 % 8]]);
    st.table_clear(t).unwrap();
    assert_eq!(st.table_len(t).unwrap(), 0);
}

/// The control plane writes entries while another thread processes packets.
#[test]
fn concurrent_control_plane_and_packet_thread() {
    let (prog, st, _) = load("l3_stack.json");
    let st = Arc::new(st);
    let frame = udp_frame([1, 1, 1, 1], [10, 0, 0, 1], 80);
    let worker = {
        let (st, prog, frame) = (st.clone(), prog.clone(), frame.clone());
        std::thread::spawn(move || {
            let mut ex = Executor::new(prog, 1);
            let mut forwarded = 0;
            for _ in 0..20_000 {
                forwarded += ex.ingress(&st, 0, &frame, 0).queued.len();
            }
            forwarded
        })
    };
    for i in 0..2_000u32 {
        let h = st.table_add("ingress.ipv4_lpm", &[MatchKey::Lpm(vec![10, 0, 0, 0], 8)], "ingress.set_nhop", &[vec![1], vec![0; 6]], 0).unwrap();
        if i % 2 == 0 {
            st.table_delete("ingress.ipv4_lpm", h).unwrap();
        } else {
            st.table_clear("ingress.ipv4_lpm").unwrap();
        }
    }
    let forwarded = worker.join().unwrap();
    assert!(forwarded <= 20_000);
    assert_eq!(st.table_len("ingress.ipv4_lpm").unwrap(), 0);
}

/// The threading contract: State and Program are shared, Executor and packets move between threads.
#[test]
fn thread_safety_contract() {
    fn shared<T: Send + Sync>() {}
    fn movable<T: Send>() {}
    shared::<State>();
    shared::<Program>();
    movable::<Executor>();
    movable::<QueuedPacket>();
    movable::<Recirculation>();
}
