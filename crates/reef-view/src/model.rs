//! What the timeline shows, computed from events: rows, event classes,
//! marks and state values, as `docs/view-api.md` defines them. The same
//! code runs in the index's one pass and when a window is decoded again
//! from a checkpoint, so both give the same answers.

use rustc_hash::FxHashMap as HashMap;

use reef_ctf::access::{Field, FieldVal, Scopes};
use reef_ctf::StreamCursor;
use serde::Serialize;

/// A value before anything set it.
pub const UNKNOWN: i32 = -1;
/// Thread states (values of kernel `thread` rows).
pub const RUNNING: i32 = 1;
pub const SYSCALL: i32 = 2;
pub const INTERRUPTED: i32 = 3;
pub const WAIT_CPU: i32 = 4;
pub const BLOCKED: i32 = 5;
pub const EXITED: i32 = 6;

/// When a row counts as "on" (see the API's buckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRule {
    /// `cpu` rows: a thread other than idle runs.
    Cpu,
    /// kernel `thread` rows: running, in a system call or interrupted.
    Thread,
    /// Rows without values.
    Never,
}

impl OnRule {
    #[inline]
    pub fn on(self, v: i32) -> bool {
        match self {
            OnRule::Cpu => v > 0,
            OnRule::Thread => (RUNNING..=INTERRUPTED).contains(&v),
            OnRule::Never => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum RowKey {
    Cpu(i64),
    KThread(i64),
    UThread(usize, i64),
    Stream(usize),
}

/// One row of the timeline, as `/api/rows` gives it.
#[derive(Debug, Clone, Serialize)]
pub struct RowInfo {
    pub id: u32,
    pub kind: &'static str,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<usize>,
    #[serde(skip)]
    pub on: Option<OnRule>,
    #[serde(skip)]
    trace: usize,
}

/// The rows, in creation order, and the names learnt for threads.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub rows: Vec<RowInfo>,
    by_key: HashMap<RowKey, u32>,
    /// Thread names by (trace, tid) (kernel: trace of the events), as
    /// recorded (up to the first NUL).
    names: HashMap<(usize, i64), Vec<u8>>,
}

impl Rows {
    fn get_or_add(&mut self, key: RowKey, trace: usize, make: impl FnOnce(u32) -> RowInfo) -> u32 {
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let id = self.rows.len() as u32;
        let mut r = make(id);
        r.trace = trace;
        self.rows.push(r);
        self.by_key.insert(key, id);
        id
    }

    fn cpu(&mut self, trace: usize, cpu: i64) -> u32 {
        self.get_or_add(RowKey::Cpu(cpu), trace, |id| RowInfo {
            id,
            kind: "cpu",
            label: format!("CPU {cpu}"),
            cpu: Some(cpu),
            tid: None,
            pid: None,
            process: None,
            stream: None,
            on: Some(OnRule::Cpu),
            trace,
        })
    }

    fn kthread(&mut self, trace: usize, tid: i64) -> u32 {
        self.get_or_add(RowKey::KThread(tid), trace, |id| RowInfo {
            id,
            kind: "thread",
            label: String::new(),
            cpu: None,
            tid: Some(tid),
            pid: None,
            process: None,
            stream: None,
            on: Some(OnRule::Thread),
            trace,
        })
    }

    fn name(&mut self, trace: usize, tid: i64, name: &[u8]) {
        if tid > 0 && !name.is_empty() {
            match self.names.get_mut(&(trace, tid)) {
                Some(n) if n == name => {}
                Some(n) => *n = name.to_vec(),
                None => {
                    self.names.insert((trace, tid), name.to_vec());
                }
            }
        }
    }

    fn set_pid(&mut self, row: u32, pid: i64) {
        if pid > 0 {
            self.rows[row as usize].pid = Some(pid);
        }
    }

    /// The rows with their labels (thread and process names as last seen).
    pub fn labelled(&self) -> Vec<RowInfo> {
        let name = |trace: usize, tid: i64| {
            self.names
                .get(&(trace, tid))
                .map(|n| String::from_utf8_lossy(n).into_owned())
        };
        self.rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if let Some(tid) = r.tid {
                    let n = name(r.trace, tid).unwrap_or_else(|| "?".into());
                    r.label = format!("{n} ({tid})");
                    if let Some(pid) = r.pid {
                        let p = name(r.trace, pid)
                            .or_else(|| name(r.trace, tid))
                            .unwrap_or_else(|| "?".into());
                        r.process = Some(format!("{p} ({pid})"));
                    }
                }
                r
            })
            .collect()
    }

    /// The row of a kernel CPU, a kernel thread or a stream, if it exists.
    pub fn find_cpu(&self, cpu: i64) -> Option<u32> {
        self.by_key.get(&RowKey::Cpu(cpu)).copied()
    }
}

/// What a kernel event class does to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    Switch,
    Wakeup,
    SysEntry,
    SysExit,
    IrqEntry,
    IrqExit,
    Fork,
    Statedump,
    Exit,
    Other,
}

fn classify(name: &str, ftrace: bool) -> K {
    if ftrace {
        // ftrace: `sys_enter_NAME`/`sys_exit_NAME` and raw_syscalls'
        // `sys_enter`/`sys_exit` (a thread in a call twice over is in it
        // once).
        if name.starts_with("sys_enter") {
            return K::SysEntry;
        }
        if name.starts_with("sys_exit") {
            return K::SysExit;
        }
    }
    match name {
        "sched_switch" => K::Switch,
        "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => K::Wakeup,
        "irq_handler_entry" | "softirq_entry" | "irq_softirq_entry" => K::IrqEntry,
        "irq_handler_exit" | "softirq_exit" | "irq_softirq_exit" => K::IrqExit,
        "exit_syscall" => K::SysExit,
        "sched_process_fork" => K::Fork,
        "lttng_statedump_process_state" => K::Statedump,
        "sched_process_exit" => K::Exit,
        n if n.starts_with("syscall_entry_") => K::SysEntry,
        n if n.starts_with("syscall_exit_") => K::SysExit,
        // Older LTTng: `sys_NAME` entries, one `exit_syscall`.
        n if n.starts_with("sys_") => K::SysEntry,
        _ => K::Other,
    }
}

/// Every event class of every trace, known from the metadata: a *key*
/// per (trace, stream class, event class), its name and what it does to
/// the kernel model. Shared by the index's decoding threads.
#[derive(Debug, Default)]
pub struct ClassKeys {
    /// Per trace and stream class (plan index): the key of its first
    /// event class.
    base: Vec<Vec<u32>>,
    names: Vec<String>,
    kinds: Vec<K>,
    /// Per trace: whether it is a kernel trace, and whether its events
    /// may carry a `vtid` context.
    pub kernel: Vec<bool>,
    pub vtid: Vec<bool>,
    /// Per trace: read from ftrace (its fields keep ftrace's names:
    /// `prev_pid`, `pid` for a thread id).
    pub ftrace: Vec<bool>,
    /// Per trace: its directory's name (`stream` rows' labels).
    pub trace_names: Vec<String>,
    /// Per trace and stream class: the event classes whose context and
    /// payload values the model reads.
    wanted: Vec<Vec<std::sync::Arc<[bool]>>>,
}

impl ClassKeys {
    pub fn new(traces: &[std::sync::Arc<reef_ctf::Trace>]) -> ClassKeys {
        let mut k = ClassKeys::default();
        for t in traces {
            let mut bases = Vec::new();
            let mut vtid = false;
            let ftrace = matches!(t.meta().env_get("tracer_name"),
                Some(reef_ctf::model::EnvValue::Str(d)) if d == "ftrace");
            // LTTng names its context fields with a leading `_` (`_vtid`),
            // which babeltrace2 and the field lookups drop.
            let has_vtid = |p: &reef_ctf::plan::Plan| {
                p.root_member("vtid")
                    .or_else(|| p.root_member("_vtid"))
                    .is_some()
            };
            for sp in &t.class.streams {
                bases.push(k.names.len() as u32);
                vtid |= has_vtid(&sp.event_common_context);
                for ep in sp.event_plans() {
                    let name = &t.class.meta.streams[sp.class].events[ep.class].name;
                    vtid |= has_vtid(&ep.context);
                    k.kinds.push(classify(name, ftrace));
                    k.names.push(name.clone());
                }
            }
            let kernel = matches!(t.meta().env_get("domain"),
                Some(reef_ctf::model::EnvValue::Str(d)) if d == "kernel");
            k.wanted.push(
                t.class
                    .streams
                    .iter()
                    .zip(&bases)
                    .map(|(sp, &b)| {
                        (0..sp.events.len())
                            .map(|e| {
                                kernel
                                    && matches!(
                                        k.kinds[b as usize + e],
                                        K::Switch | K::Wakeup | K::Fork | K::Statedump | K::Exit
                                    )
                            })
                            .collect()
                    })
                    .collect(),
            );
            k.base.push(bases);
            k.kernel.push(kernel);
            k.vtid.push(vtid);
            k.ftrace.push(ftrace);
            k.trace_names.push(
                t.path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        k
    }

    /// The key of the first event class of stream class `sc` of `trace`.
    #[inline]
    pub fn key_base(&self, trace: usize, sc: usize) -> u32 {
        self.base[trace][sc]
    }

    /// The key of `cur`'s current event class.
    #[inline]
    pub fn key(&self, trace: usize, cur: &StreamCursor) -> u32 {
        self.base[trace][cur.stream] + cur.event.event as u32
    }

    /// The event classes of stream class `sc` of `trace` (a plan index)
    /// whose context and payload values the model reads.
    pub fn wanted(&self, trace: usize, sc: usize) -> std::sync::Arc<[bool]> {
        self.wanted[trace][sc].clone()
    }

    /// Sets `cur` (of trace `trace`) to keep only the values the model
    /// reads.
    pub fn model_values(&self, trace: usize, cur: &mut StreamCursor) {
        if !self.vtid[trace] {
            cur.skip_values(true);
            if self.kernel[trace] {
                cur.values_of(Some(self.wanted(trace, cur.stream)));
            }
        }
    }

    /// Whether reading `trace` for the model needs the events' values.
    pub fn needs_values(&self, trace: usize) -> bool {
        self.kernel[trace] || self.vtid[trace]
    }
}

#[derive(Debug, Clone, Copy)]
struct ClassInfo {
    id: u32,
    kind: K,
}

/// Event classes of every trace, numbered in order of first sight.
#[derive(Debug, Clone, Default)]
pub struct Classes {
    pub names: Vec<String>,
    /// Per class: its subsystem or provider (the name up to the first
    /// `_` or `:`).
    pub groups: Vec<String>,
    /// By class key ([`ClassKeys`]).
    by_key: Vec<Option<ClassInfo>>,
}

impl Classes {
    #[inline]
    fn get(&mut self, keys: &ClassKeys, key: u32) -> ClassInfo {
        if let Some(Some(c)) = self.by_key.get(key as usize) {
            return *c;
        }
        self.add(keys, key)
    }

    #[cold]
    fn add(&mut self, keys: &ClassKeys, key: u32) -> ClassInfo {
        let name = keys.names[key as usize].as_str();
        let id = match self.names.iter().position(|n| n == name) {
            Some(i) => i as u32,
            None => {
                self.names.push(name.to_string());
                let g = name.split([':', '_']).next().unwrap_or(name);
                self.groups.push(g.to_string());
                (self.names.len() - 1) as u32
            }
        };
        let c = ClassInfo {
            id,
            kind: keys.kinds[key as usize],
        };
        if self.by_key.len() <= key as usize {
            self.by_key.resize(key as usize + 1, None);
        }
        self.by_key[key as usize] = Some(c);
        c
    }
}

/// What the model needs of one event, read from its fields: made by
/// [`Extract::event`] on the index's decoding threads (or inline when a
/// window is decoded again), applied in `reef print` order by
/// [`Model::apply`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Rec {
    /// ns from the clock's origin.
    pub ns: i64,
    /// The `cpu_id` ([`R_CPU`]) or the `vtid` ([`R_VTID`]).
    pub key: i64,
    /// Kind-specific: `prev_tid`/`next_tid`, `tid`, `child_tid`/`child_pid`,
    /// `tid`/`pid`, or the `vpid` ([`R_VPID`]).
    pub a: i64,
    pub b: i64,
    /// The class key ([`ClassKeys`]).
    pub ckey: u32,
    /// The first of its names in [`Names`] (`u32::MAX`: none).
    pub nm: u32,
    pub flags: u8,
}

/// [`Rec::key`] is a kernel event's `cpu_id`.
pub const R_CPU: u8 = 1;
/// [`Rec::key`] is a `vtid`.
pub const R_VTID: u8 = 2;
/// [`Rec::b`] is the `vpid` of a `vtid` event.
pub const R_VPID: u8 = 4;
/// The list keeps the event (the command line's filter).
pub const R_KEPT: u8 = 8;
/// [`Rec::b`] of a fork whose child's process id is not recorded (ftrace).
const NO_PID: i64 = i64::MIN;
/// `sched_switch`'s `prev_state` is not 0.
pub const R_BLOCKED: u8 = 16;

/// Thread names read with records: (tid, range in `bytes`).
#[derive(Debug, Clone, Default)]
pub struct Names {
    ents: Vec<(i64, u32, u32)>,
    bytes: Vec<u8>,
}

impl Names {
    pub fn clear(&mut self) {
        self.ents.clear();
        self.bytes.clear();
    }

    /// Adds a name (up to its first NUL; empty when absent) and returns
    /// its index.
    fn push(&mut self, tid: i64, v: Option<FieldVal<'_>>) -> u32 {
        let name = v.and_then(|v| v.as_bytes()).unwrap_or(&[]);
        let name = name
            .iter()
            .position(|&c| c == 0)
            .map_or(name, |n| &name[..n]);
        let at = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name);
        self.ents.push((tid, at, name.len() as u32));
        (self.ents.len() - 1) as u32
    }

    fn get(&self, i: u32) -> (i64, &[u8]) {
        match self.ents.get(i as usize) {
            Some(&(tid, at, len)) => (tid, &self.bytes[at as usize..(at + len) as usize]),
            None => (0, &[]),
        }
    }
}

/// Reads [`Rec`]s from events: the field lookups, cached per event class,
/// and each stream's CPU (a packet context field, looked up once a
/// packet).
#[derive(Debug, Clone)]
pub struct Extract {
    pub keys: std::sync::Arc<ClassKeys>,
    f: Fields,
    cpu: Vec<(u64, Option<i64>)>,
}

impl Extract {
    pub fn new(keys: std::sync::Arc<ClassKeys>) -> Extract {
        Extract {
            keys,
            f: Fields::default(),
            cpu: Vec::new(),
        }
    }

    /// The `cpu_id` of `cur`'s packet (stream `stream` of a kernel trace).
    #[inline]
    pub fn cpu(&mut self, stream: usize, cur: &StreamCursor) -> Option<i64> {
        if self.cpu.len() <= stream {
            self.cpu.resize(stream + 1, (u64::MAX, None));
        }
        let (packet, cpu) = self.cpu[stream];
        if packet == cur.packets_read {
            return cpu;
        }
        let cpu = self.f.cpu_id.get(cur).and_then(|v| v.as_i64());
        self.cpu[stream] = (cur.packets_read, cpu);
        cpu
    }

    /// The record of `cur`'s current event (stream `stream` of trace
    /// `trace`), at `ns`; names go to `names`.
    pub fn event(
        &mut self,
        trace: usize,
        stream: usize,
        cur: &StreamCursor,
        ns: i64,
        names: &mut Names,
    ) -> Rec {
        let ckey = self.keys.key(trace, cur);
        let mut r = Rec {
            ns,
            ckey,
            nm: u32::MAX,
            ..Rec::default()
        };
        if self.keys.kernel[trace] {
            let Some(cpu) = self.cpu(stream, cur) else {
                return r;
            };
            r.key = cpu;
            r.flags = R_CPU;
            let f = &mut self.f;
            let int = |f: &mut Field| f.get(cur).and_then(|v| v.as_i64());
            // ftrace's `pid`, `prev_pid`, `child_pid` are thread ids.
            let ft = self.keys.ftrace[trace];
            match self.keys.kinds[ckey as usize] {
                K::Switch => {
                    let (prev, next) = match ft {
                        true => (&mut f.prev_pid, &mut f.next_pid),
                        false => (&mut f.prev_tid, &mut f.next_tid),
                    };
                    r.a = int(prev).unwrap_or(-1);
                    r.b = int(next).unwrap_or(-1);
                    if int(&mut f.prev_state).unwrap_or(0) != 0 {
                        r.flags |= R_BLOCKED;
                    }
                    r.nm = names.push(r.a, f.prev_comm.get(cur));
                    names.push(r.b, f.next_comm.get(cur));
                }
                K::Wakeup | K::Exit => {
                    r.a = int(if ft { &mut f.pid } else { &mut f.tid }).unwrap_or(-1)
                }
                K::Fork if ft => {
                    r.a = int(&mut f.child_pid).unwrap_or(-1);
                    r.b = NO_PID; // the child's process is not recorded
                    r.nm = names.push(r.a, f.child_comm.get(cur));
                }
                K::Fork => {
                    r.a = int(&mut f.child_tid).unwrap_or(-1);
                    r.b = int(&mut f.child_pid).unwrap_or(-1);
                    r.nm = names.push(r.a, f.child_comm.get(cur));
                }
                K::Statedump => {
                    r.a = int(&mut f.tid).unwrap_or(-1);
                    r.b = int(&mut f.pid).unwrap_or(-1);
                    r.nm = names.push(r.a, f.name.get(cur));
                }
                _ => {}
            }
            return r;
        }
        if !self.keys.vtid[trace] {
            return r;
        }
        if let Some(vtid) = self.f.vtid.get(cur).and_then(|v| v.as_i64()) {
            r.key = vtid;
            r.flags = R_VTID;
            if let Some(vp) = self.f.vpid.get(cur).and_then(|v| v.as_i64()) {
                r.b = vp;
                r.flags |= R_VPID;
            }
            r.nm = names.push(vtid, self.f.procname.get(cur));
        }
        r
    }
}

/// A wakeup drawn as an arrow: the `cpu` row and time of `sched_wakeup`
/// (or `sched_waking`), and those of the `sched_switch` that switched the
/// thread in next.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Arrow {
    pub tid: i64,
    pub from_row: u32,
    pub from_t: i64,
    pub to_row: u32,
    pub to_t: i64,
}

/// Where the model's effects go: the index's tracks, or a window's.
pub trait Sink {
    fn mark(&mut self, row: u32, t: i64, class: u32);
    fn value(&mut self, row: u32, t: i64, v: i32, rule: OnRule);
    fn arrow(&mut self, _a: Arrow) {}
}

#[derive(Debug, Clone, Copy)]
struct Thread {
    /// The latest wakeup not followed by a switch in: time and cpu row
    /// (`NO_WAKE`: none). Laid out to fit in 24 bytes: checkpoints keep
    /// one per thread.
    wake_t: i64,
    wake_row: u32,
    row: u32,
    v: i32,
    in_sys: bool,
}

const NO_WAKE: u32 = u32::MAX;

impl Thread {
    fn take_wake(&mut self) -> Option<(u32, i64)> {
        let w = (self.wake_row != NO_WAKE).then_some((self.wake_row, self.wake_t));
        self.wake_row = NO_WAKE;
        w
    }
}

/// The kernel model (per-CPU current thread and interrupt depth, per-thread
/// state): cloned into the index's checkpoints.
#[derive(Debug, Clone, Default)]
pub struct Kernel {
    cur: HashMap<i64, i64>,
    depth: HashMap<i64, u32>,
    threads: HashMap<i64, Thread>,
}

/// The kernel model as kept at a checkpoint: its maps as exactly sized
/// lists (half the memory of the maps).
#[derive(Debug, Clone, Default)]
pub struct KernelPoint {
    cur: Box<[(i64, i64)]>,
    depth: Box<[(i64, u32)]>,
    threads: Box<[(i64, Thread)]>,
}

impl Kernel {
    /// The model as a checkpoint keeps it.
    pub fn point(&self) -> KernelPoint {
        KernelPoint {
            cur: self.cur.iter().map(|(&k, &v)| (k, v)).collect(),
            depth: self.depth.iter().map(|(&k, &v)| (k, v)).collect(),
            threads: self.threads.iter().map(|(&k, &v)| (k, v)).collect(),
        }
    }

    /// The model a checkpoint kept.
    pub fn from_point(p: &KernelPoint) -> Kernel {
        Kernel {
            cur: p.cur.iter().copied().collect(),
            depth: p.depth.iter().copied().collect(),
            threads: p.threads.iter().copied().collect(),
        }
    }
}

/// Field lookups, cached per event class.
#[derive(Debug, Clone)]
struct Fields {
    cpu_id: Field,
    prev_tid: Field,
    prev_state: Field,
    next_tid: Field,
    prev_comm: Field,
    next_comm: Field,
    tid: Field,
    child_tid: Field,
    child_pid: Field,
    child_comm: Field,
    pid: Field,
    name: Field,
    vtid: Field,
    vpid: Field,
    procname: Field,
    /// ftrace's names of `prev_tid` and `next_tid`.
    prev_pid: Field,
    next_pid: Field,
}

impl Default for Fields {
    fn default() -> Self {
        let p = |n: &str| Field::in_scopes(n, Scopes::Payload);
        let c = |n: &str| Field::in_scopes(n, Scopes::Context);
        Fields {
            cpu_id: Field::in_scopes("cpu_id", Scopes::PacketContext),
            prev_tid: p("prev_tid"),
            prev_state: p("prev_state"),
            next_tid: p("next_tid"),
            prev_comm: p("prev_comm"),
            next_comm: p("next_comm"),
            tid: p("tid"),
            child_tid: p("child_tid"),
            child_pid: p("child_pid"),
            child_comm: p("child_comm"),
            pid: p("pid"),
            name: p("name"),
            vtid: c("vtid"),
            vpid: c("vpid"),
            procname: c("procname"),
            prev_pid: p("prev_pid"),
            next_pid: p("next_pid"),
        }
    }
}

/// Rows, classes and the kernel model, fed events in `reef print` order.
#[derive(Debug, Clone)]
pub struct Model {
    pub rows: Rows,
    pub classes: Classes,
    pub kernel: Kernel,
    /// Per trace: whether it is a kernel trace.
    pub kernel_trace: Vec<bool>,
    /// For events given as cursors.
    pub x: Extract,
    names: Names,
    /// Per stream: its `stream` row, once made.
    stream_rows: Vec<Option<u32>>,
    /// Per stream of a kernel trace: the CPU of its last event and its row.
    cpu_rows: Vec<Option<(i64, u32)>>,
}

/// What [`Model::event`] found about an event.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub class: u32,
    pub row: Option<u32>,
}

impl Model {
    pub fn new(keys: std::sync::Arc<ClassKeys>) -> Model {
        Model {
            rows: Rows::default(),
            classes: Classes::default(),
            kernel: Kernel::default(),
            kernel_trace: keys.kernel.clone(),
            x: Extract::new(keys),
            names: Names::default(),
            stream_rows: Vec::new(),
            cpu_rows: Vec::new(),
        }
    }

    /// The id of the event class of key `key` (numbered if new).
    #[inline]
    pub fn class_id(&mut self, key: u32) -> u32 {
        self.classes.get(&self.x.keys, key).id
    }

    /// The `stream` row of stream `stream`, once made.
    pub fn stream_row(&self, stream: usize) -> Option<u32> {
        self.stream_rows.get(stream).copied().flatten()
    }

    /// The class and row of `cur`'s current event, without changing
    /// the kernel model (rows and classes are still added when new).
    pub fn locate(&mut self, trace: usize, stream: usize, cur: &StreamCursor) -> Seen {
        self.names.clear();
        let r = self.x.event(trace, stream, cur, 0, &mut self.names);
        let ci = self.classes.get(&self.x.keys, r.ckey);
        let names = std::mem::take(&mut self.names);
        let row = self.row_of(trace, stream, &r, &names);
        self.names = names;
        Seen { class: ci.id, row }
    }

    fn row_of(&mut self, trace: usize, stream: usize, r: &Rec, names: &Names) -> Option<u32> {
        if self.kernel_trace.get(trace).copied().unwrap_or(false) {
            if r.flags & R_CPU == 0 {
                return None;
            }
            // A stream's CPU seldom changes.
            if let Some(Some((cpu, row))) = self.cpu_rows.get(stream) {
                if *cpu == r.key {
                    return Some(*row);
                }
            }
            let row = self.rows.cpu(trace, r.key);
            if self.cpu_rows.len() <= stream {
                self.cpu_rows.resize(stream + 1, None);
            }
            self.cpu_rows[stream] = Some((r.key, row));
            return Some(row);
        }
        if r.flags & R_VTID != 0 {
            let vtid = r.key;
            let (_, pname) = names.get(r.nm);
            self.rows.name(trace, vtid, pname);
            let row = self
                .rows
                .get_or_add(RowKey::UThread(trace, vtid), trace, |id| RowInfo {
                    id,
                    kind: "thread",
                    label: String::new(),
                    cpu: None,
                    tid: Some(vtid),
                    pid: None,
                    process: None,
                    stream: None,
                    on: None,
                    trace,
                });
            if r.flags & R_VPID != 0 {
                self.rows.set_pid(row, r.b);
            }
            return Some(row);
        }
        if let Some(Some(row)) = self.stream_rows.get(stream) {
            return Some(*row);
        }
        let name = self
            .x
            .keys
            .trace_names
            .get(trace)
            .cloned()
            .unwrap_or_default();
        let row = self
            .rows
            .get_or_add(RowKey::Stream(stream), trace, |id| RowInfo {
                id,
                kind: "stream",
                label: format!("{name}/stream {stream}"),
                cpu: None,
                tid: None,
                pid: None,
                process: None,
                stream: Some(stream),
                on: None,
                trace,
            });
        if self.stream_rows.len() <= stream {
            self.stream_rows.resize(stream + 1, None);
        }
        self.stream_rows[stream] = Some(row);
        Some(row)
    }

    /// Applies an event at `t` (ns from the origin): its mark when `mark`
    /// (always called) says so, and its effect on the kernel model's
    /// values.
    pub fn event(
        &mut self,
        trace: usize,
        stream: usize,
        cur: &StreamCursor,
        t: i64,
        mark: impl FnOnce(Seen) -> bool,
        sink: &mut impl Sink,
    ) -> Seen {
        let mut names = std::mem::take(&mut self.names);
        names.clear();
        let r = self.x.event(trace, stream, cur, 0, &mut names);
        let seen = self.apply(trace, stream, &r, &names, t, mark, sink);
        self.names = names;
        seen
    }

    /// Applies a record read by [`Extract::event`] (names in `names`), as
    /// [`Model::event`].
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn apply(
        &mut self,
        trace: usize,
        stream: usize,
        r: &Rec,
        names: &Names,
        t: i64,
        mark: impl FnOnce(Seen) -> bool,
        sink: &mut impl Sink,
    ) -> Seen {
        let ci = self.classes.get(&self.x.keys, r.ckey);
        let row = self.row_of(trace, stream, r, names);
        let seen = Seen { class: ci.id, row };
        if mark(seen) {
            if let Some(row) = row {
                sink.mark(row, t, ci.id);
            }
        }
        if ci.kind != K::Other {
            if let (Some(cpu_row), true) = (row, r.flags & R_CPU != 0) {
                self.kernel_event(trace, ci.kind, r, names, t, r.key, cpu_row, sink);
            }
        }
        seen
    }

    fn set_thread(
        &mut self,
        trace: usize,
        tid: i64,
        t: i64,
        sink: &mut impl Sink,
        f: impl FnOnce(&mut Thread),
    ) {
        if tid <= 0 {
            return;
        }
        let th = match self.kernel.threads.get_mut(&tid) {
            Some(th) => th,
            None => {
                let row = self.rows.kthread(trace, tid);
                self.kernel.threads.entry(tid).or_insert(Thread {
                    v: UNKNOWN,
                    in_sys: false,
                    wake_t: 0,
                    wake_row: NO_WAKE,
                    row,
                })
            }
        };
        let before = th.v;
        f(th);
        if th.v != before {
            sink.value(th.row, t, th.v, OnRule::Thread);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn kernel_event(
        &mut self,
        trace: usize,
        kind: K,
        r: &Rec,
        names: &Names,
        t: i64,
        cpu: i64,
        cpu_row: u32,
        sink: &mut impl Sink,
    ) {
        match kind {
            K::Switch => {
                let (prev, next) = (r.a, r.b);
                for i in 0..2 {
                    let (tid, name) = names.get(r.nm.wrapping_add(i));
                    self.rows.name(trace, tid, name);
                }
                let blocked = r.flags & R_BLOCKED != 0;
                self.set_thread(trace, prev, t, sink, |th| {
                    if th.v != EXITED {
                        th.v = if blocked { BLOCKED } else { WAIT_CPU };
                    }
                });
                let mut woken = None;
                self.set_thread(trace, next, t, sink, |th| {
                    th.v = if th.in_sys { SYSCALL } else { RUNNING };
                    woken = th.take_wake();
                });
                if let Some((from_row, from_t)) = woken {
                    sink.arrow(Arrow {
                        tid: next,
                        from_row,
                        from_t,
                        to_row: cpu_row,
                        to_t: t,
                    });
                }
                self.kernel.cur.insert(cpu, next);
                sink.value(
                    cpu_row,
                    t,
                    next.clamp(-1, i32::MAX as i64) as i32,
                    OnRule::Cpu,
                );
            }
            K::Wakeup => {
                self.set_thread(trace, r.a, t, sink, |th| {
                    if matches!(th.v, BLOCKED | EXITED | UNKNOWN) {
                        th.v = WAIT_CPU;
                    }
                    (th.wake_row, th.wake_t) = (cpu_row, t);
                });
            }
            K::SysEntry | K::SysExit => {
                let Some(&tid) = self.kernel.cur.get(&cpu) else {
                    return;
                };
                let entry = kind == K::SysEntry;
                self.set_thread(trace, tid, t, sink, |th| {
                    th.in_sys = entry;
                    if entry && th.v == RUNNING {
                        th.v = SYSCALL;
                    } else if !entry && th.v == SYSCALL {
                        th.v = RUNNING;
                    }
                });
            }
            K::IrqEntry => {
                *self.kernel.depth.entry(cpu).or_insert(0) += 1;
                if let Some(&tid) = self.kernel.cur.get(&cpu) {
                    self.set_thread(trace, tid, t, sink, |th| {
                        if th.v == RUNNING || th.v == SYSCALL {
                            th.v = INTERRUPTED;
                        }
                    });
                }
            }
            K::IrqExit => {
                let d = self.kernel.depth.entry(cpu).or_insert(0);
                *d = d.saturating_sub(1);
                if *d == 0 {
                    if let Some(&tid) = self.kernel.cur.get(&cpu) {
                        self.set_thread(trace, tid, t, sink, |th| {
                            if th.v == INTERRUPTED {
                                th.v = if th.in_sys { SYSCALL } else { RUNNING };
                            }
                        });
                    }
                }
            }
            K::Fork | K::Statedump => {
                let (tid, name) = names.get(r.nm);
                self.rows.name(trace, tid, name);
                if r.a > 0 {
                    let row = self.rows.kthread(trace, r.a);
                    if r.b != NO_PID {
                        self.rows.set_pid(row, r.b);
                    }
                }
            }
            K::Exit => {
                self.set_thread(trace, r.a, t, sink, |th| th.v = EXITED);
            }
            K::Other => {}
        }
    }

    /// The value of every row now (for a checkpoint).
    pub fn values(&self) -> Vec<i32> {
        let mut v = vec![UNKNOWN; self.rows.rows.len()];
        for (cpu, tid) in &self.kernel.cur {
            if let Some(r) = self.rows.find_cpu(*cpu) {
                v[r as usize] = (*tid).clamp(-1, i32::MAX as i64) as i32;
            }
        }
        for th in self.kernel.threads.values() {
            if let Some(x) = v.get_mut(th.row as usize) {
                *x = th.v;
            }
        }
        v
    }
}
