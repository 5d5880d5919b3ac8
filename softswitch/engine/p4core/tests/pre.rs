//! Behaviour of tests/programs/pre.json: the packet replication engine
//! (multicast, I2E/E2E clones, resubmit, recirculate), digests, header
//! stacks push/pop, truncate, exit, assert, signed and ternary expressions.

mod common;
use common::*;
use p4core::*;

const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn setup(action: &str, args: &[Vec<u8>]) -> (std::sync::Arc<Program>, State, Executor) {
    let (prog, st, ex) = load("pre.json");
    st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], action, args, 0).unwrap();
    (prog, st, ex)
}

fn frame() -> Vec<u8> {
    eth(DST, MAC_A, 0x0800, &[0x45; 30])
}

fn src_mac(f: &[u8]) -> u64 {
    f[6..12].iter().fold(0, |a, b| (a << 8) | *b as u64)
}

#[test]
fn multicast_replicates_with_rid() {
    let (_, st, mut ex) = setup("ingress.mcast", &[vec![0, 1]]);
    st.mc_group_set(1, &[(1, 10), (2, 20), (3, 30)]).unwrap();
    let out = ex.ingress(&st, 0, &frame(), 0);
    assert_eq!(out.queued.iter().map(|q| (q.egress_port, q.instance_type)).collect::<Vec<_>>(), [(1, 5), (2, 5), (3, 5)]);
    let frames: Vec<_> = out.queued.into_iter().map(|q| ex.egress(&st, q, QueueMeta::default(), 0).out.unwrap()).collect();
    assert_eq!(frames.iter().map(|(p, f)| (*p, src_mac(f))).collect::<Vec<_>>(), [(1, 10), (2, 20), (3, 30)]);
    st.mc_group_delete(1).unwrap();
    let out = ex.ingress(&st, 0, &frame(), 0);
    assert!(out.queued.is_empty() && out.dropped, "unknown group: no copies");
}

#[test]
fn ingress_clone_is_the_original_packet_with_preserved_fields() {
    let (prog, st, mut ex) = setup("ingress.clone_i2e", &[vec![2], vec![0, 0, 0, 5]]);
    let x = field(&prog, "scalars", "meta.x");
    let out = ex.ingress(&st, 0, &frame(), 0);
    assert_eq!(out.queued.len(), 1, "unconfigured session: no clone");
    st.clone_session_set(5, &[(7, 0)], 0).unwrap();
    let out = ex.ingress(&st, 0, &frame(), 0);
    let ports: Vec<_> = out.queued.iter().map(|q| (q.egress_port, q.instance_type)).collect();
    assert_eq!(ports, [(7, 1), (2, 0)]);
    assert_eq!(out.queued[0].field(x), 0xbeef, "field list copied into the clone");
    let outs: Vec<_> = out.queued.into_iter().map(|q| ex.egress(&st, q, QueueMeta::default(), 0).out.unwrap()).collect();
    assert_eq!(src_mac(&outs[0].1), 0xc1c1_c1c1_c1c1, "egress sees instance_type 1");
    assert_eq!(outs[1].1, frame());
}

#[test]
fn clone_session_truncates() {
    let (_, st, mut ex) = setup("ingress.clone_i2e", &[vec![2], vec![0, 0, 0, 5]]);
    st.clone_session_set(5, &[(7, 0)], 20).unwrap();
    let outs = forward(&st, &mut ex, 0, &frame());
    assert_eq!(outs[0].1.len(), 20);
    assert_eq!(outs[1].1.len(), frame().len());
}

#[test]
fn egress_clone_keeps_headers_and_field_list() {
    let (_, st, mut ex) = setup("ingress.e2e_fwd", &[vec![2], vec![0, 0, 0, 9]]);
    st.clone_session_set(9, &[(8, 0)], 0).unwrap();
    let q = ex.ingress(&st, 0, &frame(), 0).queued.pop().unwrap();
    let eo = ex.egress(&st, q, QueueMeta::default(), 0);
    assert_eq!(eo.out.as_ref().unwrap().0, 2);
    assert_eq!(eo.clones.len(), 1);
    let c = eo.clones.into_iter().next().unwrap();
    assert_eq!((c.egress_port, c.instance_type), (8, 2));
    let ce = ex.egress(&st, c, QueueMeta::default(), 0);
    assert!(ce.clones.is_empty(), "the clone's metadata was reset: no clone of the clone");
    assert_eq!(src_mac(&ce.out.unwrap().1), 0xe2e2_e2e2_0e2e);
}

#[test]
fn digest_carries_learn_list_fields() {
    let (_, st, mut ex) = setup("ingress.digest_fwd", &[vec![1]]);
    let out = ex.ingress(&st, 3, &frame(), 0);
    assert_eq!(out.digests, [Digest { name: "mac_learn_digest".into(), fields: vec![MAC_A.to_vec(), vec![0, 3]] }]);
    assert_eq!(out.queued[0].egress_port, 1);
}

#[test]
fn resubmit_reruns_ingress_with_preserved_fields() {
    let (prog, st, mut ex) = setup("ingress.resubmit_once", &[vec![3]]);
    let out = ex.ingress(&st, 0, &frame(), 0);
    assert_eq!(out.queued.len(), 1);
    let q = &out.queued[0];
    // BMv2 resets instance_type to NORMAL when the resubmitted pass unicasts.
    assert_eq!((q.egress_port, q.instance_type), (3, 0));
    assert_eq!(q.field(field(&prog, "scalars", "meta.x")), 0x55);
}

#[test]
fn recirculate_feeds_the_deparsed_packet_back() {
    let (_, st, mut ex) = setup("ingress.recirc_to", &[vec![4]]);
    let mut q = ex.ingress(&st, 1, &frame(), 0).queued.pop().unwrap();
    let mut passes = 0;
    let out = loop {
        let eo = ex.egress(&st, q, QueueMeta::default(), 0);
        match eo.recirculate {
            Some(r) => {
                passes += 1;
                let io = ex.ingress_recirculated(&st, r, 0);
                q = io.queued.into_iter().next().unwrap();
                assert_eq!(q.instance_type, 0, "BMv2: unicast after ingress is NORMAL again");
            }
            None => break eo.out.unwrap(),
        }
    };
    assert_eq!(passes, 2);
    assert_eq!(out.0, 4);
    assert_eq!(src_mac(&out.1), 0x4c00_0000_0002, "recirc count preserved through the field list");
}

#[test]
fn vlan_push_pop_and_stack_parsing() {
    let (_, st, mut ex) = load("pre.json");
    let fwd = |st: &State, action: &str, args: &[Vec<u8>]| {
        st.table_clear("ingress.fwd").unwrap();
        st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], action, args, 0).unwrap();
    };
    fwd(&st, "ingress.push_vlan", &[vec![1], vec![0x01, 0x23]]);
    let untagged = frame();
    let tagged = forward(&st, &mut ex, 0, &untagged).pop().unwrap().1;
    assert_eq!(&tagged[12..18], &[0x81, 0x00, 0x01, 0x23, 0x08, 0x00]);
    assert_eq!(&tagged[18..], &untagged[14..]);
    let double = forward(&st, &mut ex, 0, &tagged).pop().unwrap().1;
    assert_eq!(&double[12..22], &[0x81, 0x00, 0x01, 0x23, 0x81, 0x00, 0x01, 0x23, 0x08, 0x00]);
    let triple = forward(&st, &mut ex, 0, &double);
    assert_eq!(triple.len(), 1);
    assert_eq!(ex.ingress(&st, 0, &triple[0].1, 0).parser_error, 3, "a third tag overflows vlan[2]");
    fwd(&st, "ingress.pop_vlan", &[vec![1]]);
    assert_eq!(forward(&st, &mut ex, 0, &double).pop().unwrap().1, tagged);
    assert_eq!(forward(&st, &mut ex, 0, &tagged).pop().unwrap().1, untagged);
    fwd(&st, "ingress.copy_vlan", &[vec![1]]);
    let copied = forward(&st, &mut ex, 0, &tagged).pop().unwrap().1;
    assert_eq!(&copied[12..22], &[0x81, 0x00, 0x01, 0x23, 0x08, 0x00, 0x01, 0x23, 0x08, 0x00], "assign_header copies vlan[0] to vlan[1]");
}

#[test]
fn truncate_exit_assert_priority() {
    let (_, st, mut ex) = setup("ingress.trunc_fwd", &[vec![1], vec![0, 20]]);
    assert_eq!(forward(&st, &mut ex, 0, &frame()).pop().unwrap().1.len(), 20);
    st.table_clear("ingress.fwd").unwrap();
    st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], "ingress.exit_early", &[vec![6]], 0).unwrap();
    assert_eq!(ex.ingress(&st, 0, &frame(), 0).queued[0].egress_port, 6, "exit stops the action");
    st.table_clear("ingress.fwd").unwrap();
    st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], "ingress.assert_fail", &[], 0).unwrap();
    let out = ex.ingress(&st, 0, &frame(), 0);
    assert!(out.assert_failed && out.dropped && out.queued.is_empty());
    st.table_clear("ingress.fwd").unwrap();
    st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], "ingress.set_priority", &[vec![1], vec![5]], 0).unwrap();
    assert_eq!(ex.ingress(&st, 0, &frame(), 0).queued[0].priority, 5);
}

#[test]
fn signed_division_shift_and_ternary_expressions() {
    let (prog, st, mut ex) = setup("ingress.signed_math", &[vec![1]]);
    let q = ex.ingress(&st, 0, &frame(), 0).queued.pop().unwrap();
    let f = |n: &str| q.field(field(&prog, "scalars", n));
    assert_eq!(f("meta.s"), -56, "two_comp_mod(200, 8)");
    assert_eq!(f("meta.flag"), 1, "(s < 0) ? 1 : 2 with a signed field");
    assert_eq!((f("meta.q"), f("meta.r")), (14, 2));
    assert_eq!(f("meta.s2"), -14, "arithmetic shift of a negative value");
    assert_eq!(f("meta.x"), 0xff00, "~ then mask");
}

#[test]
fn parser_value_set_and_default_drop() {
    let (prog, st, mut ex) = setup("ingress.to_port", &[vec![1]]);
    let special = field(&prog, "scalars", "meta.special");
    let probe = |ex: &mut Executor| ex.ingress(&st, 0, &eth(DST, MAC_A, 0x88b5, &[0; 10]), 0).queued[0].field(special);
    assert_eq!(probe(&mut ex), 0);
    st.value_set_add("pvs", &[0x88, 0xb5]).unwrap();
    assert_eq!(probe(&mut ex), 1);
    assert!(st.value_set_add("pvs", &[1, 0x88, 0xb5]).is_err(), "wider than 16 bits");
    let miss = ex.ingress(&st, 0, &eth([9; 6], MAC_A, 0x0800, &[0; 10]), 0);
    assert!(miss.dropped);
}

#[test]
fn header_union_member_switch() {
    let (prog, st, mut ex) = setup("ingress.set_ub", &[vec![1]]);
    let q = field(&prog, "scalars", "meta.q");
    let with_a = eth(DST, MAC_A, 0x88b6, &[0x11, 0xee, 0xee]);
    let out = ex.ingress(&st, 0, &with_a, 0);
    assert_eq!(out.queued[0].field(q), 1, "valid_union: member a was extracted");
    let f = ex.egress(&st, out.queued.into_iter().next().unwrap(), QueueMeta::default(), 0).out.unwrap().1;
    assert_eq!(&f[14..], &[0xab, 0xcd, 0xee, 0xee], "setting b valid invalidated a");
    let out = ex.ingress(&st, 0, &eth(DST, MAC_A, 0x0800, &[0; 4]), 0);
    assert_eq!(out.queued[0].field(q), 0);
}

#[test]
fn stack_elements_by_runtime_index() {
    let (prog, st, mut ex) = load("pre.json");
    let (flag, r) = (field(&prog, "scalars", "meta.flag"), field(&prog, "scalars", "meta.r"));
    let double = eth(DST, MAC_A, 0x8100, &[0x00, 0x05, 0x81, 0x00, 0x00, 0x06, 0x08, 0x00, 9, 9]);
    for (idx, want_flag, want) in [(1u8, 1, [0x00, 0x05, 0x81, 0x00, 0x0f, 0xff]), (5, 0, [0x00, 0x05, 0x81, 0x00, 0x00, 0x06])] {
        st.table_clear("ingress.fwd").unwrap();
        st.table_add("ingress.fwd", &[MatchKey::Exact(DST.to_vec())], "ingress.dyn_vid", &[vec![1], vec![idx]], 0).unwrap();
        let q = ex.ingress(&st, 0, &double, 0).queued.pop().unwrap();
        assert_eq!(q.field(flag), want_flag, "valid(vlan[{idx}])");
        assert_eq!(q.field(r), 1, "last_stack_index");
        let f = ex.egress(&st, q, QueueMeta::default(), 0).out.unwrap().1;
        assert_eq!(&f[14..20], &want, "vlan[{idx}].vid written (out of range: ignored)");
    }
}

#[test]
fn packets_queued_under_another_program_are_dropped_not_panicking() {
    let (_, st, mut ex) = setup("ingress.to_port", &[vec![1]]);
    let q = ex.ingress(&st, 0, &frame(), 0).queued.pop().unwrap();
    let (_, l3_state, mut l3) = load("l3_stack.json");
    let eo = l3.egress(&l3_state, q, QueueMeta::default(), 0);
    assert!(eo.out.is_none() && eo.clones.is_empty());
}

#[test]
fn log_msg_formats_when_logging_is_on() {
    let (_, st, mut ex) = setup("ingress.log_it", &[vec![4]]);
    ex.ingress(&st, 2, &frame(), 0);
    assert!(ex.take_logs().is_empty(), "logging is off by default");
    ex.set_logging(true);
    ex.ingress(&st, 2, &frame(), 0);
    assert_eq!(ex.take_logs(), vec!["to port 4 from 2".to_string()]);
}
