//! `reef-analyses`: kernel analyses over LTTng kernel traces with the
//! semantics and numbers of lttng-analyses 0.6.1 — CPU usage
//! ([`cputop`]), system call statistics ([`syscallstats`]), interrupt
//! statistics ([`irqstats`]), scheduling latencies ([`schedstats`]), page
//! allocations ([`memtop`]) and I/O: latencies, logs and usage ([`io`]) —
//! as LAMI 1.0 result tables ([`lami`]).
//!
//! Events are read by [`skim`] (or, with a filter, a [`event::Decoder`]:
//! fields found by name once per event class) into the kernel model ([`state::State`]), which tells the
//! analysis what happened; a [`Runner`] decides the analysed time range.
//!
//! [`analyse`] runs one over the traces a [`reef_read::ReadOptions`]
//! names, on lttng-analyses' time range:
//!
//! ```
//! use reef_analyses::{analyse, cputop::Cputop, lami};
//! use reef_read::ReadOptions;
//!
//! let read = ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]);
//! let (tables, stopped) = analyse(&read, Cputop::new(10), true)?;
//! assert!(stopped.is_none());
//! let json = lami::results_json(&tables); // or lami::table_text per table (lami::Emitted::held)
//! assert!(json["results"].as_array().is_some_and(|r| !r.is_empty()));
//! # Ok::<(), reef_analyses::AnalyseError>(())
//! ```
//!
//! The statistics' memory is bounded by the number of threads, CPUs,
//! descriptors and distinct system calls/IRQs in the trace, never by its
//! length: they are running sums, not lists of events. The logs, the
//! tops and the frequency distributions keep a record per latency,
//! request or handler run they list or count (a limited scheduling top
//! keeps at most its limit). A writer that takes the tables from
//! [`Runner::emit`] ([`run_model`]) gets a log's rows made as they are
//! written, from those records, rather than held as cells: what
//! `reef irqlog` and the other log commands do.

pub mod cputop;
pub mod event;
pub mod intersect;
pub mod io;
pub mod irqstats;
pub mod lami;
pub mod memtop;
pub mod run;
pub mod schedlog;
pub mod schedstats;
pub mod select;
pub mod skim;
pub mod state;
pub mod stats;
pub mod syscallstats;

pub use run::{analyse, analyse_model, is_kernel_trace, run_model, AnalyseError, Analysed};

/// An insertion-ordered map (the order of Python's dicts, which
/// lttng-analyses' ties follow) with a fast hash.
pub type IndexMap<K, V> = indexmap::IndexMap<K, V, rustc_hash::FxBuildHasher>;

use event::Event;
use lami::{Emitted, Metadata, Table};
use state::{Listener, Nobody, State};

/// An analysis: a listener of the kernel model over one period.
pub trait Analysis: Listener {
    /// The LAMI description of the analysis and its tables.
    fn metadata() -> &'static Metadata
    where
        Self: Sized;
    /// The description of what this instance makes (an analysis whose
    /// options choose its tables: `lttng-schedtop`'s, `-freq`'s).
    fn metadata_of(&self) -> &'static Metadata
    where
        Self: Sized,
    {
        Self::metadata()
    }
    /// The events whose effect on the model it reports or reads (the
    /// model then reads the others only for their time).
    fn interest(&self) -> event::Interest {
        event::Interest::ALL
    }
    /// The `--begin`/`--end` times the user gave, once known (an analysis
    /// that marks what lies outside them).
    fn range(&mut self, _begin: Option<i64>, _end: Option<i64>) {}
    /// The analysed period starts at `ts` (its first event).
    fn begin(&mut self, ts: i64);
    /// An event of the analysed period at `ts` is about to update the
    /// model (for an analysis that needs the time of what the model tells).
    #[inline]
    fn event(&mut self, _ts: i64) {}
    /// The results over [`begin`, `end`], `end` being the last event's time.
    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table>;
    /// The results as [`Analysis::tables`], for a writer: an analysis
    /// with a log makes its rows on demand, from its records, rather than
    /// holding them all as cells.
    fn emit<'s>(&'s mut self, state: &'s State, begin: i64, end: i64) -> Vec<Emitted<'s>> {
        let tables = self.tables(state, begin, end);
        tables.into_iter().map(Emitted::held).collect()
    }
}

/// Feeds events to the model and an analysis, over the time range
/// lttng-analyses uses: the model sees every event up to `end`; the
/// analysis starts at the first event at or after `begin` (or the first
/// event) and ends at the last event at or before `end`.
pub struct Runner<A> {
    pub state: State,
    pub analysis: A,
    begin_ts: Option<i64>,
    end_ts: Option<i64>,
    window: (i64, i64),
    period_begin: Option<i64>,
    last_ts: Option<i64>,
    events: u64,
}

impl<A: Analysis> Runner<A> {
    pub fn new(analysis: A, begin: Option<i64>, end: Option<i64>) -> Runner<A> {
        Runner {
            state: State::new(),
            analysis,
            begin_ts: begin,
            end_ts: end,
            window: (i64::MIN, i64::MAX),
            period_begin: None,
            last_ts: None,
            events: 0,
        }
    }

    /// Restricts the events seen at all, by the model too, to
    /// `[begin, end]`: the stream intersection of [`intersect`], which
    /// lttng-analyses applies by default.
    pub fn window(mut self, begin: i64, end: i64) -> Runner<A> {
        self.window = (begin, end);
        self
    }

    /// Processes one event; `false` once past the end of the range (the
    /// event was not processed and no further one will be).
    pub fn event(&mut self, ev: &Event) -> bool {
        if ev.ts < self.window.0 {
            return true;
        }
        if ev.ts > self.window.1 {
            return false;
        }
        if self.end_ts.is_some_and(|e| ev.ts > e) {
            self.end_ts = Some(i64::MIN);
            return false;
        }
        self.events += 1;
        // (an ignored event folded by the reader may come late: the
        // period ends at the latest)
        self.last_ts = Some(self.last_ts.map_or(ev.ts, |l| l.max(ev.ts)));
        if self.period_begin.is_none() && self.begin_ts.is_none_or(|b| ev.ts >= b) {
            self.period_begin = Some(ev.ts);
            self.analysis.begin(ev.ts);
        }
        if self.period_begin.is_some() {
            self.analysis.event(ev.ts);
            self.state.process(ev, &mut self.analysis);
        } else {
            self.state.process(ev, &mut Nobody);
        }
        true
    }

    /// The times in which an event the model ignores (`Kind::Other`)
    /// would only move the analysed period's end: once the period has
    /// begun, those in the window (and before the end). The reader may
    /// then give only the latest of such events ([`crate::skim::Next`]).
    pub fn fold_range(&self) -> Option<(i64, i64)> {
        self.period_begin?;
        let hi = self.end_ts.map_or(self.window.1, |e| e.min(self.window.1));
        Some((self.window.0, hi))
    }

    /// Number of events processed (an ignored event the reader folded
    /// counts only when it was the latest of them).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The result tables; none if no event fell in the range.
    pub fn finish(&mut self) -> Vec<Table> {
        match (self.period_begin, self.last_ts) {
            (Some(b), Some(e)) => self.analysis.tables(&self.state, b, e),
            _ => Vec::new(),
        }
    }

    /// The result tables as [`Runner::finish`], for a writer (see
    /// [`Analysis::emit`]).
    pub fn emit(&mut self) -> Vec<Emitted<'_>> {
        match (self.period_begin, self.last_ts) {
            (Some(b), Some(e)) => self.analysis.emit(&self.state, b, e),
            _ => Vec::new(),
        }
    }
}
