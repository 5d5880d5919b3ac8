//! Run-time state of a loaded program: table entries, counters, registers,
//! meters, multicast groups, clone sessions and parser value sets.
//! `State` is `Send + Sync`; every method takes `&self` so the control plane
//! can write while packet threads read (one RwLock per table, atomic counters).

use crate::load::mask_of;
use crate::program::*;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A control-plane error; the state is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeError {
    UnknownName(String),
    UnknownHandle(String),
    BadValue(String),
    Duplicate(String),
    Full(String),
    Immutable(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, msg) = match self {
            RuntimeError::UnknownName(m) => ("unknown name", m),
            RuntimeError::UnknownHandle(m) => ("unknown handle", m),
            RuntimeError::BadValue(m) => ("bad value", m),
            RuntimeError::Duplicate(m) => ("duplicate entry", m),
            RuntimeError::Full(m) => ("table full", m),
            RuntimeError::Immutable(m) => ("not modifiable", m),
        };
        write!(f, "{kind}: {msg}")
    }
}

impl std::error::Error for RuntimeError {}

type R<T> = Result<T, RuntimeError>;

/// One element of a table key as the control plane gives it (big-endian bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchKey {
    Exact(Vec<u8>),
    Lpm(Vec<u8>, u32),
    Ternary(Vec<u8>, Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
    /// P4Runtime optional: `None` is the wildcard.
    Optional(Option<Vec<u8>>),
}

/// A table entry as read back by the control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryInfo {
    pub handle: u64,
    pub keys: Vec<MatchKey>,
    pub priority: i32,
    /// The action and arguments (empty for an action-profile table's entry, which has `indirect`).
    pub action: String,
    pub args: Vec<Vec<u8>>,
    pub indirect: Option<Indirect>,
}

/// An action profile's members `(id, action, args)` and groups `(id, member ids)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileContents {
    pub members: Vec<(u32, String, Vec<Vec<u8>>)>,
    pub groups: Vec<(u32, Vec<u32>)>,
}

/// Refuses to delete a member or group an entry or a default of these tables still runs.
fn refuse_if_used(tables: &[(&Table, parking_lot::RwLockReadGuard<'_, TableState>)], target: Indirect, profile: &str) -> R<()> {
    for (t, ts) in tables {
        let used = |a: &EntryAction| matches!(a, EntryAction::Indirect(i) if *i == target);
        if ts.default.as_ref().is_some_and(used) || ts.entries.values().any(|e| used(&e.act)) {
            return Err(RuntimeError::BadValue(format!("action profile '{profile}': {target:?} is used by table '{}'", t.name)));
        }
    }
    Ok(())
}

/// Two-rate three-color meter configuration (RFC 2698), as in P4Runtime:
/// rates in units (bytes or packets) per second, bursts in units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeterConfig {
    pub cir: u64,
    pub cburst: u64,
    pub pir: u64,
    pub pburst: u64,
}

pub const COLOR_GREEN: i128 = 0;
pub const COLOR_YELLOW: i128 = 1;
pub const COLOR_RED: i128 = 2;

#[derive(Debug, Clone, Default)]
pub(crate) struct Meter {
    cfg: Option<MeterConfig>,
    tc: f64,
    tp: f64,
    last_us: u64,
}

impl Meter {
    fn configure(&mut self, cfg: Option<MeterConfig>) {
        self.cfg = cfg;
        if let Some(c) = cfg {
            self.tc = c.cburst as f64;
            self.tp = c.pburst as f64;
        }
        self.last_us = 0;
    }

    /// Color-blind trTCM: refill both buckets, then test P then C.
    pub(crate) fn execute(&mut self, amount: u64, now_us: u64) -> i128 {
        let Some(c) = self.cfg else { return COLOR_GREEN };
        let dt = now_us.saturating_sub(self.last_us) as f64 / 1e6;
        self.last_us = self.last_us.max(now_us);
        self.tc = (self.tc + c.cir as f64 * dt).min(c.cburst as f64);
        self.tp = (self.tp + c.pir as f64 * dt).min(c.pburst as f64);
        let b = amount as f64;
        if self.tp < b {
            COLOR_RED
        } else if self.tc < b {
            self.tp -= b;
            COLOR_YELLOW
        } else {
            self.tp -= b;
            self.tc -= b;
            COLOR_GREEN
        }
    }
}

/// What an entry or a table's default runs: an action call, or in an
/// action-profile table a member or a group of the profile.
#[derive(Debug, Clone)]
pub(crate) enum EntryAction {
    Call(ActionCall),
    Indirect(Indirect),
}

/// An action profile's members (action calls) and groups (member ids, ascending).
#[derive(Debug, Default)]
pub(crate) struct ProfileState {
    pub members: FxHashMap<u32, ActionCall>,
    pub groups: FxHashMap<u32, Vec<u32>>,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub key: Vec<KeyElem>,
    /// Internal priority: larger wins. Control-plane priority as given;
    /// for lpm tables the prefix length; for JSON const entries the negated
    /// BMv2 priority (there, lower numbers win).
    pub rank: i64,
    pub priority: i32,
    /// Insertion order, which is also the entry's handle.
    pub seq: u64,
    pub act: EntryAction,
    pub pkts: AtomicU64,
    pub bytes: AtomicU64,
    pub meter: Mutex<Meter>,
}

/// A lookup key's values, inline up to four keys: a lookup neither allocates
/// nor calls memcmp (as a boxed slice key would).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum KeyVals {
    One(u128),
    Two(u128, u128),
    Three(u128, u128, u128),
    Four(u128, u128, u128, u128),
    Many(Box<[u128]>),
}

impl KeyVals {
    #[inline]
    fn of(v: &[u128]) -> KeyVals {
        match *v {
            [a] => KeyVals::One(a),
            [a, b] => KeyVals::Two(a, b),
            [a, b, c] => KeyVals::Three(a, b, c),
            [a, b, c, d] => KeyVals::Four(a, b, c, d),
            _ => KeyVals::Many(v.into()),
        }
    }
}

/// A table's entries in one dense vector: the match indexes hold an entry's
/// slot there, so a lookup costs one hash probe (the key's) instead of two (key
/// to handle, handle to entry). Deleting moves the last entry into the freed slot.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    slots: Vec<Entry>,
    slot_of: FxHashMap<u64, usize>,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    #[inline]
    fn at(&self, slot: usize) -> &Entry {
        &self.slots[slot]
    }

    pub fn get(&self, h: &u64) -> Option<&Entry> {
        self.slot_of.get(h).map(|s| &self.slots[*s])
    }

    pub fn get_mut(&mut self, h: &u64) -> Option<&mut Entry> {
        self.slot_of.get(h).map(|s| &mut self.slots[*s])
    }

    pub fn contains_key(&self, h: &u64) -> bool {
        self.slot_of.contains_key(h)
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &u64> {
        self.slots.iter().map(|e| &e.seq)
    }

    /// Stores an entry under its handle (`Entry::seq`); returns its slot.
    fn push(&mut self, e: Entry) -> usize {
        self.slot_of.insert(e.seq, self.slots.len());
        self.slots.push(e);
        self.slots.len() - 1
    }

    /// Takes the entry out; returns it and the slot it held, where the
    /// entry that was last (at slot `len()` now) has moved.
    fn remove(&mut self, h: &u64) -> Option<(Entry, usize)> {
        let slot = self.slot_of.remove(h)?;
        let e = self.slots.swap_remove(slot);
        if let Some(moved) = self.slots.get(slot) {
            self.slot_of.insert(moved.seq, slot);
        }
        Some((e, slot))
    }
}

impl std::ops::Index<&u64> for Entries {
    type Output = Entry;
    fn index(&self, h: &u64) -> &Entry {
        self.get(h).expect("entry handle")
    }
}

#[derive(Debug, Default)]
pub(crate) struct TableState {
    pub entries: Entries,
    /// Exact tables: key values -> slot in `entries`.
    pub exact: FxHashMap<KeyVals, usize>,
    /// Exact tables of one key of at most `DIRECT_KEY_BITS` bits, once an entry
    /// is added: `exact` as an array indexed by the key value (`NO_SLOT`: none),
    /// so a lookup is one load instead of a hash probe.
    direct: Vec<u32>,
    /// Other tables: handles ordered by (rank desc, seq asc).
    pub order: Vec<u64>,
    /// lpm tables (exact + one lpm key): per prefix length, longest first, key values -> slot in `entries`.
    pub by_prefix: Vec<(u32, FxHashMap<KeyVals, usize>)>,
    pub default: Option<EntryAction>,
    next_handle: u64,
}

impl TableState {
    fn order_key(&self, h: u64) -> (i64, u64) {
        let e = &self.entries[&h];
        (-e.rank, e.seq)
    }

    fn insert(&mut self, t: &Table, key: Vec<KeyElem>, rank: i64, priority: i32, act: EntryAction) -> u64 {
        let h = self.next_handle;
        self.next_handle += 1;
        let entry = Entry {
            key,
            rank,
            priority,
            seq: h,
            act,
            pkts: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            meter: Mutex::new(Meter::default()),
        };
        let values = key_vals(&entry);
        let plen = lpm_index(t).map(|li| entry.key[li].plen);
        let slot = self.entries.push(entry);
        if t.all_exact {
            if let (KeyVals::One(v), Some(bits)) = (&values, direct_bits(t)) {
                if self.direct.is_empty() {
                    self.direct = vec![NO_SLOT; 1 << bits];
                }
                if let Some(s) = direct_cell(&mut self.direct, *v) {
                    *s = slot as u32;
                }
            }
            self.exact.insert(values, slot);
        } else if let Some(plen) = plen {
            let pos = self.by_prefix.partition_point(|(p, _)| *p > plen);
            if self.by_prefix.get(pos).is_none_or(|(p, _)| *p != plen) {
                self.by_prefix.insert(pos, (plen, FxHashMap::default()));
            }
            self.by_prefix[pos].1.insert(values, slot);
        }
        if !t.all_exact {
            let k = self.order_key(h);
            let pos = self.order.partition_point(|x| self.order_key(*x) < k);
            self.order.insert(pos, h);
        }
        h
    }

    fn remove(&mut self, h: u64) {
        let Some((e, slot)) = self.entries.remove(&h) else { return };
        let k = key_vals(&e);
        // The entry that was last now sits in `slot`: its index entry follows it.
        let moved = (slot < self.entries.len()).then(|| key_vals(self.entries.at(slot)));
        let last = self.entries.len();
        self.unindex_direct(&k, slot, moved.as_ref(), last);
        for map in std::iter::once(&mut self.exact).chain(self.by_prefix.iter_mut().map(|(_, map)| map)) {
            if map.get(&k) == Some(&slot) {
                map.remove(&k);
            }
            if let Some(m) = &moved {
                if let Some(s) = map.get_mut(m).filter(|s| **s == last) {
                    *s = slot;
                }
            }
        }
        self.by_prefix.retain(|(_, map)| !map.is_empty());
        self.order.retain(|x| *x != h);
    }

    /// `remove`'s update of the direct index: the removed entry's key (`k`, at
    /// `slot`) leaves it, and the entry moved from `last` to `slot` follows.
    fn unindex_direct(&mut self, k: &KeyVals, slot: usize, moved: Option<&KeyVals>, last: usize) {
        let one = |k: &KeyVals| match k {
            KeyVals::One(v) => Some(*v),
            _ => None,
        };
        if let Some(s) = one(k).and_then(|v| direct_cell(&mut self.direct, v)).filter(|s| **s as usize == slot) {
            *s = NO_SLOT;
        }
        if let Some(s) = moved.and_then(one).and_then(|v| direct_cell(&mut self.direct, v)).filter(|s| **s as usize == last) {
            *s = slot as u32;
        }
    }

    fn find_duplicate(&self, key: &[KeyElem], priority: i32) -> Option<u64> {
        self.entries.values().find(|e| e.key == key && e.priority == priority).map(|e| e.seq)
    }

    /// The matching entry with the highest rank, if any.
    pub(crate) fn lookup(&self, t: &Table, key: &[u128]) -> Option<&Entry> {
        self.lookup_indexed(t, key, lpm_index(t))
    }

    /// `lookup` with the table's `lpm_index` computed once by the caller.
    #[inline(always)]
    pub(crate) fn lookup_indexed(&self, t: &Table, key: &[u128], lpm: Option<usize>) -> Option<&Entry> {
        // A table with a direct index (only they have one) is looked up inline.
        if let Some(&s) = key.first().and_then(|k| self.direct.get(usize::try_from(*k).ok()?)) {
            return (s != NO_SLOT).then(|| self.entries.at(s as usize));
        }
        self.lookup_probed(t, key, lpm)
    }

    fn lookup_probed(&self, t: &Table, key: &[u128], lpm: Option<usize>) -> Option<&Entry> {
        if self.entries.is_empty() {
            return None;
        }
        if t.all_exact {
            return self.exact.get(&KeyVals::of(key)).map(|s| self.entries.at(*s));
        }
        if let Some(li) = lpm {
            // One hash probe per prefix length in use, longest first.
            let width = t.keys[li].width;
            if let [only] = key {
                // The usual lpm table, one key: no probe array to fill.
                let probe = |plen: u32| KeyVals::One(only & prefix_mask(width, plen));
                return self.by_prefix.iter().find_map(|(plen, map)| map.get(&probe(*plen)).map(|s| self.entries.at(*s)));
            }
            let mut probe = [0u128; MAX_INDEXED_KEYS];
            let probe = &mut probe[..key.len()];
            probe.copy_from_slice(key);
            return self.by_prefix.iter().find_map(|(plen, map)| {
                probe[li] = key[li] & prefix_mask(width, *plen);
                map.get(&KeyVals::of(probe)).map(|s| self.entries.at(*s))
            });
        }
        self.order.iter().map(|h| &self.entries[h]).find(|e| entry_matches(t, e, key))
    }
}

const MAX_INDEXED_KEYS: usize = 8;

/// Exact tables with one key of at most this many bits get a direct index
/// (`TableState::direct`: 4,096 cells of 4 bytes at most).
const DIRECT_KEY_BITS: u32 = 12;
const NO_SLOT: u32 = u32::MAX;

/// The direct index's cell of key value `v`; None past its end (or when it has none).
fn direct_cell(direct: &mut [u32], v: u128) -> Option<&mut u32> {
    direct.get_mut(usize::try_from(v).ok()?)
}

/// The key width of a table the direct index covers.
fn direct_bits(t: &Table) -> Option<u32> {
    match &t.keys[..] {
        [k] if t.all_exact && k.width <= DIRECT_KEY_BITS => Some(k.width),
        _ => None,
    }
}

/// An entry's key values, as the exact and lpm indexes hold them.
fn key_vals(e: &Entry) -> KeyVals {
    KeyVals::of(&e.key.iter().map(|k| k.value).collect::<Vec<_>>())
}

/// The lpm key position of a table that is indexed per prefix length
/// (exact/valid keys plus one lpm key, no priorities).
pub(crate) fn lpm_index(t: &Table) -> Option<usize> {
    if t.all_exact || t.needs_priority || t.keys.len() > MAX_INDEXED_KEYS || t.keys.iter().any(|k| k.mask.is_some()) {
        return None;
    }
    t.keys.iter().position(|k| k.kind == MatchKind::Lpm)
}

fn entry_matches(t: &Table, e: &Entry, key: &[u128]) -> bool {
    e.key.iter().zip(key).zip(&t.keys).all(|((k, v), kf)| match kf.kind {
        MatchKind::Range => k.lo <= *v && *v <= k.hi,
        _ => v & k.mask == k.value,
    })
}

/// The mask of an lpm prefix of `plen` bits on a `width`-bit field.
pub fn prefix_mask(width: u32, plen: u32) -> u128 {
    if plen == 0 {
        0
    } else {
        mask_of(width) & !mask_of(width - plen)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneSession {
    /// (egress port, rid) per copy.
    pub replicas: Vec<(u32, u32)>,
    /// Truncate clones to this many bytes (0 = no truncation).
    pub truncate: usize,
}

/// A register's cells as native code finds them: the address of the first
/// and how many (0 for wide registers, which it never reads).
#[repr(C)]
pub(crate) struct CellsView {
    pub(crate) base: usize,
    pub(crate) len: usize,
}

impl CellsView {
    fn of(r: &RegisterCells) -> CellsView {
        match r {
            RegisterCells::Narrow(cells) => CellsView { base: cells.as_ptr() as usize, len: cells.len() },
            RegisterCells::Wide(_) => CellsView { base: 0, len: 0 },
        }
    }
}

/// Register cells: lock-free for widths up to 64 bits (the common case).
pub(crate) enum RegisterCells {
    Narrow(Vec<AtomicU64>),
    Wide(Mutex<Vec<i128>>),
}

impl RegisterCells {
    fn new(r: &RegisterArray) -> RegisterCells {
        if r.width <= 64 {
            RegisterCells::Narrow(atomics(r.size))
        } else {
            RegisterCells::Wide(Mutex::new(vec![0; r.size]))
        }
    }

    /// The (unsigned) value at `i`, or None if out of range.
    pub(crate) fn get(&self, i: usize) -> Option<i128> {
        match self {
            RegisterCells::Narrow(c) => c.get(i).map(|x| x.load(Ordering::Relaxed) as i128),
            RegisterCells::Wide(c) => c.lock().get(i).copied(),
        }
    }

    /// Stores an already width-masked value; out-of-range indices are ignored.
    pub(crate) fn set(&self, i: usize, v: u128) {
        match self {
            RegisterCells::Narrow(c) => {
                if let Some(x) = c.get(i) {
                    x.store(v as u64, Ordering::Relaxed);
                }
            }
            RegisterCells::Wide(c) => {
                if let Some(x) = c.lock().get_mut(i) {
                    *x = v as i128;
                }
            }
        }
    }
}

pub(crate) struct CounterCells {
    pub pkts: Vec<AtomicU64>,
    pub bytes: Vec<AtomicU64>,
}

/// Mutable state of one program. Create with `State::new`, share with `Arc`.
pub struct State {
    pub(crate) prog: Arc<Program>,
    pub(crate) tables: Vec<RwLock<TableState>>,
    pub(crate) counters: Vec<CounterCells>,
    pub(crate) registers: Vec<RegisterCells>,
    /// Where each register's cells are (`jit.rs` reads and writes them directly).
    pub(crate) register_views: Vec<CellsView>,
    pub(crate) meters: Vec<Mutex<Vec<Meter>>>,
    pub(crate) mc_groups: RwLock<HashMap<u32, Vec<(u32, u32)>>>,
    pub(crate) clone_sessions: RwLock<HashMap<u32, CloneSession>>,
    pub(crate) value_sets: Vec<RwLock<Vec<Vec<u8>>>>,
    /// Locked after a table's lock, never before (the packet path's order).
    pub(crate) profiles: Vec<RwLock<ProfileState>>,
}

fn atomics(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// Converts big-endian bytes to a value, checking it fits `width` bits.
pub fn bytes_to_value(b: &[u8], width: u32, what: &str) -> R<u128> {
    let significant = b.iter().skip_while(|x| **x == 0).count();
    if significant > 16 {
        return Err(RuntimeError::BadValue(format!("{what}: value wider than {width} bits")));
    }
    let v = b.iter().fold(0u128, |acc, x| (acc << 8) | *x as u128);
    if v & !mask_of(width) != 0 {
        return Err(RuntimeError::BadValue(format!("{what}: value does not fit in {width} bits")));
    }
    Ok(v)
}

/// A value as big-endian bytes, ceil(width / 8) long.
pub fn value_to_bytes(v: u128, width: u32) -> Vec<u8> {
    let n = width.div_ceil(8).max(1) as usize;
    v.to_be_bytes()[16 - n.min(16)..].to_vec()
}

impl State {
    pub fn new(prog: &Arc<Program>) -> State {
        let tables = prog
            .tables
            .iter()
            .map(|t| {
                let mut ts = TableState { default: t.default_entry.clone().map(EntryAction::Call), ..Default::default() };
                let lpm = t.keys.iter().position(|k| k.kind == MatchKind::Lpm).filter(|_| !t.needs_priority);
                for e in &t.const_entries {
                    // BMv2 JSON priorities: lower numbers win; lpm tables: longest prefix wins.
                    let rank = lpm.map_or(-(e.priority as i64), |i| e.key[i].plen as i64);
                    ts.insert(t, e.key.clone(), rank, e.priority, EntryAction::Call(e.call.clone()));
                }
                RwLock::new(ts)
            })
            .collect();
        let registers: Vec<RegisterCells> = prog.registers.iter().map(RegisterCells::new).collect();
        State {
            prog: prog.clone(),
            tables,
            counters: prog.counters.iter().map(|c| CounterCells { pkts: atomics(c.size), bytes: atomics(c.size) }).collect(),
            register_views: registers.iter().map(CellsView::of).collect(),
            registers,
            meters: prog.meters.iter().map(|m| Mutex::new(vec![Meter::default(); m.size])).collect(),
            mc_groups: RwLock::new(HashMap::new()),
            clone_sessions: RwLock::new(HashMap::new()),
            value_sets: prog.value_sets.iter().map(|_| RwLock::new(Vec::new())).collect(),
            profiles: prog.action_profiles.iter().map(|_| RwLock::new(ProfileState::default())).collect(),
        }
    }

    pub fn program(&self) -> &Arc<Program> {
        &self.prog
    }

    fn table(&self, name: &str) -> R<(usize, &Table)> {
        let i = self.prog.table_index(name).ok_or_else(|| RuntimeError::UnknownName(format!("table '{name}'")))?;
        Ok((i, &self.prog.tables[i]))
    }

    fn action_call(&self, t: &Table, action: &str, args: &[Vec<u8>]) -> R<ActionCall> {
        let a = t
            .actions
            .iter()
            .copied()
            .find(|a| self.prog.actions[*a].name == action)
            .ok_or_else(|| RuntimeError::UnknownName(format!("action '{action}' of table '{}'", t.name)))?;
        let params = &self.prog.actions[a].params;
        if args.len() != params.len() {
            return Err(RuntimeError::BadValue(format!(
                "action '{action}' takes {} arguments, got {}",
                params.len(),
                args.len()
            )));
        }
        let mut vals = Vec::new();
        for (arg, (pname, w)) in args.iter().zip(params) {
            vals.push(bytes_to_value(arg, *w, &format!("argument '{pname}' of '{action}'"))? as i128);
        }
        Ok(ActionCall { action: a, args: vals })
    }

    fn key_elems(&self, t: &Table, keys: &[MatchKey]) -> R<Vec<KeyElem>> {
        if keys.len() != t.keys.len() {
            return Err(RuntimeError::BadValue(format!(
                "table '{}' has {} key fields, got {}",
                t.name,
                t.keys.len(),
                keys.len()
            )));
        }
        keys.iter().zip(&t.keys).map(|(k, kf)| key_elem(kf, k)).collect()
    }

    /// Adds an entry; returns its handle. Priority: larger wins (P4Runtime);
    /// it is ignored (0) for tables without ternary/range/optional keys.
    pub fn table_add(&self, table: &str, keys: &[MatchKey], action: &str, args: &[Vec<u8>], priority: i32) -> R<u64> {
        let (_, t) = self.table(table)?;
        let call = self.direct_call(t, action, args)?;
        self.add_entry(table, keys, call, priority)
    }

    /// Adds an entry of an action-profile table that runs a member or a group of the profile.
    pub fn table_add_indirect(&self, table: &str, keys: &[MatchKey], target: Indirect, priority: i32) -> R<u64> {
        self.add_entry(table, keys, EntryAction::Indirect(target), priority)
    }

    fn add_entry(&self, table: &str, keys: &[MatchKey], act: EntryAction, priority: i32) -> R<u64> {
        let (ti, t) = self.table(table)?;
        if !t.const_entries.is_empty() {
            return Err(RuntimeError::Immutable(format!("table '{table}' has const entries")));
        }
        if t.keys.is_empty() {
            return Err(RuntimeError::BadValue(format!("table '{table}' has no key: set its default action instead")));
        }
        let key = self.key_elems(t, keys)?;
        let priority = if t.needs_priority { priority } else { 0 };
        let rank = match t.keys.iter().position(|k| k.kind == MatchKind::Lpm) {
            Some(i) if !t.needs_priority => key[i].plen as i64,
            _ => priority as i64,
        };
        let mut ts = self.tables[ti].write();
        if let Some(h) = ts.find_duplicate(&key, priority) {
            return Err(RuntimeError::Duplicate(format!("table '{table}': same key as entry {h}")));
        }
        if ts.entries.len() >= t.max_size {
            return Err(RuntimeError::Full(format!("table '{table}' holds its maximum of {} entries", t.max_size)));
        }
        self.check_target(t, &act)?;
        Ok(ts.insert(t, key, rank, priority, act))
    }

    pub fn table_modify(&self, table: &str, handle: u64, action: &str, args: &[Vec<u8>]) -> R<()> {
        let (_, t) = self.table(table)?;
        let call = self.direct_call(t, action, args)?;
        self.modify_entry(table, handle, call)
    }

    pub fn table_modify_indirect(&self, table: &str, handle: u64, target: Indirect) -> R<()> {
        self.modify_entry(table, handle, EntryAction::Indirect(target))
    }

    fn modify_entry(&self, table: &str, handle: u64, act: EntryAction) -> R<()> {
        let (ti, t) = self.table(table)?;
        if !t.const_entries.is_empty() {
            return Err(RuntimeError::Immutable(format!("table '{table}' has const entries")));
        }
        let mut ts = self.tables[ti].write();
        self.check_target(t, &act)?;
        let e = ts.entries.get_mut(&handle).ok_or_else(|| RuntimeError::UnknownHandle(format!("table '{table}': no entry {handle}")))?;
        e.act = act;
        Ok(())
    }

    /// An action call for a table that is not an action-profile table.
    fn direct_call(&self, t: &Table, action: &str, args: &[Vec<u8>]) -> R<EntryAction> {
        if let Some(p) = t.profile {
            let profile = &self.prog.action_profiles[p].name;
            return Err(RuntimeError::BadValue(format!(
                "table '{}' takes its actions from action profile '{profile}': give a member or a group",
                t.name
            )));
        }
        Ok(EntryAction::Call(self.action_call(t, action, args)?))
    }

    /// An indirect target must be a member or (with a selector) a group of the table's profile.
    /// Called with the table's lock held (profile locks come after table locks).
    fn check_target(&self, t: &Table, act: &EntryAction) -> R<()> {
        let EntryAction::Indirect(target) = act else { return Ok(()) };
        let Some(p) = t.profile else {
            return Err(RuntimeError::BadValue(format!("table '{}' has no action profile: give an action", t.name)));
        };
        let ps = self.profiles[p].read();
        let profile = &self.prog.action_profiles[p].name;
        let known = match target {
            Indirect::Member(m) => ps.members.contains_key(m),
            Indirect::Group(g) => ps.groups.contains_key(g),
        };
        if !known {
            return Err(RuntimeError::UnknownHandle(format!("action profile '{profile}' has no {target:?}")));
        }
        Ok(())
    }

    pub fn table_delete(&self, table: &str, handle: u64) -> R<()> {
        let (ti, t) = self.table(table)?;
        if !t.const_entries.is_empty() {
            return Err(RuntimeError::Immutable(format!("table '{table}' has const entries")));
        }
        let mut ts = self.tables[ti].write();
        if !ts.entries.contains_key(&handle) {
            return Err(RuntimeError::UnknownHandle(format!("table '{table}': no entry {handle}")));
        }
        ts.remove(handle);
        Ok(())
    }

    /// Finds the handle of the entry with exactly this key (and priority).
    pub fn table_find(&self, table: &str, keys: &[MatchKey], priority: i32) -> R<Option<u64>> {
        let (ti, t) = self.table(table)?;
        let key = self.key_elems(t, keys)?;
        let priority = if t.needs_priority { priority } else { 0 };
        Ok(self.tables[ti].read().find_duplicate(&key, priority))
    }

    pub fn table_set_default(&self, table: &str, action: &str, args: &[Vec<u8>]) -> R<()> {
        let (ti, t) = self.table(table)?;
        let call = self.direct_call(t, action, args)?;
        let EntryAction::Call(c) = &call else { unreachable!() };
        if t.default_fixed || (t.default_const && t.default_entry.as_ref().map(|d| d.action) != Some(c.action)) {
            return Err(RuntimeError::Immutable(format!("table '{table}' has a const default action")));
        }
        self.tables[ti].write().default = Some(call);
        Ok(())
    }

    /// Sets the default of an action-profile table to a member or a group.
    pub fn table_set_default_indirect(&self, table: &str, target: Indirect) -> R<()> {
        let (ti, t) = self.table(table)?;
        let act = EntryAction::Indirect(target);
        let mut ts = self.tables[ti].write();
        self.check_target(t, &act)?;
        ts.default = Some(act);
        Ok(())
    }

    /// Restores the default action the JSON program declares.
    pub fn table_reset_default(&self, table: &str) -> R<()> {
        let (ti, t) = self.table(table)?;
        if t.default_fixed {
            return Ok(());
        }
        self.tables[ti].write().default = t.default_entry.clone().map(EntryAction::Call);
        Ok(())
    }

    /// The default action and its arguments, if one is set (None too for an
    /// action-profile table: see `table_get_default_indirect`).
    pub fn table_get_default(&self, table: &str) -> R<Option<(String, Vec<Vec<u8>>)>> {
        let (ti, _) = self.table(table)?;
        Ok(match &self.tables[ti].read().default {
            Some(EntryAction::Call(c)) => Some(self.call_info(c)),
            _ => None,
        })
    }

    /// The member or group an action-profile table's default runs, if set.
    pub fn table_get_default_indirect(&self, table: &str) -> R<Option<Indirect>> {
        let (ti, _) = self.table(table)?;
        Ok(match &self.tables[ti].read().default {
            Some(EntryAction::Indirect(i)) => Some(*i),
            _ => None,
        })
    }

    fn call_info(&self, c: &ActionCall) -> (String, Vec<Vec<u8>>) {
        let a = &self.prog.actions[c.action];
        let args = c.args.iter().zip(&a.params).map(|(v, (_, w))| value_to_bytes(*v as u128 & mask_of(*w), *w)).collect();
        (a.name.clone(), args)
    }

    /// Removes every entry (not the default action).
    pub fn table_clear(&self, table: &str) -> R<()> {
        let (ti, t) = self.table(table)?;
        if !t.const_entries.is_empty() {
            return Err(RuntimeError::Immutable(format!("table '{table}' has const entries")));
        }
        let mut ts = self.tables[ti].write();
        let (default, next_handle) = (ts.default.take(), ts.next_handle);
        *ts = TableState { default, next_handle, ..Default::default() };
        Ok(())
    }

    /// All entries, in match order (exact tables: handle order).
    pub fn table_entries(&self, table: &str) -> R<Vec<EntryInfo>> {
        let (ti, t) = self.table(table)?;
        let ts = self.tables[ti].read();
        let mut handles: Vec<u64> = if t.all_exact { ts.entries.keys().copied().collect() } else { ts.order.clone() };
        if t.all_exact {
            handles.sort_unstable();
        }
        Ok(handles
            .into_iter()
            .map(|h| {
                let e = &ts.entries[&h];
                let ((action, args), indirect) = match &e.act {
                    EntryAction::Call(c) => (self.call_info(c), None),
                    EntryAction::Indirect(i) => ((String::new(), Vec::new()), Some(*i)),
                };
                EntryInfo {
                    handle: h,
                    keys: e.key.iter().zip(&t.keys).map(|(k, kf)| match_key_of(kf, k)).collect(),
                    priority: e.priority,
                    action,
                    args,
                    indirect,
                }
            })
            .collect())
    }

    fn profile(&self, name: &str) -> R<(usize, &ActionProfile)> {
        let i = *self.prog.names.action_profiles.get(name).ok_or_else(|| RuntimeError::UnknownName(format!("action profile '{name}'")))?;
        Ok((i, &self.prog.action_profiles[i]))
    }

    /// Read locks on the tables that use profile `p` (taken before the profile's own lock).
    fn profile_tables(&self, p: usize) -> Vec<(&Table, parking_lot::RwLockReadGuard<'_, TableState>)> {
        let tables = self.prog.tables.iter().enumerate().filter(|(_, t)| t.profile == Some(p));
        tables.map(|(i, t)| (t, self.tables[i].read())).collect()
    }

    /// Adds or replaces member `member` of an action profile: an action of its
    /// tables with its arguments.
    pub fn profile_member_set(&self, profile: &str, member: u32, action: &str, args: &[Vec<u8>]) -> R<()> {
        let (p, ap) = self.profile(profile)?;
        let tables = self.profile_tables(p);
        let t = tables.first().map(|(t, _)| *t).ok_or_else(|| RuntimeError::BadValue(format!("action profile '{profile}' has no table")))?;
        let call = self.action_call(t, action, args)?;
        let mut ps = self.profiles[p].write();
        if !ps.members.contains_key(&member) && ps.members.len() >= ap.max_size {
            return Err(RuntimeError::Full(format!("action profile '{profile}' holds its maximum of {} members", ap.max_size)));
        }
        ps.members.insert(member, call);
        Ok(())
    }

    /// Deletes a member no group, entry or default refers to.
    pub fn profile_member_delete(&self, profile: &str, member: u32) -> R<()> {
        let (p, _) = self.profile(profile)?;
        let tables = self.profile_tables(p);
        let mut ps = self.profiles[p].write();
        if !ps.members.contains_key(&member) {
            return Err(RuntimeError::UnknownHandle(format!("action profile '{profile}' has no member {member}")));
        }
        let in_group = ps.groups.iter().find(|(_, ms)| ms.contains(&member)).map(|(g, _)| *g);
        if let Some(g) = in_group {
            return Err(RuntimeError::BadValue(format!("action profile '{profile}': member {member} is in group {g}")));
        }
        refuse_if_used(&tables, Indirect::Member(member), profile)?;
        ps.members.remove(&member);
        Ok(())
    }

    /// Creates or replaces group `group` of an action selector with these members.
    pub fn profile_group_set(&self, profile: &str, group: u32, members: &[u32]) -> R<()> {
        let (p, ap) = self.profile(profile)?;
        if ap.selector.is_none() {
            return Err(RuntimeError::BadValue(format!("action profile '{profile}' has no selector: it has no groups")));
        }
        let _tables = self.profile_tables(p);
        let mut ps = self.profiles[p].write();
        if let Some(m) = members.iter().find(|m| !ps.members.contains_key(m)) {
            return Err(RuntimeError::UnknownHandle(format!("action profile '{profile}' has no member {m}")));
        }
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        ps.groups.insert(group, sorted);
        Ok(())
    }

    /// Deletes a group no entry or default refers to.
    pub fn profile_group_delete(&self, profile: &str, group: u32) -> R<()> {
        let (p, _) = self.profile(profile)?;
        let tables = self.profile_tables(p);
        let mut ps = self.profiles[p].write();
        if !ps.groups.contains_key(&group) {
            return Err(RuntimeError::UnknownHandle(format!("action profile '{profile}' has no group {group}")));
        }
        refuse_if_used(&tables, Indirect::Group(group), profile)?;
        ps.groups.remove(&group);
        Ok(())
    }

    /// A profile's members (id, action, arguments) and groups (id, member ids), ascending.
    pub fn profile_contents(&self, profile: &str) -> R<ProfileContents> {
        let (p, _) = self.profile(profile)?;
        let ps = self.profiles[p].read();
        let mut members: Vec<_> = ps.members.iter().map(|(m, c)| (*m, self.call_info(c))).collect();
        members.sort_unstable_by_key(|(m, _)| *m);
        let mut groups: Vec<_> = ps.groups.iter().map(|(g, ms)| (*g, ms.clone())).collect();
        groups.sort_unstable();
        Ok(ProfileContents { members: members.into_iter().map(|(m, (a, args))| (m, a, args)).collect(), groups })
    }

    pub fn table_len(&self, table: &str) -> R<usize> {
        let (ti, _) = self.table(table)?;
        Ok(self.tables[ti].read().entries.len())
    }

    fn with_entry<T>(&self, table: &str, handle: u64, f: impl FnOnce(&Table, &Entry) -> R<T>) -> R<T> {
        let (ti, t) = self.table(table)?;
        let ts = self.tables[ti].read();
        let e = ts.entries.get(&handle).ok_or_else(|| RuntimeError::UnknownHandle(format!("table '{table}': no entry {handle}")))?;
        f(t, e)
    }

    /// (packets, bytes) of an entry's direct counter.
    pub fn direct_counter_read(&self, table: &str, handle: u64) -> R<(u64, u64)> {
        self.with_entry(table, handle, |t, e| {
            t.direct_counter.ok_or_else(|| RuntimeError::UnknownName(format!("table '{table}' has no direct counter")))?;
            Ok((e.pkts.load(Ordering::Relaxed), e.bytes.load(Ordering::Relaxed)))
        })
    }

    pub fn direct_counter_write(&self, table: &str, handle: u64, pkts: u64, bytes: u64) -> R<()> {
        self.with_entry(table, handle, |t, e| {
            t.direct_counter.ok_or_else(|| RuntimeError::UnknownName(format!("table '{table}' has no direct counter")))?;
            e.pkts.store(pkts, Ordering::Relaxed);
            e.bytes.store(bytes, Ordering::Relaxed);
            Ok(())
        })
    }

    pub fn direct_meter_set(&self, table: &str, handle: u64, cfg: Option<MeterConfig>) -> R<()> {
        self.with_entry(table, handle, |t, e| {
            t.direct_meter.ok_or_else(|| RuntimeError::UnknownName(format!("table '{table}' has no direct meter")))?;
            check_meter(&cfg)?;
            e.meter.lock().configure(cfg);
            Ok(())
        })
    }

    pub fn direct_meter_get(&self, table: &str, handle: u64) -> R<Option<MeterConfig>> {
        self.with_entry(table, handle, |_, e| Ok(e.meter.lock().cfg))
    }

    fn indexed(&self, map: Option<usize>, kind: &str, name: &str, index: usize, len: impl Fn(usize) -> usize) -> R<usize> {
        let i = map.ok_or_else(|| RuntimeError::UnknownName(format!("{kind} '{name}'")))?;
        let n = len(i);
        if index >= n {
            return Err(RuntimeError::BadValue(format!("{kind} '{name}': index {index} out of range (size {n})")));
        }
        Ok(i)
    }

    fn counter(&self, name: &str, index: usize) -> R<usize> {
        self.indexed(self.prog.counter_index(name), "counter", name, index, |i| self.prog.counters[i].size)
    }

    pub fn counter_read(&self, name: &str, index: usize) -> R<(u64, u64)> {
        let c = &self.counters[self.counter(name, index)?];
        Ok((c.pkts[index].load(Ordering::Relaxed), c.bytes[index].load(Ordering::Relaxed)))
    }

    pub fn counter_write(&self, name: &str, index: usize, pkts: u64, bytes: u64) -> R<()> {
        let c = &self.counters[self.counter(name, index)?];
        c.pkts[index].store(pkts, Ordering::Relaxed);
        c.bytes[index].store(bytes, Ordering::Relaxed);
        Ok(())
    }

    pub fn counter_size(&self, name: &str) -> R<usize> {
        let i = self.prog.counter_index(name).ok_or_else(|| RuntimeError::UnknownName(format!("counter '{name}'")))?;
        Ok(self.prog.counters[i].size)
    }

    pub fn register_read(&self, name: &str, index: usize) -> R<u128> {
        let r = self.indexed(self.prog.register_index(name), "register", name, index, |i| self.prog.registers[i].size)?;
        Ok(self.registers[r].get(index).unwrap_or(0) as u128)
    }

    pub fn register_write(&self, name: &str, index: usize, value: u128) -> R<()> {
        let r = self.indexed(self.prog.register_index(name), "register", name, index, |i| self.prog.registers[i].size)?;
        let w = self.prog.registers[r].width;
        if value & !mask_of(w) != 0 {
            return Err(RuntimeError::BadValue(format!("register '{name}': value does not fit in {w} bits")));
        }
        self.registers[r].set(index, value);
        Ok(())
    }

    /// Sets (Some) or resets to "always green" (None) one meter cell.
    pub fn meter_set(&self, name: &str, index: usize, cfg: Option<MeterConfig>) -> R<()> {
        let m = self.indexed(self.prog.meter_index(name), "meter", name, index, |i| self.prog.meters[i].size)?;
        check_meter(&cfg)?;
        self.meters[m].lock()[index].configure(cfg);
        Ok(())
    }

    pub fn meter_get(&self, name: &str, index: usize) -> R<Option<MeterConfig>> {
        let m = self.indexed(self.prog.meter_index(name), "meter", name, index, |i| self.prog.meters[i].size)?;
        Ok(self.meters[m].lock()[index].cfg)
    }

    /// Creates or replaces a multicast group: one copy per (port, rid).
    pub fn mc_group_set(&self, group: u32, replicas: &[(u32, u32)]) -> R<()> {
        if group == 0 {
            return Err(RuntimeError::BadValue("multicast group 0 means 'no multicast'".into()));
        }
        check_replicas(replicas)?;
        self.mc_groups.write().insert(group, replicas.to_vec());
        Ok(())
    }

    pub fn mc_group_delete(&self, group: u32) -> R<()> {
        self.mc_groups.write().remove(&group).map(|_| ()).ok_or_else(|| RuntimeError::UnknownHandle(format!("multicast group {group}")))
    }

    pub fn mc_group_get(&self, group: u32) -> Option<Vec<(u32, u32)>> {
        self.mc_groups.read().get(&group).cloned()
    }

    pub fn clone_session_set(&self, session: u32, replicas: &[(u32, u32)], truncate: usize) -> R<()> {
        if session == 0 {
            return Err(RuntimeError::BadValue("clone session 0 is reserved".into()));
        }
        check_replicas(replicas)?;
        self.clone_sessions.write().insert(session, CloneSession { replicas: replicas.to_vec(), truncate });
        Ok(())
    }

    pub fn clone_session_delete(&self, session: u32) -> R<()> {
        self.clone_sessions.write().remove(&session).map(|_| ()).ok_or_else(|| RuntimeError::UnknownHandle(format!("clone session {session}")))
    }

    pub fn clone_session_get(&self, session: u32) -> Option<CloneSession> {
        self.clone_sessions.read().get(&session).cloned()
    }

    /// Adds a value (compressed_bitwidth wide, big-endian) to a parser value set.
    pub fn value_set_add(&self, name: &str, value: &[u8]) -> R<()> {
        let i = self.prog.value_set_index(name).ok_or_else(|| RuntimeError::UnknownName(format!("value set '{name}'")))?;
        let w = self.prog.value_sets[i].width;
        let v = bytes_to_value(value, w, name)?;
        let bytes = value_to_bytes(v, w);
        let mut set = self.value_sets[i].write();
        if !set.contains(&bytes) {
            set.push(bytes);
        }
        Ok(())
    }

    pub fn value_set_clear(&self, name: &str) -> R<()> {
        let i = self.prog.value_set_index(name).ok_or_else(|| RuntimeError::UnknownName(format!("value set '{name}'")))?;
        self.value_sets[i].write().clear();
        Ok(())
    }
}

fn check_meter(cfg: &Option<MeterConfig>) -> R<()> {
    match cfg {
        Some(c) if c.pir < c.cir => Err(RuntimeError::BadValue("meter: pir must be >= cir (RFC 2698)".into())),
        _ => Ok(()),
    }
}

fn check_replicas(replicas: &[(u32, u32)]) -> R<()> {
    for (port, _) in replicas {
        if *port >= DROP_PORT {
            return Err(RuntimeError::BadValue(format!("replica port {port} must be below the drop port {DROP_PORT}")));
        }
    }
    Ok(())
}

fn key_elem(kf: &KeyField, k: &MatchKey) -> R<KeyElem> {
    let w = kf.width;
    let full = mask_of(w);
    let val = |b: &[u8]| bytes_to_value(b, w, &format!("key field '{}'", kf.name));
    let bad = |m: &str| Err(RuntimeError::BadValue(format!("key field '{}': {m}", kf.name)));
    let exact = |v: u128| KeyElem { value: v, mask: full, lo: 0, hi: 0, plen: w };
    let ternary = |v: u128, m: u128| -> R<KeyElem> {
        if v & !m != 0 {
            return bad("value has bits set outside the mask");
        }
        Ok(KeyElem { value: v, mask: m, lo: 0, hi: 0, plen: 0 })
    };
    match (kf.kind, k) {
        (MatchKind::Exact | MatchKind::Valid, MatchKey::Exact(v)) => Ok(exact(val(v)? & kf.mask.unwrap_or(full))),
        (MatchKind::Lpm, MatchKey::Lpm(v, plen)) => {
            if *plen > w {
                return bad(&format!("prefix length {plen} exceeds the field's {w} bits"));
            }
            let m = prefix_mask(w, *plen);
            let v = val(v)?;
            if v & !m != 0 {
                return bad("value has bits set beyond the prefix length");
            }
            Ok(KeyElem { value: v, mask: m, lo: 0, hi: 0, plen: *plen })
        }
        (MatchKind::Ternary, MatchKey::Ternary(v, m)) => ternary(val(v)?, val(m)?),
        (MatchKind::Optional, MatchKey::Optional(None)) => ternary(0, 0),
        (MatchKind::Optional, MatchKey::Optional(Some(v)) | MatchKey::Exact(v)) => ternary(val(v)?, full),
        (MatchKind::Optional, MatchKey::Ternary(v, m)) => {
            let m = val(m)?;
            if m != 0 && m != full {
                return bad("an optional key takes an all-ones or all-zeros mask");
            }
            ternary(val(v)?, m)
        }
        (MatchKind::Range, MatchKey::Range(lo, hi)) => {
            let (lo, hi) = (val(lo)?, val(hi)?);
            if lo > hi {
                return bad("range low bound above high bound");
            }
            Ok(KeyElem { value: 0, mask: 0, lo, hi, plen: 0 })
        }
        (kind, k) => bad(&format!("{} key given as {k:?}", kind.name())),
    }
}

fn match_key_of(kf: &KeyField, k: &KeyElem) -> MatchKey {
    let b = |v: u128| value_to_bytes(v, kf.width);
    match kf.kind {
        MatchKind::Exact | MatchKind::Valid => MatchKey::Exact(b(k.value)),
        MatchKind::Lpm => MatchKey::Lpm(b(k.value), k.plen),
        MatchKind::Ternary => MatchKey::Ternary(b(k.value), b(k.mask)),
        MatchKind::Optional if k.mask == 0 => MatchKey::Optional(None),
        MatchKind::Optional => MatchKey::Optional(Some(b(k.value))),
        MatchKind::Range => MatchKey::Range(b(k.lo), b(k.hi)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct index of a narrow exact table finds what the hash index finds,
    /// through adds, deletes anywhere (an entry moves into the freed slot) and a clear.
    #[test]
    fn direct_index_follows_adds_deletes_and_clear() {
        let path = format!("{}/tests/programs/red_ecn.json", env!("CARGO_MANIFEST_DIR"));
        let prog = Arc::new(Program::from_json(&std::fs::read_to_string(path).unwrap()).unwrap());
        let st = State::new(&prog);
        let name = "MyIngress.telemetry_sampling";
        let ti = prog.table_index(name).unwrap();
        let t = &prog.tables[ti];
        assert_eq!(direct_bits(t), Some(9), "one 9-bit exact key (egress_spec)");
        let add = |port: u16| st.table_add(name, &[MatchKey::Exact(port.to_be_bytes().to_vec())], "MyIngress.set_sampling", &[vec![0, 0, 0, port as u8]], 0).unwrap();
        let check = |present: &[u16]| {
            let ts = st.tables[ti].read();
            assert!(!ts.direct.is_empty());
            for port in 0..512u16 {
                let key = [port as u128];
                let period = |e: Option<&Entry>| e.map(|e| match &e.act {
                    EntryAction::Call(c) => c.args[0],
                    EntryAction::Indirect(_) => unreachable!(),
                });
                let direct = period(ts.lookup(t, &key));
                assert_eq!(direct, period(ts.lookup_probed(t, &key, None)), "port {port}: both indexes");
                assert_eq!(direct, present.contains(&port).then_some(port as i128), "port {port}");
            }
        };
        let handles: Vec<u64> = (1..=6).map(add).collect();
        check(&[1, 2, 3, 4, 5, 6]);
        for gone in [0, 3, 5] {
            st.table_delete(name, handles[gone]).unwrap();
        }
        check(&[2, 3, 5]);
        add(9);
        check(&[2, 3, 5, 9]);
        st.table_clear(name).unwrap();
        add(7);
        check(&[7]);
    }
}
