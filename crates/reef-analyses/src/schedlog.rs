//! The scheduling latency log, as `lttng-schedlog`: one row per latency
//! [`crate::schedstats`] counts (a thread's first wakeup to its being
//! switched in), in the order of the switches: wakeup and switch times,
//! the latency, the woken thread's priority when switched in, the CPU it
//! was switched in on, the woken thread and the thread that woke it (null
//! when the wakeup came from an interrupt or was not seen).
//!
//! Threads are named as lttng-analyses names them in its log: with the
//! name and process id they have at the end of the analysed period (its
//! log holds the model's thread objects, read when the table is made).
//!
//! The same latencies make `lttng-schedtop`'s table ([`Schedlog::top`]:
//! the longest, ties in the order of the log) and `lttng-schedfreq`'s
//! ([`Schedlog::freq`]: a frequency distribution in total, per woken
//! thread by tid, per priority; see [`crate::stats::freq_rows`]).

use rustc_hash::FxHashMap as HashMap;

use crate::event::Interest;
use crate::lami::{self, col, Metadata, Table, TableClass};
use crate::state::{Listener, State, Switch};
use crate::stats::Smallest;
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "Scheduling latencies analysis",
    description: "Scheduling latencies log",
    tags: &["sched", "log"],
    tables: &[TableClass {
        name: "log",
        title: "Scheduling log",
        columns: &[
            col("Wakeup timestamp", "timestamp"),
            col("Switch timestamp", "timestamp"),
            col("Scheduling latency", "duration"),
            col("Priority", "number"),
            col("Target CPU", "cpu"),
            col("Wakee process", "process"),
            col("Waker process", "process"),
        ],
    }],
};

/// One latency: wakeup and switch times, priority, CPU, wakee and waker
/// (by tid: they are named as the model knows them at the end, and it
/// keeps every thread it saw).
#[derive(Debug, Clone)]
pub struct SchedLatency {
    pub wakeup: i64,
    pub switch: i64,
    pub prio: Option<i64>,
    pub cpu: i64,
    pub wakee: i64,
    pub waker: Option<i64>,
}

/// The table of the top latencies.
pub static TOP: TableClass = TableClass {
    name: "top",
    title: "Scheduling top",
    columns: METADATA.tables[0].columns,
};

/// The frequency distribution tables.
pub static FREQ: TableClass = TableClass {
    name: "freq",
    title: "Scheduling latency frequency distribution",
    columns: &[
        col("Duration (lower bound)", "duration"),
        crate::lami::col("Duration (upper bound)", "duration"),
        crate::lami::col_unit("Scheduling count", "number", "schedulings"),
    ],
};

pub static TOP_METADATA: Metadata = Metadata {
    title: "Scheduling latencies analysis",
    description: "Scheduling latencies top",
    tags: &["sched", "top"],
    tables: std::slice::from_ref(&TOP),
};

pub static FREQ_METADATA: Metadata = Metadata {
    title: "Scheduling latencies analysis",
    description: "Scheduling latencies frequency distribution",
    tags: &["sched", "freq"],
    tables: std::slice::from_ref(&FREQ),
};

/// Which table [`Schedlog`] makes.
#[derive(Debug, Clone, Copy, Default)]
enum Output {
    #[default]
    Log,
    Top(usize),
    Freq(crate::schedstats::Groups, usize),
}

#[derive(Debug, Default)]
pub struct Schedlog {
    /// The log (every latency, as `lttng-schedlog` lists them; the top
    /// when it is unlimited).
    pub log: Vec<SchedLatency>,
    /// The distributions' latencies: (wakee's tid, priority, latency).
    lats: Vec<(i64, Option<i64>, i64)>,
    /// The top of a limited `lttng-schedtop`: the longest latencies so
    /// far (at most the limit), the shortest of them on top.
    top: Smallest<(std::cmp::Reverse<i64>, u64), SchedLatency>,
    /// Latencies seen so far (their order among equal latencies).
    seen: u64,
    output: Output,
    /// How the distributions are drawn.
    opts: crate::stats::FreqOpts,
}

impl Schedlog {
    pub fn new() -> Schedlog {
        Schedlog::default()
    }

    /// Distributions drawn as lttng-schedfreq's options say.
    pub fn with_freq(self, opts: crate::stats::FreqOpts) -> Schedlog {
        Schedlog { opts, ..self }
    }

    /// The `limit` longest latencies (0: all), as `lttng-schedtop`.
    pub fn top(limit: usize) -> Schedlog {
        Schedlog {
            output: Output::Top(if limit == 0 { usize::MAX } else { limit }),
            ..Schedlog::default()
        }
    }

    /// Frequency distributions of `resolution` buckets, as
    /// `lttng-schedfreq`.
    pub fn freq(groups: crate::schedstats::Groups, resolution: usize) -> Schedlog {
        Schedlog {
            output: Output::Freq(groups, resolution),
            ..Schedlog::default()
        }
    }

    /// The row of `l`; `known` holds the cells of the threads the model
    /// knows at the end, made once each.
    fn row(
        state: &State,
        known: &mut HashMap<i64, lami::Cell>,
        l: &SchedLatency,
    ) -> [lami::Cell; 7] {
        [
            lami::timestamp(l.wakeup),
            lami::timestamp(l.switch),
            lami::duration(l.switch - l.wakeup),
            l.prio.map_or(lami::Cell::Null, lami::number),
            lami::cpu(l.cpu),
            process(state, known, l.wakee),
            l.waker
                .map_or(lami::Cell::Null, |w| process(state, known, w)),
        ]
    }

    fn freq_tables(
        &self,
        groups: crate::schedstats::Groups,
        res: usize,
        begin: i64,
        end: i64,
    ) -> Vec<Table> {
        use std::collections::BTreeMap;
        let all: Vec<i64> = self.lats.iter().map(|l| l.2).collect();
        // (every group holds all the latencies, so one range serves all)
        let (min, max) = self.opts.range(&all);
        let table = |subtitle: Option<String>, lats: &[i64]| {
            let mut t = Table::new(&FREQ, begin, end);
            t.subtitle = subtitle;
            t.rows = crate::stats::freq_rows(lats, min, max, res);
            t
        };
        let series = |tables: Vec<Table>| {
            let title = "Scheduling latencies frequency distributions";
            self.opts.arrange(tables, &FREQ, title, "schedulings")
        };
        let mut out = Vec::new();
        if groups.total {
            out.push(table(None, &all));
        }
        if groups.per_tid {
            let mut by: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for &(tid, _, lat) in &self.lats {
                by.entry(tid).or_default().push(lat);
            }
            out.extend(series(
                by.iter()
                    .map(|(tid, lats)| table(Some(format!("TID: {tid}")), lats))
                    .collect(),
            ));
        }
        if groups.per_prio {
            let mut by: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for &(_, prio, lat) in &self.lats {
                if let Some(p) = prio {
                    by.entry(p).or_default().push(lat);
                }
            }
            out.extend(series(
                by.iter()
                    .map(|(prio, lats)| table(Some(format!("Priority: {prio}")), lats))
                    .collect(),
            ));
        }
        out
    }
}

impl Listener for Schedlog {
    fn sched_switch(&mut self, sw: &Switch) {
        let Some(wakeup) = sw.wakee.last_wakeup else {
            return;
        };
        let lat = sw.ts - wakeup;
        let latency = || SchedLatency {
            wakeup,
            switch: sw.ts,
            prio: sw.wakee.prio,
            cpu: sw.cpu,
            wakee: sw.wakee.tid,
            waker: sw.waker.map(|w| w.tid),
        };
        match self.output {
            Output::Freq(..) => self.lats.push((sw.wakee.tid, sw.wakee.prio, lat)),
            Output::Top(limit) if limit < usize::MAX => {
                let seq = self.seen;
                self.seen += 1;
                self.top
                    .offer(limit, (std::cmp::Reverse(lat), seq), latency);
            }
            _ => self.log.push(latency()),
        }
    }
}

/// A thread as the log names it: as the model knows it at the end (its
/// cell made once, in `known`). The model keeps every thread it saw (one
/// it would not know is named by its tid alone).
fn process(state: &State, known: &mut HashMap<i64, lami::Cell>, tid: i64) -> lami::Cell {
    known
        .entry(tid)
        .or_insert_with(|| match state.tids.get(&tid) {
            Some(p) => lami::process(Some(&p.comm), p.pid, Some(p.tid)),
            None => lami::process(None, None, Some(tid)),
        })
        .clone()
}

impl Analysis for Schedlog {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn metadata_of(&self) -> &'static Metadata {
        match self.output {
            Output::Log => &METADATA,
            Output::Top(_) => &TOP_METADATA,
            Output::Freq(..) => &FREQ_METADATA,
        }
    }

    fn interest(&self) -> Interest {
        Interest::SCHED
    }
    fn begin(&mut self, _ts: i64) {
        self.log.clear();
        self.lats.clear();
        self.top.clear();
        self.seen = 0;
    }

    fn emit<'s>(&'s mut self, state: &'s State, begin: i64, end: i64) -> Vec<lami::Emitted<'s>> {
        if !matches!(self.output, Output::Log) {
            let tables = self.tables(state, begin, end);
            return tables.into_iter().map(lami::Emitted::held).collect();
        }
        let t = Table::new(&METADATA.tables[0], begin, end);
        let log = &self.log;
        let rows = move |f: &mut dyn FnMut(&[lami::Cell])| {
            let mut known = HashMap::default();
            for l in log {
                f(&Self::row(state, &mut known, l));
            }
        };
        vec![lami::Emitted::made(t, log.len(), Box::new(rows))]
    }

    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        match self.output {
            Output::Log => {
                let emitted = self.emit(state, begin, end);
                emitted.into_iter().map(lami::Emitted::into_table).collect()
            }
            Output::Top(limit) => {
                let mut top: Vec<&SchedLatency> = if limit < usize::MAX {
                    // (longest first, then in log order)
                    self.top.sorted()
                } else {
                    self.log.iter().collect()
                };
                // Stable: ties keep the log's order, as lttng-schedtop.
                top.sort_by_key(|l| std::cmp::Reverse(l.switch - l.wakeup));
                let mut t = Table::new(&TOP, begin, end);
                let mut known = HashMap::default();
                let rows = top.iter().take(limit);
                t.rows = rows
                    .map(|l| Self::row(state, &mut known, l).to_vec())
                    .collect();
                vec![t]
            }
            Output::Freq(groups, res) => self.freq_tables(groups, res, begin, end),
        }
    }
}
