//! System call I/O latency statistics, as `lttng-iolatencystats`.
//!
//! - The I/O system calls are lttng-analyses' list (open, openat, socket,
//!   dup*, fcntl F_DUPFD, close, read/write families, sync family; see [`crate::state`]); a request's latency runs from its
//!   entry to its exit.
//! - Rows `Open`, `Read`, `Write`, `Sync`: count, min, average, max and
//!   sample standard deviation (unknown under 2 requests; zeros when none).
//!   `splice`/`sendfile64` are on lttng-analyses' I/O list but it makes no
//!   request of them, so they count nowhere.
//! - As lttng-analyses, a successful read or write counts only if the
//!   descriptor is known open in its process when the call ends (opened in
//!   the trace, listed by the state dump, inherited at fork, or first seen
//!   in a successful call); failed calls always count.
//! - The per-partition (block device) table of lttng-iolatencystats is not
//!   produced.

use rustc_hash::FxHashMap as HashMap;

use crate::event::Interest;
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::state::{IoOp, IoRq, Listener, Proc, State};
use crate::stats::Durations;
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "I/O analysis",
    description: "System call latency statistics",
    tags: &["io", "syscall", "stats"],
    tables: &[TableClass {
        name: "syscall-latency-stats",
        title: "System call latency statistics",
        columns: &[
            col("System call category", "string"),
            col_unit("Call count", "number", "calls"),
            col("Minimum call latency", "duration"),
            col("Average call latency", "duration"),
            col("Maximum call latency", "duration"),
            col("System call latency standard deviation", "duration"),
        ],
    }],
};

/// Per process (or thread): its descriptors, and whether the latest one
/// of each number is still open.
#[derive(Debug, Default)]
struct FdTable {
    fds: HashMap<i64, bool>,
}

/// The requests [`Iolatency::with_log`] lists (reef's own table, not one
/// of lttng-iolatencystats': the calls lttng-iolog lists, without its
/// sizes, paths and descriptors).
pub static REQUESTS: TableClass = TableClass {
    name: "io-requests",
    title: "I/O requests",
    columns: &[
        col("Call time range", "time-range"),
        col("System call", "syscall"),
        col("Process", "process"),
    ],
};

#[derive(Debug, Default)]
pub struct Iolatency {
    tids: HashMap<i64, FdTable>,
    open: Durations,
    read: Durations,
    write: Durations,
    sync: Durations,
    /// With [`Iolatency::with_log`]: every request counted, and the
    /// successful or failed closes (what lttng-iolog lists), in the order
    /// they ended.
    log: Option<Vec<crate::stats::LoggedCall>>,
    /// The name of the system call that just ended (its request follows).
    ended: String,
}

impl Iolatency {
    pub fn new() -> Iolatency {
        Iolatency::default()
    }

    /// Also lists the requests, in a [`REQUESTS`] table after the
    /// statistics.
    pub fn with_log() -> Iolatency {
        Iolatency {
            log: Some(Vec::new()),
            ..Iolatency::default()
        }
    }

    fn is_open(&self, tid: i64, fd: Option<i64>) -> bool {
        fd.and_then(|fd| self.tids.get(&tid)?.fds.get(&fd).copied())
            .unwrap_or(false)
    }
}

impl Listener for Iolatency {
    fn create_fd(&mut self, parent: &Proc, fd: i64) {
        self.tids
            .entry(parent.tid)
            .or_default()
            .fds
            .insert(fd, true);
    }

    fn close_fd(&mut self, parent_tid: i64, fd: i64) {
        if let Some(open) = self
            .tids
            .get_mut(&parent_tid)
            .and_then(|t| t.fds.get_mut(&fd))
        {
            *open = false;
        }
    }

    fn update_fd(&mut self, parent: &Proc, fd: i64) {
        self.tids
            .entry(parent.tid)
            .or_default()
            .fds
            .entry(fd)
            .or_insert(true);
    }

    fn create_parent_proc(&mut self, proc: &Proc, parent: &Proc) {
        let moved: Vec<(i64, bool)> = self.tids.entry(proc.tid).or_default().fds.drain().collect();
        let p = self.tids.entry(parent.tid).or_default();
        for (fd, open) in moved {
            p.fds.entry(fd).or_insert(open);
        }
    }

    fn syscall_exit(&mut self, _proc: &Proc, call: &crate::state::Syscall, _cpu: i64) {
        if self.log.is_some() {
            self.ended.clone_from(&call.name);
        }
    }

    fn io_rq_exit(&mut self, proc: &Proc, parent: &Proc, rq: &IoRq) {
        if rq.errno.is_none() {
            let known = match rq.op {
                IoOp::Read | IoOp::Write => self.is_open(parent.tid, rq.fd),
                _ => true,
            };
            if !known {
                return;
            }
        }
        if let Some(log) = &mut self.log {
            log.push((
                rq.begin,
                rq.end,
                self.ended.clone(),
                proc.tid,
                proc.comm.clone(),
            ));
        }
        let d = rq.end - rq.begin;
        match rq.op {
            IoOp::Open => self.open.add(d),
            IoOp::Read => self.read.add(d),
            IoOp::Write => self.write.add(d),
            IoOp::Sync => self.sync.add(d),
            IoOp::Close => {}
        }
    }
}

impl Analysis for Iolatency {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn interest(&self) -> Interest {
        Interest {
            syscalls: true,
            ..Interest::SCHED
        }
    }
    fn begin(&mut self, _ts: i64) {
        let log = self.log.is_some();
        *self = Iolatency::default();
        if log {
            self.log = Some(Vec::new());
        }
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        let mut t = Table::new(&METADATA.tables[0], begin, end);
        for (name, d) in [
            ("Open", &self.open),
            ("Read", &self.read),
            ("Write", &self.write),
            ("Sync", &self.sync),
        ] {
            t.rows.push(if d.count == 0 {
                vec![
                    lami::string(name),
                    lami::number(0),
                    lami::duration(0),
                    lami::duration(0),
                    lami::duration(0),
                    lami::unknown(),
                ]
            } else {
                vec![
                    lami::string(name),
                    lami::number(d.count as i64),
                    lami::duration(d.min),
                    lami::duration_f(d.mean()),
                    lami::duration(d.max),
                    lami::duration_opt(d.stdev()),
                ]
            });
        }
        let mut out = vec![t];
        if let Some(log) = &self.log {
            let mut r = Table::new(&REQUESTS, begin, end);
            crate::stats::call_rows(&mut r, log);
            out.push(r);
        }
        out
    }
}
