//! A reading written in Chrome's Trace Event format (JSON), which
//! about:tracing and Perfetto's UI open.
//!
//! - Every event is an instant (`ph: "i"`, thread scope) on its thread
//!   (`pid`, `tid`: the process and thread of `reef_arrow::Attribution`),
//!   its fields in `args` (payload members by name, the contexts under
//!   `ctx` and `stream_ctx`; an enumeration gives its label, or its integer
//!   when no label maps). An event of no known thread (or of thread 0, the
//!   idle one) goes to its CPU's row of the `CPUs` process, or to its
//!   stream's row of the `streams` process.
//! - LTTng kernel traces get slices (`B`/`E`): what each CPU runs, from
//!   `sched_switch` to `sched_switch` (rows `CPU n`), and interrupts
//!   (`irq_handler_*`, `softirq_*`) on rows `CPU n IRQ`. Slices of a row
//!   nest: an end closes the slices opened after its own first, and the
//!   slices still open at the end of the reading end at its last event.
//!   Each thread's system calls are complete events (`X`, category
//!   `syscall`) on the thread, as the kernel model of `reef syscallstats`
//!   pairs entries and exits (the rows of the Parquet `syscalls` table),
//!   written when they end.
//! - Activities (one definition of `reef activities`, if given): complete
//!   events (`X`, category `activity`) on the rows of the `activities`
//!   process, one row per lane of a group (`activity::ActivitySlices`).
//! - Names: `M` events name processes and threads as the trace last
//!   named them.
//! - Times (`ts`, µs with three decimals: exact nanoseconds) count from
//!   the reading's first event, whose time from the clock's origin is
//!   `otherData.reef_origin_ns` (a double holds about 16 digits: absolute
//!   times in µs would lose the nanoseconds). Events without a time are
//!   left out. Events are written in time order (but `X` events, written
//!   at their end), so the times of a row's `B`, `E` and `i` events never
//!   decrease.
//! - Processes of the second and later traces of a reading are numbered
//!   from `trace × 2^23`, clear of Linux's pids (at most 2^22); the `CPUs`
//!   and `streams` processes of trace `t` are `2^22 + 1 + 2t` and
//!   `2^22 + 2 + 2t`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::Path;

use reef_arrow::{Attribution, Who};
use reef_ctf::access::{Field as CtfField, Scopes};
use reef_ctf::decode::Value;
use reef_ctf::plan::{Node, Plan, NONE};
use reef_ctf::{EnvValue, Item, StreamCursor};
use reef_read::Source;
use serde_json::{json, Map, Value as Json};

use crate::activity::ActivitySlices;
use crate::counter::{self, Counter, Num};
use crate::kernel::Kernel;
use crate::Error;

const PSEUDO: i64 = 1 << 22;

fn cpus_pid(trace: usize) -> i64 {
    PSEUDO + 1 + 2 * trace as i64
}

fn streams_pid(trace: usize) -> i64 {
    PSEUDO + 2 + 2 * trace as i64
}

/// Whether `pid` is one of the pseudo processes (`CPUs`, `streams`).
pub(crate) fn is_pseudo(pid: i64) -> bool {
    pid > PSEUDO && pid < 2 * PSEUDO
}

/// The pseudo process of the activities' lanes.
pub(crate) const ACTIVITIES_PID: i64 = 2 * PSEUDO - 1;

pub(crate) fn real_pid(trace: usize, pid: i64) -> i64 {
    pid + ((trace as i64) << 23)
}

/// A row: (pid, tid).
pub(crate) type Row = (i64, i64);

/// The names of processes and rows (threads, CPUs, streams) as the
/// reading last gave them.
#[derive(Default)]
pub(crate) struct Names {
    pub process: BTreeMap<i64, String>,
    pub thread: BTreeMap<Row, String>,
}

struct Out<W: Write> {
    w: W,
    first: bool,
    origin: Option<i64>,
    /// Open slices per row, innermost last.
    open: BTreeMap<Row, Vec<String>>,
    names: Names,
}

fn ts_text(rel: i64) -> String {
    let sign = if rel < 0 { "-" } else { "" };
    let a = rel.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

impl<W: Write> Out<W> {
    fn event(&mut self, e: Map<String, Json>, ns: i64) -> std::io::Result<()> {
        let origin = *self.origin.get_or_insert(ns);
        let mut text = serde_json::to_string(&e).map_err(std::io::Error::other)?;
        // `ts` as exact decimal text (a JSON number), last.
        text.pop();
        text.push_str(if e.is_empty() { "\"ts\":" } else { ",\"ts\":" });
        text.push_str(&ts_text(ns - origin));
        text.push('}');
        self.w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        self.w.write_all(text.as_bytes())
    }

    /// A complete event (`X`) of `dur` ns: its `dur` in µs as exact text.
    fn event_dur(&mut self, mut e: Map<String, Json>, ns: i64, dur: i64) -> std::io::Result<()> {
        e.remove("dur");
        let origin = *self.origin.get_or_insert(ns);
        let mut text = serde_json::to_string(&e).map_err(std::io::Error::other)?;
        text.pop();
        text.push_str(&format!(
            ",\"dur\":{},\"ts\":{}}}",
            ts_text(dur),
            ts_text(ns - origin)
        ));
        self.w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        self.w.write_all(text.as_bytes())
    }

    fn begin(&mut self, row: Row, name: &str, ns: i64, args: Json) -> std::io::Result<()> {
        self.open.entry(row).or_default().push(name.to_string());
        let e = json!({"ph": "B", "name": name, "pid": row.0, "tid": row.1, "args": args});
        self.event(obj(e), ns)
    }

    /// Ends the slice `name` of `row` (and those opened inside it), if open.
    fn end(&mut self, row: Row, name: &str, ns: i64) -> std::io::Result<()> {
        let Some(stack) = self.open.get_mut(&row) else {
            return Ok(());
        };
        let Some(at) = stack.iter().rposition(|n| n == name) else {
            return Ok(());
        };
        let n = stack.len() - at;
        stack.truncate(at);
        for _ in 0..n {
            let e = json!({"ph": "E", "pid": row.0, "tid": row.1});
            self.event(obj(e), ns)?;
        }
        Ok(())
    }

    /// Ends every slice of `row`.
    fn end_all(&mut self, row: Row, ns: i64) -> std::io::Result<()> {
        let n = self.open.remove(&row).map_or(0, |s| s.len());
        for _ in 0..n {
            self.event(obj(json!({"ph": "E", "pid": row.0, "tid": row.1})), ns)?;
        }
        Ok(())
    }
}

fn obj(v: Json) -> Map<String, Json> {
    match v {
        Json::Object(m) => m,
        _ => Map::new(),
    }
}

/// The kernel events that make slices, by their fields.
struct KernelFields {
    next_tid: CtfField,
    /// ftrace's name of `next_tid` (a .dat file's events keep it).
    next_pid: CtfField,
    next_comm: CtfField,
    irq: CtfField,
    name: CtfField,
    vec: CtfField,
}

/// Writes the events of `src` to `path`. Returns how many events were
/// written and the reading error that stopped it, if any (the file then
/// holds everything before it, and is valid JSON).
pub fn write(
    mut src: Source,
    path: &Path,
    mut activities: Option<&mut ActivitySlices>,
    counters: &mut [Counter],
) -> Result<(u64, Option<reef_read::Error>), Error> {
    let f = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = Out {
        w: BufWriter::new(f),
        first: true,
        origin: None,
        open: BTreeMap::new(),
        names: Names::default(),
    };
    let io = |e: std::io::Error| Error::io(path, e);
    out.w
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")
        .map_err(io)?;
    let kernel: Vec<bool> = src
        .traces
        .iter()
        .map(|t| matches!(t.meta().env_get("domain"), Some(EnvValue::Str(d)) if d == "kernel"))
        .collect();
    let mut kf = KernelFields {
        next_tid: CtfField::in_scopes("next_tid", Scopes::Payload),
        next_pid: CtfField::in_scopes("next_pid", Scopes::Payload),
        next_comm: CtfField::in_scopes("next_comm", Scopes::Payload),
        irq: CtfField::in_scopes("irq", Scopes::Payload),
        name: CtfField::in_scopes("name", Scopes::Payload),
        vec: CtfField::in_scopes("vec", Scopes::Payload),
    };
    let mut models: Vec<Option<Kernel>> =
        kernel.iter().map(|&k| k.then(Kernel::calls_only)).collect();
    let mut who = Attribution::default();
    let mut events = 0u64;
    let mut last_ns = None;
    let stopped = src.for_each_message(|m| {
        let (Item::Event, Some(ns)) = (m.item, m.ns) else {
            return Ok(ControlFlow::Continue(()));
        };
        let c = m.cursor;
        let w = who.of(m);
        let row = row_of(m.trace, c, &w, &mut out.names);
        let name = c.event_name();
        if kernel[m.trace] {
            kernel_slices(&mut out, &mut kf, m.trace, c, &w, name, ns).map_err(io)?;
        }
        if let Some(k) = models[m.trace].as_mut() {
            k.event(c, ns);
            for call in k.take_calls() {
                let pid = real_pid(m.trace, call.pid.unwrap_or(call.tid));
                out.names.thread.entry((pid, call.tid)).or_insert(call.comm);
                let e = json!({"ph": "X", "name": call.name, "cat": "syscall", "pid": pid, "tid": call.tid,
                               "dur": Json::Null});
                out.event_dur(obj(e), call.begin, call.end - call.begin).map_err(io)?;
            }
        }
        if let Some(a) = activities.as_deref_mut() {
            for p in a.event(m, ns) {
                let row = (ACTIVITIES_PID, p.lane as i64);
                out.names.process.insert(ACTIVITIES_PID, "activities".into());
                out.names.thread.insert(row, p.lane_name);
                let iv = p.interval;
                let mut args = Map::new();
                args.insert("group".into(), json!(iv.group));
                for (k, v) in iv.captures {
                    args.insert(k, json!(v));
                }
                let e = json!({"ph": "X", "name": a.name, "cat": "activity", "pid": row.0, "tid": row.1,
                               "args": args});
                out.event_dur(obj(e), iv.begin_ns, iv.duration_ns).map_err(io)?;
            }
        }
        for (i, v) in counter::values(counters, c) {
            let v = match v {
                Num::Int(i) => json!(i),
                Num::Float(f) => json!(f),
            };
            let e = json!({"ph": "C", "name": counters[i].name, "pid": row.0, "args": {"value": v}});
            out.event(obj(e), ns).map_err(io)?;
        }
        let cat = name.split_once(':').map_or(if kernel[m.trace] { "kernel" } else { "event" }, |p| p.0);
        let e = json!({"ph": "i", "s": "t", "name": name, "cat": cat, "pid": row.0, "tid": row.1, "args": args(c)});
        out.event(obj(e), ns).map_err(io)?;
        events += 1;
        last_ns = Some(ns);
        Ok::<_, Error>(ControlFlow::Continue(()))
    })?;
    if let Some(end) = last_ns {
        let rows: Vec<Row> = out.open.keys().copied().collect();
        for r in rows {
            out.end_all(r, end).map_err(io)?;
        }
    }
    let meta_ns = out.origin.unwrap_or(0);
    let pnames = std::mem::take(&mut out.names.process);
    for (pid, name) in pnames {
        let e = json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}});
        out.event(obj(e), meta_ns).map_err(io)?;
    }
    let tnames = std::mem::take(&mut out.names.thread);
    for ((pid, tid), name) in tnames {
        let e = json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}});
        out.event(obj(e), meta_ns).map_err(io)?;
    }
    let origin = out.origin.map_or(Json::Null, |o| json!(o));
    let tail =
        format!("\n],\"otherData\":{{\"reef_origin_ns\":{origin},\"reef_events\":{events}}}}}\n");
    out.w.write_all(tail.as_bytes()).map_err(io)?;
    out.w.flush().map_err(io)?;
    Ok((events, stopped))
}

/// The row of an event, named on the way.
pub(crate) fn row_of(trace: usize, c: &StreamCursor, w: &Who, names: &mut Names) -> Row {
    match (w.tid, w.cpu) {
        (Some(tid), _) if tid != 0 => {
            let pid = real_pid(trace, w.pid.unwrap_or(tid));
            match &w.procname {
                Some(n) => {
                    names.thread.insert((pid, tid), n.clone());
                    if w.pid.is_none_or(|p| p == tid) {
                        names.process.insert(pid, n.clone());
                    }
                }
                None => {
                    names
                        .thread
                        .entry((pid, tid))
                        .or_insert_with(|| format!("thread {tid}"));
                }
            }
            (pid, tid)
        }
        (_, Some(cpu)) => {
            let pid = cpus_pid(trace);
            names.process.entry(pid).or_insert_with(|| "CPUs".into());
            names
                .thread
                .entry((pid, cpu))
                .or_insert_with(|| format!("CPU {cpu}"));
            (pid, cpu)
        }
        _ => {
            let pid = streams_pid(trace);
            names.process.entry(pid).or_insert_with(|| "streams".into());
            let s = c.source as i64;
            names.thread.entry((pid, s)).or_insert_with(|| {
                c.file_path()
                    .map_or(format!("stream {s}"), |p| p.display().to_string())
            });
            (pid, s)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn kernel_slices<W: Write>(
    out: &mut Out<W>,
    kf: &mut KernelFields,
    trace: usize,
    c: &StreamCursor,
    w: &Who,
    name: &str,
    ns: i64,
) -> std::io::Result<()> {
    let int = |f: &mut CtfField| f.get(c).and_then(|v| v.as_i64());
    let text = |f: &mut CtfField| {
        f.get(c)
            .and_then(|v| v.as_str())
            .map(|s| s.into_owned())
            .unwrap_or_default()
    };
    let Some(cpu) = w.cpu else { return Ok(()) };
    let cpu_row = (cpus_pid(trace), cpu);
    let irq_row = (cpus_pid(trace), (1 << 20) + cpu);
    if name == "sched_switch" {
        out.end_all(cpu_row, ns)?;
        let next = int(&mut kf.next_tid).or_else(|| int(&mut kf.next_pid));
        if let Some(next) = next.filter(|&t| t != 0) {
            let comm = text(&mut kf.next_comm);
            out.names
                .thread
                .entry(cpu_row)
                .or_insert_with(|| format!("CPU {cpu}"));
            out.begin(cpu_row, &comm, ns, json!({"tid": next}))?;
        }
    } else if name == "irq_handler_entry" {
        let irq = int(&mut kf.irq).unwrap_or(-1);
        let n = text(&mut kf.name);
        out.names
            .thread
            .entry(irq_row)
            .or_insert_with(|| format!("CPU {cpu} IRQ"));
        out.begin(
            irq_row,
            &format!("irq {irq}"),
            ns,
            json!({"irq": irq, "name": n}),
        )?;
    } else if name == "irq_handler_exit" {
        let irq = int(&mut kf.irq).unwrap_or(-1);
        out.end(irq_row, &format!("irq {irq}"), ns)?;
    } else if name == "softirq_entry" {
        let vec = int(&mut kf.vec).unwrap_or(-1);
        out.names
            .thread
            .entry(irq_row)
            .or_insert_with(|| format!("CPU {cpu} IRQ"));
        out.begin(irq_row, &format!("softirq {vec}"), ns, json!({"vec": vec}))?;
    } else if name == "softirq_exit" {
        let vec = int(&mut kf.vec).unwrap_or(-1);
        out.end(irq_row, &format!("softirq {vec}"), ns)?;
    }
    Ok(())
}

/// The event's fields as JSON.
pub(crate) fn args(c: &StreamCursor) -> Json {
    let sp = &c.trace.class.streams[c.stream];
    let ep = sp.event(c.event.event);
    let mut m = match scope_json(&ep.payload, c.event.payload(), c.data()) {
        Json::Object(m) => m,
        _ => Map::new(),
    };
    for (key, plan, values) in [
        ("ctx", &ep.context, c.event.specific_context()),
        (
            "stream_ctx",
            &sp.event_common_context,
            c.event.common_context(),
        ),
    ] {
        if plan.visible() {
            m.insert(key.into(), scope_json(plan, values, c.data()));
        }
    }
    Json::Object(m)
}

fn scope_json(plan: &Plan, values: &[Value], data: &[u8]) -> Json {
    match plan.root {
        Some(r) if plan.visible() => node_json(plan, r, values, &mut 0, data),
        _ => Json::Object(Map::new()),
    }
}

fn node_json(plan: &Plan, n: u32, values: &[Value], vi: &mut usize, data: &[u8]) -> Json {
    let take = |vi: &mut usize| {
        let v = values.get(*vi).copied().unwrap_or(Value::U(0));
        *vi += 1;
        v
    };
    let text = |len: u64, v: Value| -> Json {
        match v {
            Value::Bytes { off, len: l } if len > 0 => {
                let b = &data[off..off + l];
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                Json::String(String::from_utf8_lossy(&b[..end]).into_owned())
            }
            _ => Json::String(String::new()),
        }
    };
    match plan.nodes[n as usize] {
        Node::Int { enum_idx, .. } | Node::VarInt { enum_idx, .. } => {
            let v = take(vi);
            let num = match v {
                Value::I(i) => json!(i),
                Value::U(u) => json!(u),
                _ => Json::Null,
            };
            if enum_idx == NONE {
                return num;
            }
            let key = match v {
                Value::I(i) => i as i128,
                Value::U(u) => u as i128,
                _ => return num,
            };
            let labels: Vec<&str> = plan.enums[enum_idx as usize].labels_for(key).collect();
            if labels.is_empty() {
                num
            } else {
                Json::String(labels.join(", "))
            }
        }
        Node::BigInt { size, le, .. } => match take(vi) {
            Value::Big { bit_off } => {
                let mut out = Vec::new();
                reef_print::big_int_hex(&mut out, data, bit_off, size, le);
                Json::String(String::from_utf8_lossy(&out).into_owned())
            }
            _ => Json::Null,
        },
        Node::Float { .. } => match take(vi) {
            Value::F(f) if f.is_finite() => json!(f),
            Value::F(f) => Json::String(f.to_string()),
            _ => Json::Null,
        },
        Node::String => match take(vi) {
            Value::Bytes { off, len } => {
                Json::String(String::from_utf8_lossy(&data[off..off + len]).into_owned())
            }
            _ => Json::Null,
        },
        // A BLOB as its bytes, a UTF-16/32 string as its code units.
        Node::Bytes { .. } => match take(vi) {
            Value::Bytes { off, len } => {
                Json::Array(data[off..off + len].iter().map(|&b| json!(b)).collect())
            }
            _ => Json::Null,
        },
        Node::Optional { child, .. } => match take(vi) {
            Value::Opt(1) => node_json(plan, child, values, vi, data),
            _ => Json::Null,
        },
        Node::Struct { first, count, .. } => {
            let mut m = Map::new();
            for i in first..first + count {
                let name = &plan.names[i as usize];
                let name = name.strip_prefix('_').unwrap_or(name);
                let v = node_json(plan, plan.children[i as usize], values, vi, data);
                m.insert(name.to_string(), v);
            }
            Json::Object(m)
        }
        Node::Variant { first, .. } => match take(vi) {
            Value::Opt(o) => node_json(plan, plan.children[(first + o) as usize], values, vi, data),
            _ => Json::Null,
        },
        Node::Array {
            length, text: true, ..
        } => {
            let v = if length > 0 { take(vi) } else { Value::U(0) };
            text(length, v)
        }
        Node::Array { length, elem, .. } => Json::Array(
            (0..length)
                .map(|_| node_json(plan, elem, values, vi, data))
                .collect(),
        ),
        Node::Sequence { text: true, .. } => {
            let len = match take(vi) {
                Value::Len(l) => l,
                _ => 0,
            };
            let v = if len > 0 { take(vi) } else { Value::U(0) };
            text(len, v)
        }
        Node::Sequence { elem, .. } => {
            let len = match take(vi) {
                Value::Len(l) => l,
                _ => 0,
            };
            Json::Array(
                (0..len)
                    .map(|_| node_json(plan, elem, values, vi, data))
                    .collect(),
            )
        }
    }
}
