//! System call statistics per thread, as `lttng-syscallstats`.
//!
//! - A call counts when its exit is seen (see [`crate::state`] for how
//!   entries and exits pair); its duration is exit time − entry time.
//! - Per thread (threads by call count, highest first; ties in order of
//!   first call): per system call (by count, ties in order of first call)
//!   count, min, average, max, sample standard deviation (unknown for 2
//!   calls or fewer, as lttng-analyses), and the return values counted as
//!   `success` (≥ 0) or the errno name.
//! - lttng-analyses counts the first occurrence of each return value twice;
//!   the return-value string reproduces that, so it matches its output.
//! - A thread's name and pid are those it had at its first counted call.

use crate::IndexMap;

use crate::event::Interest;
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::state::{Listener, Proc, State, Syscall};
use crate::stats::{errno_name, py_repr, Durations};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "System call statistics",
    description: "Per-TID and global system call statistics",
    tags: &["syscall", "stats"],
    tables: &[
        TableClass {
            name: "per-tid",
            title: "System call statistics",
            columns: &[
                col("System call", "syscall"),
                col_unit("Call count", "number", "calls"),
                col("Minimum call duration", "duration"),
                col("Average call duration", "duration"),
                col("Maximum call duration", "duration"),
                col("Call duration standard deviation", "duration"),
                col("Return values count", "string"),
            ],
        },
        TableClass {
            name: "total",
            title: "Per-TID system call statistics",
            columns: &[
                col("Process", "process"),
                col_unit("Total system call count", "number", "calls"),
            ],
        },
    ],
};

#[derive(Debug, Default)]
struct CallStats {
    d: Durations,
    /// Return value (every value ≥ 0 as 0) → count, in order of first
    /// appearance; named (and merged by name) for the tables only.
    rets: IndexMap<i64, u64>,
}

#[derive(Debug)]
struct ThreadStats {
    comm: String,
    pid: Option<i64>,
    total: u64,
    calls: IndexMap<String, CallStats>,
}

#[derive(Debug, Default)]
pub struct Syscallstats {
    tids: IndexMap<i64, ThreadStats>,
    /// With [`Syscallstats::with_log`]: every call counted, in the order
    /// they ended (begin, end, name, tid, thread name).
    log: Option<Vec<crate::stats::LoggedCall>>,
}

/// The calls [`Syscallstats::with_log`] lists (reef's own table:
/// lttng-analyses has no system call log).
pub static CALLS: TableClass = TableClass {
    name: "syscall-log",
    title: "System calls",
    columns: &[
        col("Call time range", "time-range"),
        col("System call", "syscall"),
        col("Process", "process"),
    ],
};

impl Syscallstats {
    pub fn new() -> Syscallstats {
        Syscallstats::default()
    }

    /// Also lists every call counted, in a [`CALLS`] table last.
    pub fn with_log() -> Syscallstats {
        Syscallstats {
            log: Some(Vec::new()),
            ..Syscallstats::default()
        }
    }
}

fn ret_key(ret: i64) -> String {
    if ret >= 0 {
        "success".to_string()
    } else {
        match errno_name(-ret) {
            Some(n) => n.to_string(),
            None => ret.to_string(),
        }
    }
}

impl Listener for Syscallstats {
    fn syscall_exit(&mut self, proc: &Proc, call: &Syscall, _cpu: i64) {
        let t = self.tids.entry(proc.tid).or_insert_with(|| ThreadStats {
            comm: proc.comm.clone(),
            pid: proc.pid,
            total: 0,
            calls: IndexMap::default(),
        });
        let c = match t.calls.get_mut(&*call.name) {
            Some(c) => c,
            None => t.calls.entry(call.name.to_string()).or_default(),
        };
        c.d.add(call.end - call.begin);
        if let Some(ret) = call.ret {
            *c.rets.entry(ret.min(0)).or_insert(0) += 1;
        }
        t.total += 1;
        if let Some(log) = &mut self.log {
            log.push((
                call.begin,
                call.end,
                call.name.to_string(),
                proc.tid,
                proc.comm.clone(),
            ));
        }
    }
}

impl Analysis for Syscallstats {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn interest(&self) -> Interest {
        Interest {
            syscalls: true,
            ..Interest::THREADS
        }
    }
    fn begin(&mut self, _ts: i64) {
        self.tids.clear();
        if let Some(l) = &mut self.log {
            l.clear();
        }
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let mut threads: Vec<(&i64, &ThreadStats)> = self.tids.iter().collect();
        threads.sort_by_key(|t| std::cmp::Reverse(t.1.total));
        let mut out = Vec::new();
        let mut total = Table::new(&m.tables[1], begin, end);
        for (tid, t) in threads {
            if t.total == 0 {
                continue;
            }
            let pid = t.pid.map_or("?".to_string(), |p| p.to_string());
            let mut table = Table::new(&m.tables[0], begin, end);
            table.subtitle = Some(format!("{} ({}, TID: {})", t.comm, pid, tid));
            let mut calls: Vec<(&String, &CallStats)> = t.calls.iter().collect();
            calls.sort_by_key(|c| std::cmp::Reverse(c.1.d.count));
            for (name, c) in calls {
                let stdev = if c.d.count > 2 { c.d.stdev() } else { None };
                let mut named: IndexMap<String, u64> = IndexMap::default();
                for (&ret, &n) in &c.rets {
                    // The first occurrence counts twice (see the module doc).
                    *named.entry(ret_key(ret)).or_insert(1) += n;
                }
                let rets: Vec<String> = named
                    .iter()
                    .map(|(k, n)| format!("{}: {}", py_repr(k), n))
                    .collect();
                table.rows.push(vec![
                    lami::syscall(name),
                    lami::number(c.d.count as i64),
                    lami::duration(c.d.min),
                    lami::duration_f(c.d.mean()),
                    lami::duration(c.d.max),
                    lami::duration_opt(stdev),
                    lami::string(&format!("{{{}}}", rets.join(", "))),
                ]);
            }
            out.push(table);
            total.rows.push(vec![
                lami::process(Some(&t.comm), t.pid, Some(*tid)),
                lami::number(t.total as i64),
            ]);
        }
        out.push(total);
        if let Some(log) = &self.log {
            let mut t = Table::new(&CALLS, begin, end);
            crate::stats::call_rows(&mut t, log);
            out.push(t);
        }
        out
    }
}
