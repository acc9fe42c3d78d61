//! `reef stats`: what a trace holds — events per name, per stream/CPU, per
//! thread and process; time range and rates; discarded events and packets.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use reef_ctf::access::{Field, Scopes};
use reef_ctf::Item;
use serde::Serialize;

use crate::source::{ReadOpts, Source};

#[derive(clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show at most this many rows per table (0: all).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub top: usize,
}

#[derive(Serialize, Default)]
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

#[derive(Serialize)]
pub struct NameRow {
    pub name: String,
    pub count: u64,
    pub rate_per_s: Option<f64>,
}

#[derive(Serialize, Default)]
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

#[derive(Serialize)]
pub struct ThreadRow {
    pub trace: String,
    pub tid: i64,
    pub pid: Option<i64>,
    pub name: Option<String>,
    pub events: u64,
}

#[derive(Serialize)]
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

pub fn rate(count: u64, duration_ns: Option<i64>) -> Option<f64> {
    duration_ns
        .filter(|d| *d > 0)
        .map(|d| count as f64 * 1e9 / d as f64)
}

/// Reads everything under `a.read` into a [`Stats`], with the error that
/// stopped the reading, if any.
pub fn collect(a: &StatsArgs) -> anyhow::Result<(Stats, Option<reef_ctf::Error>)> {
    let mut src = Source::open(&a.read)?;
    let nstreams = src.cursors().len();
    let mut st = Stats::default();
    let mut streams: Vec<StreamRow> = (0..nstreams).map(|_| StreamRow::default()).collect();
    // Per stream: events per event class, and where its thread is.
    let mut acc: Vec<StreamAcc> = (0..nstreams).map(|_| StreamAcc::new()).collect();
    // (trace, tid) -> index in `threads`.
    let mut thread_idx: HashMap<(usize, i64), usize> = HashMap::new();
    let mut threads: Vec<(usize, i64, Thread)> = Vec::new();
    // A decoding error ends the reading; what was read is still reported.
    let mut failure = None;
    loop {
        let m = match src.next() {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let row = &mut streams[m.stream];
        let a = &mut acc[m.stream];
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
                let Some(which) = which else { continue };
                let Some(tid) = a.who.tid[which].get(m.cursor).and_then(|v| v.as_i64()) else {
                    continue;
                };
                if a.last_tid != Some(tid) {
                    // The stream's thread changed: find its row, refresh its
                    // process and name.
                    a.last_tid = Some(tid);
                    a.last_row = *thread_idx.entry((m.trace, tid)).or_insert_with(|| {
                        threads.push((m.trace, tid, (0, None, None)));
                        threads.len() - 1
                    });
                    let e = &mut threads[a.last_row].2;
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
                threads[a.last_row].2 .0 += 1;
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
    let mut names: HashMap<String, u64> = HashMap::new();
    for (i, a) in acc.iter().enumerate() {
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
    for (t, tid, (events, pid, name)) in threads {
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
    Ok((st, failure))
}

/// A time in ns from the origin (the Epoch for LTTng and libreef) as a
/// UTC date and time with nanoseconds.
pub fn fmt_time(ns: Option<i64>) -> String {
    let Some(ns) = ns else { return "-".into() };
    let secs = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{nsec:09} UTC",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// A duration in ns as seconds with 9 decimals.
pub fn fmt_dur(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

fn fmt_rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.1}"))
}

/// A table with a header row. The first column and those whose header ends
/// with a space are left-aligned, the others right-aligned.
pub fn table(out: &mut dyn Write, head: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let left: Vec<bool> = head.iter().map(|h| h.ends_with(' ')).collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.trim_end().chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: &[String]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(w[i] - c.chars().count());
            if i == 0 || left[i] {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    let head: Vec<String> = head.iter().map(|h| h.trim_end().to_string()).collect();
    line(out, &head)?;
    for r in rows {
        line(out, r)?;
    }
    Ok(())
}

fn limit<T>(v: &[T], top: usize) -> &[T] {
    if top == 0 {
        v
    } else {
        &v[..top.min(v.len())]
    }
}

pub fn run(a: &StatsArgs) -> anyhow::Result<ExitCode> {
    let (st, failure) = collect(a)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &st)?;
        writeln!(out)?;
        return done(failure);
    }
    writeln!(out, "events             {}", st.events)?;
    writeln!(out, "first              {}", fmt_time(st.first_ns))?;
    writeln!(out, "last               {}", fmt_time(st.last_ns))?;
    writeln!(
        out,
        "duration           {} s",
        st.duration_ns.map_or("-".into(), fmt_dur)
    )?;
    writeln!(
        out,
        "rate               {} events/s",
        fmt_rate(st.rate_per_s)
    )?;
    writeln!(out, "packets            {}", st.packets)?;
    writeln!(out, "discarded events   {}", st.discarded_events)?;
    writeln!(out, "discarded packets  {}", st.discarded_packets)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = limit(&st.event_names, a.top)
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.count.to_string(),
                format!("{:.2}", r.count as f64 * 100.0 / st.events.max(1) as f64),
                fmt_rate(r.rate_per_s),
            ]
        })
        .collect();
    table(&mut out, &["event", "count", "%", "per second"], &rows)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = limit(&st.streams, a.top)
        .iter()
        .map(|r| {
            vec![
                r.path.clone(),
                r.cpu_id.map_or("-".into(), |c| c.to_string()),
                r.events.to_string(),
                r.packets.to_string(),
                r.discarded_events.to_string(),
                r.discarded_packets.to_string(),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "stream",
            "cpu",
            "events",
            "packets",
            "discarded events",
            "discarded packets",
        ],
        &rows,
    )?;
    if !st.threads.is_empty() {
        writeln!(out)?;
        let rows: Vec<Vec<String>> = limit(&st.threads, a.top)
            .iter()
            .map(|r| {
                vec![
                    r.tid.to_string(),
                    r.pid.map_or("-".into(), |p| p.to_string()),
                    r.events.to_string(),
                    r.name.clone().unwrap_or_default(),
                ]
            })
            .collect();
        table(&mut out, &["tid", "pid", "events", "name "], &rows)?;
    }
    if !st.processes.is_empty() {
        writeln!(out)?;
        let rows: Vec<Vec<String>> = limit(&st.processes, a.top)
            .iter()
            .map(|r| {
                vec![
                    r.pid.to_string(),
                    r.events.to_string(),
                    r.name.clone().unwrap_or_default(),
                ]
            })
            .collect();
        table(&mut out, &["pid", "events", "name "], &rows)?;
    }
    done(failure)
}

/// Success, or the error that stopped the reading (after the report).
fn done(failure: Option<reef_ctf::Error>) -> anyhow::Result<ExitCode> {
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        assert_eq!(fmt_time(Some(0)), "1970-01-01 00:00:00.000000000 UTC");
        // date -u -d @1400000000.5
        assert_eq!(
            fmt_time(Some(1_400_000_000_500_000_000)),
            "2014-05-13 16:53:20.500000000 UTC"
        );
        // date -u -d @951782400 (a leap day)
        assert_eq!(
            fmt_time(Some(951_782_400_000_000_000)),
            "2000-02-29 00:00:00.000000000 UTC"
        );
        assert_eq!(fmt_time(Some(-1)), "1969-12-31 23:59:59.999999999 UTC");
        assert_eq!(fmt_dur(1_500_000_001), "1.500000001");
    }
}
