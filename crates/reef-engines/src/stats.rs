//! Statistics of what a trace holds: events per name, per stream (with
//! its CPU), per thread and per process; time range, rates; discarded
//! events and packets — what `reef stats` reports, as a [`Stats`] value
//! that serializes with serde.
//!
//! ```
//! use reef_read::{ReadOptions, Source};
//! let mut src = Source::open(&ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]))?;
//! let (stats, stopped) = reef_engines::stats::collect(&mut src);
//! assert!(stopped.is_none());
//! assert_eq!(stats.events, stats.event_names.iter().map(|n| n.count).sum::<u64>());
//! # Ok::<(), reef_read::Error>(())
//! ```
//!
//! Memory grows with streams, event classes, threads and processes, not
//! with events.

use std::collections::HashMap;
use std::ops::ControlFlow;

use reef_ctf::access::{Field, Scopes};
use reef_ctf::Item;
use reef_read::{Msg, Source};
use serde::Serialize;

/// What a trace holds (see the module documentation).
#[derive(Serialize, Default, Debug, Clone)]
pub struct Stats {
    pub events: u64,
    /// Nanoseconds from the clock's origin (the Epoch for LTTng and libreef).
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub duration_ns: Option<i64>,
    /// Events per second over `duration_ns`.
    pub rate_per_s: Option<f64>,
    pub packets: u64,
    pub discarded_events: u64,
    pub discarded_packets: u64,
    pub event_names: Vec<NameRow>,
    pub streams: Vec<StreamRow>,
    pub threads: Vec<ThreadRow>,
    pub processes: Vec<ProcessRow>,
}

#[derive(Serialize, Debug, Clone)]
pub struct NameRow {
    pub name: String,
    pub count: u64,
    pub rate_per_s: Option<f64>,
}

#[derive(Serialize, Default, Debug, Clone)]
pub struct StreamRow {
    pub trace: String,
    pub path: String,
    pub cpu_id: Option<u64>,
    pub events: u64,
    pub packets: u64,
    pub discarded_events: u64,
    pub discarded_packets: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct ThreadRow {
    pub trace: String,
    pub tid: i64,
    pub pid: Option<i64>,
    pub name: Option<String>,
    pub events: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct ProcessRow {
    pub trace: String,
    pub pid: i64,
    pub name: Option<String>,
    pub events: u64,
}

/// Events, pid and name of a thread.
type Thread = (u64, Option<i64>, Option<String>);

/// Context fields that identify an event's thread and process: the first
/// of each list an event has is used.
struct Who {
    tid: [Field; 3],
    pid: [Field; 3],
    name: [Field; 3],
}

/// What `collect` keeps per stream.
struct StreamAcc {
    /// Events per event class (index into the stream's plans).
    counts: Vec<u64>,
    /// Per event class: which of `who.tid` gives its thread (`Some(None)`:
    /// none does), once known.
    tid_field: Vec<Option<Option<usize>>>,
    /// Fields per stream, so that their per-class caches rarely miss.
    who: Who,
    cpu: Field,
    packets_seen: u64,
    last_tid: Option<i64>,
    last_row: usize,
}

impl StreamAcc {
    fn new() -> StreamAcc {
        // Kernel and UST traces carry these in the event contexts; libreef
        // in the packet context of each thread's stream.
        let ctx = |n: &str| Field::in_scopes(n, Scopes::Context);
        let pkt = |n: &str| Field::in_scopes(n, Scopes::PacketContext);
        StreamAcc {
            counts: Vec::new(),
            tid_field: Vec::new(),
            who: Who {
                tid: [ctx("vtid"), ctx("tid"), pkt("tid")],
                pid: [ctx("vpid"), ctx("pid"), pkt("pid")],
                name: [ctx("procname"), ctx("thread_name"), pkt("thread_name")],
            },
            cpu: Field::in_scopes("cpu_id", Scopes::PacketContext),
            packets_seen: u64::MAX,
            last_tid: None,
            last_row: 0,
        }
    }
}

fn first_int(fields: &mut [Field], cur: &reef_ctf::StreamCursor) -> Option<i64> {
    fields
        .iter_mut()
        .find_map(|f| f.get(cur).and_then(|v| v.as_i64()))
}

/// Events per second over a duration, when it is positive.
pub fn rate(count: u64, duration_ns: Option<i64>) -> Option<f64> {
    duration_ns
        .filter(|d| *d > 0)
        .map(|d| count as f64 * 1e9 / d as f64)
}

/// Builds a [`Stats`] from the messages of a [`Source`], one at a time (a
/// live front end can call [`StatsCollector::stats`] whenever it likes).
pub struct StatsCollector {
    st: Stats,
    streams: Vec<StreamRow>,
    /// Per stream: events per event class, and where its thread is.
    acc: Vec<StreamAcc>,
    /// (trace, tid) -> index in `threads`.
    thread_idx: HashMap<(usize, i64), usize>,
    threads: Vec<(usize, i64, Thread)>,
}

/// Reads `src` to its end into a [`Stats`], with the error that stopped
/// the reading, if any (the statistics then cover what was read before).
pub fn collect(src: &mut Source) -> (Stats, Option<reef_read::Error>) {
    let mut c = StatsCollector::new(src);
    let stopped = src
        .for_each_message(|m| {
            c.message(m);
            Ok::<_, std::convert::Infallible>(ControlFlow::Continue(()))
        })
        .unwrap_or_else(|never| match never {});
    (c.stats(src), stopped)
}

impl StatsCollector {
    /// A collector for the streams of `src`.
    pub fn new(src: &Source) -> StatsCollector {
        let nstreams = src.cursors().len();
        StatsCollector {
            st: Stats::default(),
            streams: (0..nstreams).map(|_| StreamRow::default()).collect(),
            acc: (0..nstreams).map(|_| StreamAcc::new()).collect(),
            thread_idx: HashMap::new(),
            threads: Vec::new(),
        }
    }

    /// Counts one message.
    pub fn message(&mut self, m: &Msg<'_>) {
        let st = &mut self.st;
        let row = &mut self.streams[m.stream];
        let a = &mut self.acc[m.stream];
        if row.path.is_empty() {
            row.trace = m.label.name.clone();
            row.path = m
                .cursor
                .file_path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
        }
        match m.item {
            Item::Event => {
                st.events += 1;
                row.events += 1;
                if let Some(ns) = m.ns {
                    st.first_ns.get_or_insert(ns);
                    st.last_ns = Some(ns);
                    row.first_ns.get_or_insert(ns);
                    row.last_ns = Some(ns);
                }
                if row.cpu_id.is_none() && a.packets_seen != m.cursor.packets_read {
                    // Once per packet until found.
                    a.packets_seen = m.cursor.packets_read;
                    row.cpu_id = a.cpu.get(m.cursor).and_then(|v| v.as_u64());
                }
                let ev = m.cursor.event.event;
                if ev >= a.counts.len() {
                    a.counts.resize(ev + 1, 0);
                    a.tid_field.resize(ev + 1, None);
                }
                a.counts[ev] += 1;
                let who = &mut a.who;
                let which = *a.tid_field[ev].get_or_insert_with(|| {
                    who.tid
                        .iter_mut()
                        .position(|f| f.get(m.cursor).and_then(|v| v.as_i64()).is_some())
                });
                let Some(which) = which else { return };
                let Some(tid) = a.who.tid[which].get(m.cursor).and_then(|v| v.as_i64()) else {
                    return;
                };
                if a.last_tid != Some(tid) {
                    // The stream's thread changed: find its row, refresh its
                    // process and name.
                    a.last_tid = Some(tid);
                    let threads = &mut self.threads;
                    a.last_row = *self.thread_idx.entry((m.trace, tid)).or_insert_with(|| {
                        threads.push((m.trace, tid, (0, None, None)));
                        threads.len() - 1
                    });
                    let e = &mut self.threads[a.last_row].2;
                    if let Some(pid) = first_int(&mut a.who.pid, m.cursor) {
                        e.1 = Some(pid);
                    }
                    if let Some(n) = a
                        .who
                        .name
                        .iter_mut()
                        .find_map(|f| f.get(m.cursor).and_then(|v| v.as_str()))
                    {
                        if e.2.as_deref() != Some(&*n) {
                            e.2 = Some(n.into_owned());
                        }
                    }
                }
                self.threads[a.last_row].2 .0 += 1;
            }
            Item::DiscardedEvents { count, .. } => {
                let n = count.unwrap_or(0);
                st.discarded_events += n;
                row.discarded_events += n;
            }
            Item::DiscardedPackets { count, .. } => {
                st.discarded_packets += count;
                row.discarded_packets += count;
            }
        }
    }

    /// The statistics of the messages counted so far (`src`: the source
    /// they came from, for packet counts and names).
    pub fn stats(&self, src: &Source) -> Stats {
        let mut st = self.st.clone();
        let mut streams = self.streams.clone();
        let mut names: HashMap<String, u64> = HashMap::new();
        for (i, a) in self.acc.iter().enumerate() {
            let c = &src.cursors()[i];
            let sp = &c.trace.class.streams[c.stream];
            let classes = &c.trace.class.meta.streams[sp.class].events;
            for (ev, n) in a.counts.iter().enumerate() {
                if *n > 0 {
                    let name = &classes[sp.events[ev].class].name;
                    *names.entry(name.clone()).or_default() += n;
                }
            }
        }
        for (i, c) in src.cursors().iter().enumerate() {
            streams[i].packets = c.packets_read;
            st.packets += c.packets_read;
            if streams[i].path.is_empty() {
                let t = &c.trace;
                streams[i].trace = src.labels[src.trace_of[i]].name.clone();
                streams[i].path = t.sources[c.source]
                    .files
                    .first()
                    .map(|f| f.path.display().to_string())
                    .unwrap_or_default();
            }
        }
        st.duration_ns = st.first_ns.zip(st.last_ns).map(|(f, l)| l - f);
        st.rate_per_s = rate(st.events, st.duration_ns);
        let mut names: Vec<NameRow> = names
            .into_iter()
            .map(|(name, count)| NameRow {
                rate_per_s: rate(count, st.duration_ns),
                name,
                count,
            })
            .collect();
        names.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        st.event_names = names;
        st.streams = streams;
        let label = |t: usize| src.labels[t].name.clone();
        let mut procs: HashMap<(usize, i64), (u64, Option<String>)> = HashMap::new();
        let mut trows: Vec<ThreadRow> = Vec::new();
        for (t, tid, (events, pid, name)) in self.threads.iter().cloned() {
            if let Some(pid) = pid {
                let p = procs.entry((t, pid)).or_insert((0, None));
                p.0 += events;
                if tid == pid || p.1.is_none() {
                    p.1.clone_from(&name);
                }
            }
            trows.push(ThreadRow {
                trace: label(t),
                tid,
                pid,
                name,
                events,
            });
        }
        trows.sort_by(|a, b| b.events.cmp(&a.events).then(a.tid.cmp(&b.tid)));
        st.threads = trows;
        let mut prows: Vec<ProcessRow> = procs
            .into_iter()
            .map(|((t, pid), (events, name))| ProcessRow {
                trace: label(t),
                pid,
                name,
                events,
            })
            .collect();
        prows.sort_by(|a, b| b.events.cmp(&a.events).then(a.pid.cmp(&b.pid)));
        st.processes = prows;
        st
    }
}
