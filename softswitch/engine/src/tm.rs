//! Traffic manager of one egress port: priority FIFO queues with a buffer
//! limit (tail drop), a line rate that serialises each frame by its length,
//! and a propagation delay after serialisation.
//!
//! Time is virtual: a frame starts serialising at
//! `max(time the link is free, time it was enqueued)`, so the delivered rate
//! is exact whatever the wake-up precision of the thread that drives it; the
//! thread only has to call `pop_due(now)` often enough to keep jitter low.
//! Queue metadata follows BMv2: `enq_qdepth` counts the packets already
//! queued (not the arriving one), `deq_qdepth` the packets left after the
//! dequeue, `deq_timedelta` is dequeue time minus enqueue time.

use std::collections::VecDeque;

/// Per-port link and queue settings (0 means unlimited for rate and bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortConfig {
    pub rate_bps: u64,
    pub buffer_packets: u32,
    pub buffer_bytes: u64,
    pub delay_ns: u64,
    pub ingress_delay_ns: u64,
    pub prio_queues: u8,
}

impl Default for PortConfig {
    /// BMv2's default: 64-packet queue, no rate limit, no delay.
    fn default() -> Self {
        PortConfig { rate_bps: 0, buffer_packets: 64, buffer_bytes: 0, delay_ns: 0, ingress_delay_ns: 0, prio_queues: 1 }
    }
}

impl PortConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.buffer_packets == 0 {
            return Err("buffer_packets must be at least 1".into());
        }
        if self.buffer_packets >= 1 << 19 {
            return Err("buffer_packets must be below 2^19 (enq_qdepth is bit<19>)".into());
        }
        if !(1..=8).contains(&self.prio_queues) {
            return Err("prio_queues must be between 1 and 8".into());
        }
        Ok(())
    }

    /// Time to serialise `len` bytes at the line rate (0 when unlimited).
    pub fn serialisation_ns(&self, len: usize) -> u64 {
        if self.rate_bps == 0 { 0 } else { (len as u128 * 8 * 1_000_000_000 / self.rate_bps as u128) as u64 }
    }
}

struct Waiting<P> {
    pkt: P,
    len: usize,
    enq_ns: u64,
    enq_qdepth: u32,
}

/// A frame leaving the queue, with the queue metadata the egress pipeline sees.
#[derive(Debug)]
pub struct Departure<P> {
    pub pkt: P,
    pub enq_ns: u64,
    pub enq_qdepth: u32,
    /// When it started serialising (virtual dequeue time).
    pub deq_ns: u64,
    pub deq_qdepth: u32,
    /// When its last bit reaches the far end of the link: transmit then.
    pub deliver_ns: u64,
}

impl<P> Departure<P> {
    pub fn deq_timedelta_us(&self) -> u64 {
        (self.deq_ns - self.enq_ns) / 1000
    }
}

pub struct EgressQueue<P> {
    pub cfg: PortConfig,
    queues: Vec<VecDeque<Waiting<P>>>,
    packets: u32,
    bytes: u64,
    link_free_ns: u64,
    pub drops: u64,
}

impl<P> EgressQueue<P> {
    pub fn new(cfg: PortConfig) -> Self {
        EgressQueue {
            queues: (0..cfg.prio_queues).map(|_| VecDeque::new()).collect(),
            cfg,
            packets: 0,
            bytes: 0,
            link_free_ns: 0,
            drops: 0,
        }
    }

    pub fn depth(&self) -> u32 {
        self.packets
    }

    /// Changes the settings; queued frames stay (in the lowest queue if
    /// there are now fewer priority queues).
    pub fn reconfigure(&mut self, cfg: PortConfig) {
        let n = cfg.prio_queues as usize;
        while self.queues.len() > n {
            let extra = self.queues.pop().unwrap();
            self.queues[n - 1].extend(extra);
        }
        while self.queues.len() < n {
            self.queues.push(VecDeque::new());
        }
        self.cfg = cfg;
    }

    /// Enqueues at `now_ns` (the caller has already popped everything due by
    /// then). Returns the enq_qdepth, or gives the packet back when the
    /// buffer is full (tail drop, counted).
    pub fn enqueue(&mut self, pkt: P, len: usize, priority: u8, now_ns: u64) -> Result<u32, P> {
        let full = self.packets >= self.cfg.buffer_packets
            || (self.cfg.buffer_bytes > 0 && self.bytes + len as u64 > self.cfg.buffer_bytes);
        if full {
            self.drops += 1;
            return Err(pkt);
        }
        let q = (priority as usize).min(self.queues.len() - 1);
        let enq_qdepth = self.packets;
        self.queues[q].push_back(Waiting { pkt, len, enq_ns: now_ns, enq_qdepth });
        self.packets += 1;
        self.bytes += len as u64;
        Ok(enq_qdepth)
    }

    /// When the next frame starts serialising, if any is queued.
    pub fn next_start_ns(&self) -> Option<u64> {
        let earliest = self.queues.iter().filter_map(|q| q.front()).map(|w| w.enq_ns).min()?;
        Some(earliest.max(self.link_free_ns))
    }

    /// Dequeues the next frame if it starts serialising at or before `now_ns`.
    /// Higher priority numbers are served first among frames already waiting.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Departure<P>> {
        let start = self.next_start_ns()?;
        if start > now_ns {
            return None;
        }
        let q = (0..self.queues.len())
            .rev()
            .find(|&i| self.queues[i].front().is_some_and(|w| w.enq_ns <= start))?;
        let w = self.queues[q].pop_front().unwrap();
        self.packets -= 1;
        self.bytes -= w.len as u64;
        self.link_free_ns = start + self.cfg.serialisation_ns(w.len);
        Some(Departure {
            pkt: w.pkt,
            enq_ns: w.enq_ns,
            enq_qdepth: w.enq_qdepth,
            deq_ns: start,
            deq_qdepth: self.packets,
            deliver_ns: self.link_free_ns + self.cfg.delay_ns,
        })
    }

    /// Empties the queues (pipeline change); returns how many frames were lost.
    pub fn flush(&mut self) -> usize {
        let n = self.packets as usize;
        self.queues.iter_mut().for_each(|q| q.clear());
        self.packets = 0;
        self.bytes = 0;
        n
    }
}

/// Frames waiting for a fixed time (a propagation delay): FIFO by due time.
pub struct DelayLine<T> {
    items: VecDeque<(u64, T)>,
}

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine { items: VecDeque::new() }
    }
}

impl<T> DelayLine<T> {
    pub fn push(&mut self, due_ns: u64, item: T) {
        self.items.push_back((due_ns, item));
    }

    pub fn next_due_ns(&self) -> Option<u64> {
        self.items.front().map(|(t, _)| *t)
    }

    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, T)> {
        if self.items.front()?.0 <= now_ns { self.items.pop_front() } else { None }
    }

    /// How many items from the front are due by `now_ns`.
    pub fn count_due(&self, now_ns: u64) -> usize {
        self.items.iter().take_while(|(t, _)| *t <= now_ns).count()
    }

    /// The first `n` items, without removing them.
    pub fn front_items(&self, n: usize) -> impl Iterator<Item = &(u64, T)> {
        self.items.iter().take(n)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn clear(&mut self) {
        self.items.clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate_bps: u64, buffer_packets: u32) -> PortConfig {
        PortConfig { rate_bps, buffer_packets, ..PortConfig::default() }
    }

    #[test]
    fn burst_builds_queue_and_tail_drops() {
        let mut q = EgressQueue::new(cfg(1_000_000, 4));
        let depths: Vec<_> = (0..6).map(|i| q.enqueue(i, 125, 0, 0)).collect();
        assert_eq!(depths[..4].iter().map(|r| *r.as_ref().unwrap()).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert!(depths[4].is_err() && depths[5].is_err());
        assert_eq!(q.drops, 2);
    }

    #[test]
    fn serialises_at_line_rate_in_virtual_time() {
        // 125 bytes at 1 Mb/s = 1 ms each; popping late must not change departures.
        let mut q = EgressQueue::new(PortConfig { delay_ns: 5_000_000, ..cfg(1_000_000, 10) });
        for i in 0..3 {
            q.enqueue(i, 125, 0, 0).unwrap();
        }
        let deps: Vec<_> = std::iter::from_fn(|| q.pop_due(10_000_000)).collect();
        assert_eq!(deps.iter().map(|d| d.deq_ns).collect::<Vec<_>>(), vec![0, 1_000_000, 2_000_000]);
        assert_eq!(deps.iter().map(|d| d.deliver_ns).collect::<Vec<_>>(), vec![6_000_000, 7_000_000, 8_000_000]);
        assert_eq!(deps.iter().map(|d| d.deq_qdepth).collect::<Vec<_>>(), vec![2, 1, 0]);
        assert_eq!(deps[2].deq_timedelta_us(), 2000);
    }

    #[test]
    fn byte_limit_drops_frames_that_do_not_fit() {
        let mut q = EgressQueue::new(PortConfig { buffer_bytes: 3000, ..cfg(0, 100) });
        assert!(q.enqueue(0, 1500, 0, 0).is_ok());
        assert!(q.enqueue(1, 1500, 0, 0).is_ok());
        assert!(q.enqueue(2, 64, 0, 0).is_err());
    }

    #[test]
    fn higher_priority_served_first_among_waiting() {
        let mut q = EgressQueue::new(PortConfig { prio_queues: 2, ..cfg(1_000_000, 10) });
        q.enqueue("low-a", 125, 0, 0).unwrap();
        q.enqueue("low-b", 125, 0, 0).unwrap();
        q.enqueue("high", 125, 1, 10).unwrap();
        let order: Vec<_> = std::iter::from_fn(|| q.pop_due(u64::MAX / 2)).map(|d| d.pkt).collect();
        assert_eq!(order, vec!["low-a", "high", "low-b"]);
    }

    #[test]
    fn idle_link_starts_at_arrival() {
        let mut q = EgressQueue::new(cfg(1_000_000, 10));
        q.enqueue(0, 125, 0, 0).unwrap();
        q.pop_due(0).unwrap();
        q.enqueue(1, 125, 0, 5_000_000).unwrap();
        assert!(q.pop_due(4_999_999).is_none());
        let d = q.pop_due(5_000_000).unwrap();
        assert_eq!((d.deq_ns, d.deq_timedelta_us()), (5_000_000, 0));
    }
}
