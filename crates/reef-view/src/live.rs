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
use reef_ctf::{FileScan, Metadata, Trace, TraceClass};
use reef_iter::ClockConv;
use reef_read::live::{Listener, TraceWriter, Written};
use reef_read::{ReadOptions, Source, TimeSpec, TraceLabel};
use serde::Serialize;

use crate::index::{BaseBuilder, Phase, Pred, Sizes, View};
use crate::model::ClassKeys;

/// Streams not heard from for this long do not hold the watermark back.
pub const ACTIVE: Duration = Duration::from_millis(500);
/// How often the index looks for new packets.
const TICK: Duration = Duration::from_millis(50);

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
    /// The program ended its trace.
    Ended,
}

/// What `/api/info` says of a live trace.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub state: State,
    /// `HOST:PORT`.
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
    let kept = out.is_some();
    let dir = match out {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("reef-view-live-{}", std::process::id())),
    };
    let writer = TraceWriter::create(&dir)?;
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let written = writer.written();
    let listener = Listener::connect_with(addr, wait, &mut Some(writer), false)?;
    let live = Arc::new(Live {
        status: Mutex::new(Status {
            state: State::Receiving,
            addr: listener.name().display().to_string(),
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
        written: written.clone(),
        dir: dir.clone(),
    });
    let (l, a) = (live.clone(), addr.to_string());
    std::thread::Builder::new()
        .name("reef-view-receive".into())
        .spawn(move || receive(listener, &a, &l))
        .map_err(|e| reef_read::Error::Trace(reef_ctf::Error::io(&dir, e)))?;
    // The metadata comes first.
    let deadline = Instant::now() + wait.max(Duration::from_secs(10));
    loop {
        if written.lock().map(|w| w.metadata > 0).unwrap_or(false) {
            break;
        }
        if live.lock().state != State::Receiving || Instant::now() > deadline {
            return Err(reef_read::Error::Trace(reef_ctf::Error::Stream {
                path: PathBuf::from(addr),
                offset: 0,
                msg: "no metadata received".into(),
            }));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let class = TraceClass::load(&dir)?;
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
    });
    let keys = Arc::new(ClassKeys::new(std::slice::from_ref(&trace)));
    let mut opts = opts;
    opts.paths = vec![dir.clone()];
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
        keys,
    );
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
                meta,
                files: Vec::new(),
                applied: None,
                builder: BaseBuilder::default(),
                done: 0,
                pred,
            };
            ix.run(&s, sizes)
        })
        .map_err(|e| reef_read::Error::Trace(reef_ctf::Error::io(Path::new("thread"), e)))?;
    Ok(slot)
}

/// The receiving thread: receives until the program ends its trace,
/// reconnecting when the connection drops.
fn receive(first: Listener, addr: &str, live: &Live) {
    let mut listener = Some(first);
    while let Some(mut l) = listener.take() {
        let r = l.receive(|_| Ok::<(), reef_read::Error>(()));
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

/// One stream file as last mapped.
struct Mapped {
    id: u64,
    file: Arc<StreamFile>,
    scan: FileScan,
}

struct LiveIndex {
    live: Arc<Live>,
    meta: Metadata,
    files: Vec<Mapped>,
    /// The watermark applied (ns from the clock's origin).
    applied: Option<i64>,
    builder: BaseBuilder,
    /// Bytes of stream data read into the index.
    done: u64,
    pred: Pred,
}

impl LiveIndex {
    fn run(&mut self, slot: &Slot, sizes: Sizes) {
        let view = slot.view();
        let mut last_bytes = None;
        loop {
            // The state first: once ended, everything is written.
            let state = self.live.lock().state;
            let written = self.live.written.lock().map(|w| w.clone()).unwrap_or_default();
            if last_bytes != Some(written.bytes) || state != State::Receiving {
                last_bytes = Some(written.bytes);
                if let Err(e) = self.step(&view, &written, state) {
                    if let Ok(mut b) = view.base.write() {
                        b.marks.finish(Phase::Error(e.to_string()));
                    }
                    return;
                }
            }
            if state == State::Ended {
                break;
            }
            std::thread::sleep(TICK);
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

    /// Maps what was written since, then indexes up to the watermark.
    fn step(&mut self, view: &View, w: &Written, state: State) -> Result<(), reef_read::Error> {
        let class = TraceClass::new(self.meta.clone()).map_err(|msg| {
            reef_read::Error::Trace(reef_ctf::Error::Stream {
                path: self.live.dir.join("metadata"),
                offset: 0,
                msg,
            })
        })?;
        let mut grown = false;
        for (i, &(id, len)) in w.streams.iter().enumerate() {
            if self.files.get(i).is_some_and(|m| m.file.data().len() as u64 == len) {
                continue;
            }
            let path = TraceWriter::stream_path(&self.live.dir, id);
            let io = |e| reef_read::Error::Trace(reef_ctf::Error::io(&path, e));
            let f = File::open(&path).map_err(io)?;
            // SAFETY: the file only grows (it is appended to by this
            // process's writer); the mapping covers whole packets written
            // before.
            let map = unsafe { memmap2::MmapOptions::new().len(len as usize).map(&f) }.map_err(io)?;
            let sf = StreamFile::new(path.clone(), map);
            let earlier = self.files.get(i).map(|m| (&*m.file, m.scan));
            let scan = scan_grown(&class, &sf, earlier)?;
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
            path: self.live.dir.clone(),
            dirs: vec![self.live.dir.clone()],
            class,
            sources,
            cut: None,
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
            return Ok(());
        };
        let mark = match state {
            // Everything received is in order.
            State::Ended | State::Dropped => newest,
            State::Receiving => {
                let active = newest - ACTIVE.as_nanos() as i64;
                ends.iter().copied().filter(|&e| e >= active).min().unwrap_or(newest)
            }
        };
        if self.applied.is_some_and(|a| mark <= a) {
            return Ok(());
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
        result
    }
}
