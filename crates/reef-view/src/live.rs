//! `reef view --live`: a running program's trace, received from libreef's
//! `REEF_LISTEN` socket and shown as it arrives.
//!
//! - A receiving thread writes what arrives into a trace directory
//!   (`reef_read::live::TraceWriter`, as `reef listen -o`), which counts
//!   the whole packets in each file. Nothing else slows it down: a
//!   program that produces faster than the index grows loses nothing on
//!   disk, the index only lags. When the connection drops it reconnects
//!   (every half second) and appends to the same files.
//! - An indexing thread, every 50 ms, maps the packets written since
//!   (only those: `reef_ctf::trace::scan_grown`), replaces the view's
//!   traces with the grown ones and applies the events up to a
//!   *watermark* to the base index, in time order, from the files. Each
//!   stream's last packet says up to when that stream was received; the
//!   watermark is the earliest of these among the streams heard from in
//!   the last [`ACTIVE`] (a thread that stopped recording does not hold it
//!   back). libreef's auto-flush cuts every thread's packet at one time,
//!   so the watermark follows the newest flush. An event that arrives
//!   older than the watermark (its thread was busy at two flushes) is on
//!   disk but not in the live index.
//!   A trace whose rows are its streams (libreef's) is read the short way:
//!   each stream on from where it stopped, event headers only, marked
//!   straight into its row (`LiveIndex::direct_step`); others through
//!   the merged reading's per-event code (`BaseBuilder`).
//! - When the program ends, the directory is indexed again from scratch
//!   with the final metadata (libreef re-measures its clock at exit) and
//!   that index is served instead: the page sees a new `epoch`, and its
//!   counts are `reef print DIR`'s.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use reef_ctf::trace::{scan_grown, StreamFile, StreamSource};
use reef_ctf::{FileScan, Item, Metadata, Place, StreamCursor, Trace, TraceClass};
use reef_iter::ClockConv;
use reef_read::live::{Listener, TraceWriter, Written};
use reef_read::{ReadOptions, Source, TimeSpec, TraceLabel};
use serde::Serialize;

use crate::index::{push_checkpoint, BaseBuilder, MarkSink, ModelPoint, Phase, Pred, Sizes, View};
use crate::model::{ClassKeys, Names, Rec, R_KEPT};

/// Streams not heard from for this long do not hold the watermark back.
pub const ACTIVE: Duration = Duration::from_millis(500);
/// How often the index looks for new packets.
const TICK: Duration = Duration::from_millis(50);
/// The short way marks events this many at a time (memory: 24 bytes each).
const BATCH: usize = 1 << 16;
/// An index behind by more than this (trace time) catches up this much
/// per step.
const STEP: i64 = 250_000_000;

/// What the view serves: replaced once when a live trace ends.
pub struct Slot {
    view: RwLock<Arc<View>>,
    /// Bumped when the view is replaced.
    epoch: AtomicU64,
    pub live: Option<Arc<Live>>,
}

impl Slot {
    pub fn new(view: Arc<View>, live: Option<Arc<Live>>) -> Arc<Slot> {
        Arc::new(Slot {
            view: RwLock::new(view),
            epoch: AtomicU64::new(0),
            live,
        })
    }

    pub fn view(&self) -> Arc<View> {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn replace(&self, v: Arc<View>) {
        *self.view.write().unwrap_or_else(|e| e.into_inner()) = v;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// The connection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Receiving,
    /// The connection closed or failed before the program ended its
    /// trace: reconnecting.
    Dropped,
    /// The program ended its trace (an LTTng session: it was destroyed).
    Ended,
    /// An LTTng relay that vanished or misbehaved: what was received is
    /// served, nothing more comes (`message` says why).
    Failed,
}

/// What `/api/info` says of a live trace.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub state: State,
    /// `libreef` (a `REEF_LISTEN` stream) or `lttng-live` (a session of
    /// lttng-relayd).
    pub source: &'static str,
    /// `HOST:PORT`, or the session's `net://` URL.
    pub addr: String,
    /// The trace directory being written.
    pub dir: String,
    /// Whether it is kept (`-o`) or removed when `reef view` exits.
    pub kept: bool,
    /// Connections made (1 + reconnections).
    pub connections: u32,
    /// Why the last connection dropped.
    pub message: Option<String>,
    pub packets: u64,
    pub bytes: u64,
    pub streams: usize,
    /// The newest time received (ns from the first event).
    pub received_to: Option<i64>,
    /// The watermark (ns from the first event): events up to it are in
    /// the index.
    pub indexed_to: Option<i64>,
    /// The ended trace is being indexed again from scratch.
    pub reindexing: bool,
}

/// A live connection and its trace directory.
pub struct Live {
    status: Mutex<Status>,
    written: Arc<Mutex<Written>>,
    dir: PathBuf,
    /// The CTF trace the index follows: `dir` itself (libreef), or one
    /// trace of the LTTng session in it (set when its metadata arrives).
    trace_dir: Mutex<PathBuf>,
    /// An LTTng session's horizon (ns; `i64::MIN`: none yet): everything
    /// before it is written (`LiveRead::horizon_ns`).
    horizon: std::sync::atomic::AtomicI64,
}

impl Live {
    pub fn status(&self) -> Status {
        let mut s = self.lock().clone();
        if let Ok(w) = self.written.lock() {
            s.packets = w.packets;
            s.bytes = w.bytes;
            s.streams = w.streams.len();
        }
        s
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The directory, to remove when not kept.
    pub fn temporary_dir(&self) -> Option<&Path> {
        (!self.lock().kept).then_some(self.dir.as_path())
    }

    fn new(source: &'static str, addr: String, dir: PathBuf, kept: bool) -> Live {
        Live {
            status: Mutex::new(Status {
                state: State::Receiving,
                source,
                addr,
                dir: dir.display().to_string(),
                kept,
                connections: 1,
                message: None,
                packets: 0,
                bytes: 0,
                streams: 0,
                received_to: None,
                indexed_to: None,
                reindexing: false,
            }),
            written: Arc::new(Mutex::new(Written::default())),
            trace_dir: Mutex::new(dir.clone()),
            horizon: std::sync::atomic::AtomicI64::new(i64::MIN),
            dir,
        }
    }

    fn trace_dir(&self) -> PathBuf {
        self.trace_dir
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn lttng(&self) -> bool {
        self.lock().source == "lttng-live"
    }
}

/// Connects to `addr` (retrying for `wait`), writes what arrives to `out`
/// (default: a directory in the temporary directory), waits for the
/// metadata and starts indexing. The view's reading options apply
/// (filter; the window is ignored).
pub fn start(
    addr: &str,
    out: Option<PathBuf>,
    wait: Duration,
    opts: ReadOptions,
    sizes: Sizes,
) -> Result<Arc<Slot>, reef_read::Error> {
    in_dir(out, |dir, kept| {
        start_in(addr, dir, kept, wait, opts, sizes)
    })
}

/// Runs `start` with the directory that receives a live trace (`out`, or
/// one in the temporary directory) and whether it is kept; a temporary
/// one is removed when `start` fails.
fn in_dir(
    out: Option<PathBuf>,
    start: impl FnOnce(PathBuf, bool) -> Result<Arc<Slot>, reef_read::Error>,
) -> Result<Arc<Slot>, reef_read::Error> {
    let kept = out.is_some();
    let dir = match out {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("reef-view-live-{}", std::process::id())),
    };
    let r = start(dir.clone(), kept);
    if r.is_err() && !kept {
        if received_into(&dir) {
            // What arrived before the error is not thrown away.
            eprintln!("reef view: what was received is kept in {}", dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    r
}

/// Whether a live trace directory holds anything received (a metadata
/// or a stream file that is not empty).
fn received_into(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            (n == "metadata" || n.starts_with("stream_") || e.path().is_dir())
                && e.metadata().is_ok_and(|m| m.is_dir() || m.len() > 0)
        })
    })
}

/// After a receiving error or records left out, a temporary directory is
/// kept (and said) rather than removed when `reef view` exits.
fn keep_on_error(live: &Live, what: &str) {
    let mut s = live.lock();
    if !s.kept {
        s.kept = true;
        eprintln!(
            "reef view: {what}; what was received is kept in {}",
            live.dir.display()
        );
    }
}

fn start_in(
    addr: &str,
    dir: PathBuf,
    kept: bool,
    wait: Duration,
    opts: ReadOptions,
    sizes: Sizes,
) -> Result<Arc<Slot>, reef_read::Error> {
    let writer = TraceWriter::create(&dir)?;
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let written = writer.written();
    let listener = Listener::connect_with(addr, wait, &mut Some(writer), false)?;
    let mut live = Live::new("libreef", listener.name().display().to_string(), dir, kept);
    live.written = written;
    let live = Arc::new(live);
    let (l, a) = (live.clone(), addr.to_string());
    std::thread::Builder::new()
        .name("reef-view-receive".into())
        .spawn(move || receive(listener, &a, &l))
        .map_err(|e| reef_read::Error::Trace(reef_ctf::Error::io(&live.dir, e)))?;
    follow(live, wait, opts, sizes)
}

/// Like [`start`] for an LTTng live session (`net://HOST[:PORT]/host/
/// TARGET_HOST/SESSION`): a thread reads it from lttng-relayd into the
/// directory (`HOST/SESSION-ID/trace-N/`, a CTF trace per trace of the
/// session, as `reef print net://` does), and the index follows the
/// session's first trace that has metadata. `wait`: how long to wait for
/// it (at least 10 s); `opts.live_action` applies while the session is
/// not there.
pub fn start_lttng(
    url: &reef_read::lttng_live::LiveUrl,
    out: Option<PathBuf>,
    wait: Duration,
    opts: ReadOptions,
    sizes: Sizes,
) -> Result<Arc<Slot>, reef_read::Error> {
    in_dir(out, |dir, kept| {
        let read =
            reef_read::lttng_live::LiveRead::open_dir(url, opts.live_action, &opts, Some(&dir))?;
        let dir = std::path::absolute(&dir).unwrap_or(dir.clone());
        let name = match &url.target {
            Some((h, s)) => format!("{}/host/{h}/{s}", url.base),
            None => url.base.clone(),
        };
        let live = Arc::new(Live::new("lttng-live", name, dir.clone(), kept));
        let l = live.clone();
        std::thread::Builder::new()
            .name("reef-view-receive".into())
            .spawn(move || receive_lttng(read, &l))
            .map_err(|e| reef_read::Error::Trace(reef_ctf::Error::io(&dir, e)))?;
        follow(live, wait, opts, sizes)
    })
}

/// Waits for the metadata, then makes the view and starts indexing.
fn follow(
    live: Arc<Live>,
    wait: Duration,
    opts: ReadOptions,
    sizes: Sizes,
) -> Result<Arc<Slot>, reef_read::Error> {
    let written = live.written.clone();
    // The metadata comes first.
    let deadline = Instant::now() + wait.max(Duration::from_secs(10));
    loop {
        if written.lock().map(|w| w.metadata > 0).unwrap_or(false) {
            break;
        }
        let st = live.lock().clone();
        if st.state != State::Receiving || Instant::now() > deadline {
            return Err(reef_read::Error::Trace(reef_ctf::Error::Stream {
                path: PathBuf::from(&st.addr),
                offset: 0,
                msg: match st.message {
                    Some(m) => {
                        let why = m.strip_prefix(&format!("{}: ", st.addr)).unwrap_or(&m);
                        format!("no metadata received; the connection ended: {why}")
                    }
                    None => "no metadata received".into(),
                },
            }));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let dir = live.trace_dir();
    let meta_seen = written.lock().map(|w| w.metadata).unwrap_or(0);
    let class = TraceClass::load(&dir)?;
    let meta = class.meta.clone();
    let mut opts = opts;
    // The ended trace is indexed again from the whole directory (an
    // LTTng session: every trace of it).
    opts.paths = vec![live.dir.clone()];
    let (view, keys, direct, pred) = new_view(&dir, class, opts, sizes)?;
    let slot = Slot::new(view, Some(live.clone()));
    let s = slot.clone();
    std::thread::Builder::new()
        .name("reef-view-live".into())
        .spawn(move || {
            // The traced program, libreef's consumer and the receiving
            // thread come first: under load the index lags, nothing is
            // lost.
            crate::pass::lower_priority(19);
            let mut ix = LiveIndex {
                live,
                trace_dir: dir,
                meta,
                meta_seen,
                files: Vec::new(),
                applied: None,
                builder: BaseBuilder::default(),
                done: 0,
                pred,
                direct,
                keys,
                places: Vec::new(),
                last_cy: Vec::new(),
                last_cp: 0,
                buf: Vec::new(),
            };
            ix.run(&s, sizes)
        })
        .map_err(|e| reef_read::Error::Trace(reef_ctf::Error::io(Path::new("thread"), e)))?;
    Ok(slot)
}

/// An empty view of the trace in `dir` (of class `class`), its class
/// keys, whether it is indexed the short way, and the filter.
fn new_view(
    dir: &Path,
    class: TraceClass,
    mut opts: ReadOptions,
    sizes: Sizes,
) -> Result<(Arc<View>, Arc<ClassKeys>, bool, Pred), reef_read::Error> {
    let dir = dir.to_path_buf();
    let meta = class.meta.clone();
    let label = TraceLabel {
        name: match meta.env_get("hostname") {
            Some(reef_ctf::EnvValue::Str(s)) => s.clone(),
            _ => String::new(),
        },
    };
    let trace = Arc::new(Trace {
        path: dir.clone(),
        dirs: vec![dir.clone()],
        class,
        sources: Vec::new(),
        cut: None,
        damage: Vec::new(),
    });
    let keys = Arc::new(ClassKeys::new(std::slice::from_ref(&trace)));
    // Rows that are the streams themselves, every event kept: each
    // stream's events go straight to its row.
    let direct = !keys.kernel[0]
        && !keys.vtid[0]
        && opts.filter.as_deref().is_none_or(|f| f.trim().is_empty());
    opts.begin = None;
    opts.end = None;
    let budget = sizes.budget.unwrap_or(16 << 20);
    let pred = Pred::new(&[opts.filter.as_deref().unwrap_or("")], &[], &[]).map_err(|err| {
        reef_filter::LocatedError {
            what: "filter".into(),
            text: opts.filter.clone().unwrap_or_default(),
            err,
        }
    })?;
    let view = View::new(
        vec![trace],
        vec![label],
        opts,
        sizes,
        0,
        budget,
        keys.clone(),
    );
    Ok((view, keys, direct, pred))
}

/// The receiving thread of an LTTng session: reads it until it ends or
/// the relay fails, publishing what is written of the trace the index
/// follows (the first with metadata; the others are on disk, in the
/// final index).
fn receive_lttng(mut read: reef_read::lttng_live::LiveRead, live: &Live) {
    use reef_read::lttng_live::Pump;
    let mut chosen: Option<PathBuf> = None;
    let mut meta_len = 0;
    loop {
        let r = read.pump();
        let traces = read.traces();
        live.horizon
            .store(read.horizon_ns().unwrap_or(i64::MIN), Ordering::Release);
        if chosen.is_none() {
            chosen = traces
                .iter()
                .find(|t| t.metadata > 0)
                .map(|t| t.dir.clone());
            if let Some(d) = &chosen {
                *live.trace_dir.lock().unwrap_or_else(|e| e.into_inner()) = d.clone();
            }
        }
        if let Some(t) = traces.iter().find(|t| Some(&t.dir) == chosen.as_ref()) {
            if let Ok(mut w) = live.written.lock() {
                if t.metadata != meta_len {
                    meta_len = t.metadata;
                    w.metadata += 1;
                }
                w.streams.clone_from(&t.streams);
                // The final index's order (`Trace::from_class`: paths).
                w.streams.sort_by(|a, b| {
                    TraceWriter::stream_path(Path::new(""), a.0)
                        .cmp(&TraceWriter::stream_path(Path::new(""), b.0))
                });
                w.packets = traces.iter().map(|t| t.packets).sum();
                w.bytes = traces
                    .iter()
                    .flat_map(|t| t.streams.iter().map(|s| s.1))
                    .sum();
            }
        }
        match r {
            Ok(Pump::Ended) => {
                live.lock().state = State::Ended;
                return;
            }
            Ok(_) => {}
            Err(e) => {
                let mut s = live.lock();
                s.state = State::Failed;
                s.message = Some(e.to_string());
                return;
            }
        }
    }
}

/// The receiving thread: receives until the program ends its trace,
/// reconnecting when the connection drops.
fn receive(first: Listener, addr: &str, live: &Live) {
    let mut listener = Some(first);
    while let Some(mut l) = listener.take() {
        let r = l.receive(|_| Ok::<(), reef_read::Error>(()));
        if let Err(e) = &r {
            keep_on_error(live, &e.to_string());
        } else if !l.refused().is_empty() {
            keep_on_error(live, &format!("{} records left out", l.refused().len()));
        }
        let ended = l.received().ended;
        let mut writer = l.into_writer();
        if ended {
            live.lock().state = State::Ended;
            return;
        }
        {
            let mut s = live.lock();
            s.state = State::Dropped;
            s.message = Some(match r {
                Err(e) => e.to_string(),
                Ok(()) => "the connection closed before the end of the trace".into(),
            });
        }
        while listener.is_none() {
            std::thread::sleep(Duration::from_millis(500));
            if let Ok(l) = Listener::connect_with(addr, Duration::ZERO, &mut writer, false) {
                let mut s = live.lock();
                s.state = State::Receiving;
                s.connections += 1;
                listener = Some(l);
            }
        }
    }
}

/// Maps the first `len` bytes of the stream file `path` and reads the
/// headers of the packets after those of `earlier` (the same file mapped
/// shorter).
fn map_scan(
    class: &TraceClass,
    path: &Path,
    len: u64,
    earlier: Option<&(Arc<StreamFile>, FileScan)>,
) -> Result<(StreamFile, FileScan), reef_ctf::Error> {
    let f = File::open(path).map_err(|e| reef_ctf::Error::io(path, e))?;
    // SAFETY: the file only grows (this process's writer appends to it);
    // the mapping covers whole packets written before.
    let map = unsafe { memmap2::MmapOptions::new().len(len as usize).map(&f) }
        .map_err(|e| reef_ctf::Error::io(path, e))?;
    let sf = StreamFile::new(path.to_path_buf(), map);
    let scan = scan_grown(class, &sf, earlier.map(|(f, s)| (&**f, *s)))?;
    Ok((sf, scan))
}

/// One stream file as last mapped.
struct Mapped {
    id: u64,
    file: Arc<StreamFile>,
    scan: FileScan,
}

struct LiveIndex {
    live: Arc<Live>,
    /// The trace followed (see [`Live::trace_dir`]).
    trace_dir: PathBuf,
    meta: Metadata,
    /// `Written::metadata` when `meta` was loaded.
    meta_seen: u32,
    files: Vec<Mapped>,
    /// The watermark applied (ns from the clock's origin).
    applied: Option<i64>,
    builder: BaseBuilder,
    /// Bytes of stream data read into the index.
    done: u64,
    pred: Pred,
    /// The short way (see [`LiveIndex::direct`]).
    direct: bool,
    keys: Arc<ClassKeys>,
    /// The short way: per stream, where it stopped and the cycles of its
    /// last event.
    places: Vec<Place>,
    last_cy: Vec<u64>,
    /// Bytes written when the last checkpoint was made.
    last_cp: u64,
    buf: Vec<(i64, u64, u32)>,
}

impl LiveIndex {
    fn run(&mut self, slot: &Slot, sizes: Sizes) {
        let mut view = slot.view();
        let mut last_bytes = None;
        let mut behind = false;
        loop {
            // The state first: once ended, everything is written (and
            // indexed again from scratch).
            let state = self.live.lock().state;
            if matches!(state, State::Ended | State::Failed) {
                break;
            }
            let written = self
                .live
                .written
                .lock()
                .map(|w| w.clone())
                .unwrap_or_default();
            if self.live.lttng() && written.metadata != self.meta_seen {
                match self.new_metadata(&view, written.metadata, sizes) {
                    Ok(Some(v)) => {
                        view = v;
                        slot.replace(view.clone());
                        last_bytes = None;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        if let Ok(mut b) = view.base.write() {
                            b.marks.finish(Phase::Error(e.to_string()));
                        }
                        return;
                    }
                }
            }
            // An LTTng session's streams are given in the order the final
            // index reads them (their files' names), so that rows keep
            // their labels when it replaces this one; a stream whose first
            // packet comes after one placed later restarts the index.
            if self.live.lttng()
                && written
                    .streams
                    .iter()
                    .zip(&self.files)
                    .any(|(s, m)| s.0 != m.id)
            {
                let r = TraceClass::new(self.meta.clone())
                    .map_err(|msg| {
                        reef_read::Error::Trace(reef_ctf::Error::Stream {
                            path: self.trace_dir.join("metadata"),
                            offset: 0,
                            msg,
                        })
                    })
                    .and_then(|class| self.restart(&view, class, sizes));
                match r {
                    Ok(v) => {
                        view = v;
                        slot.replace(view.clone());
                        last_bytes = None;
                    }
                    Err(e) => {
                        if let Ok(mut b) = view.base.write() {
                            b.marks.finish(Phase::Error(e.to_string()));
                        }
                        return;
                    }
                }
            }
            if behind || last_bytes != Some(written.bytes) || state != State::Receiving {
                last_bytes = Some(written.bytes);
                match self.step(&view, &written, state) {
                    Ok(short) => behind = short,
                    Err(e) => {
                        if let Ok(mut b) = view.base.write() {
                            b.marks.finish(Phase::Error(e.to_string()));
                        }
                        return;
                    }
                }
            }
            if !behind {
                std::thread::sleep(TICK);
            }
        }
        // The whole trace again, with the final metadata.
        self.live.lock().reindexing = true;
        let fresh = View::open(view.opts.clone(), sizes).and_then(|v| {
            loop {
                let phase = v.base.read().map(|b| b.marks.phase.clone());
                match phase {
                    Ok(Phase::Building) => std::thread::sleep(TICK),
                    Ok(Phase::Error(e)) => {
                        return Err(reef_read::Error::Trace(reef_ctf::Error::Stream {
                            path: self.live.dir.clone(),
                            offset: 0,
                            msg: e,
                        }))
                    }
                    _ => break,
                }
            }
            Ok(v)
        });
        match fresh {
            Ok(v) => slot.replace(v),
            Err(e) => {
                if let Ok(mut b) = view.base.write() {
                    b.marks.finish(Phase::Error(e.to_string()));
                }
            }
        }
        self.live.lock().reindexing = false;
    }

    /// An LTTng session's metadata grew (a program registered new
    /// tracepoints): the new text is read (at a later tick if it does
    /// not parse yet). New event or stream classes renumber the class
    /// keys the index holds: the index starts over on a new view (the
    /// page sees a new epoch), from the files already written.
    fn new_metadata(
        &mut self,
        view: &View,
        seen: u32,
        sizes: Sizes,
    ) -> Result<Option<Arc<View>>, reef_read::Error> {
        let Ok(class) = TraceClass::load(&self.trace_dir) else {
            return Ok(None);
        };
        self.meta_seen = seen;
        let names = |m: &Metadata| -> Vec<Vec<String>> {
            m.streams
                .iter()
                .map(|s| s.events.iter().map(|e| e.name.clone()).collect())
                .collect()
        };
        if names(&class.meta) == names(&self.meta) {
            self.meta = class.meta;
            return Ok(None);
        }
        self.meta = class.meta.clone();
        self.restart(view, class, sizes).map(Some)
    }

    /// The index starts over on a new view of the files written so far.
    fn restart(
        &mut self,
        view: &View,
        class: TraceClass,
        sizes: Sizes,
    ) -> Result<Arc<View>, reef_read::Error> {
        let (v, keys, direct, pred) = new_view(&self.trace_dir, class, view.opts.clone(), sizes)?;
        self.files.clear();
        self.applied = None;
        self.builder = BaseBuilder::default();
        self.done = 0;
        self.keys = keys;
        self.direct = direct;
        self.pred = pred;
        self.places.clear();
        self.last_cy.clear();
        self.last_cp = 0;
        Ok(v)
    }

    /// Maps what was written since, then indexes up to the watermark (at
    /// most [`STEP`] further: whether it stopped short).
    fn step(&mut self, view: &View, w: &Written, state: State) -> Result<bool, reef_read::Error> {
        let class = TraceClass::new(self.meta.clone()).map_err(|msg| {
            reef_read::Error::Trace(reef_ctf::Error::Stream {
                path: self.trace_dir.join("metadata"),
                offset: 0,
                msg,
            })
        })?;
        let mut grown = false;
        // A damaged packet: the packets before it are indexed, then the
        // error ends the index.
        let mut damaged: Option<reef_read::Error> = None;
        for (i, &(id, len)) in w.streams.iter().enumerate() {
            if self
                .files
                .get(i)
                .is_some_and(|m| m.file.data().len() as u64 == len)
            {
                continue;
            }
            let path = TraceWriter::stream_path(&self.trace_dir, id);
            let earlier = self.files.get(i).map(|m| (m.file.clone(), m.scan));
            let (sf, scan) = match map_scan(&class, &path, len, earlier.as_ref()) {
                Ok(m) => m,
                Err(e) => {
                    let at = match &e {
                        reef_ctf::Error::Stream { offset, .. } => Some(*offset),
                        reef_ctf::Error::Decode { packet_offset, .. } => Some(*packet_offset),
                        _ => None,
                    };
                    let done = earlier.as_ref().map_or(0, |(f, _)| f.data().len() as u64);
                    damaged = Some(e.into());
                    match at.filter(|&a| a > done) {
                        Some(a) => map_scan(&class, &path, a, earlier.as_ref())?,
                        None => continue,
                    }
                }
            };
            let m = Mapped {
                id,
                file: Arc::new(sf),
                scan,
            };
            match self.files.get_mut(i) {
                Some(old) => *old = m,
                None => self.files.push(m),
            }
            grown = true;
        }
        let sources = self
            .files
            .iter()
            .map(|m| StreamSource {
                stream: m.scan.stream,
                instance_id: m.scan.instance_id.or(Some(m.id)),
                files: vec![m.file.clone()],
            })
            .collect();
        let trace = Arc::new(Trace {
            path: self.trace_dir.clone(),
            dirs: vec![self.trace_dir.clone()],
            class,
            sources,
            cut: None,
            damage: Vec::new(),
        });
        if grown {
            view.set_traces(vec![trace.clone()]);
        }
        // Each stream's last packet's end.
        let ends: Vec<i64> = trace
            .sources
            .iter()
            .filter_map(|s| {
                let sc = &trace.class.streams[s.stream];
                let conv = ClockConv::new(&trace.class.meta.clocks[sc.clock?]);
                let end = s.files.last()?.packets.get()?.last()?.1;
                (end != u64::MAX).then(|| conv.ns(end)).flatten()
            })
            .collect();
        let Some(&newest) = ends.iter().max() else {
            return damaged.map_or(Ok(false), Err);
        };
        let mut mark = match state {
            // Everything received is in order.
            State::Ended | State::Dropped | State::Failed => newest,
            State::Receiving => {
                let active = newest - ACTIVE.as_nanos() as i64;
                let w = ends
                    .iter()
                    .copied()
                    .filter(|&e| e >= active)
                    .min()
                    .unwrap_or(newest);
                // An LTTng session says how far every stream is written
                // (inactivity beacons included): up to there, nothing
                // more can come.
                match self.live.horizon.load(Ordering::Acquire) {
                    i64::MIN => w,
                    h => w.max(h.saturating_sub(1).min(newest)),
                }
            }
        };
        let origin = view.base.read().ok().and_then(|b| b.origin);
        if let Some(o) = origin {
            self.live.lock().received_to = Some(newest - o);
        }
        if self.applied.is_some_and(|a| mark <= a) {
            return damaged.map_or(Ok(false), Err);
        }
        let short = match self.applied {
            Some(a) if mark - a > STEP => {
                mark = a + STEP;
                true
            }
            _ => false,
        };
        if self.direct {
            let r = self.direct_step(view, &trace, mark, w.bytes);
            self.applied = Some(mark);
            let origin = view.base.read().ok().and_then(|b| b.origin);
            let mut s = self.live.lock();
            s.received_to = origin.map(|o| newest - o);
            s.indexed_to = origin.map(|o| mark - o);
            return r.and(damaged.map_or(Ok(short), Err));
        }
        let mut read = view.opts.clone();
        read.filter = None;
        read.workers = Some(1);
        read.begin = self.applied.map(|a| TimeSpec::Ns(a + 1));
        read.end = Some(TimeSpec::Ns(mark));
        let mut src = Source::from_traces(vec![trace], view.labels.clone(), &read)?;
        let progress = src.progress();
        let before = self.done;
        let mut result = Ok(());
        'read: loop {
            let Ok(mut g) = view.base.write() else { break };
            let b = &mut *g;
            for _ in 0..8192 {
                let m = match src.next() {
                    Ok(Some(m)) => m,
                    Ok(None) => break 'read,
                    Err(e) => {
                        result = Err(e);
                        break 'read;
                    }
                };
                let done = before + progress.done.load(Ordering::Relaxed);
                self.builder.message(view, b, &m, &self.pred, done);
            }
        }
        self.done = before + progress.done.load(Ordering::Relaxed);
        self.applied = Some(mark);
        let origin = view.base.read().ok().and_then(|b| b.origin);
        let mut s = self.live.lock();
        s.received_to = origin.map(|o| newest - o);
        s.indexed_to = origin.map(|o| mark - o);
        result.and(damaged.map_or(Ok(short), Err))
    }
}

/// Marks `evs` (ns, cycles, class key) of stream `s` on its row, the
/// stream's first event through the model (it makes the row): runs of
/// events in one bucket at once. Events at or before `after` arrived after
/// the index went past their time: on disk, in the final index, not here.
fn mark_events(
    b: &mut crate::index::Base,
    s: usize,
    evs: &[(i64, u64, u32)],
    origin: i64,
    after: Option<i64>,
    newest: &mut Option<(i64, u64)>,
) {
    let mut run: Option<(i64, i64, u32, u32, i64)> = None;
    let k = b.marks.k;
    for &(ns, cy, ckey) in evs {
        if after.is_some_and(|a| ns <= a) {
            continue;
        }
        let t = ns - origin;
        b.end = b.end.max(t);
        b.marks.events += 1;
        if newest.is_none_or(|(n, _)| ns >= n) {
            *newest = Some((ns, cy));
        }
        let Some(row) = b.model.stream_row(s) else {
            let r = Rec {
                ns,
                ckey,
                flags: R_KEPT,
                nm: u32::MAX,
                ..Rec::default()
            };
            b.model.apply(
                0,
                s,
                &r,
                &Names::default(),
                t,
                |_| true,
                &mut MarkSink { m: &mut b.marks },
            );
            continue;
        };
        let class = b.model.class_id(ckey);
        match &mut run {
            Some(x) if x.0 == t >> k => (x.3, x.4) = (x.3 + 1, t),
            _ => {
                if let Some((_, t0, c, n, t1)) = run {
                    b.marks
                        .track(row, crate::model::OnRule::Never)
                        .mark_n(t0, t1, c, n, k);
                }
                run = Some((t >> k, t, class, 1, t));
            }
        }
    }
    if let (Some((_, t0, c, n, t1)), Some(row)) = (run, b.model.stream_row(s)) {
        b.marks
            .track(row, crate::model::OnRule::Never)
            .mark_n(t0, t1, c, n, k);
    }
}

impl LiveIndex {
    /// The short way, for a trace whose rows are its streams and whose
    /// events are all kept: each stream read on from where it stopped,
    /// only its events' headers (`StreamCursor::skim_each`), up to the
    /// watermark `w`, marked straight into its row (runs of events in one
    /// bucket at once), with a checkpoint at the step's start when due.
    /// Rows' marks only need each row's events in order, which each
    /// stream gives; the list's checkpoints sit at step boundaries, where
    /// every event before is in.
    fn direct_step(
        &mut self,
        view: &View,
        trace: &Arc<Trace>,
        w: i64,
        written: u64,
    ) -> Result<(), reef_read::Error> {
        let n = trace.sources.len();
        self.places.resize(n, Place::Unread);
        self.last_cy.resize(n, 0);
        let convs: Vec<Option<(ClockConv, u64)>> = (0..n)
            .map(|s| {
                let sc = &trace.class.streams[trace.sources[s].stream];
                let conv = ClockConv::new(&trace.class.meta.clocks[sc.clock?]);
                let (lo, hi) = conv.defined_range()?;
                // The last cycles at or before the watermark.
                let top = conv.last_before(w.checked_add(1)?, lo, hi)?;
                Some((conv, top))
            })
            .collect();
        let Ok(mut g) = view.base.write() else {
            return Ok(());
        };
        let b = &mut *g;
        if b.origin.is_none() {
            // The first event of all: each stream's first.
            let mut first: Option<i64> = None;
            for (s, cv) in convs.iter().enumerate() {
                let Some((conv, _)) = cv else { continue };
                let mut c = StreamCursor::new(trace.clone(), s);
                c.skip_values(true);
                if let Some(Item::Event) = c.next_skimmed()? {
                    if let Some(ns) = c.event.ts.and_then(|cy| conv.ns(cy)) {
                        first = Some(first.map_or(ns, |f: i64| f.min(ns)));
                    }
                }
            }
            match first {
                Some(f) if f <= w => b.origin = Some(f),
                _ => return Ok(()),
            }
        }
        let origin = b.origin.unwrap_or(0);
        let after = self.applied;
        if b.marks.checkpoints.is_empty() || written >= self.last_cp + view.spacing_at(written) {
            self.last_cp = written;
            push_checkpoint(&mut b.marks, after.map_or(0, |a| a + 1 - origin));
            b.points.push(ModelPoint {
                kernel: b.model.kernel.point(),
                values: b.model.values(),
                places: Arc::new([]),
            });
        }
        let mut newest: Option<(i64, u64)> = b.marks.prev.0.zip(b.marks.prev.1);
        for (s, cv) in convs.iter().enumerate() {
            let Some((conv, top)) = *cv else { continue };
            let mut cur = StreamCursor::new(trace.clone(), s);
            cur.skip_values(true);
            cur.go_to(&self.places[s])?;
            let base = self.keys.key_base(0, cur.stream);
            let mut last = self.last_cy[s];
            self.buf.clear();
            // A decoding error: the events before it are marked first.
            let mut failed = None;
            loop {
                if self.buf.len() >= BATCH {
                    mark_events(b, s, &self.buf, origin, after, &mut newest);
                    self.buf.clear();
                    b.marks.fit(view.budget);
                }
                let buf = &mut self.buf;
                if let Err(e) = cur.skim_each(&mut last, top, |idx, cy| {
                    buf.push((conv.ns(cy).unwrap_or(i64::MAX), cy, base + idx as u32))
                }) {
                    failed = Some(e);
                    break;
                }
                // The next event: a new packet's first, one the short way
                // stopped at (past the watermark, or back in time), or
                // none yet.
                let place = cur.place();
                let next = match cur.next_skimmed() {
                    Ok(n) => n,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                };
                match next {
                    None => {
                        self.places[s] = place;
                        break;
                    }
                    Some(Item::Event) => {
                        let cy = cur.event.ts.unwrap_or(0);
                        if cy > top {
                            self.places[s] = place;
                            break;
                        }
                        last = last.max(cy);
                        let idx = cur.event.event as u32;
                        self.buf
                            .push((conv.ns(cy).unwrap_or(i64::MAX), cy, base + idx));
                    }
                    Some(_) => {}
                }
            }
            self.last_cy[s] = last;
            mark_events(b, s, &self.buf, origin, after, &mut newest);
            b.marks.fit(view.budget);
            if let Some(e) = failed {
                if let Some((ns, cy)) = newest {
                    b.marks.prev = (Some(ns), Some(cy));
                }
                return Err(e.into());
            }
        }
        if let Some((ns, cy)) = newest {
            b.marks.prev = (Some(ns), Some(cy));
        }
        Ok(())
    }
}
