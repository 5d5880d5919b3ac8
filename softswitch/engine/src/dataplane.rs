//! The packet thread: one polling loop that receives on every port, runs
//! ingress, feeds the traffic manager, runs egress at dequeue time and
//! transmits when each frame's last bit reaches the far end of its link.
//!
//! One thread on purpose: the machines aqmlab targets have two cores that
//! also run the TCP endpoints, and a single loop needs no locking between
//! ingress and egress (the program's state is shared with the control plane
//! through p4core's own fine-grained locks).

use crate::afpacket::{RawPort, RecvBufs, Received, SendScratch};
use crate::clock::{tighten_timer_slack, Clock, WakeTimer};
use crate::pcap::PortCapture;
use crate::shared::{Digest, Pipeline, Shared};
use crate::tm::{loss_seed, DelayLine, Departure, EgressQueue};
use p4core::{EgressOutcome, Executor, IngressOutcome, QueueMeta, QueuedPacket};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;

/// The thread wakes a margin before each scheduled event and spins the rest:
/// timed sleeps end tens of microseconds late on a loaded machine even with a
/// 1 ns timer slack. The margin follows the lateness actually observed.
/// (The sleep itself is a timerfd, not a poll timeout: see `WakeTimer`.)
const MIN_SPIN_NS: u64 = 10_000;
const MAX_SPIN_NS: u64 = 300_000;
/// The full margin buys the last tens of microseconds of a deadline: it matters
/// on links where a full frame lasts under a millisecond (faster than 12 Mb/s;
/// 121 us at 100 Mb/s). At 1.5 Mb/s a switch spinning 300 us per event burnt a
/// quarter of its CPU, and four such runs side by side were all late: 14 % of
/// frames over 1 ms late spinning on every link, 7 % sleeping (RFC 2415 thread
/// runs). Slower links wake early by less (below).
const SPIN_BELOW_FRAME_NS: u64 = 1_000_000;
/// Slower links wake early by the mean lateness of timed wake-ups alone, at
/// most this: slept to the deadline itself, each of their events came one
/// wake-up late (RFC 889's 45 kb/s calibration line: intercept error +0.21 ms,
/// +0.13-0.14 waking by the mean); the mean costs microseconds of spin per
/// event, not the fast links' hundreds.
const SLOW_LINK_MAX_SPIN_NS: u64 = 50_000;
const FULL_FRAME_BYTES: usize = 1514;
/// Receive batches taken per port per loop turn, so queues keep being served under load.
const RX_BATCHES_PER_TURN: usize = 4;
/// Recirculate/clone chains longer than this are dropped (a loop in the program);
/// p4core bounds resubmits itself.
const MAX_PASSES: u32 = 16;
/// Bytes of a tail-dropped frame kept in the drop capture (Ethernet + IPv4 + TCP headers).
const DROP_SNAP: usize = 128;
/// A port whose socket reports an error is polled again after this long.
const FAILING_PORT_RETRY_NS: u64 = 100_000_000;

struct Active {
    generation: u64,
    pipeline: Arc<Pipeline>,
    exec: Executor,
}

pub struct PacketLoop {
    shared: Arc<Shared>,
    clock: Clock,
    ports: Arc<BTreeMap<u32, RawPort>>,
    active: Option<Active>,
    config_gen: u64,
    queues: BTreeMap<u32, EgressQueue<QueuedPacket>>,
    arriving: BTreeMap<u32, DelayLine<Vec<u8>>>,
    wire: BTreeMap<u32, DelayLine<Vec<u8>>>,
    captures: BTreeMap<u32, PortCapture>,
    /// Per egress port: the frames its queue tail-dropped (`drop_pcap_dir`).
    drop_captures: BTreeMap<u32, PortCapture>,
    /// Egress ports that tail-dropped the frame now in ingress (first pass).
    tail_dropped: Vec<u32>,
    bufs: Option<Box<RecvBufs>>,
    send_scratch: SendScratch,
    /// Ports whose receive failed, with the time to try again.
    failing: BTreeMap<u32, u64>,
    /// Ports that filled every receive batch last turn: read again without polling.
    backlogged: Vec<u32>,
    /// (port, reason) of received frames dropped undeliverable, logged once each.
    refusals_logged: BTreeSet<(u32, &'static str)>,
    /// Wakes the thread at the next scheduled event less the spin margin.
    timer: WakeTimer,
    /// Moving average of how late timed wake-ups were (ns).
    wake_lateness_ns: u64,
}

impl PacketLoop {
    pub fn new(shared: Arc<Shared>, clock: Clock, ports: Arc<BTreeMap<u32, RawPort>>,
               pcap_dir: Option<&Path>, drop_pcap_dir: Option<&Path>) -> std::io::Result<PacketLoop> {
        let mut captures = BTreeMap::new();
        if let Some(dir) = pcap_dir {
            for &p in ports.keys() {
                captures.insert(p, PortCapture::create(dir, p)?);
            }
        }
        let mut drop_captures = BTreeMap::new();
        if let Some(dir) = drop_pcap_dir {
            for &p in ports.keys() {
                drop_captures.insert(p, PortCapture::create_drops(dir, p)?);
            }
        }
        let ids: Vec<u32> = shared.counters.keys().copied().collect();
        Ok(PacketLoop {
            queues: BTreeMap::new(),
            arriving: ids.iter().map(|&p| (p, DelayLine::default())).collect(),
            wire: ids.iter().map(|&p| (p, DelayLine::default())).collect(),
            shared,
            clock,
            ports,
            active: None,
            config_gen: u64::MAX,
            captures,
            drop_captures,
            tail_dropped: Vec::new(),
            bufs: Some(Box::new(RecvBufs::new())),
            send_scratch: SendScratch::default(),
            failing: BTreeMap::new(),
            backlogged: Vec::new(),
            refusals_logged: BTreeSet::new(),
            timer: WakeTimer::new(clock)?,
            wake_lateness_ns: MIN_SPIN_NS,
        })
    }

    pub fn run(mut self) {
        tighten_timer_slack();
        for line in crate::afpacket::io_summary(self.ports.values()) {
            eprintln!("softswitch: packet I/O: {line}");
        }
        if self.shared.busy_poll {
            eprintln!("softswitch: packet I/O: busy-polling (the packet thread never sleeps)");
        }
        let priority = self.shared.realtime_priority;
        if priority > 0 {
            match crate::clock::make_realtime(priority) {
                Ok(()) => eprintln!("softswitch: packet I/O: realtime (SCHED_FIFO priority {priority})"),
                Err(e) => eprintln!("softswitch: packet I/O: SCHED_FIFO priority {priority} refused ({e}); \
                                     the packet thread runs at normal priority"),
            }
        }
        while !self.shared.stop.load(SeqCst) {
            // Under load, go straight back to the sockets that still had frames.
            let readable = if self.backlogged.is_empty() { self.wait() } else { std::mem::take(&mut self.backlogged) };
            // After the wait, so frames read in this turn meet the program the
            // control plane installed before they arrived (the swap wakes us).
            self.sync_config();
            self.sync_pipeline();
            let now = self.clock.now_ns();
            // Frames already due leave before this turn's work (receiving, the
            // next frame's egress) can hold them: served after it, a saturated
            // link's every frame left one egress run late.
            self.transmit(now);
            self.receive(&readable, now);
            self.take_packet_outs(now);
            self.release_arrivals(now);
            let ports: Vec<u32> = self.queues.keys().copied().collect();
            for p in ports {
                self.advance(p, now, 0);
            }
            self.transmit(self.clock.now_ns());
        }
    }

    fn sync_config(&mut self) {
        let gen = self.shared.config_gen.load(SeqCst);
        if gen == self.config_gen {
            return;
        }
        self.config_gen = gen;
        let seed = self.shared.seed;
        let cells = self.queue_cell_bytes();
        for (&port, &cfg) in self.shared.port_config.lock().iter() {
            self.queues.entry(port).and_modify(|q| q.reconfigure(cfg)).or_insert_with(|| {
                let mut q = EgressQueue::new(cfg, loss_seed(seed, port));
                q.count_cells(cells);
                q
            });
        }
    }

    /// The active program's queue depth unit (0: packets; a TNA program: cells).
    fn queue_cell_bytes(&self) -> u32 {
        self.active.as_ref().map_or(0, |a| a.pipeline.program.queue_cell_bytes)
    }

    fn sync_pipeline(&mut self) {
        let gen = self.shared.pipeline_gen.load(SeqCst);
        if self.active.as_ref().map(|a| a.generation) == Some(gen) {
            return;
        }
        // Queued packets belong to the old program: they are lost, as on BMv2.
        self.queues.values_mut().for_each(|q| {
            q.flush();
        });
        let trace = self.shared.trace;
        self.active = self.shared.current().map(|pipeline| {
            let mut exec = Executor::new(pipeline.program.clone(), self.shared.seed);
            eprintln!("softswitch: P4 engine: {} ({}=interpreter forces the interpreter)", exec.engine_summary(), p4core::ENGINE_ENV);
            exec.set_logging(trace); // the program's log_msg lines join the trace
            Active { generation: gen, exec, pipeline }
        });
        let cells = self.queue_cell_bytes();
        self.queues.values_mut().for_each(|q| q.count_cells(cells));
        self.shared.pipeline_adopted.store(gen, SeqCst);
    }

    /// When the thread must be awake: the next scheduled event, less its
    /// port's spin margin (the full one on fast ports, the mean lateness on slow).
    fn wake_time_ns(&self) -> Option<u64> {
        let (fast, slow) = (self.spin_margin_ns(), self.slow_link_margin_ns());
        let early = |port: &u32, t: u64| t.saturating_sub(if self.spins_for(*port) { fast } else { slow });
        let starts = self.queues.iter().filter_map(|(p, q)| q.next_start_ns().map(|t| early(p, t)));
        let sends = self.wire.iter().filter_map(|(p, w)| w.next_due_ns().map(|t| early(p, t)));
        let arrivals = self.arriving.iter().filter_map(|(p, w)| w.next_due_ns().map(|t| early(p, t)));
        let now = self.clock.now_ns();
        let retries = self.failing.values().copied().filter(|&t| t > now);
        starts.chain(sends).chain(arrivals).chain(retries).min()
    }

    fn spin_margin_ns(&self) -> u64 {
        (2 * self.wake_lateness_ns + MIN_SPIN_NS).min(MAX_SPIN_NS)
    }

    fn slow_link_margin_ns(&self) -> u64 {
        self.wake_lateness_ns.min(SLOW_LINK_MAX_SPIN_NS)
    }

    /// Whether deadlines on `port` are worth spinning for (an unshaped port's
    /// frames take no time: always).
    fn spins_for(&self, port: u32) -> bool {
        self.queues.get(&port).map_or(0, |q| q.cfg.serialisation_ns(FULL_FRAME_BYTES)) < SPIN_BELOW_FRAME_NS
    }

    /// Sleeps until a port is readable, the control plane wakes us, or the
    /// next scheduled event is a spin margin away. Returns the readable port ids.
    fn wait(&mut self) -> Vec<u32> {
        let now = self.clock.now_ns();
        // A failing port (interface gone or down) sits out until its retry time: ppoll ignores fd -1.
        let mut fds: Vec<libc::pollfd> = self
            .ports
            .iter()
            .map(|(p, s)| {
                let resting = self.failing.get(p).is_some_and(|&retry| retry > now);
                libc::pollfd { fd: if resting { -1 } else { s.fd() }, events: libc::POLLIN, revents: 0 }
            })
            .collect();
        fds.push(libc::pollfd { fd: self.shared.waker.fd(), events: libc::POLLIN, revents: 0 });
        fds.push(libc::pollfd { fd: self.timer.fd(), events: libc::POLLIN, revents: 0 });
        // Busy-polling never arms the timer: each turn looks at the clock anyway.
        let spin = self.shared.busy_poll || self.arm_wake();
        let no_wait = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let tp = if spin { &no_wait as *const libc::timespec } else { std::ptr::null() };
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, tp, std::ptr::null()) };
        if n <= 0 {
            return Vec::new();
        }
        if fds[self.ports.len()].revents != 0 {
            self.shared.waker.drain();
        }
        if fds[self.ports.len() + 1].revents != 0 {
            if let Some(due) = self.timer.take_expiry().filter(|_| n == 1) {
                let late = self.clock.now_ns().saturating_sub(due);
                self.wake_lateness_ns = (7 * self.wake_lateness_ns + late.min(MAX_SPIN_NS)) / 8;
            }
        }
        self.ports.keys().zip(&fds).filter(|(_, f)| f.revents != 0).map(|(&p, _)| p).collect()
    }

    /// Arms the timer for the wake time, or disarms it; true when that time
    /// has come (look at the sockets, spin on).
    fn arm_wake(&mut self) -> bool {
        let wake_at = self.wake_time_ns();
        let spin = wake_at.is_some_and(|t| t <= self.clock.now_ns());
        self.timer.set(wake_at.filter(|_| !spin));
        spin
    }

    fn receive(&mut self, readable: &[u32], now: u64) {
        let ports = self.ports.clone();
        for &port in readable {
            let sock = &ports[&port];
            for batch in 0..RX_BATCHES_PER_TURN {
                let mut bufs = self.bufs.take().expect("receive buffers in use");
                let n = match sock.recv_batch(&mut bufs) {
                    Ok(n) => {
                        if self.failing.remove(&port).is_some() {
                            eprintln!("softswitch: {}: receiving again", sock.ifname);
                        }
                        n
                    }
                    Err(e) => {
                        if self.failing.insert(port, now + FAILING_PORT_RETRY_NS).is_none() {
                            eprintln!("softswitch: {}: receive failed: {e}; retrying every 100 ms", sock.ifname);
                        }
                        0
                    }
                };
                // Read after the receive: a frame that came in since the turn began
                // keeps its own timestamp instead of being moved back to the turn's start.
                let received_by = self.clock.now_ns();
                let offset = self.clock.realtime_offset_ns();
                for i in 0..n {
                    let (stamp, received) = sock.frame(&mut bufs, i);
                    let at = stamp.map_or(received_by, |ts| Clock::from_realtime_ns(ts, offset, received_by));
                    match received {
                        Received::Frame(frame) => self.arrive(port, frame, at),
                        Received::Segments(segments) => segments.iter().for_each(|s| self.arrive(port, s, at)),
                        Received::Dropped(why) => self.refuse(port, why, at),
                    }
                }
                sock.release(n);
                self.bufs = Some(bufs);
                if n < crate::afpacket::BATCH {
                    break;
                }
                // A backlog takes a while to read: frames falling due meanwhile go now.
                self.transmit(self.clock.now_ns());
                if batch + 1 == RX_BATCHES_PER_TURN {
                    self.backlogged.push(port);
                }
            }
        }
    }

    /// A received frame that cannot be delivered: counted as a drop, logged the first time per reason.
    fn refuse(&mut self, port: u32, why: &'static str, now: u64) {
        self.shared.count(port, |c| &c.rx, 1);
        self.shared.count(port, |c| &c.drops, 1);
        if self.refusals_logged.insert((port, why)) {
            eprintln!("softswitch: {}: dropped a received frame: {why} (more are counted as drops)", self.ports[&port].ifname);
        }
        self.trace(now, format_args!("port {port} rx dropped: {why}"));
    }

    /// A frame came in on `port`: capture it, then run ingress now or after the port's ingress delay.
    fn arrive(&mut self, port: u32, frame: &[u8], now: u64) {
        self.shared.count(port, |c| &c.rx, 1);
        if let Some(cap) = self.captures.get_mut(&port) {
            cap.record(self.clock.wall(now), frame);
        }
        let delay = self.queues.get(&port).map_or(0, |q| q.cfg.ingress_delay_ns);
        if delay > 0 {
            self.arriving.get_mut(&port).unwrap().push(now + delay, frame.to_vec());
        } else {
            self.ingress(port, frame, now);
        }
    }

    fn release_arrivals(&mut self, now: u64) {
        let ports: Vec<u32> = self.arriving.keys().copied().collect();
        for port in ports {
            while let Some((due, frame)) = self.arriving.get_mut(&port).unwrap().pop_due(now) {
                self.ingress(port, &frame, due);
            }
        }
    }

    fn take_packet_outs(&mut self, now: u64) {
        let Some(cpu) = self.shared.cpu_port else { return };
        while let Ok(frame) = self.shared.packet_out.1.try_recv() {
            self.shared.count(cpu, |c| &c.rx, 1);
            self.ingress(cpu, &frame, now);
        }
    }

    fn ingress(&mut self, port: u32, frame: &[u8], now: u64) {
        self.trace(now, format_args!("port {port} rx {} bytes", frame.len()));
        let Some(a) = self.active.as_mut() else {
            self.shared.count(port, |c| &c.drops, 1);
            return self.trace(now, format_args!("no pipeline loaded: dropped"));
        };
        let out = a.exec.ingress(&a.pipeline.state, port, frame, now / 1000);
        self.program_logs(now);
        self.after_ingress(out, now, 0);
        // The frame as it arrived stands for what the queue dropped (same flow, sequence, id).
        for egress in std::mem::take(&mut self.tail_dropped) {
            if let Some(cap) = self.drop_captures.get_mut(&egress) {
                cap.record_headers(self.clock.wall(now), frame, DROP_SNAP);
            }
        }
    }

    fn after_ingress(&mut self, out: IngressOutcome, now: u64, pass: u32) {
        for d in out.digests {
            let _ = self.shared.digests.0.try_send(Digest { name: d.name, fields: d.fields });
        }
        if out.dropped && out.queued.is_empty() {
            self.trace(now, format_args!("ingress dropped"));
        }
        for qp in out.queued {
            self.enqueue(qp, now, pass);
        }
    }

    /// Puts a packet into its egress port's queue at time `now` (tail drop when full).
    fn enqueue(&mut self, qp: QueuedPacket, now: u64, pass: u32) {
        let port = qp.egress_port;
        if !self.queues.contains_key(&port) {
            return self.trace(now, format_args!("egress port {port} does not exist: dropped"));
        }
        // Serve everything due before this arrival so enq_qdepth is the queue at `now`.
        self.advance(port, now, pass);
        let (len, buffered) = (qp.wire_len, qp.buffered_len);
        let prio = qp.priority;
        let q = self.queues.get_mut(&port).unwrap();
        match q.enqueue_buffered(qp, len, buffered, prio, now) {
            Ok(depth) => {
                let d = q.depth();
                self.shared.counters[&port].qdepth.store(d as u64, Relaxed);
                self.trace(now, format_args!("port {port} enqueue {len} bytes, enq_qdepth {depth}"));
            }
            Err(_) => {
                self.shared.count(port, |c| &c.drops, 1);
                if pass == 0 && !self.drop_captures.is_empty() {
                    self.tail_dropped.push(port);
                }
                self.trace(now, format_args!("port {port} buffer full: tail drop"));
            }
        }
    }

    /// Dequeues (and runs egress on) every packet of `port` that starts serialising by `until`.
    fn advance(&mut self, port: u32, until: u64, pass: u32) {
        while let Some(dep) = self.queues.get_mut(&port).and_then(|q| q.pop_due(until)) {
            let depth = self.queues[&port].depth();
            self.shared.counters[&port].qdepth.store(depth as u64, Relaxed);
            self.egress(port, dep, pass);
        }
    }

    fn egress(&mut self, port: u32, dep: Departure<QueuedPacket>, pass: u32) {
        let Some(a) = self.active.as_mut() else { return };
        let meta = QueueMeta {
            enq_timestamp: dep.enq_ns / 1000,
            enq_qdepth: dep.enq_qdepth as u64,
            deq_timedelta: dep.deq_timedelta_us(),
            deq_qdepth: dep.deq_qdepth as u64,
        };
        let out: EgressOutcome = a.exec.egress(&a.pipeline.state, dep.pkt, meta, dep.deq_ns / 1000);
        self.program_logs(dep.deq_ns);
        match out.out {
            Some((_, frame)) if Some(port) == self.shared.cpu_port => {
                self.shared.count(port, |c| &c.tx, 1);
                if self.shared.packet_in.0.try_send(frame).is_err() {
                    self.shared.count(port, |c| &c.drops, 1);
                }
            }
            Some(_) if self.queues.get_mut(&port).unwrap().loss.lose_next() => {
                self.shared.count(port, |c| &c.lost, 1);
                self.trace(dep.deq_ns, format_args!("port {port} lost on the wire"));
            }
            Some((_, frame)) => self.wire.get_mut(&port).unwrap().push(dep.deliver_ns, frame),
            None => self.trace(dep.deq_ns, format_args!("port {port} egress dropped")),
        }
        if pass < MAX_PASSES {
            for clone in out.clones {
                self.enqueue(clone, dep.deq_ns, pass + 1);
            }
            if let Some(r) = out.recirculate {
                let Some(a) = self.active.as_mut() else { return };
                let again = a.exec.ingress_recirculated(&a.pipeline.state, r, dep.deq_ns / 1000);
                self.after_ingress(again, dep.deq_ns, pass + 1);
            }
        }
    }

    /// Sends every frame whose delivery time has come. Frames the kernel
    /// pushes back on stay at the head of their line and go next turn.
    fn transmit(&mut self, now: u64) {
        let ports = self.ports.clone();
        for (&port, sock) in ports.iter() {
            let line = &self.wire[&port];
            let n = line.count_due(now);
            if n == 0 {
                continue;
            }
            let frames: Vec<&[u8]> = line.front_items(n).map(|(_, f)| f.as_slice()).collect();
            let outcome = sock.send_batch(&frames, &mut self.send_scratch);
            self.shared.count(port, |c| &c.tx, outcome.sent as u64);
            self.shared.count(port, |c| &c.drops, outcome.refused as u64);
            for _ in 0..outcome.done() {
                let (t, f) = self.wire.get_mut(&port).unwrap().pop_due(now).unwrap();
                self.count_lateness(port, now - t);
                if let Some(cap) = self.captures.get_mut(&port) {
                    cap.record(self.clock.wall(t), &f);
                }
                self.trace(now, format_args!("port {port} tx {} bytes, {} us after its due time", f.len(), (now - t) / 1000));
                if let Some(a) = self.active.as_mut() {
                    a.exec.recycle_frame(f); // the next deparse reuses the buffer
                }
            }
            if outcome.blocked {
                self.trace(now, format_args!("port {port}: kernel queue full, {} frames wait", n - outcome.done()));
            }
        }
    }

    fn count_lateness(&self, port: u32, late_ns: u64) {
        let c = &self.shared.counters[&port];
        c.late_ns_total.fetch_add(late_ns, Relaxed);
        c.late_ns_max.fetch_max(late_ns, Relaxed);
        if late_ns > 1_000_000 {
            c.late_over_1ms.fetch_add(1, Relaxed);
        }
    }

    fn program_logs(&mut self, now: u64) {
        if !self.shared.trace {
            return;
        }
        let logs = self.active.as_mut().map(|a| a.exec.take_logs()).unwrap_or_default();
        for line in logs {
            self.trace(now, format_args!("log_msg: {line}"));
        }
    }

    fn trace(&self, now: u64, what: std::fmt::Arguments) {
        if self.shared.trace {
            eprintln!("[softswitch {:>12.3} ms] {what}", now as f64 / 1e6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tm::PortConfig;

    fn portless_loop() -> PacketLoop {
        let shared = Arc::new(Shared::new(&[1], None, 1, false, false, 0).unwrap());
        PacketLoop::new(shared, Clock::new(), Arc::new(BTreeMap::new()), None, None).unwrap()
    }

    #[test]
    fn a_frame_held_a_second_wakes_the_thread_at_its_due_time_less_the_margin() {
        // As a ppoll timeout this sleep got 0.1 % kernel slack (0.5 % niced):
        // ~1 ms late. The kernel's own deadline must be exactly the wake time;
        // it read its clock between our two reads.
        let mut pl = portless_loop();
        let due = pl.clock.now_ns() + 990_000_000;
        pl.wire.get_mut(&1).unwrap().push(due, vec![0u8; 60]);
        assert!(!pl.arm_wake());
        let wake_at = due - pl.spin_margin_ns();
        let before = pl.clock.now_ns();
        let left = pl.timer.remaining_ns();
        let after = pl.clock.now_ns();
        assert!(before + left <= wake_at && wake_at <= after + left, "{before} + {left} .. {after} + {left} vs {wake_at}");
    }

    #[test]
    fn a_slow_link_wakes_its_mean_lateness_early_and_a_fast_one_spins_the_margin() {
        for (rate_bps, fast) in [(1_500_000, false), (10_000_000, false), (13_000_000, true), (100_000_000, true), (0, true)] {
            // a quiet machine (15 us late) and a loaded one (the largest margins)
            for (lateness, fast_margin, slow_margin) in [(15_000, 40_000, 15_000), (MAX_SPIN_NS, MAX_SPIN_NS, SLOW_LINK_MAX_SPIN_NS)] {
                let mut pl = portless_loop();
                pl.queues.insert(1, EgressQueue::new(PortConfig { rate_bps, ..PortConfig::default() }, 0));
                pl.wake_lateness_ns = lateness;
                let due = pl.clock.now_ns() + 500_000_000;
                pl.wire.get_mut(&1).unwrap().push(due, vec![0u8; 60]);
                let margin = if fast { fast_margin } else { slow_margin };
                assert_eq!(pl.wake_time_ns(), Some(due - margin), "{rate_bps} b/s, lateness {lateness} ns");
            }
        }
    }

    #[test]
    fn nothing_scheduled_disarms_and_a_due_event_spins() {
        let mut pl = portless_loop();
        pl.wire.get_mut(&1).unwrap().push(pl.clock.now_ns() + 5_000_000_000, vec![0u8; 60]);
        assert!(!pl.arm_wake());
        pl.wire.get_mut(&1).unwrap().clear();
        assert!(!pl.arm_wake());
        assert_eq!(pl.timer.remaining_ns(), 0);
        pl.wire.get_mut(&1).unwrap().push(pl.clock.now_ns(), vec![0u8; 60]);
        assert!(pl.arm_wake());
        assert_eq!(pl.timer.remaining_ns(), 0);
    }
}
