//! The compiled controls as native code (Cranelift). A control graph whose
//! actions cannot `exit` becomes one function: its conditions and the
//! assignments whose values u64 arithmetic gives exactly (the rules of
//! `Compiler::expr64`: a value is its low 64 bits, and with a bound the value
//! itself) run inline, and so do register reads and writes (on the cells
//! `State::register_views` locates) and table keys; table applies (the lookup
//! and the entry's action), and every condition or primitive it does not cover,
//! call back into the closures `compile.rs` built for them (`TableCode`,
//! `Test`, `Op`). So the native code walks the same
//! graph with the same results, node by node. Actions as table entries run
//! them (`actions`) and header layouts (`layouts`: parser reads, deparser
//! writes) get native code the same way, where every piece is covered, and
//! so do the whole parser (`parser`) and the whole deparser (`deparser`).

use crate::compile::{cover, strip_mask, Compiled, Edge, HeaderIo, Layout, NodeCode, Op, ParseOp, ParseStateCode, PipelineCode, Select, TableCode, Test, Val, MAX_READ_WORDS, SHORT_KEY};
use crate::exec::{Executor, PacketState, MAX_PARSE_STATES};
use crate::load::mask_of;
use crate::program::*;
use crate::state::{CellsView, State};
use cranelift_codegen::ir::{condcodes::IntCC, types, AbiParam, Block, InstBuilder, MemFlags, SigRef, StackSlotData, StackSlotKind, Type, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Module};
use std::mem::offset_of;

/// What the native code reaches at run time; the callbacks rebuild references from it.
#[repr(C)]
struct Frame {
    fields: *mut i128,
    valid: *mut bool,
    compiled: *const Compiled,
    ex: *mut Executor,
    st: *const State,
    pkt: *mut PacketState,
    /// `State::register_views`: the cells the code reads and writes.
    registers: *const CellsView,
}

/// A control compiled to one native function.
pub(crate) struct Control {
    entry: unsafe extern "C" fn(*mut Frame),
    _code: Native,
}

impl Control {
    /// Runs the control on `pkt`. `c` must own the `PipelineCode` this was built
    /// from (the code holds pointers into it) and `pkt` must be laid out for its
    /// program (as every packet an executor runs is: `Executor::fits`).
    pub(crate) fn run(&self, c: &Compiled, ex: &mut Executor, st: &State, pkt: &mut PacketState) {
        let (fields, valid) = (pkt.fields.as_mut_ptr(), pkt.valid.as_mut_ptr());
        let mut frame = Frame { fields, valid, compiled: c, ex, st, pkt, registers: st.register_views.as_ptr() };
        // SAFETY: field and header indices in the code are the program's, below
        // the lengths of a packet laid out for it; the callbacks never resize them.
        unsafe { (self.entry)(&mut frame) }
    }

    /// Native code for `code` (the compiled graph of one control); None when
    /// this machine has no Cranelift backend.
    pub(crate) fn new(prog: &Program, code: &PipelineCode) -> Option<Control> {
        let mut module = new_module()?;
        let id = function(&mut module, prog, false, |g| {
            g.blocks = vec![None; code.nodes.len()];
            let first = g.target(code.init);
            g.b.ins().jump(first, &[]);
            while let Some(n) = g.todo.pop() {
                let block = g.blocks[n].expect("queued nodes have blocks");
                g.b.switch_to_block(block);
                g.node(&code.nodes[n]);
            }
            g.b.switch_to_block(g.done);
            true
        })??;
        module.finalize_definitions().ok()?;
        let code = module.get_finalized_function(id);
        // SAFETY: the function was declared with one pointer parameter and no result.
        let entry = unsafe { std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut Frame)>(code) };
        Some(Control { entry, _code: Native { module: Some(module) } })
    }
}

/// Defines a function of the frame (and, with `params`, an action's argument
/// array) whose body `body` emits, then returns; Some(None) when `body` finds
/// something it does not cover (nothing is defined then), None on a Cranelift error.
fn function(module: &mut JITModule, prog: &Program, params: bool, body: impl FnOnce(&mut Gen) -> bool) -> Option<Option<FuncId>> {
    let ptr = module.target_config().pointer_type();
    let mut ctx = module.make_context();
    ctx.func.signature.params.push(AbiParam::new(ptr));
    if params {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    let signature = |params: &[Type], ret: Option<Type>| {
        let mut s = module.make_signature();
        s.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    };
    let sigs = [
        signature(&[ptr, ptr], None),
        signature(&[ptr, ptr], Some(types::I8)),
        signature(&[ptr, ptr], Some(ptr)),
        signature(&[ptr, ptr, ptr], Some(ptr)),
    ];
    let mut fctx = FunctionBuilderContext::new();
    let covered = {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let [op, test, table, keyed] = sigs.map(|s| b.import_signature(s));
        let start = b.create_block();
        b.append_block_params_for_function_params(start);
        b.switch_to_block(start);
        let frame = b.block_params(start)[0];
        let args = params.then(|| b.block_params(start)[1]);
        let fields = b.ins().load(ptr, MemFlags::trusted(), frame, offset_of!(Frame, fields) as i32);
        let valid = b.ins().load(ptr, MemFlags::trusted(), frame, offset_of!(Frame, valid) as i32);
        let done = b.create_block();
        let sigs = Sigs { op, test, table, keyed };
        let mut g = Gen { prog, b, ptr, frame, fields, valid, args, args_used: 0, sigs, blocks: Vec::new(), todo: Vec::new(), done };
        let covered = body(&mut g);
        g.b.ins().return_(&[]);
        g.b.seal_all_blocks();
        g.b.finalize();
        covered
    };
    if !covered {
        module.clear_context(&mut ctx);
        return Some(None);
    }
    Some(Some(define(module, &mut ctx)?))
}

/// An action with its arguments from a table entry, as native code.
#[derive(Clone, Copy)]
pub(crate) struct ActionCode {
    run: unsafe extern "C" fn(*mut Frame, *const i128),
    /// The arguments it reads: an entry with fewer runs the closures.
    pub(crate) args: usize,
}

impl ActionCode {
    /// Runs the action with `args` (at least `self.args` of them) on `pkt`, laid out for its program.
    pub(crate) fn run(&self, c: &Compiled, ex: &mut Executor, st: &State, pkt: &mut PacketState, args: &[i128]) {
        debug_assert!(args.len() >= self.args);
        let (fields, valid) = (pkt.fields.as_mut_ptr(), pkt.valid.as_mut_ptr());
        let mut frame = Frame { fields, valid, compiled: c, ex, st, pkt, registers: st.register_views.as_ptr() };
        // SAFETY: as `Control::run`; the code reads only the first `self.args` arguments.
        unsafe { (self.run)(&mut frame, args.as_ptr()) }
    }
}

/// Native code for each action (as table entries run it) whose primitives are
/// all covered inline and cannot exit.
pub(crate) fn actions(prog: &Program) -> Option<(Native, Vec<Option<ActionCode>>)> {
    let mut module = new_module()?;
    let mut made = Vec::new();
    for a in &prog.actions {
        let mut args = 0;
        let id = function(&mut module, prog, true, |g| {
            let covered = a.prims.iter().filter(|p| !matches!(p, Prim::NoOp)).all(|p| g.prim(p, &[]));
            args = g.args_used;
            covered
        })?;
        made.push(id.map(|id| (id, args)));
    }
    module.finalize_definitions().ok()?;
    let codes = made
        .into_iter()
        .map(|m| {
            m.map(|(id, args)| {
                let code = module.get_finalized_function(id);
                // SAFETY: declared with two pointer parameters and no result.
                ActionCode { run: unsafe { std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut Frame, *const i128)>(code) }, args }
            })
        })
        .collect();
    Some((Native { module: Some(module) }, codes))
}

/// Native code that lives as long as this value (its module is freed on drop).
pub(crate) struct Native {
    module: Option<JITModule>,
}

// SAFETY: the module's code is immutable once finalized and only freed on drop.
unsafe impl Send for Native {}
unsafe impl Sync for Native {}

impl Drop for Native {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: whoever holds pointers into the code is dropped with this value.
            unsafe { module.free_memory() };
        }
    }
}

/// A JIT module for this machine; None when Cranelift has no backend for it.
fn new_module() -> Option<JITModule> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    let isa = cranelift_native::builder().ok()?.finish(settings::Flags::new(flags)).ok()?;
    Some(JITModule::new(JITBuilder::with_isa(isa, default_libcall_names())))
}

/// A JIT module whose pointers are 64 bits wide (the parser's and deparser's
/// byte positions are i64 values, added to pointers); None on other machines.
fn new_module_64() -> Option<JITModule> {
    new_module().filter(|m| m.target_config().pointer_type() == types::I64)
}

/// Declares and defines the function built in `ctx`, then clears `ctx` for the next one.
fn define(module: &mut JITModule, ctx: &mut cranelift_codegen::Context) -> Option<FuncId> {
    let id = module.declare_anonymous_function(&ctx.func.signature).ok()?;
    module.define_function(id, ctx).ok()?;
    module.clear_context(ctx);
    Some(id)
}

/// Defines the module's one function and finalizes the module: the function's code.
fn finish_one(module: &mut JITModule, ctx: &mut cranelift_codegen::Context) -> Option<*const u8> {
    let id = define(module, ctx)?;
    module.finalize_definitions().ok()?;
    Some(module.get_finalized_function(id))
}

/// Writes a layout's whole words, big-endian, from the fields at the first pointer to the second.
pub(crate) type WriteFn = unsafe extern "C" fn(*const i128, *mut u8);
/// Reads a layout's fields from its whole words (big-endian) at the first pointer.
pub(crate) type ReadFn = unsafe extern "C" fn(*const u8, *mut i128);

/// Native `Layout::write` and `Layout::read` for each layout whose fields are
/// at most 64 bits wide (reads: and unsigned), all in one module.
pub(crate) fn layouts(layouts: &mut [&mut Layout]) -> Option<Native> {
    let mut module = new_module()?;
    let ptr = module.target_config().pointer_type();
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut made = Vec::new();
    for (i, layout) in layouts.iter().enumerate() {
        let write = layout.words.iter().all(|w| w.wide.is_empty());
        // Reads go through a buffer of MAX_READ_WORDS words at the frame's end.
        let read = layout.words.len() <= MAX_READ_WORDS && layout.reads.iter().all(|r| !r.signed && r.width <= 64);
        for (is_read, wanted) in [(false, write), (true, read)] {
            if !wanted {
                continue;
            }
            ctx.func.signature.params.extend([AbiParam::new(ptr), AbiParam::new(ptr)]);
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                let start = b.create_block();
                b.append_block_params_for_function_params(start);
                b.switch_to_block(start);
                let (src, dst) = (b.block_params(start)[0], b.block_params(start)[1]);
                if is_read {
                    read_words(&mut b, layout, src, dst);
                } else {
                    write_words(&mut b, layout, src, dst);
                }
                b.ins().return_(&[]);
                b.seal_all_blocks();
                b.finalize();
            }
            made.push((i, is_read, define(&mut module, &mut ctx)?));
        }
    }
    module.finalize_definitions().ok()?;
    for (i, is_read, id) in made {
        let code = module.get_finalized_function(id);
        // SAFETY: both kinds were declared with two pointer parameters and no result.
        unsafe {
            if is_read {
                layouts[i].native_read = Some(std::mem::transmute::<*const u8, ReadFn>(code));
            } else {
                layouts[i].native_write = Some(std::mem::transmute::<*const u8, WriteFn>(code));
            }
        }
    }
    Some(Native { module: Some(module) })
}

/// The words of `Layout::word`, stored big-endian at `out`.
fn write_words(b: &mut FunctionBuilder, layout: &Layout, fields: Value, out: Value) {
    let words = word_values(b, layout, fields);
    store_words(b, &words, out);
}

/// The values of `Layout::word` (their big-endian bytes are the layout's).
fn word_values(b: &mut FunctionBuilder, layout: &Layout, fields: Value) -> Vec<Value> {
    let mut words = Vec::with_capacity(layout.words.len());
    for w in &layout.words {
        let mut acc = b.ins().iconst(types::I64, w.consts as i64);
        for p in &w.narrow {
            let v = b.ins().load(types::I64, MemFlags::trusted(), fields, 16 * p.field as i32);
            let mut v = b.ins().band_imm(v, p.mask as i64);
            if p.shr > 0 {
                v = b.ins().ushr_imm(v, p.shr as i64);
            }
            if p.shl > 0 {
                v = b.ins().ishl_imm(v, p.shl as i64);
            }
            acc = b.ins().bor(acc, v);
        }
        words.push(acc);
    }
    words
}

/// Stores `words` big-endian at `out`, one after the other.
fn store_words(b: &mut FunctionBuilder, words: &[Value], out: Value) {
    for (k, w) in words.iter().enumerate() {
        let be = b.ins().bswap(*w);
        b.ins().store(MemFlags::new().with_notrap(), be, out, 8 * k as i32);
    }
}

/// The deparser as native code: (fields, validity, output, the in-place
/// checksums due: bit i for checksum i) -> the bytes of headers written.
pub(crate) type DeparseFn = unsafe extern "C" fn(*mut i128, *const bool, *mut u8, u64) -> usize;

/// An in-place checksum (`compile::in_place_update`) as the native deparser
/// computes it: its bit in the due mask, its header's deparser position, its
/// byte offset in the header and its field.
pub(crate) struct InPlaceSum {
    pub(crate) bit: usize,
    pub(crate) pos: usize,
    pub(crate) at: usize,
    pub(crate) target: usize,
}

/// The whole deparser as one native function, when every header has a native
/// write and at most one in-place checksum: each valid header's whole words
/// are stored at the running byte position (the next header's, or the
/// payload the caller appends, overwrite the bytes past its end, so the caller
/// reserves 8 bytes per word), and a due in-place checksum is summed from the
/// header's words, patched in and stored in its field, as
/// `Compiled::update_in_place` does over the written bytes.
pub(crate) fn deparser(headers: &[HeaderIo], sums: &[InPlaceSum]) -> Option<(DeparseFn, Native)> {
    let covered = headers.iter().enumerate().all(|(p, io)| io.layout.native_write.is_some() && sums.iter().filter(|s| s.pos == p).count() <= 1);
    if !covered || sums.iter().any(|s| s.bit >= 64) {
        return None;
    }
    let mut module = new_module_64()?;
    let ptr = types::I64;
    let mut ctx = module.make_context();
    ctx.func.signature.params.extend([ptr, ptr, ptr, types::I64].map(AbiParam::new));
    ctx.func.signature.returns.push(AbiParam::new(ptr));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let start = b.create_block();
        b.append_block_params_for_function_params(start);
        b.switch_to_block(start);
        let [fields, valid, out, due] = <[Value; 4]>::try_from(b.block_params(start)).expect("four parameters");
        let mut pos = b.ins().iconst(ptr, 0);
        for (p, io) in headers.iter().enumerate() {
            // next(pos): the position after this header, written or not.
            let (write, next) = (b.create_block(), b.create_block());
            b.append_block_param(next, ptr);
            let is_valid = b.ins().load(types::I8, MemFlags::trusted(), valid, io.header as i32);
            b.ins().brif(is_valid, write, &[], next, &[pos]);
            b.switch_to_block(write);
            let mut words = word_values(&mut b, &io.layout, fields);
            if let Some(s) = sums.iter().find(|s| s.pos == p) {
                let k = s.at / 8;
                words[k] = in_place_sum(&mut b, &words, s, fields, due);
            }
            let at = b.ins().iadd(out, pos);
            store_words(&mut b, &words, at);
            let end = b.ins().iadd_imm(pos, io.layout.bytes as i64);
            b.ins().jump(next, &[end]);
            b.switch_to_block(next);
            pos = b.block_params(next)[0];
        }
        b.ins().return_(&[pos]);
        b.seal_all_blocks();
        b.finalize();
    }
    let code = finish_one(&mut module, &mut ctx)?;
    // SAFETY: declared with three pointer parameters and an i64, and a pointer-sized result.
    let f = unsafe { std::mem::transmute::<*const u8, DeparseFn>(code) };
    Some((f, Native { module: Some(module) }))
}

/// The word holding checksum `s` after its in-place update when its bit of
/// `due` is set (the checksum also stored in its field), else as it was.
fn in_place_sum(b: &mut FunctionBuilder, words: &[Value], s: &InPlaceSum, fields: Value, due: Value) -> Value {
    let (k, shift) = (s.at / 8, (6 - s.at % 8) * 8);
    let (sum, done) = (b.create_block(), b.create_block());
    b.append_block_param(done, types::I64);
    let bit = b.ins().ushr_imm(due, s.bit as i64);
    let bit = b.ins().band_imm(bit, 1);
    b.ins().brif(bit, sum, &[], done, &[words[k]]);
    b.switch_to_block(sum);
    // The header's bytes without the checksum's two: its word with them zeroed.
    let without = b.ins().band_imm(words[k], !(0xffffu64 << shift) as i64);
    let others: Vec<Value> = words.iter().enumerate().map(|(j, w)| if j == k { without } else { *w }).collect();
    let csum = csum16_of_words(b, &others);
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().store(MemFlags::trusted(), csum, fields, 16 * s.target as i32);
    b.ins().store(MemFlags::trusted(), zero, fields, 16 * s.target as i32 + 8);
    let placed = b.ins().ishl_imm(csum, shift as i64);
    let patched = b.ins().bor(without, placed);
    b.ins().jump(done, &[patched]);
    b.switch_to_block(done);
    b.block_params(done)[0]
}

/// `hash::csum16` of the bytes whose big-endian words `words` are (an even
/// count of bytes, zeros past them): the ones' complement of the ones'
/// complement sum of their 16-bit lanes, in the low 16 bits.
fn csum16_of_words(b: &mut FunctionBuilder, words: &[Value]) -> Value {
    // Lanes 0 and 2, and 1 and 3, summed in the two 32-bit halves (at most
    // 2 * 0xffff per word each: no carry between the halves below 32,768 words).
    const PAIRS: i64 = 0x0000_ffff_0000_ffff;
    let mut sum = b.ins().iconst(types::I64, 0);
    for w in words {
        let low = b.ins().band_imm(*w, PAIRS);
        let high = b.ins().ushr_imm(*w, 16);
        let high = b.ins().band_imm(high, PAIRS);
        sum = b.ins().iadd(sum, low);
        sum = b.ins().iadd(sum, high);
    }
    let low = b.ins().band_imm(sum, 0xffff_ffff);
    let high = b.ins().ushr_imm(sum, 32);
    let mut sum = b.ins().iadd(low, high);
    // Folding the carries three times leaves at most 16 bits from 34.
    for _ in 0..3 {
        let low = b.ins().band_imm(sum, 0xffff);
        let high = b.ins().ushr_imm(sum, 16);
        sum = b.ins().iadd(low, high);
    }
    let inverted = b.ins().bnot(sum);
    b.ins().band_imm(inverted, 0xffff)
}

/// The fields of `Layout::read`, from the big-endian words at `words`.
fn read_words(b: &mut FunctionBuilder, layout: &Layout, words: Value, fields: Value) {
    let loaded: Vec<Value> = (0..layout.words.len())
        .map(|k| {
            let w = b.ins().load(types::I64, MemFlags::new().with_notrap(), words, 8 * k as i32);
            b.ins().bswap(w)
        })
        .collect();
    let zero = b.ins().iconst(types::I64, 0);
    for r in &layout.reads {
        let mut v = zero;
        for &(k, s) in &r.pieces[..r.n as usize] {
            let w = loaded[k as usize];
            let piece = match s {
                0 => w,
                s if s > 0 => b.ins().ushr_imm(w, s as i64),
                s => b.ins().ishl_imm(w, -(s as i64)),
            };
            v = b.ins().bor(v, piece);
        }
        let v = b.ins().band_imm(v, r.mask as u64 as i64);
        b.ins().store(MemFlags::trusted(), v, fields, 16 * r.field as i32);
        b.ins().store(MemFlags::trusted(), zero, fields, 16 * r.field as i32 + 8);
    }
}

/// The parser as native code: (frame, its length, fields, validity, where
/// the bytes consumed go) -> the parser error code (0: none).
pub(crate) type ParseFn = unsafe extern "C" fn(*const u8, usize, *mut i128, *mut bool, *mut usize) -> i64;

/// The whole parser as one native function, when every state reachable from
/// the start is covered: extracts of plain headers through native layout
/// reads (inlined), selects on a key of fields (or constants) of at most 64
/// bits in all, and a state graph without loops (so the interpreter's step
/// bound, `MAX_PARSE_STATES`, can never be reached). Same results as
/// `Compiled::parse`: PacketTooShort when a header does not fit (bytes
/// consumed up to it), NoMatch when no transition matches.
pub(crate) fn parser(prog: &Program, states: &[ParseStateCode]) -> Option<(ParseFn, Native)> {
    let too_short = i64::try_from(prog.errors.packet_too_short).ok()?;
    let no_match = i64::try_from(prog.errors.no_match).ok()?;
    // Reachable states: covered, and no loop among them.
    let mut mark = vec![0u8; states.len()]; // 0 new, 1 on the path, 2 done
    fn visit(states: &[ParseStateCode], s: usize, mark: &mut [u8]) -> bool {
        match mark.get(s) {
            Some(1) | None => return false,
            Some(2) => return true,
            _ => {}
        }
        mark[s] = 1;
        let st = &states[s];
        let ops = st.ops.iter().all(|op| matches!(op, ParseOp::Extract(io) if io.plain && io.layout.native_read.is_some()));
        let ok = ops
            && match &st.select {
                Select::Key { parts, transitions } => {
                    let bits: u32 = parts.iter().map(|(_, w)| w.div_ceil(8) * 8).sum();
                    bits <= 64
                        && parts.iter().all(|(v, _)| matches!(v, Val::Field(_) | Val::Const(_)))
                        && transitions.iter().all(|(value, mask, _)| *value <= u64::MAX as u128 && *mask <= u64::MAX as u128)
                        && transitions.iter().filter_map(|t| t.2).all(|n| visit(states, n, mark))
                }
                Select::Interpreted => false,
            };
        mark[s] = 2;
        ok
    }
    if states.len() > MAX_PARSE_STATES || !prog.parser.init.is_none_or(|s| visit(states, s, &mut mark)) {
        return None;
    }
    let mut module = new_module_64()?;
    let ptr = types::I64;
    let mut ctx = module.make_context();
    ctx.func.signature.params.extend([ptr, ptr, ptr, ptr, ptr].map(AbiParam::new));
    ctx.func.signature.returns.push(AbiParam::new(types::I64));
    let mut padded_sig = module.make_signature();
    padded_sig.params.extend([ptr, ptr, ptr, ptr, ptr].map(AbiParam::new));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let padded = b.import_signature(padded_sig);
        let start = b.create_block();
        b.append_block_params_for_function_params(start);
        b.switch_to_block(start);
        let [frame, len, fields, valid, pos_out] = <[Value; 5]>::try_from(b.block_params(start)).expect("five parameters");
        // ret(pos, error)
        let ret = b.create_block();
        b.append_block_param(ret, ptr);
        b.append_block_param(ret, types::I64);
        let mut blocks: Vec<Option<Block>> = vec![None; states.len()];
        let mut todo: Vec<usize> = Vec::new();
        // Jumps to the block of state `next` (its parameter: the byte position), or to ret with no error.
        fn target(b: &mut FunctionBuilder, blocks: &mut [Option<Block>], todo: &mut Vec<usize>, ret: Block, next: Option<usize>, pos: Value) {
            match next {
                None => {
                    let zero = b.ins().iconst(types::I64, 0);
                    b.ins().jump(ret, &[pos, zero]);
                }
                Some(n) => {
                    let block = *blocks[n].get_or_insert_with(|| {
                        todo.push(n);
                        let block = b.create_block();
                        b.append_block_param(block, types::I64);
                        block
                    });
                    b.ins().jump(block, &[pos]);
                }
            }
        }
        let zero = b.ins().iconst(ptr, 0);
        target(&mut b, &mut blocks, &mut todo, ret, prog.parser.init, zero);
        let mut done = vec![false; states.len()];
        while let Some(n) = todo.pop() {
            if std::mem::replace(&mut done[n], true) {
                continue;
            }
            let block = blocks[n].expect("queued states have blocks");
            b.switch_to_block(block);
            let mut pos = b.block_params(block)[0];
            let st = &states[n];
            for op in &st.ops {
                let ParseOp::Extract(io) = op else { unreachable!("checked above") };
                let layout = &io.layout;
                let end = b.ins().iadd_imm(pos, layout.bytes as i64);
                let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, len);
                let (read, short) = (b.create_block(), b.create_block());
                b.ins().brif(fits, read, &[], short, &[]);
                b.switch_to_block(short);
                let error = b.ins().iconst(types::I64, too_short);
                b.ins().jump(ret, &[pos, error]);
                b.switch_to_block(read);
                // Whole words from the frame when they are all there, else a zero-padded copy.
                let whole_end = b.ins().iadd_imm(pos, 8 * layout.words.len() as i64);
                let whole = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, whole_end, len);
                let (inline, copy, after) = (b.create_block(), b.create_block(), b.create_block());
                b.ins().brif(whole, inline, &[], copy, &[]);
                b.switch_to_block(inline);
                let at = b.ins().iadd(frame, pos);
                read_words(&mut b, layout, at, fields);
                b.ins().jump(after, &[]);
                b.switch_to_block(copy);
                let callee = b.ins().iconst(ptr, read_padded as *const () as usize as i64);
                let l = b.ins().iconst(ptr, layout as *const Layout as usize as i64);
                b.ins().call_indirect(padded, callee, &[l, frame, len, pos, fields]);
                b.ins().jump(after, &[]);
                b.switch_to_block(after);
                let one = b.ins().iconst(types::I8, 1);
                b.ins().store(MemFlags::trusted(), one, valid, io.header as i32);
                pos = end;
            }
            let Select::Key { parts, transitions } = &st.select else { unreachable!("checked above") };
            let mut key: Option<Value> = None;
            for (v, w) in parts {
                let bits = w.div_ceil(8) * 8;
                let m = mask_of(*w) as u64 as i64;
                let part = match v {
                    Val::Field(f) => {
                        let x = b.ins().load(types::I64, MemFlags::trusted(), fields, 16 * *f as i32);
                        b.ins().band_imm(x, m)
                    }
                    Val::Const(c) => b.ins().iconst(types::I64, (*c as u64 as i64) & m),
                    _ => unreachable!("checked above"),
                };
                key = Some(match key {
                    None => part,
                    Some(k) => {
                        let k = b.ins().ishl_imm(k, bits as i64);
                        b.ins().bor(k, part)
                    }
                });
            }
            let key = key.unwrap_or_else(|| b.ins().iconst(types::I64, 0));
            let mut matched_all = false;
            for (value, mask, next) in transitions {
                if *mask == 0 {
                    // Matches whatever the key (when its value is 0, as a default's is).
                    if *value == 0 {
                        target(&mut b, &mut blocks, &mut todo, ret, *next, pos);
                        matched_all = true;
                        break;
                    }
                    continue;
                }
                let k = b.ins().band_imm(key, *mask as u64 as i64);
                let hit = b.ins().icmp_imm(IntCC::Equal, k, *value as u64 as i64);
                let (this, other) = (b.create_block(), b.create_block());
                b.ins().brif(hit, this, &[], other, &[]);
                b.switch_to_block(this);
                target(&mut b, &mut blocks, &mut todo, ret, *next, pos);
                b.switch_to_block(other);
            }
            if !matched_all {
                let error = b.ins().iconst(types::I64, no_match);
                b.ins().jump(ret, &[pos, error]);
            }
        }
        b.switch_to_block(ret);
        let (pos, error) = (b.block_params(ret)[0], b.block_params(ret)[1]);
        b.ins().store(MemFlags::trusted(), pos, pos_out, 0);
        b.ins().return_(&[error]);
        b.seal_all_blocks();
        b.finalize();
    }
    let code = finish_one(&mut module, &mut ctx)?;
    // SAFETY: declared with five pointer-sized parameters and an i64 result.
    let f = unsafe { std::mem::transmute::<*const u8, ParseFn>(code) };
    Some((f, Native { module: Some(module) }))
}

/// A layout's native read of the bytes at `pos` when its whole words run past
/// the frame's end: from a zero-padded copy, as `Layout::read`.
unsafe extern "C" fn read_padded(layout: *const Layout, frame: *const u8, len: usize, pos: usize, fields: *mut i128) {
    let layout = &*layout;
    let read = layout.native_read.expect("the parser inlines only layouts with native reads");
    let frame = std::slice::from_raw_parts(frame, len);
    let mut padded = [0u8; 8 * MAX_READ_WORDS];
    let rest = &frame[pos.min(len)..];
    let n = rest.len().min(8 * layout.words.len());
    padded[..n].copy_from_slice(&rest[..n]);
    read(padded.as_ptr(), fields)
}

unsafe extern "C" fn run_op(frame: *mut Frame, op: *const Op) {
    let f = &*frame;
    (*op).run(&mut *f.ex, &*f.st, &mut *f.pkt, &[]);
}

unsafe extern "C" fn test_holds(frame: *mut Frame, test: *const Test) -> u8 {
    let f = &*frame;
    (*test).holds(&*f.ex, &*f.st, &*f.pkt) as u8
}

unsafe extern "C" fn apply_table(frame: *mut Frame, table: *const TableCode) -> *const Edge {
    let f = &*frame;
    (*f.compiled).apply_table(&*table, &mut *f.ex, &*f.st, &mut *f.pkt)
}

/// `apply_table` with the key the native code built (`Gen::table_key`).
unsafe extern "C" fn apply_keyed(frame: *mut Frame, table: *const TableCode, key: *const u128) -> *const Edge {
    let f = &*frame;
    let tc = &*table;
    let key = std::slice::from_raw_parts(key, tc.keys.len());
    // An entry's native action runs with this frame: no frame of its own to fill.
    (*f.compiled).apply_keyed(tc, key, &mut *f.ex, &*f.st, &mut *f.pkt, |code, _, _, args| (code.run)(frame, args.as_ptr()))
}


struct Sigs {
    op: SigRef,
    test: SigRef,
    table: SigRef,
    keyed: SigRef,
}

/// A value in u64: its low 64 bits; with `bound`, the value itself, in `0..=bound`.
#[derive(Clone, Copy)]
struct N {
    v: Value,
    bound: Option<u128>,
}

struct Gen<'a, 'b> {
    prog: &'a Program,
    b: FunctionBuilder<'b>,
    ptr: Type,
    frame: Value,
    fields: Value,
    valid: Value,
    /// An action's argument array (entry actions); None: arguments are known.
    args: Option<Value>,
    /// How many arguments the code read (one past the highest index).
    args_used: usize,
    sigs: Sigs,
    /// Each node's block, once something jumps to it.
    blocks: Vec<Option<Block>>,
    todo: Vec<usize>,
    done: Block,
}

impl Gen<'_, '_> {
    /// The block that runs node `next` (or returns).
    fn target(&mut self, next: Option<usize>) -> Block {
        let Some(n) = next else { return self.done };
        if let Some(b) = self.blocks[n] {
            return b;
        }
        let b = self.b.create_block();
        self.blocks[n] = Some(b);
        self.todo.push(n);
        b
    }

    fn node(&mut self, node: &NodeCode) {
        match node {
            NodeCode::Run(edge) => self.edge(edge),
            NodeCode::Cond { cond, expr, on_true, on_false } => {
                let holds = match self.expr(expr, &[]).filter(|n| n.bound.is_some()) {
                    Some(n) => n.v,
                    None => self.call(self.sigs.test, test_holds as *const () as usize, &[cond as *const Test as usize]).expect("test result"),
                };
                let (t, f) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(holds, t, &[], f, &[]);
                self.b.switch_to_block(t);
                self.edge(on_true);
                self.b.switch_to_block(f);
                self.edge(on_false);
            }
            NodeCode::Table(tc) => {
                let code = self.b.ins().iconst(self.ptr, tc as *const TableCode as i64);
                let taken = match self.table_key(tc) {
                    Some(key) => self.call_with(self.sigs.keyed, apply_keyed as *const () as usize, &[self.frame, code, key]),
                    None => self.call_with(self.sigs.table, apply_table as *const () as usize, &[self.frame, code]),
                }
                .expect("edge");
                let edges: Vec<&Edge> =
                    tc.next_hit.iter().chain(&tc.next_miss).chain(tc.next_by_action.iter().flatten()).chain([&tc.base_default_next]).collect();
                let (last, rest) = edges.split_last().expect("a table has its default edge");
                for edge in rest {
                    let (this, other) = (self.b.create_block(), self.b.create_block());
                    let at = self.b.ins().iconst(self.ptr, *edge as *const Edge as i64);
                    let hit = self.b.ins().icmp(IntCC::Equal, taken, at);
                    self.b.ins().brif(hit, this, &[], other, &[]);
                    self.b.switch_to_block(this);
                    self.edge(edge);
                    self.b.switch_to_block(other);
                }
                self.edge(last);
            }
        }
    }

    /// An edge's primitives (inline where covered), then a jump to its next node.
    fn edge(&mut self, edge: &Edge) {
        let prims: Vec<(&Prim, &[i128])> = edge
            .calls
            .iter()
            .flat_map(|(a, args)| {
                let prims = &self.prog.actions[*a].prims;
                // An action with jumps is one op (`Compiler::jumping_action`): never inline.
                let jumps = prims.iter().any(|p| matches!(p, Prim::Jump(_) | Prim::JumpIfZero(..)));
                prims.iter().filter(move |p| !jumps && !matches!(p, Prim::NoOp)).map(move |p| (p, &**args))
            })
            .collect();
        let aligned = prims.len() == edge.ops.len();
        for (i, op) in edge.ops.iter().enumerate() {
            if !(aligned && self.prim(prims[i].0, prims[i].1)) {
                self.call(self.sigs.op, run_op as *const () as usize, &[op as *const Op as usize]);
            }
        }
        let next = self.target(edge.next);
        self.b.ins().jump(next, &[]);
    }

    /// The key of table `tc` built in a stack slot, as `Compiled::apply_table`
    /// builds it (each part's value, masked, as a u128), and the slot's address;
    /// None when a part is not a field, constant or validity, or its mask is
    /// wider than 64 bits.
    fn table_key(&mut self, tc: &TableCode) -> Option<Value> {
        if tc.keys.is_empty() || tc.keys.len() > SHORT_KEY || tc.keys.iter().any(|(v, m)| *m > u64::MAX as u128 || matches!(v, Val::Local(_) | Val::Fn(_))) {
            return None;
        }
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16 * tc.keys.len() as u32, 4));
        let zero = self.b.ins().iconst(types::I64, 0);
        for (i, (v, m)) in tc.keys.iter().enumerate() {
            let m = *m as u64 as i64;
            let part = match v {
                Val::Const(c) => self.b.ins().iconst(types::I64, *c as u64 as i64 & m),
                Val::Field(f) => {
                    let x = self.b.ins().load(types::I64, MemFlags::trusted(), self.fields, 16 * *f as i32);
                    self.b.ins().band_imm(x, m)
                }
                Val::Valid(h) => {
                    let x = self.b.ins().load(types::I8, MemFlags::trusted(), self.valid, *h as i32);
                    let x = self.b.ins().uextend(types::I64, x);
                    self.b.ins().band_imm(x, m)
                }
                Val::Local(_) | Val::Fn(_) => unreachable!("refused above"),
            };
            self.b.ins().stack_store(part, slot, 16 * i as i32);
            self.b.ins().stack_store(zero, slot, 16 * i as i32 + 8);
        }
        Some(self.b.ins().stack_addr(self.ptr, slot, 0))
    }

    /// Calls `f(frame, args...)`; returns its result, if any.
    fn call(&mut self, sig: SigRef, f: usize, args: &[usize]) -> Option<Value> {
        let mut vals = vec![self.frame];
        vals.extend(args.iter().map(|a| self.b.ins().iconst(self.ptr, *a as i64)));
        self.call_with(sig, f, &vals)
    }

    fn call_with(&mut self, sig: SigRef, f: usize, args: &[Value]) -> Option<Value> {
        let callee = self.b.ins().iconst(self.ptr, f as i64);
        let call = self.b.ins().call_indirect(sig, callee, args);
        self.b.inst_results(call).first().copied()
    }

    /// Branches on whether cell `i` of narrow register `r` exists: on to a
    /// block where the cell's address is the value returned, or to `otherwise`
    /// (with 0 as its argument, if it takes one).
    fn register_cell(&mut self, r: usize, i: Value, otherwise: Block) -> Value {
        let views = self.b.ins().load(self.ptr, MemFlags::trusted(), self.frame, offset_of!(Frame, registers) as i32);
        let at = (r * std::mem::size_of::<CellsView>()) as i32;
        let base = self.b.ins().load(self.ptr, MemFlags::trusted(), views, at + offset_of!(CellsView, base) as i32);
        let len = self.b.ins().load(self.ptr, MemFlags::trusted(), views, at + offset_of!(CellsView, len) as i32);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
        let hit = self.b.create_block();
        let zero = self.b.ins().iconst(types::I64, 0);
        let else_args: Vec<Value> = if self.b.func.dfg.num_block_params(otherwise) > 0 { vec![zero] } else { vec![] };
        self.b.ins().brif(inside, hit, &[], otherwise, &else_args);
        self.b.switch_to_block(hit);
        let offset = self.b.ins().imul_imm(i, 8);
        self.b.ins().iadd(base, offset)
    }

    /// Emits `p` inline; false when it is not covered (nothing it emitted has an effect then).
    fn prim(&mut self, p: &Prim, args: &[i128]) -> bool {
        match p {
            Prim::Assign(LValue::Field(f), e) => self.assign(*f, e, args),
            Prim::RegisterRead(LValue::Field(f), r, idx) => self.assign(*f, &Expr::RegisterRead(*r, Box::new(idx.clone())), args),
            Prim::RegisterWrite(r, idx, val) if self.prog.registers[*r].width <= 64 => {
                let mask = mask_of(self.prog.registers[*r].width);
                let (Some(i), Some(v)) = (self.exact(idx, args), self.expr(strip_mask(val, mask), args)) else { return false };
                let v = self.b.ins().band_imm(v.v, mask as i64);
                // An index out of range writes nothing.
                let after = self.b.create_block();
                let cell = self.register_cell(*r, i, after);
                self.b.ins().store(MemFlags::trusted(), v, cell, 0);
                self.b.ins().jump(after, &[]);
                self.b.switch_to_block(after);
                true
            }
            _ => false,
        }
    }

    /// `field = e` for an unsigned field of at most 64 bits (its low bits are all a write keeps).
    fn assign(&mut self, f: usize, e: &Expr, args: &[i128]) -> bool {
        let (mask, signed) = self.prog.field_masks[f];
        if signed || mask > u64::MAX as u128 {
            return false;
        }
        let Some(n) = self.expr(strip_mask(e, mask), args) else { return false };
        let v = if mask == u64::MAX as u128 { n.v } else { self.b.ins().band_imm(n.v, mask as i64) };
        let zero = self.b.ins().iconst(types::I64, 0);
        let at = 16 * f as i32;
        self.b.ins().store(MemFlags::trusted(), v, self.fields, at);
        self.b.ins().store(MemFlags::trusted(), zero, self.fields, at + 8);
        true
    }

    /// A sub-expression whose u64 value is its value.
    fn exact(&mut self, e: &Expr, args: &[i128]) -> Option<Value> {
        self.expr(e, args).filter(|n| n.bound.is_some()).map(|n| n.v)
    }

    fn konst(&mut self, c: i128) -> N {
        N { v: self.b.ins().iconst(types::I64, c as u64 as i64), bound: u64::try_from(c).ok().map(u128::from) }
    }

    fn boolean(&mut self, cc: IntCC, a: Value, b: Value) -> N {
        let c = self.b.ins().icmp(cc, a, b);
        N { v: self.b.ins().uextend(types::I64, c), bound: Some(1) }
    }

    /// `e` in u64 (see `N`), or None when it needs the 128-bit form.
    fn expr(&mut self, e: &Expr, args: &[i128]) -> Option<N> {
        Some(match e {
            Expr::Const(c) => self.konst(*c),
            Expr::Local(i) => match self.args {
                Some(array) => {
                    self.args_used = self.args_used.max(i + 1);
                    N { v: self.b.ins().load(types::I64, MemFlags::trusted(), array, 16 * *i as i32), bound: None }
                }
                // An edge's arguments are known (`Edge::calls`); a condition has none, as its closure.
                None => self.konst(args.get(*i).copied().unwrap_or(0)),
            },
            Expr::Field(f) => match self.prog.field_masks[*f] {
                (mask, false) if mask <= u64::MAX as u128 => {
                    N { v: self.b.ins().load(types::I64, MemFlags::trusted(), self.fields, 16 * *f as i32), bound: Some(mask) }
                }
                _ => return None,
            },
            Expr::Valid(HeaderRef::Fixed(h)) => {
                let v = self.b.ins().load(types::I8, MemFlags::trusted(), self.valid, *h as i32);
                N { v: self.b.ins().uextend(types::I64, v), bound: Some(1) }
            }
            Expr::Bin(op, a, b) => return self.binary(*op, a, b, args),
            Expr::Not(a) => {
                let a = self.exact(a, args)?;
                let zero = self.b.ins().iconst(types::I64, 0);
                self.boolean(IntCC::Equal, a, zero)
            }
            Expr::D2b(a) => {
                let a = self.expr(a, args)?;
                match a.bound? {
                    1 => a,
                    _ => {
                        let zero = self.b.ins().iconst(types::I64, 0);
                        self.boolean(IntCC::NotEqual, a.v, zero)
                    }
                }
            }
            Expr::BitNot(a) => N { v: { let a = self.expr(a, args)?; self.b.ins().bnot(a.v) }, bound: None },
            Expr::Neg(a) => N { v: { let a = self.expr(a, args)?; self.b.ins().ineg(a.v) }, bound: None },
            Expr::Ternary(c, a, b) => {
                let c = self.exact(c, args)?;
                let (a, b) = (self.expr(a, args)?, self.expr(b, args)?);
                N { v: self.b.ins().select(c, a.v, b.v), bound: a.bound.zip(b.bound).map(|(x, y)| x.max(y)) }
            }
            Expr::RegisterRead(r, idx) if self.prog.registers[*r].width <= 64 => {
                // As `Executor::register_value`: an index out of range reads 0.
                let i = self.exact(idx, args)?;
                let join = self.b.create_block();
                self.b.append_block_param(join, types::I64);
                let cell = self.register_cell(*r, i, join);
                let v = self.b.ins().load(types::I64, MemFlags::trusted(), cell, 0);
                self.b.ins().jump(join, &[v]);
                self.b.switch_to_block(join);
                N { v: self.b.block_params(join)[0], bound: Some(mask_of(self.prog.registers[*r].width)) }
            }
            _ => return None,
        })
    }

    /// As `Compiler::binary64`: the operators whose low 64 bits the operands'
    /// low 64 bits determine take any operands; the others need exact ones.
    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, args: &[i128]) -> Option<N> {
        use BinOp::*;
        let (x, y) = (self.expr(a, args)?, self.expr(b, args)?);
        let fits = |m: u128| (m <= u64::MAX as u128).then_some(m);
        let both = x.bound.zip(y.bound);
        let v = match op {
            Add => return Some(N { v: self.b.ins().iadd(x.v, y.v), bound: both.and_then(|(p, q)| fits(p + q)) }),
            Sub => return Some(N { v: self.b.ins().isub(x.v, y.v), bound: None }),
            Mul => return Some(N { v: self.b.ins().imul(x.v, y.v), bound: both.and_then(|(p, q)| p.checked_mul(q)).and_then(fits) }),
            BitAnd => {
                let bound = match (x.bound, y.bound) {
                    (Some(p), Some(q)) => Some(p.min(q)),
                    (Some(p), None) | (None, Some(p)) => Some(p),
                    (None, None) => None,
                };
                return Some(N { v: self.b.ins().band(x.v, y.v), bound });
            }
            BitOr => return Some(N { v: self.b.ins().bor(x.v, y.v), bound: both.map(|(p, q)| cover(p.max(q))) }),
            BitXor => return Some(N { v: self.b.ins().bxor(x.v, y.v), bound: both.map(|(p, q)| cover(p.max(q))) }),
            Shl | Shr => {
                y.bound?;
                let shift = match b {
                    Expr::Const(c) => u64::try_from(*c).ok(),
                    _ => None,
                };
                let (moved, bound) = if op == Shl {
                    (self.b.ins().ishl(x.v, y.v), x.bound.zip(shift).and_then(|(p, c)| (c < 64).then(|| p << c)).and_then(fits))
                } else {
                    let p = x.bound?;
                    let bound = match shift {
                        Some(c) if c < 64 => p >> c,
                        Some(_) => 0,
                        None => p,
                    };
                    (self.b.ins().ushr(x.v, y.v), Some(bound))
                };
                // Cranelift takes shift amounts modulo 64; 64 and more shift everything out.
                let in_range = self.b.ins().icmp_imm(IntCC::UnsignedLessThan, y.v, 64);
                let zero = self.b.ins().iconst(types::I64, 0);
                return Some(N { v: self.b.ins().select(in_range, moved, zero), bound });
            }
            TwoCompMod | SatCast | USatCast => return None,
            _ => {
                both?;
                match op {
                    Eq => IntCC::Equal,
                    Ne => IntCC::NotEqual,
                    Gt => IntCC::UnsignedGreaterThan,
                    Ge => IntCC::UnsignedGreaterThanOrEqual,
                    Lt => IntCC::UnsignedLessThan,
                    Le => IntCC::UnsignedLessThanOrEqual,
                    And | Or => {
                        let zero = self.b.ins().iconst(types::I64, 0);
                        let (p, q) = (self.b.ins().icmp(IntCC::NotEqual, x.v, zero), self.b.ins().icmp(IntCC::NotEqual, y.v, zero));
                        let c = if op == And { self.b.ins().band(p, q) } else { self.b.ins().bor(p, q) };
                        return Some(N { v: self.b.ins().uextend(types::I64, c), bound: Some(1) });
                    }
                    _ => {
                        // Div, Mod: by zero gives 0, as `arith` (Cranelift would trap).
                        let is_zero = self.b.ins().icmp_imm(IntCC::Equal, y.v, 0);
                        let one = self.b.ins().iconst(types::I64, 1);
                        let divisor = self.b.ins().select(is_zero, one, y.v);
                        let r = if op == Div { self.b.ins().udiv(x.v, divisor) } else { self.b.ins().urem(x.v, divisor) };
                        let zero = self.b.ins().iconst(types::I64, 0);
                        return Some(N { v: self.b.ins().select(is_zero, zero, r), bound: x.bound });
                    }
                }
            }
        };
        Some(self.boolean(v, x.v, y.v))
    }
}
