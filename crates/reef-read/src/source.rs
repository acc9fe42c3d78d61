//! [`Source`]: every stream of every trace under the user's paths, merged
//! in time order, trimmed to a window and filtered.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use reef_ctf::{Item, StreamCursor, Trace};
use reef_iter::time::TimeSpec;
use reef_iter::{Muxer, TraceLabel};

use crate::open::open_traces_with;
use crate::scan::{scan_one, StreamScan};
use crate::Error;

/// What to read and how: what every reading front end asks of its user.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Trace directories (or capture files), or directories searched
    /// recursively for traces.
    pub paths: Vec<PathBuf>,
    /// Skip messages before this time (babeltrace2's `--begin` formats).
    pub begin: Option<TimeSpec>,
    /// Stop after this time.
    pub end: Option<TimeSpec>,
    /// Read wall-clock `begin`/`end` times as UTC rather than local time
    /// (`TZ`).
    pub gmt: bool,
    /// Decoding threads; `None`: the number of CPUs, at most 8. 1 decodes
    /// on the calling thread.
    pub workers: Option<usize>,
    /// Keep only the events for which this expression is true
    /// (`reef_filter`'s language); notices are kept.
    pub filter: Option<String>,
    /// A Python file whose `keep(event) -> bool` keeps events (after
    /// `filter`), run by the `reef` Python package (see [`crate::script`]).
    pub script: Option<PathBuf>,
    /// Filters that are code (plugins' filters), applied after `filter`
    /// and `script` (see [`crate::keeper`]).
    pub keepers: crate::keeper::Keepers,
    /// For a live session (`net://...`): what to do when it is not, or
    /// no longer, on the relay.
    pub live_action: crate::lttng_live::SessionNotFound,
    /// Never free the traces [`Source::open`] opens (their metadata,
    /// compiled plans and mapped files): for a process that exits once it
    /// has read them, as the `reef` command does, freeing a kernel trace's
    /// thousands of event classes costs time for nothing (a tenth of a
    /// short `reef cputop`). Memory stays bounded by the traces opened.
    pub keep_traces: bool,
    /// Compile an event class's plans when its first event is decoded
    /// (or its fields looked for), not when the trace is opened
    /// ([`reef_ctf::TraceClass::load_lazy`]): a kernel trace declares
    /// hundreds of classes and uses a few. A class whose plans cannot be
    /// compiled is then reported where its first event lies, not at
    /// opening: for programs that read a trace once (the `reef` command's
    /// analyses), not for those that must reject bad metadata up front.
    pub lazy_plans: bool,
}

impl ReadOptions {
    /// Reads everything under `paths`, with the defaults.
    pub fn new<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> ReadOptions {
        ReadOptions {
            paths: paths.into_iter().map(Into::into).collect(),
            ..ReadOptions::default()
        }
    }

    /// Whether events are filtered (by an expression, a script or a
    /// keeper): readers that skip decoding must then read every event's
    /// values in time order.
    pub fn filters_events(&self) -> bool {
        self.filter.is_some() || self.script.is_some() || !self.keepers.is_empty()
    }

    /// The number of decoding threads to use.
    pub fn worker_count(&self) -> usize {
        self.workers.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(8)
        })
    }
}

/// One message of the merged sequence: an event, or a discarded-events or
/// discarded-packets notice.
pub struct Msg<'a> {
    /// Index of the stream (cursor) among all the streams of all traces.
    pub stream: usize,
    /// Index of the trace in [`Source::traces`].
    pub trace: usize,
    pub item: Item,
    /// The stream's cursor: for an event, its decoded fields
    /// (`cursor.event`, `cursor.packet_context`, `reef_ctf::access`).
    pub cursor: &'a StreamCursor,
    pub label: &'a TraceLabel,
    /// Nanoseconds from the origin, when the stream has a clock.
    pub ns: Option<i64>,
    /// The event as formatted on a worker thread, when the reader asked
    /// for it ([`Source::render_with`]); the cursor then holds no values.
    pub text: Option<&'a [u8]>,
}

type Filter = Box<dyn FnMut(&StreamCursor, Item) -> bool + Send>;

/// How far the reading is: bytes of stream data decoded so far out of the
/// total, updated by the decoding threads as they go.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Bytes of every stream file of every trace.
    pub total: u64,
    /// Bytes decoded so far.
    pub done: Arc<AtomicU64>,
}

/// Every stream of every trace, unmerged: see [`Source::into_streams`].
pub struct Streams {
    pub cursors: Vec<StreamCursor>,
    /// Each stream's rank among messages at the same time (lower first).
    pub rank: Vec<usize>,
    pub clocks: Vec<Option<reef_iter::ClockConv>>,
    /// Trace index of each stream.
    pub trace_of: Vec<usize>,
    /// The window, in ns from the clock's origin (inclusive).
    pub window: (i64, i64),
    /// What the reading reports when it ends, as [`Source::next`] does.
    pub ending: Ending,
}

/// What a reading reports when it ends: the damage of its inputs, which
/// [`Source::next`] (and every reader of [`Streams`]) gives as an error
/// after everything before the damage (see [`reef_ctf::Damage`]).
#[derive(Debug, Clone, Default)]
pub struct Ending {
    /// A capture cut inside a record: reported when the reading gets to
    /// the end of the streams, not when the window's end stops it first.
    pub cut: Option<reef_ctf::Damage>,
    /// Stream files cut inside a packet, metadata cut inside a
    /// declaration: always reported (whatever the window, the inputs
    /// are damaged).
    pub damage: Vec<reef_ctf::Damage>,
}

impl Ending {
    /// The inputs' damage, as [`Source::damage`] lists it.
    pub fn of(traces: &[Arc<Trace>]) -> Ending {
        Ending {
            cut: traces.iter().find_map(|t| t.cut.clone()),
            damage: traces
                .iter()
                .flat_map(|t| t.damage.iter().cloned())
                .collect(),
        }
    }

    /// The error a reading ends with: `stop`, the error that stopped it
    /// (if any), else the capture's cut unless `past_end` (a message after
    /// the window's end stopped the reading), with the inputs' damage.
    /// `None`: the inputs were read whole.
    pub fn error(&self, stop: Option<Error>, past_end: bool) -> Option<Error> {
        let cut = match stop {
            Some(e) => return Some(self.stopped(e)),
            None if past_end => None,
            None => self.cut.as_ref().map(|c| c.error()),
        };
        reef_ctf::Error::with_damage(cut, &self.damage).map(Error::Trace)
    }

    /// `stop`, an error that stopped the reading, with the inputs' damage.
    pub fn stopped(&self, stop: Error) -> Error {
        match stop {
            Error::Trace(e) => Error::Trace(e.and_damage(&self.damage)),
            // Not a trace's error (none comes up once the reading
            // started): as it is.
            other => other,
        }
    }
}

/// Every stream of every trace, merged in time order and trimmed.
pub struct Source {
    pub traces: Vec<Arc<Trace>>,
    pub labels: Vec<TraceLabel>,
    /// Trace index of each stream.
    pub trace_of: Vec<usize>,
    mux: Muxer,
    begin: Option<TimeSpec>,
    end: Option<TimeSpec>,
    gmt: bool,
    /// Resolved window, in ns from the origin (once the first message is known).
    window: Option<(i64, i64)>,
    filter: Option<Filter>,
    /// The script's verdicts, and the number of events they were asked for.
    verdicts: Option<(Arc<crate::script::KeepBits>, u64)>,
    /// The keepers' states, and their names for errors.
    keepers: Vec<crate::keeper::Named>,
    finished: bool,
    ending: Ending,
    /// What must live as long as the source (a live session's directory).
    keep: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// An error given once every message was (a live relay that failed).
    late_error: Option<Error>,
}

impl Source {
    /// Finds and opens the traces under `opts.paths` (see
    /// [`crate::open_traces`]), and compiles the filter.
    pub fn open(opts: &ReadOptions) -> Result<Source, Error> {
        if let Some(p) = opts.paths.iter().find(|p| crate::lttng_live::is_live(p)) {
            // A live session: read to its end (see `lttng_live`).
            if opts.paths.len() > 1 {
                return Err(Error::Address {
                    addr: p.display().to_string(),
                    expected: "one live session and no other input".into(),
                });
            }
            let url = crate::lttng_live::LiveUrl::parse(&p.to_string_lossy())?;
            return crate::lttng_live::LiveRead::open(&url, opts.live_action, opts)?.read_all();
        }
        let (traces, labels) = open_traces_with(&opts.paths, opts.lazy_plans)?;
        if opts.keep_traces {
            // A reference never dropped: the traces outlive every reader.
            traces.iter().for_each(|t| std::mem::forget(Arc::clone(t)));
        }
        Source::from_traces(traces, labels, opts)
    }

    /// A source over traces already opened (by [`crate::open_traces`] or an
    /// earlier [`Source`]): reading again from any time without parsing
    /// metadata again (a server answering queries). `opts.paths` is
    /// ignored.
    pub fn from_traces(
        traces: Vec<Arc<Trace>>,
        labels: Vec<TraceLabel>,
        opts: &ReadOptions,
    ) -> Result<Source, Error> {
        let names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
        let mux = Muxer::with_names(&traces, &names).workers(opts.worker_count());
        let trace_of = mux
            .cursors()
            .iter()
            .map(|c| {
                traces
                    .iter()
                    .position(|t| Arc::ptr_eq(t, &c.trace))
                    .unwrap_or(0)
            })
            .collect();
        let mut src = Source {
            traces,
            labels,
            trace_of,
            mux,
            begin: opts.begin,
            end: opts.end,
            gmt: opts.gmt,
            window: None,
            filter: None,
            verdicts: None,
            keepers: Vec::new(),
            finished: false,
            ending: Ending::default(),
            keep: None,
            late_error: None,
        };
        src.ending = Ending::of(&src.traces);
        if let Some(text) = &opts.filter {
            let f =
                reef_filter::EventFilter::new(text).map_err(|err| reef_filter::LocatedError {
                    what: "filter".into(),
                    text: text.clone(),
                    err,
                })?;
            src.set_filter(move |c, item| item != Item::Event || f.matches(c));
        }
        src.verdicts = crate::script::keep_bits(opts)?.map(|k| (k, 0));
        src.keepers = crate::keeper::make_all(&opts.keepers)?;
        Ok(src)
    }

    /// A source with no message.
    pub fn empty(opts: &ReadOptions) -> Result<Source, Error> {
        Source::from_traces(Vec::new(), Vec::new(), opts)
    }

    /// Keeps `v` alive as long as the source.
    pub fn keep_alive(&mut self, v: Arc<dyn std::any::Any + Send + Sync>) {
        self.keep = Some(v);
    }

    /// Ends the reading with `e` after the last message (instead of the
    /// end): what was received before a live source failed.
    pub fn fail_at_end(&mut self, e: Error) {
        self.late_error = Some(e);
    }

    /// Skips the messages for which `keep` returns false (after trimming);
    /// replaces the filter of [`ReadOptions::filter`].
    pub fn set_filter(&mut self, keep: impl FnMut(&StreamCursor, Item) -> bool + Send + 'static) {
        self.filter = Some(Box::new(keep));
    }

    /// Where an input ends inside a record (see [`reef_ctf::capture::Cut`]).
    pub fn cut(&self) -> Option<&reef_ctf::capture::Cut> {
        self.traces.iter().find_map(|t| t.cut.as_ref())
    }

    /// Where the inputs are damaged (stream files cut inside a packet,
    /// metadata cut inside a declaration; not a capture's cut): the
    /// reading delivers what lies before and ends with an error that
    /// reports these (see [`Ending`]).
    pub fn damage(&self) -> &[reef_ctf::Damage] {
        &self.ending.damage
    }

    /// What the reading reports when it ends.
    pub fn ending(&self) -> &Ending {
        &self.ending
    }

    /// The cursors of every stream (packet counts, for instance).
    pub fn cursors(&self) -> &[StreamCursor] {
        self.mux.cursors()
    }

    /// The cursors of every stream, to set how they decode (values kept
    /// or not, [`StreamCursor::values_of`]) before the first
    /// [`Source::next`].
    pub fn cursors_mut(&mut self) -> &mut [StreamCursor] {
        self.mux.cursors_mut()
    }

    /// Has the worker threads (with 2 or more) format each event as they
    /// decode it: [`Msg::text`] then holds the text and the cursor no
    /// field values. Ignored with a filter, which needs the values. Call
    /// before the first [`Source::next`].
    pub fn render_with(&mut self, factory: reef_iter::parallel::RenderFactory) {
        if self.filter.is_none() && self.verdicts.is_none() && self.keepers.is_empty() {
            self.mux.render_with(factory);
        }
    }

    /// Starts counting the bytes decoded. Call before the first
    /// [`Source::next`]; a front end polls [`Progress::done`] to draw a bar.
    pub fn progress(&mut self) -> Progress {
        let total: u64 = self
            .traces
            .iter()
            .flat_map(|t| t.sources.iter())
            .flat_map(|s| s.files.iter())
            .map(|f| f.end())
            .sum();
        let done = Arc::new(AtomicU64::new(0));
        self.mux.set_progress(&done);
        Progress { total, done }
    }

    /// Resolves the time window and moves the streams to its beginning.
    fn start(&mut self) -> Result<(), Error> {
        if self.begin.is_none() && self.end.is_none() {
            self.window = Some((i64::MIN, i64::MAX));
            return Ok(());
        }
        let first = self.mux.first_ns();
        let resolve = |t: &Option<TimeSpec>, dflt: i64| match t {
            Some(t) => t.resolve(first, self.gmt).unwrap_or(dflt),
            None => dflt,
        };
        let (b, e) = (resolve(&self.begin, i64::MIN), resolve(&self.end, i64::MAX));
        self.window = Some((b, e));
        if b != i64::MIN {
            self.mux.seek_ns(b)?;
        }
        Ok(())
    }

    /// Before the first [`Source::next`]: moves stream `i` to `places[i]`
    /// (see [`StreamCursor::go_to`]; streams past the list's end stay
    /// where the window's beginning puts them). For readers that come back
    /// to a time they read before (a viewer's checkpoints): the streams'
    /// places then must hold no message of the window before the others'.
    pub fn go_to(&mut self, places: &[reef_ctf::Place]) -> Result<(), Error> {
        if self.window.is_none() {
            self.start()?;
        }
        for (c, p) in self.mux.cursors_mut().iter_mut().zip(places) {
            c.go_to(p)?;
        }
        Ok(())
    }

    /// The next message in time order, or `None` at the end. A capture cut
    /// inside a record is an error once everything before the cut has
    /// been returned; so is a damaged input (see [`Source::damage`]), and
    /// an error that stops the reading names the damage too.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Msg<'_>>, Error> {
        if self.window.is_none() {
            if let Err(e) = self.start() {
                self.finished = true;
                return Err(self.ending.stopped(e));
            }
        }
        let (b, e) = self.window.unwrap_or((i64::MIN, i64::MAX));
        loop {
            if self.finished {
                return Ok(None);
            }
            let next = match self.mux.next() {
                Ok(n) => n,
                Err(err) => {
                    self.finished = true;
                    return Err(self.ending.stopped(err.into()));
                }
            };
            let Some(i) = next else {
                self.finished = true;
                if let Some(e) = self.late_error.take() {
                    return Err(self.ending.stopped(e));
                }
                return self.ending.error(None, false).map_or(Ok(None), Err);
            };
            let ns = self.mux.time_ns(i);
            let item = self.mux.item(i);
            if let Some(ns) = ns {
                if ns > e {
                    // Streams are in time order: nothing later can be in
                    // the window.
                    self.finished = true;
                    return self.ending.error(None, true).map_or(Ok(None), Err);
                }
                if ns < b {
                    continue;
                }
            }
            if let Some(f) = &mut self.filter {
                if !f(self.mux.cursor(i), item) {
                    continue;
                }
            }
            if let (Some((bits, n)), Item::Event) = (&mut self.verdicts, item) {
                let kept = bits.get(*n);
                *n += 1;
                match kept {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        self.finished = true;
                        return Err(self.ending.stopped(e));
                    }
                }
            }
            let trace = self.trace_of[i];
            if item == Item::Event && !self.keepers.is_empty() {
                let at = crate::keeper::KeepAt {
                    cursor: self.mux.cursor(i),
                    stream: i,
                    trace,
                    ns,
                };
                match crate::keeper::keep_all(&mut self.keepers, &at) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        self.finished = true;
                        return Err(self.ending.stopped(e));
                    }
                }
            }
            return Ok(Some(Msg {
                stream: i,
                trace,
                item,
                cursor: self.mux.cursor(i),
                label: &self.labels[trace],
                ns,
                text: if item == Item::Event {
                    self.mux.text(i)
                } else {
                    None
                },
            }));
        }
    }

    /// Gives every message to `f` in order, until `f` breaks or the end.
    /// A reading error ends the loop and is returned as `Ok(Some(error))`:
    /// what `f` saw before it stands (a report of the events before a
    /// damaged packet). So is the damage of the inputs (see
    /// [`Source::damage`]), even when `f` breaks. An error of `f`'s own
    /// stops everything.
    pub fn for_each_message<E>(
        &mut self,
        mut f: impl FnMut(&Msg<'_>) -> Result<ControlFlow<()>, E>,
    ) -> Result<Option<Error>, E> {
        loop {
            match self.next() {
                Ok(Some(m)) => {
                    if f(&m)?.is_break() {
                        return Ok(self.ending.error(None, true));
                    }
                }
                Ok(None) => return Ok(None),
                Err(e) => return Ok(Some(e)),
            }
        }
    }

    /// [`Source::for_each_message`] over the events that have a time only
    /// (given as the second argument, ns from the origin): what computing
    /// engines read.
    pub fn for_each_event<E>(
        &mut self,
        mut f: impl FnMut(&Msg<'_>, i64) -> Result<ControlFlow<()>, E>,
    ) -> Result<Option<Error>, E> {
        self.for_each_message(|m| match (m.item, m.ns) {
            (Item::Event, Some(ns)) => f(m, ns),
            _ => Ok(ControlFlow::Continue(())),
        })
    }

    /// Reads every stream to its end (or the window's), each stream on one
    /// of `workers` threads, without merging: for results per stream
    /// (`reef check`). Every field of every event is decoded; a stream
    /// going back in time is an error, as in the merged order. The source
    /// is given back when a filter is set (filters see events in time
    /// order).
    pub fn scan_streams(mut self, workers: usize) -> Result<Vec<StreamScan>, Box<Source>> {
        if self.filter.is_some() || self.verdicts.is_some() || !self.keepers.is_empty() {
            return Err(Box::new(self));
        }
        let (b, e) = match self.start() {
            Ok(()) => self.window.unwrap_or((i64::MIN, i64::MAX)),
            Err(err) => {
                return Ok(vec![StreamScan {
                    error: Some((i64::MIN, err)),
                    ..Default::default()
                }]);
            }
        };
        let cursors =
            std::mem::replace(&mut self.mux, Muxer::from_cursors(Vec::new())).into_cursors();
        let n = cursors.len();
        let work: Vec<std::sync::Mutex<Option<StreamCursor>>> = cursors
            .into_iter()
            .map(|c| std::sync::Mutex::new(Some(c)))
            .collect();
        let results: Vec<std::sync::Mutex<StreamScan>> =
            (0..n).map(|_| Default::default()).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let job = || loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if i >= n {
                return;
            }
            let taken = work[i].lock().ok().and_then(|mut c| c.take());
            if let Some(mut c) = taken {
                c.skip_values(true);
                let r = scan_one(&mut c, b, e);
                if let Ok(mut slot) = results[i].lock() {
                    *slot = r;
                }
            }
        };
        // This thread is one of the `workers`.
        std::thread::scope(|sc| {
            for _ in 1..workers.clamp(1, n.max(1)) {
                sc.spawn(job);
            }
            job();
        });
        Ok(results
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_default())
            .collect())
    }

    /// Every stream on its own, moved to the window's beginning, for a
    /// reader that merges them itself (`reef view`'s index). Messages
    /// before the window may still come first: the reader trims them, and
    /// stops each stream at the first message after the window.
    pub fn into_streams(mut self) -> Result<Streams, Error> {
        self.start()?;
        let window = self.window.unwrap_or((i64::MIN, i64::MAX));
        let (cursors, rank, clocks) =
            std::mem::replace(&mut self.mux, Muxer::from_cursors(Vec::new())).into_parts();
        Ok(Streams {
            cursors,
            rank,
            clocks,
            trace_of: self.trace_of,
            window,
            ending: self.ending,
        })
    }

    /// Whether the window has an end: reading may then stop before a
    /// capture's cut, which is no error.
    pub fn has_end(&self) -> bool {
        self.end.is_some()
    }
}
