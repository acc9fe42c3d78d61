//! Scheduling latency statistics, as `lttng-schedstats`.
//!
//! - A scheduling latency is the time from a thread's first wakeup
//!   (`sched_wakeup`, `sched_wakeup_new`, `sched_waking`) to its being
//!   switched in; wakeups of a thread already running are ignored (see
//!   [`crate::state`]).
//! - Tables: total (count, min, average, max, sample standard deviation),
//!   per thread (by name, case-insensitively, ties in order of first
//!   appearance; with the thread's chronological priorities) and per
//!   priority (the woken thread's priority when switched in). An empty
//!   total has count 0 and zero durations.
//! - Threads with no latency of their own (seen only as wakers) have no
//!   per-thread row; a thread's name is the one it had when first seen.

use std::collections::BTreeMap;

use crate::IndexMap;

use crate::event::Interest;
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::state::{Listener, Proc, State, Switch};
use crate::stats::{prio_list, Durations};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "Scheduling latencies analysis",
    description: "Scheduling latencies statistics",
    tags: &["sched", "stats"],
    tables: &[
        TableClass {
            name: "total_stats",
            title: "Scheduling latency stats (total)",
            columns: &[
                col_unit("Scheduling count", "number", "schedulings"),
                col("Minimum latency", "duration"),
                col("Average latency", "duration"),
                col("Maximum latency", "duration"),
                col("Scheduling latency standard deviation", "duration"),
            ],
        },
        TableClass {
            name: "per_tid_stats",
            title: "Scheduling latency stats (per-TID)",
            columns: &[
                col("Wakee process", "process"),
                col_unit("Scheduling count", "number", "schedulings"),
                col("Minimum latency", "duration"),
                col("Average latency", "duration"),
                col("Maximum latency", "duration"),
                col("Scheduling latency standard deviation", "duration"),
                col("Chronological priorities", "string"),
            ],
        },
        TableClass {
            name: "per_prio_stats",
            title: "Scheduling latency stats (per-prio)",
            columns: &[
                col("Priority", "number"),
                col_unit("Scheduling count", "number", "schedulings"),
                col("Minimum latency", "duration"),
                col("Average latency", "duration"),
                col("Maximum latency", "duration"),
                col("Scheduling latency standard deviation", "duration"),
            ],
        },
    ],
};

#[derive(Debug)]
struct ThreadStats {
    comm: String,
    d: Durations,
    prios: Vec<i64>,
}

/// Which tables to produce.
#[derive(Debug, Clone, Copy)]
pub struct Groups {
    pub total: bool,
    pub per_tid: bool,
    pub per_prio: bool,
}

#[derive(Debug)]
pub struct Schedstats {
    groups: Groups,
    total: Durations,
    tids: IndexMap<i64, ThreadStats>,
    prios: BTreeMap<i64, Durations>,
}

impl Schedstats {
    pub fn new(groups: Groups) -> Schedstats {
        Schedstats {
            groups,
            total: Durations::default(),
            tids: IndexMap::default(),
            prios: BTreeMap::new(),
        }
    }

    fn thread(&mut self, p: &Proc) -> &mut ThreadStats {
        self.tids.entry(p.tid).or_insert_with(|| ThreadStats {
            comm: p.comm.clone(),
            d: Durations::default(),
            prios: p.prio.into_iter().collect(),
        })
    }
}

impl Listener for Schedstats {
    fn sched_switch(&mut self, sw: &Switch) {
        let Some(wakeup) = sw.wakee.last_wakeup else {
            return;
        };
        let latency = sw.ts - wakeup;
        if let Some(w) = sw.waker {
            self.thread(w);
        }
        self.thread(sw.wakee).d.add(latency);
        self.total.add(latency);
        if let Some(p) = sw.wakee.prio {
            self.prios.entry(p).or_default().add(latency);
        }
    }

    fn prio_changed(&mut self, _ts: i64, tid: i64, prio: i64) {
        if let Some(t) = self.tids.get_mut(&tid) {
            t.prios.push(prio);
        }
    }
}

impl Analysis for Schedstats {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn interest(&self) -> Interest {
        Interest::SCHED
    }
    fn begin(&mut self, _ts: i64) {
        self.total = Durations::default();
        self.tids.clear();
        self.prios.clear();
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let mut out = Vec::new();
        if self.groups.total {
            let mut t = Table::new(&m.tables[0], begin, end);
            let d = &self.total;
            t.rows.push(if d.count == 0 {
                vec![
                    lami::number(0),
                    lami::duration(0),
                    lami::duration(0),
                    lami::duration(0),
                    lami::unknown(),
                ]
            } else {
                d.cells().to_vec()
            });
            out.push(t);
        }
        if self.groups.per_tid {
            let mut t = Table::new(&m.tables[1], begin, end);
            let mut threads: Vec<(&i64, &ThreadStats, String)> = self
                .tids
                .iter()
                .map(|(tid, s)| (tid, s, s.comm.to_lowercase()))
                .collect();
            threads.sort_by(|a, b| a.2.cmp(&b.2));
            for (tid, s, _) in threads {
                if s.d.count == 0 {
                    continue;
                }
                let mut row = vec![lami::process(Some(&s.comm), None, Some(*tid))];
                row.extend(s.d.cells());
                row.push(lami::string(&prio_list(&s.prios)));
                t.rows.push(row);
            }
            out.push(t);
        }
        if self.groups.per_prio {
            let mut t = Table::new(&m.tables[2], begin, end);
            for (prio, d) in &self.prios {
                let mut row = vec![lami::number(*prio)];
                row.extend(d.cells());
                t.rows.push(row);
            }
            out.push(t);
        }
        out
    }
}
