//! The compiled, index-based form of a BMv2 JSON program. Every name is
//! resolved at load time; the per-packet path only follows indices.

use std::collections::HashMap;

/// v1model's drop port (BMv2 `drop_port` default).
pub const DROP_PORT: u32 = 511;

/// `standard_metadata.instance_type` values used by simple_switch.
pub mod instance_type {
    pub const NORMAL: i128 = 0;
    pub const INGRESS_CLONE: i128 = 1;
    pub const EGRESS_CLONE: i128 = 2;
    pub const RECIRC: i128 = 4;
    pub const REPLICATION: i128 = 5;
    pub const RESUBMIT: i128 = 6;
}

#[derive(Debug, Clone)]
pub struct FieldDef {
    pub name: String,
    /// Bit width; 0 for the variable-length field of a header.
    pub width: u32,
    pub signed: bool,
    pub varbit: bool,
}

#[derive(Debug, Clone)]
pub struct HeaderType {
    pub name: String,
    pub fields: Vec<FieldDef>,
    /// Bit offset of each field from the start of the header (fields after a
    /// varbit field are offset from the varbit's end at run time).
    pub bit_offsets: Vec<u32>,
    /// Width of the fixed-size fields together, in bits.
    pub fixed_bits: u32,
    pub varbit_index: Option<usize>,
    /// Maximum header length in bytes (only for headers with a varbit field).
    pub max_length: u32,
}

#[derive(Debug, Clone)]
pub struct HeaderInst {
    pub name: String,
    pub type_idx: usize,
    pub metadata: bool,
    /// Index of the header's first field in the packet's flat field vector.
    pub first_field: usize,
    pub num_fields: usize,
    /// Slot in the packet's varbit storage, if the type has a varbit field.
    pub varbit_slot: Option<usize>,
    /// Stack this header belongs to (for `next_index`-style bookkeeping).
    pub stack: Option<usize>,
    /// Union this header belongs to: setting one member valid invalidates the others.
    pub union: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct HeaderStack {
    pub name: String,
    pub headers: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct HeaderUnion {
    pub name: String,
    pub headers: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct UnionStack {
    pub name: String,
    pub unions: Vec<usize>,
}

/// Global field index -> (header instance, offset in header).
#[derive(Debug, Clone, Copy)]
pub struct FieldLoc {
    pub header: usize,
    pub offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Shl,
    Shr,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    TwoCompMod,
    SatCast,
    USatCast,
}

/// A header designated statically or through a run-time stack index.
#[derive(Debug, Clone)]
pub enum HeaderRef {
    Fixed(usize),
    StackElem(usize, Box<Expr>),
    /// Last valid element of a stack (`stack_field` / `.last`).
    StackLast(usize),
    UnionMember(Box<UnionRef>, usize),
}

#[derive(Debug, Clone)]
pub enum UnionRef {
    Fixed(usize),
    StackElem(usize, Box<Expr>),
    StackLast(usize),
}

#[derive(Debug, Clone)]
pub enum Expr {
    Const(i128),
    Field(usize),
    /// Field at an offset of a header resolved at run time.
    DynField(HeaderRef, usize),
    Valid(HeaderRef),
    ValidUnion(UnionRef),
    /// Runtime data (action parameter) by index.
    Local(usize),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    Neg(Box<Expr>),
    D2b(Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    LastStackIndex(usize),
    /// `lastIndex` of a header union stack (p4c's `last_stack_index` on a `header_union_stack`).
    LastUnionStackIndex(usize),
    SizeStack(usize),
    RegisterRead(usize, Box<Expr>),
    /// Parser-only: bits at an offset from the current parse position.
    Lookahead(u32, u32),
    /// `a == b` (or `!=` when the flag is set) between two varbit fields, by
    /// value, as BMv2 compares them: their varbit slots.
    VarbitEq(usize, usize, bool),
}

/// Something a value can be written to.
#[derive(Debug, Clone)]
pub enum LValue {
    Field(usize),
    DynField(HeaderRef, usize),
}

#[derive(Debug, Clone)]
pub enum Prim {
    Assign(LValue, Expr),
    AssignVL(usize, usize),
    AssignHeader(HeaderRef, HeaderRef),
    AssignUnion(UnionRef, UnionRef),
    AssignHeaderStack(usize, usize),
    AssignUnionStack(usize, usize),
    SetValid(HeaderRef),
    SetInvalid(HeaderRef),
    Push(usize, Expr),
    Pop(usize, Expr),
    PushUnion(usize, Expr),
    PopUnion(usize, Expr),
    MarkToDrop,
    Exit,
    Jump(usize),
    JumpIfZero(Expr, usize),
    Random(LValue, Expr, Expr),
    /// TNA's Lpf sample (tna.rs): result, average, sample, dt (us), tau (ns).
    LpfSample(LValue, Expr, Expr, Expr, Expr),
    Count(usize, Expr),
    ExecuteMeter(usize, Expr, LValue),
    RegisterRead(LValue, usize, Expr),
    RegisterWrite(usize, Expr, Expr),
    Hash(LValue, Expr, usize, Expr),
    Digest(usize),
    CloneI2E(Expr, Option<usize>),
    CloneE2E(Expr, Option<usize>),
    Resubmit(Option<usize>),
    Recirculate(Option<usize>),
    Truncate(Expr),
    Log(String, Vec<Expr>),
    Assert(Expr),
    NoOp,
}

#[derive(Debug, Clone)]
pub struct Action {
    pub name: String,
    pub id: i64,
    pub params: Vec<(String, u32)>,
    pub prims: Vec<Prim>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
    Valid,
}

impl MatchKind {
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Valid => "valid",
        }
    }
}

#[derive(Debug, Clone)]
pub struct KeyField {
    pub name: String,
    pub kind: MatchKind,
    pub source: Expr,
    pub width: u32,
    /// Static mask from the JSON, if any.
    pub mask: Option<u128>,
}

/// An action with its (already width-checked) arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionCall {
    pub action: usize,
    pub args: Vec<i128>,
}

/// A table entry's key, one element per key field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyElem {
    pub value: u128,
    pub mask: u128,
    /// Inclusive range bounds (range match only; otherwise lo = hi = 0).
    pub lo: u128,
    pub hi: u128,
    /// Prefix length (lpm only).
    pub plen: u32,
}

#[derive(Debug, Clone)]
pub struct ConstEntry {
    pub key: Vec<KeyElem>,
    pub call: ActionCall,
    pub priority: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Table(usize),
    Cond(usize),
    ActionCall(usize),
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub id: i64,
    pub keys: Vec<KeyField>,
    /// True when every key is exact/valid: lookups use a hash map.
    pub all_exact: bool,
    /// True when entries carry a P4Runtime priority (ternary/range/optional keys).
    pub needs_priority: bool,
    pub actions: Vec<usize>,
    pub max_size: usize,
    /// Next node per program action index (outer None: not mapped; inner None ends the pipeline).
    pub next_by_action: Vec<Option<Option<Node>>>,
    pub next_hit: Option<Option<Node>>,
    pub next_miss: Option<Option<Node>>,
    pub base_default_next: Option<Node>,
    pub default_entry: Option<ActionCall>,
    pub default_const: bool,
    /// Keyless table whose default action and data are both const: never changes.
    pub default_fixed: bool,
    pub const_entries: Vec<ConstEntry>,
    pub direct_counter: Option<usize>,
    pub direct_meter: Option<usize>,
    /// Action profile of an `indirect`/`indirect_ws` table: its entries name a
    /// member or a group of the profile instead of an action.
    pub profile: Option<usize>,
}

/// An action profile (`action_profiles` of a pipeline): members are action
/// calls; with a selector, groups of members chosen per packet by a hash.
#[derive(Debug, Clone)]
pub struct ActionProfile {
    pub name: String,
    pub max_size: usize,
    /// Index in `Program::calculations` of the selector's hash.
    pub selector: Option<usize>,
}

/// What an entry (or default) of an action-profile table refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Indirect {
    Member(u32),
    Group(u32),
}

#[derive(Debug, Clone)]
pub struct Conditional {
    pub name: String,
    pub expr: Expr,
    pub true_next: Option<Node>,
    pub false_next: Option<Node>,
}

#[derive(Debug, Clone)]
pub struct ActionCallNode {
    pub name: String,
    pub action: usize,
    pub next: Option<Node>,
}

#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    pub name: String,
    pub init: Option<Node>,
}

#[derive(Debug, Clone)]
pub enum ExtractTarget {
    Header(usize),
    Stack(usize),
    UnionStack(usize, usize),
}

#[derive(Debug, Clone)]
pub enum ParserOp {
    Extract(ExtractTarget),
    ExtractVL(ExtractTarget, Expr),
    Set(LValue, Expr),
    Verify(Expr, Expr),
    Advance(Expr),
    Primitive(Prim),
}

#[derive(Debug, Clone)]
pub enum KeyPart {
    Field(Expr, u32),
    Lookahead(u32, u32),
}

#[derive(Debug, Clone)]
pub enum TransitionMatch {
    Default,
    Value { value: Vec<u8>, mask: Option<Vec<u8>> },
    ValueSet { vset: usize, mask: Option<Vec<u8>> },
}

#[derive(Debug, Clone)]
pub struct Transition {
    pub matcher: TransitionMatch,
    pub next: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct ParseState {
    pub name: String,
    pub ops: Vec<ParserOp>,
    pub key: Vec<KeyPart>,
    /// Total bytes of the byte-padded key.
    pub key_bytes: usize,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone, Default)]
pub struct Parser {
    pub name: String,
    pub init: Option<usize>,
    pub states: Vec<ParseState>,
}

#[derive(Debug, Clone)]
pub struct ValueSet {
    pub name: String,
    pub width: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgo {
    Crc16,
    Crc32,
    Crc16Custom,
    Crc32Custom,
    Csum16,
    Identity,
    Xor16,
    Random,
}

#[derive(Debug, Clone)]
pub enum CalcInput {
    Field(usize),
    /// The varbit field of this header instance: its current bytes, not a fixed width.
    Varbit(usize),
    Const(i128, u32),
    Header(usize),
    Payload,
}

#[derive(Debug, Clone)]
pub struct Calculation {
    pub name: String,
    pub algo: HashAlgo,
    pub inputs: Vec<CalcInput>,
}

#[derive(Debug, Clone)]
pub struct Checksum {
    pub name: String,
    pub target: usize,
    pub calc: usize,
    pub verify: bool,
    pub update: bool,
    pub cond: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct CounterArray {
    pub name: String,
    pub size: usize,
    pub direct_table: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterUnit {
    Bytes,
    Packets,
}

#[derive(Debug, Clone)]
pub struct MeterArray {
    pub name: String,
    pub size: usize,
    pub unit: MeterUnit,
    pub direct_table: Option<usize>,
    pub result_target: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct RegisterArray {
    pub name: String,
    pub size: usize,
    pub width: u32,
}

#[derive(Debug, Clone)]
pub struct FieldList {
    pub name: String,
    pub fields: Vec<usize>,
}

/// (field index, width) of the `standard_metadata` fields the architecture reads or writes.
#[derive(Debug, Clone, Default)]
pub struct StdMeta {
    pub ingress_port: Option<(usize, u32)>,
    pub egress_spec: Option<(usize, u32)>,
    pub egress_port: Option<(usize, u32)>,
    pub instance_type: Option<(usize, u32)>,
    pub packet_length: Option<(usize, u32)>,
    pub enq_timestamp: Option<(usize, u32)>,
    pub enq_qdepth: Option<(usize, u32)>,
    pub deq_timedelta: Option<(usize, u32)>,
    pub deq_qdepth: Option<(usize, u32)>,
    pub ingress_global_timestamp: Option<(usize, u32)>,
    pub egress_global_timestamp: Option<(usize, u32)>,
    pub mcast_grp: Option<(usize, u32)>,
    pub egress_rid: Option<(usize, u32)>,
    pub checksum_error: Option<(usize, u32)>,
    pub parser_error: Option<(usize, u32)>,
    pub priority: Option<(usize, u32)>,
}

/// Values of the core parser errors (from the JSON `errors`, else BMv2's defaults).
#[derive(Debug, Clone, Default)]
pub struct ErrorCodes {
    pub packet_too_short: i128,
    pub no_match: i128,
    pub stack_out_of_bounds: i128,
    pub header_too_short: i128,
    pub parser_timeout: i128,
    pub parser_invalid_argument: i128,
}

/// A loaded, validated BMv2 JSON program. Immutable; share it with `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub header_types: Vec<HeaderType>,
    pub headers: Vec<HeaderInst>,
    pub stacks: Vec<HeaderStack>,
    pub unions: Vec<HeaderUnion>,
    pub union_stacks: Vec<UnionStack>,
    pub field_locs: Vec<FieldLoc>,
    /// (width, signed) per global field index, for the per-packet path.
    pub field_info: Vec<(u32, bool)>,
    /// (value mask, signed) per global field index: what a write keeps.
    pub(crate) field_masks: Vec<(u128, bool)>,
    pub num_varbits: usize,
    pub actions: Vec<Action>,
    pub tables: Vec<Table>,
    pub conditionals: Vec<Conditional>,
    pub action_calls: Vec<ActionCallNode>,
    pub ingress: Pipeline,
    pub egress: Pipeline,
    pub parser: Parser,
    pub deparser: Vec<usize>,
    pub value_sets: Vec<ValueSet>,
    pub action_profiles: Vec<ActionProfile>,
    pub calculations: Vec<Calculation>,
    pub checksums: Vec<Checksum>,
    pub counters: Vec<CounterArray>,
    pub meters: Vec<MeterArray>,
    pub registers: Vec<RegisterArray>,
    pub field_lists: Vec<FieldList>,
    pub learn_lists: Vec<FieldList>,
    pub std: StdMeta,
    pub errors: ErrorCodes,
    /// The unit of the queue depths the traffic manager hands egress: 0 =
    /// packets (simple_switch), else cells of this many bytes, a frame taking
    /// ceil(bytes / cell) (Tofino; JSON `"__tna__": {"cell_bytes": N}`).
    pub queue_cell_bytes: u32,
    /// TNA (`__tna__.egress_parser` / `ingress_deparser`): egress starts by
    /// re-parsing, with this parser, the bytes the ingress deparser emits in this
    /// order (bridged metadata travels that way); `None` for a v1model program.
    pub tna_egress_parser: Option<Parser>,
    pub tna_ingress_deparser: Vec<usize>,
    pub(crate) names: Names,
}

/// Name -> index maps for the control-plane API.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    pub headers: HashMap<String, usize>,
    pub stacks: HashMap<String, usize>,
    pub unions: HashMap<String, usize>,
    pub union_stacks: HashMap<String, usize>,
    pub actions: HashMap<String, usize>,
    pub tables: HashMap<String, usize>,
    pub counters: HashMap<String, usize>,
    pub meters: HashMap<String, usize>,
    pub registers: HashMap<String, usize>,
    pub value_sets: HashMap<String, usize>,
    pub action_profiles: HashMap<String, usize>,
}

impl Table {
    /// The node after `action` ran, from `next_tables` (or base_default_next).
    #[inline]
    pub fn next_after(&self, action: usize) -> Option<Node> {
        self.next_by_action.get(action).copied().flatten().unwrap_or(self.base_default_next)
    }
}

impl Program {
    pub fn num_fields(&self) -> usize {
        self.field_locs.len()
    }

    pub fn field_width(&self, f: usize) -> u32 {
        self.field_info[f].0
    }

    pub fn field_signed(&self, f: usize) -> bool {
        self.field_info[f].1
    }

    pub fn table_index(&self, name: &str) -> Option<usize> {
        self.names.tables.get(name).copied()
    }
    pub fn action_index(&self, name: &str) -> Option<usize> {
        self.names.actions.get(name).copied()
    }
    pub fn counter_index(&self, name: &str) -> Option<usize> {
        self.names.counters.get(name).copied()
    }
    pub fn meter_index(&self, name: &str) -> Option<usize> {
        self.names.meters.get(name).copied()
    }
    pub fn register_index(&self, name: &str) -> Option<usize> {
        self.names.registers.get(name).copied()
    }
    pub fn value_set_index(&self, name: &str) -> Option<usize> {
        self.names.value_sets.get(name).copied()
    }
    pub fn header_index(&self, name: &str) -> Option<usize> {
        self.names.headers.get(name).copied()
    }

    /// Global field index of `header.field`.
    pub fn field_index(&self, header: &str, field: &str) -> Option<usize> {
        let h = &self.headers[self.header_index(header)?];
        let ht = &self.header_types[h.type_idx];
        let off = ht.fields.iter().position(|f| f.name == field)?;
        Some(h.first_field + off)
    }
}
