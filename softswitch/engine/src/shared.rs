//! State shared between the Python-facing `Switch` and the packet thread.

use crate::tm::PortConfig;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use p4core::{Program, State};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A loaded program and its runtime state (tables, counters, registers...).
pub struct Pipeline {
    pub program: Arc<Program>,
    pub state: Arc<State>,
}

#[derive(Default)]
pub struct PortCounters {
    pub rx: AtomicU64,
    pub tx: AtomicU64,
    pub drops: AtomicU64,
    /// Frames the link's loss model dropped on the wire (not in `drops`).
    pub lost: AtomicU64,
    pub qdepth: AtomicU64,
    /// How late frames went out against their due time (the traffic manager's timing error).
    pub late_ns_total: AtomicU64,
    pub late_ns_max: AtomicU64,
    pub late_over_1ms: AtomicU64,
}

pub struct Digest {
    pub name: String,
    pub fields: Vec<Vec<u8>>,
}

/// Wakes the packet thread out of its ppoll (packet-out, config change, stop).
pub struct Waker {
    fd: OwnedFd,
}

impl Waker {
    fn new() -> std::io::Result<Waker> {
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Waker { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub fn wake(&self) {
        let one: u64 = 1;
        unsafe { libc::write(self.fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    pub fn drain(&self) {
        let mut v: u64 = 0;
        unsafe { libc::read(self.fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

pub const MAX_PENDING_TO_CONTROLLER: usize = 4096;

pub struct Shared {
    pub pipeline: RwLock<Option<Arc<Pipeline>>>,
    /// Bumped on every pipeline swap so the packet thread rebuilds its executor.
    pub pipeline_gen: AtomicU64,
    /// The generation the packet thread runs now: a swap returns only once it
    /// has caught up, so every frame sent after the swap meets the new program.
    pub pipeline_adopted: AtomicU64,
    pub port_config: Mutex<BTreeMap<u32, PortConfig>>,
    pub config_gen: AtomicU64,
    pub counters: BTreeMap<u32, PortCounters>,
    pub cpu_port: Option<u32>,
    pub seed: u64,
    pub trace: bool,
    /// The packet thread never sleeps: it polls its ports and timers in a
    /// loop, spending a CPU for latency (no wake-up on any frame or deadline).
    pub busy_poll: bool,
    /// SCHED_FIFO priority of the packet thread (0: the normal scheduler).
    pub realtime_priority: u8,
    pub stop: AtomicBool,
    pub waker: Waker,
    pub packet_out: (Sender<Vec<u8>>, Receiver<Vec<u8>>),
    pub packet_in: (Sender<Vec<u8>>, Receiver<Vec<u8>>),
    pub digests: (Sender<Digest>, Receiver<Digest>),
}

impl Shared {
    pub fn new(port_ids: &[u32], cpu_port: Option<u32>, seed: u64, trace: bool, busy_poll: bool,
               realtime_priority: u8) -> std::io::Result<Shared> {
        let all_ports = port_ids.iter().copied().chain(cpu_port);
        Ok(Shared {
            pipeline: RwLock::new(None),
            pipeline_gen: AtomicU64::new(0),
            pipeline_adopted: AtomicU64::new(0),
            port_config: Mutex::new(all_ports.clone().map(|p| (p, PortConfig::default())).collect()),
            config_gen: AtomicU64::new(0),
            counters: all_ports.map(|p| (p, PortCounters::default())).collect(),
            cpu_port,
            seed,
            trace,
            busy_poll,
            realtime_priority,
            stop: AtomicBool::new(false),
            waker: Waker::new()?,
            packet_out: unbounded(),
            // Bounded: a controller that stops reading must not grow memory; extra frames are dropped.
            packet_in: bounded(MAX_PENDING_TO_CONTROLLER),
            digests: bounded(MAX_PENDING_TO_CONTROLLER),
        })
    }

    pub fn current(&self) -> Option<Arc<Pipeline>> {
        self.pipeline.read().clone()
    }

    pub fn count(&self, port: u32, pick: impl Fn(&PortCounters) -> &AtomicU64, n: u64) {
        if let Some(c) = self.counters.get(&port) {
            pick(c).fetch_add(n, Relaxed);
        }
    }
}
