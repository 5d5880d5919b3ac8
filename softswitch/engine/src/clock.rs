//! Switch time: nanoseconds on CLOCK_MONOTONIC since the switch was created,
//! plus the wall-clock origin for pcap timestamps, and the timer the packet
//! thread sleeps on.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy)]
pub struct Clock {
    /// CLOCK_MONOTONIC (ns) at switch time 0, so deadlines convert exactly.
    mono_origin_ns: u64,
    wall_origin: Duration,
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

impl Clock {
    pub fn new() -> Clock {
        Clock { mono_origin_ns: monotonic_ns(), wall_origin: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() }
    }

    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.mono_origin_ns)
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

/// Puts the calling thread in SCHED_FIFO at `priority` (1..=99), so it runs as
/// soon as a frame or deadline wakes it instead of waiting behind the hosts'
/// processes sharing its cores; the kernel's RT throttling still leaves them 5 %.
pub fn make_realtime(priority: u8) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: priority as libc::c_int };
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A wake-up at a switch time, as a file descriptor to poll beside the ports:
/// a CLOCK_MONOTONIC timerfd armed at the absolute deadline. Not a poll
/// timeout: Linux stretches poll/select timeouts by 0.1 % of their length
/// (0.5 % for a niced process, up to 100 ms) whatever the thread's timer
/// slack, so a frame held ~1 s left ~1 ms late (~5 ms niced); a timerfd
/// expires at its deadline.
pub struct WakeTimer {
    fd: OwnedFd,
    clock: Clock,
    /// The switch time the timer is armed for, if it is.
    armed_ns: Option<u64>,
}

impl WakeTimer {
    pub fn new(clock: Clock) -> std::io::Result<WakeTimer> {
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(WakeTimer { fd: unsafe { OwnedFd::from_raw_fd(fd) }, clock, armed_ns: None })
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Arms the timer for switch time `at_ns`, or disarms it (`None`).
    /// Re-arming clears an expiry not yet read; an unchanged deadline costs no call.
    pub fn set(&mut self, at_ns: Option<u64>) {
        if at_ns == self.armed_ns {
            return;
        }
        // An all-zero it_value disarms; an armed deadline is never 0 (boot time precedes the switch).
        let value = at_ns.map_or(timespec_of(0), |t| timespec_of(self.clock.mono_origin_ns + t));
        let spec = libc::itimerspec { it_interval: timespec_of(0), it_value: value };
        let rc = unsafe { libc::timerfd_settime(self.fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        assert_eq!(rc, 0, "timerfd_settime: {}", std::io::Error::last_os_error());
        self.armed_ns = at_ns;
    }

    /// After poll found the timer readable: consumes the expiry and returns
    /// the deadline it was armed for.
    pub fn take_expiry(&mut self) -> Option<u64> {
        let mut ticks = 0u64;
        let n = unsafe { libc::read(self.fd(), &mut ticks as *mut u64 as *mut libc::c_void, 8) };
        if n == 8 { self.armed_ns.take() } else { None }
    }

    /// The kernel's view: nanoseconds until the timer expires (0: disarmed or expired).
    pub fn remaining_ns(&self) -> u64 {
        let mut spec = libc::itimerspec { it_interval: timespec_of(0), it_value: timespec_of(0) };
        unsafe { libc::timerfd_gettime(self.fd(), &mut spec) };
        spec.it_value.tv_sec as u64 * 1_000_000_000 + spec.it_value.tv_nsec as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: i32, timeout_ms: i32) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        unsafe { libc::poll(&mut p, 1, timeout_ms) == 1 }
    }

    #[test]
    fn a_long_sleep_is_armed_at_its_exact_deadline() {
        // A poll timeout of 990 ms would carry ~1 ms of kernel slack; the
        // kernel's expiry is the deadline itself: it read its clock between
        // our two reads, so the deadline lies in [before + left, after + left].
        let clock = Clock::new();
        let mut timer = WakeTimer::new(clock).unwrap();
        let deadline = clock.now_ns() + 990_000_000;
        timer.set(Some(deadline));
        let before = clock.now_ns();
        let left = timer.remaining_ns();
        let after = clock.now_ns();
        assert!(before + left <= deadline && deadline <= after + left, "{before} + {left} .. {after} + {left} vs {deadline}");
        assert!(!readable(timer.fd(), 0));
    }

    #[test]
    fn the_timer_fires_not_before_its_deadline_and_reports_it() {
        let clock = Clock::new();
        let mut timer = WakeTimer::new(clock).unwrap();
        let deadline = clock.now_ns() + 2_000_000;
        timer.set(Some(deadline));
        assert!(readable(timer.fd(), 5_000));
        assert!(clock.now_ns() >= deadline);
        assert_eq!(timer.take_expiry(), Some(deadline));
        assert_eq!(timer.take_expiry(), None);
    }

    #[test]
    fn rearming_or_disarming_clears_an_unread_expiry() {
        let clock = Clock::new();
        let mut timer = WakeTimer::new(clock).unwrap();
        timer.set(Some(clock.now_ns()));
        assert!(readable(timer.fd(), 5_000));
        timer.set(Some(clock.now_ns() + 3_600_000_000_000));
        assert!(!readable(timer.fd(), 0));
        timer.set(None);
        assert_eq!(timer.remaining_ns(), 0);
        assert_eq!(timer.take_expiry(), None);
    }
}
