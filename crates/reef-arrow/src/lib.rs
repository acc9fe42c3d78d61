//! `reef-arrow`: the events of a reading ([`reef_read::Source`]) as Arrow
//! record batches, for the converters (Parquet) and the Python module.
//!
//! Two kinds of tables, per trace:
//!
//! - **events**: one row per event — `seq` (the event's rank in the
//!   reading, from 0, the same in every table), `ts` (ns from the clock's
//!   origin), `name`, `stream_id` (stream class), `stream` (the stream's
//!   index in the trace), `cpu` (the packet context's `cpu_id`), `tid`,
//!   `pid`, `procname`, `loglevel`. Threads come from the `vtid`/`tid`,
//!   `vpid`/`pid` and `procname` contexts when the events have them; in an
//!   LTTng kernel trace, from the thread each CPU runs (`sched_switch`) and
//!   the process of each thread (`lttng_statedump_process_state`,
//!   `sched_process_fork`).
//! - **one table per event class**: `seq`, `ts`, `cpu`, then the event's
//!   fields: the stream event context's as `stream_ctx.NAME`, the event
//!   context's as `ctx.NAME`, the payload's as `NAME` (the scope names of
//!   the filter language, `$stream_ctx` and `$ctx`). Nested structures are
//!   flattened with dotted names, arrays and sequences are lists, an
//!   enumeration is its integer with `NAME_label` beside it (see `cols`).
//!
//! Integers are `Int64`, but unsigned ones of 64 bits, which are `UInt64`;
//! floats `Float64`; strings `Utf8` (invalid UTF-8 replaced). Memory is
//! bounded by the batch size times the number of tables: a table hands out
//! a batch once it holds [`Options::batch_rows`] rows.

pub mod cols;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use reef_ctf::access::{Field as CtfField, Scopes};
use reef_ctf::{EnvValue, Item, StreamCursor};
use reef_read::Msg;
use rustc_hash::FxHashMap;

use cols::{Col, Prim, Strs, Walk};

/// How batches are cut.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows per batch (the last batch of a table may hold fewer).
    pub batch_rows: usize,
    /// Add a `trace` column (the trace's name, as `reef print` names it)
    /// to every table: for readers that put every trace in one table.
    /// Parquet datasets keep the trace in their partition path instead.
    pub trace_column: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            batch_rows: 65536,
            trace_column: false,
        }
    }
}

/// Which table a batch belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// The events table.
    Events,
    /// The table of one event class.
    Class {
        name: String,
        stream_class: u64,
        event_id: u64,
    },
}

impl Table {
    /// The table's name: `events`, or the event class's name.
    pub fn name(&self) -> &str {
        match self {
            Table::Events => "events",
            Table::Class { name, .. } => name,
        }
    }
}

/// A batch of rows of one table of one trace.
#[derive(Debug)]
pub struct Batch {
    /// Index of the trace in the reading ([`reef_read::Source::traces`]).
    pub trace: usize,
    pub table: Table,
    pub batch: RecordBatch,
}

/// Strings held past this many bytes cut a batch early (Arrow's 32-bit
/// string offsets).
const MAX_BYTES: usize = 1 << 30;

struct ClassTable {
    trace: usize,
    table: Table,
    seq: Prim<i64>,
    ts: Prim<i64>,
    cpu: Prim<i64>,
    trace_name: Option<Strs>,
    /// Stream event context, event context, payload.
    scopes: [Option<(u32, Col)>; 3],
    rows: usize,
}

struct EventsTable {
    seq: Prim<i64>,
    ts: Prim<i64>,
    name: Strs,
    stream_id: Prim<i64>,
    stream: Prim<i64>,
    cpu: Prim<i64>,
    tid: Prim<i64>,
    pid: Prim<i64>,
    procname: Strs,
    loglevel: Prim<i64>,
    trace_name: Option<Strs>,
    rows: usize,
}

impl EventsTable {
    fn new(trace_column: bool) -> EventsTable {
        EventsTable {
            seq: Prim::default(),
            ts: Prim::default(),
            name: Strs::default(),
            stream_id: Prim::default(),
            stream: Prim::default(),
            cpu: Prim::default(),
            tid: Prim::default(),
            pid: Prim::default(),
            procname: Strs::default(),
            loglevel: Prim::default(),
            trace_name: trace_column.then(Strs::default),
            rows: 0,
        }
    }

    fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let i64col = |n: &str, a: ArrayRef| (Field::new(n, DataType::Int64, true), a);
        let mut cols = Vec::new();
        if let Some(t) = &mut self.trace_name {
            cols.push((Field::new("trace", DataType::Utf8, false), t.finish()));
        }
        cols.extend([
            (Field::new("seq", DataType::Int64, false), self.seq.finish()),
            i64col("ts", self.ts.finish()),
            (
                Field::new("name", DataType::Utf8, false),
                self.name.finish(),
            ),
            (
                Field::new("stream_id", DataType::Int64, false),
                self.stream_id.finish(),
            ),
            (
                Field::new("stream", DataType::Int64, false),
                self.stream.finish(),
            ),
            i64col("cpu", self.cpu.finish()),
            i64col("tid", self.tid.finish()),
            i64col("pid", self.pid.finish()),
            (
                Field::new("procname", DataType::Utf8, true),
                self.procname.finish(),
            ),
            i64col("loglevel", self.loglevel.finish()),
        ]);
        let rows = std::mem::take(&mut self.rows);
        record_batch(cols, rows)
    }
}

/// A record batch of `rows` rows from named columns.
pub fn record_batch(cols: Vec<(Field, ArrayRef)>, rows: usize) -> Result<RecordBatch, ArrowError> {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

impl ClassTable {
    fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let mut cols = Vec::new();
        if let Some(t) = &mut self.trace_name {
            cols.push((Field::new("trace", DataType::Utf8, false), t.finish()));
        }
        cols.push((Field::new("seq", DataType::Int64, false), self.seq.finish()));
        cols.push((Field::new("ts", DataType::Int64, true), self.ts.finish()));
        cols.push((Field::new("cpu", DataType::Int64, true), self.cpu.finish()));
        for (k, s) in self.scopes.iter_mut().enumerate() {
            if let Some((_, c)) = s {
                c.finish_flat(["stream_ctx", "ctx", ""][k], &mut cols);
            }
        }
        // Names must be unique: a payload member may share a name with a
        // fixed column (`cpu`, `ts`): the later one is suffixed.
        let mut seen = std::collections::HashSet::new();
        for (f, _) in cols.iter_mut() {
            let mut name = f.name().clone();
            while !seen.insert(name.clone()) {
                name.push('_');
            }
            if &name != f.name() {
                *f = f.clone().with_name(name);
            }
        }
        let rows = std::mem::take(&mut self.rows);
        record_batch(cols, rows)
    }

    fn bytes(&self) -> usize {
        self.scopes.iter().flatten().map(|(_, c)| c.bytes()).sum()
    }
}

/// The threads an LTTng kernel trace runs, as far as its events tell.
#[derive(Default)]
struct Threads {
    /// (trace, CPU) → (tid, name) running.
    running: FxHashMap<(usize, i64), (i64, String)>,
    /// (trace, tid) → (pid, name).
    procs: FxHashMap<(usize, i64), (i64, String)>,
}

/// The fields the events table reads.
struct Lookups {
    cpu_id: CtfField,
    vtid: CtfField,
    tid: CtfField,
    vpid: CtfField,
    pid: CtfField,
    procname: CtfField,
    prev_tid: CtfField,
    next_tid: CtfField,
    next_comm: CtfField,
    /// ftrace's names (a .dat file's events keep them): the thread of
    /// every event, and `sched_switch`'s thread ids.
    common_pid: CtfField,
    prev_pid: CtfField,
    next_pid: CtfField,
    sd_tid: CtfField,
    sd_pid: CtfField,
    sd_name: CtfField,
    child_tid: CtfField,
    child_pid: CtfField,
    child_comm: CtfField,
}

impl Lookups {
    fn new() -> Lookups {
        let ctx = |n| CtfField::in_scopes(n, Scopes::Context);
        let pl = |n| CtfField::in_scopes(n, Scopes::Payload);
        Lookups {
            cpu_id: CtfField::in_scopes("cpu_id", Scopes::PacketContext),
            vtid: ctx("vtid"),
            tid: ctx("tid"),
            vpid: ctx("vpid"),
            pid: ctx("pid"),
            procname: ctx("procname"),
            prev_tid: pl("prev_tid"),
            next_tid: pl("next_tid"),
            next_comm: pl("next_comm"),
            common_pid: ctx("common_pid"),
            prev_pid: pl("prev_pid"),
            next_pid: pl("next_pid"),
            sd_tid: pl("tid"),
            sd_pid: pl("pid"),
            sd_name: pl("name"),
            child_tid: pl("child_tid"),
            child_pid: pl("child_pid"),
            child_comm: pl("child_comm"),
        }
    }
}

/// Who an event is of: its CPU, thread and process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub cpu: Option<i64>,
    pub tid: Option<i64>,
    pub pid: Option<i64>,
    pub procname: Option<String>,
}

/// Finds who each event of a reading is of (see the crate's
/// documentation): give it every event in order.
pub struct Attribution {
    kernel: Vec<Option<bool>>,
    threads: Threads,
    look: Lookups,
}

impl Default for Attribution {
    fn default() -> Attribution {
        Attribution {
            kernel: Vec::new(),
            threads: Threads::default(),
            look: Lookups::new(),
        }
    }
}

impl Attribution {
    /// The CPU of the event `c` points at (its packet's `cpu_id`).
    pub fn cpu(&mut self, c: &StreamCursor) -> Option<i64> {
        self.look.cpu_id.get(c).and_then(|v| v.as_i64())
    }

    /// Who event `m` is of.
    pub fn of(&mut self, m: &Msg) -> Who {
        let cpu = self.cpu(m.cursor);
        self.of_with_cpu(m, cpu)
    }

    fn of_with_cpu(&mut self, m: &Msg, cpu: Option<i64>) -> Who {
        let c = m.cursor;
        if self.kernel.len() <= m.trace {
            self.kernel.resize(m.trace + 1, None);
        }
        let kernel = *self.kernel[m.trace].get_or_insert_with(
            || matches!(c.trace.meta().env_get("domain"), Some(EnvValue::Str(d)) if d == "kernel"),
        );
        let look = &mut self.look;
        let int = |f: &mut CtfField| f.get(c).and_then(|v| v.as_i64());
        let text = |f: &mut CtfField| f.get(c).and_then(|v| v.as_str()).map(|s| s.into_owned());
        let mut tid = int(&mut look.vtid)
            .or_else(|| int(&mut look.tid))
            .or_else(|| int(&mut look.common_pid));
        let mut pid = int(&mut look.vpid).or_else(|| int(&mut look.pid));
        let mut procname = text(&mut look.procname);
        let name = c.event_name();
        if kernel {
            let th = &mut self.threads;
            if let Some(cpu) = cpu {
                if tid.is_none() {
                    if let Some((t, n)) = th.running.get(&(m.trace, cpu)) {
                        tid = Some(*t);
                        if procname.is_none() {
                            procname = Some(n.clone());
                        }
                    } else if name == "sched_switch" {
                        tid = int(&mut look.prev_tid).or_else(|| int(&mut look.prev_pid));
                    }
                }
                if name == "sched_switch" {
                    if let Some(next) = int(&mut look.next_tid).or_else(|| int(&mut look.next_pid))
                    {
                        let comm = text(&mut look.next_comm).unwrap_or_default();
                        th.running.insert((m.trace, cpu), (next, comm));
                    }
                }
            }
            match name {
                "lttng_statedump_process_state" => {
                    if let (Some(t), Some(p)) = (int(&mut look.sd_tid), int(&mut look.sd_pid)) {
                        let n = text(&mut look.sd_name).unwrap_or_default();
                        th.procs.insert((m.trace, t), (p, n));
                    }
                }
                "sched_process_fork" => {
                    if let (Some(t), Some(p)) = (int(&mut look.child_tid), int(&mut look.child_pid))
                    {
                        let n = text(&mut look.child_comm).unwrap_or_default();
                        th.procs.insert((m.trace, t), (p, n));
                    }
                }
                _ => {}
            }
            if let Some(t) = tid {
                if let Some((p, n)) = th.procs.get(&(m.trace, t)) {
                    pid = pid.or(Some(*p));
                    if procname.is_none() {
                        procname = Some(n.clone());
                    }
                }
            }
        }
        Who {
            cpu,
            tid,
            pid,
            procname,
        }
    }
}

/// An events table without rows (its schema), for a trace without
/// events.
pub fn empty_events(trace_column: bool) -> Result<RecordBatch, ArrowError> {
    EventsTable::new(trace_column).finish()
}

/// Turns the events of a reading into batches.
pub struct Batcher {
    opts: Options,
    classes: Vec<ClassTable>,
    by_class: FxHashMap<(usize, usize, usize), usize>,
    last: Option<((usize, usize, usize), usize)>,
    events: Vec<Option<EventsTable>>,
    who: Attribution,
    seq: i64,
    ready: Vec<Batch>,
}

impl Batcher {
    pub fn new(opts: Options) -> Batcher {
        Batcher {
            opts,
            classes: Vec::new(),
            by_class: FxHashMap::default(),
            last: None,
            events: Vec::new(),
            who: Attribution::default(),
            seq: 0,
            ready: Vec::new(),
        }
    }

    /// Number of events appended so far.
    pub fn events(&self) -> u64 {
        self.seq as u64
    }

    /// Appends message `m` (notices are not rows of these tables). The
    /// batches it completes are then in [`Batcher::take_ready`].
    pub fn push(&mut self, m: &Msg) -> Result<(), ArrowError> {
        if m.item != Item::Event {
            return Ok(());
        }
        let c = m.cursor;
        let seq = self.seq;
        self.seq += 1;
        let key = (m.trace, c.stream, c.event.event);
        let ti = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let i = match self.by_class.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.classes.len();
                        self.classes.push(self.class_table(m));
                        self.by_class.insert(key, i);
                        i
                    }
                };
                self.last = Some((key, i));
                i
            }
        };
        let cpu = self.who.cpu(c);
        // The class's table.
        let t = &mut self.classes[ti];
        t.seq.push(seq);
        t.ts.push_opt(m.ns);
        t.cpu.push_opt(cpu);
        if let Some(s) = &mut t.trace_name {
            s.push(m.label.name.as_bytes());
        }
        let sp = &c.trace.class.streams[c.stream];
        let ep = sp.event(c.event.event);
        let plans = [&sp.event_common_context, &ep.context, &ep.payload];
        let values = [
            c.event.common_context(),
            c.event.specific_context(),
            c.event.payload(),
        ];
        for k in 0..3 {
            if let Some((root, col)) = &mut t.scopes[k] {
                let w = Walk {
                    plan: plans[k],
                    values: values[k],
                    data: c.data(),
                };
                col.push(&w, *root, &mut 0);
            }
        }
        t.rows += 1;
        if t.rows >= self.opts.batch_rows || t.bytes() >= MAX_BYTES {
            let b = t.finish()?;
            let (trace, table) = (t.trace, t.table.clone());
            self.ready.push(Batch {
                trace,
                table,
                batch: b,
            });
        }
        self.push_events_row(m, seq, cpu)
    }

    fn push_events_row(&mut self, m: &Msg, seq: i64, cpu: Option<i64>) -> Result<(), ArrowError> {
        let c = m.cursor;
        if self.events.len() <= m.trace {
            self.events.resize_with(m.trace + 1, || None);
        }
        let who = self.who.of_with_cpu(m, cpu);
        let (tid, pid, procname) = (who.tid, who.pid, who.procname);
        let name = c.event_name();
        let trace_column = self.opts.trace_column;
        let e = self.events[m.trace].get_or_insert_with(|| EventsTable::new(trace_column));
        e.seq.push(seq);
        e.ts.push_opt(m.ns);
        e.name.push(name.as_bytes());
        let sc = &c.trace.class.streams[c.stream];
        e.stream_id
            .push(c.trace.class.meta.streams[sc.class].id as i64);
        e.stream.push(c.source as i64);
        e.cpu.push_opt(cpu);
        e.tid.push_opt(tid);
        e.pid.push_opt(pid);
        match procname {
            Some(p) => e.procname.push(p.as_bytes()),
            None => e.procname.push_null(),
        }
        e.loglevel.push_opt(c.event_class().loglevel);
        if let Some(s) = &mut e.trace_name {
            s.push(m.label.name.as_bytes());
        }
        e.rows += 1;
        if e.rows >= self.opts.batch_rows || e.name.bytes() + e.procname.bytes() >= MAX_BYTES {
            let b = e.finish()?;
            self.ready.push(Batch {
                trace: m.trace,
                table: Table::Events,
                batch: b,
            });
        }
        Ok(())
    }

    fn class_table(&self, m: &Msg) -> ClassTable {
        let c = m.cursor;
        let sp = &c.trace.class.streams[c.stream];
        let ep = sp.event(c.event.event);
        let ec = c.event_class();
        let plans = [&sp.event_common_context, &ep.context, &ep.payload];
        let scopes = plans.map(|p| p.root.filter(|_| p.visible()).map(|r| (r, Col::of(p, r))));
        ClassTable {
            trace: m.trace,
            table: Table::Class {
                name: ec.name.clone(),
                stream_class: c.trace.class.meta.streams[sp.class].id,
                event_id: ec.id,
            },
            seq: Prim::default(),
            ts: Prim::default(),
            cpu: Prim::default(),
            trace_name: self.opts.trace_column.then(Strs::default),
            scopes,
            rows: 0,
        }
    }

    /// The batches completed so far.
    pub fn take_ready(&mut self) -> Vec<Batch> {
        std::mem::take(&mut self.ready)
    }

    /// Every remaining row, as batches (the tables are then empty).
    pub fn finish(&mut self) -> Result<Vec<Batch>, ArrowError> {
        let mut out = self.take_ready();
        for t in &mut self.classes {
            if t.rows > 0 {
                out.push(Batch {
                    trace: t.trace,
                    table: t.table.clone(),
                    batch: t.finish()?,
                });
            }
        }
        for (trace, e) in self.events.iter_mut().enumerate() {
            if let Some(e) = e.as_mut().filter(|e| e.rows > 0) {
                out.push(Batch {
                    trace,
                    table: Table::Events,
                    batch: e.finish()?,
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
