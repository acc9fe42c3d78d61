//! `reef._reef`: the native part of the `reef` Python package (PyO3, abi3).
//!
//! It stands on the reading library and the engines: [`reef_read::Source`]
//! hands out the messages (babeltrace2's order, window, filter),
//! `reef_engines` and `reef_analyses` compute what the CLI computes, and
//! `reef_print` formats an event's line. The Python side (`reef/__init__.py`)
//! adds keyword arguments and documentation.
//!
//! *Laziness*: iterating keeps a copy of each event's decoded values (a few
//! words per field; strings stay byte ranges of the mapped file) and its
//! packet's context (shared by the packet's events); Python objects for the
//! fields are built only when asked for, through a per-stream view cursor
//! ([`reef_ctf::StreamCursor::present_packet`]) on which `reef_ctf::access`
//! and `reef_print` work unchanged. Memory stays bounded by what the caller
//! keeps, never by the trace.

use std::sync::{Arc, Mutex};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, PyOnceLock};
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use reef_ctf::plan::{Node, Plan, NONE};
use reef_ctf::trace::StreamFile;
use reef_ctf::{Item, PacketInfo, StreamCursor, Trace, Value};
use reef_print::{Options, Pretty, TraceLabel};
use reef_read::{ReadOptions, Source, TimeSpec};

mod arrow;
mod engines;
mod live;
mod script;
mod source;

create_exception!(
    _reef,
    Error,
    PyException,
    "A trace that cannot be read: `file` and `offset` (bytes) say where, when known."
);

/// The `reef.Error` for a reading error: its text is the CLI's, with
/// `file` and `offset` attributes.
pub(crate) fn py_err(py: Python<'_>, e: &reef_read::Error) -> PyErr {
    Failure::of(e).raise(py)
}

/// A reading error as Python sees it: its text, file and offset (kept
/// by a reading that stopped on it, to raise it again).
#[derive(Clone)]
pub(crate) struct Failure {
    text: String,
    file: Option<String>,
    offset: Option<u64>,
}

impl Failure {
    fn of(e: &reef_read::Error) -> Failure {
        let (file, offset) = locate(e);
        Failure {
            text: e.to_string(),
            file,
            offset,
        }
    }

    /// [`Failure::raise`] where the interpreter is not at hand.
    fn raise_now(&self) -> PyErr {
        Python::attach(|py| self.raise(py))
    }

    /// A new `reef.Error` (a fresh exception each time: no traceback of
    /// an earlier raise).
    fn raise(&self, py: Python<'_>) -> PyErr {
        let err = Error::new_err(self.text.clone());
        let v = err.value(py);
        let _ = v.setattr("file", self.file.clone());
        let _ = v.setattr("offset", self.offset);
        err
    }
}

/// Locks `m` without holding the GIL while waiting: a thread that holds
/// the lock may wait for the GIL (after a blocking wait of its own, or in
/// Python code run while it holds the lock), so waiting for the lock with
/// the GIL held could deadlock the interpreter. A poisoned lock (a panic
/// while held) is a Python error.
pub(crate) fn lock<'a, T>(
    py: Python<'_>,
    m: &'a Mutex<T>,
    what: &str,
) -> PyResult<std::sync::MutexGuard<'a, T>> {
    m.lock_py_attached(py)
        .map_err(|_| PyValueError::new_err(format!("{what} poisoned (a panic while it was used)")))
}

/// The file and byte offset of a reading error, when it has them.
fn locate(e: &reef_read::Error) -> (Option<String>, Option<u64>) {
    fn ctf(e: &reef_ctf::Error) -> (Option<String>, Option<u64>) {
        let p = |p: &std::path::Path| Some(p.display().to_string());
        match e {
            reef_ctf::Error::Io { path, .. } => (p(path), None),
            reef_ctf::Error::Metadata { path, .. } => (p(path), None),
            reef_ctf::Error::Decode { path, err, .. } => (p(path), Some(err.bit_offset / 8)),
            reef_ctf::Error::Stream { path, offset, .. } => (p(path), Some(*offset)),
            reef_ctf::Error::Damaged { stop, damage } => match (stop, damage.first()) {
                (Some(s), _) => ctf(s),
                (None, Some(d)) => (p(&d.path), Some(d.offset)),
                (None, None) => (None, None),
            },
        }
    }
    match e {
        reef_read::Error::Trace(t) => ctf(t),
        reef_read::Error::NoTrace { path } => (Some(path.display().to_string()), None),
        _ => (None, None),
    }
}

/// A `begin`/`end` argument: babeltrace2's text formats, or an integer of
/// nanoseconds from the origin.
pub(crate) fn time_spec(t: Option<&Bound<'_, PyAny>>) -> PyResult<Option<TimeSpec>> {
    let Some(t) = t else { return Ok(None) };
    if t.is_none() {
        return Ok(None);
    }
    if let Ok(ns) = t.extract::<i64>() {
        return Ok(Some(TimeSpec::Ns(ns)));
    }
    let s: String = t.extract()?;
    s.parse::<TimeSpec>()
        .map(Some)
        .map_err(|e| PyValueError::new_err(format!("`{s}`: {e}")))
}

/// The reading options of every function: paths, window, filter, workers.
pub(crate) fn read_options(
    paths: Vec<std::path::PathBuf>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    filter: Option<String>,
    workers: Option<usize>,
) -> PyResult<ReadOptions> {
    if paths.is_empty() {
        return Err(PyValueError::new_err("no trace path given"));
    }
    Ok(ReadOptions {
        paths,
        begin: time_spec(begin)?,
        end: time_spec(end)?,
        gmt: false,
        workers,
        filter,
        script: None,
        keepers: Default::default(),
        // A live session (`net://...`) is read until it ends (waiting for
        // it would never return).
        live_action: reef_read::lttng_live::SessionNotFound::End,
        // A Python session may open many readings: each frees its traces.
        keep_traces: false,
        // Metadata errors at opening, as for every reader but the
        // command's analyses.
        lazy_plans: false,
    })
}

/// Opens a source, turning its errors (a bad filter, no trace) into
/// Python exceptions.
pub(crate) fn open_source(py: Python<'_>, opts: &ReadOptions) -> PyResult<Source> {
    match Source::open(opts) {
        Ok(s) => Ok(s),
        Err(reef_read::Error::Filter(f)) => Err(PyValueError::new_err(f.to_string())),
        Err(e) => Err(py_err(py, &e)),
    }
}

/// `reef print`'s default options.
fn print_options() -> Options {
    let mut o = Options::default();
    o.clock.delta = true;
    o
}

/// A packet as its events saw it: shared by them.
pub(crate) struct Pkt {
    file: Option<Arc<StreamFile>>,
    info: PacketInfo,
    ctx: Vec<Value>,
    packets_read: u64,
}

/// One stream of the reading.
pub(crate) struct StreamDesc {
    pub(crate) trace: Arc<Trace>,
    pub(crate) source: usize,
    /// Index of the trace in the reading (and of its label).
    pub(crate) trace_idx: usize,
}

/// What the events of one reading share: the streams, and the view
/// cursors and printer their fields and lines are read through.
pub(crate) struct Shared {
    pub(crate) streams: Vec<StreamDesc>,
    pub(crate) labels: Vec<TraceLabel>,
    pub(crate) views: Mutex<Views>,
}

pub(crate) struct Views {
    cursors: Vec<Option<(StreamCursor, Option<Arc<Pkt>>)>>,
    pretty: Pretty,
}

impl Views {
    pub(crate) fn new(streams: usize) -> Views {
        Views {
            cursors: (0..streams).map(|_| None).collect(),
            pretty: Pretty::new(print_options()),
        }
    }
}

/// The packets of the messages being put in batches: each packet is
/// copied once, and stored once in each batch holding its messages.
#[derive(Default)]
pub(crate) struct Packets {
    /// Per stream, its current packet.
    last: Vec<Option<Arc<Pkt>>>,
    /// Per stream, the index of its current packet in the batch being
    /// filled (`u32::MAX`: not there yet).
    at: Vec<u32>,
}

impl Packets {
    /// The index in `pkts` (the batch's packets) of the packet `c` is in,
    /// for stream `i`.
    pub(crate) fn index(&mut self, i: usize, c: &StreamCursor, pkts: &mut Vec<Arc<Pkt>>) -> u32 {
        if self.last.len() <= i {
            self.last.resize_with(i + 1, || None);
            self.at.resize(i + 1, u32::MAX);
        }
        let same = self.last[i].as_ref().is_some_and(|p| {
            p.packets_read == c.packets_read
                && p.info.offset == c.packet.offset
                && match (&p.file, c.file()) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                }
        });
        if !same {
            self.last[i] = Some(Arc::new(Pkt {
                file: c.file().cloned(),
                info: c.packet.clone(),
                ctx: c.packet_context.clone(),
                packets_read: c.packets_read,
            }));
            self.at[i] = u32::MAX;
        }
        if self.at[i] == u32::MAX {
            pkts.push(self.last[i].clone().expect("set above"));
            self.at[i] = (pkts.len() - 1) as u32;
        }
        self.at[i]
    }

    /// A new batch begins: its packets are stored anew.
    pub(crate) fn new_batch(&mut self) {
        self.at.fill(u32::MAX);
    }
}

impl Shared {
    fn new(src: &Source) -> Shared {
        let streams: Vec<StreamDesc> = src
            .cursors()
            .iter()
            .zip(&src.trace_of)
            .map(|(c, &t)| StreamDesc {
                trace: c.trace.clone(),
                source: c.source,
                trace_idx: t,
            })
            .collect();
        let n = streams.len();
        Shared {
            streams,
            labels: src.labels.clone(),
            views: Mutex::new(Views::new(n)),
        }
    }
}

/// One message of a batch, as the reading thread copied it off its
/// cursor.
pub(crate) struct Rec {
    pub(crate) stream: u32,
    /// Index into the stream plans' events (events), or the notice.
    pub(crate) kind: RecKind,
    pub(crate) ns: Option<i64>,
    pub(crate) ts: Option<u64>,
    /// The event's values: `Batch::values[start..start + bounds[3]]`.
    pub(crate) start: usize,
    pub(crate) bounds: [usize; 4],
    pub(crate) offset: u64,
    pub(crate) body: u64,
    pub(crate) end: u64,
    /// Its packet, in `Batch::pkts`.
    pub(crate) pkt: u32,
}

pub(crate) enum RecKind {
    Event(usize),
    Discarded(Box<Notice>),
}

pub(crate) struct Notice {
    kind: &'static str,
    count: Option<u64>,
    begin_cycles: Option<u64>,
    end_cycles: Option<u64>,
    begin: Option<i64>,
    end: Option<i64>,
    text: String,
}

/// Messages read ahead by the reading thread; the events handed to Python
/// keep their batch alive (their values live in it).
pub(crate) struct Batch {
    pub(crate) shared: Arc<Shared>,
    pub(crate) recs: Vec<Rec>,
    pub(crate) values: Vec<Value>,
    pub(crate) pkts: Vec<Arc<Pkt>>,
    /// Where its vectors go when it is dropped, for the reading thread to
    /// fill again (no allocation, no fresh pages per batch).
    pub(crate) pool: Option<Arc<Pool>>,
}

/// Emptied batch vectors, kept for reuse (a few).
pub(crate) type Pool = Mutex<Vec<(Vec<Rec>, Vec<Value>, Vec<Arc<Pkt>>)>>;

impl Batch {
    pub(crate) fn pkt(&self, rec: &Rec) -> &Pkt {
        &self.pkts[rec.pkt as usize]
    }

    /// An empty batch, with vectors from `pool` when it has some.
    fn fresh(shared: &Arc<Shared>, pool: &Arc<Pool>) -> Batch {
        let reused = pool.lock().ok().and_then(|mut p| p.pop());
        let (recs, values, pkts) = reused.unwrap_or_else(|| {
            (
                Vec::with_capacity(BATCH),
                Vec::with_capacity(BATCH * 8),
                Vec::new(),
            )
        });
        Batch {
            shared: shared.clone(),
            recs,
            values,
            pkts,
            pool: Some(pool.clone()),
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let Some(pool) = self.pool.take() else {
            return;
        };
        let mut recs = std::mem::take(&mut self.recs);
        let mut values = std::mem::take(&mut self.values);
        let mut pkts = std::mem::take(&mut self.pkts);
        recs.clear();
        values.clear();
        pkts.clear();
        let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
        if p.len() < AHEAD + 2 {
            p.push((recs, values, pkts));
        }
    }
}

/// Messages per batch, and batches read ahead: the reading thread runs
/// this far ahead of Python, no further.
const BATCH: usize = 2048;
pub(crate) const AHEAD: usize = 2;

pub(crate) type Sent = Result<Batch, reef_read::Error>;

/// The reading thread: reads `src` into batches until the end, an error
/// (sent after the batches before it) or the receiver's departure.
fn read_ahead(mut src: Source, shared: Arc<Shared>, tx: std::sync::mpsc::SyncSender<Sent>) {
    let mut packets = Packets::default();
    let pool: Arc<Pool> = Arc::default();
    let mut b = Batch::fresh(&shared, &pool);
    loop {
        let m = match src.next() {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) => {
                if !b.recs.is_empty() && tx.send(Ok(b)).is_err() {
                    return;
                }
                let _ = tx.send(Err(e));
                return;
            }
        };
        let i = m.stream;
        let c = m.cursor;
        let pkt = packets.index(i, c, &mut b.pkts);
        let ev = &c.event;
        let start = b.values.len();
        let kind = match m.item {
            Item::Event => {
                b.values
                    .extend_from_slice(&ev.values[..ev.bounds[3].min(ev.values.len())]);
                RecKind::Event(ev.event)
            }
            item => RecKind::Discarded(Box::new(notice(&shared, m.trace, c, item))),
        };
        let is_event = matches!(kind, RecKind::Event(_));
        b.recs.push(Rec {
            stream: i as u32,
            kind,
            ns: m.ns,
            ts: ev.ts,
            start,
            bounds: if is_event { ev.bounds } else { [0; 4] },
            offset: ev.offset,
            body: ev.body,
            end: ev.end,
            pkt,
        });
        if b.recs.len() >= BATCH {
            if tx.send(Ok(b)).is_err() {
                return;
            }
            b = Batch::fresh(&shared, &pool);
            packets.new_batch();
        }
    }
    if !b.recs.is_empty() {
        let _ = tx.send(Ok(b));
    }
}

/// A discarded-events or -packets notice, with babeltrace2's warning.
pub(crate) fn notice(shared: &Shared, trace: usize, c: &StreamCursor, item: Item) -> Notice {
    let label = &shared.labels[trace];
    let mut text = Vec::new();
    Pretty::new(print_options()).discarded(&mut text, label, c, item, false);
    while text.last() == Some(&b'\n') {
        text.pop();
    }
    let (kind, count, begin, end) = match item {
        Item::DiscardedEvents { count, begin, end } => ("events", count, begin, end),
        Item::DiscardedPackets { count, begin, end } => ("packets", Some(count), begin, end),
        Item::Event => ("events", None, None, None),
    };
    let t = &c.trace;
    let sp = &t.class.streams[c.stream];
    let clock = sp.clock.map(|k| &t.class.meta.clocks[k]);
    let ns = |cy: Option<u64>| clock.zip(cy).and_then(|(k, cy)| k.ns_from_origin(cy));
    Notice {
        kind,
        count,
        begin_cycles: begin,
        end_cycles: end,
        begin: ns(begin),
        end: ns(end),
        text: String::from_utf8_lossy(&text).into_owned(),
    }
}

/// The Python side of a reading: batches received from the reading
/// thread, handed out one message at a time.
pub(crate) struct Reading {
    rx: std::sync::mpsc::Receiver<Sent>,
    batch: Option<Arc<Batch>>,
    at: usize,
    /// Per stream, the interned names of its event classes.
    names: Vec<Vec<Option<Py<PyString>>>>,
    /// The error that ended the reading: raised again by every later call
    /// (a reading that failed never looks like one that ended).
    failed: Option<Failure>,
    /// The time (ns, cycles) of the last event handed out: the next
    /// one's delta in `str(event)`.
    last: (Option<i64>, Option<u64>),
    done: bool,
    /// Live bursts: each has streams of its own (no name cache by stream),
    /// and an event older than the last one has an unknown delta (as
    /// `reef listen --print` shows it).
    live: bool,
    /// The messages of the batch being handed out, made all at once: an
    /// iterator over a list (see `Messages::__iter__`).
    chunk: Option<Py<PyAny>>,
}

impl Reading {
    pub(crate) fn new(rx: std::sync::mpsc::Receiver<Sent>, streams: usize, live: bool) -> Reading {
        Reading {
            rx,
            batch: None,
            at: 0,
            names: (0..streams).map(|_| Vec::new()).collect(),
            failed: None,
            last: (None, None),
            done: false,
            live,
            chunk: None,
        }
    }
}

/// The messages of `reef.open()`, in babeltrace2's order: `Event`s and
/// `Discarded` notices. One position, shared by every loop and thread:
/// each message is handed out once (threads iterating it at once share
/// the messages out); after an error, every later call raises it again.
#[pyclass(module = "reef._reef", subclass, frozen)]
pub struct Messages {
    reading: Mutex<Option<Reading>>,
    opts: ReadOptions,
    /// A script's `keep(event)`: events for which it is false are skipped.
    keep: Option<Py<PyAny>>,
}

impl Messages {
    pub(crate) fn from_opts(opts: ReadOptions) -> Messages {
        Messages {
            reading: Mutex::new(None),
            opts,
            keep: None,
        }
    }
}

#[pymethods]
impl Messages {
    #[new]
    #[pyo3(signature = (paths, begin=None, end=None, filter=None, workers=None, keep=None, gmt=false))]
    fn new(
        paths: Vec<std::path::PathBuf>,
        begin: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        filter: Option<String>,
        workers: Option<usize>,
        keep: Option<Py<PyAny>>,
        gmt: bool,
    ) -> PyResult<Messages> {
        let mut m = open(paths, begin, end, filter, workers)?;
        m.opts.gmt = gmt;
        m.keep = keep;
        Ok(m)
    }

    /// One table of `reef_arrow` over the same reading (read anew), as an
    /// object with `__arrow_c_stream__`.
    #[pyo3(signature = (table="events".to_string(), batch_rows=65536))]
    fn arrow_stream(
        &self,
        py: Python<'_>,
        table: String,
        batch_rows: usize,
    ) -> PyResult<arrow::ArrowStream> {
        arrow::stream(py, self.opts.clone(), table, batch_rows)
    }

    /// Without `keep`, an iterator that hands out the messages of each
    /// batch from a list made at once (`itertools.chain` over the lists'
    /// iterators): the per-message cost is the list's, not a call into
    /// this module. Its position is this reading's: `next(reading)`, a
    /// second loop or a loop left by `break` go on where the other left
    /// off. With `keep`, the reading itself (one call per message).
    fn __iter__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        if slf.get().keep.is_some() {
            return Ok(slf.into_any().unbind());
        }
        let py = slf.py();
        let chain = CHAIN_FROM_ITERABLE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("itertools")?
                .getattr("chain")?
                .getattr("from_iterable")?
                .unbind())
        })?;
        let iter = BUILTIN_ITER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("builtins")?.getattr("iter")?.unbind())
        })?;
        let chunks = iter
            .bind(py)
            .call1((slf.getattr("_next_chunk")?, py.None()))?;
        Ok(chain.bind(py).call1((chunks,))?.unbind())
    }

    /// An iterator over the next messages (at least one), or None at the
    /// end: the current chunk while it has messages left, else the next
    /// batch's messages, made at once.
    fn _next_chunk(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.reading(py)?;
        let Some(r) = guard.as_mut() else {
            return Ok(None);
        };
        r.next_chunk(py)
    }

    /// The paths this reading was opened with.
    #[getter]
    fn paths(&self) -> Vec<String> {
        self.opts
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    pub(crate) fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some(keep) = &self.keep else {
            let Some(chunk) = self._next_chunk(py)? else {
                return Ok(None);
            };
            // A chunk handed out has a message left.
            return chunk
                .bind(py)
                .call_method0("__next__")
                .map(|m| Some(m.unbind()));
        };
        loop {
            let Some(m) = self.next_message(py, false)? else {
                return Ok(None);
            };
            let b = m.bind(py);
            let Ok(ev) = b.cast::<Event>() else {
                return Ok(Some(m));
            };
            let kept = keep
                .bind(py)
                .call1((b,))
                .and_then(|r| r.is_truthy())
                .map_err(|e| script::note_event(py, e, b))?;
            if kept {
                let rec = ev.get().rec();
                if let Some(r) = lock(py, &self.reading, "reading")?.as_mut() {
                    r.last = (rec.ns, rec.ts);
                }
                return Ok(Some(m));
            }
        }
    }
}

impl Messages {
    /// The next message; `commit`: it is handed out (the next event's
    /// delta counts from it), else the caller says so once it is.
    fn next_message(&self, py: Python<'_>, commit: bool) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.reading(py)?;
        let Some(r) = guard.as_mut() else {
            return Ok(None);
        };
        r.next(py, commit)
    }

    /// The reading, started on first use.
    fn reading(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, Option<Reading>>> {
        let mut guard = lock(py, &self.reading, "reading")?;
        if guard.is_none() {
            // One decoding thread by default: the Python loop, on its own
            // core, is slower than it; more threads would only take CPU
            // from it (and from the rest of the machine).
            let mut opts = self.opts.clone();
            opts.workers = opts.workers.or(Some(1));
            let src = open_source(py, &opts)?;
            let shared = Arc::new(Shared::new(&src));
            let n = shared.streams.len();
            let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
            std::thread::Builder::new()
                .name("reef-read".into())
                .spawn(move || read_ahead(src, shared, tx))
                .map_err(|e| PyValueError::new_err(format!("starting the reading thread: {e}")))?;
            *guard = Some(Reading::new(rx, n, false));
        }
        Ok(guard)
    }
}

impl Reading {
    pub(crate) fn next(&mut self, py: Python<'_>, commit: bool) -> PyResult<Option<Py<PyAny>>> {
        if !self.fill(py)? {
            return Ok(None);
        }
        let b = self.batch.clone().expect("filled");
        let idx = self.at;
        self.at += 1;
        self.make(py, &b, idx, commit).map(Some)
    }

    /// The rest of the current batch (or the next batch) as an iterator
    /// over a list of messages; None at the end.
    fn next_chunk(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if let Some(c) = &self.chunk {
            let left: usize = c.bind(py).call_method0("__length_hint__")?.extract()?;
            if left > 0 {
                return Ok(Some(c.clone_ref(py)));
            }
            self.chunk = None;
        }
        if !self.fill(py)? {
            return Ok(None);
        }
        let b = self.batch.clone().expect("filled");
        let (from, to) = (self.at, b.recs.len());
        self.at = to;
        let mut items = Vec::with_capacity(to - from);
        for idx in from..to {
            items.push(self.make(py, &b, idx, true)?);
        }
        let it = PyList::new(py, items)?.try_iter()?.into_any().unbind();
        self.chunk = Some(it.clone_ref(py));
        Ok(Some(it))
    }

    /// Makes sure the current batch has a message at `at`: false at the
    /// end; the reading's error once every message before it was given.
    fn fill(&mut self, py: Python<'_>) -> PyResult<bool> {
        loop {
            if let Some(b) = &self.batch {
                if self.at < b.recs.len() {
                    break;
                }
                self.batch = None;
            }
            if self.done {
                return match &self.failed {
                    Some(f) => Err(f.raise(py)),
                    None => Ok(false),
                };
            }
            let rx = &mut self.rx;
            let got = match rx.try_recv() {
                Ok(x) => Ok(x),
                // Waiting for the reading thread: without the GIL.
                Err(std::sync::mpsc::TryRecvError::Empty) => py.detach(move || rx.recv()),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => Err(std::sync::mpsc::RecvError),
            };
            match got {
                Ok(Ok(b)) => {
                    if self.live {
                        // The burst's streams are numbered anew.
                        self.names.clear();
                        self.names.resize_with(b.shared.streams.len(), Vec::new);
                    }
                    self.batch = Some(Arc::new(b));
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    let f = Failure::of(&e);
                    let err = f.raise(py);
                    self.failed = Some(f);
                    return Err(err);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The message `idx` of `b`; `commit`: it is handed out (the next
    /// event's delta counts from it).
    fn make(
        &mut self,
        py: Python<'_>,
        b: &Arc<Batch>,
        idx: usize,
        commit: bool,
    ) -> PyResult<Py<PyAny>> {
        let rec = &b.recs[idx];
        match &rec.kind {
            RecKind::Event(class) => {
                if self.live {
                    if let (Some(n), Some(l)) = (rec.ns, self.last.0) {
                        if n < l {
                            self.last = (None, None);
                        }
                    }
                }
                let names = &mut self.names[rec.stream as usize];
                if names.len() <= *class {
                    names.resize_with(class + 1, || None);
                }
                let name = match &names[*class] {
                    Some(n) => n.clone_ref(py),
                    None => {
                        let d = &b.shared.streams[rec.stream as usize];
                        let sp = &d.trace.class.streams[d.trace.sources[d.source].stream];
                        let text = &d.trace.class.meta.streams[sp.class].events
                            [sp.events[*class].class]
                            .name;
                        let n = PyString::intern(py, text).unbind();
                        names[*class] = Some(n.clone_ref(py));
                        n
                    }
                };
                let e = Event {
                    batch: b.clone(),
                    idx,
                    name,
                    prev: self.last,
                };
                if commit {
                    self.last = (rec.ns, rec.ts);
                }
                Ok(Py::new(py, e)?.into_any())
            }
            RecKind::Discarded(_) => Ok(Py::new(
                py,
                Discarded {
                    batch: b.clone(),
                    idx,
                },
            )?
            .into_any()),
        }
    }
}

/// Opens the traces under `paths` (lazily: on the first `next()`).
#[pyfunction]
#[pyo3(signature = (paths, begin=None, end=None, filter=None, workers=None))]
fn open(
    paths: Vec<std::path::PathBuf>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    filter: Option<String>,
    workers: Option<usize>,
) -> PyResult<Messages> {
    let opts = read_options(paths, begin, end, filter.clone(), workers)?;
    // A bad filter is an error now, not at the first event.
    if let Some(f) = &filter {
        reef_filter::EventFilter::new(f).map_err(|err| {
            PyValueError::new_err(
                reef_filter::LocatedError {
                    what: "filter".into(),
                    text: f.clone(),
                    err,
                }
                .to_string(),
            )
        })?;
    }
    Ok(Messages::from_opts(opts))
}

/// Where an event's stream is: see `Event.stream`.
#[pyclass(module = "reef._reef", frozen, get_all)]
pub struct Stream {
    /// Index of the stream among every stream of the reading.
    index: usize,
    /// The stream class id.
    class_id: u64,
    /// The stream instance id of the packet, when its header has one.
    instance_id: Option<u64>,
    /// The packet context's `cpu_id`, when it has one.
    cpu: Option<i64>,
    /// The trace's name, as `reef print --fields=trace` shows it.
    trace: String,
    /// The stream file.
    path: Option<String>,
}

#[pymethods]
impl Stream {
    fn __repr__(&self) -> String {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "None".into());
        format!(
            "Stream(index={}, class_id={}, cpu={}, trace={:?}, path={})",
            self.index,
            self.class_id,
            opt(self.cpu.map(|c| c.to_string())),
            self.trace,
            opt(self.path.as_ref().map(|p| format!("{p:?}")))
        )
    }
}

fn stream_of(shared: &Shared, i: usize, pkt: &Pkt) -> Stream {
    let d = &shared.streams[i];
    let stream = d.trace.sources[d.source].stream;
    let sp = &d.trace.class.streams[stream];
    let meta = &d.trace.class.meta;
    let class_id = meta.streams[sp.class].id;
    let cpu = find_member(&sp.packet_context, &pkt.ctx, "cpu_id").and_then(|(n, vi)| {
        match (&sp.packet_context.nodes[n as usize], pkt.ctx.get(vi)) {
            (Node::Int { .. }, Some(Value::U(u))) => i64::try_from(*u).ok(),
            (Node::Int { .. }, Some(Value::I(i))) => Some(*i),
            _ => None,
        }
    });
    Stream {
        index: i,
        class_id,
        instance_id: pkt.info.stream_instance_id,
        cpu,
        trace: shared.labels[d.trace_idx].name.clone(),
        path: pkt.file.as_ref().map(|f| f.path.display().to_string()),
    }
}

/// An event: name, time, stream and fields.
#[pyclass(module = "reef._reef", frozen)]
pub struct Event {
    batch: Arc<Batch>,
    idx: usize,
    /// The event's name.
    // A struct member (frozen class, `Py` field): read by the interpreter
    // without a call into this module.
    #[pyo3(get)]
    name: Py<PyString>,
    /// The previous event's time (ns, cycles): `str(event)`'s delta.
    prev: (Option<i64>, Option<u64>),
}

/// The scopes of an event, in the order `ev["field"]` searches them (the
/// filter language's): payload, specific context, common context, header,
/// packet context.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    Payload,
    Context,
    StreamContext,
    Header,
    PacketContext,
}

impl Event {
    fn rec(&self) -> &Rec {
        &self.batch.recs[self.idx]
    }

    /// Runs `f` on the view cursor of this event's stream, showing this
    /// event.
    fn with_cursor<R>(&self, py: Python<'_>, f: impl FnOnce(&StreamCursor, &mut Pretty) -> R) -> R {
        let shared = &self.batch.shared;
        let rec = self.rec();
        let mut views = shared
            .views
            .lock_py_attached(py)
            .unwrap_or_else(|p| p.into_inner());
        let Views { cursors, pretty } = &mut *views;
        let slot = &mut cursors[rec.stream as usize];
        let d = &shared.streams[rec.stream as usize];
        let (cur, shown) =
            slot.get_or_insert_with(|| (StreamCursor::new(d.trace.clone(), d.source), None));
        let pkt = &self.batch.pkts[rec.pkt as usize];
        if !shown.as_ref().is_some_and(|p| Arc::ptr_eq(p, pkt)) {
            if let Some(file) = &pkt.file {
                cur.present_packet(file, &pkt.info, &pkt.ctx, pkt.packets_read);
            }
            *shown = Some(pkt.clone());
        }
        cur.event.event = self.class();
        cur.event.ts = rec.ts;
        cur.event.values.clear();
        cur.event.values.extend_from_slice(self.values());
        cur.event.bounds = rec.bounds;
        cur.event.offset = rec.offset;
        cur.event.body = rec.body;
        cur.event.end = rec.end;
        f(cur, pretty)
    }

    fn class(&self) -> usize {
        match self.rec().kind {
            RecKind::Event(c) => c,
            RecKind::Discarded(_) => 0,
        }
    }

    fn values(&self) -> &[Value] {
        let r = self.rec();
        &self.batch.values[r.start..r.start + r.bounds[3]]
    }

    /// A scope's plan and values.
    fn scope(&self, sc: Scope) -> (&Plan, &[Value]) {
        let rec = self.rec();
        let d = &self.batch.shared.streams[rec.stream as usize];
        let stream = d.trace.sources[d.source].stream;
        let sp = &d.trace.class.streams[stream];
        let ep = sp.event(self.class());
        let v = self.values();
        let b = rec.bounds;
        match sc {
            Scope::Header => (&sp.event_header, &v[..b[0]]),
            Scope::StreamContext => (&sp.event_common_context, &v[b[0]..b[1]]),
            Scope::Context => (&ep.context, &v[b[1]..b[2]]),
            Scope::Payload => (&ep.payload, &v[b[2]..b[3]]),
            Scope::PacketContext => (&sp.packet_context, &self.batch.pkt(rec).ctx),
        }
    }

    fn data(&self) -> &[u8] {
        self.batch
            .pkt(self.rec())
            .file
            .as_deref()
            .map_or(&[], |f| f.data())
    }

    /// A `reef.Error` when the event's stream file was found truncated
    /// under its mapping (reef_ctf::guard): its strings and bytes would
    /// read as zeros.
    fn intact(&self) -> PyResult<()> {
        if !reef_ctf::guard::tripped() {
            return Ok(());
        }
        match &self.batch.pkt(self.rec()).file {
            Some(f) => f.check_intact(self.rec().offset).map_err(|e| {
                Failure {
                    text: e.to_string(),
                    file: Some(f.path.display().to_string()),
                    offset: Some(self.rec().offset),
                }
                .raise_now()
            }),
            None => Ok(()),
        }
    }

    fn scope_dict(&self, py: Python<'_>, sc: Scope) -> PyResult<Py<PyAny>> {
        self.intact()?;
        let (plan, values) = self.scope(sc);
        let conv = Conv {
            py,
            plan,
            values,
            data: self.data(),
            all: sc == Scope::Header,
        };
        let dict = PyDict::new(py);
        if let Some(root) = plan.root {
            if let Node::Struct { first, count, .. } = plan.nodes[root as usize] {
                let mut vi = 0;
                for k in first..first + count {
                    let child = plan.children[k as usize];
                    let name = &plan.names[k as usize];
                    if !conv.all && !plan.nodes[child as usize].visible() {
                        skip(plan, values, child, &mut vi);
                        continue;
                    }
                    let v = conv.node(child, &mut vi)?;
                    dict.set_item(name.strip_prefix('_').unwrap_or(name), v)?;
                }
            }
        }
        // Again: a page read above may have been the one past the end.
        self.intact()?;
        Ok(dict.into_any().unbind())
    }

    fn lookup(&self, py: Python<'_>, key: &str) -> PyResult<Option<Py<PyAny>>> {
        self.intact()?;
        for sc in [
            Scope::Payload,
            Scope::Context,
            Scope::StreamContext,
            Scope::Header,
            Scope::PacketContext,
        ] {
            let (plan, values) = self.scope(sc);
            if let Some((n, mut vi)) = find_member(plan, values, key) {
                let conv = Conv {
                    py,
                    plan,
                    values,
                    data: self.data(),
                    all: true,
                };
                let v = conv.node(n, &mut vi)?;
                self.intact()?;
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// The top-level member `key` of a scope (one leading `_` of its name may
/// be left out, as in the filter language): its node and first value.
fn find_member(plan: &Plan, values: &[Value], key: &str) -> Option<(u32, usize)> {
    let root = plan.root?;
    let Node::Struct { first, count, .. } = plan.nodes[root as usize] else {
        return None;
    };
    let mut vi = 0;
    for k in first..first + count {
        let child = plan.children[k as usize];
        let name = &plan.names[k as usize];
        if name == key || name.strip_prefix('_') == Some(key) {
            return Some((child, vi));
        }
        skip(plan, values, child, &mut vi);
    }
    None
}

/// Steps `vi` over node `n`'s values.
fn skip(plan: &Plan, values: &[Value], n: u32, vi: &mut usize) {
    let take = |vi: &mut usize| {
        let v = values.get(*vi).copied();
        *vi += 1;
        v
    };
    match plan.nodes[n as usize] {
        Node::Int { .. }
        | Node::BigInt { .. }
        | Node::Float { .. }
        | Node::String
        | Node::VarInt { .. }
        | Node::Bytes { .. } => *vi += 1,
        Node::Optional { child, .. } => {
            if let Some(Value::Opt(1)) = take(vi) {
                skip(plan, values, child, vi);
            }
        }
        Node::Struct { first, count, .. } => {
            for i in first..first + count {
                skip(plan, values, plan.children[i as usize], vi);
            }
        }
        Node::Variant { first, .. } => {
            if let Some(Value::Opt(o)) = take(vi) {
                skip(plan, values, plan.children[(first + o) as usize], vi);
            }
        }
        Node::Array {
            length, elem, text, ..
        } => {
            if text {
                *vi += (length > 0) as usize;
            } else {
                for _ in 0..length {
                    skip(plan, values, elem, vi);
                }
            }
        }
        Node::Sequence { elem, text, .. } => {
            if let Some(Value::Len(len)) = take(vi) {
                if text {
                    *vi += (len > 0) as usize;
                } else {
                    for _ in 0..len {
                        skip(plan, values, elem, vi);
                    }
                }
            }
        }
    }
}

static ENUM_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CHAIN_FROM_ITERABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static BUILTIN_ITER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Values of a scope as Python objects.
struct Conv<'a, 'py> {
    py: Python<'py>,
    plan: &'a Plan,
    values: &'a [Value],
    data: &'a [u8],
    /// Structures show their hidden members too (the event header).
    all: bool,
}

impl Conv<'_, '_> {
    fn take(&self, vi: &mut usize) -> Option<Value> {
        let v = self.values.get(*vi).copied();
        *vi += 1;
        v
    }

    fn text(&self, s: &[u8]) -> PyResult<Py<PyAny>> {
        match std::str::from_utf8(s) {
            Ok(t) => t.into_py_any(self.py),
            Err(_) => PyBytes::new(self.py, s).into_py_any(self.py),
        }
    }

    fn node(&self, n: u32, vi: &mut usize) -> PyResult<Py<PyAny>> {
        let py = self.py;
        let plan = self.plan;
        match plan.nodes[n as usize] {
            Node::Int { enum_idx, .. } | Node::VarInt { enum_idx, .. } => {
                let v = self.take(vi);
                let int = match v {
                    Some(Value::U(u)) => u.into_py_any(py)?,
                    Some(Value::I(i)) => i.into_py_any(py)?,
                    _ => return Ok(py.None()),
                };
                if enum_idx == NONE {
                    return Ok(int);
                }
                let key = match v {
                    Some(Value::U(u)) => u as i128,
                    Some(Value::I(i)) => i as i128,
                    _ => 0,
                };
                let labels: Vec<&str> = plan.enums[enum_idx as usize].labels_for(key).collect();
                let cls = ENUM_CLASS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                    Ok(py.import("reef")?.getattr("Enum")?.unbind())
                })?;
                Ok(cls
                    .bind(py)
                    .call1((int, PyTuple::new(py, labels)?))?
                    .unbind())
            }
            Node::BigInt { size, le, .. } => {
                let Some(Value::Big { bit_off }) = self.take(vi) else {
                    return Ok(py.None());
                };
                // Most significant 64-bit chunk first.
                let mut hex = String::new();
                let mut remaining = size;
                while remaining > 0 {
                    let k = remaining.min(64);
                    remaining -= k;
                    let off = if le {
                        bit_off + remaining as u64
                    } else {
                        bit_off + (size - remaining - k) as u64
                    };
                    let v = if le {
                        reef_ctf::bits::read_le(self.data, off, k)
                    } else {
                        reef_ctf::bits::read_be(self.data, off, k)
                    };
                    hex.push_str(&format!("{v:0w$x}", w = k.div_ceil(4) as usize));
                }
                Ok(py
                    .get_type::<pyo3::types::PyInt>()
                    .call1((hex, 16))?
                    .unbind())
            }
            Node::Float { .. } => match self.take(vi) {
                Some(Value::F(f)) => f.into_py_any(py),
                _ => Ok(py.None()),
            },
            Node::String => match self.take(vi) {
                Some(Value::Bytes { off, len }) => self.text(&self.data[off..off + len]),
                _ => Ok(py.None()),
            },
            Node::Struct { first, count, .. } => {
                let d = PyDict::new(py);
                for i in first..first + count {
                    let child = plan.children[i as usize];
                    if !self.all && !plan.nodes[child as usize].visible() {
                        skip(plan, self.values, child, vi);
                        continue;
                    }
                    let name = &plan.names[i as usize];
                    d.set_item(
                        name.strip_prefix('_').unwrap_or(name),
                        self.node(child, vi)?,
                    )?;
                }
                Ok(d.into_any().unbind())
            }
            Node::Variant { first, .. } => match self.take(vi) {
                Some(Value::Opt(o)) => self.node(plan.children[(first + o) as usize], vi),
                _ => Ok(py.None()),
            },
            // A CTF 2 BLOB (bytes) or UTF-16/32 string (its code units).
            Node::Bytes { .. } => match self.take(vi) {
                Some(Value::Bytes { off, len }) => {
                    PyBytes::new(py, &self.data[off..off + len]).into_py_any(py)
                }
                _ => Ok(py.None()),
            },
            // A CTF 2 optional: its value, or None.
            Node::Optional { child, .. } => match self.take(vi) {
                Some(Value::Opt(1)) => self.node(child, vi),
                _ => Ok(py.None()),
            },
            Node::Array {
                length, elem, text, ..
            } => self.elements(elem, length, text, vi),
            Node::Sequence { elem, text, .. } => match self.take(vi) {
                Some(Value::Len(len)) => self.elements(elem, len, text, vi),
                _ => Ok(py.None()),
            },
        }
    }

    fn elements(&self, elem: u32, len: u64, text: bool, vi: &mut usize) -> PyResult<Py<PyAny>> {
        if text {
            if len == 0 {
                return "".into_py_any(self.py);
            }
            return match self.take(vi) {
                Some(Value::Bytes { off, len }) => {
                    let b = &self.data[off..off + len];
                    let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
                    self.text(&b[..end])
                }
                _ => Ok(self.py.None()),
            };
        }
        let l = PyList::empty(self.py);
        for _ in 0..len {
            l.append(self.node(elem, vi)?)?;
        }
        Ok(l.into_any().unbind())
    }
}

#[pymethods]
impl Event {
    /// Nanoseconds from the clock's origin (None: the stream has no clock).
    #[getter]
    fn timestamp(&self) -> Option<i64> {
        self.rec().ns
    }

    /// The clock's value in cycles when the event was recorded.
    #[getter]
    fn cycles(&self) -> Option<u64> {
        self.rec().ts
    }

    /// Its stream: index, class id, CPU, trace name, file.
    #[getter]
    fn stream(&self) -> Stream {
        let r = self.rec();
        stream_of(&self.batch.shared, r.stream as usize, self.batch.pkt(r))
    }

    /// Byte offset of the event in its stream file.
    #[getter]
    fn offset(&self) -> u64 {
        self.rec().offset
    }

    /// The event's payload, as a dict.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope_dict(py, Scope::Payload)
    }

    /// The event's specific context.
    #[getter]
    fn context(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope_dict(py, Scope::Context)
    }

    /// The stream's event (common) context.
    #[getter]
    fn stream_context(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope_dict(py, Scope::StreamContext)
    }

    /// The packet context (the fields babeltrace2 shows).
    #[getter]
    fn packet_context(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope_dict(py, Scope::PacketContext)
    }

    /// The event header (every field, as decoded).
    #[getter]
    fn header(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope_dict(py, Scope::Header)
    }

    /// A field, looked up as the filter language does: payload, specific
    /// context, common context, header, packet context.
    fn __getitem__(&self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        self.lookup(py, key)?
            .ok_or_else(|| PyKeyError::new_err(key.to_string()))
    }

    /// `ev.get("field", default)`.
    #[pyo3(signature = (key, default=None))]
    fn get(&self, py: Python<'_>, key: &str, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        Ok(self
            .lookup(py, key)?
            .unwrap_or_else(|| default.unwrap_or_else(|| py.None())))
    }

    fn __contains__(&self, py: Python<'_>, key: &str) -> PyResult<bool> {
        Ok(self.lookup(py, key)?.is_some())
    }

    /// The event's `reef print` line (without its newline); the delta is
    /// from the previous event of the same iteration.
    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        self.intact()?;
        let shared = &self.batch.shared;
        let rec = self.rec();
        let label = &shared.labels[shared.streams[rec.stream as usize].trace_idx];
        let mut out = Vec::new();
        self.with_cursor(py, |c, pretty| {
            pretty.set_previous(self.prev.0, self.prev.1);
            pretty.event(&mut out, label, c, rec.ns);
        });
        while out.last() == Some(&b'\n') {
            out.pop();
        }
        self.intact()?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<reef.Event {} at {:?}>",
            self.name.bind(py).to_string_lossy(),
            self.rec().ns
        )
    }
}

/// A discarded-events or discarded-packets notice.
#[pyclass(module = "reef._reef", frozen)]
pub struct Discarded {
    batch: Arc<Batch>,
    idx: usize,
}

impl Discarded {
    fn n(&self) -> &Notice {
        match &self.batch.recs[self.idx].kind {
            RecKind::Discarded(n) => n,
            RecKind::Event(_) => unreachable!("a Discarded is made of a notice"),
        }
    }
}

#[pymethods]
impl Discarded {
    /// "events" or "packets".
    #[getter]
    fn kind(&self) -> &'static str {
        self.n().kind
    }

    /// How many (None: the tracer may have discarded events, number
    /// unknown).
    #[getter]
    fn count(&self) -> Option<u64> {
        self.n().count
    }

    /// The range's beginning, ns from the origin.
    #[getter]
    fn begin(&self) -> Option<i64> {
        self.n().begin
    }

    /// The range's end, ns from the origin.
    #[getter]
    fn end(&self) -> Option<i64> {
        self.n().end
    }

    #[getter]
    fn begin_cycles(&self) -> Option<u64> {
        self.n().begin_cycles
    }

    #[getter]
    fn end_cycles(&self) -> Option<u64> {
        self.n().end_cycles
    }

    /// Its time in the merged order (ns from the origin).
    #[getter]
    fn timestamp(&self) -> Option<i64> {
        self.batch.recs[self.idx].ns
    }

    #[getter]
    fn stream(&self) -> Stream {
        let r = &self.batch.recs[self.idx];
        stream_of(&self.batch.shared, r.stream as usize, self.batch.pkt(r))
    }

    /// babeltrace2's warning, as `reef print` writes it on stderr.
    fn __str__(&self) -> String {
        self.n().text.clone()
    }

    fn __repr__(&self) -> String {
        format!("<reef.Discarded {} {:?}>", self.n().kind, self.n().count)
    }
}

#[pymodule]
fn _reef(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<Messages>()?;
    m.add_class::<Event>()?;
    m.add_class::<Discarded>()?;
    m.add_class::<Stream>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    engines::register(m)?;
    arrow::register(m)?;
    script::register(m)?;
    live::register(m)?;
    source::register(m)?;
    Ok(())
}
