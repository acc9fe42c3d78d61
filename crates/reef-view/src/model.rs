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

    fn name(&mut self, trace: usize, tid: i64, name: Option<FieldVal<'_>>) {
        let Some(name) = name.and_then(|v| v.as_bytes()) else {
            return;
        };
        let name = name
            .iter()
            .position(|&c| c == 0)
            .map_or(name, |n| &name[..n]);
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

fn classify(name: &str) -> K {
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
    /// By trace, stream class and event id.
    by_key: Vec<Vec<Vec<Option<ClassInfo>>>>,
}

impl Classes {
    #[inline]
    fn get(&mut self, trace: usize, cur: &StreamCursor) -> ClassInfo {
        let (s, e) = (cur.stream, cur.event.event);
        if let Some(Some(c)) = self
            .by_key
            .get(trace)
            .and_then(|t| t.get(s))
            .and_then(|t| t.get(e))
        {
            return *c;
        }
        self.add(trace, cur)
    }

    #[cold]
    fn add(&mut self, trace: usize, cur: &StreamCursor) -> ClassInfo {
        let (s, e) = (cur.stream, cur.event.event);
        let name = cur.event_name();
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
            kind: classify(name),
        };
        if self.by_key.len() <= trace {
            self.by_key.resize(trace + 1, Vec::new());
        }
        let t = &mut self.by_key[trace];
        if t.len() <= s {
            t.resize(s + 1, Vec::new());
        }
        let t = &mut t[s];
        if t.len() <= e {
            t.resize(e + 1, None);
        }
        t[e] = Some(c);
        c
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
    v: i32,
    in_sys: bool,
    /// The latest wakeup not followed by a switch in: (cpu row, time).
    wake: Option<(u32, i64)>,
    row: u32,
}

/// The kernel model (per-CPU current thread and interrupt depth, per-thread
/// state): cloned into the index's checkpoints.
#[derive(Debug, Clone, Default)]
pub struct Kernel {
    cur: HashMap<i64, i64>,
    depth: HashMap<i64, u32>,
    threads: HashMap<i64, Thread>,
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
        }
    }
}

/// Rows, classes and the kernel model, fed events in `reef print` order.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub rows: Rows,
    pub classes: Classes,
    pub kernel: Kernel,
    /// Per trace: whether it is a kernel trace.
    pub kernel_trace: Vec<bool>,
    f: Fields,
    /// Per stream (cursor): the packet whose `cpu_id` row is known, and
    /// that row.
    cpu_rows: Vec<(u64, Option<u32>)>,
}

/// What [`Model::event`] found about an event.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub class: u32,
    pub row: Option<u32>,
}

impl Model {
    pub fn new(kernel_trace: Vec<bool>) -> Model {
        Model {
            kernel_trace,
            ..Model::default()
        }
    }

    /// The class and row of `cur`'s current event, without changing
    /// the kernel model (rows and classes are still added when new).
    pub fn locate(&mut self, trace: usize, stream: usize, cur: &StreamCursor) -> Seen {
        let ci = self.classes.get(trace, cur);
        let row = self.row_of(trace, stream, cur);
        Seen { class: ci.id, row }
    }

    fn row_of(&mut self, trace: usize, stream: usize, cur: &StreamCursor) -> Option<u32> {
        if self.kernel_trace.get(trace).copied().unwrap_or(false) {
            // `cpu_id` is a packet context field: looked up once a packet.
            if self.cpu_rows.len() <= stream {
                self.cpu_rows.resize(stream + 1, (u64::MAX, None));
            }
            let (packet, row) = self.cpu_rows[stream];
            if packet == cur.packets_read {
                return row;
            }
            let row = self
                .f
                .cpu_id
                .get(cur)
                .and_then(|v| v.as_i64())
                .map(|cpu| self.rows.cpu(trace, cpu));
            self.cpu_rows[stream] = (cur.packets_read, row);
            return row;
        }
        if let Some(vtid) = self.f.vtid.get(cur).and_then(|v| v.as_i64()) {
            let vpid = self.f.vpid.get(cur).and_then(|v| v.as_i64());
            let pname = self.f.procname.get(cur);
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
            if let Some(vp) = vpid {
                self.rows.set_pid(row, vp);
            }
            return Some(row);
        }
        let label = |id: u32| {
            let name = cur
                .trace
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            RowInfo {
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
            }
        };
        Some(self.rows.get_or_add(RowKey::Stream(stream), trace, label))
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
        let ci = self.classes.get(trace, cur);
        let row = self.row_of(trace, stream, cur);
        let seen = Seen { class: ci.id, row };
        if mark(seen) {
            if let Some(r) = row {
                sink.mark(r, t, ci.id);
            }
        }
        if ci.kind != K::Other && self.kernel_trace.get(trace).copied().unwrap_or(false) {
            if let Some(cpu_row) = row {
                let cpu = self.rows.rows[cpu_row as usize].cpu.unwrap_or(0);
                self.kernel_event(trace, ci.kind, cur, t, cpu, cpu_row, sink);
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
                    wake: None,
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
        cur: &StreamCursor,
        t: i64,
        cpu: i64,
        cpu_row: u32,
        sink: &mut impl Sink,
    ) {
        let int = |f: &mut Field| f.get(cur).and_then(|v| v.as_i64());
        match kind {
            K::Switch => {
                let prev = int(&mut self.f.prev_tid).unwrap_or(-1);
                let state = int(&mut self.f.prev_state).unwrap_or(0);
                let next = int(&mut self.f.next_tid).unwrap_or(-1);
                self.rows.name(trace, prev, self.f.prev_comm.get(cur));
                self.rows.name(trace, next, self.f.next_comm.get(cur));
                self.set_thread(trace, prev, t, sink, |th| {
                    if th.v != EXITED {
                        th.v = if state == 0 { WAIT_CPU } else { BLOCKED };
                    }
                });
                let mut woken = None;
                self.set_thread(trace, next, t, sink, |th| {
                    th.v = if th.in_sys { SYSCALL } else { RUNNING };
                    woken = th.wake.take();
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
                let tid = int(&mut self.f.tid).unwrap_or(-1);
                self.set_thread(trace, tid, t, sink, |th| {
                    if matches!(th.v, BLOCKED | EXITED | UNKNOWN) {
                        th.v = WAIT_CPU;
                    }
                    th.wake = Some((cpu_row, t));
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
            K::Fork => {
                let child = int(&mut self.f.child_tid).unwrap_or(-1);
                let pid = int(&mut self.f.child_pid).unwrap_or(-1);
                self.rows.name(trace, child, self.f.child_comm.get(cur));
                if child > 0 {
                    let row = self.rows.kthread(trace, child);
                    self.rows.set_pid(row, pid);
                }
            }
            K::Statedump => {
                let tid = int(&mut self.f.tid).unwrap_or(-1);
                let pid = int(&mut self.f.pid).unwrap_or(-1);
                self.rows.name(trace, tid, self.f.name.get(cur));
                if tid > 0 {
                    let row = self.rows.kthread(trace, tid);
                    self.rows.set_pid(row, pid);
                }
            }
            K::Exit => {
                let tid = int(&mut self.f.tid).unwrap_or(-1);
                self.set_thread(trace, tid, t, sink, |th| th.v = EXITED);
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
