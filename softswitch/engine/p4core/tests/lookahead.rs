//! A parser `set` from a lookahead past the frame's end fails the parser with
//! PacketTooShort, as BMv2 does (tests/programs/lookahead_short.json), in both engines.

mod common;
use common::*;
use p4core::*;

#[test]
fn a_set_from_a_lookahead_past_the_frame_is_packet_too_short() {
    let (prog, st, _) = load("lookahead_short.json");
    for engine in [Engine::Compiled, Engine::Interpreter] {
        let mut ex = Executor::with_engine(prog.clone(), 7, engine);
        let short = ex.ingress(&st, 0, &[0xab, 0xcd], 0);
        assert!(short.dropped && short.queued.is_empty(), "{engine:?}: 2 bytes, 64-bit lookahead");
        assert_eq!(short.parser_error, prog.errors.packet_too_short, "{engine:?}");
        let frame = [0xab, 1, 2, 3, 4, 5, 6, 7];
        assert_eq!(forward(&st, &mut ex, 0, &frame), [(1, frame.to_vec())], "{engine:?}: 8 bytes are enough");
    }
}
