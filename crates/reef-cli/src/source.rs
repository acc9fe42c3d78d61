//! The reading options every reading command shares, and the merged,
//! time-ordered event source they iterate.
//!
//! A command that reads traces flattens [`ReadOpts`] into its arguments and
//! iterates a [`Source`]:
//!
//! ```ignore
//! #[derive(clap::Args)]
//! pub struct StatsArgs {
//!     #[command(flatten)]
//!     pub read: crate::source::ReadOpts,
//!     // ... the command's own options
//! }
//!
//! pub fn run(a: &StatsArgs) -> anyhow::Result<ExitCode> {
//!     let mut src = crate::source::Source::open(&a.read)?;
//!     while let Some(m) = src.next()? {
//!         if m.item == reef_ctf::Item::Event {
//!             let name = m.cursor.event_name();   // fields: reef_ctf::access
//!             // ...
//!         }
//!     }
//!     Ok(ExitCode::SUCCESS)
//! }
//! ```
//!
//! [`Source::open`] finds the traces under the paths (recursively), merges
//! directories that share a trace UUID (LTTng rotation chunks) into one
//! trace, names each trace as babeltrace2 does (for tie-breaks and the
//! `trace` field), and merges every stream of every trace in time order.
//! `--begin`/`--end` trim the messages to a time window (babeltrace2's
//! formats, local time unless [`Source::set_gmt`]); streams are first moved
//! to the packet holding `--begin` (LTTng index files, or packet contexts)
//! rather than decoded from their start. `-j N` decodes streams on N worker
//! threads; the order and content of messages do not depend on N.
//!
//! Per-message filtering (e.g. a `--filter` expression) goes through
//! [`Source::set_filter`]: a message the filter rejects is skipped inside
//! [`Source::next`], after the time window.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;
use reef_ctf::{EnvValue, Error, Item, StreamCursor, Trace, TraceClass};
use reef_iter::time::TimeSpec;
use reef_iter::{find_traces, Muxer};
use reef_print::TraceLabel;

/// Options shared by every command that reads traces.
#[derive(clap::Args, Debug, Clone)]
pub struct ReadOpts {
    /// Trace directories, or directories searched recursively for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Skip messages before this time: `YYYY-MM-DD HH:II[:SS[.NANO]]`,
    /// `HH:II[:SS[.NANO]]` (on the first message's date) or `[-]SEC[.NANO]`
    /// (from the clock's origin), as babeltrace2's --begin.
    #[arg(long, value_name = "TIME")]
    pub begin: Option<TimeSpec>,
    /// Stop after this time (same formats as --begin).
    #[arg(long, value_name = "TIME")]
    pub end: Option<TimeSpec>,
    /// Decode streams on this many worker threads (default: the number of
    /// CPUs, at most 8; 1 decodes on the main thread).
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    /// Keep only the events for which this expression is true, e.g.
    /// `$evt.$name == "sched_*" && $evt.cpu_id == 1` (see the README's
    /// "Filter expressions"). Discarded-events notices are kept.
    #[arg(long, value_name = "EXPR", value_parser = parse_filter)]
    pub filter: Option<String>,
}

/// Checks a `--filter` expression when the command line is parsed, so that
/// a bad one is a usage error (exit status 2) showing where it is wrong.
fn parse_filter(s: &str) -> Result<String, String> {
    reef_filter::EventFilter::new(s)
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
}

impl ReadOpts {
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

/// babeltrace2's name for a trace: its `hostname` env entry, then its path
/// relative to the input directory it was found under, joined by `/`.
pub fn trace_label(trace: &Trace, input: &std::path::Path) -> TraceLabel {
    let mut name = match trace.meta().env_get("hostname") {
        Some(EnvValue::Str(s)) => s.clone(),
        _ => String::new(),
    };
    if let Ok(rel) = trace.path.strip_prefix(input) {
        let rel = rel.to_string_lossy();
        if !rel.is_empty() {
            if !name.is_empty() {
                name.push('/');
            }
            name.push_str(&rel);
        }
    }
    TraceLabel { name }
}

/// Finds and opens the traces under `paths`, with their labels. Trace
/// directories that share a trace UUID are merged into one trace, named by
/// its hostname alone, as babeltrace2 does.
pub fn open_all(paths: &[PathBuf]) -> anyhow::Result<(Vec<Arc<Trace>>, Vec<TraceLabel>)> {
    struct Found {
        class: TraceClass,
        dirs: Vec<PathBuf>,
        input: PathBuf,
    }
    let mut found: Vec<Found> = Vec::new();
    for input in paths {
        let dirs = find_traces(std::slice::from_ref(input))?;
        if dirs.is_empty() {
            bail!(
                "no CTF trace (a directory holding a `metadata` file) found under {}",
                input.display()
            );
        }
        for dir in dirs {
            let class = TraceClass::load(&dir)?;
            let same = class
                .meta
                .uuid
                .and_then(|u| found.iter_mut().find(|f| f.class.meta.uuid == Some(u)));
            match same {
                Some(f) => f.dirs.push(dir),
                None => found.push(Found {
                    class,
                    dirs: vec![dir],
                    input: input.clone(),
                }),
            }
        }
    }
    let mut traces = Vec::new();
    let mut labels = Vec::new();
    for f in found {
        let merged = f.dirs.len() > 1;
        let t = Arc::new(Trace::from_class(f.class, &f.dirs)?);
        labels.push(if merged {
            TraceLabel {
                name: match t.meta().env_get("hostname") {
                    Some(EnvValue::Str(s)) => s.clone(),
                    _ => String::new(),
                },
            }
        } else {
            trace_label(&t, &f.input)
        });
        traces.push(t);
    }
    Ok((traces, labels))
}

/// One message of the merged sequence.
#[allow(dead_code)] // `stream` is for the commands that need it
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

type Filter = Box<dyn FnMut(&StreamCursor, Item) -> bool>;

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
    finished: bool,
}

impl Source {
    /// Opens the traces under `opts.paths` (see the module documentation).
    pub fn open(opts: &ReadOpts) -> anyhow::Result<Source> {
        let (traces, labels) = open_all(&opts.paths)?;
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
        Ok(Source {
            traces,
            labels,
            trace_of,
            mux,
            begin: opts.begin,
            end: opts.end,
            gmt: false,
            window: None,
            filter: None,
            finished: false,
        })
        .map(|mut src| {
            if let Some(text) = &opts.filter {
                if let Ok(f) = reef_filter::EventFilter::new(text) {
                    src.set_filter(move |c, item| item != Item::Event || f.matches(c));
                }
            }
            src
        })
    }

    /// Reads wall-clock `--begin`/`--end` times as UTC rather than local
    /// time (print's `--clock-gmt`). Call before the first [`Source::next`].
    pub fn set_gmt(&mut self, gmt: bool) {
        self.gmt = gmt;
    }

    /// Skips the messages for which `keep` returns false (after trimming).
    pub fn set_filter(&mut self, keep: impl FnMut(&StreamCursor, Item) -> bool + 'static) {
        self.filter = Some(Box::new(keep));
    }

    /// Where an input ends inside a record (see [`reef_ctf::capture::Cut`]).
    pub fn cut(&self) -> Option<&reef_ctf::capture::Cut> {
        self.traces.iter().find_map(|t| t.cut.as_ref())
    }

    /// The cursors of every stream (packet counts, for instance).
    pub fn cursors(&self) -> &[StreamCursor] {
        self.mux.cursors()
    }

    /// Reads every stream to its end (or the window's), each stream on one
    /// of `workers` threads, without merging: for commands whose results
    /// are per stream (check). Every field of every event is decoded; a
    /// stream going back in time is an error, as in the merged order.
    /// `None` when a filter is set (filters see events in time order).
    pub fn scan_streams(mut self, workers: usize) -> Option<Vec<StreamScan>> {
        if self.filter.is_some() {
            return None;
        }
        let (b, e) = match self.start() {
            Ok(()) => self.window.unwrap_or((i64::MIN, i64::MAX)),
            Err(err) => {
                return Some(vec![StreamScan {
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
        Some(
            results
                .into_iter()
                .map(|m| m.into_inner().unwrap_or_default())
                .collect(),
        )
    }

    /// Has the worker threads (with `-j` 2 or more) format each event as
    /// they decode it: [`Msg::text`] then holds the text and the cursor no
    /// field values. Ignored with a filter, which needs the values. Call
    /// before the first [`Source::next`].
    pub fn render_with(&mut self, factory: reef_iter::parallel::RenderFactory) {
        if self.filter.is_none() {
            self.mux.render_with(factory);
        }
    }

    /// Shows a progress bar on stderr while the streams are read, when
    /// stderr is a terminal and `stdout_busy` is false (a command whose
    /// output goes to the same terminal as it reads gets none). Call
    /// before the first [`Source::next`]; the bar goes when the returned
    /// value is dropped.
    pub fn progress(&mut self, stdout_busy: bool) -> Progress {
        use std::io::IsTerminal;
        if stdout_busy || !std::io::stderr().is_terminal() {
            return Progress::none();
        }
        let total: u64 = self
            .traces
            .iter()
            .flat_map(|t| t.sources.iter())
            .flat_map(|s| s.files.iter())
            .map(|f| f.data().len() as u64)
            .sum();
        let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
        self.mux.set_progress(&counter);
        Progress::start(total, counter)
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

    /// The next message in time order, or `None` at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Msg<'_>>, Error> {
        if self.window.is_none() {
            self.start()?;
        }
        let (b, e) = self.window.unwrap_or((i64::MIN, i64::MAX));
        loop {
            if self.finished {
                return Ok(None);
            }
            let Some(i) = self.mux.next()? else {
                self.finished = true;
                // Everything before a capture's cut has been read: now
                // say that the input ends early.
                return match self.cut() {
                    Some(c) => Err(c.error()),
                    None => Ok(None),
                };
            };
            let ns = self.mux.time_ns(i);
            let item = self.mux.item(i);
            if let Some(ns) = ns {
                if ns > e {
                    // Streams are in time order: nothing later can be in
                    // the window.
                    self.finished = true;
                    return Ok(None);
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
            let trace = self.trace_of[i];
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
}

/// What [`Source::scan_streams`] found in one stream.
#[derive(Default)]
pub struct StreamScan {
    pub events: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub discarded_events: u64,
    pub discarded_packets: u64,
    pub packets: u64,
    /// The error that stopped the stream, with the time of the last
    /// message before it (to report the earliest error first).
    pub error: Option<(i64, Error)>,
}

// `settle!` also runs just before the loop ends, where its updates are unused.
#[allow(unused_assignments)]
fn scan_one(c: &mut StreamCursor, begin: i64, end: i64) -> StreamScan {
    let mut s = StreamScan::default();
    let conv = c.trace.class.streams[c.stream]
        .clock
        .map(|ci| reef_iter::ClockConv::new(&c.trace.class.meta.clocks[ci]));
    // Converting cycles to ns (babeltrace2's double division) costs more
    // than decoding a small event. The conversion never decreases, so
    // with no window a message whose cycles are at least the previous
    // one's, and whose time exists, is in order: its time is only needed
    // when it is the last. Such messages take the short way below.
    let fast = match conv {
        Some(cv) if begin == i64::MIN && end == i64::MAX => cv.defined_range(),
        _ => None,
    };
    let ns_of = |cy: u64| conv.as_ref().and_then(|cv| cv.ns(cy));
    let mut last = i64::MIN;
    // The cycles `last` is the time of; `stale`: not converted yet.
    let mut last_cy: Option<u64> = None;
    let mut stale = false;
    // The cycles of the last event, when `s.last_ns` is not converted yet.
    let mut last_event_cy: Option<u64> = None;
    // Brings `last` and `s.last_ns` up to date.
    macro_rules! settle {
        () => {
            if stale {
                stale = false;
                if let Some(ns) = last_cy.and_then(ns_of) {
                    last = ns;
                }
            }
            if let Some(cy) = last_event_cy.take() {
                s.last_ns = ns_of(cy).or(s.last_ns);
            }
        };
    }
    loop {
        // Inside a packet, events in order and inside the defined range
        // are counted in one loop, without an item each.
        if let (Some((lo, hi)), Some(mut cy), Some(_)) = (fast, last_cy, s.first_ns) {
            let before = s.events;
            let run = c.skim_run(&mut cy, lo, hi, &mut s.events);
            if s.events != before {
                last_cy = Some(cy);
                stale = true;
                last_event_cy = Some(cy);
            }
            if let Err(err) = run {
                settle!();
                s.error = Some((last, err));
                break;
            }
        }
        let item = match c.next_skimmed() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(err) => {
                settle!();
                s.error = Some((last, err));
                break;
            }
        };
        let cycles = match item {
            Item::Event => c.event.ts,
            Item::DiscardedEvents { begin, end, .. }
            | Item::DiscardedPackets { begin, end, .. } => begin.or(end),
        };
        if let (Some(cy), Some((lo, hi)), Some(lc)) = (cycles, fast, last_cy) {
            if cy >= lc && cy >= lo && cy <= hi && (item != Item::Event || s.first_ns.is_some()) {
                last_cy = Some(cy);
                stale = true;
                match item {
                    Item::Event => {
                        s.events += 1;
                        last_event_cy = Some(cy);
                    }
                    Item::DiscardedEvents { count, .. } => s.discarded_events += count.unwrap_or(0),
                    Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
                }
                continue;
            }
        }
        settle!();
        let ns = cycles.and_then(ns_of);
        if let Some(ns) = ns {
            if ns < last {
                s.error = Some((
                    last,
                    Error::Stream {
                        path: c.file_path().map(|p| p.to_path_buf()).unwrap_or_default(),
                        offset: c.event.offset,
                        msg: format!(
                            "time goes backwards: message at {ns} ns from origin follows one at {last} ns"
                        ),
                    },
                ));
                break;
            }
            last = ns;
            last_cy = cycles;
            if ns > end {
                break;
            }
            if ns < begin {
                continue;
            }
        }
        match item {
            Item::Event => {
                s.events += 1;
                if let Some(ns) = ns {
                    s.first_ns.get_or_insert(ns);
                    s.last_ns = Some(ns);
                }
            }
            Item::DiscardedEvents { count, .. } => s.discarded_events += count.unwrap_or(0),
            Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
        }
    }
    if let Some(cy) = last_event_cy {
        s.last_ns = ns_of(cy).or(s.last_ns);
    }
    s.packets = c.packets_read;
    s
}

/// A progress bar on stderr fed by the cursors' shared byte counter,
/// redrawn by its own thread (the reading loop does nothing for it).
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn none() -> Progress {
        Progress {
            bar: None,
            stop: Default::default(),
            thread: None,
        }
    }

    fn start(total: u64, counter: Arc<std::sync::atomic::AtomicU64>) -> Progress {
        use std::sync::atomic::Ordering;
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr_with_hz(5),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
        ) {
            bar.set_style(style);
        }
        let stop: Arc<std::sync::atomic::AtomicBool> = Default::default();
        let (b, s) = (bar.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            // Short reads show nothing: the bar appears after a second.
            let t0 = std::time::Instant::now();
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if t0.elapsed().as_millis() >= 1000 {
                    b.set_position(counter.load(Ordering::Relaxed));
                }
            }
        });
        Progress {
            bar: Some(bar),
            stop,
            thread: Some(thread),
        }
    }

    /// Runs `f` (writing to stderr, say) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
