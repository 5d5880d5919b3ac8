//! The Python binding: `softswitch_engine.Switch` and its exceptions, exactly
//! as the contract in softswitch/README.md describes them.

use crate::afpacket::RawPort;
use crate::clock::Clock;
use crate::dataplane::PacketLoop;
use crate::shared::{Pipeline, Shared};
use crate::tm::{intern_table, JitterDist, Loss, PortConfig};
use p4core::{Indirect, Executor, MatchKey, MeterConfig, Program, QueueMeta, RuntimeError, State};
use parking_lot::Mutex;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a pipeline swap waits for a starved packet thread before it reports failure.
const PIPELINE_SWAP_TIMEOUT: Duration = Duration::from_secs(10);

create_exception!(softswitch_engine, PipelineError, PyException, "The BMv2 JSON is invalid or uses something the engine does not support.");
create_exception!(softswitch_engine, DuplicateEntryError, PyException, "A table entry with the same key (and priority) already exists.");
create_exception!(softswitch_engine, TableFullError, PyException, "The table already holds max_size entries.");

/// Work items of one synchronous `process_packet` call before we call it a loop.
const MAX_SYNC_STEPS: usize = 1024;

fn core_err(e: RuntimeError) -> PyErr {
    let msg = e.to_string();
    match e {
        RuntimeError::UnknownName(_) | RuntimeError::UnknownHandle(_) => PyKeyError::new_err(msg),
        RuntimeError::Duplicate(_) => DuplicateEntryError::new_err(msg),
        RuntimeError::Full(_) => TableFullError::new_err(msg),
        RuntimeError::BadValue(_) | RuntimeError::Immutable(_) => PyValueError::new_err(msg),
    }
}

fn no_pipeline() -> PyErr {
    PyRuntimeError::new_err("no pipeline loaded: call load_pipeline() first")
}

/// One table key element from its Python tuple form.
fn match_key(t: &Bound<'_, PyAny>) -> PyResult<MatchKey> {
    let t = t.downcast::<PyTuple>().map_err(|_| PyValueError::new_err("each key must be a tuple like ('exact', b'...')"))?;
    let kind: String = t.get_item(0)?.extract()?;
    let bytes = |i: usize| -> PyResult<Vec<u8>> {
        t.get_item(i)?.extract::<Vec<u8>>().map_err(|_| PyValueError::new_err(format!("key {kind}: element {i} must be bytes")))
    };
    let want = |n: usize| -> PyResult<()> {
        if t.len() == n { Ok(()) } else { Err(PyValueError::new_err(format!("key {kind} takes {} values, got {}", n - 1, t.len() - 1))) }
    };
    match kind.as_str() {
        "exact" => want(2).and_then(|_| Ok(MatchKey::Exact(bytes(1)?))),
        "lpm" => want(3).and_then(|_| Ok(MatchKey::Lpm(bytes(1)?, t.get_item(2)?.extract()?))),
        "ternary" => want(3).and_then(|_| Ok(MatchKey::Ternary(bytes(1)?, bytes(2)?))),
        "range" => want(3).and_then(|_| Ok(MatchKey::Range(bytes(1)?, bytes(2)?))),
        "optional" if t.len() == 2 && t.get_item(1)?.is_none() => Ok(MatchKey::Optional(None)),
        "optional" => want(2).and_then(|_| Ok(MatchKey::Optional(Some(bytes(1)?)))),
        other => Err(PyValueError::new_err(format!("unknown match kind '{other}' (exact, lpm, ternary, range, optional)"))),
    }
}

/// What a table entry runs, from its Python form.
enum EntryAction {
    Call(String),
    Indirect(Indirect),
}

/// An action name, or ("member", id) / ("group", id) (which take no arguments).
fn entry_action(action: &Bound<'_, PyAny>, args: &[Vec<u8>]) -> PyResult<EntryAction> {
    if let Ok(name) = action.extract::<String>() {
        return Ok(EntryAction::Call(name));
    }
    let (kind, id): (String, u32) = action
        .extract()
        .map_err(|_| PyValueError::new_err("action must be a name or ('member', id) / ('group', id)"))?;
    if !args.is_empty() {
        return Err(PyValueError::new_err("a member or group takes no action arguments"));
    }
    match kind.as_str() {
        "member" => Ok(EntryAction::Indirect(Indirect::Member(id))),
        "group" => Ok(EntryAction::Indirect(Indirect::Group(id))),
        other => Err(PyValueError::new_err(format!("unknown action reference '{other}' (member, group)"))),
    }
}

fn to_pybytes<'py>(py: Python<'py>, items: Vec<Vec<u8>>) -> Vec<Bound<'py, PyBytes>> {
    items.iter().map(|v| PyBytes::new_bound(py, v)).collect()
}

#[pyclass(module = "softswitch_engine")]
pub struct Switch {
    shared: Arc<Shared>,
    clock: Clock,
    ports: Arc<BTreeMap<u32, RawPort>>,
    pcap_dir: Option<PathBuf>,
    drop_pcap_dir: Option<PathBuf>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Executor for `process_packet`, rebuilt when the pipeline changes.
    sync_exec: Mutex<Option<(u64, Executor)>>,
    /// Default of `verify_pipeline`/`load_pipeline`: also accept JSON only BMv2 refuses.
    lenient: bool,
}

impl Switch {
    fn pipeline(&self) -> PyResult<Arc<Pipeline>> {
        self.shared.current().ok_or_else(no_pipeline)
    }

    fn state(&self) -> PyResult<Arc<State>> {
        Ok(self.pipeline()?.state.clone())
    }

    fn known_port(&self, port: u32) -> PyResult<()> {
        if self.shared.counters.contains_key(&port) { Ok(()) } else { Err(PyKeyError::new_err(format!("port {port} is not a port of this switch"))) }
    }

    /// Returns once the packet thread runs pipeline `generation` (at once when
    /// no thread runs): P4Runtime's COMMIT promises that the next frame meets the new program.
    fn await_adoption(&self, generation: u64) -> PyResult<()> {
        let deadline = std::time::Instant::now() + PIPELINE_SWAP_TIMEOUT;
        while self.thread.lock().is_some() && self.shared.pipeline_adopted.load(SeqCst) < generation {
            if std::time::Instant::now() > deadline {
                return Err(PyRuntimeError::new_err(format!(
                    "the packet thread did not take up the new pipeline within {} s", PIPELINE_SWAP_TIMEOUT.as_secs())));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(())
    }

    fn stop_thread(&self) {
        if let Some(handle) = self.thread.lock().take() {
            self.shared.stop.store(true, SeqCst);
            self.shared.waker.wake();
            let _ = handle.join();
            self.shared.stop.store(false, SeqCst);
        }
    }
}

#[pymethods]
impl Switch {
    #[new]
    #[pyo3(signature = (ports, cpu_port=None, seed=None, pcap_dir=None, trace=false, lenient=false, drop_pcap_dir=None, busy_poll=false,
                        realtime=0))]
    fn new(ports: BTreeMap<u32, String>, cpu_port: Option<u32>, seed: Option<u64>, pcap_dir: Option<PathBuf>, trace: bool, lenient: bool,
           drop_pcap_dir: Option<PathBuf>, busy_poll: bool, realtime: i64) -> PyResult<Switch> {
        if !(0..=99).contains(&realtime) {
            return Err(PyValueError::new_err(format!("realtime priority {realtime} out of range (1..99; 0: off)")));
        }
        if realtime > 0 && busy_poll {
            return Err(PyValueError::new_err("busy_poll with a realtime priority would starve a core: choose one"));
        }
        if let Some(cpu) = cpu_port {
            if ports.contains_key(&cpu) {
                return Err(PyValueError::new_err(format!("cpu_port {cpu} is also an interface port")));
            }
        }
        if let Some(&bad) = ports.keys().chain(cpu_port.iter()).find(|&&p| p >= 511) {
            return Err(PyValueError::new_err(format!("port {bad} out of range (0..510; 511 is the drop port)")));
        }
        let mut sockets = BTreeMap::new();
        for (&id, ifname) in &ports {
            let sock = RawPort::open(ifname).map_err(|e| PyOSError::new_err(e.to_string()))?;
            sockets.insert(id, sock);
        }
        let seed = seed.unwrap_or_else(|| Clock::new().wall(0).as_nanos() as u64);
        let ids: Vec<u32> = ports.keys().copied().collect();
        let shared = Shared::new(&ids, cpu_port, seed, trace, busy_poll, realtime as u8).map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(Switch {
            shared: Arc::new(shared),
            clock: Clock::new(),
            ports: Arc::new(sockets),
            pcap_dir,
            drop_pcap_dir,
            thread: Mutex::new(None),
            sync_exec: Mutex::new(None),
            lenient,
        })
    }

    /// `loss`: random loss probability (fraction); `loss_gemodel`: netem's
    /// Gilbert-Elliott (p, r, 1-h, 1-k) as fractions. At most one of them.
    /// `jitter_us` varies `delay_us` per frame with `distribution`
    /// ("uniform", "normal", "pareto", or "table" with `distribution_table`,
    /// entries in units of jitter), never reordering frames. Glitches hold
    /// the transmitter for `glitch_hold_us`, exponential gaps of mean `glitch_every_us`.
    #[pyo3(signature = (port, rate_bps=0, buffer_packets=64, buffer_bytes=0, delay_us=0, ingress_delay_us=0, prio_queues=1, loss=0.0, loss_gemodel=None, jitter_us=0, distribution="uniform", glitch_every_us=0, glitch_hold_us=0, distribution_table=None))]
    #[allow(clippy::too_many_arguments)]
    fn configure_port(&self, port: u32, rate_bps: u64, buffer_packets: u32, buffer_bytes: u64, delay_us: u64, ingress_delay_us: u64, prio_queues: u8, loss: f64, loss_gemodel: Option<(f64, f64, f64, f64)>, jitter_us: u64, distribution: &str, glitch_every_us: u64, glitch_hold_us: u64, distribution_table: Option<Vec<f64>>) -> PyResult<()> {
        self.known_port(port)?;
        let jitter_dist = match (distribution, distribution_table) {
            ("uniform", None) => JitterDist::Uniform,
            ("normal", None) => JitterDist::Normal,
            ("pareto", None) => JitterDist::Pareto,
            ("table", Some(values)) => JitterDist::Table(intern_table(values).map_err(|e| PyValueError::new_err(format!("port {port}: {e}")))?),
            ("table", None) => return Err(PyValueError::new_err(format!("port {port}: distribution 'table' needs distribution_table"))),
            (_, Some(_)) => return Err(PyValueError::new_err(format!("port {port}: distribution_table needs distribution 'table'"))),
            (other, None) => return Err(PyValueError::new_err(format!("port {port}: distribution '{other}': expected uniform, normal, pareto or table"))),
        };
        let loss = match (loss, loss_gemodel) {
            (l, Some(_)) if l != 0.0 => return Err(PyValueError::new_err(format!("port {port}: give loss or loss_gemodel, not both"))),
            (_, Some((p, r, loss_bad, loss_good))) => Loss::GilbertElliott { p, r, loss_bad, loss_good },
            (0.0, None) => Loss::None,
            (l, None) => Loss::Random(l),
        };
        let cfg = PortConfig { rate_bps, buffer_packets, buffer_bytes, delay_ns: delay_us * 1000, ingress_delay_ns: ingress_delay_us * 1000, prio_queues, loss, jitter_ns: jitter_us * 1000, jitter_dist, glitch_every_ns: glitch_every_us * 1000, glitch_hold_ns: glitch_hold_us * 1000 };
        cfg.validate().map_err(|e| PyValueError::new_err(format!("port {port}: {e}")))?;
        self.shared.port_config.lock().insert(port, cfg);
        self.shared.config_gen.fetch_add(1, SeqCst);
        self.shared.waker.wake();
        Ok(())
    }

    #[pyo3(signature = (json_text, lenient=None))]
    fn verify_pipeline(&self, py: Python<'_>, json_text: &str, lenient: Option<bool>) -> PyResult<()> {
        parse_program(py, json_text, lenient.unwrap_or(self.lenient)).map(|_| ())
    }

    #[pyo3(signature = (json_text, lenient=None))]
    fn load_pipeline(&self, py: Python<'_>, json_text: &str, lenient: Option<bool>) -> PyResult<()> {
        let program = parse_program(py, json_text, lenient.unwrap_or(self.lenient))?;
        let program = Arc::new(program);
        let state = Arc::new(State::new(&program));
        *self.shared.pipeline.write() = Some(Arc::new(Pipeline { program, state }));
        let generation = self.shared.pipeline_gen.fetch_add(1, SeqCst) + 1;
        self.shared.waker.wake();
        py.allow_threads(|| self.await_adoption(generation))
    }

    fn start(&self) -> PyResult<()> {
        let mut thread = self.thread.lock();
        if thread.is_some() {
            return Ok(());
        }
        let packet_loop = PacketLoop::new(self.shared.clone(), self.clock, self.ports.clone(), self.pcap_dir.as_deref(),
                                         self.drop_pcap_dir.as_deref())
            .map_err(|e| PyOSError::new_err(format!("pcap_dir: {e}")))?;
        let handle = std::thread::Builder::new().name("softswitch-io".into()).spawn(move || packet_loop.run())
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        *thread = Some(handle);
        Ok(())
    }

    fn stop(&self, py: Python<'_>) {
        py.allow_threads(|| self.stop_thread());
    }

    /// `action`: an action name, or ("member", id) / ("group", id) of the
    /// table's action profile (then `args` must be empty).
    #[pyo3(signature = (table, keys, action, args, priority=0))]
    fn table_add(&self, table: &str, keys: Vec<Bound<'_, PyAny>>, action: &Bound<'_, PyAny>, args: Vec<Vec<u8>>, priority: i32) -> PyResult<u64> {
        let keys = keys.iter().map(match_key).collect::<PyResult<Vec<_>>>()?;
        let st = self.state()?;
        match entry_action(action, &args)? {
            EntryAction::Call(name) => st.table_add(table, &keys, &name, &args, priority),
            EntryAction::Indirect(target) => st.table_add_indirect(table, &keys, target, priority),
        }
        .map_err(core_err)
    }

    fn table_modify(&self, table: &str, handle: u64, action: &Bound<'_, PyAny>, args: Vec<Vec<u8>>) -> PyResult<()> {
        let st = self.state()?;
        match entry_action(action, &args)? {
            EntryAction::Call(name) => st.table_modify(table, handle, &name, &args),
            EntryAction::Indirect(target) => st.table_modify_indirect(table, handle, target),
        }
        .map_err(core_err)
    }

    fn table_delete(&self, table: &str, handle: u64) -> PyResult<()> {
        self.state()?.table_delete(table, handle).map_err(core_err)
    }

    fn table_set_default(&self, table: &str, action: &Bound<'_, PyAny>, args: Vec<Vec<u8>>) -> PyResult<()> {
        let st = self.state()?;
        match entry_action(action, &args)? {
            EntryAction::Call(name) => st.table_set_default(table, &name, &args),
            EntryAction::Indirect(target) => st.table_set_default_indirect(table, target),
        }
        .map_err(core_err)
    }

    fn act_prof_member_set(&self, profile: &str, member: u32, action: &str, args: Vec<Vec<u8>>) -> PyResult<()> {
        self.state()?.profile_member_set(profile, member, action, &args).map_err(core_err)
    }

    fn act_prof_member_delete(&self, profile: &str, member: u32) -> PyResult<()> {
        self.state()?.profile_member_delete(profile, member).map_err(core_err)
    }

    fn act_prof_group_set(&self, profile: &str, group: u32, members: Vec<u32>) -> PyResult<()> {
        self.state()?.profile_group_set(profile, group, &members).map_err(core_err)
    }

    fn act_prof_group_delete(&self, profile: &str, group: u32) -> PyResult<()> {
        self.state()?.profile_group_delete(profile, group).map_err(core_err)
    }

    /// (action, args), or None for a table whose program gives no default entry.
    fn table_get_default<'py>(&self, py: Python<'py>, table: &str) -> PyResult<Option<(String, Vec<Bound<'py, PyBytes>>)>> {
        let default = self.state()?.table_get_default(table).map_err(core_err)?;
        Ok(default.map(|(action, args)| (action, to_pybytes(py, args))))
    }

    fn table_clear(&self, table: &str) -> PyResult<()> {
        self.state()?.table_clear(table).map_err(core_err)
    }

    fn direct_counter_read(&self, table: &str, handle: u64) -> PyResult<(u64, u64)> {
        self.state()?.direct_counter_read(table, handle).map_err(core_err)
    }

    fn direct_counter_write(&self, table: &str, handle: u64, packets: u64, bytes: u64) -> PyResult<()> {
        self.state()?.direct_counter_write(table, handle, packets, bytes).map_err(core_err)
    }

    fn counter_read(&self, name: &str, index: usize) -> PyResult<(u64, u64)> {
        self.state()?.counter_read(name, index).map_err(core_err)
    }

    fn counter_write(&self, name: &str, index: usize, packets: u64, bytes: u64) -> PyResult<()> {
        self.state()?.counter_write(name, index, packets, bytes).map_err(core_err)
    }

    fn register_read(&self, name: &str, index: usize) -> PyResult<u128> {
        self.state()?.register_read(name, index).map_err(core_err)
    }

    /// `value` is a non-negative int or big-endian bytes.
    fn register_write(&self, name: &str, index: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = int_or_bytes(value)?;
        self.state()?.register_write(name, index, value).map_err(core_err)
    }

    fn meter_set(&self, name: &str, index: usize, cir: u64, cburst: u64, pir: u64, pburst: u64) -> PyResult<()> {
        self.state()?.meter_set(name, index, meter_rates(cir, cburst, pir, pburst)?).map_err(core_err)
    }

    fn direct_meter_set(&self, table: &str, handle: u64, cir: u64, cburst: u64, pir: u64, pburst: u64) -> PyResult<()> {
        self.state()?.direct_meter_set(table, handle, meter_rates(cir, cburst, pir, pburst)?).map_err(core_err)
    }

    fn mc_group_set(&self, group: u32, replicas: Vec<(u32, u32)>) -> PyResult<()> {
        self.state()?.mc_group_set(group, &replicas).map_err(core_err)
    }

    fn mc_group_delete(&self, group: u32) -> PyResult<()> {
        self.state()?.mc_group_delete(group).map_err(core_err)
    }

    #[pyo3(signature = (session, replicas, truncate=0))]
    fn clone_session_set(&self, session: u32, replicas: Vec<(u32, u32)>, truncate: usize) -> PyResult<()> {
        self.state()?.clone_session_set(session, &replicas, truncate).map_err(core_err)
    }

    fn clone_session_delete(&self, session: u32) -> PyResult<()> {
        self.state()?.clone_session_delete(session).map_err(core_err)
    }

    /// Injects a frame as if received on the CPU port (needs the packet thread running).
    fn packet_out(&self, frame: Vec<u8>) -> PyResult<()> {
        if self.shared.cpu_port.is_none() {
            return Err(PyRuntimeError::new_err("packet_out: the switch has no cpu_port"));
        }
        self.pipeline()?;
        self.shared.packet_out.0.send(frame).map_err(|_| PyRuntimeError::new_err("packet_out: switch closed"))?;
        self.shared.waker.wake();
        Ok(())
    }

    fn poll_packet_in<'py>(&self, py: Python<'py>, timeout_s: f64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let rx = self.shared.packet_in.1.clone();
        let frame = py.allow_threads(|| rx.recv_timeout(Duration::from_secs_f64(timeout_s.max(0.0))).ok());
        Ok(frame.map(|f| PyBytes::new_bound(py, &f)))
    }

    fn poll_digest<'py>(&self, py: Python<'py>, timeout_s: f64) -> PyResult<Option<(String, Vec<Bound<'py, PyBytes>>)>> {
        let rx = self.shared.digests.1.clone();
        let digest = py.allow_threads(|| rx.recv_timeout(Duration::from_secs_f64(timeout_s.max(0.0))).ok());
        Ok(digest.map(|d| (d.name, to_pybytes(py, d.fields))))
    }

    /// Runs one frame through ingress and egress synchronously (no ports, no
    /// queueing) and returns what would be transmitted. Egress sees the given
    /// queue metadata; each one left None is today's value (enq_timestamp = the
    /// switch clock in us, the others 0), so a test can replay a queue exactly.
    #[pyo3(signature = (port, frame, enq_qdepth=None, enq_timestamp=None, deq_timedelta=None, deq_qdepth=None))]
    fn process_packet<'py>(
        &self, py: Python<'py>, port: u32, frame: Vec<u8>, enq_qdepth: Option<u64>, enq_timestamp: Option<u64>,
        deq_timedelta: Option<u64>, deq_qdepth: Option<u64>,
    ) -> PyResult<Vec<(u32, Bound<'py, PyBytes>)>> {
        let pipeline = self.pipeline()?;
        let generation = self.shared.pipeline_gen.load(SeqCst);
        let now_us = self.clock.now_ns() / 1000;
        let meta = QueueMeta {
            enq_timestamp: checked_meta("enq_timestamp", enq_timestamp, 32)?.unwrap_or(now_us),
            enq_qdepth: checked_meta("enq_qdepth", enq_qdepth, 19)?.unwrap_or(0),
            deq_timedelta: checked_meta("deq_timedelta", deq_timedelta, 32)?.unwrap_or(0),
            deq_qdepth: checked_meta("deq_qdepth", deq_qdepth, 19)?.unwrap_or(0),
        };
        let out = py.allow_threads(|| {
            let mut guard = self.sync_exec.lock();
            if guard.as_ref().map(|(g, _)| *g) != Some(generation) {
                *guard = Some((generation, Executor::new(pipeline.program.clone(), self.shared.seed)));
            }
            let exec = &mut guard.as_mut().unwrap().1;
            run_to_completion(exec, &pipeline.state, &self.shared, port, &frame, now_us, meta)
        })?;
        Ok(out.into_iter().map(|(p, f)| (p, PyBytes::new_bound(py, &f))).collect())
    }

    fn port_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let result = PyDict::new_bound(py);
        for (port, c) in &self.shared.counters {
            let d = PyDict::new_bound(py);
            d.set_item("rx", c.rx.load(Relaxed))?;
            d.set_item("tx", c.tx.load(Relaxed))?;
            d.set_item("drops", c.drops.load(Relaxed))?;
            d.set_item("lost", c.lost.load(Relaxed))?;
            d.set_item("qdepth", c.qdepth.load(Relaxed))?;
            d.set_item("tx_late_us_total", c.late_ns_total.load(Relaxed) / 1000)?;
            d.set_item("tx_late_us_max", c.late_ns_max.load(Relaxed) / 1000)?;
            d.set_item("tx_late_over_1ms", c.late_over_1ms.load(Relaxed))?;
            result.set_item(port, d)?;
        }
        Ok(result)
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Strict (BMv2's loader rules) unless `lenient`, which also accepts shapes BMv2 refuses.
fn parse_program(py: Python<'_>, json_text: &str, lenient: bool) -> PyResult<Program> {
    let load = if lenient { Program::from_json_lenient } else { Program::from_json };
    py.allow_threads(|| load(json_text)).map_err(|e| PipelineError::new_err(e.to_string()))
}

fn meter_rates(cir: u64, cburst: u64, pir: u64, pburst: u64) -> PyResult<Option<MeterConfig>> {
    if cir > pir {
        return Err(PyValueError::new_err(format!("meter: cir {cir} exceeds pir {pir}")));
    }
    Ok(Some(MeterConfig { cir, cburst, pir, pburst }))
}

fn int_or_bytes(value: &Bound<'_, PyAny>) -> PyResult<u128> {
    if let Ok(b) = value.downcast::<PyBytes>() {
        let b = b.as_bytes();
        let significant = &b[b.iter().position(|&x| x != 0).unwrap_or(b.len())..];
        if significant.len() > 16 {
            return Err(PyValueError::new_err("value wider than 128 bits"));
        }
        return Ok(significant.iter().fold(0u128, |acc, &x| (acc << 8) | x as u128));
    }
    value.extract::<u128>().map_err(|_| PyValueError::new_err("value must be a non-negative int below 2^128 or bytes"))
}

/// A queue-metadata argument of process_packet, refused (changing nothing) if
/// wider than its v1model standard_metadata field.
fn checked_meta(name: &str, value: Option<u64>, bits: u32) -> PyResult<Option<u64>> {
    match value {
        Some(v) if v >> bits != 0 => {
            Err(PyValueError::new_err(format!("process_packet: {name} {v} does not fit in bit<{bits}>")))
        }
        _ => Ok(value),
    }
}

/// Ingress, then egress of every replica, clone and recirculation, without
/// queues; every egress pass sees `meta`.
fn run_to_completion(
    exec: &mut Executor, state: &State, shared: &Shared, port: u32, frame: &[u8], now_us: u64, meta: QueueMeta,
) -> PyResult<Vec<(u32, Vec<u8>)>> {
    let mut outputs = Vec::new();
    // FIFO, as BMv2's queues: copies leave in the order they were made.
    let mut pending = std::collections::VecDeque::new();
    let mut ingress_out = exec.ingress(state, port, frame, now_us);
    for step in 0.. {
        if step > MAX_SYNC_STEPS {
            return Err(PyRuntimeError::new_err("process_packet: resubmit/recirculate/clone loop"));
        }
        for d in ingress_out.digests.drain(..) {
            let _ = shared.digests.0.try_send(crate::shared::Digest { name: d.name, fields: d.fields });
        }
        pending.extend(ingress_out.queued.drain(..));
        let Some(qp) = pending.pop_front() else { break };
        let eo = exec.egress(state, qp, meta, now_us);
        if let Some((p, f)) = eo.out {
            outputs.push((p, f));
        }
        pending.extend(eo.clones);
        ingress_out = match eo.recirculate {
            Some(r) => exec.ingress_recirculated(state, r, now_us),
            None => p4core::IngressOutcome::default(),
        };
    }
    Ok(outputs)
}

#[pymodule]
fn softswitch_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Switch>()?;
    m.add("PipelineError", m.py().get_type_bound::<PipelineError>())?;
    m.add("DuplicateEntryError", m.py().get_type_bound::<DuplicateEntryError>())?;
    m.add("TableFullError", m.py().get_type_bound::<TableFullError>())?;
    Ok(())
}
