//! p4core: a BMv2 JSON interpreter with simple_switch (v1model) semantics.
//! Pure library: no I/O, no threads. See README.md for the API contract.

mod bits;
mod compile;
mod exec;
mod hash;
mod jit;
mod load;
mod program;
mod state;
mod strict;
mod tna;

pub use smallvec::SmallVec;
pub use exec::{Digest, Engine, ENGINE_ENV, EgressOutcome, Executor, IngressOutcome, PacketState, QueueMeta, QueuedPacket, Recirculation};
pub use load::LoadError;
pub use program::{instance_type, Indirect, MatchKind, Program, DROP_PORT};
pub use state::{
    bytes_to_value, value_to_bytes, CloneSession, EntryInfo, MatchKey, MeterConfig, ProfileContents, RuntimeError, State, COLOR_GREEN,
    COLOR_RED, COLOR_YELLOW,
};
