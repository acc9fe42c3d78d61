//! Opening a trace: its metadata parsed and compiled into plans, its stream
//! files mapped and grouped into streams.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::decode::State;
use crate::metadata::read_metadata_cut;
use crate::model::*;
use crate::plan::{collect_refs, compile, Meaning, Plan, ScopeRoots};
use crate::stream::{PacketInfo, PacketScratch};
use crate::Error;

/// The compiled plans of one event class.
#[derive(Debug, Default)]
pub struct EventPlans {
    /// Index into the stream class's `events` in the model.
    pub class: usize,
    pub context: Plan,
    pub payload: Plan,
    /// The context and payload crossed without their values, when they allow it.
    pub skim: Option<crate::prog::Skim>,
    /// `skim` packed for the common case.
    pub quick: crate::prog::QuickSkim,
}

/// An event class's plans: compiled when the trace class is built, or,
/// for a trace class built lazily ([`TraceClass::load_lazy`]), when an
/// event of the class is first decoded or its fields first looked for.
#[derive(Debug)]
pub struct EventSlot {
    /// Index into the stream class's `events` in the model.
    pub class: usize,
    plans: std::sync::OnceLock<EventPlans>,
}

/// The plans of a class not compiled yet (see [`StreamPlans::event`]).
static NOT_COMPILED: std::sync::LazyLock<EventPlans> =
    std::sync::LazyLock::new(EventPlans::default);

/// The compiled plans of one stream class.
#[derive(Debug)]
pub struct StreamPlans {
    /// Index into `Metadata::streams`.
    pub class: usize,
    /// Fields referenced by sequences/variants: slot `i` holds `refs[i]`.
    pub refs: Vec<FieldRef>,
    pub packet_header: Plan,
    pub packet_context: Plan,
    pub event_header: Plan,
    pub event_common_context: Plan,
    /// By event class (in the stream class's declaration order): its plans.
    pub events: Vec<EventSlot>,
    /// Event id → index into `events`.
    pub event_index: HashMap<u64, usize>,
    /// The same for ids below 4096, as a table (NONE: no such event).
    pub event_dense: Vec<u32>,
    /// The stream's default clock (index into `Metadata::clocks`): the clock
    /// its timestamps are mapped to.
    pub clock: Option<usize>,
}

/// A trace's metadata, parsed and compiled.
#[derive(Debug)]
pub struct TraceClass {
    pub meta: Metadata,
    /// The packet header compiled with only its own references: decoded
    /// first, to learn the stream class of a packet.
    pub packet_header: Plan,
    pub packet_header_slots: usize,
    pub streams: Vec<StreamPlans>,
    /// Where the metadata file is cut inside a declaration, when the
    /// declarations before the cut were enough to build this class.
    pub damage: Option<crate::Damage>,
}

impl StreamPlans {
    /// The plans of event class `i` (index into `events`), as compiled: a
    /// trace class built eagerly has them all; one built lazily has those
    /// of the classes whose events were decoded or whose fields were
    /// looked for ([`TraceClass::event_plans`]), and empty plans for the
    /// others.
    #[inline]
    pub fn event(&self, i: usize) -> &EventPlans {
        self.events[i].plans.get().unwrap_or(&NOT_COMPILED)
    }

    /// The plans of every event class, as [`StreamPlans::event`] gives them.
    pub fn event_plans(&self) -> impl Iterator<Item = &EventPlans> {
        (0..self.events.len()).map(|i| self.event(i))
    }

    /// The plans of event class `i` (index into `events`), compiled on
    /// first use; `meta`: the metadata of the trace class these plans
    /// belong to.
    #[inline]
    pub fn compiled(&self, meta: &Metadata, i: usize) -> Result<&EventPlans, String> {
        match self.events[i].plans.get() {
            Some(p) => Ok(p),
            None => self.compile_event(meta, i),
        }
    }

    #[cold]
    fn compile_event(&self, meta: &Metadata, i: usize) -> Result<&EventPlans, String> {
        let slot = &self.events[i];
        let sc = &meta.streams[self.class];
        let ec = &sc.events[slot.class];
        let roots = ScopeRoots {
            packet_header: meta.packet_header.as_ref(),
            packet_context: sc.packet_context.as_ref(),
            event_header: sc.event_header.as_ref(),
            event_common_context: sc.event_context.as_ref(),
            event_specific_context: ec.context.as_ref(),
            event_payload: ec.payload.as_ref(),
            ctf2: meta.major == 2,
        };
        let context = compile(Scope::EventSpecificContext, &roots, &self.refs).map_err(|e| e.0)?;
        let payload = compile(Scope::EventPayload, &roots, &self.refs).map_err(|e| e.0)?;
        let skim = crate::prog::Skim::of(&[&context, &payload]);
        let quick = crate::prog::QuickSkim::of(skim.as_ref());
        // (another thread may have compiled it meanwhile: the same plans)
        let _ = slot.plans.set(EventPlans {
            class: slot.class,
            context,
            payload,
            skim,
            quick,
        });
        Ok(self.event(i))
    }

    /// Index into `events` of the event class with id `id`.
    #[inline]
    pub fn event_by_id(&self, id: u64) -> Option<usize> {
        match self.event_dense.get(id as usize) {
            Some(&i) if i != crate::plan::NONE => Some(i as usize),
            Some(_) => None,
            None if id < 4096 => None,
            None => self.event_index.get(&id).copied(),
        }
    }
}

impl TraceClass {
    /// The trace class of `meta`, every event class's plans compiled (a
    /// plan that cannot be compiled is an error now).
    pub fn new(meta: Metadata) -> Result<TraceClass, String> {
        let class = TraceClass::build(meta)?;
        for s in 0..class.streams.len() {
            for e in 0..class.streams[s].events.len() {
                class.event_plans(s, e)?;
            }
        }
        Ok(class)
    }

    /// The trace class of `meta`, its event classes' plans compiled when
    /// first needed ([`TraceClass::event_plans`]): a kernel trace declares
    /// hundreds of classes (541, 1,400) of which a trace uses a few, and a
    /// program that reads it once need not compile the others. A class
    /// whose plans cannot be compiled is reported where its first event
    /// is decoded.
    pub fn new_lazy(meta: Metadata) -> Result<TraceClass, String> {
        TraceClass::build(meta)
    }

    /// The plans of event class `event` (index into its stream class's
    /// `events`) of stream class `stream`, compiled on first use.
    pub fn event_plans(&self, stream: usize, event: usize) -> Result<&EventPlans, String> {
        self.streams[stream].compiled(&self.meta, event)
    }

    fn build(mut meta: Metadata) -> Result<TraceClass, String> {
        auto_map_clocks(&mut meta)?;
        let ph_roots = ScopeRoots {
            packet_header: meta.packet_header.as_ref(),
            packet_context: None,
            event_header: None,
            event_common_context: None,
            event_specific_context: None,
            event_payload: None,
            ctf2: meta.major == 2,
        };
        let mut ph_refs = Vec::new();
        if let Some(fc) = &meta.packet_header {
            collect_refs(fc, &mut ph_refs);
        }
        let packet_header = compile(Scope::PacketHeader, &ph_roots, &ph_refs).map_err(|e| e.0)?;
        // (sized once: an LTTng kernel trace has over a thousand event
        // classes, whose plans a growing vector would copy again and again)
        let mut streams = Vec::with_capacity(meta.streams.len());
        for (si, sc) in meta.streams.iter().enumerate() {
            let mut refs = ph_refs.clone();
            for fc in [&sc.packet_context, &sc.event_header, &sc.event_context]
                .into_iter()
                .flatten()
            {
                collect_refs(fc, &mut refs);
            }
            for ec in &sc.events {
                for fc in [&ec.context, &ec.payload].into_iter().flatten() {
                    collect_refs(fc, &mut refs);
                }
            }
            let roots = ScopeRoots {
                packet_header: meta.packet_header.as_ref(),
                packet_context: sc.packet_context.as_ref(),
                event_header: sc.event_header.as_ref(),
                event_common_context: sc.event_context.as_ref(),
                event_specific_context: None,
                event_payload: None,
                ctf2: meta.major == 2,
            };
            let c = |s| compile(s, &roots, &refs).map_err(|e| e.0);
            let (ph, pc, eh, ecc) = (
                c(Scope::PacketHeader)?,
                c(Scope::PacketContext)?,
                c(Scope::EventHeader)?,
                c(Scope::EventCommonContext)?,
            );
            let mut events = Vec::with_capacity(sc.events.len());
            let mut event_index = HashMap::with_capacity(sc.events.len());
            for (ei, ec) in sc.events.iter().enumerate() {
                event_index.insert(ec.id, events.len());
                events.push(EventSlot {
                    class: ei,
                    plans: std::sync::OnceLock::new(),
                });
            }
            let dense_len = event_index
                .keys()
                .filter(|&&id| id < 4096)
                .map(|&id| id as usize + 1)
                .max()
                .unwrap_or(0);
            let mut event_dense = vec![crate::plan::NONE; dense_len];
            for (&id, &i) in &event_index {
                if id < 4096 {
                    event_dense[id as usize] = i as u32;
                }
            }
            let clock =
                first_clock_of(sc).and_then(|name| meta.clocks.iter().position(|c| c.name == name));
            streams.push(StreamPlans {
                class: si,
                refs,
                packet_header: ph,
                packet_context: pc,
                event_header: eh,
                event_common_context: ecc,
                events,
                event_index,
                event_dense,
                clock,
            });
        }
        Ok(TraceClass {
            packet_header,
            packet_header_slots: ph_refs.len(),
            meta,
            streams,
            damage: None,
        })
    }

    /// The stream plans for stream class id `id`.
    pub fn stream_by_id(&self, id: u64) -> Option<usize> {
        self.streams
            .iter()
            .position(|s| self.meta.streams[s.class].id == id)
    }
}

/// babeltrace2 maps an unmapped event header `timestamp` or packet context
/// `timestamp_begin`/`timestamp_end` integer to the trace's only clock, or
/// to an implicit 1 GHz clock when there is none.
fn auto_map_clocks(meta: &mut Metadata) -> Result<(), String> {
    if meta.major == 2 {
        // CTF 2: roles and default clock classes say it all.
        return Ok(());
    }
    let needs = |sc: &StreamClass| {
        let named = |fc: &Option<FieldClass>, names: &[&str]| {
            fc.as_ref().is_some_and(|f| has_unmapped_int(f, names))
        };
        first_clock_of(sc).is_none()
            && (named(&sc.event_header, &["timestamp"])
                || named(&sc.packet_context, &["timestamp_begin", "timestamp_end"]))
    };
    if !meta.streams.iter().any(needs) {
        return Ok(());
    }
    let name = match meta.clocks.len() {
        0 => {
            meta.clocks.push(ClockClass {
                name: "default".into(),
                ..Default::default()
            });
            "default".to_string()
        }
        1 => meta.clocks[0].name.clone(),
        _ => {
            return Err(
                "a timestamp field is mapped to no clock and the trace has several clocks".into(),
            )
        }
    };
    for sc in &mut meta.streams {
        if !needs(sc) {
            continue;
        }
        for fc in [&mut sc.event_header, &mut sc.packet_context]
            .into_iter()
            .flatten()
        {
            map_named(
                fc,
                &name,
                &["timestamp", "timestamp_begin", "timestamp_end"],
            );
        }
    }
    Ok(())
}

fn first_clock_of(sc: &StreamClass) -> Option<&str> {
    if let Some(c) = &sc.default_clock {
        return Some(c);
    }
    [&sc.event_header, &sc.packet_context]
        .into_iter()
        .flatten()
        .find_map(first_clock)
}

fn int_of(fc: &FieldClass) -> Option<&IntegerClass> {
    match fc {
        FieldClass::Integer(i) => Some(i),
        FieldClass::Enum(e) => Some(&e.container),
        _ => None,
    }
}

fn has_unmapped_int(fc: &FieldClass, names: &[&str]) -> bool {
    match fc {
        FieldClass::Struct(s) => s.members.iter().any(|m| {
            let n = m.name.strip_prefix('_').unwrap_or(&m.name);
            (names.contains(&n) && int_of(&m.class).is_some_and(|i| i.mapped_clock.is_none()))
                || has_unmapped_int(&m.class, names)
        }),
        FieldClass::Variant(v) => v.options.iter().any(|o| has_unmapped_int(&o.class, names)),
        _ => false,
    }
}

fn map_named(fc: &mut FieldClass, clock: &str, names: &[&str]) {
    match fc {
        FieldClass::Struct(s) => {
            for m in &mut s.members {
                let n = m.name.strip_prefix('_').unwrap_or(&m.name).to_string();
                match &mut m.class {
                    FieldClass::Integer(i) if names.contains(&n.as_str()) => {
                        i.mapped_clock.get_or_insert_with(|| clock.to_string());
                    }
                    other => map_named(other, clock, names),
                }
            }
        }
        FieldClass::Variant(v) => v
            .options
            .iter_mut()
            .for_each(|o| map_named(&mut o.class, clock, names)),
        _ => {}
    }
}

fn first_clock(fc: &FieldClass) -> Option<&str> {
    match fc {
        FieldClass::Integer(i) => i.mapped_clock.as_deref(),
        FieldClass::Enum(e) => e.container.mapped_clock.as_deref(),
        FieldClass::Struct(s) => s.members.iter().find_map(|m| first_clock(&m.class)),
        FieldClass::Variant(v) => v.options.iter().find_map(|o| first_clock(&o.class)),
        _ => None,
    }
}

/// A memory-mapped stream file.
#[derive(Debug)]
pub struct StreamFile {
    pub path: PathBuf,
    /// The mapping's registration with the `SIGBUS` handler (dropped
    /// before the mapping: fields drop in order).
    guard: crate::guard::Guard,
    pub map: Mmap,
    /// The file's length, modification time and inode when it was mapped
    /// ([`StreamFile::changed`]).
    stamp: Option<(u64, std::time::SystemTime, u64)>,
    /// Where each packet begins and when it ends (clock cycles;
    /// `u64::MAX` when its context has no end time), learnt when the trace
    /// is opened: seeking to a time is a binary search.
    /// The cut packet's end time there is the time of its last complete
    /// event (see [`FileCut`]).
    pub packets: std::sync::OnceLock<Box<[(u64, u64)]>>,
    /// Where the file ends inside a packet, learnt when the trace is
    /// opened: its packets are read up to there.
    pub cut: std::sync::OnceLock<FileCut>,
}

/// A stream file whose last packet is cut: a trace copied while it was
/// being recorded, a disk that filled, a crash. The packets before the cut
/// are read as usual; of the cut packet, the events that lie wholly
/// before the cut (its header and context must be whole). Where such a
/// stream ends: after the last complete event, whose time is the stream's
/// end time (the packet's `timestamp_end` speaks of events that are not
/// there).
#[derive(Debug, Clone)]
pub struct FileCut {
    /// Byte offset of the cut packet.
    pub packet: u64,
    /// Bit of the file where its last complete event ends (where its
    /// events begin when none is complete); `None` when the file ends
    /// inside its header or context: nothing of it is read.
    pub events_end: Option<u64>,
    /// What is missing and what is ignored, for readers to report.
    pub damage: crate::Damage,
}

impl StreamFile {
    pub fn new(path: PathBuf, map: Mmap) -> StreamFile {
        let stamp = file_stamp(&path);
        StreamFile {
            path,
            guard: crate::guard::Guard::of(&map),
            map,
            stamp,
            packets: std::sync::OnceLock::new(),
            cut: std::sync::OnceLock::new(),
        }
    }

    pub fn data(&self) -> &[u8] {
        &self.map
    }

    /// An error when a read of the mapping found the file shorter than it
    /// was mapped (the bytes from there read as zeros: see
    /// [`crate::guard`]); `at`: the offset the reader was at.
    pub fn check_intact(&self, at: u64) -> Result<(), Error> {
        if !self.guard.faulted() {
            return Ok(());
        }
        let now = match std::fs::metadata(&self.path) {
            Ok(m) => format!("{} bytes", m.len()),
            Err(e) => format!("unreadable ({e})"),
        };
        Err(Error::Stream {
            path: self.path.clone(),
            offset: at,
            msg: format!(
                "the file was truncated while being read: it was {} bytes when opened, it is now {now}",
                self.map.len()
            ),
        })
    }

    /// Whether the file was truncated under its mapping ([`crate::guard`]).
    pub fn faulted(&self) -> bool {
        self.guard.faulted()
    }

    /// An error when the file is no longer the one mapped: truncated (see
    /// [`StreamFile::check_intact`]), or its length, modification time or
    /// inode changed since (written over, replaced). One `stat` call:
    /// for readers finishing a file or answering a request, not per event.
    pub fn changed(&self) -> Result<(), Error> {
        self.check_intact(0)?;
        let Some(was) = self.stamp else { return Ok(()) };
        match file_stamp(&self.path) {
            Some(now) if now == was => Ok(()),
            // Grown: a trace read while it is recorded.
            Some((len, _, ino)) if len > was.0 && ino == was.2 => Ok(()),
            now => Err(Error::Stream {
                path: self.path.clone(),
                offset: 0,
                msg: match now {
                    None => "the file was removed while being read".into(),
                    Some((len, _, ino)) if ino != was.2 => format!(
                        "the file was replaced while being read (now {len} bytes): events read from it may mix both files"
                    ),
                    Some((len, ..)) => format!(
                        "the file was written to while being read (it was {} bytes, it is {len}): events read from it may have changed",
                        was.0
                    ),
                },
            }),
        }
    }

    /// Where the packets that can be read end, in bytes: the file's
    /// length, or the start of a packet the file ends inside the header
    /// or context of.
    pub fn end(&self) -> u64 {
        match self.cut.get() {
            Some(FileCut {
                packet,
                events_end: None,
                ..
            }) => *packet,
            _ => self.map.len() as u64,
        }
    }

    /// Drops the whole pages of `start..end` (bytes) from this process's
    /// resident memory. The mapping is read-only and file-backed, so the
    /// data stays valid: touching it again reads it back from the page
    /// cache. This is what keeps reef's memory bounded by the number of
    /// streams rather than the size of the trace.
    ///
    /// The range is extended 64 KiB backwards: the kernel maps the cached
    /// pages around a faulting one ("fault-around", 64 KiB windows), so
    /// touching a packet that does not start on a page boundary maps pages
    /// of the previous, already released packet again.
    pub fn release(&self, start: usize, end: usize) {
        self.release_pages(start, end, false)
    }

    /// Maps the pages of `start..end` (bytes) in one call, ahead of
    /// reading them (those the page cache does not hold are read into it):
    /// faulting them in one by one (the kernel maps 64 KiB around each
    /// fault) costs more. Linux 5.14 and later (`MADV_POPULATE_READ`);
    /// elsewhere, and on an error (a page that cannot be read faults when
    /// it is touched, as it would have), nothing.
    pub fn populate(&self, start: usize, end: usize) {
        let end = end.min(self.map.len());
        if end > start {
            #[cfg(target_os = "linux")]
            let _ = self
                .map
                .advise_range(memmap2::Advice::PopulateRead, start, end - start);
        }
    }

    /// [`StreamFile::release`], extended forwards too (by the fault-around
    /// window, to the end of the last page): for a reader that stops, and
    /// whose faults may have mapped pages past what it read.
    pub fn release_all(&self, start: usize, end: usize) {
        self.release_pages(start, end, true)
    }

    fn release_pages(&self, start: usize, end: usize, forward: bool) {
        const PAGE: usize = 4096;
        const FAULT_AROUND: usize = 64 << 10;
        let start = (start.saturating_sub(FAULT_AROUND) / PAGE) * PAGE;
        let len = self.map.len();
        let end = match forward {
            true => end
                .saturating_add(FAULT_AROUND)
                .div_ceil(PAGE)
                .saturating_mul(PAGE)
                .min(len),
            false => (end.min(len) / PAGE) * PAGE,
        };
        if end > start {
            // SAFETY: MADV_DONTNEED on a read-only file mapping only drops
            // pages, which are re-read from the file on the next access; no
            // reference into the mapping becomes invalid.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}

/// A file's length, modification time and inode.
fn file_stamp(path: &Path) -> Option<(u64, std::time::SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?, m.ino()))
}

/// One data stream: one or more files (LTTng's tracefile rotation splits a
/// stream over several files) of one stream class.
#[derive(Debug)]
pub struct StreamSource {
    /// Index into `TraceClass::streams`.
    pub stream: usize,
    pub instance_id: Option<u64>,
    /// Files in reading order.
    pub files: Vec<Arc<StreamFile>>,
}

/// An opened trace: metadata compiled, stream files mapped and grouped.
#[derive(Debug)]
pub struct Trace {
    /// The (first) trace directory.
    pub path: PathBuf,
    /// Every directory whose streams make up this trace: several when
    /// directories sharing a trace UUID were merged (LTTng session rotation
    /// chunks), as babeltrace2 does.
    pub dirs: Vec<PathBuf>,
    pub class: TraceClass,
    pub sources: Vec<StreamSource>,
    /// A capture file that ends inside a record: its streams hold the
    /// records before the cut, and readers report the cut (an error) once
    /// they have read everything else.
    pub cut: Option<crate::capture::Cut>,
    /// Stream files cut inside a packet ([`StreamFile::cut`]; a file cut
    /// inside its first packet's header is not among the sources) and a
    /// metadata file cut inside a declaration ([`TraceClass::damage`]):
    /// readers deliver what lies before and report these at the end
    /// ([`Error::with_damage`]).
    pub damage: Vec<crate::Damage>,
}

impl TraceClass {
    /// Reads, parses and compiles the metadata of the trace in `dir`.
    pub fn load(dir: &Path) -> Result<TraceClass, Error> {
        TraceClass::load_with(dir, false)
    }

    /// [`TraceClass::load`], the event classes' plans compiled when first
    /// needed ([`TraceClass::new_lazy`]).
    pub fn load_lazy(dir: &Path) -> Result<TraceClass, Error> {
        TraceClass::load_with(dir, true)
    }

    fn load_with(dir: &Path, lazy: bool) -> Result<TraceClass, Error> {
        if crate::capture::is_capture(dir) {
            return crate::capture::load_class(dir); // a live capture file
        }
        if crate::source::is_source(dir) {
            return crate::source::load_class(dir); // another format
        }
        let mpath = dir.join("metadata");
        let f = std::fs::File::open(&mpath).map_err(|e| Error::io(&mpath, e))?;
        // Mapped rather than read: the kernel maps the page cache's pages
        // in, many at a fault, where a read copies the file into as many
        // fresh heap pages, each a fault (a kernel trace's metadata is
        // 350-450 KB). Read when it cannot be mapped (a pipe).
        // SAFETY: mapped read-only; the metadata file being truncated while
        // it is parsed is the one hazard, as for the stream files: the
        // guard turns the fault into zeros and an error (crate::guard).
        let (map, read);
        let mut guard = None;
        let bytes: &[u8] = match unsafe { Mmap::map(&f) } {
            Ok(m) => {
                map = m;
                guard = Some(crate::guard::Guard::of(&map));
                &map
            }
            Err(_) => {
                read = std::fs::read(&mpath).map_err(|e| Error::io(&mpath, e))?;
                &read
            }
        };
        let merr = |e| Error::Metadata {
            path: mpath.clone(),
            err: e,
        };
        let parsed = read_metadata_cut(bytes);
        if guard.as_ref().is_some_and(|g| g.faulted()) {
            return Err(Error::Stream {
                path: mpath.clone(),
                offset: 0,
                msg: "the metadata file was truncated while being read".into(),
            });
        }
        let (meta, cut) = parsed.map_err(merr)?;
        let build = if lazy {
            TraceClass::new_lazy
        } else {
            TraceClass::new
        };
        let mut class = build(meta).map_err(|msg| Error::Stream {
            path: mpath.clone(),
            offset: 0,
            msg,
        })?;
        class.damage = cut.map(|c| crate::Damage {
            path: mpath.clone(),
            offset: c.offset,
            msg: c.msg,
        });
        Ok(class)
    }
}

/// What the packets of a stream file say about it.
#[derive(Debug, Clone, Copy)]
pub struct FileScan {
    /// Index into `TraceClass::streams`.
    pub stream: usize,
    pub instance_id: Option<u64>,
    /// The first packet's beginning time.
    pub ts_begin: Option<u64>,
}

impl Trace {
    /// Opens the trace in directory `dir` (which holds a `metadata` file).
    pub fn open(dir: &Path) -> Result<Trace, Error> {
        Trace::from_class(TraceClass::load(dir)?, &[dir.to_path_buf()])
    }

    /// Builds a trace from compiled metadata and the stream files of `dirs`.
    ///
    /// Like babeltrace2, every packet header and context of every file is
    /// read and validated here, before any event: a trace whose packet
    /// framing is broken fails to open rather than failing half-way.
    pub fn from_class(class: TraceClass, dirs: &[PathBuf]) -> Result<Trace, Error> {
        // A failure of a trace whose metadata is cut names the cut too:
        // it may be why (a stream class missing).
        let (scanned, cut, damage) =
            scan_dirs(&class, dirs).map_err(|e| e.and_damage(&class.damage))?;
        // Files of one stream class and instance id form one stream.
        let mut sources: Vec<StreamSource> = Vec::new();
        let mut firsts: Vec<Vec<Option<u64>>> = Vec::new();
        let mut keyed: HashMap<(usize, u64), usize> = HashMap::new();
        for (sf, scan) in scanned {
            let existing = scan
                .instance_id
                .and_then(|iid| keyed.get(&(scan.stream, iid)).copied());
            match existing {
                Some(g) => {
                    sources[g].files.push(sf);
                    firsts[g].push(scan.ts_begin);
                }
                None => {
                    if let Some(iid) = scan.instance_id {
                        keyed.insert((scan.stream, iid), sources.len());
                    }
                    sources.push(StreamSource {
                        stream: scan.stream,
                        instance_id: scan.instance_id,
                        files: vec![sf],
                    });
                    firsts.push(vec![scan.ts_begin]);
                }
            }
        }
        // A stream's files are read in the order of their first packet's
        // beginning time (stable: ties keep path order).
        for (s, f) in sources.iter_mut().zip(firsts) {
            if s.files.len() > 1 {
                let mut order: Vec<(Option<u64>, Arc<StreamFile>)> =
                    f.into_iter().zip(s.files.drain(..)).collect();
                order.sort_by_key(|k| k.0);
                s.files = order.into_iter().map(|k| k.1).collect();
            }
        }
        Ok(Trace {
            path: dirs.first().cloned().unwrap_or_default(),
            dirs: dirs.to_vec(),
            class,
            sources,
            cut,
            damage,
        })
    }

    pub fn meta(&self) -> &Metadata {
        &self.class.meta
    }

    /// babeltrace2's stream id for a stream without `stream_instance_id`:
    /// its rank among the trace's streams (sources are in file path order).
    pub fn stream_ordinal(&self, source: usize) -> usize {
        source
    }
}

/// The stream files of `dirs` (trace directories or capture files), each
/// scanned ([`scan_file`]), with a capture's cut and the damage found.
#[allow(clippy::type_complexity)]
fn scan_dirs(
    class: &TraceClass,
    dirs: &[PathBuf],
) -> Result<
    (
        Vec<(Arc<StreamFile>, FileScan)>,
        Option<crate::capture::Cut>,
        Vec<crate::Damage>,
    ),
    Error,
> {
    let mut scanned: Vec<(Arc<StreamFile>, FileScan)> = Vec::new();
    let mut cut = None;
    let mut damage: Vec<crate::Damage> = class.damage.iter().cloned().collect();
    for dir in dirs {
        let capture = crate::capture::is_capture(dir);
        if capture || crate::source::is_source(dir) {
            // A live capture file or a file of another format: its
            // streams, unpacked or converted.
            let (files, c) = if capture {
                crate::capture::stream_files(dir)?
            } else {
                crate::source::stream_files(dir)?
            };
            cut = cut.or(c);
            for sf in files {
                let sf = Arc::new(sf);
                if let Some(scan) = scan_file(class, &sf, None)? {
                    scanned.push((sf, scan));
                }
            }
            continue;
        }
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok())
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n != "metadata"
                    && !n.starts_with('.')
                    && std::fs::metadata(e.path()).is_ok_and(|m| m.is_file())
            })
            .map(|e| e.path())
            .collect();
        names.sort();
        for p in names {
            let f = File::open(&p).map_err(|e| Error::io(&p, e))?;
            let len = f.metadata().map_err(|e| Error::io(&p, e))?.len();
            if len == 0 {
                continue;
            }
            // SAFETY: the file is mapped read-only; a trace file being
            // truncated while it is read is the one hazard, which
            // StreamFile's guard turns into an error (crate::guard).
            let map = unsafe { Mmap::map(&f) }.map_err(|e| Error::io(&p, e))?;
            let _ = map.advise(memmap2::Advice::Sequential);
            let sf = Arc::new(StreamFile::new(p, map));
            let scan = scan_file(class, &sf, Some(&f))?;
            sf.release(0, sf.data().len());
            if let Some(c) = sf.cut.get() {
                damage.push(c.damage.clone());
            }
            if let Some(scan) = scan {
                scanned.push((sf, scan));
            }
        }
    }
    Ok((scanned, cut, damage))
}

/// Validates a file's packet framing and learns its stream.
/// Reads every packet header and context of `sf`. With `file`, each is
/// first read from the file into a small buffer, so that the scan maps no
/// page of the stream (the kernel would map 64 KiB around each header, to
/// be dropped and mapped again when the events are read); the mapping is
/// used when the buffer does not hold the header and context, and for any
/// error (which then names the file's offsets).
///
/// A file that ends inside a packet is cut there ([`StreamFile::cut`]):
/// `None` when that leaves no packet to read.
fn scan_file(
    class: &TraceClass,
    sf: &StreamFile,
    file: Option<&File>,
) -> Result<Option<FileScan>, Error> {
    scan_from(class, sf, file, None, true)
}

/// Reads the packet headers and contexts of `sf`, a stream file that grew
/// (a trace received live): only the packets after those of `earlier` (the
/// same file mapped when it was shorter, with what was learnt then) are
/// read; fills `sf.packets`. A packet the file ends inside is an error
/// (the caller maps whole packets).
pub fn scan_grown(
    class: &TraceClass,
    sf: &StreamFile,
    earlier: Option<(&StreamFile, FileScan)>,
) -> Result<FileScan, Error> {
    scan_from(class, sf, None, earlier, false)?.ok_or_else(|| no_packet(sf))
}

fn no_packet(sf: &StreamFile) -> Error {
    Error::Stream {
        path: sf.path.clone(),
        offset: 0,
        msg: "stream file holds no packet".into(),
    }
}

fn scan_from(
    class: &TraceClass,
    sf: &StreamFile,
    file: Option<&File>,
    earlier: Option<(&StreamFile, FileScan)>,
    cut_ok: bool,
) -> Result<Option<FileScan>, Error> {
    use std::os::unix::fs::FileExt;
    const HEAD: u64 = 4096;
    let mut buf = vec![0u8; HEAD as usize];
    let slots = class
        .streams
        .iter()
        .map(|s| s.refs.len())
        .max()
        .unwrap_or(0);
    let mut st = State::new(slots);
    let mut ph = State::new(class.packet_header_slots);
    let (mut scratch, mut ctx) = (Vec::new(), Vec::new());
    let mut off = 0u64;
    let mut first: Option<FileScan> = None;
    let mut packets: Vec<(u64, u64)> = Vec::new();
    if let Some((e, scan)) = earlier {
        if let Some(p) = e.packets.get() {
            packets.extend_from_slice(p);
            off = e.data().len() as u64;
            first = Some(scan);
        }
    }
    let mut released = off;
    let len = sf.data().len() as u64;
    while off < len {
        let mut ps = PacketScratch {
            st: &mut st,
            ph_state: &mut ph,
            scratch: &mut scratch,
            context: &mut ctx,
        };
        let n = (len - off).min(HEAD) as usize;
        let read = file
            .filter(|f| f.read_exact_at(&mut buf[..n], off).is_ok())
            .and_then(|_| {
                crate::stream::read_packet_in(
                    class,
                    &buf[..n],
                    off,
                    len,
                    &sf.path,
                    off,
                    &mut ps,
                    cut_ok,
                )
                .ok()
            });
        let (stream, info, events_at) = match read {
            Some(r) => r,
            None => {
                let data = sf.data();
                match crate::stream::read_packet_in(
                    class, data, 0, len, &sf.path, off, &mut ps, cut_ok,
                ) {
                    Ok(r) => r,
                    Err(e) if cut_ok && crate::stream::is_cut_error(&e) => {
                        // The file ends inside this packet's header or
                        // context: nothing of it can be read.
                        let present = len - off;
                        let _ = sf.cut.set(FileCut {
                            packet: off,
                            events_end: None,
                            damage: crate::Damage {
                                path: sf.path.clone(),
                                offset: off,
                                msg: format!(
                                    "the file ends inside this packet's header or context \
                                     ({} at the end of the file): ignored its {present} bytes",
                                    cut_reason(&e)
                                ),
                            },
                        });
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        match &first {
            None => {
                first = Some(FileScan {
                    stream,
                    instance_id: info.stream_instance_id,
                    ts_begin: info.ts_begin,
                })
            }
            Some(f) if f.stream != stream => {
                return Err(Error::Stream {
                    path: sf.path.clone(),
                    offset: off,
                    msg: "packet belongs to another stream class than the file's first packet"
                        .into(),
                })
            }
            Some(_) => {}
        }
        if info.packet_bits > (len - off) * 8 {
            // The file ends inside this packet (only with `cut_ok`).
            let (end, c) = cut_packet(class, stream, sf, &info, events_at, &mut st);
            packets.push((off, end));
            let _ = sf.cut.set(c);
            break;
        }
        // An end before the beginning is no end time: LTTng's crash
        // buffers (`lttng-crash`) hold packets never closed, whose
        // `timestamp_end` is 0; seeking must not take them as over.
        let end = info
            .ts_end
            .filter(|&e| info.ts_begin.is_none_or(|b| e >= b))
            .unwrap_or(u64::MAX);
        packets.push((off, end));
        let next = off + info.packet_bits / 8;
        // Released in batches, as a cursor does (each release interrupts
        // the process's other threads).
        if (next - released) as usize >= crate::stream::RELEASE_CHUNK {
            sf.release(released as usize, next as usize);
            released = next;
        }
        off = next;
    }
    let _ = sf.packets.set(packets.into_boxed_slice());
    match (first, sf.cut.get()) {
        (Some(f), _) => Ok(Some(f)),
        (None, Some(_)) => Ok(None),
        (None, None) => Err(no_packet(sf)),
    }
}

/// What a cut decoding error says was missing, without its offset.
fn cut_reason(e: &Error) -> String {
    use crate::decode::DecodeErrorKind as K;
    match e {
        Error::Decode { err, .. } => match &err.kind {
            K::Truncated { needed, available } => {
                format!("a field of {needed} bits, {available} left")
            }
            K::UnterminatedString => "a string without its terminating NUL".into(),
            K::LengthTooLarge { len, available } => {
                format!("an array or sequence of {len} elements, {available} bits left")
            }
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// The packet at `info.offset` of `sf`, larger than what is left of the
/// file: its events wholly before the end of the file, and what to report.
/// Returns the packet's end time for the seek table (the time of its last
/// complete event; its beginning when it has none) and the cut.
fn cut_packet(
    class: &TraceClass,
    stream: usize,
    sf: &StreamFile,
    info: &PacketInfo,
    events_at: u64,
    st: &mut State,
) -> (u64, FileCut) {
    let len = sf.data().len() as u64;
    let off = info.offset;
    let content_end = off * 8 + info.content_bits;
    let end = content_end.min(len * 8);
    let done = crate::stream::complete_events(class, stream, sf, info, events_at, end, st);
    let (present, declared) = (len - off, info.packet_bits / 8);
    let head = format!(
        "the file ends inside this packet: {present} of its {declared} bytes are present, {} missing",
        declared - present
    );
    let (events_end, msg) = match &done.stop {
        Some(e) if crate::stream::is_cut_error(e) => (
            done.end,
            format!(
                "{head}; read up to its last complete event ({} events of this packet, up to byte {}); \
                 ignored the {} bytes after it, an incomplete event ({} at the end of the file)",
                done.count,
                done.end.div_ceil(8),
                (len * 8 - done.end) / 8,
                cut_reason(e)
            ),
        ),
        // Bytes that are wrong in themselves: the cursor meets the same
        // error, which stops the reading as in any malformed packet.
        Some(_) => (end, head),
        None if end < content_end => (
            end,
            format!(
                "{head}; read its {} events, the last one ending at the end of the file; the events after it are missing",
                done.count
            ),
        ),
        None => (
            end,
            format!("{head}; only its padding is missing: all its {} events were read", done.count),
        ),
    };
    let table_end = done
        .last_ts
        .or(info.ts_begin)
        .or(info.ts_end)
        .unwrap_or(u64::MAX);
    (
        table_end,
        FileCut {
            packet: off,
            events_end: Some(events_end),
            damage: crate::Damage {
                path: sf.path.clone(),
                offset: off,
                msg,
            },
        },
    )
}

/// The stream class (index into `class.streams`) a packet belongs to, from
/// its decoded packet header.
pub fn stream_of_packet(class: &TraceClass, st: &State) -> Result<usize, String> {
    match st.meaning(Meaning::StreamId) {
        Some(id) => class.stream_by_id(id).ok_or_else(|| {
            format!("packet header names stream class {id}, which the metadata does not declare")
        }),
        None => {
            if class.streams.len() == 1 {
                Ok(0)
            } else if class.streams.is_empty() {
                Err("the metadata declares no stream class".into())
            } else {
                Err("packet header has no stream_id but the metadata declares several stream classes".into())
            }
        }
    }
}
