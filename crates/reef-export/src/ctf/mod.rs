//! `reef convert --to ctf`: the traces read, cut to the window and the
//! filter, written as CTF traces again.
//!
//! Each input trace becomes one output trace (the same relative layout
//! under the output directory), its metadata copied as it is (or, for
//! [`Options::ctf_version`] other than the input's, written again in the
//! other version by `reef_ctf::metadata::write`: the stream files are the
//! same in both), each of its stream files written packet by packet:
//!
//! - a packet none of whose events the window or the filter drops is
//!   copied byte for byte (runs of such packets as one in-kernel copy,
//!   `copy_file_range` through `std::io::copy`), its `packet_seq_num`
//!   patched when packets before it were dropped or split;
//! - a packet they cut into is written again: its header and context laid
//!   out anew with `timestamp_begin`/`_end`, `content_size`,
//!   `packet_size` and `packet_seq_num` set, then each kept event, whose
//!   bytes are copied as they are when the event moves by a multiple of
//!   the stream's largest alignment (its padding stays right), or laid out
//!   again field by field otherwise ([`layout`]: each leaf's bits copied
//!   to the new position, the padding recomputed). Every event written
//!   this way is decoded back from the new packet and compared with the
//!   original (class, values, time): an event whose time the clock can no
//!   longer reconstruct at its new place (a compact timestamp after a gap
//!   longer than its bits can express) starts a new packet whose
//!   `timestamp_begin` is its own time;
//! - packets wholly before the window are left out, and the stream ends
//!   at the first event after it;
//! - an LTTng index (`index/<file>.idx`, version 1.1) is written for each
//!   stream file whose packets have beginning and end times.
//!
//! A packet is copied only once its events were decoded (and, CTF 1.8,
//! found never to go back in time, as babeltrace2's muxer requires); a
//! reading error (a damaged packet, time going back) stops its stream: the
//! packet being written is closed after the last event before the error, the file and
//! its index are completed, and the error is returned with the inputs'
//! damage once every stream was written. Streams are written one after
//! the other: memory is one packet.

mod bits;
pub mod layout;

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reef_ctf::bits::align_up;
use reef_ctf::decode::{Cursor, State};
use reef_ctf::plan::Meaning;
use reef_ctf::stream::{decode_event_at, read_packet, read_packet_bytes, PacketScratch};
use reef_ctf::trace::StreamFile;
use reef_ctf::{PacketInfo, Place, StreamCursor, Trace, Value};
use reef_filter::EventFilter;
use reef_iter::ClockConv;
use reef_read::Source;

use self::bits::Bits;
use self::layout::{max_align, walk_scope, Visit};
use crate::Error;

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The CTF major version to write (1: CTF 1.8, 2: CTF 2); `None`: the
    /// input's.
    pub ctf_version: Option<u32>,
    /// A script's verdicts per stream (`reef_read::script::per_stream`),
    /// taken after the window and `filter`.
    pub verdicts: Option<Vec<reef_read::script::StreamBits>>,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub traces: usize,
    pub files: usize,
    /// Packets copied byte for byte.
    pub packets_copied: u64,
    /// Packets written again (cut by the window or the filter).
    pub packets_written: u64,
    /// Events in the packets written again.
    pub events_written: u64,
    /// Of those, events laid out anew field by field (moved by other
    /// than a multiple of their largest alignment).
    pub events_relaid: u64,
    /// Packets split because the clock could not reach an event from the
    /// one before it once the events between were left out.
    pub splits: u64,
    /// Bytes of stream data written.
    pub bytes: u64,
}

/// A reading or re-encoding error that stops one stream (the others are
/// still written), or an I/O error that stops everything.
enum Stop {
    Read(reef_read::Error),
    Io(Error),
}

impl From<reef_ctf::Error> for Stop {
    fn from(e: reef_ctf::Error) -> Stop {
        Stop::Read(reef_read::Error::Trace(e))
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Stop + '_ {
    move |e| Stop::Io(Error::io(path, e))
}

/// Writes the traces of `src` (its window; `filter`, the events to keep)
/// as CTF traces under `out`. `inputs` are the paths the traces were
/// found under: each trace goes to its path relative to its input (to
/// `out` itself when there is one input and it is the trace). Returns what
/// was written and the error that stopped a stream, if any (with the
/// inputs' damage): what was written before it stands, and is a valid
/// trace.
pub fn write(
    src: Source,
    filter: Option<EventFilter>,
    inputs: &[PathBuf],
    out: &Path,
    opts: &Options,
) -> Result<(Summary, Option<reef_read::Error>), Error> {
    let traces: Vec<Arc<Trace>> = src.traces.clone();
    for t in &traces {
        // A trace-cmd file's trace is written as a directory; a capture
        // file is refused (`reef listen -o` writes it as one).
        let file_trace =
            |d: &PathBuf| !d.join("metadata").is_file() && !reef_ctf::source::is_source(d);
        if t.cut.is_some() || t.dirs.iter().any(file_trace) {
            return Err(Error::Usage(format!(
                "{}: not a trace directory (a capture file?): `reef listen -o DIR` writes a CTF trace",
                t.path.display()
            )));
        }
    }
    // The metadata each trace's directories get: `None`, its own copied
    // as it is; else the model written in the other version.
    let mut translated: HashMap<PathBuf, Arc<Vec<u8>>> = HashMap::new();
    for t in &traces {
        let major = t.meta().major.max(1);
        let want = opts.ctf_version.unwrap_or(major);
        // A metadata cut inside a declaration (read with the declarations
        // before the cut) is written again from what was read: a copy
        // would be the damaged file (which babeltrace2 refuses, or
        // hangs on); the damage is still reported.
        let dat = t.dirs.iter().any(|d| reef_ctf::source::is_source(d));
        if want == major && t.class.damage.is_none() && !dat {
            continue;
        }
        let text = match want {
            1 => reef_ctf::metadata::write::to_tsdl(t.meta()).map(String::into_bytes),
            _ => reef_ctf::metadata::write::to_ctf2(t.meta()),
        }
        .map_err(|e| {
            Error::Usage(format!(
                "{}: cannot write this CTF {} trace as CTF {}: {e}",
                t.path.display(),
                if major == 1 { "1.8" } else { "2" },
                if want == 1 { "1.8" } else { "2" },
            ))
        })?;
        let text = Arc::new(text);
        for d in &t.dirs {
            translated.insert(d.clone(), text.clone());
        }
    }
    let dirs = out_dirs(&traces, inputs, out)?;
    let mut summary = Summary {
        traces: traces.len(),
        ..Summary::default()
    };
    for (dir, odir) in &dirs {
        let meta = odir.join("metadata");
        if meta.exists() {
            return Err(Error::Usage(format!(
                "{}: already holds a trace; choose another output directory",
                odir.display()
            )));
        }
        std::fs::create_dir_all(odir).map_err(|e| Error::io(odir, e))?;
        match translated.get(dir) {
            Some(text) => std::fs::write(&meta, &text[..]).map_err(|e| Error::io(&meta, e))?,
            None => {
                std::fs::copy(dir.join("metadata"), &meta).map_err(|e| Error::io(&meta, e))?;
            }
        }
    }
    let mut streams = src.into_streams()?;
    let window = streams.window;
    let mut stop: Option<reef_read::Error> = None;
    for (i, c) in streams.cursors.iter_mut().enumerate() {
        let mut w = StreamWriter::new(c, streams.clocks[i], window, filter.as_ref());
        if let Some(v) = &opts.verdicts {
            // A stream the script saw no event of keeps none.
            static NONE: reef_read::script::StreamBits = reef_read::script::StreamBits::EMPTY;
            w.verdicts = Some((v.get(i).unwrap_or(&NONE), 0));
        }
        match w.run(c, &dirs, &mut summary) {
            Ok(()) => {}
            Err(Stop::Read(e)) => {
                stop.get_or_insert(e);
            }
            Err(Stop::Io(e)) => return Err(e),
        }
    }
    Ok((summary, streams.ending.error(stop, false)))
}

/// Where each trace directory goes.
fn out_dirs(
    traces: &[Arc<Trace>],
    inputs: &[PathBuf],
    out: &Path,
) -> Result<HashMap<PathBuf, PathBuf>, Error> {
    let mut map: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut seen: HashMap<PathBuf, PathBuf> = HashMap::new();
    for t in traces {
        for dir in &t.dirs {
            let input = inputs
                .iter()
                .find(|p| dir.starts_with(p))
                .cloned()
                .unwrap_or_else(|| dir.clone());
            let rel = dir.strip_prefix(&input).unwrap_or(Path::new(""));
            let mut o = out.to_path_buf();
            if inputs.len() > 1 {
                match input.file_name() {
                    Some(n) => o.push(n),
                    None => o.push("trace"),
                }
            }
            o.push(rel);
            if let Some(other) = seen.insert(o.clone(), dir.clone()) {
                if other != *dir {
                    return Err(Error::Usage(format!(
                        "{} and {} would both be written to {}: give inputs of different names",
                        other.display(),
                        dir.display(),
                        o.display()
                    )));
                }
            }
            map.insert(dir.clone(), o);
        }
    }
    Ok(map)
}

/// One stream file being written, and its index.
struct FileOut {
    path: PathBuf,
    src: PathBuf,
    /// A source with no file of its own (a trace-cmd file's stream,
    /// converted into an unlinked file): copied from its mapping.
    mapped: Option<Arc<reef_ctf::trace::StreamFile>>,
    file: Option<File>,
    src_file: Option<File>,
    /// Bytes written.
    pos: u64,
    /// A run of source bytes still to copy.
    pending: Option<(u64, u64)>,
    index: Vec<[u64; 9]>,
    /// The packets have beginning and end times: an index is written.
    indexed: bool,
}

impl FileOut {
    fn new(
        path: PathBuf,
        src: PathBuf,
        mapped: Option<Arc<reef_ctf::trace::StreamFile>>,
    ) -> FileOut {
        FileOut {
            path,
            src,
            mapped,
            file: None,
            src_file: None,
            pos: 0,
            pending: None,
            index: Vec::new(),
            indexed: true,
        }
    }

    fn file(&mut self) -> Result<&mut File, Stop> {
        if self.file.is_none() {
            let f = File::create(&self.path).map_err(io(&self.path))?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut().unwrap_or_else(|| unreachable!()))
    }

    /// Copies bytes `a..b` of the source file (joined to the run before
    /// when it continues it).
    fn copy(&mut self, a: u64, b: u64) -> Result<(), Stop> {
        match &mut self.pending {
            Some((_, e)) if *e == a => *e = b,
            _ => {
                self.flush()?;
                self.pending = Some((a, b));
            }
        }
        self.pos += b - a;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Stop> {
        let Some((a, b)) = self.pending.take() else {
            return Ok(());
        };
        if let Some(m) = self.mapped.clone() {
            let data = m.data().get(a as usize..b as usize).unwrap_or_default();
            let path = self.path.clone();
            return self.file()?.write_all(data).map_err(io(&path));
        }
        if self.src_file.is_none() {
            self.src_file = Some(File::open(&self.src).map_err(io(&self.src))?);
        }
        let mut src = self.src_file.take().unwrap_or_else(|| unreachable!());
        src.seek(SeekFrom::Start(a)).map_err(io(&self.src))?;
        let path = self.path.clone();
        let n = std::io::copy(&mut std::io::Read::take(&mut src, b - a), self.file()?)
            .map_err(io(&path))?;
        self.src_file = Some(src);
        if n != b - a {
            return Err(Stop::Io(Error::io(
                &self.src,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the stream file is shorter than when it was opened",
                ),
            )));
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> Result<(), Stop> {
        self.flush()?;
        let path = self.path.clone();
        self.file()?.write_all(data).map_err(io(&path))?;
        self.pos += data.len() as u64;
        Ok(())
    }

    /// Completes the file and writes its index.
    fn finish(mut self) -> Result<bool, Stop> {
        self.flush()?;
        let Some(f) = self.file.take() else {
            return Ok(false);
        };
        drop(f);
        // babeltrace2 rejects an index whose times go backwards (a crash
        // leaves packets with no end time): none then, as in the input.
        let sane = self
            .index
            .windows(2)
            .all(|w| w[0][4] <= w[1][4] && w[0][3] <= w[1][3])
            && self.index.iter().all(|e| e[3] <= e[4]);
        if self.indexed && sane && !self.index.is_empty() {
            let dir = self.path.parent().unwrap_or(Path::new(".")).join("index");
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            let mut name = self.path.file_name().unwrap_or_default().to_os_string();
            name.push(".idx");
            let p = dir.join(name);
            let mut b = Vec::with_capacity(16 + self.index.len() * 72);
            // LTTng's ctf_packet_index_file_hdr: magic, version 1.1, entry
            // length; then ctf_packet_index entries, all big-endian.
            for v in [0xC1F1_DCC1u32, 1, 1, 72] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            for e in &self.index {
                for v in e {
                    b.extend_from_slice(&v.to_be_bytes());
                }
            }
            std::fs::write(&p, b).map_err(io(&p))?;
        }
        Ok(true)
    }
}

/// Where a packet context field lies in a packet being written.
#[derive(Debug, Clone, Copy)]
struct FieldAt {
    meaning: Meaning,
    at: u64,
    size: u32,
    le: bool,
}

/// Writes one stream.
struct StreamWriter<'a> {
    clock: Option<ClockConv>,
    window: (i64, i64),
    windowed: bool,
    filter: Option<&'a EventFilter>,
    /// The script's verdicts on this stream's events that pass the window
    /// and the filter, and how many were asked for.
    verdicts: Option<(&'a reef_read::script::StreamBits, u64)>,
    /// Added to each input packet's sequence number.
    seq_delta: i64,
    /// A packet was written.
    wrote: bool,
    /// The `events_discarded` of the first packet written, subtracted
    /// from every packet's: losses before the output's first packet are
    /// not the output's.
    discard_base: Option<u64>,
    /// The stream's clock at the end of the last packet written.
    last_clock: u64,
    /// The time (ns from the origin) of the stream's last message
    /// written, when a message going back from it is damage (CTF 1.8:
    /// babeltrace2 2.0's muxer refuses it).
    last_ns: Option<i64>,
    monotonic: bool,
    /// The largest alignment of the stream's event fields (bits).
    align: u64,
    stream_id: u64,
    ended: bool,
    /// Index into the trace class's streams.
    stream: usize,
    st: State,
    ph: State,
    scratch: Vec<Value>,
    ctx: Vec<Value>,
}

/// A packet being written again from one input packet.
struct Rewrite<'p> {
    f: &'p StreamFile,
    info: PacketInfo,
    events_at: u64,
    bits: Bits,
    fields: Vec<FieldAt>,
    /// The state after the header and context: what each event starts
    /// from, as a reader's.
    base_state: State,
    /// A reader's state over the packet being written.
    check: State,
    values: Vec<Value>,
    bounds: [usize; 4],
    open: bool,
    /// Packets written from this input packet.
    written: u64,
    /// Events in the packet being written.
    events: u64,
    first_ts: Option<u64>,
    last_ts: Option<u64>,
    /// Events of the input packet passed over so far, and since the last
    /// one kept.
    dropped: u64,
    dropped_since: u64,
    kept: u64,
}

impl<'a> StreamWriter<'a> {
    fn new(
        c: &StreamCursor,
        clock: Option<ClockConv>,
        window: (i64, i64),
        filter: Option<&'a EventFilter>,
    ) -> StreamWriter<'a> {
        let class = &c.trace.class;
        let sp = &class.streams[c.stream];
        let plans = [&sp.event_header, &sp.event_common_context]
            .into_iter()
            .chain(sp.event_plans().flat_map(|e| [&e.context, &e.payload]));
        StreamWriter {
            clock,
            window,
            windowed: window != (i64::MIN, i64::MAX),
            filter,
            verdicts: None,
            seq_delta: 0,
            wrote: false,
            discard_base: None,
            last_clock: 0,
            last_ns: None,
            monotonic: class.meta.major < 2,
            align: max_align(plans),
            stream_id: class.meta.streams[sp.class].id,
            ended: false,
            stream: c.stream,
            st: State::new(sp.refs.len()),
            ph: State::new(class.packet_header_slots),
            scratch: Vec::new(),
            ctx: Vec::new(),
        }
    }

    fn ns(&self, cycles: Option<u64>) -> Option<i64> {
        self.clock.zip(cycles).and_then(|(k, c)| k.ns(c))
    }

    /// Whether an event at `cycles` goes back in time from the stream's
    /// last one (else it becomes the last one). Events only, as reef's
    /// muxer orders them: an event before its packet's beginning is no
    /// damage (babeltrace2 reads barectf's).
    fn back(&mut self, cycles: Option<u64>) -> Option<(i64, i64)> {
        let n = self.ns(cycles)?;
        match self.last_ns {
            Some(l) if self.monotonic && n < l => Some((n, l)),
            _ => {
                self.last_ns = Some(n);
                None
            }
        }
    }

    fn backwards(path: &Path, offset: u64, (n, l): (i64, i64)) -> Stop {
        reef_ctf::Error::Stream {
            path: path.to_path_buf(),
            offset,
            msg: format!(
                "time goes backwards: message at {n} ns from origin follows one at {l} ns"
            ),
        }
        .into()
    }

    /// Whether every event of packet `info` decodes and none goes back
    /// in time: a packet to copy byte for byte must read cleanly (else it
    /// is written again up to the damage by [`StreamWriter::rewrite`]).
    fn clean(
        &mut self,
        c: &mut StreamCursor,
        fi: usize,
        info: &PacketInfo,
        events_at: u64,
    ) -> Result<bool, Stop> {
        let saved = self.last_ns;
        let ok = (|| -> Result<bool, Stop> {
            c.go_to(&Place::At {
                file: fi as u32,
                packet: info.offset,
                pos: events_at,
                clock: info.ts_begin.unwrap_or(self.last_clock),
            })?;
            while c.in_events() {
                if c.next().is_err() || self.back(c.event.ts).is_some() {
                    return Ok(false);
                }
            }
            Ok(true)
        })();
        if !matches!(ok, Ok(true)) {
            self.last_ns = saved;
        }
        match ok {
            Ok(v) => Ok(v),
            // Reading the packet again reports it.
            Err(Stop::Read(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn run(
        &mut self,
        c: &mut StreamCursor,
        dirs: &HashMap<PathBuf, PathBuf>,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        let trace = c.trace.clone();
        let files = trace.sources[c.source].files.clone();
        for (fi, f) in files.iter().enumerate() {
            if self.ended {
                break;
            }
            // A trace-cmd file's streams are named `FILE#cpuN`: written
            // as `cpuN` in its trace's directory.
            let name = f.path.file_name().unwrap_or_default().to_string_lossy();
            let (dir, name, mapped) = match (trace.dirs.first(), name.rsplit_once('#')) {
                (Some(d), Some((_, n))) if f.path.parent() == d.parent() && !d.is_dir() => {
                    (d.as_path(), n.to_string(), Some(f.clone()))
                }
                _ => (
                    f.path.parent().unwrap_or(Path::new("")),
                    name.into_owned(),
                    None,
                ),
            };
            let Some(odir) = dirs.get(dir) else { continue };
            let mut out = FileOut::new(odir.join(name), f.path.clone(), mapped);
            let r = self.file(c, &trace, fi, f, &mut out, summary);
            let written = out.finish();
            if written? {
                summary.files += 1;
            }
            r?;
        }
        Ok(())
    }

    fn file(
        &mut self,
        c: &mut StreamCursor,
        trace: &Trace,
        fi: usize,
        f: &Arc<StreamFile>,
        out: &mut FileOut,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        let class = &trace.class;
        let table: Vec<u64> = f
            .packets
            .get()
            .map(|t| t.iter().map(|p| p.0).collect())
            .unwrap_or_default();
        let mut released = 0u64;
        for off in table {
            if off >= f.end() {
                break;
            }
            let (_, info, events_at) = read_packet(
                class,
                f,
                off,
                &mut PacketScratch {
                    st: &mut self.st,
                    ph_state: &mut self.ph,
                    scratch: &mut self.scratch,
                    context: &mut self.ctx,
                },
            )?;
            if info.ts_begin.is_none() || info.ts_end.is_none() {
                out.indexed = false;
            }
            let size = info.packet_bits / 8;
            if off + size - released >= (4 << 20) {
                f.release(released as usize, off as usize);
                released = off;
            }
            let cut = f.cut.get().is_some_and(|k| k.packet == off);
            // An end before the beginning is no end (LTTng's crash
            // buffers, never closed, hold 0): such a packet is decoded.
            let end = info
                .ts_end
                .filter(|&e| info.ts_begin.is_none_or(|b| e >= b));
            let (tb, te) = (self.ns(info.ts_begin), self.ns(end));
            let timed = self.clock.is_some();
            let (b, e) = self.window;
            if timed && self.windowed {
                if te.is_some_and(|te| te < b) && !cut {
                    continue;
                }
                if tb.is_some_and(|tb| tb > e) {
                    self.ended = true;
                    break;
                }
            }
            let inside = !self.windowed
                || !timed
                || matches!((tb, te), (Some(tb), Some(te)) if tb >= b && te <= e);
            if self.filter.is_none()
                && self.verdicts.is_none()
                && !cut
                && inside
                && self.clean(c, fi, &info, events_at)?
            {
                self.copy_whole(class, f, &info, out, summary)?;
                continue;
            }
            self.rewrite(c, trace, fi, f, info, events_at, out, summary)?;
            if self.ended {
                break;
            }
        }
        Ok(())
    }

    /// The sequence number packet `info` is written with.
    fn seq(&self, info: &PacketInfo, extra: u64) -> Option<u64> {
        info.seq_num
            .map(|s| (s as i64).wrapping_add(self.seq_delta) as u64 + extra)
    }

    /// The `events_discarded` packet `info` is written with (setting the
    /// base at the first packet written).
    fn discarded(&mut self, info: &PacketInfo) -> Option<u64> {
        let c = info.events_discarded?;
        let base = *self.discard_base.get_or_insert(c);
        Some(c.saturating_sub(base))
    }

    fn copy_whole(
        &mut self,
        class: &reef_ctf::TraceClass,
        f: &StreamFile,
        info: &PacketInfo,
        out: &mut FileOut,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        let at = out.pos;
        let size = info.packet_bits / 8;
        let seq = self.seq(info, 0);
        let discarded = self.discarded(info);
        if seq == info.seq_num && discarded == info.events_discarded {
            out.copy(info.offset, info.offset + size)?;
        } else {
            // Packets before it were dropped or split, or events were
            // discarded before the first packet written: its number or
            // its count changes.
            let mut b = Bits::default();
            let fields = self.head(class, f, info, &mut b)?;
            let (s, e) = (info.offset as usize, (info.offset + size) as usize);
            b.truncate(0);
            b.append(&f.data()[s..e], 0, size * 8, true);
            if let (Some(fa), Some(v)) = (
                fields.iter().find(|x| x.meaning == Meaning::PacketSeqNum),
                seq,
            ) {
                b.put(fa.at, fa.size, fa.le, v);
            }
            if let (Some(fa), Some(v)) = (
                fields
                    .iter()
                    .find(|x| x.meaning == Meaning::EventsDiscarded),
                discarded,
            ) {
                b.put(fa.at, fa.size, fa.le, v);
            }
            out.write(&b.buf)?;
        }
        out.index.push([
            at,
            info.packet_bits,
            info.content_bits,
            info.ts_begin.unwrap_or(0),
            info.ts_end.unwrap_or(0),
            discarded.unwrap_or(0),
            self.stream_id,
            info.stream_instance_id.unwrap_or(0),
            seq.unwrap_or(0),
        ]);
        if let Some(t) = info.ts_end {
            self.last_clock = t;
        }
        self.wrote = true;
        summary.packets_copied += 1;
        summary.bytes += size;
        Ok(())
    }

    /// Lays out the header and context of packet `info` again into `b`
    /// (empty), and says where its special fields are.
    fn head(
        &mut self,
        class: &reef_ctf::TraceClass,
        f: &StreamFile,
        info: &PacketInfo,
        b: &mut Bits,
    ) -> Result<Vec<FieldAt>, Stop> {
        let (_, state) = self.head_state(class, f, info, b)?;
        Ok(state)
    }

    fn head_state(
        &mut self,
        class: &reef_ctf::TraceClass,
        f: &StreamFile,
        info: &PacketInfo,
        b: &mut Bits,
    ) -> Result<(State, Vec<FieldAt>), Stop> {
        let sp = &class.streams[self.stream];
        let base = info.offset * 8;
        let mut cur = Cursor {
            data: f.data(),
            base,
            pos: base,
            end: base + info.content_bits,
        };
        let mut st = State::new(sp.refs.len());
        let mut fields = Vec::new();
        let data = f.data();
        let mut v = |x: Visit| match x {
            Visit::Align(a) => b.align(a),
            Visit::Leaf {
                start,
                end,
                le,
                meaning,
            } => {
                if meaning != Meaning::None {
                    fields.push(FieldAt {
                        meaning,
                        at: b.len,
                        size: (end - start) as u32,
                        le,
                    });
                }
                b.append(data, start, end, le);
            }
        };
        let derr = |e| reef_ctf::Error::Decode {
            path: f.path.clone(),
            packet_offset: info.offset,
            err: e,
        };
        walk_scope(
            &sp.packet_header,
            &mut cur,
            &mut st,
            &mut self.scratch,
            &mut v,
        )
        .map_err(derr)?;
        walk_scope(
            &sp.packet_context,
            &mut cur,
            &mut st,
            &mut self.scratch,
            &mut v,
        )
        .map_err(derr)?;
        Ok((st, fields))
    }

    #[allow(clippy::too_many_arguments)]
    fn rewrite(
        &mut self,
        c: &mut StreamCursor,
        trace: &Trace,
        fi: usize,
        f: &Arc<StreamFile>,
        info: PacketInfo,
        events_at: u64,
        out: &mut FileOut,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        let class = &trace.class;
        c.go_to(&Place::At {
            file: fi as u32,
            packet: info.offset,
            pos: events_at,
            clock: info.ts_begin.unwrap_or(self.last_clock),
        })?;
        let mut rw = Rewrite {
            f,
            info,
            events_at,
            bits: Bits::default(),
            fields: Vec::new(),
            base_state: State::new(0),
            check: State::new(0),
            values: Vec::new(),
            bounds: [0; 4],
            open: false,
            written: 0,
            events: 0,
            first_ts: None,
            last_ts: None,
            dropped: 0,
            dropped_since: 0,
            kept: 0,
        };
        let (b, e) = self.window;
        let mut stopped: Option<Stop> = None;
        while c.in_events() {
            let start = c.position();
            if let Err(err) = c.next() {
                stopped = Some(err.into());
                break;
            }
            let end = c.position();
            let t = self.ns(c.event.ts);
            if let Some(back) = self.back(c.event.ts) {
                stopped = Some(Self::backwards(&f.path, start / 8, back));
                break;
            }
            if let Some(t) = t {
                if t > e {
                    self.ended = true;
                    break;
                }
            }
            let mut keep = t.is_none_or(|t| t >= b) && self.filter.is_none_or(|fl| fl.matches(c));
            if let (true, Some((bits, n))) = (keep, &mut self.verdicts) {
                // Past the script's verdicts (its reading stopped on an
                // error the writer meets too): nothing more is kept.
                keep = bits.get(*n).unwrap_or(false);
                *n += 1;
            }
            if !keep {
                rw.dropped += 1;
                rw.dropped_since += 1;
                continue;
            }
            if let Err(err) = self.place(c, class, &mut rw, start, end, out, summary) {
                stopped = Some(err);
                break;
            }
        }
        let whole = rw.dropped == 0
            && !self.ended
            && stopped.is_none()
            && rw.written == 0
            && f.cut.get().is_none_or(|k| k.packet != rw.info.offset);
        if whole {
            self.copy_whole(class, f, &rw.info, out, summary)?;
        } else {
            if rw.open {
                let last = rw.dropped_since == 0 && !self.ended && stopped.is_none();
                self.close(class, &mut rw, last, out, summary)?;
            }
            // This packet became `written` packets.
            if self.wrote || rw.written > 0 {
                self.seq_delta += rw.written as i64 - 1;
            }
            summary.events_written += rw.kept;
        }
        match stopped {
            Some(s) => Err(s),
            None => Ok(()),
        }
    }

    /// Opens a packet written from `rw`'s input packet, beginning at
    /// `ts_begin`.
    fn open(
        &mut self,
        class: &reef_ctf::TraceClass,
        rw: &mut Rewrite,
        ts_begin: Option<u64>,
    ) -> Result<(), Stop> {
        let mut b = std::mem::take(&mut rw.bits);
        b.clear();
        let (st, fields) = self.head_state(class, rw.f, &rw.info, &mut b)?;
        rw.bits = b;
        rw.fields = fields;
        if let (Some(fa), Some(t)) = (
            rw.fields
                .iter()
                .find(|x| x.meaning == Meaning::TimestampBegin),
            ts_begin,
        ) {
            rw.bits.put(fa.at, fa.size, fa.le, t);
        }
        rw.check = st.clone();
        rw.check.clock = ts_begin.unwrap_or(self.last_clock);
        rw.base_state = st;
        rw.open = true;
        rw.events = 0;
        rw.first_ts = ts_begin;
        let _ = rw.events_at;
        Ok(())
    }

    /// Places the event the cursor just read (bits `start..end` of its
    /// file) in the packet being written, opening or splitting packets
    /// as needed.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        c: &StreamCursor,
        class: &reef_ctf::TraceClass,
        rw: &mut Rewrite,
        start: u64,
        end: u64,
        out: &mut FileOut,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        let ts = c.event.ts;
        if !rw.open {
            // The packet's original beginning, when no event before this
            // one was left out; else this event's time.
            let begin = if rw.dropped == 0 && rw.written == 0 {
                rw.info.ts_begin
            } else {
                ts.or(rw.info.ts_begin)
            };
            self.open(class, rw, begin)?;
        }
        for attempt in 0..2 {
            if self.try_place(c, class, rw, start, end, &mut summary.events_relaid)? {
                rw.events += 1;
                rw.kept += 1;
                rw.last_ts = ts;
                rw.dropped_since = 0;
                return Ok(());
            }
            if attempt == 1 || rw.events == 0 {
                break;
            }
            // The clock cannot reach this event from the one before it in
            // this packet: a new packet that begins at its time.
            self.close(class, rw, false, out, summary)?;
            summary.splits += 1;
            self.open(class, rw, ts)?;
        }
        Err(reef_ctf::Error::Stream {
            path: rw.f.path.clone(),
            offset: start / 8,
            msg: "this event does not decode to the same values once written at its place in a new packet; reef cannot write it again".into(),
        }
        .into())
    }

    /// Writes the event at bits `start..end` of the input at the end of
    /// the packet being written, and checks it decodes as the original.
    fn try_place(
        &mut self,
        c: &StreamCursor,
        class: &reef_ctf::TraceClass,
        rw: &mut Rewrite,
        start: u64,
        end: u64,
        relaid: &mut u64,
    ) -> Result<bool, Stop> {
        let data = rw.f.data();
        let q = rw.bits.len;
        let rel = start - rw.info.offset * 8;
        let moved = (rel as i128 - q as i128).rem_euclid(self.align as i128);
        if start.is_multiple_of(8) && moved == 0 {
            // Every field keeps its padding: the bytes as they are.
            rw.bits.append(data, start, end, true);
        } else {
            *relaid += 1;
            let sp = &class.streams[c.stream];
            let ep = sp.event(c.event.event);
            let base = rw.info.offset * 8;
            let mut cur = Cursor {
                data,
                base,
                pos: start,
                end: base + rw.info.content_bits,
            };
            let mut st = rw.base_state.clone();
            st.clock = c.event.ts.unwrap_or(0);
            let bits = &mut rw.bits;
            let mut v = |x: Visit| match x {
                Visit::Align(a) => bits.align(a),
                Visit::Leaf { start, end, le, .. } => bits.append(data, start, end, le),
            };
            let derr = |e| reef_ctf::Error::Decode {
                path: rw.f.path.clone(),
                packet_offset: rw.info.offset,
                err: e,
            };
            for plan in [
                &sp.event_header,
                &sp.event_common_context,
                &ep.context,
                &ep.payload,
            ] {
                walk_scope(plan, &mut cur, &mut st, &mut self.scratch, &mut v).map_err(derr)?;
            }
        }
        // Decoded back as a reader would.
        let clock = rw.check.clock;
        let mut cur = Cursor {
            data: &rw.bits.buf,
            base: 0,
            pos: q,
            end: rw.bits.len,
        };
        let got = decode_event_at(
            class,
            c.stream,
            &rw.f.path,
            &mut cur,
            &mut rw.check,
            &mut rw.values,
            &mut rw.bounds,
        );
        let same = matches!(got, Ok(idx) if idx == c.event.event)
            && cur.pos == rw.bits.len
            && c.event.ts.is_none_or(|t| t == rw.check.clock)
            && rw.bounds == c.event.bounds
            && same_values(&rw.values, &rw.bits.buf, &c.event.values, data);
        if !same {
            rw.bits.truncate(q);
            rw.check.clock = clock;
        }
        Ok(same)
    }

    /// Completes the packet being written and writes it. `last`: it ends
    /// where its input packet ends (its end time stays).
    fn close(
        &mut self,
        class: &reef_ctf::TraceClass,
        rw: &mut Rewrite,
        last: bool,
        out: &mut FileOut,
        summary: &mut Summary,
    ) -> Result<(), Stop> {
        rw.open = false;
        let content = rw.bits.len;
        let has = |m: Meaning| rw.fields.iter().any(|x| x.meaning == m);
        if !has(Meaning::ContentSize) && !content.is_multiple_of(8) {
            return Err(self.unwritable(
                rw,
                "its stream class has no content_size and its last event does not end on a byte",
            ));
        }
        if !has(Meaning::PacketSize) && (rw.written > 0 || rw.info.packet_bits != content) {
            // Without packet_size a packet runs to the end of its file.
            if rw.written > 0 {
                return Err(self.unwritable(
                    rw,
                    "its stream class has no packet_size: a file holds one packet, which cannot be split",
                ));
            }
        }
        rw.bits.pad_to(align_up(content, 8));
        let packet = rw.bits.len;
        let ts_end = if last && f_not_cut(rw) {
            rw.info.ts_end
        } else {
            rw.last_ts.or(rw.info.ts_end)
        };
        let seq = self.seq(&rw.info, rw.written);
        let discarded = self.discarded(&rw.info);
        let values = [
            (Meaning::ContentSize, Some(content)),
            (Meaning::PacketSize, Some(packet)),
            (Meaning::TimestampEnd, ts_end),
            (Meaning::PacketSeqNum, seq),
            (Meaning::EventsDiscarded, discarded),
        ];
        for (m, v) in values {
            if let (Some(fa), Some(v)) = (rw.fields.iter().find(|x| x.meaning == m), v) {
                rw.bits.put(fa.at, fa.size, fa.le, v);
            }
        }
        // The packet as a reader sees it (sizes, times, framing).
        let mut ps = PacketScratch {
            st: &mut self.st,
            ph_state: &mut self.ph,
            scratch: &mut self.scratch,
            context: &mut self.ctx,
        };
        read_packet_bytes(class, &rw.bits.buf, &out.path, &mut ps)?;
        let at = out.pos;
        out.write(&rw.bits.buf)?;
        out.index.push([
            at,
            packet,
            content,
            rw.first_ts.unwrap_or(0),
            ts_end.unwrap_or(0),
            discarded.unwrap_or(0),
            self.stream_id,
            rw.info.stream_instance_id.unwrap_or(0),
            seq.unwrap_or(0),
        ]);
        if let Some(t) = rw.last_ts.or(ts_end) {
            self.last_clock = t;
        }
        rw.written += 1;
        self.wrote = true;
        summary.packets_written += 1;
        summary.bytes += packet / 8;
        Ok(())
    }

    fn unwritable(&self, rw: &Rewrite, why: &str) -> Stop {
        reef_ctf::Error::Stream {
            path: rw.f.path.clone(),
            offset: rw.info.offset,
            msg: format!("this packet cannot be cut: {why}"),
        }
        .into()
    }
}

fn f_not_cut(rw: &Rewrite) -> bool {
    rw.f.cut.get().is_none_or(|k| k.packet != rw.info.offset)
}

/// Whether two events' values are the same (strings and BLOBs by their
/// bytes, each in its own data).
fn same_values(a: &[Value], da: &[u8], b: &[Value], db: &[u8]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Bytes { off: o1, len: l1 }, Value::Bytes { off: o2, len: l2 }) => {
                l1 == l2 && da.get(*o1..o1 + l1) == db.get(*o2..o2 + l2)
            }
            (Value::F(p), Value::F(q)) => p.to_bits() == q.to_bits(),
            (Value::Big { .. }, Value::Big { .. }) => true,
            _ => x == y,
        })
}
