//! Switch time: nanoseconds on CLOCK_MONOTONIC since the switch was created,
//! plus the wall-clock origin for pcap timestamps.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy)]
pub struct Clock {
    origin: Instant,
    wall_origin: Duration,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { origin: Instant::now(), wall_origin: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() }
    }

    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// CLOCK_REALTIME minus switch time, right now: take it once per receive
    /// batch so the frames of the batch keep their order when converted.
    pub fn realtime_offset_ns(&self) -> i128 {
        let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as i128;
        real - self.now_ns() as i128
    }

    /// Switch time of a kernel receive timestamp (CLOCK_REALTIME ns), never
    /// later than `now_ns` nor more than 1 s before it.
    pub fn from_realtime_ns(realtime_ns: u64, offset_ns: i128, now_ns: u64) -> u64 {
        let t = (realtime_ns as i128 - offset_ns).clamp(now_ns as i128 - 1_000_000_000, now_ns as i128);
        t.max(0) as u64
    }

    /// Wall-clock time of a switch timestamp (for pcap records).
    pub fn wall(&self, ns: u64) -> Duration {
        self.wall_origin + Duration::from_nanos(ns)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// Lets short sleeps wake on time: the default 50 us timer slack would
/// otherwise dominate the sub-millisecond waits of the traffic manager.
pub fn tighten_timer_slack() {
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
