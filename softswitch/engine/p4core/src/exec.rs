//! Packet execution with simple_switch (v1model) semantics: parser, checksum
//! verification, ingress, packet replication, egress, checksum update, deparser.

use crate::bits::{read_bits, BitWriter};
use crate::compile::Compiled;
use crate::hash;
use crate::load::mask_of;
use crate::program::*;
use crate::state::{EntryAction, State};
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bounds that keep malformed programs from looping forever.
pub(crate) const MAX_PARSE_STATES: usize = 1024;
pub(crate) const MAX_CONTROL_STEPS: usize = 100_000;
const MAX_RESUBMITS: usize = 16;

/// The packet header vector and the unparsed rest of the frame.
#[derive(Debug)]
pub struct PacketState {
    pub(crate) fields: Vec<i128>,
    pub(crate) valid: Vec<bool>,
    pub(crate) varbits: Vec<Vec<u8>>,
    pub(crate) stack_next: Vec<usize>,
    pub(crate) union_stack_next: Vec<usize>,
    pub(crate) payload: Vec<u8>,
    /// Bytes the packet had at ingress (BMv2's PACKET_LENGTH register).
    pub(crate) ingress_len: usize,
    pub(crate) truncate: Option<usize>,
}

impl PacketState {
    /// A packet before parsing: every field 0, only metadata headers valid.
    pub(crate) fn fresh(prog: &Program) -> PacketState {
        PacketState {
            fields: vec![0; prog.num_fields()],
            valid: prog.headers.iter().map(|h| h.metadata).collect(),
            varbits: vec![Vec::new(); prog.num_varbits],
            stack_next: vec![0; prog.stacks.len()],
            union_stack_next: vec![0; prog.union_stacks.len()],
            payload: Vec::new(),
            ingress_len: 0,
            truncate: None,
        }
    }

    /// Makes this recycled packet (laid out for the same program: `Executor::fits`)
    /// equal to the fresh-packet template, without reallocating or re-checking lengths.
    fn reset_to(&mut self, template: &PacketState) {
        // Every template field is 0: filling costs fewer instructions than copying.
        debug_assert!(template.fields.iter().all(|v| *v == 0));
        self.fields.fill(0);
        self.valid.copy_from_slice(&template.valid);
        self.varbits.iter_mut().for_each(Vec::clear);
        // Most programs have no stacks: no memset call for an empty slice.
        if !self.stack_next.is_empty() {
            self.stack_next.fill(0);
        }
        if !self.union_stack_next.is_empty() {
            self.union_stack_next.fill(0);
        }
        self.payload.clear();
        self.ingress_len = template.ingress_len;
        self.truncate = template.truncate;
    }
}

impl Clone for PacketState {
    fn clone(&self) -> Self {
        let mut copy = PacketState {
            fields: Vec::new(),
            valid: Vec::new(),
            varbits: Vec::new(),
            stack_next: Vec::new(),
            union_stack_next: Vec::new(),
            payload: Vec::new(),
            ingress_len: 0,
            truncate: None,
        };
        copy.clone_from(self);
        copy
    }

    /// Reuses this packet's buffers (the executor recycles packets this way).
    fn clone_from(&mut self, src: &Self) {
        self.fields.clone_from(&src.fields);
        self.valid.clone_from(&src.valid);
        self.varbits.clone_from(&src.varbits);
        self.stack_next.clone_from(&src.stack_next);
        self.union_stack_next.clone_from(&src.union_stack_next);
        self.payload.clone_from(&src.payload);
        self.ingress_len = src.ingress_len;
        self.truncate = src.truncate;
    }
}

/// A packet between ingress and egress: what the traffic manager queues.
#[derive(Debug, Clone)]
pub struct QueuedPacket {
    pub egress_port: u32,
    /// `standard_metadata.priority` at enqueue (higher is served first).
    pub priority: u8,
    pub instance_type: u8,
    /// Frame length if deparsed now (headers as they stand + payload).
    pub wire_len: usize,
    /// Bytes the traffic manager buffers: for TNA what the ingress deparser
    /// emits (bridged header included, as Tofino stores it), else `wire_len`.
    pub buffered_len: usize,
    pub(crate) pkt: Box<PacketState>,
}

impl QueuedPacket {
    /// Value of a field of this packet (e.g. to inspect metadata in tests).
    pub fn field(&self, f: usize) -> i128 {
        self.pkt.fields[f]
    }
}

/// Queue metadata the traffic manager measured (BMv2 units: packets, microseconds).
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueMeta {
    pub enq_timestamp: u64,
    pub enq_qdepth: u64,
    pub deq_timedelta: u64,
    pub deq_qdepth: u64,
}

/// A learn-list digest: the list's name and each field as big-endian bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub name: String,
    pub fields: Vec<Vec<u8>>,
}

/// A frame sent back to ingress by `recirculate`.
#[derive(Debug, Clone)]
pub struct Recirculation {
    pub port: u32,
    pub frame: Vec<u8>,
    preserved: Vec<(usize, i128)>,
}

#[derive(Debug, Default)]
pub struct IngressOutcome {
    /// One per copy to enqueue: unicast, multicast replicas, ingress clones
    /// (the usual single copy inline: no allocation per packet).
    pub queued: SmallVec<[QueuedPacket; 1]>,
    pub digests: Vec<Digest>,
    /// True if the original packet was dropped (mark_to_drop, empty group...).
    pub dropped: bool,
    /// `standard_metadata.parser_error` of the (last) ingress pass.
    pub parser_error: i128,
    /// An assert/assume failed: the packet was dropped.
    pub assert_failed: bool,
}

#[derive(Debug, Default)]
pub struct EgressOutcome {
    /// (egress port, deparsed frame); None if dropped or recirculated.
    pub out: Option<(u32, Vec<u8>)>,
    /// Egress-to-egress clones to enqueue.
    pub clones: Vec<QueuedPacket>,
    pub recirculate: Option<Recirculation>,
    pub assert_failed: bool,
}

/// Per-packet flags that BMv2 keeps in packet registers.
#[derive(Debug, Default, Clone)]
pub(crate) struct Flags {
    pub(crate) exit: bool,
    clone: Option<(u32, Option<usize>)>,
    digest: Option<usize>,
    resubmit: Option<Option<usize>>,
    recirculate: Option<Option<usize>>,
    assert_failed: bool,
}

/// Per-thread executor: scratch buffers, the seeded RNG and the program.
pub struct Executor {
    prog: Arc<Program>,
    pub(crate) rng: Pcg64Mcg,
    template: PacketState,
    pub(crate) flags: Flags,
    pub(crate) key: Vec<u128>,
    select: Vec<u8>,
    pub(crate) calc: BitWriter,
    pub(crate) now_us: u64,
    logging: bool,
    logs: Vec<String>,
    /// Finished packets whose buffers are reused (no allocation per packet).
    spare: Vec<Box<PacketState>>,
    /// Sent frames given back (`recycle_frame`): deparsing reuses their buffers.
    frames: Vec<Vec<u8>>,
    /// The compiled pipeline; None runs the interpreter.
    compiled: Option<Arc<Compiled>>,
    /// The standard_metadata writes of ingress and egress at precomputed places.
    stores: StdStores,
    /// The deparser's headers with their byte counts, when none has a varbit
    /// (so a header's bytes are fixed): `wire_len` sums them without lookups.
    deparser_bytes: Option<Box<[(usize, usize)]>>,
}

/// The standard_metadata fields a new packet (`INGRESS`) and a dequeued one
/// (`EGRESS`) get, as (field, mask) each: None when the program lacks one or
/// one is wider than 64 bits (then `set_opt` writes them one by one). The
/// stores run in this order, as the `set_opt` calls did.
#[derive(Debug, Clone, Copy, Default)]
struct StdStores {
    /// ingress_port, instance_type, packet_length, ingress_global_timestamp.
    ingress: Option<[(usize, u64); 4]>,
    /// egress_global_timestamp, enq_timestamp, enq_qdepth, deq_timedelta,
    /// deq_qdepth, egress_port, egress_spec, packet_length.
    egress: Option<[(usize, u64); 8]>,
}

impl StdStores {
    fn new(prog: &Program) -> StdStores {
        let s = &prog.std;
        let n = prog.num_fields();
        StdStores {
            ingress: Self::places([s.ingress_port, s.instance_type, s.packet_length, s.ingress_global_timestamp], n),
            egress: Self::places(
                [s.egress_global_timestamp, s.enq_timestamp, s.enq_qdepth, s.deq_timedelta, s.deq_qdepth, s.egress_port, s.egress_spec, s.packet_length],
                n,
            ),
        }
    }

    fn places<const N: usize>(fields: [Option<(usize, u32)>; N], num_fields: usize) -> Option<[(usize, u64); N]> {
        let mut out = [(0, 0); N];
        for (o, f) in out.iter_mut().zip(fields) {
            let (f, w) = f?;
            if w > 64 || f >= num_fields {
                return None;
            }
            *o = (f, mask_of(w) as u64);
        }
        Some(out)
    }
}

/// `fields[f] = v & mask` for each place and value, in order (as `set_opt`
/// with values below 2^64, which standard_metadata's are).
#[inline(always)]
fn store_all<const N: usize>(fields: &mut [i128], places: &[(usize, u64); N], values: [u64; N]) {
    for ((f, mask), v) in places.iter().zip(values) {
        fields[*f] = (v & mask) as i128;
    }
}

/// Which engine an `Executor` runs packets with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The program compiled at load time (closures, precomputed offsets); the
    /// interpreter runs the pieces it does not cover.
    Compiled,
    /// The interpreter alone: the reference behaviour.
    Interpreter,
}

/// Environment variable that forces the interpreter (value `interpreter`) for A/B runs.
pub const ENGINE_ENV: &str = "P4CORE_ENGINE";

impl Engine {
    /// `Interpreter` when P4CORE_ENGINE=interpreter, else `Compiled`.
    pub fn from_env() -> Engine {
        match std::env::var(ENGINE_ENV).as_deref() {
            Ok("interpreter") => Engine::Interpreter,
            _ => Engine::Compiled,
        }
    }
}

/// Packets kept for reuse per executor.
const SPARE_PACKETS: usize = 64;

/// Where expression operands come from besides the packet.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    pub(crate) st: &'a State,
    pub(crate) locals: &'a [i128],
    /// Parser only: the frame and the current byte position (for lookahead).
    pub(crate) look: Option<(&'a [u8], usize)>,
}

impl Executor {
    /// An executor on the engine `Engine::from_env()` picks (the compiled one by default).
    pub fn new(prog: Arc<Program>, seed: u64) -> Executor {
        Executor::with_engine(prog, seed, Engine::from_env())
    }

    pub fn with_engine(prog: Arc<Program>, seed: u64, engine: Engine) -> Executor {
        let compiled = match engine {
            Engine::Compiled => Compiled::new(prog.clone()).map(Arc::new),
            Engine::Interpreter => None,
        };
        let template = PacketState::fresh(&prog);
        let stores = StdStores::new(&prog);
        let deparser_bytes = prog
            .deparser
            .iter()
            .map(|h| {
                let hdr = &prog.headers[*h];
                hdr.varbit_slot.is_none().then(|| (*h, prog.header_types[hdr.type_idx].fixed_bits as usize / 8))
            })
            .collect();
        Executor {
            prog,
            rng: Pcg64Mcg::seed_from_u64(seed),
            template,
            flags: Flags::default(),
            key: Vec::new(),
            select: Vec::new(),
            calc: BitWriter::default(),
            now_us: 0,
            logging: false,
            logs: Vec::new(),
            spare: Vec::new(),
            frames: Vec::new(),
            compiled,
            stores,
            deparser_bytes,
        }
    }

    /// The engine packets run on (a program whose controls loop runs interpreted).
    pub fn engine(&self) -> Engine {
        if self.compiled.is_some() {
            Engine::Compiled
        } else {
            Engine::Interpreter
        }
    }

    /// One line for logs: the engine and what of the program the interpreter still runs.
    pub fn engine_summary(&self) -> String {
        let Some(c) = &self.compiled else { return "interpreter".into() };
        let v = c.coverage;
        format!(
            "compiled ({} of {} primitives, {} of {} parser ops, {} selects, {} checksums{} via the interpreter)",
            v.interpreted_primitives,
            v.primitives,
            v.interpreted_parser_ops,
            v.parser_ops,
            v.interpreted_selects,
            v.interpreted_checksums,
            if v.interpreted_deparser { ", the deparser" } else { "" }
        )
    }

    pub fn program(&self) -> &Arc<Program> {
        &self.prog
    }

    /// Keep `log_msg` output (drain it with `take_logs`).
    pub fn set_logging(&mut self, on: bool) {
        self.logging = on;
    }

    /// Gives a frame from `EgressOutcome::out` back once it is sent: the next
    /// deparse writes into its buffer instead of allocating one.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        if self.frames.len() < SPARE_PACKETS {
            self.frames.push(frame);
        }
    }

    /// An empty frame buffer of at least `len` bytes, recycled when one is available.
    pub(crate) fn frame_buffer(&mut self, len: usize) -> Vec<u8> {
        let mut buf = self.frames.pop().unwrap_or_default();
        buf.clear();
        buf.reserve(len);
        buf
    }

    pub fn take_logs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.logs)
    }

    /// Runs parser, checksum verification and ingress for a received frame,
    /// then the packet replication engine; resubmits are handled here.
    pub fn ingress(&mut self, st: &State, port: u32, frame: &[u8], now_us: u64) -> IngressOutcome {
        self.ingress_with(st, port, frame, now_us, instance_type::NORMAL, &[])
    }

    /// Feeds a recirculated packet (from `EgressOutcome::recirculate`) to ingress.
    pub fn ingress_recirculated(&mut self, st: &State, r: Recirculation, now_us: u64) -> IngressOutcome {
        self.ingress_with(st, r.port, &r.frame, now_us, instance_type::RECIRC, &r.preserved)
    }

    fn ingress_with(&mut self, st: &State, port: u32, frame: &[u8], now_us: u64, itype: i128, keep: &[(usize, i128)]) -> IngressOutcome {
        self.now_us = now_us;
        let mut out = IngressOutcome::default();
        let mut itype = itype;
        let mut keep: Vec<(usize, i128)> = keep.to_vec();
        for _ in 0..=MAX_RESUBMITS {
            match self.ingress_pass(st, port, frame, itype, &keep, &mut out) {
                Some(preserved) => {
                    keep = preserved;
                    itype = instance_type::RESUBMIT;
                }
                None => return out,
            }
        }
        out.dropped = true;
        out
    }

    /// A copy of `src` in a recycled buffer when one is available.
    fn copy_of(&mut self, src: &PacketState) -> Box<PacketState> {
        match self.spare.pop() {
            Some(mut b) => {
                (*b).clone_from(src);
                b
            }
            None => Box::new(src.clone()),
        }
    }

    fn recycle(&mut self, pkt: Box<PacketState>) {
        if self.spare.len() < SPARE_PACKETS && self.fits(&pkt) {
            self.spare.push(pkt);
        }
    }

    fn fresh_packet(&mut self, port: u32, frame_len: usize, itype: i128, keep: &[(usize, i128)]) -> Box<PacketState> {
        let mut pkt = match self.spare.pop() {
            Some(mut b) => {
                b.reset_to(&self.template);
                b
            }
            None => Box::new(self.template.clone()),
        };
        let n = pkt.fields.len();
        for (f, v) in keep.iter().filter(|(f, _)| *f < n) {
            pkt.fields[*f] = *v;
        }
        let s = &self.prog.std;
        match &self.stores.ingress {
            // instance types are small non-negative constants
            Some(places) => store_all(&mut pkt.fields, places, [port as u64, itype as u64, frame_len as u64, self.now_us]),
            None => {
                set_opt(&mut pkt, s.ingress_port, port as i128);
                set_opt(&mut pkt, s.instance_type, itype);
                set_opt(&mut pkt, s.packet_length, frame_len as i128);
                set_opt(&mut pkt, s.ingress_global_timestamp, self.now_us as i128);
            }
        }
        pkt.ingress_len = frame_len;
        pkt
    }

    /// One ingress pass. Returns the preserved fields if the packet is resubmitted.
    fn ingress_pass(&mut self, st: &State, port: u32, frame: &[u8], itype: i128, keep: &[(usize, i128)], out: &mut IngressOutcome) -> Option<Vec<(usize, i128)>> {
        let prog = self.prog.clone();
        let s = &prog.std;
        let mut pkt = self.fresh_packet(port, frame.len(), itype, keep);
        self.flags = Flags::default();
        out.parser_error = self.parse_and_verify(&prog, st, &mut pkt, frame);
        match self.compiled.clone() {
            Some(c) => c.run_ingress(self, st, &mut pkt),
            None => self.run_pipeline(&prog, st, &mut pkt, prog.ingress.init),
        }
        self.flags.exit = false;
        out.assert_failed |= self.flags.assert_failed;
        let flags = std::mem::take(&mut self.flags);

        if let Some((session, fl)) = flags.clone {
            self.clone_i2e(st, &pkt, port, frame, session, fl, out);
        }
        if let Some(l) = flags.digest {
            out.digests.push(self.digest(&pkt, l));
        }
        if let Some(fl) = flags.resubmit {
            let keep = self.preserved(&pkt, fl);
            self.recycle(pkt);
            return Some(keep);
        }
        let mgid = get_opt(&pkt, s.mcast_grp);
        if mgid != 0 {
            set_opt(&mut pkt, s.instance_type, instance_type::REPLICATION);
            let group = st.mc_groups.read().get(&(mgid as u32)).cloned().unwrap_or_default();
            out.dropped = group.is_empty();
            self.replicate(&pkt, &group, &mut out.queued);
            self.recycle(pkt);
            return None;
        }
        let egress_spec = get_opt(&pkt, s.egress_spec);
        if egress_spec == DROP_PORT as i128 || flags.assert_failed {
            out.dropped = true;
            self.recycle(pkt);
            return None;
        }
        set_opt(&mut pkt, s.instance_type, instance_type::NORMAL);
        out.queued.push(self.queued(pkt, egress_spec as u32));
        None
    }

    /// Whether a packet's header vector was laid out for this executor's program.
    fn fits(&self, pkt: &PacketState) -> bool {
        let t = &self.template;
        pkt.fields.len() == t.fields.len()
            && pkt.valid.len() == t.valid.len()
            && pkt.varbits.len() == t.varbits.len()
            && pkt.stack_next.len() == t.stack_next.len()
            && pkt.union_stack_next.len() == t.union_stack_next.len()
    }

    fn queued(&self, pkt: Box<PacketState>, port: u32) -> QueuedPacket {
        let s = &self.prog.std;
        let wire_len = self.wire_len(&pkt);
        QueuedPacket {
            egress_port: port,
            priority: (get_opt(&pkt, s.priority) & 0x7) as u8,
            instance_type: get_opt(&pkt, s.instance_type) as u8,
            wire_len,
            buffered_len: if self.prog.tna_ingress_deparser.is_empty() { wire_len } else { self.buffered_len(&pkt) },
            pkt,
        }
    }

    /// One copy per (port, rid), with egress_rid set.
    fn replicate(&mut self, pkt: &PacketState, replicas: &[(u32, u32)], queue: &mut impl Extend<QueuedPacket>) {
        for (port, rid) in replicas {
            let mut copy = self.copy_of(pkt);
            set_opt(&mut copy, self.prog.std.egress_rid, *rid as i128);
            queue.extend([self.queued(copy, *port)]);
        }
    }

    fn preserved(&self, pkt: &PacketState, fl: Option<usize>) -> Vec<(usize, i128)> {
        fl.map(|l| self.prog.field_lists[l].fields.iter().map(|f| (*f, pkt.fields[*f])).collect()).unwrap_or_default()
    }

    /// BMv2 re-parses the original frame for an ingress clone and copies the field list.
    #[allow(clippy::too_many_arguments)]
    fn clone_i2e(&mut self, st: &State, pkt: &PacketState, port: u32, frame: &[u8], session: u32, fl: Option<usize>, out: &mut IngressOutcome) {
        let prog = self.prog.clone();
        let Some(cfg) = st.clone_sessions.read().get(&session).cloned() else { return };
        let keep = self.preserved(pkt, fl);
        let mut copy = self.fresh_packet(port, frame.len(), instance_type::INGRESS_CLONE, &[]);
        let saved = std::mem::take(&mut self.flags);
        self.parse_and_verify(&prog, st, &mut copy, frame);
        self.flags = saved;
        for (f, v) in keep {
            copy.fields[f] = v;
        }
        set_opt(&mut copy, self.prog.std.instance_type, instance_type::INGRESS_CLONE);
        if cfg.truncate > 0 {
            copy.truncate = Some(cfg.truncate);
        }
        self.replicate(&copy, &cfg.replicas, &mut out.queued);
        self.recycle(copy);
    }

    fn digest(&self, pkt: &PacketState, l: usize) -> Digest {
        let list = &self.prog.learn_lists[l];
        let fields = list
            .fields
            .iter()
            .map(|f| {
                let w = self.prog.field_width(*f);
                crate::state::value_to_bytes(pkt.fields[*f] as u128 & mask_of(w), w)
            })
            .collect();
        Digest { name: list.name.clone(), fields }
    }

    /// Runs egress for a dequeued packet, then deparses it.
    pub fn egress(&mut self, st: &State, qp: QueuedPacket, q: QueueMeta, now_us: u64) -> EgressOutcome {
        let prog = self.prog.clone();
        self.now_us = now_us;
        let s = &prog.std;
        let mut pkt = qp.pkt;
        let mut out = EgressOutcome::default();
        if !self.fits(&pkt) {
            return out; // queued under a previous pipeline: drop it
        }
        let len = pkt.ingress_len;
        match &self.stores.egress {
            Some(places) => store_all(
                &mut pkt.fields,
                places,
                [now_us, q.enq_timestamp, q.enq_qdepth, q.deq_timedelta, q.deq_qdepth, qp.egress_port as u64, DROP_PORT as u64 + 1, len as u64],
            ),
            None => {
                set_opt(&mut pkt, s.egress_global_timestamp, now_us as i128);
                set_opt(&mut pkt, s.enq_timestamp, q.enq_timestamp as i128);
                set_opt(&mut pkt, s.enq_qdepth, q.enq_qdepth as i128);
                set_opt(&mut pkt, s.deq_timedelta, q.deq_timedelta as i128);
                set_opt(&mut pkt, s.deq_qdepth, q.deq_qdepth as i128);
                set_opt(&mut pkt, s.egress_port, qp.egress_port as i128);
                set_opt(&mut pkt, s.egress_spec, DROP_PORT as i128 + 1);
                set_opt(&mut pkt, s.packet_length, len as i128);
            }
        }
        self.flags = Flags::default();
        if let Some(parser) = &prog.tna_egress_parser {
            self.tna_reparse(&prog, st, &mut pkt, parser);
        }
        match self.compiled.clone() {
            Some(c) => c.run_egress(self, st, &mut pkt),
            None => self.run_pipeline(&prog, st, &mut pkt, prog.egress.init),
        }
        let flags = std::mem::take(&mut self.flags);
        out.assert_failed = flags.assert_failed;

        if let Some((session, fl)) = flags.clone {
            self.clone_e2e(st, &pkt, session, fl, &mut out);
        }
        if get_opt(&pkt, s.egress_spec) == DROP_PORT as i128 || flags.assert_failed {
            self.recycle(pkt);
            return out;
        }
        let mut frame = self.deparse(&prog, st, &mut pkt);
        if let Some(fl) = flags.recirculate {
            out.recirculate = Some(Recirculation {
                port: get_opt(&pkt, s.ingress_port) as u32,
                frame,
                preserved: self.preserved(&pkt, fl),
            });
            self.recycle(pkt);
            return out;
        }
        if let Some(n) = pkt.truncate {
            frame.truncate(n);
        }
        out.out = Some((qp.egress_port, frame));
        self.recycle(pkt);
        out
    }

    fn clone_e2e(&mut self, st: &State, pkt: &PacketState, session: u32, fl: Option<usize>, out: &mut EgressOutcome) {
        let Some(cfg) = st.clone_sessions.read().get(&session).cloned() else { return };
        let keep = self.preserved(pkt, fl);
        let mut copy = self.copy_of(pkt);
        for hdr in self.prog.headers.iter().filter(|h| h.metadata) {
            copy.fields[hdr.first_field..hdr.first_field + hdr.num_fields].fill(0);
        }
        for (f, v) in keep {
            copy.fields[f] = v;
        }
        set_opt(&mut copy, self.prog.std.instance_type, instance_type::EGRESS_CLONE);
        copy.truncate = if cfg.truncate > 0 { Some(cfg.truncate) } else { None };
        self.replicate(&copy, &cfg.replicas, &mut out.clones);
        self.recycle(copy);
    }

    // ---------------- parser ----------------

    /// Parses `frame` into `pkt`, verifies checksums; returns the parser error code (0 = none).
    fn parse_and_verify(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, frame: &[u8]) -> i128 {
        let compiled = self.compiled.clone();
        let (pos, error) = match &compiled {
            Some(c) => c.parse(self, st, pkt, frame),
            None => self.parse(prog, st, pkt, frame),
        };
        pkt.payload.clear();
        pkt.payload.extend_from_slice(&frame[pos.min(frame.len())..]);
        set_opt(pkt, self.prog.std.parser_error, error);
        let bad = match &compiled {
            Some(c) => c.verify_checksums(self, st, pkt),
            None => self.verify_checksums(prog, st, pkt),
        };
        set_opt(pkt, self.prog.std.checksum_error, bad as i128);
        error
    }

    /// Returns (bytes consumed, error code).
    fn parse(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, frame: &[u8]) -> (usize, i128) {
        run_parser(prog, prog.parser.init, |si, pos| {
            let ps = &prog.parser.states[si];
            for op in &ps.ops {
                self.parser_op(prog, st, pkt, frame, pos, op)?;
            }
            self.select(st, pkt, frame, *pos, ps)
        })
    }

    pub(crate) fn parser_op(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, frame: &[u8], pos: &mut usize, op: &ParserOp) -> Result<(), i128> {
        let env = &Env { st, locals: &[], look: Some((frame, *pos)) };
        let errs = &self.prog.errors;
        match op {
            ParserOp::Extract(t) => {
                let h = self.extract_target(pkt, t)?;
                *pos = self.extract(pkt, h, frame, *pos, 0)?;
            }
            ParserOp::ExtractVL(t, len) => {
                // BMv2's order: a partial byte, then the frame's end, then max_length.
                let bits = self.eval(env, pkt, len);
                if bits % 8 != 0 {
                    return Err(errs.parser_invalid_argument);
                }
                let h = self.extract_target(pkt, t)?;
                let ht = &self.prog.header_types[self.prog.headers[h].type_idx];
                let bytes = ht.fixed_bits as i128 / 8 + bits / 8;
                if bits < 0 || bytes > (frame.len() - *pos) as i128 {
                    return Err(errs.packet_too_short);
                }
                if bytes > ht.max_length as i128 {
                    return Err(errs.header_too_short);
                }
                *pos = self.extract(pkt, h, frame, *pos, (bits / 8) as usize)?;
            }
            ParserOp::Set(lv, e) => {
                // BMv2 fails the parser when a set's lookahead reads past the frame.
                if lookahead_end(e).is_some_and(|end| *pos * 8 + end > frame.len() * 8) {
                    return Err(errs.packet_too_short);
                }
                let v = self.eval(env, pkt, e);
                self.store(env, pkt, lv, v);
            }
            ParserOp::Verify(cond, code) => {
                if self.eval(env, pkt, cond) == 0 {
                    return Err(self.eval(env, pkt, code));
                }
            }
            ParserOp::Advance(e) => {
                let bits = self.eval(env, pkt, e);
                if bits % 8 != 0 {
                    return Err(errs.parser_invalid_argument);
                }
                if bits < 0 {
                    return Err(errs.packet_too_short);
                }
                let to = pos.saturating_add((bits / 8).min(usize::MAX as i128) as usize);
                if to > frame.len() {
                    return Err(errs.packet_too_short);
                }
                *pos = to;
            }
            ParserOp::Primitive(p) => {
                self.prim(prog, env, pkt, p);
            }
        }
        Ok(())
    }

    /// The header an extract writes: a fixed header or the next stack element.
    fn extract_target(&self, pkt: &mut PacketState, t: &ExtractTarget) -> Result<usize, i128> {
        let oob = self.prog.errors.stack_out_of_bounds;
        match t {
            ExtractTarget::Header(h) => Ok(*h),
            ExtractTarget::Stack(s) => {
                let next = pkt.stack_next[*s];
                let h = *self.prog.stacks[*s].headers.get(next).ok_or(oob)?;
                pkt.stack_next[*s] += 1;
                Ok(h)
            }
            ExtractTarget::UnionStack(s, m) => {
                let next = pkt.union_stack_next[*s];
                let u = *self.prog.union_stacks[*s].unions.get(next).ok_or(oob)?;
                pkt.union_stack_next[*s] += 1;
                Ok(self.prog.unions[u].headers[*m])
            }
        }
    }

    /// Extracts header `h` at byte `pos` (with `vl_bytes` for its varbit field); returns the new position.
    fn extract(&self, pkt: &mut PacketState, h: usize, frame: &[u8], pos: usize, vl_bytes: usize) -> Result<usize, i128> {
        let hdr = &self.prog.headers[h];
        let ht = &self.prog.header_types[hdr.type_idx];
        let len = ht.fixed_bits as usize / 8 + vl_bytes;
        if pos + len > frame.len() {
            return Err(self.prog.errors.packet_too_short);
        }
        let buf = &frame[pos..pos + len];
        let mut bit = 0usize;
        // One bounds check for the header's fields instead of one per field.
        let dst = &mut pkt.fields[hdr.first_field..hdr.first_field + ht.fields.len()];
        for (f, d) in ht.fields.iter().zip(dst.iter_mut()) {
            if f.varbit {
                let slot = hdr.varbit_slot.expect("varbit header has a slot");
                pkt.varbits[slot].clear();
                pkt.varbits[slot].extend_from_slice(&buf[bit / 8..bit / 8 + vl_bytes]);
                bit += vl_bytes * 8;
                continue;
            }
            let raw = read_bits(buf, bit, f.width);
            *d = if f.signed { sign_extend(raw, f.width) } else { raw as i128 };
            bit += f.width as usize;
        }
        self.set_valid(pkt, h, true);
        Ok(pos + len)
    }

    pub(crate) fn select(&mut self, st: &State, pkt: &PacketState, frame: &[u8], pos: usize, ps: &ParseState) -> Result<Option<usize>, i128> {
        let mut key = std::mem::take(&mut self.select);
        key.clear();
        for part in &ps.key {
            let (v, w) = match part {
                KeyPart::Field(e, w) => (self.eval(&Env { st, locals: &[], look: None }, pkt, e) as u128, *w),
                KeyPart::Lookahead(off, w) => {
                    let start = pos * 8 + *off as usize;
                    if start + *w as usize > frame.len() * 8 {
                        self.select = key;
                        return Err(self.prog.errors.packet_too_short);
                    }
                    (read_bits(frame, start, *w), *w)
                }
            };
            let n = w.div_ceil(8) as usize;
            let v = v & mask_of(w);
            key.extend_from_slice(&v.to_be_bytes()[16 - n..]);
        }
        let mut result = Err(self.prog.errors.no_match);
        for t in &ps.transitions {
            let hit = match &t.matcher {
                TransitionMatch::Default => true,
                TransitionMatch::Value { value, mask } => masked_eq(&key, value, mask.as_deref()),
                TransitionMatch::ValueSet { vset, mask } => {
                    st.value_sets[*vset].read().iter().any(|v| v.len() == key.len() && masked_eq(&key, v, mask.as_deref()))
                }
            };
            if hit {
                result = Ok(t.next);
                break;
            }
        }
        self.select = key;
        result
    }

    // ---------------- checksums and deparser ----------------

    fn verify_checksums(&mut self, prog: &Program, st: &State, pkt: &PacketState) -> bool {
        let mut bad = false;
        // A checksum whose target header is invalid is neither verified nor updated.
        let target_valid = |c: &&Checksum| pkt.valid[prog.field_locs[c.target].header];
        for c in prog.checksums.iter().filter(|c| c.verify).filter(target_valid) {
            if let Some(cond) = &c.cond {
                if self.eval(&Env { st, locals: &[], look: None }, pkt, cond) == 0 {
                    continue;
                }
            }
            let w = prog.field_width(c.target);
            let want = self.calculate(prog, pkt, c.calc) as u128 & mask_of(w);
            if want != pkt.fields[c.target] as u128 & mask_of(w) {
                bad = true;
            }
        }
        bad
    }

    fn update_checksums(&mut self, prog: &Program, st: &State, pkt: &mut PacketState) {
        for c in prog.checksums.iter().filter(|c| c.update) {
            if !pkt.valid[prog.field_locs[c.target].header] {
                continue;
            }
            if let Some(cond) = &c.cond {
                if self.eval(&Env { st, locals: &[], look: None }, pkt, cond) == 0 {
                    continue;
                }
            }
            let v = self.calculate(prog, pkt, c.calc) as i128;
            self.set_field(pkt, c.target, v);
        }
    }

    /// Evaluates a calculation (hash) over its inputs; invalid headers are skipped.
    pub(crate) fn calculate(&mut self, prog: &Program, pkt: &PacketState, calc: usize) -> u64 {
        let c = &prog.calculations[calc];
        let mut w = std::mem::take(&mut self.calc);
        w.clear();
        let mut last_header = None;
        for inp in &c.inputs {
            match inp {
                CalcInput::Field(f) => {
                    let h = prog.field_locs[*f].header;
                    last_header = Some(h);
                    if pkt.valid[h] {
                        w.push(prog.field_width(*f), pkt.fields[*f] as u128);
                    }
                }
                CalcInput::Varbit(h) => {
                    last_header = Some(*h);
                    if let (true, Some(slot)) = (pkt.valid[*h], prog.headers[*h].varbit_slot) {
                        w.push_bytes(&pkt.varbits[slot]);
                    }
                }
                CalcInput::Const(v, width) => w.push(*width, *v as u128),
                CalcInput::Header(h) => {
                    last_header = Some(*h);
                    if pkt.valid[*h] {
                        self.write_header(pkt, *h, &mut w);
                    }
                }
                CalcInput::Payload => {
                    let after = last_header.and_then(|h| prog.deparser.iter().position(|x| *x == h)).map_or(0, |i| i + 1);
                    for h in &prog.deparser[after.min(prog.deparser.len())..] {
                        if pkt.valid[*h] {
                            self.write_header(pkt, *h, &mut w);
                        }
                    }
                    w.push_bytes(&pkt.payload);
                }
            }
        }
        let rng = &mut self.rng;
        let v = hash::compute(c.algo, &w.buf, || rng.next_u64());
        self.calc = w;
        v
    }

    fn write_header(&self, pkt: &PacketState, h: usize, w: &mut BitWriter) {
        let hdr = &self.prog.headers[h];
        let ht = &self.prog.header_types[hdr.type_idx];
        let src = &pkt.fields[hdr.first_field..hdr.first_field + ht.fields.len()];
        for (f, v) in ht.fields.iter().zip(src) {
            if f.varbit {
                w.push_bytes(&pkt.varbits[hdr.varbit_slot.expect("varbit slot")]);
            } else {
                w.push(f.width, *v as u128);
            }
        }
    }

    fn header_bytes(&self, pkt: &PacketState, h: usize) -> usize {
        let hdr = &self.prog.headers[h];
        let fixed = self.prog.header_types[hdr.type_idx].fixed_bits as usize / 8;
        fixed + hdr.varbit_slot.map_or(0, |s| pkt.varbits[s].len())
    }

    /// TNA: the headers the ingress deparser emits, in order.
    fn tna_emitted<'a>(&'a self, pkt: &'a PacketState) -> impl Iterator<Item = usize> + 'a {
        let prog = &self.prog;
        prog.tna_ingress_deparser.iter().copied().filter(move |h| pkt.valid[*h] && !prog.headers[*h].metadata)
    }

    /// TNA: the bytes of the ingress deparser's output.
    fn buffered_len(&self, pkt: &PacketState) -> usize {
        self.tna_emitted(pkt).map(|h| self.header_bytes(pkt, h)).sum::<usize>() + pkt.payload.len()
    }

    fn wire_len(&self, pkt: &PacketState) -> usize {
        if let Some(bytes) = &self.deparser_bytes {
            return bytes.iter().filter(|(h, _)| pkt.valid[*h]).map(|(_, n)| n).sum::<usize>() + pkt.payload.len();
        }
        let headers: usize = self.prog.deparser.iter().filter(|h| pkt.valid[**h]).map(|h| self.header_bytes(pkt, *h)).sum();
        headers + pkt.payload.len()
    }

    fn deparse(&mut self, prog: &Program, st: &State, pkt: &mut PacketState) -> Vec<u8> {
        if let Some(c) = self.compiled.clone() {
            if let Some(frame) = c.deparse(self, st, pkt) {
                return frame;
            }
        }
        self.update_checksums(prog, st, pkt);
        let len = self.wire_len(pkt);
        let mut w = BitWriter { buf: self.frame_buffer(len), bits: 0 };
        for h in &self.prog.deparser {
            if pkt.valid[*h] && !self.prog.headers[*h].metadata {
                self.write_header(pkt, *h, &mut w);
            }
        }
        w.push_bytes(&pkt.payload);
        w.buf
    }

    /// TNA: the bytes the ingress deparser emits (bridged header included), parsed
    /// again by the egress parser into headers that all start invalid. Metadata
    /// stays: it holds the intrinsic metadata the lowering copies in.
    fn tna_reparse(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, parser: &Parser) {
        let mut w = BitWriter { buf: Vec::with_capacity(self.buffered_len(pkt)), bits: 0 };
        for h in self.tna_emitted(pkt) {
            self.write_header(pkt, h, &mut w);
        }
        w.push_bytes(&pkt.payload);
        let frame = w.buf;
        for (h, hdr) in prog.headers.iter().enumerate() {
            pkt.valid[h] &= hdr.metadata;
        }
        pkt.varbits.iter_mut().for_each(Vec::clear);
        pkt.stack_next.fill(0);
        pkt.union_stack_next.fill(0);
        let (pos, error) = run_parser(prog, parser.init, |si, pos| {
            let ps = &parser.states[si];
            for op in &ps.ops {
                self.parser_op(prog, st, pkt, &frame, pos, op)?;
            }
            self.select(st, pkt, &frame, *pos, ps)
        });
        pkt.payload.clear();
        pkt.payload.extend_from_slice(&frame[pos.min(frame.len())..]);
        set_opt(pkt, prog.std.parser_error, error);
    }

    // ---------------- controls ----------------

    fn run_pipeline(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, init: Option<Node>) {
        let mut node = init;
        let mut steps = 0;
        while let Some(n) = node {
            steps += 1;
            if self.flags.exit || steps > MAX_CONTROL_STEPS {
                break;
            }
            node = match n {
                Node::Table(t) => self.apply_table(prog, st, pkt, t),
                Node::Cond(c) => {
                    let cond = &prog.conditionals[c];
                    if self.eval(&Env { st, locals: &[], look: None }, pkt, &cond.expr) != 0 {
                        cond.true_next
                    } else {
                        cond.false_next
                    }
                }
                Node::ActionCall(a) => {
                    let call = &prog.action_calls[a];
                    self.run_action(prog, st, pkt, call.action, &[]);
                    call.next
                }
            };
        }
    }

    fn apply_table(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, ti: usize) -> Option<Node> {
        let t = &prog.tables[ti];
        if t.default_fixed {
            // p4c's keyless "dummy" tables: always a miss with a constant action, no lock needed.
            let Some(d) = &t.default_entry else { return t.base_default_next };
            self.run_action(prog, st, pkt, d.action, &d.args);
            return t.next_miss.unwrap_or_else(|| t.next_after(d.action));
        }
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        for kf in &t.keys {
            let v = self.eval(&Env { st, locals: &[], look: None }, pkt, &kf.source) as u128 & mask_of(kf.width);
            key.push(kf.mask.map_or(v, |m| v & m));
        }
        let ts = st.tables[ti].read();
        let next = match ts.lookup(t, &key) {
            Some(e) => {
                self.direct_resources(t, e, pkt);
                let action = self.run_entry(prog, st, pkt, t, &e.act);
                t.next_hit.unwrap_or_else(|| action.map_or(t.base_default_next, |a| t.next_after(a)))
            }
            None => {
                let action = ts.default.as_ref().and_then(|d| self.run_entry(prog, st, pkt, t, d));
                t.next_miss.unwrap_or_else(|| action.map_or(t.base_default_next, |a| t.next_after(a)))
            }
        };
        drop(ts);
        self.key = key;
        next
    }

    /// A hit's direct counter and direct meter.
    pub(crate) fn direct_resources(&self, t: &Table, e: &crate::state::Entry, pkt: &mut PacketState) {
        if t.direct_counter.is_some() {
            e.pkts.fetch_add(1, Ordering::Relaxed);
            e.bytes.fetch_add(get_opt(pkt, self.prog.std.packet_length) as u64, Ordering::Relaxed);
        }
        if let Some(m) = t.direct_meter {
            let amount = self.meter_amount(pkt, m);
            let color = e.meter.lock().execute(amount, self.now_us);
            if let Some(f) = self.prog.meters[m].result_target {
                self.set_field(pkt, f, color);
            }
        }
    }

    /// Runs what an entry or default names; returns the action run (None: an
    /// empty group or a member that is gone, which runs nothing).
    pub(crate) fn run_entry(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, t: &Table, act: &EntryAction) -> Option<usize> {
        let target = match act {
            EntryAction::Call(c) => {
                self.run_action(prog, st, pkt, c.action, &c.args);
                return Some(c.action);
            }
            EntryAction::Indirect(target) => *target,
        };
        let p = t.profile?;
        let ps = st.profiles[p].read();
        let member = match target {
            Indirect::Member(m) => m,
            Indirect::Group(g) => {
                // As BMv2's selector: the hash of the selector fields modulo the group's size
                // picks a member (members in ascending id order).
                let members = ps.groups.get(&g).filter(|m| !m.is_empty())?;
                let sel = prog.action_profiles[p].selector?;
                let h = self.calculate(prog, pkt, sel);
                members[(h % members.len() as u64) as usize]
            }
        };
        let call = ps.members.get(&member)?;
        self.run_action(prog, st, pkt, call.action, &call.args);
        Some(call.action)
    }

    fn meter_amount(&self, pkt: &PacketState, m: usize) -> u64 {
        match self.prog.meters[m].unit {
            MeterUnit::Packets => 1,
            MeterUnit::Bytes => get_opt(pkt, self.prog.std.packet_length) as u64,
        }
    }

    pub(crate) fn run_action(&mut self, prog: &Program, st: &State, pkt: &mut PacketState, action: usize, args: &[i128]) {
        let prims = &prog.actions[action].prims;
        let env = &Env { st, locals: args, look: None };
        let mut pc = 0;
        let mut steps = 0;
        while pc < prims.len() && !self.flags.exit {
            steps += 1;
            if steps > MAX_CONTROL_STEPS {
                break;
            }
            match &prims[pc] {
                Prim::Jump(t) => pc = *t,
                Prim::JumpIfZero(c, t) => pc = if self.eval(env, pkt, c) == 0 { *t } else { pc + 1 },
                // The most common primitive, inline: no call into `prim`'s large frame.
                Prim::Assign(LValue::Field(f), e) => {
                    let v = self.leaf(env, pkt, e);
                    self.set_field(pkt, *f, v);
                    pc += 1;
                }
                p => {
                    self.prim(prog, env, pkt, p);
                    pc += 1;
                }
            }
        }
    }

    pub(crate) fn prim(&mut self, prog: &Program, env: &Env, pkt: &mut PacketState, p: &Prim) {
        let s = &prog.std;
        match p {
            Prim::Assign(lv, e) => {
                let v = self.leaf(env, pkt, e);
                self.store(env, pkt, lv, v);
            }
            Prim::AssignVL(d, src) => {
                let (dh, sh) = (prog.field_locs[*d].header, prog.field_locs[*src].header);
                if let (Some(ds), Some(ss)) = (prog.headers[dh].varbit_slot, prog.headers[sh].varbit_slot) {
                    pkt.varbits[ds] = pkt.varbits[ss].clone();
                }
            }
            Prim::AssignHeader(d, src) => {
                if let (Some(d), Some(src)) = (self.header(env, pkt, d), self.header(env, pkt, src)) {
                    self.copy_header(pkt, d, src);
                }
            }
            Prim::AssignUnion(d, src) => {
                if let (Some(d), Some(src)) = (self.union(env, pkt, d), self.union(env, pkt, src)) {
                    for (a, b) in prog.unions[d].headers.iter().zip(&prog.unions[src].headers) {
                        self.copy_header(pkt, *a, *b);
                    }
                }
            }
            Prim::AssignHeaderStack(d, src) => {
                for (a, b) in prog.stacks[*d].headers.iter().zip(&prog.stacks[*src].headers) {
                    self.copy_header(pkt, *a, *b);
                }
                pkt.stack_next[*d] = pkt.stack_next[*src];
            }
            Prim::AssignUnionStack(d, src) => {
                for (a, b) in prog.union_stacks[*d].unions.iter().zip(&prog.union_stacks[*src].unions) {
                    for (x, y) in prog.unions[*a].headers.iter().zip(&prog.unions[*b].headers) {
                        self.copy_header(pkt, *x, *y);
                    }
                }
                pkt.union_stack_next[*d] = pkt.union_stack_next[*src];
            }
            Prim::SetValid(h) => {
                if let Some(h) = self.header(env, pkt, h) {
                    if !pkt.valid[h] {
                        let hdr = &prog.headers[h];
                        pkt.fields[hdr.first_field..hdr.first_field + hdr.num_fields].fill(0);
                    }
                    self.set_valid(pkt, h, true);
                }
            }
            Prim::SetInvalid(h) => {
                if let Some(h) = self.header(env, pkt, h) {
                    self.set_valid(pkt, h, false);
                }
            }
            Prim::Push(stack, n) => {
                let n = self.eval(env, pkt, n).clamp(0, 1 << 20) as usize;
                let hs = prog.stacks[*stack].headers.clone();
                self.shift_headers(pkt, &hs, n, true);
                pkt.stack_next[*stack] = (pkt.stack_next[*stack] + n).min(hs.len());
            }
            Prim::Pop(stack, n) => {
                let n = self.eval(env, pkt, n).clamp(0, 1 << 20) as usize;
                let hs = prog.stacks[*stack].headers.clone();
                self.shift_headers(pkt, &hs, n, false);
                pkt.stack_next[*stack] = pkt.stack_next[*stack].saturating_sub(n);
            }
            Prim::PushUnion(stack, n) | Prim::PopUnion(stack, n) => {
                let push = matches!(p, Prim::PushUnion(..));
                let n = self.eval(env, pkt, n).clamp(0, 1 << 20) as usize;
                let us = &prog.union_stacks[*stack].unions;
                let members = us.first().map_or(0, |u| prog.unions[*u].headers.len());
                for m in 0..members {
                    let hs: Vec<usize> = us.iter().map(|u| prog.unions[*u].headers[m]).collect();
                    self.shift_headers(pkt, &hs, n, push);
                }
                let next = &mut pkt.union_stack_next[*stack];
                *next = if push { (*next + n).min(us.len()) } else { next.saturating_sub(n) };
            }
            Prim::MarkToDrop => {
                set_opt(pkt, s.egress_spec, DROP_PORT as i128);
                set_opt(pkt, s.mcast_grp, 0);
            }
            Prim::Exit => self.flags.exit = true,
            Prim::Jump(_) | Prim::JumpIfZero(..) | Prim::NoOp => {}
            Prim::Random(lv, lo, hi) => {
                let (lo, hi) = (self.eval(env, pkt, lo), self.eval(env, pkt, hi));
                let v = if hi <= lo { lo } else { lo.wrapping_add(self.uniform((hi - lo) as u128 + 1) as i128) };
                self.store(env, pkt, lv, v);
            }
            Prim::LpfSample(lv, avg, sample, dt_us, tau_ns) => {
                let v = crate::tna::lpf_sample(
                    self.eval(env, pkt, avg),
                    self.eval(env, pkt, sample),
                    self.eval(env, pkt, dt_us),
                    self.eval(env, pkt, tau_ns),
                );
                self.store(env, pkt, lv, v);
            }
            Prim::Count(c, idx) => {
                let i = self.eval(env, pkt, idx);
                let cells = &env.st.counters[*c];
                if i >= 0 && (i as usize) < cells.pkts.len() {
                    cells.pkts[i as usize].fetch_add(1, Ordering::Relaxed);
                    cells.bytes[i as usize].fetch_add(get_opt(pkt, s.packet_length) as u64, Ordering::Relaxed);
                }
            }
            Prim::ExecuteMeter(m, idx, lv) => {
                let i = self.eval(env, pkt, idx);
                let amount = self.meter_amount(pkt, *m);
                let color = {
                    let mut cells = env.st.meters[*m].lock();
                    match cells.get_mut(i.clamp(0, usize::MAX as i128) as usize) {
                        Some(cell) if i >= 0 => cell.execute(amount, self.now_us),
                        _ => crate::state::COLOR_GREEN,
                    }
                };
                self.store(env, pkt, lv, color);
            }
            Prim::RegisterRead(lv, r, idx) => {
                let v = self.register_value(env, pkt, *r, idx);
                self.store(env, pkt, lv, v);
            }
            Prim::RegisterWrite(r, idx, val) => {
                let i = self.eval(env, pkt, idx);
                let v = self.leaf(env, pkt, val);
                if let Ok(i) = usize::try_from(i) {
                    env.st.registers[*r].set(i, v as u128 & mask_of(prog.registers[*r].width));
                }
            }
            Prim::Hash(lv, base, calc, max) => {
                let base = self.eval(env, pkt, base);
                let max = self.eval(env, pkt, max);
                let h = self.calculate(prog, pkt, *calc) as i128;
                let v = if max > 0 { base.wrapping_add(h % max) } else { base.wrapping_add(h) };
                self.store(env, pkt, lv, v);
            }
            Prim::Digest(l) => self.flags.digest = Some(*l),
            Prim::CloneI2E(session, fl) | Prim::CloneE2E(session, fl) => {
                let sid = self.eval(env, pkt, session);
                self.flags.clone = Some((sid as u32, *fl));
            }
            Prim::Resubmit(fl) => self.flags.resubmit = Some(*fl),
            Prim::Recirculate(fl) => self.flags.recirculate = Some(*fl),
            Prim::Truncate(n) => {
                let n = self.eval(env, pkt, n);
                pkt.truncate = Some(n.clamp(0, usize::MAX as i128) as usize);
            }
            Prim::Log(fmt, args) => {
                if self.logging {
                    let vals: Vec<String> = args.iter().map(|a| self.eval(env, pkt, a).to_string()).collect();
                    self.logs.push(format_log(fmt, &vals));
                }
            }
            Prim::Assert(e) => {
                if self.eval(env, pkt, e) == 0 {
                    self.flags.assert_failed = true;
                    self.flags.exit = true;
                    if self.logging {
                        self.logs.push("assert/assume failed: packet dropped".into());
                    }
                }
            }
        }
    }

    /// Uniform in [0, n) (n >= 1) from the seeded RNG.
    fn uniform(&mut self, n: u128) -> u128 {
        if n <= u64::MAX as u128 {
            ((self.rng.next_u64() as u128) * n) >> 64
        } else {
            (((self.rng.next_u64() as u128) << 64) | self.rng.next_u64() as u128) % n
        }
    }

    /// Moves stack elements by `n` (towards higher indices if `push`); vacated elements become invalid.
    fn shift_headers(&self, pkt: &mut PacketState, hs: &[usize], n: usize, push: bool) {
        let len = hs.len();
        let n = n.min(len);
        if push {
            for i in (n..len).rev() {
                self.copy_header(pkt, hs[i], hs[i - n]);
            }
            for h in &hs[..n] {
                pkt.valid[*h] = false;
            }
        } else {
            for i in 0..len - n {
                self.copy_header(pkt, hs[i], hs[i + n]);
            }
            for h in &hs[len - n..] {
                pkt.valid[*h] = false;
            }
        }
    }

    fn copy_header(&self, pkt: &mut PacketState, d: usize, src: usize) {
        if d == src {
            return;
        }
        let (dh, sh) = (&self.prog.headers[d], &self.prog.headers[src]);
        if pkt.valid[src] {
            for i in 0..dh.num_fields.min(sh.num_fields) {
                pkt.fields[dh.first_field + i] = pkt.fields[sh.first_field + i];
            }
            if let (Some(a), Some(b)) = (dh.varbit_slot, sh.varbit_slot) {
                pkt.varbits[a] = pkt.varbits[b].clone();
            }
        }
        self.set_valid(pkt, d, pkt.valid[src]);
    }

    /// Sets validity; a valid union member invalidates its siblings.
    pub(crate) fn set_valid(&self, pkt: &mut PacketState, h: usize, valid: bool) {
        let hdr = &self.prog.headers[h];
        if hdr.metadata {
            return;
        }
        if valid {
            if let Some(u) = hdr.union {
                for m in &self.prog.unions[u].headers {
                    pkt.valid[*m] = false;
                }
            }
        }
        pkt.valid[h] = valid;
    }

    // ---------------- expressions ----------------

    fn header(&self, env: &Env, pkt: &PacketState, h: &HeaderRef) -> Option<usize> {
        match h {
            HeaderRef::Fixed(i) => Some(*i),
            HeaderRef::StackElem(s, idx) => {
                let i = self.eval(env, pkt, idx);
                usize::try_from(i).ok().and_then(|i| self.prog.stacks[*s].headers.get(i).copied())
            }
            HeaderRef::StackLast(s) => pkt.stack_next[*s].checked_sub(1).map(|i| self.prog.stacks[*s].headers[i]),
            HeaderRef::UnionMember(u, m) => self.union(env, pkt, u).and_then(|u| self.prog.unions[u].headers.get(*m).copied()),
        }
    }

    fn union(&self, env: &Env, pkt: &PacketState, u: &UnionRef) -> Option<usize> {
        match u {
            UnionRef::Fixed(i) => Some(*i),
            UnionRef::StackElem(s, idx) => {
                let i = self.eval(env, pkt, idx);
                usize::try_from(i).ok().and_then(|i| self.prog.union_stacks[*s].unions.get(i).copied())
            }
            UnionRef::StackLast(s) => pkt.union_stack_next[*s].checked_sub(1).map(|i| self.prog.union_stacks[*s].unions[i]),
        }
    }

    fn dyn_field(&self, env: &Env, pkt: &PacketState, h: &HeaderRef, off: usize) -> Option<usize> {
        self.header(env, pkt, h).map(|h| self.prog.headers[h].first_field + off)
    }

    fn store(&self, env: &Env, pkt: &mut PacketState, lv: &LValue, v: i128) {
        let f = match lv {
            LValue::Field(f) => Some(*f),
            LValue::DynField(h, off) => self.dyn_field(env, pkt, h, *off),
        };
        if let Some(f) = f {
            self.set_field(pkt, f, v);
        }
    }

    /// Writes a value into a field, truncated (two's complement) to its width.
    #[inline]
    pub(crate) fn set_field(&self, pkt: &mut PacketState, f: usize, v: i128) {
        let (mask, signed) = self.prog.field_masks[f];
        pkt.fields[f] = if signed { sign_extend(v as u128, self.prog.field_info[f].0) } else { (v as u128 & mask) as i128 };
    }

    /// Leaves (constants, fields, parameters) inline; everything else through `eval`.
    #[inline(always)]
    fn leaf(&self, env: &Env, pkt: &PacketState, e: &Expr) -> i128 {
        match e {
            Expr::Const(v) => *v,
            Expr::Field(f) => pkt.fields[*f],
            Expr::Local(i) => env.locals.get(*i).copied().unwrap_or(0),
            _ => self.eval(env, pkt, e),
        }
    }

    /// The common expression shapes; the rest go to `eval_rare`, keeping this
    /// recursive function's frame small.
    pub(crate) fn eval(&self, env: &Env, pkt: &PacketState, e: &Expr) -> i128 {
        match e {
            Expr::Const(v) => *v,
            Expr::Field(f) => pkt.fields[*f],
            Expr::Local(i) => env.locals.get(*i).copied().unwrap_or(0),
            Expr::Bin(op, a, b) => self.binop(env, pkt, *op, a, b),
            Expr::Valid(HeaderRef::Fixed(h)) => pkt.valid[*h] as i128,
            Expr::Not(a) => (self.eval(env, pkt, a) == 0) as i128,
            Expr::D2b(a) => (self.eval(env, pkt, a) != 0) as i128,
            _ => self.eval_rare(env, pkt, e),
        }
    }

    #[inline(never)]
    fn eval_rare(&self, env: &Env, pkt: &PacketState, e: &Expr) -> i128 {
        match e {
            Expr::Const(v) => *v,
            Expr::Field(f) => pkt.fields[*f],
            Expr::DynField(h, off) => self.dyn_field(env, pkt, h, *off).map_or(0, |f| pkt.fields[f]),
            Expr::Valid(h) => self.header(env, pkt, h).is_some_and(|h| pkt.valid[h]) as i128,
            Expr::ValidUnion(u) => self
                .union(env, pkt, u)
                .is_some_and(|u| self.prog.unions[u].headers.iter().any(|h| pkt.valid[*h])) as i128,
            Expr::Local(i) => env.locals.get(*i).copied().unwrap_or(0),
            Expr::Bin(op, a, b) => self.binop(env, pkt, *op, a, b),
            Expr::Not(a) => (self.eval(env, pkt, a) == 0) as i128,
            Expr::BitNot(a) => !self.eval(env, pkt, a),
            Expr::Neg(a) => self.eval(env, pkt, a).wrapping_neg(),
            Expr::D2b(a) => (self.eval(env, pkt, a) != 0) as i128,
            Expr::Ternary(c, a, b) => {
                if self.eval(env, pkt, c) != 0 {
                    self.eval(env, pkt, a)
                } else {
                    self.eval(env, pkt, b)
                }
            }
            Expr::LastStackIndex(s) => pkt.stack_next[*s] as i128 - 1,
            Expr::LastUnionStackIndex(s) => pkt.union_stack_next[*s] as i128 - 1,
            Expr::SizeStack(s) => pkt.stack_next[*s] as i128,
            Expr::RegisterRead(r, idx) => self.register_value(env, pkt, *r, idx),
            Expr::VarbitEq(a, b, negate) => ((varbit_value(&pkt.varbits[*a]) == varbit_value(&pkt.varbits[*b])) != *negate) as i128,
            Expr::Lookahead(off, w) => match env.look {
                Some((frame, pos)) if (pos * 8 + *off as usize + *w as usize) <= frame.len() * 8 => {
                    read_bits(frame, pos * 8 + *off as usize, *w) as i128
                }
                _ => 0,
            },
        }
    }

    /// A register cell (0 when the index is out of range).
    fn register_value(&self, env: &Env, pkt: &PacketState, r: usize, idx: &Expr) -> i128 {
        let i = self.leaf(env, pkt, idx);
        usize::try_from(i).ok().and_then(|i| env.st.registers[r].get(i)).unwrap_or(0)
    }

    fn binop(&self, env: &Env, pkt: &PacketState, op: BinOp, a: &Expr, b: &Expr) -> i128 {
        // Logical operators short-circuit.
        match op {
            BinOp::And => return (self.eval(env, pkt, a) != 0 && self.eval(env, pkt, b) != 0) as i128,
            BinOp::Or => return (self.eval(env, pkt, a) != 0 || self.eval(env, pkt, b) != 0) as i128,
            _ => {}
        }
        arith(op, self.leaf(env, pkt, a), self.leaf(env, pkt, b))
    }
}

/// Walks the parser's states from its start, `state` running one (its ops and
/// select: the next state, or an error code) at the byte position it advances;
/// returns (bytes consumed, error code), both engines' parse loop.
#[inline(always)]
pub(crate) fn run_parser(prog: &Program, init: Option<usize>, mut state: impl FnMut(usize, &mut usize) -> Result<Option<usize>, i128>) -> (usize, i128) {
    let mut pos = 0usize;
    let mut next = init;
    let mut steps = 0;
    while let Some(si) = next {
        steps += 1;
        if steps > MAX_PARSE_STATES {
            return (pos, prog.errors.parser_timeout);
        }
        match state(si, &mut pos) {
            Ok(n) => next = n,
            Err(e) => return (pos, e),
        }
    }
    (pos, 0)
}

/// How far past the parse position (bits) the lookaheads in `e` read, if it has any.
fn lookahead_end(e: &Expr) -> Option<usize> {
    match e {
        Expr::Lookahead(off, w) => Some(*off as usize + *w as usize),
        Expr::Bin(_, a, b) => lookahead_end(a).max(lookahead_end(b)),
        Expr::Not(a) | Expr::BitNot(a) | Expr::Neg(a) | Expr::D2b(a) => lookahead_end(a),
        Expr::Ternary(c, a, b) => lookahead_end(c).max(lookahead_end(a)).max(lookahead_end(b)),
        _ => None,
    }
}

/// A binary operator on two evaluated operands (128-bit two's complement);
/// the compiled pipeline calls it with `op` known at load time.
#[inline(always)]
pub(crate) fn arith(op: BinOp, x: i128, y: i128) -> i128 {
    match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div => x.checked_div(y).unwrap_or(0),
        BinOp::Mod => x.checked_rem(y).unwrap_or(0),
        BinOp::Shl => if (0..128).contains(&y) { x << y } else { 0 },
        BinOp::Shr => if (0..128).contains(&y) { x >> y } else if x < 0 { -1 } else { 0 },
        BinOp::Eq => (x == y) as i128,
        BinOp::Ne => (x != y) as i128,
        BinOp::Gt => (x > y) as i128,
        BinOp::Ge => (x >= y) as i128,
        BinOp::Lt => (x < y) as i128,
        BinOp::Le => (x <= y) as i128,
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::TwoCompMod => if (1..=128).contains(&y) { sign_extend(x as u128, y as u32) } else { x },
        BinOp::SatCast => {
            if !(1..=127).contains(&y) {
                return x;
            }
            let max = (1i128 << (y - 1)) - 1;
            x.clamp(-max - 1, max)
        }
        BinOp::USatCast => {
            if !(0..=126).contains(&y) {
                return x.max(0);
            }
            x.clamp(0, (1i128 << y) - 1)
        }
        BinOp::And => (x != 0 && y != 0) as i128,
        BinOp::Or => (x != 0 || y != 0) as i128,
    }
}

pub(crate) fn sign_extend(raw: u128, width: u32) -> i128 {
    if width >= 128 {
        return raw as i128;
    }
    let shift = 128 - width;
    ((raw << shift) as i128) >> shift
}

fn masked_eq(key: &[u8], value: &[u8], mask: Option<&[u8]>) -> bool {
    match mask {
        None => key == value,
        Some(m) => key.iter().zip(value).zip(m).all(|((k, v), m)| k & m == v & m),
    }
}

/// Sets a standard_metadata field if the program has it, truncated to its width.
pub(crate) fn set_opt(pkt: &mut PacketState, f: Option<(usize, u32)>, v: i128) {
    if let Some((f, w)) = f {
        // standard_metadata fields are narrow: u64 arithmetic.
        pkt.fields[f] = if w < 64 { (v as u64 & ((1u64 << w) - 1)) as i128 } else { (v as u128 & mask_of(w)) as i128 };
    }
}

pub(crate) fn get_opt(pkt: &PacketState, f: Option<(usize, u32)>) -> i128 {
    f.map_or(0, |(f, _)| pkt.fields[f])
}

/// Substitutes each `{}` in `fmt` with the next value.
fn format_log(fmt: &str, vals: &[String]) -> String {
    let mut out = String::new();
    let mut it = vals.iter();
    let mut rest = fmt;
    while let Some(pos) = rest.find("{}") {
        out.push_str(&rest[..pos]);
        out.push_str(it.next().map_or("{}", |s| s.as_str()));
        rest = &rest[pos + 2..];
    }
    out.push_str(rest);
    out
}

/// A varbit's bytes as a number (leading zero bytes do not change it).
fn varbit_value(bytes: &[u8]) -> &[u8] {
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[first..]
}
