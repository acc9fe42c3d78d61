//! The tables users query in Perfetto, derived from an LTTng kernel trace
//! by the kernel model of `reef-analyses` (the same as `reef cputop`'s and
//! `reef syscallstats`'s):
//!
//! - `sched_slices`: a thread on a CPU, from being switched in to being
//!   switched out (`end_state`: its `prev_state` then, as Perfetto's
//!   letters). A thread switched out before any switch-in was seen, and
//!   not seen stopped before (switched out, migrated), ran since the start
//!   of the trace; a thread still running at the end runs to the last
//!   event (`end_state` null). Thread 0 (idle) has no slices.
//! - `thread_states`: each thread's state over time: `Running`, `R`
//!   (woken, waiting for a CPU), `R+` (preempted), `S`, `D`, `T`, `t`,
//!   `X`, `Z`, `P`, `I` from `prev_state`; from the first event that tells
//!   it to the next (the last one open to the end of the trace).
//! - `syscalls`: one row per system call the model ends (entry seen while
//!   the thread ran, ended by its exit): thread, name, start, duration,
//!   return value.
//! - `irqs`: hard IRQs (`irq_handler_entry`/`exit`) and soft IRQs
//!   (`softirq_raise`/`entry`/`exit`), CPU, number, name, start, duration,
//!   raise time of a soft IRQ.

use std::collections::HashSet;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, Field};
use reef_analyses::event::{Decoder, Interest, Kind, Text};
use reef_analyses::lami::{Metadata, Table as LamiTable};
use reef_analyses::state::{HardIrq, Listener, Proc, SoftIrq, State, Switch, Syscall};
use reef_analyses::{Analysis, IndexMap, Runner};
use reef_arrow::cols::{Prim, Strs};
use reef_ctf::access::{Field as CtfField, Scopes};
use reef_ctf::StreamCursor;

/// The derived tables' names, in the order [`Kernel::take`] gives them.
pub const TABLES: [&str; 4] = ["sched_slices", "thread_states", "syscalls", "irqs"];

#[derive(Default)]
struct Slices {
    cpu: Prim<i64>,
    tid: Prim<i64>,
    pid: Prim<i64>,
    procname: Strs,
    ts: Prim<i64>,
    dur: Prim<i64>,
    end_state: Strs,
    rows: usize,
}

#[derive(Default)]
struct States {
    tid: Prim<i64>,
    ts: Prim<i64>,
    dur: Prim<i64>,
    state: Strs,
    cpu: Prim<i64>,
    rows: usize,
}

#[derive(Default)]
struct Calls {
    tid: Prim<i64>,
    pid: Prim<i64>,
    procname: Strs,
    cpu: Prim<i64>,
    name: Strs,
    ts: Prim<i64>,
    dur: Prim<i64>,
    ret: Prim<i64>,
    rows: usize,
}

#[derive(Default)]
struct Irqs {
    cpu: Prim<i64>,
    soft: Prim<i64>,
    irq: Prim<i64>,
    name: Strs,
    ts: Prim<i64>,
    dur: Prim<i64>,
    raise_ts: Prim<i64>,
    rows: usize,
}

/// A thread running on a CPU since `start`.
#[derive(Clone)]
struct Running {
    tid: i64,
    start: i64,
    pid: Option<i64>,
    comm: String,
}

/// What the model tells, turned into rows.
#[derive(Default)]
struct Collector {
    begin: i64,
    /// CPU → the slice running there.
    running: IndexMap<i64, Running>,
    /// Threads known not to be running at some point (switched out,
    /// migrated): a switch-out without a switch-in does not run them from
    /// the start of the trace.
    stopped: HashSet<i64>,
    /// `prev_state` of the `sched_switch` being processed.
    prev_state: Option<i64>,
    /// tid → (state, since, CPU when running).
    state: IndexMap<i64, (&'static str, i64, Option<i64>)>,
    irq_names: IndexMap<i64, String>,
    slices: Slices,
    states: States,
    calls: Calls,
    irqs: Irqs,
    /// Only collect the system calls ended (`calls_only`), no table rows.
    calls_only: bool,
    ended: Vec<Call>,
}

/// A system call the model ended.
#[derive(Debug, Clone)]
pub struct Call {
    pub tid: i64,
    pub pid: Option<i64>,
    pub comm: String,
    pub name: String,
    pub begin: i64,
    pub end: i64,
}

static METADATA: Metadata = Metadata {
    title: "Derived kernel tables",
    description: "sched_slices, thread_states, syscalls, irqs",
    tags: &[],
    tables: &[],
};

/// Perfetto's letter for a `prev_state` (the lowest state bit set).
fn state_letter(prev_state: i64) -> &'static str {
    const LETTERS: [&str; 9] = ["S", "D", "T", "t", "X", "Z", "P", "I", "?"];
    if prev_state & 0xff == 0 {
        return "R+";
    }
    LETTERS[(prev_state & 0xff).trailing_zeros().min(8) as usize]
}

impl Collector {
    fn slice(&mut self, cpu: i64, r: &Running, end: i64, end_state: Option<&str>) {
        if self.calls_only {
            return;
        }
        let s = &mut self.slices;
        s.cpu.push(cpu);
        s.tid.push(r.tid);
        s.pid.push_opt(r.pid);
        s.procname.push(r.comm.as_bytes());
        s.ts.push(r.start);
        s.dur.push(end - r.start);
        match end_state {
            Some(e) => s.end_state.push(e.as_bytes()),
            None => s.end_state.push_null(),
        }
        s.rows += 1;
    }

    fn set_state(&mut self, tid: i64, st: &'static str, ts: i64, cpu: Option<i64>) {
        if tid == 0 || self.calls_only {
            return;
        }
        if let Some((old, since, ocpu)) = self.state.insert(tid, (st, ts, cpu)) {
            let s = &mut self.states;
            s.tid.push(tid);
            s.ts.push(since);
            s.dur.push(ts - since);
            s.state.push(old.as_bytes());
            s.cpu.push_opt(ocpu);
            s.rows += 1;
        }
    }
}

impl Listener for Collector {
    fn sched_switch(&mut self, sw: &Switch) {
        let end_state = self.prev_state.map(state_letter);
        match self.running.get(&sw.cpu).cloned() {
            Some(r) if r.tid == sw.prev_tid && r.tid != 0 => {
                self.slice(sw.cpu, &r, sw.ts, end_state);
            }
            None if sw.prev_tid != 0 && !self.stopped.contains(&sw.prev_tid) => {
                let r = Running {
                    tid: sw.prev_tid,
                    start: self.begin,
                    pid: None,
                    comm: sw.prev_comm.to_str().into_owned(),
                };
                self.slice(sw.cpu, &r, sw.ts, end_state);
            }
            _ => {}
        }
        self.stopped.insert(sw.prev_tid);
        let next = Running {
            tid: sw.next_tid,
            start: sw.ts,
            pid: sw.wakee.pid,
            comm: sw.next_comm.to_str().into_owned(),
        };
        self.running.insert(sw.cpu, next);
        if let Some(e) = end_state {
            self.set_state(sw.prev_tid, e, sw.ts, None);
        }
        self.set_state(sw.next_tid, "Running", sw.ts, Some(sw.cpu));
    }

    fn migrate(&mut self, proc: &Proc, _cpu: i64) {
        if !self.running.values().any(|r| r.tid == proc.tid) {
            self.stopped.insert(proc.tid);
        }
    }

    fn syscall_exit(&mut self, proc: &Proc, call: &Syscall, cpu: i64) {
        if self.calls_only {
            self.ended.push(Call {
                tid: proc.tid,
                pid: proc.pid,
                comm: proc.comm.clone(),
                name: call.name.to_string(),
                begin: call.begin,
                end: call.end,
            });
            return;
        }
        let c = &mut self.calls;
        c.tid.push(proc.tid);
        c.pid.push_opt(proc.pid);
        c.procname.push(proc.comm.as_bytes());
        c.cpu.push(cpu);
        c.name.push(call.name.as_bytes());
        c.ts.push(call.begin);
        c.dur.push(call.end - call.begin);
        c.ret.push_opt(call.ret);
        c.rows += 1;
    }

    fn irq_entry(&mut self, irq: i64, name: Text) {
        self.irq_names.insert(irq, name.to_str().into_owned());
    }

    fn irq_exit(&mut self, irq: &HardIrq) {
        if self.calls_only {
            return;
        }
        let name = self.irq_names.get(&irq.irq).cloned();
        let r = &mut self.irqs;
        r.cpu.push(irq.cpu);
        r.soft.push(0);
        r.irq.push(irq.irq);
        match name {
            Some(n) => r.name.push(n.as_bytes()),
            None => r.name.push_null(),
        }
        r.ts.push(irq.begin);
        r.dur.push(irq.end - irq.begin);
        r.raise_ts.push_opt(None);
        r.rows += 1;
    }

    fn softirq_exit(&mut self, irq: &SoftIrq) {
        if self.calls_only {
            return;
        }
        let Some(begin) = irq.begin else { return };
        let r = &mut self.irqs;
        r.cpu.push(irq.cpu);
        r.soft.push(1);
        r.irq.push(irq.vec);
        r.name.push(softirq_name(irq.vec).as_bytes());
        r.ts.push(begin);
        r.dur.push(irq.end - begin);
        r.raise_ts.push_opt(irq.raise);
        r.rows += 1;
    }
}

/// The kernel's names of the soft IRQ vectors.
fn softirq_name(vec: i64) -> &'static str {
    const NAMES: [&str; 10] = [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ];
    usize::try_from(vec)
        .ok()
        .and_then(|v| NAMES.get(v))
        .copied()
        .unwrap_or("?")
}

impl Analysis for Collector {
    fn metadata() -> &'static Metadata {
        &METADATA
    }
    fn begin(&mut self, ts: i64) {
        self.begin = ts;
    }
    fn tables(&mut self, _state: &State, _begin: i64, _end: i64) -> Vec<LamiTable> {
        Vec::new()
    }
}

/// The derived tables of one kernel trace, filled event by event.
pub struct Kernel {
    dec: Decoder,
    run: Runner<Collector>,
    prev_state: CtfField,
    last_ts: Option<i64>,
}

impl Default for Kernel {
    fn default() -> Kernel {
        Kernel::new()
    }
}

impl Kernel {
    /// A model that only tells the system calls it ends
    /// ([`Kernel::take_calls`]), for writers that need no tables.
    pub fn calls_only() -> Kernel {
        let mut k = Kernel::new();
        k.run.analysis.calls_only = true;
        k
    }

    /// The system calls ended since the last call.
    pub fn take_calls(&mut self) -> Vec<Call> {
        std::mem::take(&mut self.run.analysis.ended)
    }

    pub fn new() -> Kernel {
        Kernel {
            dec: Decoder::new(Interest::ALL),
            run: Runner::new(Collector::default(), None, None),
            prev_state: CtfField::in_scopes("prev_state", Scopes::Payload),
            last_ts: None,
        }
    }

    /// Processes the event `cur` points at, at `ns`.
    pub fn event(&mut self, cur: &StreamCursor, ns: i64) {
        let ev = self.dec.decode(cur, ns);
        if let Kind::SchedSwitch { .. } = ev.kind {
            self.run.analysis.prev_state = self.prev_state.get(cur).and_then(|v| v.as_i64());
        }
        if let Kind::Wakeup { tid, .. } = ev.kind {
            let c = &mut self.run.analysis;
            if !matches!(c.state.get(&tid), Some(("Running", ..))) {
                c.set_state(tid, "R", ns, None);
            }
        }
        self.last_ts = Some(ns);
        self.run.event(&ev);
    }

    /// Tables holding at least `rows` rows, as batches (`rows` 0: every
    /// table, at the end of the trace: open slices and states are closed
    /// at the last event first).
    pub fn take(&mut self, rows: usize) -> Result<Vec<(&'static str, RecordBatch)>, ArrowError> {
        let c = &mut self.run.analysis;
        if rows == 0 {
            if let Some(end) = self.last_ts {
                for (cpu, r) in std::mem::take(&mut c.running) {
                    if r.tid != 0 {
                        c.slice(cpu, &r, end, None);
                    }
                }
                for (tid, (st, since, cpu)) in std::mem::take(&mut c.state) {
                    let s = &mut c.states;
                    s.tid.push(tid);
                    s.ts.push(since);
                    s.dur.push(end - since);
                    s.state.push(st.as_bytes());
                    s.cpu.push_opt(cpu);
                    s.rows += 1;
                }
            }
        }
        let i = |n: &str| Field::new(n, DataType::Int64, true);
        let u = |n: &str| Field::new(n, DataType::Utf8, true);
        let mut out = Vec::new();
        let s = &mut c.slices;
        if s.rows > 0 && s.rows >= rows {
            let n = std::mem::take(&mut s.rows);
            out.push((
                TABLES[0],
                reef_arrow::record_batch(
                    vec![
                        (i("cpu"), s.cpu.finish()),
                        (i("tid"), s.tid.finish()),
                        (i("pid"), s.pid.finish()),
                        (u("procname"), s.procname.finish()),
                        (i("ts"), s.ts.finish()),
                        (i("dur"), s.dur.finish()),
                        (u("end_state"), s.end_state.finish()),
                    ],
                    n,
                )?,
            ));
        }
        let s = &mut c.states;
        if s.rows > 0 && s.rows >= rows {
            let n = std::mem::take(&mut s.rows);
            out.push((
                TABLES[1],
                reef_arrow::record_batch(
                    vec![
                        (i("tid"), s.tid.finish()),
                        (i("ts"), s.ts.finish()),
                        (i("dur"), s.dur.finish()),
                        (u("state"), s.state.finish()),
                        (i("cpu"), s.cpu.finish()),
                    ],
                    n,
                )?,
            ));
        }
        let s = &mut c.calls;
        if s.rows > 0 && s.rows >= rows {
            let n = std::mem::take(&mut s.rows);
            out.push((
                TABLES[2],
                reef_arrow::record_batch(
                    vec![
                        (i("tid"), s.tid.finish()),
                        (i("pid"), s.pid.finish()),
                        (u("procname"), s.procname.finish()),
                        (i("cpu"), s.cpu.finish()),
                        (u("name"), s.name.finish()),
                        (i("ts"), s.ts.finish()),
                        (i("dur"), s.dur.finish()),
                        (i("ret"), s.ret.finish()),
                    ],
                    n,
                )?,
            ));
        }
        let s = &mut c.irqs;
        if s.rows > 0 && s.rows >= rows {
            let n = std::mem::take(&mut s.rows);
            out.push((
                TABLES[3],
                reef_arrow::record_batch(
                    vec![
                        (i("cpu"), s.cpu.finish()),
                        (Field::new("soft", DataType::Int64, false), s.soft.finish()),
                        (i("irq"), s.irq.finish()),
                        (u("name"), s.name.finish()),
                        (i("ts"), s.ts.finish()),
                        (i("dur"), s.dur.finish()),
                        (i("raise_ts"), s.raise_ts.finish()),
                    ],
                    n,
                )?,
            ));
        }
        Ok(out)
    }
}
