//! The compiled pipeline. At load time the program's parser, controls,
//! actions, expressions, checksums and deparser become closures and
//! precomputed layouts, so a packet no longer walks the JSON-derived tree:
//! expressions are closures specialised by operand kind with constants folded,
//! in u64 arithmetic wherever the 128-bit value provably fits or only its low
//! 64 bits are kept (`expr64`); plain assignments run inline; the actions of
//! keyless constant tables and action calls get their arguments as constants,
//! and such nodes that only one node leads to (p4c's `tbl_act_N`) join that
//! node's edge; headers are read and written through 64-bit words at offsets
//! computed once; checksums hash a layout computed once (one over exactly its
//! header's other fields, as IPv4's, sums the header's deparsed bytes instead).
//!
//! The interpreter (`exec.rs`) stays the reference and the fallback: the
//! compiled code works on the same `PacketState` with the same results as the
//! 128-bit semantics, and every piece it does not cover (stacks, unions, varbits,
//! lookahead, value sets, the rarer primitives and expressions, a looping
//! control graph) runs through the interpreter's own function for that piece.

use crate::exec::{arith, get_opt, run_parser, set_opt, sign_extend, Env, Executor, PacketState, MAX_CONTROL_STEPS};
use crate::hash;
use crate::load::mask_of;
use crate::program::*;
use crate::state::{EntryAction, State};
use rand_core::RngCore;
use std::sync::atomic::Ordering;
use std::sync::Arc;

type ExprFn = Box<dyn Fn(&Executor, &State, &PacketState, &[i128]) -> i128 + Send + Sync>;
type OpFn = Box<dyn Fn(&mut Executor, &State, &mut PacketState, &[i128]) + Send + Sync>;

/// One primitive: the plain assignments inline (no call), the rest a closure.
pub(crate) enum Op {
    /// field = constant (already truncated)
    Set(usize, i128),
    /// field = other field & mask
    Copy(usize, usize, u128),
    /// field = action parameter & mask
    Param(usize, usize, u128),
    /// Consecutive `Param`s (an entry action's `field = parameter` run): one op, one loop.
    Params(Box<[(usize, usize, u128)]>),
    Call(OpFn),
}

impl Op {
    #[inline(always)]
    pub(crate) fn run(&self, ex: &mut Executor, st: &State, pkt: &mut PacketState, args: &[i128]) {
        match self {
            Op::Set(f, c) => pkt.fields[*f] = *c,
            Op::Copy(f, x, mask) => pkt.fields[*f] = (pkt.fields[*x] as u128 & mask) as i128,
            Op::Param(f, i, mask) => pkt.fields[*f] = (args.get(*i).copied().unwrap_or(0) as u128 & mask) as i128,
            Op::Params(moves) => {
                for (f, i, mask) in moves.iter() {
                    pkt.fields[*f] = (args.get(*i).copied().unwrap_or(0) as u128 & mask) as i128;
                }
            }
            Op::Call(op) => op(ex, st, pkt, args),
        }
    }
}

/// An expression operand: leaves are read inline, the rest is a closure.
pub(crate) enum Val {
    Const(i128),
    Field(usize),
    Local(usize),
    /// Validity of a fixed header.
    Valid(usize),
    Fn(ExprFn),
}

impl Val {
    #[inline(always)]
    fn get(&self, ex: &Executor, st: &State, pkt: &PacketState, locals: &[i128]) -> i128 {
        match self {
            Val::Const(v) => *v,
            Val::Field(f) => pkt.fields[*f],
            Val::Local(i) => locals.get(*i).copied().unwrap_or(0),
            Val::Valid(h) => pkt.valid[*h] as i128,
            Val::Fn(f) => f(ex, st, pkt, locals),
        }
    }
}

/// A condition (a value tested against 0).
pub(crate) enum Test {
    One(Test64),
    /// `a && b`, `a || b` of two exact u64 conditions, short-circuited in place.
    And(Test64, Test64),
    Or(Test64, Test64),
    Wide(Val),
}

/// An exact u64 condition.
pub(crate) enum Test64 {
    Fn(Expr64Fn),
    Valid(usize),
}

impl Test64 {
    #[inline(always)]
    fn holds(&self, ex: &Executor, st: &State, pkt: &PacketState) -> bool {
        match self {
            Test64::Fn(f) => f(ex, st, pkt, &[]) != 0,
            Test64::Valid(h) => pkt.valid[*h],
        }
    }
}

impl Test {
    #[inline(always)]
    pub(crate) fn holds(&self, ex: &Executor, st: &State, pkt: &PacketState) -> bool {
        match self {
            Test::One(t) => t.holds(ex, st, pkt),
            Test::And(a, b) => a.holds(ex, st, pkt) && b.holds(ex, st, pkt),
            Test::Or(a, b) => a.holds(ex, st, pkt) || b.holds(ex, st, pkt),
            Test::Wide(v) => v.get(ex, st, pkt, &[]) != 0,
        }
    }
}

/// Runs of two or more `Op::Param` become one `Op::Params` (none of them can exit).
fn fuse_params(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    let mut run: Vec<(usize, usize, u128)> = Vec::new();
    let flush = |run: &mut Vec<(usize, usize, u128)>, out: &mut Vec<Op>| match run.len() {
        0 => {}
        1 => {
            let (f, i, m) = run[0];
            out.push(Op::Param(f, i, m));
            run.clear();
        }
        _ => out.push(Op::Params(std::mem::take(run).into_boxed_slice())),
    };
    for op in ops {
        match op {
            Op::Param(f, i, m) => run.push((f, i, m)),
            op => {
                flush(&mut run, &mut out);
                out.push(op);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A binary operator over two operands, specialised on their kinds.
fn bin<F>(a: Val, b: Val, f: F) -> Val
where
    F: Fn(i128, i128) -> i128 + Copy + Send + Sync + 'static,
{
    match (a, b) {
        (Val::Const(x), Val::Const(y)) => Val::Const(f(x, y)),
        (Val::Field(x), Val::Const(y)) => Val::Fn(Box::new(move |_, _, p, _| f(p.fields[x], y))),
        (Val::Field(x), Val::Field(y)) => Val::Fn(Box::new(move |_, _, p, _| f(p.fields[x], p.fields[y]))),
        (Val::Fn(x), Val::Const(y)) => Val::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l), y))),
        (Val::Fn(x), Val::Field(y)) => Val::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l), p.fields[y]))),
        (a, b) => Val::Fn(Box::new(move |e, s, p, l| f(a.get(e, s, p, l), b.get(e, s, p, l)))),
    }
}

fn binary(op: BinOp, a: Val, b: Val) -> Val {
    macro_rules! ops {
        ($($name:ident),*) => {
            match op {
                $(BinOp::$name => bin(a, b, |x, y| arith(BinOp::$name, x, y)),)*
                BinOp::And => Val::Fn(Box::new(move |e, s, p, l| (a.get(e, s, p, l) != 0 && b.get(e, s, p, l) != 0) as i128)),
                BinOp::Or => Val::Fn(Box::new(move |e, s, p, l| (a.get(e, s, p, l) != 0 || b.get(e, s, p, l) != 0) as i128)),
            }
        };
    }
    ops!(Add, Sub, Mul, Div, Mod, Shl, Shr, Eq, Ne, Gt, Ge, Lt, Le, BitAnd, BitOr, BitXor, TwoCompMod, SatCast, USatCast)
}

fn unary(a: Val, f: impl Fn(i128) -> i128 + Copy + Send + Sync + 'static) -> Val {
    match a {
        Val::Const(x) => Val::Const(f(x)),
        Val::Field(x) => Val::Fn(Box::new(move |_, _, p, _| f(p.fields[x]))),
        Val::Valid(h) => Val::Fn(Box::new(move |_, _, p, _| f(p.valid[h] as i128))),
        a => Val::Fn(Box::new(move |e, s, p, l| f(a.get(e, s, p, l)))),
    }
}

/// A u64 expression closure (see `Compiler::expr64`).
type Expr64Fn = Box<dyn Fn(&Executor, &State, &PacketState, &[i128]) -> u64 + Send + Sync>;

/// An expression operand evaluated in u64: leaves inline, the rest a closure.
enum V64 {
    Const(u64),
    Field(usize),
    /// Validity of a fixed header.
    Valid(usize),
    Fn(Expr64Fn),
}

impl V64 {
    #[inline(always)]
    fn get(&self, ex: &Executor, st: &State, pkt: &PacketState, locals: &[i128]) -> u64 {
        match self {
            V64::Const(v) => *v,
            V64::Field(f) => pkt.fields[*f] as u64,
            V64::Valid(h) => pkt.valid[*h] as u64,
            V64::Fn(f) => f(ex, st, pkt, locals),
        }
    }
}

/// An expression compiled to u64 arithmetic. Its u64 value always equals the
/// low 64 bits of the interpreter's 128-bit value; with `bound`, the 128-bit
/// value itself is always in `0..=bound` (so the u64 value is the value).
struct Narrow64 {
    v: V64,
    bound: Option<u128>,
}

/// A binary operator over two u64 operands, specialised on their kinds.
fn bin64<F>(a: V64, b: V64, f: F) -> V64
where
    F: Fn(u64, u64) -> u64 + Copy + Send + Sync + 'static,
{
    match (a, b) {
        (V64::Const(x), V64::Const(y)) => V64::Const(f(x, y)),
        (V64::Field(x), V64::Const(y)) => V64::Fn(Box::new(move |_, _, p, _| f(p.fields[x] as u64, y))),
        (V64::Const(x), V64::Field(y)) => V64::Fn(Box::new(move |_, _, p, _| f(x, p.fields[y] as u64))),
        (V64::Field(x), V64::Field(y)) => V64::Fn(Box::new(move |_, _, p, _| f(p.fields[x] as u64, p.fields[y] as u64))),
        (V64::Fn(x), V64::Const(y)) => V64::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l), y))),
        (V64::Const(x), V64::Fn(y)) => V64::Fn(Box::new(move |e, s, p, l| f(x, y(e, s, p, l)))),
        (V64::Fn(x), V64::Field(y)) => V64::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l), p.fields[y] as u64))),
        (V64::Field(x), V64::Fn(y)) => V64::Fn(Box::new(move |e, s, p, l| f(p.fields[x] as u64, y(e, s, p, l)))),
        (V64::Fn(x), V64::Fn(y)) => V64::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l), y(e, s, p, l)))),
        (a, b) => V64::Fn(Box::new(move |e, s, p, l| f(a.get(e, s, p, l), b.get(e, s, p, l)))),
    }
}

fn unary64(a: V64, f: impl Fn(u64) -> u64 + Copy + Send + Sync + 'static) -> V64 {
    match a {
        V64::Const(x) => V64::Const(f(x)),
        V64::Field(x) => V64::Fn(Box::new(move |_, _, p, _| f(p.fields[x] as u64))),
        V64::Fn(x) => V64::Fn(Box::new(move |e, s, p, l| f(x(e, s, p, l)))),
        a => V64::Fn(Box::new(move |e, s, p, l| f(a.get(e, s, p, l)))),
    }
}

/// The all-ones mask covering every value up to `bound`.
pub(crate) fn cover(bound: u128) -> u128 {
    u128::MAX >> bound.leading_zeros()
}

/// `e` without outer `& m` whose `m` keeps every bit of `keep` (a write of the
/// result masks to `keep` anyway).
pub(crate) fn strip_mask(mut e: &Expr, keep: u128) -> &Expr {
    loop {
        match e {
            Expr::Bin(BinOp::BitAnd, a, m) | Expr::Bin(BinOp::BitAnd, m, a) if matches!(**m, Expr::Const(c) if c as u128 & keep == keep) => e = a,
            _ => return e,
        }
    }
}

#[derive(Clone, Copy)]
enum Src {
    Field(usize),
    Const(u128),
}

/// A field (or constant) laid out over big-endian 64-bit words: bit offset
/// `off` from the start, `width` bits; in word k it sits shifted by
/// 64 * (k + 1) - off - width (left when positive, right when negative).
#[derive(Clone, Copy)]
pub(crate) struct Part {
    src: Src,
    mask: u128,
    shift: i32,
}

/// Fields read with `signed`/`width` and their (word, shift) pieces (at most 3: width <= 128).
#[derive(Clone, Copy)]
pub(crate) struct FieldRead {
    pub(crate) field: usize,
    pub(crate) width: u32,
    pub(crate) signed: bool,
    pub(crate) mask: u128,
    pub(crate) pieces: [(u8, i8); 3],
    pub(crate) n: u8,
}

/// Headers up to this many 64-bit words are read through words (else the interpreter extracts).
pub(crate) const MAX_READ_WORDS: usize = 8;

/// What a field of up to 64 bits contributes to one word when written, in
/// u64 arithmetic without a branch.
pub(crate) struct Narrow {
    pub(crate) field: usize,
    pub(crate) mask: u64,
    pub(crate) shr: u32,
    pub(crate) shl: u32,
}

/// A word to write: the constants' bits, OR-ed with the fields' parts (wider
/// fields through u128).
pub(crate) struct Word {
    pub(crate) consts: u64,
    pub(crate) narrow: Vec<Narrow>,
    pub(crate) wide: Vec<Part>,
}

/// A field of up to 64 bits that ends in word `word` at `shift` bits from its
/// end (bits above spill into the word before): read as
/// `((before << 1 << (63 - shift)) | (word >> shift)) & mask`.
struct QuickRead {
    word: usize,
    shift: u32,
    mask: u64,
}

/// Items laid out back to back over `bytes` bytes: written word by word, read field by field.
pub(crate) struct Layout {
    pub(crate) bytes: usize,
    pub(crate) words: Vec<Word>,
    pub(crate) reads: Vec<FieldRead>,
    /// When every read field is unsigned, at most 64 bits wide and the fields
    /// are consecutive: the first field and one quick read per field.
    quick: Option<(usize, Vec<QuickRead>)>,
    /// `write` and `read` as native code (`jit::layouts`), where built.
    pub(crate) native_write: Option<crate::jit::WriteFn>,
    pub(crate) native_read: Option<crate::jit::ReadFn>,
}

impl Layout {
    /// None if an item is wider than 128 bits or empty.
    fn new(items: &[(Src, u32, bool)]) -> Option<Layout> {
        let total: usize = items.iter().map(|i| i.1 as usize).sum();
        let bytes = total.div_ceil(8);
        let mut words: Vec<Vec<Part>> = (0..bytes.div_ceil(8)).map(|_| Vec::new()).collect();
        if bytes.div_ceil(8) > u8::MAX as usize {
            return None; // word indices are bytes; no header is 2 KiB
        }
        let mut reads = Vec::new();
        let mut off = 0usize;
        for (src, width, signed) in items {
            let w = *width as usize;
            if w == 0 || w > 128 {
                return None;
            }
            let mask = mask_of(*width);
            let mut read = FieldRead { field: 0, width: *width, signed: *signed, mask, pieces: [(0, 0); 3], n: 0 };
            for k in off / 64..=(off + w - 1) / 64 {
                let shift = (64 * (k + 1)) as i32 - (off + w) as i32;
                let src = match src {
                    Src::Const(c) => Src::Const(c & mask),
                    f => *f,
                };
                words[k].push(Part { src, mask, shift });
                read.pieces[read.n as usize] = (k as u8, shift as i8);
                read.n += 1;
            }
            if let Src::Field(f) = src {
                read.field = *f;
                reads.push(read);
            }
            off += w;
        }
        let words = words
            .into_iter()
            .map(|parts| {
                let mut word = Word { consts: 0, narrow: Vec::new(), wide: Vec::new() };
                for p in parts {
                    match p.src {
                        Src::Const(c) => word.consts |= if p.shift >= 0 { (c << p.shift) as u64 } else { (c >> -p.shift) as u64 },
                        Src::Field(field) if p.mask <= u64::MAX as u128 => word.narrow.push(Narrow {
                            field,
                            mask: p.mask as u64,
                            shr: (-p.shift).max(0) as u32,
                            shl: p.shift.max(0) as u32,
                        }),
                        Src::Field(_) => word.wide.push(p),
                    }
                }
                word
            })
            .collect();
        let quick = Self::quick_reads(&reads);
        Some(Layout { bytes, words, reads, quick, native_write: None, native_read: None })
    }

    fn quick_reads(reads: &[FieldRead]) -> Option<(usize, Vec<QuickRead>)> {
        let first = reads.first()?.field;
        let quick = reads
            .iter()
            .enumerate()
            .map(|(i, r)| {
                // The last piece ends the field inside its word (shift >= 0).
                let (k, sh) = r.pieces[r.n as usize - 1];
                (r.field == first + i && r.width <= 64 && sh >= 0 && !r.signed)
                    .then_some(QuickRead { word: k as usize, shift: sh as u32, mask: r.mask as u64 })
            })
            .collect::<Option<Vec<_>>>()?;
        Some((first, quick))
    }

    /// Word `k` of the layout with the packet's values.
    #[inline(always)]
    fn word(&self, k: usize, pkt: &PacketState) -> u64 {
        let w = &self.words[k];
        let mut acc = w.consts;
        for p in &w.narrow {
            acc |= ((pkt.fields[p.field] as u64 & p.mask) >> p.shr) << p.shl;
        }
        for p in &w.wide {
            let v = match p.src {
                Src::Field(f) => pkt.fields[f] as u128 & p.mask,
                Src::Const(c) => c,
            };
            acc |= if p.shift >= 0 { (v << p.shift) as u64 } else { (v >> -p.shift) as u64 };
        }
        acc
    }

    /// The Internet checksum (as `hash::csum16` over the written bytes) from the words directly.
    fn csum16(&self, pkt: &PacketState) -> u64 {
        let mut sum = 0u64;
        for k in 0..self.words.len() {
            let w = self.word(k, pkt);
            sum += (w >> 48) + ((w >> 32) & 0xffff) + ((w >> 16) & 0xffff) + (w & 0xffff);
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16) as u64
    }

    /// Appends the items' bytes to `out`.
    #[inline]
    fn write(&self, pkt: &PacketState, out: &mut Vec<u8>) {
        if let Some(write) = self.native_write {
            let len = out.len();
            out.reserve(8 * self.words.len());
            // SAFETY: `write` stores the layout's whole words, within the capacity
            // just reserved, of which the first `bytes` are the layout's; it reads
            // fields of the program `pkt` is laid out for.
            unsafe {
                write(pkt.fields.as_ptr(), out.as_mut_ptr().add(len));
                out.set_len(len + self.bytes);
            }
            return;
        }
        let end = out.len() + self.bytes;
        for k in 0..self.words.len() {
            out.extend_from_slice(&self.word(k, pkt).to_be_bytes());
        }
        out.truncate(end); // the last word's bytes past the layout
    }

    /// Reads the fields from `frame` at byte `base` (the caller checked the bytes are there).
    #[inline]
    fn read(&self, frame: &[u8], base: usize, pkt: &mut PacketState) {
        if let Some(read) = self.native_read {
            let whole = 8 * self.words.len();
            let fields = pkt.fields.as_mut_ptr();
            // SAFETY: `read` loads the layout's whole words from the pointer it gets
            // (the frame, or a zero-padded copy of its last bytes) and stores fields
            // of the program `pkt` is laid out for.
            match frame.get(base..base + whole) {
                Some(words) => unsafe { read(words.as_ptr(), fields) },
                None => {
                    let mut padded = [0u8; 8 * MAX_READ_WORDS];
                    let rest = &frame[base.min(frame.len())..];
                    let n = rest.len().min(whole);
                    padded[..n].copy_from_slice(&rest[..n]);
                    unsafe { read(padded.as_ptr(), fields) }
                }
            }
            return;
        }
        // words[k + 1] is the layout's word k; words[0] stays 0 (nothing before word 0).
        let mut words = [0u64; MAX_READ_WORDS + 1];
        for (k, w) in words[1..].iter_mut().enumerate().take(self.words.len()) {
            let at = base + 8 * k;
            *w = match frame.get(at..at + 8) {
                Some(b) => u64::from_be_bytes(b.try_into().unwrap()),
                None => {
                    let mut t = [0u8; 8];
                    let rest = &frame[at.min(frame.len())..];
                    t[..rest.len().min(8)].copy_from_slice(&rest[..rest.len().min(8)]);
                    u64::from_be_bytes(t)
                }
            };
        }
        if let Some((first, quick)) = &self.quick {
            for (dst, q) in pkt.fields[*first..*first + quick.len()].iter_mut().zip(quick) {
                let k = q.word % MAX_READ_WORDS;
                let (before, word) = (words[k], words[k + 1]);
                *dst = ((((before << 1) << (63 - q.shift)) | (word >> q.shift)) & q.mask) as i128;
            }
            return;
        }
        for r in &self.reads {
            let mut v = 0u128;
            for &(k, s) in &r.pieces[..r.n as usize] {
                let word = words[k as usize + 1];
                v |= if s >= 0 { (word >> s) as u128 } else { (word as u128) << -(s as i32) };
            }
            v &= r.mask;
            pkt.fields[r.field] = if r.signed { sign_extend(v, r.width) } else { v as i128 };
        }
    }
}

/// The Internet checksum of `bytes` (even length) without the 16-bit word at `skip`.
fn csum16_without(bytes: &[u8], skip: usize) -> u16 {
    let mut sum: u64 = bytes.chunks_exact(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u64).sum();
    sum -= u16::from_be_bytes([bytes[skip], bytes[skip + 1]]) as u64;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Where checksum `i` can be computed over its header's deparsed bytes: a
/// 16-bit ones' complement sum over exactly the header's other fields in order
/// (dropping a 16-bit-aligned word from an even-length header leaves the same
/// 16-bit words), the header once in the deparser, and no other checksum
/// reading its header or updating a field of it (so computing it last changes nothing).
fn in_place_update(prog: &Program, i: usize, deparser: &[HeaderIo]) -> Option<(usize, usize)> {
    let c = &prog.checksums[i];
    let calc = &prog.calculations[c.calc];
    let h = prog.field_locs[c.target].header;
    let hdr = &prog.headers[h];
    let fields = &prog.header_types[hdr.type_idx].fields;
    let mut others = (hdr.first_field..hdr.first_field + hdr.num_fields).filter(|f| *f != c.target);
    let exactly_others = calc.inputs.len() == hdr.num_fields - 1 && calc.inputs.iter().all(|x| matches!(x, CalcInput::Field(f) if Some(*f) == others.next()));
    if calc.algo != HashAlgo::Csum16 || !exactly_others || prog.field_info[c.target] != (16, false) {
        return None;
    }
    let bit = fields[..c.target - hdr.first_field].iter().map(|f| f.width as usize).sum::<usize>();
    let total: usize = fields.iter().map(|f| f.width as usize).sum();
    let pos = deparser.iter().position(|io| io.header == h)?;
    let in_h = |f: &usize| prog.field_locs[*f].header == h;
    let alone = prog.checksums.iter().enumerate().filter(|(j, _)| *j != i).all(|(j, o)| {
        !in_h(&o.target)
            && prog.calculations[o.calc].inputs.iter().all(|x| match x {
                CalcInput::Field(f) => !in_h(f),
                CalcInput::Varbit(x) | CalcInput::Header(x) => *x != h,
                CalcInput::Const(..) => true,
                // The payload input writes the headers deparsed after the last named one.
                CalcInput::Payload => false,
            })
            && (j < i || o.cond.as_ref().is_none_or(|e| !may_read_header(prog, e, h)))
    });
    (bit % 16 == 0 && total % 16 == 0 && alone && deparser.iter().filter(|io| io.header == h).count() == 1).then_some((pos, bit / 8))
}

/// Whether `e` may read a field of header `h` (true for expressions not inspected).
fn may_read_header(prog: &Program, e: &Expr, h: usize) -> bool {
    match e {
        Expr::Const(_) | Expr::Valid(HeaderRef::Fixed(_)) => false,
        Expr::Field(f) => prog.field_locs[*f].header == h,
        Expr::Not(a) | Expr::BitNot(a) | Expr::Neg(a) | Expr::D2b(a) => may_read_header(prog, a, h),
        Expr::Bin(_, a, b) => may_read_header(prog, a, h) || may_read_header(prog, b, h),
        Expr::Ternary(c, a, b) => [c, a, b].iter().any(|x| may_read_header(prog, x, h)),
        _ => true,
    }
}

/// A fixed-size header's layout.
pub(crate) struct HeaderIo {
    pub(crate) header: usize,
    /// Neither metadata nor a union member: extracting it only sets its validity.
    pub(crate) plain: bool,
    pub(crate) layout: Layout,
}

fn header_io(prog: &Program, h: usize) -> Option<HeaderIo> {
    let hdr = &prog.headers[h];
    let ht = &prog.header_types[hdr.type_idx];
    if ht.varbit_index.is_some() || ht.fixed_bits % 8 != 0 {
        return None;
    }
    let items: Vec<_> = ht.fields.iter().enumerate().map(|(i, f)| (Src::Field(hdr.first_field + i), f.width, f.signed)).collect();
    Some(HeaderIo { header: h, plain: !hdr.metadata && hdr.union.is_none(), layout: Layout::new(&items)? })
}


pub(crate) enum Select {
    /// Concatenated byte-padded key parts as one number, transitions in order as
    /// (value, mask, next state); no hit is NoMatch.
    Key { parts: Vec<(Val, u32)>, transitions: Vec<(u128, u128, Option<usize>)> },
    Interpreted,
}

pub(crate) enum ParseOp {
    Extract(HeaderIo),
    Interpreted(ParserOp),
}

pub(crate) struct ParseStateCode {
    pub(crate) ops: Vec<ParseOp>,
    pub(crate) select: Select,
}

enum Calc {
    /// Fields of the target's header and constants, at load-time offsets.
    Laid { algo: HashAlgo, layout: Layout },
    Interpreted(usize),
}

struct ChecksumCode {
    target: usize,
    target_header: usize,
    cond: Option<Val>,
    calc: Calc,
    /// An update computed over the deparsed bytes instead (`in_place_update`):
    /// the header's position in the deparser and the checksum's byte offset in it.
    in_place: Option<(usize, usize)>,
}

/// A way out of a node: the fixed runs (keyless constant tables, action calls)
/// that only this node leads to, fused along their chain, then the next node
/// (`usize` indexes `PipelineCode::nodes`).
pub(crate) struct Edge {
    pub(crate) ops: Vec<Op>,
    /// The action calls (action, arguments) whose primitives `ops` are, in order.
    pub(crate) calls: Vec<(usize, Box<[i128]>)>,
    pub(crate) next: Option<usize>,
}

/// A control-graph node.
pub(crate) enum NodeCode {
    /// A fixed run that more than one node leads to (or the first node).
    Run(Edge),
    Cond { cond: Test, expr: Expr, on_true: Edge, on_false: Edge },
    Table(TableCode),
}

pub(crate) struct TableCode {
    table: usize,
    /// The lpm key of a table indexed per prefix length (`state::lpm_index`).
    lpm: Option<usize>,
    /// Each key part and its mask.
    pub(crate) keys: Vec<(Val, u128)>,
    pub(crate) next_hit: Option<Edge>,
    pub(crate) next_miss: Option<Edge>,
    pub(crate) next_by_action: Vec<Option<Edge>>,
    pub(crate) base_default_next: Edge,
}

/// Table keys of up to this many fields are built on the stack.
pub(crate) const SHORT_KEY: usize = 4;

pub(crate) struct PipelineCode {
    pub(crate) nodes: Vec<NodeCode>,
    pub(crate) init: Option<usize>,
    /// The graph as native code (`jit.rs`); None runs the node loop.
    jit: Option<crate::jit::Control>,
}

/// How much of the program runs through the interpreter (reported at load).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    pub primitives: usize,
    pub interpreted_primitives: usize,
    pub parser_ops: usize,
    pub interpreted_parser_ops: usize,
    pub interpreted_selects: usize,
    pub interpreted_checksums: usize,
    pub interpreted_deparser: bool,
}

/// The compiled form of a program (built once per executor).
pub(crate) struct Compiled {
    prog: Arc<Program>,
    /// Per action, for table entries (arguments at run time).
    actions: Vec<Vec<Op>>,
    /// The same as native code where it covers them (`jit::actions`), and its module.
    native_actions: Vec<Option<crate::jit::ActionCode>>,
    _native_actions: Option<crate::jit::Native>,
    /// Whether any primitive can end the control early (exit, assert).
    may_exit: bool,
    ingress: PipelineCode,
    egress: PipelineCode,
    parser: Vec<ParseStateCode>,
    checksums: Vec<(ChecksumCode, bool, bool)>,
    /// None: the deparser has a header the layouts do not cover.
    deparser: Option<Vec<HeaderIo>>,
    /// The native code of the parser's and the deparser's header layouts.
    _layouts: Option<crate::jit::Native>,
    /// The whole parser as native code (`jit::parser`), where it covers every state it reaches.
    native_parser: Option<(crate::jit::ParseFn, crate::jit::Native)>,
    /// The whole deparser as native code (`jit::deparser`) and the bytes it may
    /// write (its headers' whole words), where it covers every header.
    native_deparser: Option<(crate::jit::DeparseFn, usize, crate::jit::Native)>,
    pub(crate) coverage: Coverage,
}

struct Compiler {
    prog: Arc<Program>,
    cov: Coverage,
    /// The arguments of the call being compiled, when known at load time.
    fixed_args: Option<Box<[i128]>>,
}

/// Whether the interpreter's value of `e` is always 0 or 1.
fn is_bool(e: &Expr) -> bool {
    use BinOp::*;
    matches!(e, Expr::Valid(_) | Expr::ValidUnion(_) | Expr::Not(_) | Expr::D2b(_) | Expr::VarbitEq(..))
        || matches!(e, Expr::Bin(Eq | Ne | Gt | Ge | Lt | Le | And | Or, _, _))
}

impl Compiler {
    fn expr(&self, e: &Expr) -> Val {
        match e {
            Expr::Const(v) => Val::Const(*v),
            Expr::Field(f) => Val::Field(*f),
            Expr::Local(i) => match &self.fixed_args {
                Some(args) => Val::Const(args.get(*i).copied().unwrap_or(0)),
                None => Val::Local(*i),
            },
            Expr::Bin(op, a, b) => binary(*op, self.expr(a), self.expr(b)),
            Expr::Valid(HeaderRef::Fixed(h)) => Val::Valid(*h),
            Expr::Not(a) => unary(self.expr(a), |v| (v == 0) as i128),
            // d2b of a value that is already 0 or 1 is that value.
            Expr::D2b(a) if is_bool(a) => self.expr(a),
            Expr::D2b(a) => unary(self.expr(a), |v| (v != 0) as i128),
            Expr::BitNot(a) => unary(self.expr(a), |v| !v),
            Expr::Neg(a) => unary(self.expr(a), |v| v.wrapping_neg()),
            Expr::Ternary(c, a, b) => {
                let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
                Val::Fn(Box::new(move |e, s, p, l| if c.get(e, s, p, l) != 0 { a.get(e, s, p, l) } else { b.get(e, s, p, l) }))
            }
            Expr::LastUnionStackIndex(s) => {
                let s = *s;
                Val::Fn(Box::new(move |_, _, p, _| p.union_stack_next[s] as i128 - 1))
            }
            Expr::RegisterRead(r, idx) => {
                let (r, idx) = (*r, self.expr(idx));
                Val::Fn(Box::new(move |e, s, p, l| usize::try_from(idx.get(e, s, p, l)).ok().and_then(|i| s.registers[r].get(i)).unwrap_or(0)))
            }
            _ => {
                let (e, fixed) = (e.clone(), self.fixed_args.clone());
                Val::Fn(Box::new(move |ex, st, p, l| ex.eval(&Env { st, locals: fixed.as_deref().unwrap_or(l), look: None }, p, &e)))
            }
        }
    }

    /// `e` in u64 arithmetic (see `Narrow64`), or None when its top node needs
    /// the 128-bit form (wide or signed fields, operators whose 128-bit value the
    /// low 64 bits do not determine).
    fn expr64(&self, e: &Expr) -> Option<Narrow64> {
        let exact = |v: V64, bound: u128| Some(Narrow64 { v, bound: Some(bound) });
        match e {
            Expr::Const(c) => Some(Narrow64 { v: V64::Const(*c as u64), bound: u64::try_from(*c).ok().map(u128::from) }),
            Expr::Field(f) => match self.prog.field_masks[*f] {
                (mask, false) if mask <= u64::MAX as u128 => exact(V64::Field(*f), mask),
                _ => None,
            },
            Expr::Local(i) => match &self.fixed_args {
                Some(args) => self.expr64(&Expr::Const(args.get(*i).copied().unwrap_or(0))),
                None => {
                    let i = *i;
                    Some(Narrow64 { v: V64::Fn(Box::new(move |_, _, _, l| l.get(i).copied().unwrap_or(0) as u64)), bound: None })
                }
            },
            Expr::Valid(HeaderRef::Fixed(h)) => exact(V64::Valid(*h), 1),
            Expr::Bin(op, a, b) => self.binary64(*op, a, b),
            Expr::Not(a) => exact(unary64(self.exact64(a)?, |x| (x == 0) as u64), 1),
            Expr::D2b(a) => {
                let a = self.sub64(a);
                match a.bound {
                    Some(1) => Some(a),
                    Some(_) => exact(unary64(a.v, |x| (x != 0) as u64), 1),
                    None => None,
                }
            }
            Expr::BitNot(a) => Some(Narrow64 { v: unary64(self.sub64(a).v, |x| !x), bound: None }),
            Expr::Neg(a) => Some(Narrow64 { v: unary64(self.sub64(a).v, |x| x.wrapping_neg()), bound: None }),
            Expr::Ternary(c, a, b) => {
                let (c, a, b) = (self.exact64(c)?, self.sub64(a), self.sub64(b));
                let bound = a.bound.zip(b.bound).map(|(x, y)| x.max(y));
                let (a, b) = (a.v, b.v);
                Some(Narrow64 { v: V64::Fn(Box::new(move |e, s, p, l| if c.get(e, s, p, l) != 0 { a.get(e, s, p, l) } else { b.get(e, s, p, l) })), bound })
            }
            Expr::RegisterRead(r, idx) if self.prog.registers[*r].width <= 64 => {
                let (r, idx, mask) = (*r, self.exact64(idx)?, mask_of(self.prog.registers[*r].width));
                exact(V64::Fn(Box::new(move |e, s, p, l| usize::try_from(idx.get(e, s, p, l)).ok().and_then(|i| s.registers[r].get(i)).unwrap_or(0) as u64)), mask)
            }
            _ => None,
        }
    }

    /// A sub-expression in u64: compiled by `expr64`, or the 128-bit form's low 64 bits.
    fn sub64(&self, e: &Expr) -> Narrow64 {
        self.expr64(e).unwrap_or_else(|| {
            let v = self.expr(e);
            Narrow64 { v: V64::Fn(Box::new(move |e, s, p, l| v.get(e, s, p, l) as u64)), bound: None }
        })
    }

    /// A sub-expression whose u64 value is its value (None if that is not known).
    fn exact64(&self, e: &Expr) -> Option<V64> {
        let n = self.sub64(e);
        n.bound.map(|_| n.v)
    }

    fn binary64(&self, op: BinOp, a: &Expr, b: &Expr) -> Option<Narrow64> {
        use BinOp::*;
        let (x, y) = (self.sub64(a), self.sub64(b));
        let (xb, yb) = (x.bound, y.bound);
        let fits = |m: u128| (m <= u64::MAX as u128).then_some(m);
        let both = xb.zip(yb);
        let exact = |v: V64, bound: u128| Some(Narrow64 { v, bound: Some(bound) });
        // A constant shift amount (y is exact when one is used).
        let shift = match y.v {
            V64::Const(c) => Some(c),
            _ => None,
        };
        let (v, bound) = match op {
            Add => (bin64(x.v, y.v, u64::wrapping_add), both.and_then(|(p, q)| fits(p + q))),
            Sub => (bin64(x.v, y.v, u64::wrapping_sub), None),
            Mul => (bin64(x.v, y.v, u64::wrapping_mul), both.and_then(|(p, q)| p.checked_mul(q)).and_then(fits)),
            BitAnd => {
                // `& m` that keeps every bit the other side can have (or, on a
                // side of unknown range, its low 64 bits) only makes it exact.
                let keeps = |m: Option<u128>, other: Option<u128>| m.is_some_and(|m| other.map_or(m == u64::MAX as u128, |p| cover(p) & m == cover(p)));
                if matches!(y.v, V64::Const(_)) && keeps(yb, xb) {
                    return Some(Narrow64 { v: x.v, bound: Some(xb.unwrap_or(u64::MAX as u128)) });
                }
                if matches!(x.v, V64::Const(_)) && keeps(xb, yb) {
                    return Some(Narrow64 { v: y.v, bound: Some(yb.unwrap_or(u64::MAX as u128)) });
                }
                let bound = match (xb, yb) {
                    (Some(p), Some(q)) => Some(p.min(q)),
                    (Some(p), None) | (None, Some(p)) => Some(p),
                    (None, None) => None,
                };
                (bin64(x.v, y.v, |a, b| a & b), bound)
            }
            BitOr => (bin64(x.v, y.v, |a, b| a | b), both.map(|(p, q)| cover(p.max(q)))),
            BitXor => (bin64(x.v, y.v, |a, b| a ^ b), both.map(|(p, q)| cover(p.max(q)))),
            Shl => {
                yb?;
                let bound = xb.zip(shift).and_then(|(p, c)| (c < 64).then(|| p << c)).and_then(fits);
                (bin64(x.v, y.v, |a, b| if b < 64 { a << b } else { 0 }), bound)
            }
            Shr => {
                let p = xb?;
                yb?;
                let bound = match shift {
                    Some(c) if c < 64 => p >> c,
                    Some(_) => 0,
                    None => p,
                };
                (bin64(x.v, y.v, |a, b| if b < 64 { a >> b } else { 0 }), Some(bound))
            }
            Eq | Ne | Gt | Ge | Lt | Le | And | Or | Div | Mod => {
                both?;
                let bound = match op {
                    Div | Mod => xb?,
                    _ => 1,
                };
                let v = match op {
                    Eq => bin64(x.v, y.v, |a, b| (a == b) as u64),
                    Ne => bin64(x.v, y.v, |a, b| (a != b) as u64),
                    Gt => bin64(x.v, y.v, |a, b| (a > b) as u64),
                    Ge => bin64(x.v, y.v, |a, b| (a >= b) as u64),
                    Lt => bin64(x.v, y.v, |a, b| (a < b) as u64),
                    Le => bin64(x.v, y.v, |a, b| (a <= b) as u64),
                    Div => bin64(x.v, y.v, |a, b| a.checked_div(b).unwrap_or(0)),
                    Mod => bin64(x.v, y.v, |a, b| a.checked_rem(b).unwrap_or(0)),
                    And => {
                        let (a, b) = (x.v, y.v);
                        V64::Fn(Box::new(move |e, s, p, l| (a.get(e, s, p, l) != 0 && b.get(e, s, p, l) != 0) as u64))
                    }
                    _ => {
                        let (a, b) = (x.v, y.v);
                        V64::Fn(Box::new(move |e, s, p, l| (a.get(e, s, p, l) != 0 || b.get(e, s, p, l) != 0) as u64))
                    }
                };
                return exact(v, bound);
            }
            TwoCompMod | SatCast | USatCast => return None,
        };
        Some(Narrow64 { v, bound })
    }

    /// `field = e`: in u64 for an unsigned field of at most 64 bits (only the
    /// low bits of `e` are kept, so outer masks that keep them all are dropped).
    fn assign_expr(&self, f: usize, e: &Expr) -> Op {
        if let (mask, false) = self.prog.field_masks[f] {
            let e = strip_mask(e, mask);
            if let Some(op) = self.assign_leaves(f, mask as u64, e).filter(|_| mask <= u64::MAX as u128) {
                return op;
            }
            let param = matches!(e, Expr::Local(_)) && self.fixed_args.is_none();
            if let Some(n) = self.expr64(e).filter(|_| mask <= u64::MAX as u128 && !param) {
                let mask = mask as u64;
                return match n.v {
                    V64::Const(c) => Op::Set(f, (c & mask) as i128),
                    V64::Field(x) => Op::Copy(f, x, mask as u128),
                    V64::Fn(g) => Op::Call(Box::new(move |e, s, p, l| p.fields[f] = (g(e, s, p, l) & mask) as i128)),
                    v => Op::Call(Box::new(move |e, s, p, l| p.fields[f] = (v.get(e, s, p, l) & mask) as i128)),
                };
            }
        }
        self.assign(f, self.expr(e))
    }

    /// `field = a op b` (field unsigned, at most 64 bits) with both operands
    /// unsigned fields of at most 64 bits or constants: one closure with the
    /// operator inline instead of an assignment calling an operator closure.
    fn assign_leaves(&self, f: usize, mask: u64, e: &Expr) -> Option<Op> {
        let Expr::Bin(op, a, b) = e else { return None };
        let leaf = |e: &Expr| match self.expr64(e)? {
            Narrow64 { v: V64::Field(x), bound: Some(_) } => Some(Ok(x)),
            Narrow64 { v: V64::Const(c), bound: Some(_) } => Some(Err(c)),
            _ => None,
        };
        let (x, y) = (leaf(a)?, leaf(b)?);
        macro_rules! fused {
            ($op:expr) => {
                Some(match (x, y) {
                    (Ok(x), Err(c)) => Op::Call(Box::new(move |_, _, p, _| p.fields[f] = ($op(p.fields[x] as u64, c) & mask) as i128)),
                    (Err(c), Ok(y)) => Op::Call(Box::new(move |_, _, p, _| p.fields[f] = ($op(c, p.fields[y] as u64) & mask) as i128)),
                    (Ok(x), Ok(y)) => Op::Call(Box::new(move |_, _, p, _| p.fields[f] = ($op(p.fields[x] as u64, p.fields[y] as u64) & mask) as i128)),
                    (Err(_), Err(_)) => return None, // folded to a constant by expr64
                })
            };
        }
        // Both operands are exact, as shifts need; every result is then masked to the field.
        match op {
            BinOp::Add => fused!(u64::wrapping_add),
            BinOp::Sub => fused!(u64::wrapping_sub),
            BinOp::Mul => fused!(u64::wrapping_mul),
            BinOp::BitAnd => fused!(|a: u64, b: u64| a & b),
            BinOp::BitOr => fused!(|a: u64, b: u64| a | b),
            BinOp::BitXor => fused!(|a: u64, b: u64| a ^ b),
            BinOp::Shl => fused!(|a: u64, b: u64| if b < 64 { a << b } else { 0 }),
            BinOp::Shr => fused!(|a: u64, b: u64| if b < 64 { a >> b } else { 0 }),
            _ => None,
        }
    }

    /// A condition: in u64 when its value is exact there.
    fn test(&self, e: &Expr) -> Test {
        if let Expr::Bin(op @ (BinOp::And | BinOp::Or), a, b) = e {
            if let (Some(a), Some(b)) = (self.test64(a), self.test64(b)) {
                return if *op == BinOp::And { Test::And(a, b) } else { Test::Or(a, b) };
            }
        }
        match self.test64(e) {
            Some(t) => Test::One(t),
            None => Test::Wide(self.expr(e)),
        }
    }

    /// `e` as an exact u64 condition, if it is one.
    fn test64(&self, e: &Expr) -> Option<Test64> {
        match self.expr64(e)? {
            Narrow64 { v: V64::Fn(f), bound: Some(_) } => Some(Test64::Fn(f)),
            Narrow64 { v: V64::Valid(h), bound: Some(_) } => Some(Test64::Valid(h)),
            _ => None,
        }
    }

    /// `field = v`, truncated to the field's width as `Executor::set_field` does.
    fn assign(&self, f: usize, v: Val) -> Op {
        let (mask, signed) = self.prog.field_masks[f];
        if signed {
            let w = self.prog.field_info[f].0;
            return Op::Call(Box::new(move |e, s, p, l| p.fields[f] = sign_extend(v.get(e, s, p, l) as u128, w)));
        }
        match v {
            Val::Const(c) => Op::Set(f, (c as u128 & mask) as i128),
            Val::Field(x) => Op::Copy(f, x, mask),
            Val::Local(i) => Op::Param(f, i, mask),
            v => Op::Call(Box::new(move |e, s, p, l| p.fields[f] = (v.get(e, s, p, l) as u128 & mask) as i128)),
        }
    }

    fn prim(&mut self, p: &Prim) -> Op {
        self.cov.primitives += 1;
        let std = &self.prog.std;
        match p {
            Prim::Assign(LValue::Field(f), e) => return self.assign_expr(*f, e),
            Prim::RegisterRead(LValue::Field(f), r, idx) => return self.assign_expr(*f, &Expr::RegisterRead(*r, Box::new(idx.clone()))),
            Prim::RegisterWrite(r, idx, val) if self.prog.registers[*r].width <= 64 && self.exact64(idx).is_some() => {
                let (r, mask) = (*r, mask_of(self.prog.registers[*r].width) as u64);
                let (idx, val) = (self.exact64(idx).unwrap_or(V64::Const(0)), self.sub64(strip_mask(val, mask as u128)).v);
                return Op::Call(Box::new(move |e, s, p, l| {
                    let (i, v) = (idx.get(e, s, p, l), val.get(e, s, p, l));
                    if let (crate::state::RegisterCells::Narrow(cells), Ok(i)) = (&s.registers[r], usize::try_from(i)) {
                        if let Some(cell) = cells.get(i) {
                            cell.store(v & mask, Ordering::Relaxed);
                        }
                    }
                }));
            }
            Prim::RegisterWrite(r, idx, val) => {
                let (r, idx, val, mask) = (*r, self.expr(idx), self.expr(val), mask_of(self.prog.registers[*r].width));
                return Op::Call(Box::new(move |e, s, p, l| {
                    let i = idx.get(e, s, p, l);
                    let v = val.get(e, s, p, l);
                    if let Ok(i) = usize::try_from(i) {
                        s.registers[r].set(i, v as u128 & mask);
                    }
                }));
            }
            Prim::Count(c, idx) if self.exact64(idx).is_some() => {
                let (c, len, idx) = (*c, std.packet_length, self.exact64(idx).unwrap_or(V64::Const(0)));
                return Op::Call(Box::new(move |e, s, p, l| {
                    let i = idx.get(e, s, p, l) as usize;
                    let cells = &s.counters[c];
                    if i < cells.pkts.len() {
                        cells.pkts[i].fetch_add(1, Ordering::Relaxed);
                        cells.bytes[i].fetch_add(get_opt(p, len) as u64, Ordering::Relaxed);
                    }
                }));
            }
            Prim::Count(c, idx) => {
                let (c, idx, len) = (*c, self.expr(idx), std.packet_length);
                return Op::Call(Box::new(move |e, s, p, l| {
                    let i = idx.get(e, s, p, l);
                    let cells = &s.counters[c];
                    if i >= 0 && (i as usize) < cells.pkts.len() {
                        cells.pkts[i as usize].fetch_add(1, Ordering::Relaxed);
                        cells.bytes[i as usize].fetch_add(get_opt(p, len) as u64, Ordering::Relaxed);
                    }
                }));
            }
            Prim::NoOp => return Op::Call(Box::new(|_, _, _, _| {})),
            Prim::MarkToDrop => {
                let (spec, mcast) = (std.egress_spec, std.mcast_grp);
                return Op::Call(Box::new(move |_, _, p, _| {
                    set_opt(p, spec, DROP_PORT as i128);
                    set_opt(p, mcast, 0);
                }));
            }
            _ => {}
        }
        self.cov.interpreted_primitives += 1;
        let (prog, p, fixed) = (self.prog.clone(), p.clone(), self.fixed_args.clone());
        Op::Call(Box::new(move |ex, st, pkt, l| ex.prim(&prog, &Env { st, locals: fixed.as_deref().unwrap_or(l), look: None }, pkt, &p)))
    }

    /// An action's primitives; with `args` known at load time (keyless constant
    /// tables, action calls) the parameters become constants.
    fn action(&mut self, index: usize, args: Option<&[i128]>) -> Vec<Op> {
        let prog = self.prog.clone();
        let a = &prog.actions[index];
        self.fixed_args = args.map(Into::into);
        let ops = if a.prims.iter().any(|p| matches!(p, Prim::Jump(_) | Prim::JumpIfZero(..))) {
            vec![self.jumping_action(&a.prims)]
        } else {
            let ops: Vec<Op> = a.prims.iter().filter(|p| !matches!(p, Prim::NoOp)).map(|p| self.prim(p)).collect();
            fuse_params(ops)
        };
        self.fixed_args = None;
        ops
    }

    /// An action with `_jump`/`_jump_if_zero` (p4c's if/else inside actions): its
    /// primitives run by index, as `Executor::run_action` runs them.
    fn jumping_action(&mut self, prims: &[Prim]) -> Op {
        enum Step {
            Op(Op),
            Jump(usize),
            JumpIfZero(Val, usize),
        }
        let steps: Vec<Step> = prims
            .iter()
            .map(|p| match p {
                Prim::Jump(t) => Step::Jump(*t),
                Prim::JumpIfZero(c, t) => Step::JumpIfZero(self.expr(c), *t),
                p => Step::Op(self.prim(p)),
            })
            .collect();
        Op::Call(Box::new(move |ex, st, pkt, args| {
            let (mut pc, mut count) = (0, 0);
            while pc < steps.len() && !ex.flags.exit {
                count += 1;
                if count > MAX_CONTROL_STEPS {
                    break;
                }
                match &steps[pc] {
                    Step::Jump(t) => pc = *t,
                    Step::JumpIfZero(c, t) => pc = if c.get(ex, st, pkt, args) == 0 { *t } else { pc + 1 },
                    Step::Op(op) => {
                        op.run(ex, st, pkt, args);
                        pc += 1;
                    }
                }
            }
        }))
    }

    fn node_index(&self, n: Node) -> usize {
        let p = &self.prog;
        match n {
            Node::Table(t) => t,
            Node::Cond(c) => p.tables.len() + c,
            Node::ActionCall(a) => p.tables.len() + p.conditionals.len() + a,
        }
    }

    /// A node that only runs a fixed action (or nothing): (call, next), as the
    /// interpreter runs action calls and keyless constant tables.
    #[allow(clippy::type_complexity)]
    fn fixed_run(&self, n: Node) -> Option<(Option<(usize, Box<[i128]>)>, Option<Node>)> {
        match n {
            Node::ActionCall(a) => {
                let c = &self.prog.action_calls[a];
                Some((Some((c.action, Box::new([]))), c.next))
            }
            Node::Table(t) if self.prog.tables[t].default_fixed => {
                let t = &self.prog.tables[t];
                Some(match &t.default_entry {
                    None => (None, t.base_default_next),
                    Some(d) => (Some((d.action, d.args.clone().into_boxed_slice())), t.next_miss.unwrap_or_else(|| t.next_after(d.action))),
                })
            }
            _ => None,
        }
    }

    /// The way to `target`: a fused fixed run (`fused`: only one node leads to
    /// it) joins the edge with the fused runs after it, so each node is compiled once.
    fn edge(&mut self, target: Option<Node>, fused: &[bool]) -> Edge {
        let mut calls = Vec::new();
        let mut next = target;
        while let Some((call, after)) = next.filter(|m| fused[self.node_index(*m)]).and_then(|m| self.fixed_run(m)) {
            calls.extend(call);
            next = after;
        }
        let ops = calls.iter().flat_map(|(a, args)| self.action(*a, Some(args))).collect();
        Edge { ops, calls, next: next.map(|n| self.node_index(n)) }
    }

    fn node(&mut self, n: Node, fused: &[bool]) -> NodeCode {
        if let Some((call, next)) = self.fixed_run(n) {
            let mut calls: Vec<(usize, Box<[i128]>)> = call.into_iter().collect();
            let mut ops: Vec<Op> = calls.iter().flat_map(|(a, args)| self.action(*a, Some(args))).collect();
            let rest = self.edge(next, fused);
            ops.extend(rest.ops);
            calls.extend(rest.calls);
            return NodeCode::Run(Edge { ops, calls, next: rest.next });
        }
        match n {
            Node::Cond(c) => {
                let c = self.prog.conditionals[c].clone();
                let cond = self.test(&c.expr);
                NodeCode::Cond { cond, expr: c.expr, on_true: self.edge(c.true_next, fused), on_false: self.edge(c.false_next, fused) }
            }
            Node::Table(ti) => {
                let prog = self.prog.clone();
                let t = &prog.tables[ti];
                NodeCode::Table(TableCode {
                    table: ti,
                    lpm: crate::state::lpm_index(t),
                    keys: t.keys.iter().map(|k| (self.expr(&k.source), mask_of(k.width) & k.mask.unwrap_or(u128::MAX))).collect(),
                    next_hit: t.next_hit.map(|x| self.edge(x, fused)),
                    next_miss: t.next_miss.map(|x| self.edge(x, fused)),
                    next_by_action: t.next_by_action.iter().map(|x| x.map(|x| self.edge(x, fused))).collect(),
                    base_default_next: self.edge(t.base_default_next, fused),
                })
            }
            // A keyless table without a default entry: nothing runs.
            Node::ActionCall(_) => unreachable!("action calls are fixed runs"),
        }
    }

    fn successors(&self, n: Node) -> Vec<Node> {
        let p = &self.prog;
        let mut out: Vec<Option<Node>> = Vec::new();
        match n {
            Node::Table(t) => {
                let t = &p.tables[t];
                out.extend(t.next_by_action.iter().flatten().copied());
                out.extend(t.next_hit);
                out.extend(t.next_miss);
                out.push(t.base_default_next);
            }
            Node::Cond(c) => out.extend([p.conditionals[c].true_next, p.conditionals[c].false_next]),
            Node::ActionCall(a) => out.push(p.action_calls[a].next),
        }
        out.into_iter().flatten().collect()
    }

    /// True when no path from `init` loops (loops need the interpreter's step bound).
    fn acyclic(&self, init: Option<Node>) -> bool {
        let total = self.node_index(Node::ActionCall(self.prog.action_calls.len()));
        let mut mark = vec![0u8; total]; // 0 new, 1 on the path, 2 done
        fn visit(c: &Compiler, n: Node, mark: &mut [u8]) -> bool {
            let i = c.node_index(n);
            match mark[i] {
                1 => return false,
                2 => return true,
                _ => {}
            }
            mark[i] = 1;
            let ok = c.successors(n).into_iter().all(|m| visit(c, m, mark));
            mark[i] = 2;
            ok
        }
        init.is_none_or(|n| visit(self, n, &mut mark))
    }

    /// The nodes reachable from `init`, compiled (the rest never run: empty placeholders).
    fn pipeline(&mut self, p: &Pipeline) -> Option<PipelineCode> {
        if !self.acyclic(p.init) {
            return None;
        }
        let prog = self.prog.clone();
        let all: Vec<Node> = (0..prog.tables.len())
            .map(Node::Table)
            .chain((0..prog.conditionals.len()).map(Node::Cond))
            .chain((0..prog.action_calls.len()).map(Node::ActionCall))
            .collect();
        let mut reachable = vec![false; all.len()];
        let mut todo: Vec<Node> = p.init.into_iter().collect();
        while let Some(n) = todo.pop() {
            let i = self.node_index(n);
            if !std::mem::replace(&mut reachable[i], true) {
                todo.extend(self.successors(n));
            }
        }
        // Predecessors of each node; a fixed run with only one predecessor is fused into its edge.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); all.len()];
        for (i, n) in all.iter().enumerate().filter(|(i, _)| reachable[*i]) {
            for m in self.successors(*n) {
                let j = self.node_index(m);
                if !preds[j].contains(&i) {
                    preds[j].push(i);
                }
            }
        }
        let fused: Vec<bool> = all
            .iter()
            .enumerate()
            .map(|(j, m)| self.fixed_run(*m).is_some() && preds[j].len() == 1)
            .collect();
        let nodes = all
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if reachable[i] && !fused[i] {
                    self.node(*n, &fused)
                } else {
                    NodeCode::Run(Edge { ops: Vec::new(), calls: Vec::new(), next: None })
                }
            })
            .collect();
        Some(PipelineCode { nodes, init: p.init.map(|n| self.node_index(n)), jit: None })
    }

    fn parse_state(&mut self, ps: &ParseState) -> ParseStateCode {
        let ops = ps
            .ops
            .iter()
            .map(|op| {
                self.cov.parser_ops += 1;
                if let ParserOp::Extract(ExtractTarget::Header(h)) = op {
                    if let Some(io) = header_io(&self.prog, *h).filter(|io| io.layout.words.len() <= MAX_READ_WORDS) {
                        return ParseOp::Extract(io);
                    }
                }
                self.cov.interpreted_parser_ops += 1;
                ParseOp::Interpreted(op.clone())
            })
            .collect();
        ParseStateCode { ops, select: self.select(ps) }
    }

    fn select(&mut self, ps: &ParseState) -> Select {
        let mut parts = Vec::new();
        for part in &ps.key {
            match part {
                KeyPart::Field(e, w) if *w > 0 => parts.push((self.expr(e), *w)),
                _ => break,
            }
        }
        let number = |b: &[u8]| b.iter().fold(0u128, |a, x| (a << 8) | *x as u128);
        let n: usize = ps.key.iter().map(|k| match k { KeyPart::Field(_, w) | KeyPart::Lookahead(_, w) => w.div_ceil(8) as usize }).sum();
        let full = if n >= 16 { u128::MAX } else { (1u128 << (8 * n)) - 1 };
        let transitions: Option<Vec<_>> = ps
            .transitions
            .iter()
            .map(|t| match &t.matcher {
                TransitionMatch::Default => Some((0, 0, t.next)),
                TransitionMatch::Value { value, mask: None } if value.len() == n => Some((number(value), full, t.next)),
                TransitionMatch::Value { value, mask: Some(m) } if value.len() == n && m.len() == n => {
                    Some((number(value) & number(m), number(m), t.next))
                }
                _ => None,
            })
            .collect();
        match transitions {
            Some(transitions) if parts.len() == ps.key.len() && n <= 16 => Select::Key { parts, transitions },
            _ => {
                self.cov.interpreted_selects += 1;
                Select::Interpreted
            }
        }
    }

    fn checksum(&mut self, c: &Checksum) -> ChecksumCode {
        let prog = self.prog.clone();
        let target_header = prog.field_locs[c.target].header;
        let calc = &prog.calculations[c.calc];
        let items: Option<Vec<_>> = calc
            .inputs
            .iter()
            .map(|inp| match inp {
                CalcInput::Field(f) if prog.field_locs[*f].header == target_header => Some((Src::Field(*f), prog.field_info[*f].0, false)),
                CalcInput::Const(v, w) => Some((Src::Const(*v as u128), *w, false)),
                _ => None,
            })
            .collect();
        let layout = items.and_then(|i| Layout::new(&i)).filter(|_| calc.algo != HashAlgo::Random);
        if layout.is_none() {
            self.cov.interpreted_checksums += 1;
        }
        ChecksumCode {
            target: c.target,
            target_header,
            in_place: None,
            cond: c.cond.as_ref().map(|e| self.expr(e)),
            calc: match layout {
                Some(layout) => Calc::Laid { algo: calc.algo, layout },
                None => Calc::Interpreted(c.calc),
            },
        }
    }
}

impl Compiled {
    /// Compiles `prog`; None if a control graph loops (the interpreter bounds its steps).
    pub(crate) fn new(prog: Arc<Program>) -> Option<Compiled> {
        let mut c = Compiler { prog: prog.clone(), cov: Coverage::default(), fixed_args: None };
        let actions = (0..prog.actions.len()).map(|a| c.action(a, None)).collect();
        let mut ingress = c.pipeline(&prog.ingress)?;
        let mut egress = c.pipeline(&prog.egress)?;
        let mut parser: Vec<ParseStateCode> = prog.parser.states.iter().map(|s| c.parse_state(s)).collect();
        let checksums: Vec<_> = prog.checksums.iter().map(|k| (c.checksum(k), k.verify, k.update)).collect();
        let mut deparser: Option<Vec<HeaderIo>> =
            prog.deparser.iter().filter(|h| !prog.headers[**h].metadata).map(|h| header_io(&prog, *h)).collect();
        let extracts = parser.iter_mut().flat_map(|s| &mut s.ops).filter_map(|op| match op {
            ParseOp::Extract(io) => Some(&mut io.layout),
            ParseOp::Interpreted(_) => None,
        });
        let mut layouts: Vec<&mut Layout> = extracts.chain(deparser.iter_mut().flatten().map(|io| &mut io.layout)).collect();
        let _layouts = crate::jit::layouts(&mut layouts);
        // After the layouts: it inlines their native reads.
        let native_parser = _layouts.as_ref().and_then(|_| crate::jit::parser(&prog, &parser));
        c.cov.interpreted_deparser = deparser.is_none();
        let mut checksums: Vec<(ChecksumCode, bool, bool)> = checksums;
        if let Some(headers) = &deparser {
            for (i, (code, _, update)) in checksums.iter_mut().enumerate() {
                code.in_place = in_place_update(&prog, i, headers).filter(|_| *update && i < 64);
            }
        }
        let native_deparser = deparser.as_ref().filter(|_| _layouts.is_some()).and_then(|headers| {
            let sums: Vec<crate::jit::InPlaceSum> = checksums
                .iter()
                .enumerate()
                .filter_map(|(bit, (code, _, _))| code.in_place.map(|(pos, at)| crate::jit::InPlaceSum { bit, pos, at, target: code.target }))
                .collect();
            let most = headers.iter().map(|io| 8 * io.layout.words.len()).sum();
            crate::jit::deparser(headers, &sums).map(|(f, native)| (f, most, native))
        });
        let may_exit = prog.actions.iter().flat_map(|a| &a.prims).any(|p| matches!(p, Prim::Exit | Prim::Assert(_)))
            || prog.parser.states.iter().flat_map(|s| &s.ops).any(|o| matches!(o, ParserOp::Primitive(Prim::Exit | Prim::Assert(_))));
        let (mut native_actions, mut _native_actions) = (vec![None; prog.actions.len()], None);
        if !may_exit {
            // The native code never checks for `exit`; with it, the node loop runs.
            for code in [&mut ingress, &mut egress] {
                code.jit = crate::jit::Control::new(&prog, code);
            }
            if let Some((native, codes)) = crate::jit::actions(&prog) {
                (native_actions, _native_actions) = (codes, Some(native));
            }
        }
        Some(Compiled {
            prog,
            actions,
            native_actions,
            _native_actions,
            may_exit,
            ingress,
            egress,
            parser,
            checksums,
            deparser,
            _layouts,
            native_parser,
            native_deparser,
            coverage: c.cov,
        })
    }

    /// Runs ops, stopping at `exit` as the interpreter does (checked before each primitive).
    #[inline]
    fn run_ops(&self, ops: &[Op], ex: &mut Executor, st: &State, pkt: &mut PacketState, args: &[i128]) {
        if !self.may_exit {
            ops.iter().for_each(|op| op.run(ex, st, pkt, args));
            return;
        }
        for op in ops {
            if ex.flags.exit {
                break;
            }
            op.run(ex, st, pkt, args);
        }
    }

    pub(crate) fn run_ingress(&self, ex: &mut Executor, st: &State, pkt: &mut PacketState) {
        self.run_pipeline(&self.ingress, ex, st, pkt);
    }

    pub(crate) fn run_egress(&self, ex: &mut Executor, st: &State, pkt: &mut PacketState) {
        self.run_pipeline(&self.egress, ex, st, pkt);
    }

    fn run_pipeline(&self, code: &PipelineCode, ex: &mut Executor, st: &State, pkt: &mut PacketState) {
        if let Some(jit) = &code.jit {
            jit.run(self, ex, st, pkt);
            return;
        }
        let mut node = code.init;
        while let Some(n) = node {
            if self.may_exit && ex.flags.exit {
                break;
            }
            let edge = match &code.nodes[n] {
                NodeCode::Run(edge) => edge,
                NodeCode::Cond { cond, on_true, on_false, .. } => {
                    if cond.holds(ex, st, pkt) {
                        on_true
                    } else {
                        on_false
                    }
                }
                NodeCode::Table(t) => self.apply_table(t, ex, st, pkt),
            };
            match &edge.ops[..] {
                [] => {}
                [op] if !self.may_exit => op.run(ex, st, pkt, &[]),
                ops => self.run_ops(ops, ex, st, pkt, &[]),
            }
            node = edge.next;
        }
    }

    pub(crate) fn apply_table<'a>(&self, tc: &'a TableCode, ex: &mut Executor, st: &State, pkt: &mut PacketState) -> &'a Edge {
        // Keys on the stack (no vector to fill) for the usual few key fields.
        let mut short = [0u128; SHORT_KEY];
        let mut long = Vec::new();
        let key: &mut [u128] = if tc.keys.len() <= SHORT_KEY {
            &mut short[..tc.keys.len()]
        } else {
            long.resize(tc.keys.len(), 0);
            &mut long
        };
        for (k, (v, m)) in key.iter_mut().zip(&tc.keys) {
            *k = v.get(ex, st, pkt, &[]) as u128 & m;
        }
        self.apply_keyed(tc, key, ex, st, pkt, |code, ex, pkt, args| code.run(self, ex, st, pkt, args))
    }

    /// `apply_table` with its key built (native code builds it inline: `jit.rs`);
    /// `native` runs an entry's action where it has native code (native control
    /// code runs it with its own frame).
    #[inline(always)]
    pub(crate) fn apply_keyed<'a>(
        &self,
        tc: &'a TableCode,
        key: &[u128],
        ex: &mut Executor,
        st: &State,
        pkt: &mut PacketState,
        native: impl FnOnce(crate::jit::ActionCode, &mut Executor, &mut PacketState, &[i128]),
    ) -> &'a Edge {
        let t = &self.prog.tables[tc.table];
        let ts = st.tables[tc.table].read();
        let after = |a: Option<usize>| a.and_then(|a| tc.next_by_action.get(a)?.as_ref()).unwrap_or(&tc.base_default_next);
        let next = match ts.lookup_indexed(t, key, tc.lpm) {
            Some(e) => {
                if t.direct_counter.is_some() || t.direct_meter.is_some() {
                    ex.direct_resources(t, e, pkt);
                }
                let action = self.run_entry(ex, st, pkt, t, &e.act, native);
                tc.next_hit.as_ref().unwrap_or_else(|| after(action))
            }
            None => {
                let action = ts.default.as_ref().and_then(|d| self.run_entry(ex, st, pkt, t, d, native));
                tc.next_miss.as_ref().unwrap_or_else(|| after(action))
            }
        };
        drop(ts);
        next
    }

    #[inline(always)]
    fn run_entry(
        &self,
        ex: &mut Executor,
        st: &State,
        pkt: &mut PacketState,
        t: &Table,
        act: &EntryAction,
        native: impl FnOnce(crate::jit::ActionCode, &mut Executor, &mut PacketState, &[i128]),
    ) -> Option<usize> {
        match act {
            EntryAction::Call(c) => {
                match self.native_actions[c.action].filter(|code| c.args.len() >= code.args) {
                    Some(code) => native(code, ex, pkt, &c.args),
                    None => self.run_ops(&self.actions[c.action], ex, st, pkt, &c.args),
                }
                Some(c.action)
            }
            EntryAction::Indirect(_) => ex.run_entry(&self.prog, st, pkt, t, act),
        }
    }

    /// Returns (bytes consumed, parser error code), as `Executor::parse`.
    pub(crate) fn parse(&self, ex: &mut Executor, st: &State, pkt: &mut PacketState, frame: &[u8]) -> (usize, i128) {
        if let Some((native, _)) = &self.native_parser {
            let mut pos = 0usize;
            // SAFETY: the code reads the frame within its length (`jit::parser`) and
            // writes fields and validity of the program `pkt` is laid out for.
            let error = unsafe { native(frame.as_ptr(), frame.len(), pkt.fields.as_mut_ptr(), pkt.valid.as_mut_ptr(), &mut pos) };
            return (pos, error as i128);
        }
        let prog = &*self.prog;
        run_parser(prog, prog.parser.init, |si, pos| {
            let code = &self.parser[si];
            for op in &code.ops {
                match op {
                    ParseOp::Extract(io) => {
                        let bytes = io.layout.bytes;
                        if *pos + bytes > frame.len() {
                            return Err(prog.errors.packet_too_short);
                        }
                        io.layout.read(frame, *pos, pkt);
                        if io.plain {
                            pkt.valid[io.header] = true;
                        } else {
                            ex.set_valid(pkt, io.header, true);
                        }
                        *pos += bytes;
                    }
                    ParseOp::Interpreted(op) => ex.parser_op(prog, st, pkt, frame, pos, op)?,
                }
            }
            match &code.select {
                Select::Key { parts, transitions } => {
                    let mut key = 0u128;
                    for (v, w) in parts {
                        let bits = w.div_ceil(8) * 8;
                        key = if bits >= 128 { 0 } else { key << bits } | (v.get(ex, st, pkt, &[]) as u128 & mask_of(*w));
                    }
                    transitions.iter().find(|(value, mask, _)| key & mask == *value).map(|t| t.2).ok_or(prog.errors.no_match)
                }
                Select::Interpreted => ex.select(st, pkt, frame, *pos, &prog.parser.states[si]),
            }
        })
    }

    fn calculate(&self, ex: &mut Executor, pkt: &PacketState, c: &ChecksumCode) -> u64 {
        match &c.calc {
            Calc::Laid { algo: HashAlgo::Csum16, layout } => layout.csum16(pkt),
            Calc::Laid { algo, layout } => {
                let mut buf = std::mem::take(&mut ex.calc.buf);
                buf.clear();
                layout.write(pkt, &mut buf);
                let rng = &mut ex.rng;
                let v = hash::compute(*algo, &buf, || rng.next_u64());
                ex.calc.buf = buf;
                v
            }
            Calc::Interpreted(calc) => ex.calculate(&self.prog, pkt, *calc),
        }
    }

    fn applies(&self, ex: &Executor, st: &State, pkt: &PacketState, c: &ChecksumCode) -> bool {
        pkt.valid[c.target_header] && c.cond.as_ref().is_none_or(|e| e.get(ex, st, pkt, &[]) != 0)
    }

    /// As `Executor::verify_checksums`: true if a verified checksum is wrong.
    pub(crate) fn verify_checksums(&self, ex: &mut Executor, st: &State, pkt: &PacketState) -> bool {
        let mut bad = false;
        for (c, _, _) in self.checksums.iter().filter(|(_, verify, _)| *verify) {
            if self.applies(ex, st, pkt, c) {
                let m = mask_of(self.prog.field_info[c.target].0);
                bad |= self.calculate(ex, pkt, c) as u128 & m != pkt.fields[c.target] as u128 & m;
            }
        }
        bad
    }

    /// Updates checksums and deparses, as `Executor::deparse`; None when the
    /// deparser needs the interpreter.
    pub(crate) fn deparse(&self, ex: &mut Executor, st: &State, pkt: &mut PacketState) -> Option<Vec<u8>> {
        let headers = self.deparser.as_ref()?;
        // Bit i: checksum i is computed in place once its header is written.
        let mut in_place = 0u64;
        for (i, (c, _, update)) in self.checksums.iter().enumerate() {
            if *update && self.applies(ex, st, pkt, c) {
                match c.in_place {
                    Some(_) => in_place |= 1 << i,
                    None => {
                        let v = self.calculate(ex, pkt, c) as i128;
                        ex.set_field(pkt, c.target, v);
                    }
                }
            }
        }
        if let Some((native, most, _)) = &self.native_deparser {
            let mut out = ex.frame_buffer(most + pkt.payload.len());
            // SAFETY: the code writes at most `most` bytes (whole words) to the
            // buffer, reserved above, and reads and writes fields and validity
            // of the program `pkt` is laid out for; it returns the bytes of the
            // headers, of which it wrote every one.
            unsafe {
                let n = native(pkt.fields.as_mut_ptr(), pkt.valid.as_ptr(), out.as_mut_ptr(), in_place);
                out.set_len(n);
            }
            out.extend_from_slice(&pkt.payload);
            return Some(out);
        }
        let headers_len: usize = headers.iter().filter(|io| pkt.valid[io.header]).map(|io| io.layout.bytes).sum();
        let mut out = ex.frame_buffer(headers_len + 8 + pkt.payload.len());
        for (pos, io) in headers.iter().enumerate() {
            if !pkt.valid[io.header] {
                continue;
            }
            let start = out.len();
            io.layout.write(pkt, &mut out);
            if in_place != 0 {
                self.update_in_place(pkt, &mut out[start..], pos, in_place);
            }
        }
        out.extend_from_slice(&pkt.payload);
        Some(out)
    }

    /// Computes the in-place checksums (bits of `pending`) of the header at
    /// deparser position `pos`, just written to `bytes`: patches them and sets their fields.
    fn update_in_place(&self, pkt: &mut PacketState, bytes: &mut [u8], pos: usize, pending: u64) {
        for (_, (c, _, _)) in self.checksums.iter().enumerate().filter(|(i, _)| pending >> i & 1 == 1) {
            if let Some((_, at)) = c.in_place.filter(|(p, _)| *p == pos) {
                let v = csum16_without(bytes, at);
                bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
                pkt.fields[c.target] = v as i128;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(name: &str) -> Program {
        let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
        Program::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn csum16_without_a_word_is_the_checksum_of_the_rest() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in (2..64).step_by(2) {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for skip in (0..len).step_by(2) {
                let rest: Vec<u8> = bytes[..skip].iter().chain(&bytes[skip + 2..]).copied().collect();
                assert_eq!(csum16_without(&bytes, skip), hash::csum16(&rest), "len {len}, skip {skip}");
            }
        }
    }

    #[test]
    fn a_checksum_is_computed_in_place_only_when_nothing_else_reads_its_header() {
        let in_place = |name: &str| {
            let c = Compiled::new(Arc::new(program(name))).unwrap();
            c.checksums.iter().map(|(code, _, _)| code.in_place.is_some()).collect::<Vec<_>>()
        };
        assert_eq!(in_place("red_ecn.json"), [true], "IPv4's header checksum");
        assert_eq!(in_place("l3_stack.json"), [false, false], "UDP's checksum reads IPv4's addresses; UDP's covers two headers");
    }

    #[test]
    fn red_ecn_runs_as_native_code() {
        let c = Compiled::new(Arc::new(program("red_ecn.json"))).unwrap();
        assert!(c.ingress.jit.is_some() && c.egress.jit.is_some(), "each control is one native function");
        let set_red = c.prog.actions.iter().position(|a| a.name == "MyEgress.set_red").unwrap();
        assert!(c.native_actions[set_red].is_some(), "set_red's parameter copies run natively from table entries");
        assert!(c.deparser.as_ref().unwrap().iter().all(|io| io.layout.native_write.is_some()), "Ethernet and IPv4 are written natively");
        assert!(c.native_parser.is_some(), "the parser is one native function");
        assert!(c.native_deparser.is_some(), "so is the deparser");
    }

    #[test]
    fn the_native_parser_reads_every_truncation_as_the_closures_do() {
        let prog = Arc::new(program("red_ecn.json"));
        let native = Compiled::new(prog.clone()).unwrap();
        let mut closures = Compiled::new(prog.clone()).unwrap();
        assert!(native.native_parser.is_some());
        closures.native_parser = None;
        let st = State::new(&prog);
        let mut ex = Executor::with_engine(prog.clone(), 1, crate::Engine::Interpreter);
        let fresh = || PacketState::fresh(&prog);
        // IPv4 and another EtherType, each cut at every length (too short for
        // Ethernet, for IPv4, for IPv4's whole words, and complete).
        for ether_type in [[0x08, 0x00], [0x86, 0xdd]] {
            let mut frame: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            frame[12..14].copy_from_slice(&ether_type);
            for len in 0..=frame.len() {
                let (mut a, mut b) = (fresh(), fresh());
                let got = native.parse(&mut ex, &st, &mut a, &frame[..len]);
                let want = closures.parse(&mut ex, &st, &mut b, &frame[..len]);
                assert_eq!(got, want, "length {len}");
                assert_eq!((a.fields, a.valid), (b.fields, b.valid), "length {len}");
            }
        }
    }

    #[test]
    fn the_native_deparser_writes_what_the_closures_write() {
        let prog = Arc::new(program("red_ecn.json"));
        let native = Compiled::new(prog.clone()).unwrap();
        let mut closures = Compiled::new(prog.clone()).unwrap();
        assert!(native.native_deparser.is_some(), "Ethernet and IPv4 with IPv4's checksum in place");
        closures.native_deparser = None;
        let st = State::new(&prog);
        let mut ex = Executor::with_engine(prog.clone(), 1, crate::Engine::Interpreter);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Random field values under every validity of the headers (so with
        // and without the checksum update), and payloads of 0 to 9 bytes.
        let mut updated = 0;
        for round in 0..400 {
            let mut a = PacketState::fresh(&prog);
            for (f, v) in a.fields.iter_mut().enumerate() {
                *v = (next() as u128 & mask_of(prog.field_info[f].0)) as i128;
            }
            for v in a.valid.iter_mut() {
                *v = next() & 1 == 1;
            }
            a.payload = (0..round % 10).map(|_| next() as u8).collect();
            let mut b = a.clone();
            let before = a.fields.clone();
            let got = native.deparse(&mut ex, &st, &mut a);
            let want = closures.deparse(&mut ex, &st, &mut b);
            assert_eq!(got, want, "round {round}");
            assert_eq!(a.fields, b.fields, "round {round}: the checksum field");
            updated += (a.fields != before) as usize;
        }
        assert!(updated > 100, "IPv4's checksum was updated in {updated} rounds");
    }

    #[test]
    fn a_payload_checksum_keeps_the_header_checksum_out_of_place() {
        // red_ecn plus a checksum over the payload (which follows IPv4) into Ethernet's type.
        let path = format!("{}/tests/programs/red_ecn.json", env!("CARGO_MANIFEST_DIR"));
        let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        json["calculations"].as_array_mut().unwrap().push(serde_json::json!(
            {"name": "over_payload", "id": 1, "algo": "csum16", "input": [{"type": "payload"}]}));
        json["checksums"].as_array_mut().unwrap().push(serde_json::json!(
            {"name": "payload_sum", "id": 1, "target": ["ethernet", "etherType"], "type": "generic",
             "calculation": "over_payload", "verify": false, "update": true, "if_cond": null}));
        let c = Compiled::new(Arc::new(Program::from_json(&json.to_string()).unwrap())).unwrap();
        assert!(c.checksums.iter().all(|(code, _, _)| code.in_place.is_none()));
    }
}
