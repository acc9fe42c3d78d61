//! The index `reef view` answers from, built in one pass over the traces
//! at decode speed in bounded memory:
//!
//! - per row, a [`Track`] of sparse bucket summaries at one resolution
//!   `2^k` ns, coarsened (k + 1) whenever the buckets of all rows outgrow
//!   the budget, so memory depends on the budget and the number of rows,
//!   never on the number of events; any coarser resolution is merged from
//!   it on demand;
//! - checkpoints every few MiB of stream data: the time, how many events of
//!   the list precede it and the previous one's time (for `reef print`'s
//!   deltas), and for the base index the kernel model and every row's
//!   value, so that a window finer than the tracks is decoded again from
//!   the nearest checkpoint before it, from the memory-mapped packets;
//! - filters (`/api/filter`) get marks and checkpoints of their own, built
//!   by a pass of their own; states never depend on a filter.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use reef_ctf::{Item, StreamCursor, Trace};
use reef_filter::EventFilter;
use reef_read::{ReadOptions, Source, TraceLabel};

use crate::buckets::Track;
use crate::model::{ClassKeys, KernelPoint, Model, OnRule, Seen, Sink, UNKNOWN};

/// Where the list stands at a checkpoint.
#[derive(Debug, Clone, Copy)]
pub struct Checkpoint {
    /// Time of the first event at or after the checkpoint (ns from the
    /// origin): every event before it was read before the checkpoint.
    pub t: i64,
    /// Events of the list (those the filter keeps) before `t`.
    pub before: u64,
    /// Time of the last of those, for the next one's delta.
    pub prev_ns: Option<i64>,
    pub prev_cycles: Option<u64>,
}

/// How far a pass is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Building,
    Ready,
    /// Stopped by a reading error; what was read before it stays.
    Error(String),
}

/// Marks (and, for the base index, states) of every row, with the list's
/// checkpoints.
#[derive(Debug)]
pub struct Marks {
    pub k: u32,
    pub tracks: Vec<Track>,
    pub checkpoints: Vec<Checkpoint>,
    /// Events of the list so far.
    pub events: u64,
    pub phase: Phase,
    pub done: Arc<AtomicU64>,
    /// The list's last event so far: time (ns from the clock's origin)
    /// and cycles.
    pub(crate) prev: (Option<i64>, Option<u64>),
}

impl Marks {
    fn new() -> Marks {
        Marks {
            k: 0,
            tracks: Vec::new(),
            checkpoints: Vec::new(),
            events: 0,
            phase: Phase::Building,
            done: Arc::new(AtomicU64::new(0)),
            prev: (None, None),
        }
    }

    pub(crate) fn track(&mut self, row: u32, rule: OnRule) -> &mut Track {
        let r = row as usize;
        while self.tracks.len() <= r {
            self.tracks.push(Track::new(OnRule::Never, UNKNOWN));
        }
        let t = &mut self.tracks[r];
        t.rule = rule;
        t
    }

    /// Buckets held, counting the vectors' spare room (what the memory
    /// costs).
    fn stored(&self) -> usize {
        self.tracks.iter().map(|t| t.buckets.capacity()).sum()
    }

    /// Coarsens until the buckets fit in `budget` (counted in buckets).
    pub(crate) fn fit(&mut self, budget: usize) {
        while self.stored() > budget && self.k < 62 {
            for t in &mut self.tracks {
                t.coarsen(self.k);
            }
            self.k += 1;
        }
    }

    /// The end of a pass: the pending changes recorded, and why it ended.
    pub(crate) fn finish(&mut self, phase: Phase) {
        for t in &mut self.tracks {
            t.commit(self.k);
        }
        self.phase = phase;
    }
}

pub(crate) struct MarkSink<'a> {
    pub(crate) m: &'a mut Marks,
}

impl Sink for MarkSink<'_> {
    fn mark(&mut self, row: u32, t: i64, class: u32) {
        let k = self.m.k;
        let rule = self
            .m
            .tracks
            .get(row as usize)
            .map_or(OnRule::Never, |t| t.rule);
        self.m.track(row, rule).mark(t, class, k);
    }
    fn value(&mut self, row: u32, t: i64, v: i32, rule: OnRule) {
        let k = self.m.k;
        self.m.track(row, rule).set(t, v, k);
    }
}

/// What is kept of the kernel model at a checkpoint of the base index.
#[derive(Debug, Clone)]
pub struct ModelPoint {
    pub kernel: KernelPoint,
    pub values: Vec<i32>,
    /// Where each stream stood (the index pass's streams), so that decoding
    /// again starts there; empty: unknown (the streams are sought to the
    /// checkpoint's time, from the start of the packets around it).
    pub places: Arc<[reef_ctf::Place]>,
}

/// The base index: rows, classes, the model, states and the marks of
/// the command line's filter.
#[derive(Debug)]
pub struct Base {
    pub model: Model,
    pub marks: Marks,
    /// One per checkpoint of `marks`.
    pub points: Vec<ModelPoint>,
    /// The first event's time, ns from the clock's origin.
    pub origin: Option<i64>,
    /// The last event's time, ns from the origin.
    pub end: i64,
    /// The end of the command line's window, ns from the clock's origin
    /// (inclusive; `i64::MAX`: none): decoding again stops there too.
    pub window_end: i64,
}

/// Which events a list or the marks keep: the command line's filter, an
/// expression, hidden classes and rows.
pub struct Pred {
    exprs: Vec<EventFilter>,
    hide_classes: HashSet<u32>,
    hide_rows: HashSet<u32>,
}

impl Pred {
    pub fn new(
        exprs: &[&str],
        hide_classes: &[u32],
        hide_rows: &[u32],
    ) -> Result<Pred, reef_filter::ExprError> {
        Ok(Pred {
            exprs: exprs
                .iter()
                .filter(|e| !e.trim().is_empty())
                .map(|e| EventFilter::new(e))
                .collect::<Result<_, _>>()?,
            hide_classes: hide_classes.iter().copied().collect(),
            hide_rows: hide_rows.iter().copied().collect(),
        })
    }

    /// Whether deciding needs the events' values (an expression).
    pub fn needs_values(&self) -> bool {
        !self.exprs.is_empty()
    }

    #[inline]
    pub fn keep(&self, cur: &StreamCursor, seen: Seen) -> bool {
        (self.hide_classes.is_empty() || !self.hide_classes.contains(&seen.class))
            && (self.hide_rows.is_empty() || seen.row.is_none_or(|r| !self.hide_rows.contains(&r)))
            && self.exprs.iter().all(|f| f.matches(cur))
    }
}

/// A filter of `/api/filter` and its marks.
pub struct FilterIx {
    pub id: u32,
    pub expr: String,
    pub hide_classes: Vec<u32>,
    pub hide_rows: Vec<u32>,
    pub marks: RwLock<Marks>,
}

/// Everything `reef view` serves: the traces, the base index and the
/// filters.
pub struct View {
    /// The traces (replaced as a trace received live grows).
    traces: RwLock<Vec<Arc<Trace>>>,
    pub labels: Vec<TraceLabel>,
    /// The command line's reading options (window, filter).
    pub opts: ReadOptions,
    pub base: RwLock<Base>,
    pub filters: Mutex<Vec<Arc<FilterIx>>>,
    /// The activities of the last definitions asked (`/api/activities`).
    pub activities: crate::activities::Cache,
    /// Bytes of stream data to read in one pass.
    pub total: u64,
    /// Index budget, in buckets.
    pub budget: usize,
    /// Stream data between checkpoints, in bytes.
    pub spacing: u64,
    /// A window finer than the index is decoded when the index's finest
    /// buckets over it hold at most this many marks; past that it is
    /// answered at the finest resolution (`/api/window`).
    pub decode_marks: u64,
}

/// The default of [`View::decode_marks`].
pub const DECODE_MARKS: u64 = 100_000;

/// How [`View::open`] sizes the index.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Memory for the buckets, in bytes (default: 1.25 % of the traces,
    /// from 4 to 32 MiB).
    pub budget: Option<u64>,
    /// See [`View::decode_marks`].
    pub decode_marks: u64,
    /// See [`View::spacing`] (default: 1/512 of the traces, at least
    /// 2 MiB).
    pub spacing: Option<u64>,
}

impl Default for Sizes {
    fn default() -> Sizes {
        Sizes {
            budget: None,
            decode_marks: DECODE_MARKS,
            spacing: None,
        }
    }
}

/// Mapped trace pages a query holds, over all its streams: each stream
/// releases the pages behind it, and maps ahead of it, in chunks of this
/// divided by the streams (64 to 128 KiB). With many streams, each
/// holding the 1 MiB a reader maps ahead by default would make the
/// trace's pages most of the server's memory (128 MB for bench/view's
/// 128-stream libreef trace), for a window that reads a few KiB of each.
const QUERY_MAPPED: usize = 4 << 20;

/// A query's release chunk for `streams` streams.
pub(crate) fn query_chunk(streams: usize) -> usize {
    (QUERY_MAPPED / streams.max(1)).clamp(64 << 10, 128 << 10)
}

/// Size of a stored bucket (for the budget).
pub const BUCKET_BYTES: usize = std::mem::size_of::<crate::buckets::Bucket>();

impl View {
    /// Opens the traces and starts building the base index on a thread of
    /// its own, sized by `sizes`.
    pub fn open(opts: ReadOptions, sizes: Sizes) -> Result<Arc<View>, reef_read::Error> {
        let (traces, labels) = reef_read::open_traces(&opts.paths)?;
        let mut read = opts.clone();
        read.filter = None;
        let mut src = Source::from_traces(traces.clone(), labels.clone(), &read)?;
        let progress = src.progress();
        let budget_bytes = sizes
            .budget
            .unwrap_or((progress.total / 80).clamp(4 << 20, 32 << 20));
        let keys = Arc::new(ClassKeys::new(&traces));
        let cli_filter = opts.filter.clone();
        let pred = Pred::new(&[cli_filter.as_deref().unwrap_or("")], &[], &[]).map_err(|err| {
            reef_filter::LocatedError {
                what: "filter".into(),
                text: cli_filter.clone().unwrap_or_default(),
                err,
            }
        })?;
        let view = View::new(
            traces,
            labels,
            opts,
            sizes,
            progress.total,
            budget_bytes,
            keys.clone(),
        );
        if let Ok(mut b) = view.base.write() {
            b.marks.done = progress.done.clone();
        }
        let v = view.clone();
        std::thread::Builder::new()
            .name("reef-view-index".into())
            .spawn(move || {
                let workers = v.opts.worker_count();
                let streams = match src.into_streams() {
                    Ok(s) => s,
                    Err(e) => {
                        if let Ok(mut b) = v.base.write() {
                            b.marks.finish(Phase::Error(e.to_string()));
                        }
                        return;
                    }
                };
                if let Ok(mut b) = v.base.write() {
                    b.window_end = streams.window.1;
                }
                match crate::pass::bounds(&streams, v.spacing / crate::pass::PER_CHECKPOINT) {
                    Some(bounds) => {
                        crate::pass::run(&v, streams, bounds, keys, cli_filter, workers)
                    }
                    None => {
                        // Packets without end times: the merged reading.
                        drop(streams);
                        let mut read = v.opts.clone();
                        read.filter = None;
                        match Source::from_traces(v.traces(), v.labels.clone(), &read) {
                            Ok(mut src) => {
                                let p = src.progress();
                                if let Ok(mut b) = v.base.write() {
                                    b.marks.done = p.done;
                                }
                                build_base(&v, src, pred)
                            }
                            Err(e) => {
                                if let Ok(mut b) = v.base.write() {
                                    b.marks.finish(Phase::Error(e.to_string()));
                                }
                            }
                        }
                    }
                }
            })
            .map_err(|e| {
                reef_read::Error::Trace(reef_ctf::Error::Io {
                    path: "thread".into(),
                    err: e,
                })
            })?;
        Ok(view)
    }

    /// A source over the same traces from `t` (ns from the origin,
    /// inclusive) to `end` (exclusive), on the calling thread.
    pub fn source(
        &self,
        origin: i64,
        t: i64,
        end: Option<i64>,
    ) -> Result<Source, reef_read::Error> {
        let mut read = self.opts.clone();
        read.filter = None;
        read.workers = Some(1);
        read.begin = Some(reef_read::TimeSpec::Ns(origin.saturating_add(t)));
        let window_end = self.base.read().map(|b| b.window_end).unwrap_or(i64::MAX);
        read.end = match end {
            Some(e) => Some(reef_read::TimeSpec::Ns(
                (origin.saturating_add(e) - 1).min(window_end),
            )),
            None => read.end,
        };
        let mut src = Source::from_traces(self.traces(), self.labels.clone(), &read)?;
        // Before anything is read (the window's seek reads each stream's
        // first packet): a query holds a little of each stream's pages,
        // and maps no more ahead than that.
        let chunk = query_chunk(src.cursors_mut().len());
        for c in src.cursors_mut() {
            c.release_every(chunk);
        }
        Ok(src)
    }

    /// An empty view over `traces`, its index sized by `sizes` for
    /// `total` bytes of stream data (no pass started).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        traces: Vec<Arc<Trace>>,
        labels: Vec<TraceLabel>,
        opts: ReadOptions,
        sizes: Sizes,
        total: u64,
        budget_bytes: u64,
        keys: Arc<ClassKeys>,
    ) -> Arc<View> {
        Arc::new(View {
            traces: RwLock::new(traces),
            labels,
            opts,
            base: RwLock::new(Base {
                model: Model::new(keys),
                marks: Marks::new(),
                points: Vec::new(),
                origin: None,
                end: 0,
                window_end: i64::MAX,
            }),
            filters: Mutex::new(Vec::new()),
            activities: Default::default(),
            total,
            budget: (budget_bytes as usize / BUCKET_BYTES).max(1024),
            spacing: sizes.spacing.unwrap_or((total / 512).max(2 << 20)).max(1),
            decode_marks: sizes.decode_marks,
        })
    }

    /// Stream data between checkpoints once `done` bytes were read: 1/512
    /// of what was read, at least [`View::spacing`], so that a trace that
    /// keeps growing (live) gets checkpoints in number logarithmic in its
    /// size (for a trace read whole, `spacing` already is 1/512 of it).
    pub fn spacing_at(&self, done: u64) -> u64 {
        self.spacing.max(done / 512)
    }

    /// The traces as they are now.
    pub fn traces(&self) -> Vec<Arc<Trace>> {
        self.traces
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the traces (the same traces, grown).
    pub(crate) fn set_traces(&self, traces: Vec<Arc<Trace>>) {
        *self.traces.write().unwrap_or_else(|e| e.into_inner()) = traces;
    }

    /// The filter with this id.
    pub fn filter(&self, id: u32) -> Option<Arc<FilterIx>> {
        self.filters
            .lock()
            .ok()?
            .iter()
            .find(|f| f.id == id)
            .cloned()
    }

    /// Finds or starts the filter for (expr, hidden classes, hidden rows).
    pub fn make_filter(
        self: &Arc<Self>,
        expr: &str,
        hide_classes: Vec<u32>,
        hide_rows: Vec<u32>,
    ) -> Result<Arc<FilterIx>, reef_filter::ExprError> {
        let pred = Pred::new(
            &[self.opts.filter.as_deref().unwrap_or(""), expr],
            &hide_classes,
            &hide_rows,
        )?;
        let mut list = self.filters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = list
            .iter()
            .find(|f| f.expr == expr && f.hide_classes == hide_classes && f.hide_rows == hide_rows)
        {
            return Ok(f.clone());
        }
        // Keep a few: drop the oldest that is not building.
        if list.len() >= 4 {
            if let Some(i) = list.iter().position(|f| {
                f.marks
                    .read()
                    .map(|m| m.phase != Phase::Building)
                    .unwrap_or(true)
            }) {
                list.remove(i);
            }
        }
        let id = list.iter().map(|f| f.id).max().unwrap_or(0) + 1;
        let f = Arc::new(FilterIx {
            id,
            expr: expr.to_string(),
            hide_classes,
            hide_rows,
            marks: RwLock::new(Marks::new()),
        });
        list.push(f.clone());
        let (v, fc) = (self.clone(), f.clone());
        let _ = std::thread::Builder::new()
            .name("reef-view-filter".into())
            .spawn(move || build_filter(&v, &fc, pred));
        Ok(f)
    }
}

/// The base pass: the model over every event, the command line's filter
/// on the marks and the list.
fn build_base(view: &View, mut src: Source, pred: Pred) {
    let mut bb = BaseBuilder::default();
    loop {
        let Ok(mut g) = view.base.write() else { return };
        let b = &mut *g;
        for _ in 0..8192 {
            let m = match src.next() {
                Ok(Some(m)) => m,
                Ok(None) => return b.marks.finish(Phase::Ready),
                Err(e) => return b.marks.finish(Phase::Error(e.to_string())),
            };
            let done = b.marks.done.load(Ordering::Relaxed);
            bb.message(view, b, &m, &pred, done);
        }
    }
}

/// Applies messages in time order to the base index (the merged
/// reading's pass, and a trace received live).
#[derive(Default)]
pub(crate) struct BaseBuilder {
    last_cp_bytes: u64,
    since_fit: u32,
    prev_t: Option<i64>,
}

impl BaseBuilder {
    /// `done`: bytes of stream data read so far (checkpoints are spaced
    /// by it).
    pub(crate) fn message(
        &mut self,
        view: &View,
        b: &mut Base,
        m: &reef_read::Msg,
        pred: &Pred,
        done: u64,
    ) {
        let (Item::Event, Some(ns)) = (m.item, m.ns) else {
            return;
        };
        let origin = *b.origin.get_or_insert(ns);
        let t = ns - origin;
        if self.prev_t.is_none_or(|p| t > p) {
            if b.marks.checkpoints.is_empty() || done >= self.last_cp_bytes + view.spacing_at(done)
            {
                self.last_cp_bytes = done;
                push_checkpoint(&mut b.marks, t);
                b.points.push(ModelPoint {
                    kernel: b.model.kernel.point(),
                    values: b.model.values(),
                    places: Arc::new([]),
                });
            }
            self.prev_t = Some(t);
        }
        b.end = b.end.max(t);
        let mut kept = false;
        b.model.event(
            m.trace,
            m.stream,
            m.cursor,
            t,
            |seen| {
                kept = pred.keep(m.cursor, seen);
                kept
            },
            &mut MarkSink { m: &mut b.marks },
        );
        if kept {
            b.marks.events += 1;
            b.marks.prev = (Some(ns), m.cursor.event.ts);
        }
        self.since_fit += 1;
        if self.since_fit >= 4096 {
            self.since_fit = 0;
            b.marks.fit(view.budget);
        }
    }
}

pub(crate) fn push_checkpoint(m: &mut Marks, t: i64) {
    m.checkpoints.push(Checkpoint {
        t,
        before: m.events,
        prev_ns: m.prev.0,
        prev_cycles: m.prev.1,
    });
}

/// A filter's pass: marks and list checkpoints only.
fn build_filter(view: &View, f: &FilterIx, pred: Pred) {
    // Rows and classes must be those of the whole base index.
    let (mut model, origin) = loop {
        match view.base.read() {
            Ok(b) if b.marks.phase != Phase::Building => break (b.model.clone(), b.origin),
            Ok(_) => {}
            Err(_) => return,
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let Some(origin) = origin else {
        if let Ok(mut m) = f.marks.write() {
            m.phase = Phase::Ready;
        }
        return;
    };
    let mut src = match view.source(origin, 0, None) {
        Ok(s) => s,
        Err(e) => {
            if let Ok(mut m) = f.marks.write() {
                m.phase = Phase::Error(e.to_string());
            }
            return;
        }
    };
    let progress = src.progress();
    if let Ok(mut m) = f.marks.write() {
        m.done = progress.done.clone();
    }
    let budget = view.budget / 2;
    let mut last_cp_bytes = 0u64;
    let mut prev_t = i64::MIN;
    let mut since_fit = 0u32;
    loop {
        let Ok(mut g) = f.marks.write() else { return };
        let mk = &mut *g;
        for _ in 0..8192 {
            let m = match src.next() {
                Ok(Some(m)) => m,
                Ok(None) => return mk.finish(Phase::Ready),
                Err(e) => return mk.finish(Phase::Error(e.to_string())),
            };
            let (Item::Event, Some(ns)) = (m.item, m.ns) else {
                continue;
            };
            let t = ns - origin;
            if t > prev_t {
                let done = mk.done.load(Ordering::Relaxed);
                if mk.checkpoints.is_empty() || done >= last_cp_bytes + view.spacing_at(done) {
                    last_cp_bytes = done;
                    push_checkpoint(mk, t);
                }
                prev_t = t;
            }
            let seen = model.locate(m.trace, m.stream, m.cursor);
            if pred.keep(m.cursor, seen) {
                mk.events += 1;
                mk.prev = (Some(ns), m.cursor.event.ts);
                if let Some(r) = seen.row {
                    MarkSink { m: mk }.mark(r, t, seen.class);
                }
            }
            since_fit += 1;
            if since_fit >= 4096 {
                since_fit = 0;
                mk.fit(budget);
            }
        }
    }
}
