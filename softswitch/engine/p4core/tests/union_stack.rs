//! Header union stacks' `lastIndex` (tests/programs/union_stack.json: p4c's
//! `last_stack_index` on a `header_union_stack`), in both engines.

mod common;
use common::*;
use p4core::*;

#[test]
fn last_index_of_a_union_stack_is_its_next_index_minus_one() {
    let (prog, st, _) = load("union_stack.json");
    for engine in [Engine::Compiled, Engine::Interpreter] {
        let mut ex = Executor::with_engine(prog.clone(), 7, engine);
        // tag 1 (member a), tag2 0 (no second element): one element, lastIndex 0.
        assert_eq!(forward(&st, &mut ex, 0, &[1, 0x42, 0, 0xff]), [(1, vec![0, 0x42, 0, 0xff])], "{engine:?}");
        // member b, then tag2 1 (member a): two elements, lastIndex 1.
        let two = [2, 0x12, 0x34, 1, 0x55, 0xff];
        assert_eq!(forward(&st, &mut ex, 0, &two), [(1, vec![1, 0x12, 0x34, 0x55, 1, 0xff])], "{engine:?}");
    }
}
