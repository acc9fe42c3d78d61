//! I/O analyses, as lttng-analyses 0.6.1's I/O command: system call
//! latency statistics (`lttng-iolatencystats`), their distributions
//! (`lttng-iolatencyfreq`), the longest calls (`lttng-iolatencytop`),
//! every call (`lttng-iolog`) and who read and wrote how much where
//! (`lttng-iousagetop`).
//!
//! What counts (all lttng-analyses' rules):
//! - The requests are those of its I/O system calls (open, openat,
//!   socket, dup*, fcntl F_DUPFD, close, the read and write families, the
//!   sync family; see [`crate::state`]); a request runs from the call's
//!   entry to its exit. `splice` and `sendfile64` make none.
//! - A successful read or write counts only if its descriptor is known
//!   open in its process when the call ends (opened in the trace, listed
//!   by the state dump, inherited at fork, or first seen in a successful
//!   call); failed calls always count.
//! - A request's size is what a successful read or write returned (none
//!   for other calls and failures).
//! - Usage: bytes read and written per thread, split by what the
//!   descriptor leads to (opened by `open`: disk; `socket`: network;
//!   written during a `net_dev_xmit`: network; otherwise unknown); per
//!   file name (generic names such as `socket:[…]` or `pipe:[…]` get the
//!   process name appended); block requests per issuing thread and per
//!   disk (`block_rq_issue` to `block_rq_complete` of the same sectors,
//!   through bio remaps); bytes per network interface.
//! - `--min`/`--max` (µs) keep requests by duration, `--minsize`/
//!   `--maxsize` by size; under `--begin`/`--end`, a request that started
//!   or ended outside them is marked out of range.
//!
//! Known differences: an IPv4 `connect` names its socket `a.b.c.d:port`
//! only when the trace records the address as an integer (lttng-modules
//! before 2.6), not as an array.

use std::sync::Arc;

use crate::IndexMap;

use crate::event::Interest;
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::state::{prefetch, BlockRq, Disk, FdTable, FdType, IoOp, IoRq, Listener, Proc, State};
use crate::stats::{Durations, Smallest};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "I/O analysis",
    description: "System call/disk latency statistics, system call latency distribution, \
                  system call top latencies, I/O usage top, and I/O operations log",
    tags: &["io", "syscall", "stats", "freq", "log", "top"],
    tables: &[
        TableClass {
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
        },
        TableClass {
            name: "disk-latency-stats",
            title: "Partition latency statistics",
            columns: &[
                col("Partition", "disk"),
                col_unit("Access count", "number", "accesses"),
                col("Minimum access latency", "duration"),
                col("Average access latency", "duration"),
                col("Maximum access latency", "duration"),
                col("System access latency standard deviation", "duration"),
            ],
        },
        TableClass {
            name: "freq",
            title: "I/O request latency distribution",
            columns: &[
                col("Latency (lower bound)", "duration"),
                col("Latency (upper bound)", "duration"),
                col_unit("Request count", "number", "requests"),
            ],
        },
        TableClass {
            name: "top-syscall",
            title: "Top system call latencies",
            columns: REQUEST_COLUMNS,
        },
        TableClass {
            name: "log",
            title: "I/O operations log",
            columns: REQUEST_COLUMNS,
        },
        TableClass {
            name: "per-process-top",
            title: "Per-process top I/O operations",
            columns: &[
                col("Process", "process"),
                col("Total operations size", "size"),
                col("Disk operations size", "size"),
                col("Network operations size", "size"),
                col("Unknown operations size", "size"),
            ],
        },
        TableClass {
            name: "per-file-top",
            title: "Per-file top I/O operations",
            columns: &[
                col("File path/info", "path"),
                col("Operations size", "size"),
                col("File descriptor owners", "string"),
            ],
        },
        TableClass {
            name: "per-process-top-block",
            title: "Per-process top block I/O operations",
            columns: &[col("Process", "process"), col("Operations size", "size")],
        },
        TableClass {
            name: "per-disk-top-sector",
            title: "Per-disk top sector I/O operations",
            columns: &[
                col("Disk", "disk"),
                col_unit("Sector count", "number", "sectors"),
            ],
        },
        TableClass {
            name: "per-disk-top-request",
            title: "Per-disk top I/O requests",
            columns: &[
                col("Disk", "disk"),
                col_unit("Request count", "number", "I/O requests"),
            ],
        },
        TableClass {
            name: "per-disk-top-rps",
            title: "Per-disk top I/O request time/sector",
            columns: &[col("Disk", "disk"), col("Request time/sector", "duration")],
        },
        TableClass {
            name: "per-netif-top",
            title: "Per-network interface top I/O operations",
            columns: &[
                col("Network interface", "netif"),
                col("Operations size", "size"),
            ],
        },
    ],
};

const REQUEST_COLUMNS: &[lami::Column] = &[
    col("Call time range", "time-range"),
    col("System call out of range?", "bool"),
    col("Call duration", "duration"),
    col("System call", "syscall"),
    col("Read/write size", "size"),
    col("Process", "process"),
    col("File path", "path"),
    col("File descriptor", "fd"),
];

/// Which tables an [`Io`] makes: one lttng-analyses I/O command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `lttng-iolatencystats`.
    Stats,
    /// `lttng-iolatencyfreq`, with this many buckets.
    Freq(usize),
    /// `lttng-iolatencytop`: the longest requests of each kind (as
    /// lttng-analyses, `limit + 1` of them; 0: all).
    Top(usize),
    /// `lttng-iolog`: every request, in the order they began.
    Log,
    /// `lttng-iousagetop`, with at most `limit` rows per table (0: all).
    Usage(usize),
}

/// Which requests count: lttng-analyses' `--min`/`--max` (ns) and
/// `--minsize`/`--maxsize` (bytes), and the `--begin`/`--end` given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub minsize: Option<f64>,
    pub maxsize: Option<f64>,
}

/// A descriptor's life in a process, and the bytes moved through it.
#[derive(Debug, Clone)]
struct FdLife {
    filename: Arc<str>,
    kind: FdType,
    open: i64,
    close: Option<i64>,
    read: i64,
    write: i64,
}

impl FdLife {
    /// The life of descriptor `f` from `open`.
    fn new(f: &crate::state::Fd, open: i64) -> FdLife {
        FdLife {
            filename: f.filename.clone(),
            kind: f.kind,
            open,
            close: None,
            read: 0,
            write: 0,
        }
    }
}

/// A descriptor number's lives in a process, in the order they began:
/// the latest inline (in the table's slot: one memory access per read or
/// write), the earlier ones when a table reads them
/// ([`Io::keeps_lives`]).
#[derive(Debug, Clone)]
struct Lives {
    earlier: Vec<FdLife>,
    last: FdLife,
}

impl Lives {
    fn new(life: FdLife) -> Lives {
        Lives {
            earlier: Vec::new(),
            last: life,
        }
    }

    /// A new life begins; the last one is kept if `keep`.
    fn push(&mut self, life: FdLife, keep: bool) {
        let old = std::mem::replace(&mut self.last, life);
        if keep {
            self.earlier.push(old);
        }
    }

    fn iter(&self) -> impl Iterator<Item = &FdLife> {
        self.earlier.iter().chain(std::iter::once(&self.last))
    }
}

/// Read and written bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Rw {
    read: i64,
    write: i64,
}

/// A request as listed (log, top), kept with the index of its thread.
#[derive(Debug, Clone)]
struct Request {
    begin: i64,
    end: i64,
    op: IoOp,
    name: std::sync::Arc<str>,
    size: Option<i64>,
    fd: Option<i64>,
}

/// The longest requests of a kind, as they end (memory bounded by the
/// rows listed, not by the requests), in the order listed: longest
/// first, then by thread (its index in `tids`), then in the order the
/// requests of its kind ended (a total order).
#[derive(Debug, Default)]
struct Top {
    kept: Smallest<(std::cmp::Reverse<i64>, usize, usize), (usize, Request)>,
    /// Requests of the kind seen.
    seen: usize,
}

impl Top {
    fn offer(&mut self, rows: usize, thread: usize, r: Request) {
        let key = (std::cmp::Reverse(r.end - r.begin), thread, self.seen);
        self.seen += 1;
        self.kept.offer(rows, key, || (thread, r));
    }
}

/// A thread or process, as lttng-analyses' `ProcessIOStats`.
#[derive(Debug, Clone)]
struct ProcIo {
    pid: Option<i64>,
    tid: i64,
    comm: String,
    disk: Rw,
    net: Rw,
    unknown: Rw,
    block: Rw,
    /// Each descriptor number's lives, in the order they began; numbers in
    /// the order they first appeared.
    fds: FdTable<Lives>,
}

impl ProcIo {
    fn new(p: &Proc) -> ProcIo {
        ProcIo {
            pid: p.pid,
            tid: p.tid,
            comm: p.comm.clone(),
            disk: Rw::default(),
            net: Rw::default(),
            unknown: Rw::default(),
            block: Rw::default(),
            fds: FdTable::default(),
        }
    }

    /// The life of `fd` that is not over.
    fn current(&mut self, fd: i64) -> Option<&mut FdLife> {
        Some(&mut self.fds.get_mut(&fd)?.last).filter(|f| f.close.is_none())
    }

    /// The life of `fd` that contains `ts` (lttng-analyses' binary
    /// search, with its quirk: an open life starting after `ts` ends it).
    fn at(&self, fd: i64, ts: i64) -> Option<&FdLife> {
        let lives = self.fds.get(&fd)?;
        let (mut lo, mut hi) = (0, lives.earlier.len() + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let f = lives.earlier.get(mid).unwrap_or(&lives.last);
            match f.close {
                None => return (ts >= f.open).then_some(f),
                Some(c) if f.open <= ts && ts <= c => return Some(f),
                Some(_) if ts < f.open => hi = mid,
                Some(_) => lo = mid + 1,
            }
        }
        None
    }

    fn total(&self) -> Rw {
        Rw {
            read: self.disk.read + self.net.read + self.unknown.read,
            write: self.disk.write + self.net.write + self.unknown.write,
        }
    }
}

#[derive(Debug, Clone)]
struct DiskIo {
    name: String,
    sectors: i64,
    requests: i64,
    total_duration: i64,
    /// Statistics of the durations of the requests kept by the filter.
    stats: Durations,
    /// Those durations (distributions only).
    durations: Vec<i64>,
}

impl DiskIo {
    fn new(dev: i64, name: Option<&str>) -> DiskIo {
        DiskIo {
            // (the kernel's MINORBITS is 20)
            name: name.map_or_else(
                || format!("({},{})", dev >> 20, dev & 0xfffff),
                str::to_string,
            ),
            sectors: 0,
            requests: 0,
            total_duration: 0,
            stats: Durations::default(),
            durations: Vec::new(),
        }
    }
}

/// Each thread's owner of descriptors (its index) and process cell; see
/// [`Io::owners`].
type Owners = Vec<(Option<usize>, lami::Cell)>;

/// A file's name, bytes, and (process id, first descriptor) owners.
type FileRow = (String, Rw, Vec<(i64, i64)>);

/// The I/O analysis; see the module documentation.
#[derive(Debug)]
pub struct Io {
    mode: Mode,
    filter: Filter,
    range: (Option<i64>, Option<i64>),
    tids: IndexMap<i64, ProcIo>,
    /// Each thread's index in `tids` by its index in the model's
    /// ([`State::tids`]: neither ever changes; `u32::MAX` where not yet
    /// known): a request's threads are found without a lookup.
    at_state: Vec<u32>,
    disks: IndexMap<i64, DiskIo>,
    ifaces: IndexMap<String, Rw>,
    /// Statistics of the requests kept, per operation (open, read, write,
    /// sync).
    stats: [Durations; 4],
    /// Their durations (distributions).
    durations: [Vec<i64>; 4],
    /// The requests kept, with the index of their thread in `tids`
    /// (log, and top without a limit).
    requests: Vec<(usize, Request)>,
    /// The longest requests kept, per operation (top with a limit).
    longest: [Top; 4],
    now: i64,
    /// The `-j` workers: how many threads may prepare and write the log.
    workers: Option<usize>,
}

fn slot(op: IoOp) -> Option<usize> {
    match op {
        IoOp::Open => Some(0),
        IoOp::Read => Some(1),
        IoOp::Write => Some(2),
        IoOp::Sync => Some(3),
        IoOp::Close => None,
    }
}

const KINDS: [&str; 4] = ["open", "read", "write", "sync"];

impl Io {
    pub fn new(mode: Mode) -> Io {
        Io::with_filter(mode, Filter::default())
    }

    pub fn with_filter(mode: Mode, filter: Filter) -> Io {
        Io {
            mode,
            filter,
            range: (None, None),
            tids: IndexMap::default(),
            at_state: Vec::new(),
            disks: IndexMap::default(),
            ifaces: IndexMap::default(),
            stats: Default::default(),
            durations: Default::default(),
            requests: Vec::new(),
            longest: Default::default(),
            now: 0,
            workers: None,
        }
    }

    /// The analysis, whose log is prepared and written on at most
    /// `workers` threads (`None`: as many as the machine has; see
    /// [`lami::shared_threads`]).
    pub fn on_workers(mut self, workers: Option<usize>) -> Io {
        self.workers = workers;
        self
    }

    fn keep(&self, begin: i64, end: i64, size: Option<i64>) -> bool {
        let f = &self.filter;
        let d = (end - begin) as f64;
        let size_ok = size.is_none_or(|s| {
            let s = s as f64;
            f.maxsize.is_none_or(|m| s <= m) && f.minsize.is_none_or(|m| s >= m)
        });
        let range_ok = match self.range {
            (Some(_), Some(e)) => begin <= e,
            _ => true,
        };
        size_ok && f.max.is_none_or(|m| d <= m) && f.min.is_none_or(|m| d >= m) && range_ok
    }

    fn proc_entry(&mut self, p: &Proc) -> usize {
        let e = self.tids.entry(p.tid);
        let index = e.index();
        e.or_insert_with(|| ProcIo::new(p));
        index
    }

    /// The index in `tids` of the thread at index `slot` of the model's,
    /// if [`Io::proc_at`] has found it.
    fn known_at(&self, slot: usize) -> Option<usize> {
        let k = *self.at_state.get(slot)?;
        (k != u32::MAX).then_some(k as usize)
    }

    /// [`Io::proc_entry`] of `p`, at index `slot` of the model's threads:
    /// looked up once per thread.
    fn proc_at(&mut self, p: &Proc, slot: usize) -> usize {
        if let Some(k) = self.known_at(slot) {
            return k;
        }
        let index = self.proc_entry(p);
        if let Ok(k) = u32::try_from(index) {
            if slot >= self.at_state.len() {
                self.at_state.resize(slot + 1, u32::MAX);
            }
            self.at_state[slot] = k;
        }
        index
    }

    /// Whether a table reads the lives of descriptors that are over (the
    /// path of a listed request at its end, the bytes per file): the
    /// statistics and distributions only read each descriptor's current
    /// life, and keep no other.
    fn keeps_lives(&self) -> bool {
        matches!(self.mode, Mode::Log | Mode::Top(_) | Mode::Usage(_))
    }

    /// Whether a request is outside `--begin`/`--end`, as lttng-analyses'
    /// Python expression gives it: `None` (null) unless a bound was given.
    fn out_of_range(&self, r: &Request) -> lami::Cell {
        let (b, e) = self.range;
        let first = b.map(|b| r.begin < b);
        let second = e.map(|e| r.end > e);
        // `b and x or e and y`
        let v = match first {
            Some(true) => Some(true),
            _ => second.or(if first == Some(false) && e.is_none() {
                None
            } else {
                first
            }),
        };
        lami::Cell::Bool(v)
    }

    /// Each thread's (by index) owner of descriptors: its process as
    /// known at the end, or itself; and its cell, shared by its rows.
    fn owners(&self) -> Owners {
        let tids = self.tids.values().enumerate();
        tids.map(|(i, p)| {
            let owner = match p.pid {
                Some(pid) => self.tids.get_index_of(&pid),
                None => Some(i),
            };
            (owner, lami::process(Some(&p.comm), None, Some(p.tid)))
        })
        .collect()
    }

    /// The name of the file request `r` of thread `index` (its place in
    /// `tids`) used, with `owners` from [`Io::owners`]: its descriptor's
    /// life at the request's end, in the table of the thread's process as
    /// known at the end of the trace (lttng-analyses reads it there).
    fn request_path(&self, index: usize, r: &Request, owners: &Owners) -> Option<&Arc<str>> {
        let (fd, owner) = (r.fd?, owners[index].0?);
        self.tids[owner].at(fd, r.end).map(|f| &f.filename)
    }

    /// The row of request `r` of thread `index`, with `owners` from
    /// [`Io::owners`] and its file from [`Io::request_path`].
    fn request_row(
        &self,
        index: usize,
        r: &Request,
        owners: &Owners,
        path: Option<&Arc<str>>,
    ) -> [lami::Cell; 8] {
        let thread = &owners[index].1;
        let (path, fd) = match r.fd {
            None => (lami::Cell::Null, lami::Cell::Null),
            Some(fd) => (
                path.map_or_else(lami::unknown, lami::path_shared),
                lami::fd(fd),
            ),
        };
        [
            lami::time_range_cell(r.begin, r.end),
            self.out_of_range(r),
            lami::duration(r.end - r.begin),
            lami::syscall_shared(&r.name),
            r.size.map_or(lami::Cell::Null, lami::size),
            thread.clone(),
            path,
            fd,
        ]
    }

    /// [`Io::request_row`], held, with its file found.
    fn row_of(&self, index: usize, r: &Request, owners: &Owners) -> Vec<lami::Cell> {
        let path = self.request_path(index, r, owners);
        self.request_row(index, r, owners, path).to_vec()
    }

    fn stats_tables(&self, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let mut t = Table::new(&m.tables[0], begin, end);
        for (name, d) in ["Open", "Read", "Write", "Sync"].iter().zip(&self.stats) {
            let mut row = vec![lami::string(name)];
            row.extend(latency_cells(d));
            t.rows.push(row);
        }
        let mut out = vec![t];
        if !self.disks.is_empty() {
            let mut t = Table::new(&m.tables[1], begin, end);
            for d in self.disks.values().filter(|d| d.requests > 0) {
                let mut row = vec![lami::disk(&d.name)];
                row.extend(latency_cells(&d.stats));
                t.rows.push(row);
            }
            out.push(t);
        }
        out
    }

    fn freq_tables(&self, res: usize, begin: i64, end: i64) -> Vec<Table> {
        let class = &METADATA.tables[2];
        let table = |subtitle: String, d: &[i64]| {
            let mut t = Table::new(class, begin, end);
            t.subtitle = Some(subtitle);
            if !d.is_empty() {
                t.rows = crate::stats::freq_rows(d, None, None, res);
            }
            t
        };
        let mut out: Vec<Table> = KINDS
            .iter()
            .zip(&self.durations)
            .map(|(k, d)| table(k.to_string(), d))
            .collect();
        for d in self.disks.values() {
            out.push(table(format!("disk: {}", d.name), &d.durations));
        }
        out
    }

    fn top_tables(&self, limit: usize, begin: i64, end: i64) -> Vec<Table> {
        let owners = self.owners();
        (0..4)
            .map(|k| {
                let mut t = Table::new(&METADATA.tables[3], begin, end);
                t.subtitle = Some(KINDS[k].to_string());
                if limit > 0 {
                    // (the longest, kept as they ended: `Top`)
                    t.rows = (self.longest[k].kept.sorted().into_iter())
                        .map(|(i, r)| self.row_of(*i, r, &owners))
                        .collect();
                    return t;
                }
                // Without a limit, all of them, in the same order: longest
                // first; equal durations keep lttng-analyses' order, by
                // thread then by end (the requests' order).
                // (`!d` orders as `-d`, without overflow)
                let order = self.requests_by(|r| slot(r.op) == Some(k), |r| !(r.end - r.begin));
                t.rows = (order.into_iter().map(|at| &self.requests[at]))
                    .map(|(i, r)| self.row_of(*i, r, &owners))
                    .collect();
                t
            })
            .collect()
    }

    /// The places in `requests` of those `keep` keeps, ordered by `key`
    /// (of the request), then by thread (its index), then in the order
    /// they ended. Each key is made once, ahead of the sort: comparing the
    /// requests themselves would read them at random at each comparison.
    fn requests_by(
        &self,
        keep: impl Fn(&Request) -> bool,
        key: impl Fn(&Request) -> i64,
    ) -> Vec<usize> {
        // (16 bytes a key, thread and place: a log sorts millions; a
        // thread's index, and a place, fit in 32 bits where the requests
        // fit in memory)
        let small = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        let mut order: Vec<(i64, u32, u32)> = (self.requests.iter().enumerate())
            .filter(|(_, (_, r))| keep(r))
            .map(|(at, (i, r))| (key(r), small(*i), small(at)))
            .collect();
        // (the places make each key unique: the order of a stable sort)
        order.sort_unstable();
        order.into_iter().map(|(_, _, at)| at as usize).collect()
    }

    /// The log: its table, and its rows made on demand, one per request
    /// in the order they began (then by thread: the order lttng-analyses
    /// lists them in); their text is written without making them.
    fn log_table(&self, begin: i64, end: i64) -> lami::Emitted<'_> {
        let t = Table::new(&METADATA.tables[4], begin, end);
        let owners = self.owners();
        let threads: Vec<String> = owners.iter().map(|(_, c)| lami::cell_text(c)).collect();
        // Each request's file, found once, and the widths of the files'
        // column: in the order the requests ended (the descriptors' lives
        // are then read in about the order they were made, each asked
        // for some requests ahead).
        let paths = || {
            const AHEAD: usize = 8;
            let requests = &self.requests;
            let mut width = 0;
            let paths = (requests.iter().enumerate())
                .map(|(at, (i, r))| {
                    if let Some((j, r)) = requests.get(at + AHEAD) {
                        if let (Some(o), Some(fd)) = (owners[*j].0, r.fd) {
                            self.tids[o].fds.prefetch(fd);
                        }
                    }
                    let path = self.request_path(*i, r, &owners);
                    let w = match (r.fd, path) {
                        (Some(_), Some(p)) => lami::chars(p),
                        _ => 1,
                    };
                    width = width.max(w);
                    path
                })
                .collect::<Vec<_>>();
            (paths, width)
        };
        // The widths of the other columns, over the requests of `range`.
        let thread_widths: Vec<usize> = threads.iter().map(|t| lami::chars(t)).collect();
        let widths_in = |range: std::ops::Range<usize>| {
            let mut widths = [0; 8];
            for (i, r) in &self.requests[range] {
                let row = row_widths(self, thread_widths[*i], r);
                for (w, n) in widths.iter_mut().zip(row) {
                    *w = (*w).max(n);
                }
            }
            widths
        };
        let order = || self.requests_by(|_| true, |r| r.begin);
        let n = self.requests.len();
        // (a long log sorts, and finds half of its widths, on another
        // thread)
        let (order, mut widths, (paths, files)) = if lami::shared_threads(n, self.workers) > 1 {
            std::thread::scope(|s| {
                let other = s.spawn(|| (order(), widths_in(n / 2..n)));
                let paths = paths();
                let mine = widths_in(0..n / 2);
                let (order, theirs) = lami::join(other);
                let widths = std::array::from_fn(|k| mine[k].max(theirs[k]));
                (order, widths, paths)
            })
        } else {
            (order(), widths_in(0..n), paths())
        };
        widths[FILE] = files;
        let log = Arc::new(Log {
            io: self,
            order,
            owners,
            paths,
            threads,
            widths,
        });
        let rows = Arc::clone(&log);
        let make = move |f: &mut dyn FnMut(&[lami::Cell])| {
            for k in 0..rows.order.len() {
                let (i, r, path) = rows.get(k);
                f(&rows.io.request_row(i, r, &rows.owners, path));
            }
        };
        lami::Emitted::made_with_text(t, n, Box::new(make), log)
    }

    fn usage_tables(&self, limit: usize, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let new = |class: usize, sub: Option<&str>| {
            let mut t = Table::new(&m.tables[class], begin, end);
            t.subtitle = sub.map(str::to_string);
            t
        };
        let limit = if limit == 0 { usize::MAX } else { limit };
        let cap = |rows: Vec<Vec<lami::Cell>>| -> Vec<Vec<lami::Cell>> {
            rows.into_iter().take(limit).collect()
        };
        let procs: Vec<&ProcIo> = self.tids.values().collect();
        let by = |key: &dyn Fn(&ProcIo) -> i64| {
            let mut v = procs.clone();
            v.sort_by_key(|p| std::cmp::Reverse(key(p)));
            v
        };
        let mut out = Vec::new();
        for (sub, write) in [("read", false), ("written", true)] {
            let pick = |rw: Rw| if write { rw.write } else { rw.read };
            let mut t = new(5, Some(sub));
            t.rows = cap(by(&|p| pick(p.total()))
                .iter()
                .map(|p| {
                    vec![
                        lami::process(Some(&p.comm), p.pid, Some(p.tid)),
                        lami::size(pick(p.total())),
                        lami::size(pick(p.disk)),
                        lami::size(pick(p.net)),
                        lami::size(pick(p.unknown)),
                    ]
                })
                .collect());
            out.push(t);
        }
        let files = self.files();
        for (sub, write) in [("read", false), ("written", true)] {
            let pick = |rw: &Rw| if write { rw.write } else { rw.read };
            let mut v: Vec<&FileRow> = files.iter().collect();
            v.sort_by_key(|f| std::cmp::Reverse(pick(&f.1)));
            let mut t = new(6, Some(sub));
            t.rows = cap(v
                .iter()
                .filter(|f| pick(&f.1) != 0)
                .map(|(name, rw, owners)| {
                    let mut s = String::new();
                    for (pid, fd) in owners {
                        let comm = self.tids.get(pid).map_or("", |p| p.comm.as_str());
                        s.push_str(&format!("fd {fd} in {comm} ({pid}) "));
                    }
                    vec![lami::path(name), lami::size(pick(rw)), lami::string(&s)]
                })
                .collect());
            out.push(t);
        }
        for (sub, write) in [("read", false), ("written", true)] {
            let pick = |p: &ProcIo| if write { p.block.write } else { p.block.read };
            let mut t = new(7, Some(sub));
            t.rows = cap(by(&|p| pick(p))
                .iter()
                .filter(|p| pick(p) != 0)
                .map(|p| {
                    let name = (!p.comm.is_empty()).then_some(p.comm.as_str());
                    vec![lami::process(name, p.pid, Some(p.tid)), lami::size(pick(p))]
                })
                .collect());
            out.push(t);
        }
        let disks: Vec<&DiskIo> = self.disks.values().collect();
        let mut sectors = disks.clone();
        sectors.sort_by_key(|d| std::cmp::Reverse(d.sectors));
        let mut t = new(8, None);
        t.rows = cap(sectors
            .iter()
            .filter(|d| d.sectors != 0)
            .map(|d| vec![lami::disk(&d.name), lami::number(d.sectors)])
            .collect());
        out.push(t);
        let mut reqs = disks.clone();
        reqs.sort_by_key(|d| std::cmp::Reverse(d.requests));
        let mut t = new(9, None);
        t.rows = cap(reqs
            .iter()
            .filter(|d| d.requests != 0)
            .map(|d| vec![lami::disk(&d.name), lami::number(d.requests)])
            .collect());
        out.push(t);
        let mut t = new(10, None);
        t.rows = cap(disks
            .iter()
            .filter(|d| d.requests != 0)
            .map(|d| {
                vec![
                    lami::disk(&d.name),
                    lami::duration_f(d.total_duration as f64 / d.requests as f64),
                ]
            })
            .collect());
        out.push(t);
        for (sub, send) in [("received", false), ("sent", true)] {
            let pick = |rw: &Rw| if send { rw.write } else { rw.read };
            let mut v: Vec<(&String, &Rw)> = self.ifaces.iter().collect();
            v.sort_by_key(|(_, rw)| std::cmp::Reverse(pick(rw)));
            let mut t = new(11, Some(sub));
            t.rows = cap(v
                .iter()
                .map(|(name, rw)| vec![lami::netif(name), lami::size(pick(rw))])
                .collect());
            out.push(t);
        }
        out
    }

    /// Bytes per file name, with the first descriptor each process had on
    /// it, in lttng-analyses' order (threads, then descriptors, then
    /// lives).
    fn files(&self) -> Vec<FileRow> {
        let mut files: IndexMap<String, (Rw, IndexMap<i64, i64>)> = IndexMap::default();
        for p in self.tids.values() {
            let lives = p.fds.ordered().into_iter();
            for (fd, life) in lives.flat_map(|(fd, l)| l.iter().map(move |life| (fd, life))) {
                let mut name = life.filename.to_string();
                if ["pipe", "socket", "anon_inode", "unknown"]
                    .iter()
                    .any(|g| name.starts_with(g))
                {
                    name = format!("{name} ({})", p.comm);
                }
                let f = files.entry(name).or_default();
                f.0.read += life.read;
                f.0.write += life.write;
                f.1.entry(p.pid.unwrap_or(p.tid)).or_insert(fd);
            }
        }
        files
            .into_iter()
            .map(|(n, (rw, owners))| (n, rw, owners.into_iter().collect()))
            .collect()
    }
}

/// The I/O log's rows (see [`Io::log_table`]).
struct Log<'s> {
    io: &'s Io,
    /// The places of the requests in `io.requests`, in the rows' order.
    order: Vec<usize>,
    owners: Owners,
    /// Each request's file ([`Io::request_path`]), by its place.
    paths: Vec<Option<&'s Arc<str>>>,
    /// Each thread's cell's text, by its index.
    threads: Vec<String>,
    /// The widths of the columns' cells.
    widths: [usize; 8],
}

impl Log<'_> {
    /// Row `k`'s thread index, request and file. (The rows read the
    /// requests, and their files' names, at random: each asks for the
    /// request some rows ahead, and for the name of one nearer.)
    #[inline]
    fn get(&self, k: usize) -> (usize, &Request, Option<&Arc<str>>) {
        const AHEAD: usize = 8;
        let requests = &self.io.requests;
        if let Some(&at) = self.order.get(k + 2 * AHEAD) {
            prefetch(&requests[at]);
        }
        if let Some(&Some(path)) = self.order.get(k + AHEAD).map(|&at| &self.paths[at]) {
            prefetch(path);
        }
        let at = self.order[k];
        let (i, r) = &requests[at];
        (*i, r, self.paths[at])
    }
}

/// The widths of the texts of [`Io::request_row`]'s cells of request `r`
/// of a thread whose cell's text is `thread` characters wide, but the
/// file's ([`FILE`]: 0; the files are found apart).
fn row_widths(io: &Io, thread: usize, r: &Request) -> [usize; 8] {
    let int = |v: Option<i64>| v.map_or(1, lami::int_width);
    let duration = r.end - r.begin;
    [
        lami::seconds_width(r.begin) + lami::seconds_width(r.end) + 4,
        lami::text_width(&io.out_of_range(r), &mut String::new()),
        lami::micros_width(duration)
            .unwrap_or_else(|| lami::text_width(&lami::duration(duration), &mut String::new())),
        lami::chars(&r.name),
        int(r.size),
        thread,
        0,
        int(r.fd),
    ]
}

/// The column of a log row's file.
const FILE: usize = 6;

/// The text of [`Io::request_row`]'s cells, without making those that
/// hold shared names (a thread's, a file's, a call's).
impl lami::TextRows for Log<'_> {
    fn widths(&self) -> &[usize] {
        &self.widths
    }

    fn row_text(&self, k: usize, row: &mut lami::RowText) {
        let (i, r, path) = self.get(k);
        row.time_range(r.begin, r.end);
        row.cell(&self.io.out_of_range(r));
        row.duration(r.end - r.begin);
        row.text(&r.name);
        row.int_or_none(r.size);
        row.text(&self.threads[i]);
        match (r.fd, path) {
            (Some(_), Some(p)) => row.text(p),
            (Some(_), None) => row.cell(&lami::unknown()),
            (None, _) => row.cell(&lami::Cell::Null),
        }
        row.int_or_none(r.fd);
    }
}

/// Count, min, average, max and standard deviation cells; zeros and an
/// unknown deviation when there is nothing.
fn latency_cells(d: &Durations) -> Vec<lami::Cell> {
    if d.count == 0 {
        return vec![
            lami::number(0),
            lami::duration(0),
            lami::duration(0),
            lami::duration(0),
            lami::unknown(),
        ];
    }
    d.cells().to_vec()
}

impl Listener for Io {
    fn create_fd(&mut self, parent: &Proc, fd: i64) {
        let Some(f) = parent.fds.get(&fd) else { return };
        let life = FdLife::new(f, self.now);
        let index = self.proc_entry(parent);
        let keep = self.keeps_lives();
        let fds = &mut self.tids[index].fds;
        match fds.get_mut(&fd) {
            Some(lives) => lives.push(life, keep),
            None => {
                fds.add(fd, || Lives::new(life));
            }
        }
    }

    fn close_fd(&mut self, parent_tid: i64, fd: i64) {
        let now = self.now;
        if let Some(f) = self.tids.get_mut(&parent_tid).and_then(|p| p.current(fd)) {
            f.close = Some(now);
        }
    }

    fn update_fd(&mut self, parent: &Proc, fd: i64) {
        let Some(f) = parent.fds.get(&fd) else { return };
        let now = self.now;
        let Some(p) = self.tids.get_mut(&parent.tid) else {
            return;
        };
        let lives = p.fds.get_or_add(fd, || Lives::new(FdLife::new(f, now))).0;
        lives.last.filename = Arc::clone(&f.filename);
    }

    fn create_parent_proc(&mut self, proc: &Proc, parent: &Proc) {
        self.proc_entry(proc);
        self.proc_entry(parent);
        let Some(p) = self.tids.get_mut(&proc.tid) else {
            return;
        };
        p.pid = Some(parent.tid);
        let moved = p.fds.take();
        let Some(par) = self.tids.get_mut(&parent.tid) else {
            return;
        };
        for (fd, lives) in moved {
            match par.fds.get_mut(&fd) {
                None => {
                    par.fds.add(fd, || lives);
                }
                Some(have) => {
                    // (lttng-analyses' best effort to fix the name)
                    let cur = &mut have.last;
                    if cur.close.is_none() && cur.filename.is_empty() {
                        cur.filename = lives.last.filename;
                    }
                }
            }
        }
    }

    fn io_rq_entry(&mut self, (parent_tid, slot): (i64, usize), fd: i64) {
        let p = match self.known_at(slot) {
            Some(k) => self.tids.get_index(k).map(|e| e.1),
            None => self.tids.get(&parent_tid),
        };
        if let Some(p) = p {
            p.fds.prefetch(fd);
        }
    }

    fn io_rq_exit(&mut self, (proc, at): (&Proc, usize), (parent, pat): (&Proc, usize), rq: &IoRq) {
        let index = self.proc_at(proc, at);
        let pindex = self.proc_at(parent, pat);
        let mut kind = FdType::Unknown;
        if rq.errno.is_none() && matches!(rq.op, IoOp::Read | IoOp::Write) {
            // The descriptor's life, in its process (a read or write on
            // one not open is not counted): its kind, and its bytes.
            let Some(l) = rq.fd.and_then(|fd| self.tids[pindex].current(fd)) else {
                return;
            };
            kind = l.kind;
            match rq.op {
                IoOp::Read => l.read += rq.size.unwrap_or(0),
                _ => l.write += rq.size.unwrap_or(0),
            }
        }
        // The thread's own statistics.
        if let (Some(size), None) = (rq.size, rq.errno) {
            let p = &mut self.tids[index];
            let rw = match kind {
                FdType::Disk => &mut p.disk,
                FdType::Net | FdType::MaybeNet => &mut p.net,
                FdType::Unknown => &mut p.unknown,
            };
            match rq.op {
                IoOp::Read => rw.read += size,
                IoOp::Write => rw.write += size,
                _ => {}
            }
        }
        let same = proc.tid == parent.tid;
        let places = [(proc, index), (parent, pindex)];
        for (p, i) in places.into_iter().take(if same { 1 } else { 2 }) {
            let s = &mut self.tids[i];
            if s.comm != p.comm {
                s.comm.clone_from(&p.comm);
            }
        }
        if !self.keep(rq.begin, rq.end, rq.size) {
            return;
        }
        let d = rq.end - rq.begin;
        if let Some(k) = slot(rq.op) {
            match self.mode {
                Mode::Stats => self.stats[k].add(d),
                Mode::Freq(_) => self.durations[k].push(d),
                _ => {}
            }
        }
        let listed = || Request {
            begin: rq.begin,
            end: rq.end,
            op: rq.op,
            name: rq.name.clone(),
            size: rq.size,
            fd: rq.fd,
        };
        if let (Mode::Top(limit @ 1..), Some(k)) = (self.mode, slot(rq.op)) {
            // (lttng-analyses lists one more than the limit)
            self.longest[k].offer(limit.saturating_add(1), index, listed());
        } else if matches!(self.mode, Mode::Log | Mode::Top(0)) {
            self.requests.push((index, listed()));
        }
    }

    fn block_rq_complete(&mut self, rq: &BlockRq, proc: Option<&Proc>, dev: i64, disk: &Disk) {
        let keep = self.keep(rq.begin, rq.end, Some(rq.size()));
        let d = self
            .disks
            .entry(dev)
            .or_insert_with(|| DiskIo::new(dev, disk.name.as_deref()));
        d.requests += 1;
        d.sectors += rq.nr_sector;
        d.total_duration += rq.end - rq.begin;
        if keep {
            match self.mode {
                Mode::Stats => d.stats.add(rq.end - rq.begin),
                Mode::Freq(_) => d.durations.push(rq.end - rq.begin),
                _ => {}
            }
        }
        if let Some(p) = proc {
            self.proc_entry(p);
            let s = &mut self.tids[&p.tid];
            if rq.write {
                s.block.write += rq.size();
            } else {
                s.block.read += rq.size();
            }
        }
    }

    fn block_device(&mut self, dev: i64, name: &str) {
        self.disks
            .entry(dev)
            .or_insert_with(|| DiskIo::new(dev, Some(name)))
            .name = name.to_string();
    }

    fn net(&mut self, send: bool, name: &str, len: i64) {
        if !self.ifaces.contains_key(name) {
            self.ifaces.insert(name.to_string(), Rw::default());
        }
        let rw = &mut self.ifaces[name];
        if send {
            rw.write += len;
        } else {
            rw.read += len;
        }
    }
}

impl Analysis for Io {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    /// System calls make its requests and descriptors; the block and
    /// network events are always followed. IRQs and pages change nothing
    /// it reports (no IRQ or page notification, nor the model's CPUs).
    fn interest(&self) -> Interest {
        Interest {
            syscalls: true,
            io: true,
            ..Interest::SCHED
        }
    }

    fn range(&mut self, begin: Option<i64>, end: Option<i64>) {
        self.range = (begin, end);
    }

    fn event(&mut self, ts: i64) {
        self.now = ts;
    }

    fn begin(&mut self, _ts: i64) {
        *self = Io {
            range: self.range,
            now: self.now,
            ..Io::with_filter(self.mode, self.filter)
        };
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        match self.mode {
            Mode::Stats => self.stats_tables(begin, end),
            Mode::Freq(res) => self.freq_tables(res, begin, end),
            Mode::Top(limit) => self.top_tables(limit, begin, end),
            Mode::Log => vec![self.log_table(begin, end).into_table()],
            Mode::Usage(limit) => self.usage_tables(limit, begin, end),
        }
    }

    fn emit<'s>(&'s mut self, state: &'s State, begin: i64, end: i64) -> Vec<lami::Emitted<'s>> {
        match self.mode {
            Mode::Log => vec![self.log_table(begin, end)],
            _ => {
                let tables = self.tables(state, begin, end);
                tables.into_iter().map(lami::Emitted::held).collect()
            }
        }
    }
}
