//! Pages allocated and freed per thread, as `lttng-memtop`.
//!
//! - `mm_page_alloc` / `kmem_mm_page_alloc` count for the thread running on
//!   the event's CPU (none while idle or before the CPU's first switch).
//! - `mm_page_free` / `kmem_mm_page_free` likewise, but only while more
//!   pages were seen allocated than freed since the start of the trace.
//! - Top tables by allocated and by freed pages (ties in order of first
//!   appearance), at most `limit` rows each (0: all), and the totals over
//!   every thread. A thread's name is the one it had when first counted.

use crate::IndexMap;

use crate::event::Interest;
use crate::lami::{self, col_unit, Metadata, Table, TableClass};
use crate::state::{Listener, Proc, State};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "Top memory usage",
    description: "Per-TID top allocated/freed memory",
    tags: &["memory", "top"],
    tables: &[
        TableClass {
            name: "allocd",
            title: "Per-TID top allocated memory",
            columns: &[
                lami::col("Process", "process"),
                col_unit("Allocated pages", "number", "pages"),
            ],
        },
        TableClass {
            name: "freed",
            title: "Per-TID top freed memory",
            columns: &[
                lami::col("Process", "process"),
                col_unit("Freed pages", "number", "pages"),
            ],
        },
        TableClass {
            name: "total",
            title: "Total allocated/freed memory",
            columns: &[
                col_unit("Total allocated pages", "number", "pages"),
                col_unit("Total freed pages", "number", "pages"),
            ],
        },
    ],
};

#[derive(Debug)]
struct ThreadStats {
    comm: String,
    allocated: i64,
    freed: i64,
}

#[derive(Debug)]
pub struct Memtop {
    limit: usize,
    tids: IndexMap<i64, ThreadStats>,
}

impl Memtop {
    pub fn new(limit: usize) -> Memtop {
        Memtop {
            limit,
            tids: IndexMap::default(),
        }
    }

    fn thread(&mut self, p: &Proc) -> &mut ThreadStats {
        self.tids.entry(p.tid).or_insert_with(|| ThreadStats {
            comm: p.comm.clone(),
            allocated: 0,
            freed: 0,
        })
    }

    fn top(&self, class: &'static TableClass, begin: i64, end: i64, allocated: bool) -> Table {
        let get = |t: &ThreadStats| if allocated { t.allocated } else { t.freed };
        let mut v: Vec<(&i64, &ThreadStats)> = self.tids.iter().collect();
        v.sort_by_key(|t| std::cmp::Reverse(get(t.1)));
        let mut t = Table::new(class, begin, end);
        for (tid, s) in v {
            if self.limit > 0 && t.rows.len() >= self.limit {
                break;
            }
            t.rows.push(vec![
                lami::process(Some(&s.comm), None, Some(*tid)),
                lami::number(get(s)),
            ]);
        }
        t
    }
}

impl Listener for Memtop {
    fn page_alloc(&mut self, proc: &Proc, _cpu: i64) {
        self.thread(proc).allocated += 1;
    }

    fn page_free(&mut self, proc: &Proc, _cpu: i64) {
        self.thread(proc).freed += 1;
    }
}

impl Analysis for Memtop {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn interest(&self) -> Interest {
        Interest {
            pages: true,
            ..Interest::THREADS
        }
    }
    fn begin(&mut self, _ts: i64) {
        self.tids.clear();
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let mut total = Table::new(&m.tables[2], begin, end);
        let (a, f) = self
            .tids
            .values()
            .fold((0, 0), |(a, f), t| (a + t.allocated, f + t.freed));
        total.rows.push(vec![lami::number(a), lami::number(f)]);
        vec![
            self.top(&m.tables[0], begin, end, true),
            self.top(&m.tables[1], begin, end, false),
            total,
        ]
    }
}
