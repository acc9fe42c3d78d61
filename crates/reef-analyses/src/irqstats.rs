//! Hard and soft interrupt statistics, as `lttng-irqstats`.
//!
//! - Hard IRQs (`irq_handler_entry`/`_exit`): duration from entry to the
//!   exit of the same IRQ on the same CPU; named after the names their
//!   entries gave (joined by `, ` when several).
//! - Soft IRQs (`softirq_raise`/`_entry`/`_exit`): duration from entry to
//!   exit; raise latency from raise to entry when the raise was seen.
//!   Named after the kernel's vector names (`TIMER_SOFTIRQ`, ...).
//! - Rows by IRQ number / vector; count, min, average, max and sample
//!   standard deviation (unknown under 2 values). Only these event names
//!   count: traces of newer kernels that name them `irq_softirq_*` give no
//!   soft IRQ rows, as with lttng-analyses.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::event::{Interest, Text};
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::state::{HardIrq, Listener, SoftIrq, State};
use crate::stats::Durations;
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "System interrupt analysis",
    description: "Interrupt statistics",
    tags: &["interrupt", "stats"],
    tables: &[
        TableClass {
            name: "hard-stats",
            title: "Hardware interrupt statistics",
            columns: &[
                col("Interrupt", "irq"),
                col_unit("Interrupt count", "number", "interrupts"),
                col("Minimum duration", "duration"),
                col("Average duration", "duration"),
                col("Maximum duration", "duration"),
                col("Interrupt duration standard deviation", "duration"),
            ],
        },
        TableClass {
            name: "soft-stats",
            title: "Software interrupt statistics",
            columns: &[
                col("Interrupt", "irq"),
                col_unit("Interrupt count", "number", "interrupts"),
                col("Minimum duration", "duration"),
                col("Average duration", "duration"),
                col("Maximum duration", "duration"),
                col("Interrupt duration standard deviation", "duration"),
                col_unit("Interrupt raise count", "number", "interrupt raises"),
                col("Minimum raise latency", "duration"),
                col("Average raise latency", "duration"),
                col("Maximum raise latency", "duration"),
                col("Interrupt raise latency standard deviation", "duration"),
            ],
        },
    ],
};

/// Soft IRQ vector names, from the kernel's `include/linux/interrupt.h`
/// (as of the kernels lttng-analyses 0.6 knew).
const SOFTIRQ_NAMES: [&str; 10] = [
    "HI_SOFTIRQ",
    "TIMER_SOFTIRQ",
    "NET_TX_SOFTIRQ",
    "NET_RX_SOFTIRQ",
    "BLOCK_SOFTIRQ",
    "BLOCK_IOPOLL_SOFTIRQ",
    "TASKLET_SOFTIRQ",
    "SCHED_SOFTIRQ",
    "HRTIMER_SOFTIRQ",
    "RCU_SOFTIRQ",
];

#[derive(Debug, Default)]
struct HardStats {
    names: Vec<String>,
    d: Durations,
}

#[derive(Debug, Default)]
struct SoftStats {
    d: Durations,
    latency: Durations,
}

#[derive(Debug, Default)]
pub struct Irqstats {
    hard: BTreeMap<i64, HardStats>,
    soft: BTreeMap<i64, SoftStats>,
}

impl Irqstats {
    pub fn new() -> Irqstats {
        Irqstats::default()
    }

    /// The statistics of hard IRQ `irq`, made at its first end (named
    /// "unknown" until an entry names it).
    fn hard_seen(&mut self, irq: i64) -> &mut HardStats {
        self.hard.entry(irq).or_insert_with(|| HardStats {
            names: vec!["unknown".to_string()],
            d: Durations::default(),
        })
    }
}

impl Listener for Irqstats {
    fn irq_entry(&mut self, irq: i64, name: Text) {
        let s = self.hard.entry(irq).or_default();
        // (bytes first; text not UTF-8 is compared as shown)
        if !s.names.iter().any(|n| name.is(n)) {
            let name = name.to_str();
            if !s.names.iter().any(|n| *n == name) {
                s.names.push(name.into_owned());
            }
        }
    }

    fn irq_exit(&mut self, irq: &HardIrq) {
        // lttng-analyses has no duration when either time is 0.
        if irq.begin == 0 || irq.end == 0 {
            return;
        }
        self.hard_seen(irq.irq).d.add(irq.end - irq.begin);
    }

    fn softirq_exit(&mut self, irq: &SoftIrq) {
        // Raised but never entered: no duration.
        let Some(begin) = irq.begin.filter(|&b| b != 0 && irq.end != 0) else {
            return;
        };
        let s = self.soft.entry(irq.vec).or_default();
        s.d.add(irq.end - begin);
        if let Some(r) = irq.raise {
            s.latency.add(begin - r);
        }
    }
}

impl Analysis for Irqstats {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn interest(&self) -> Interest {
        Interest {
            irqs: true,
            ..Interest::NONE
        }
    }
    fn begin(&mut self, _ts: i64) {
        self.hard.clear();
        self.soft.clear();
    }

    fn tables(&mut self, _state: &State, begin: i64, end: i64) -> Vec<Table> {
        let m = &METADATA;
        let mut hard = Table::new(&m.tables[0], begin, end);
        for (nr, s) in &self.hard {
            if s.d.count == 0 {
                continue;
            }
            let mut row = vec![lami::irq(true, *nr, Some(&s.names.join(", ")))];
            row.extend(s.d.cells());
            hard.rows.push(row);
        }
        let mut soft = Table::new(&m.tables[1], begin, end);
        for (vec, s) in &self.soft {
            if s.d.count == 0 {
                continue;
            }
            let name = usize::try_from(*vec)
                .ok()
                .and_then(|v| SOFTIRQ_NAMES.get(v))
                .copied();
            let mut row = vec![lami::irq(false, *vec, name)];
            row.extend(s.d.cells());
            row.push(lami::number(s.latency.count as i64));
            if s.latency.count == 0 {
                row.extend(std::iter::repeat_with(lami::unknown).take(4));
            } else {
                row.push(lami::duration(s.latency.min));
                row.push(lami::duration_f(s.latency.mean()));
                row.push(lami::duration(s.latency.max));
                row.push(lami::duration_opt(s.latency.stdev()));
            }
            soft.rows.push(row);
        }
        vec![hard, soft]
    }
}

/// The interrupt log's table, as `lttng-irqlog`'s.
pub static LOG_METADATA: Metadata = Metadata {
    title: "System interrupt analysis",
    description: "Interrupt log",
    tags: &["interrupt", "log"],
    tables: &[TableClass {
        name: "log",
        title: "Interrupt log",
        columns: &[
            col("Time range", "time-range"),
            col("Raised timestamp", "timestamp"),
            col("CPU", "cpu"),
            col("Interrupt", "irq"),
        ],
    }],
};

/// One handler run of the interrupt log.
#[derive(Debug, Clone, Copy)]
pub struct IrqRun {
    pub hard: bool,
    /// IRQ line, or softirq vector.
    pub nr: i64,
    pub cpu: i64,
    pub begin: i64,
    pub end: i64,
    /// A softirq's raise, when seen.
    pub raise: Option<i64>,
}

/// The interrupt log, as `lttng-irqlog`: every hard IRQ and softirq
/// handler [`Irqstats`] counts, in the order they ended: its time range,
/// when it was raised (softirqs: unknown when the raise was not seen;
/// hard IRQs: null), its CPU and the interrupt, named as in the
/// statistics (a hard IRQ by every handler name seen for its line).
#[derive(Debug, Default)]
pub struct Irqlog {
    stats: Irqstats,
    /// The runs (the log only).
    pub log: Vec<IrqRun>,
    /// With [`Irqlog::freq`]: the buckets of its distributions.
    freq: Option<usize>,
    /// The distributions' durations, by (softirq, number), in the order
    /// the interrupts first ended (8 bytes a run, not a log entry).
    durations: crate::IndexMap<(bool, i64), Vec<i64>>,
    /// The shortest and longest of all.
    extent: Option<(i64, i64)>,
    /// How they are drawn.
    opts: crate::stats::FreqOpts,
    /// The interrupts they show (`--irq`/`--softirq`; the range of
    /// uniform ones comes from all).
    only: crate::select::Select,
}

/// `lttng-irqfreq`'s tables.
pub static FREQ: TableClass = TableClass {
    name: "freq",
    title: "Interrupt handler duration frequency distribution",
    columns: &[
        col("Duration (lower bound)", "duration"),
        col("Duration (upper bound)", "duration"),
        col_unit("Interrupt count", "number", "interrupts"),
    ],
};

pub static FREQ_METADATA: Metadata = Metadata {
    title: "System interrupt analysis",
    description: "Interrupt handler duration frequency distribution",
    tags: &["interrupt", "freq"],
    tables: std::slice::from_ref(&FREQ),
};

impl Irqlog {
    pub fn new() -> Irqlog {
        Irqlog::default()
    }

    /// A frequency distribution of `resolution` buckets per interrupt
    /// (hard IRQs by line, then softirqs by vector, each named as in the
    /// statistics), as `lttng-irqfreq` (see [`crate::stats::freq_rows`]).
    pub fn freq(resolution: usize) -> Irqlog {
        Irqlog {
            freq: Some(resolution),
            ..Irqlog::default()
        }
    }

    /// Distributions drawn as lttng-irqfreq's options say, of the
    /// interrupts `only`'s `--irq`/`--softirq` lists keep.
    pub fn with_freq(self, opts: crate::stats::FreqOpts, only: crate::select::Select) -> Irqlog {
        Irqlog { opts, only, ..self }
    }

    fn name(&self, hard: bool, nr: i64) -> String {
        if hard {
            self.stats
                .hard
                .get(&nr)
                .map(|s| s.names.join(", "))
                .unwrap_or_else(|| "unknown".into())
        } else {
            usize::try_from(nr)
                .ok()
                .and_then(|v| SOFTIRQ_NAMES.get(v))
                .copied()
                .unwrap_or("unknown")
                .to_string()
        }
    }

    fn freq_tables(&self, res: usize, begin: i64, end: i64) -> Vec<Table> {
        // Hard IRQs first (`soft` false sorts them before), by number.
        let mut by: Vec<(&(bool, i64), &Vec<i64>)> = self
            .durations
            .iter()
            .filter(|((soft, nr), _)| self.only.irq(!soft, *nr))
            .collect();
        by.sort_unstable_by_key(|(k, _)| **k);
        // (the range of all durations needs only their extremes)
        let all = self.extent.map_or(Vec::new(), |(lo, hi)| vec![lo, hi]);
        let (min, max) = self.opts.range(&all);
        let tables: Vec<Table> = by
            .iter()
            .map(|(&(soft, nr), d)| {
                let mut t = Table::new(&FREQ, begin, end);
                t.subtitle = Some(format!("{} ({nr})", self.name(!soft, nr)));
                t.rows = crate::stats::freq_rows(d, min, max, res);
                t
            })
            .collect();
        let title = "Interrupt handlers duration frequency distributions";
        self.opts.arrange(tables, &FREQ, title, "interrupts")
    }
}

impl Irqlog {
    /// A run's duration, for the distributions.
    fn add_duration(&mut self, soft: bool, nr: i64, d: i64) {
        self.durations.entry((soft, nr)).or_default().push(d);
        let (lo, hi) = self.extent.get_or_insert((d, d));
        (*lo, *hi) = ((*lo).min(d), (*hi).max(d));
    }
}

impl Listener for Irqlog {
    fn irq_entry(&mut self, irq: i64, name: Text) {
        self.stats.irq_entry(irq, name);
    }

    fn irq_exit(&mut self, irq: &HardIrq) {
        if irq.begin == 0 || irq.end == 0 {
            return;
        }
        // (the log and the distributions name an IRQ as the statistics
        // do, and read nothing else of them)
        self.stats.hard_seen(irq.irq);
        if self.freq.is_some() {
            self.add_duration(false, irq.irq, irq.end - irq.begin);
            return;
        }
        self.log.push(IrqRun {
            hard: true,
            nr: irq.irq,
            cpu: irq.cpu,
            begin: irq.begin,
            end: irq.end,
            raise: None,
        });
    }

    fn softirq_exit(&mut self, irq: &SoftIrq) {
        let Some(begin) = irq.begin.filter(|&b| b != 0 && irq.end != 0) else {
            return;
        };
        if self.freq.is_some() {
            self.add_duration(true, irq.vec, irq.end - begin);
            return;
        }
        self.log.push(IrqRun {
            hard: false,
            nr: irq.vec,
            cpu: irq.cpu,
            begin,
            end: irq.end,
            raise: irq.raise,
        });
    }
}

impl Analysis for Irqlog {
    fn metadata() -> &'static Metadata {
        &LOG_METADATA
    }

    fn metadata_of(&self) -> &'static Metadata {
        match self.freq {
            Some(_) => &FREQ_METADATA,
            None => &LOG_METADATA,
        }
    }

    fn interest(&self) -> Interest {
        Interest {
            irqs: true,
            ..Interest::NONE
        }
    }
    fn begin(&mut self, ts: i64) {
        self.stats.begin(ts);
        self.log.clear();
        self.durations.clear();
        self.extent = None;
    }

    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        if let Some(res) = self.freq {
            return self.freq_tables(res, begin, end);
        }
        let emitted = self.emit(state, begin, end);
        emitted.into_iter().map(lami::Emitted::into_table).collect()
    }

    fn emit<'s>(&'s mut self, _state: &'s State, begin: i64, end: i64) -> Vec<lami::Emitted<'s>> {
        if let Some(res) = self.freq {
            let tables = self.freq_tables(res, begin, end);
            return tables.into_iter().map(lami::Emitted::held).collect();
        }
        let t = Table::new(&LOG_METADATA.tables[0], begin, end);
        let this: &'s Irqlog = self;
        let rows = move |f: &mut dyn FnMut(&[lami::Cell])| {
            // (each interrupt's name made once, shared by its rows)
            let mut names: HashMap<(bool, i64), std::sync::Arc<str>> = HashMap::default();
            for r in &this.log {
                let name = names
                    .entry((r.hard, r.nr))
                    .or_insert_with(|| this.name(r.hard, r.nr).into());
                let raised = match r.hard {
                    true => lami::Cell::Null,
                    false => r.raise.map_or_else(lami::unknown, lami::timestamp),
                };
                f(&[
                    lami::time_range_cell(r.begin, r.end),
                    raised,
                    lami::cpu(r.cpu),
                    lami::irq_shared(r.hard, r.nr, Some(name)),
                ]);
            }
        };
        vec![lami::Emitted::made(t, this.log.len(), Box::new(rows))]
    }
}
