//! Reading one data stream: packets one after the other, events within them.
//!
//! A [`StreamCursor`] yields [`Item`]s: events, and the discarded-events /
//! discarded-packets notices that packet contexts imply. Its buffers are
//! reused from event to event.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::decode::{decode_scope, Cursor, State, Value};
use crate::plan::Meaning;
use crate::prog::{exec, QuickSkim, Tagged};
use crate::trace::{stream_of_packet, StreamFile, Trace, TraceClass};
use crate::Error;

/// CTF packet magic number.
pub const CTF_MAGIC: u64 = 0xC1FC_1FC1;

/// The current packet's properties, from its header and context.
#[derive(Debug, Clone, Default)]
pub struct PacketInfo {
    /// Byte offset of the packet in its file.
    pub offset: u64,
    pub packet_bits: u64,
    pub content_bits: u64,
    pub ts_begin: Option<u64>,
    pub ts_end: Option<u64>,
    pub events_discarded: Option<u64>,
    pub seq_num: Option<u64>,
    pub stream_instance_id: Option<u64>,
}

/// What the cursor currently points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// An event: see [`StreamCursor::event`].
    Event,
    /// The tracer discarded `count` events (`None`: an unknown number, maybe
    /// none) between `begin` and `end` (clock cycles of the stream's clock,
    /// when known).
    DiscardedEvents {
        count: Option<u64>,
        begin: Option<u64>,
        end: Option<u64>,
    },
    /// `count` packets are missing (packet sequence number gap).
    DiscardedPackets {
        count: u64,
        begin: Option<u64>,
        end: Option<u64>,
    },
}

/// The current event's decoded fields.
#[derive(Debug, Default)]
pub struct EventData {
    /// Index into the stream plans' `events`.
    pub event: usize,
    /// Clock value (cycles) when the event was recorded, if the stream has a clock.
    pub ts: Option<u64>,
    /// Values of the event header, common context, specific context and
    /// payload, one after the other; `bounds` splits them.
    pub values: Vec<Value>,
    pub bounds: [usize; 4],
    /// Byte offset of the event in its file.
    pub offset: u64,
    /// Byte offsets in its file of the event's body (its specific context,
    /// then payload) and of its end: where [`crate::access::RawField`]s
    /// read the fields of an event whose values were not kept.
    pub body: u64,
    pub end: u64,
}

impl EventData {
    pub fn header(&self) -> &[Value] {
        &self.values[..self.bounds[0]]
    }
    pub fn common_context(&self) -> &[Value] {
        &self.values[self.bounds[0]..self.bounds[1]]
    }
    pub fn specific_context(&self) -> &[Value] {
        &self.values[self.bounds[1]..self.bounds[2]]
    }
    pub fn payload(&self) -> &[Value] {
        &self.values[self.bounds[2]..self.bounds[3]]
    }
}

/// Where a [`StreamCursor`] stands between two items, to come back to
/// later without reading what lies before ([`StreamCursor::place`],
/// [`StreamCursor::go_to`]): a viewer decoding a window again from a
/// checkpoint starts each stream where the checkpoint left it rather than
/// at the start of the packet around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// No packet read yet.
    Unread,
    /// Inside the packet at byte `packet` of file `file` (index into the
    /// stream's files), before the event at bit `pos` of the file (or at
    /// the packet's end), the clock at `clock` cycles.
    At {
        file: u32,
        packet: u64,
        pos: u64,
        clock: u64,
    },
    /// Every item was read.
    Ended,
}

/// Reads the packets and events of one [`crate::trace::StreamSource`].
pub struct StreamCursor {
    pub trace: Arc<Trace>,
    /// Index into `trace.sources`.
    pub source: usize,
    /// Index into `trace.class.streams`.
    pub stream: usize,
    file_idx: usize,
    file: Option<Arc<StreamFile>>,
    st: State,
    ph_state: State,
    /// Bit position of the next event (or the packet end) in the file.
    pos: u64,
    /// Offset of the next packet to read, in bytes, once this one is done.
    next_packet: u64,
    in_packet: bool,
    pub packet: PacketInfo,
    prev_packet: Option<PacketInfo>,
    pub packet_context: Vec<Value>,
    scratch: Vec<Value>,
    pub event: EventData,
    /// Notices waiting to be returned before the next packet's events.
    pending: Vec<Item>,
    done: bool,
    /// Number of packets read so far.
    pub packets_read: u64,
    /// When set, receives the size in bytes of every packet this cursor
    /// finishes (or skips when seeking): a progress counter shared by the
    /// cursors of a reader.
    pub progress: Option<Arc<AtomicU64>>,
    /// Events are decoded without keeping their field values (see
    /// [`StreamCursor::skip_values`]).
    skip_values: bool,
    /// Bytes read but not released yet: file, start, end.
    unreleased: Option<(Arc<StreamFile>, usize, usize)>,
    /// The file whose pages are mapped ahead of the packets read, and
    /// where that ends (see [`StreamCursor::populate_ahead`]).
    populated: Option<(Arc<StreamFile>, u64)>,
    /// When set, the context and payload values are kept only for the
    /// event classes (indexes into the stream class's events) marked
    /// here (see [`StreamCursor::values_of`]).
    want: Option<Arc<[bool]>>,
    /// See [`StreamCursor::release_every`].
    release_chunk: usize,
    /// Bytes of the current packet before this offset were handed to
    /// `release_later` already (large packets are released as they are
    /// read).
    behind: u64,
    /// By event id: the classes the skimming loops cross by their id
    /// alone ([`Crossing`]), learnt as they decode them.
    crossing: Vec<Crossing>,
}

/// An event class the skimming loops ([`StreamCursor::skim_run`],
/// [`StreamCursor::skim_bodies`]) cross without the decoder. When the
/// stream's event header is one the decoder reads without its interpreter
/// ([`Head`]: libreef's `(id, timestamp)` pair, LTTng's compact and
/// extended headers) and there is no common context, an event of a class
/// whose values are not wanted and whose body has a skim ([`QuickSkim`],
/// else [`crate::prog::Skim`]) is crossed by reading its header and
/// skipping its body: what the decoder would do, in a fraction of the
/// instructions. (index into the stream class's events, its quick skim);
/// `u32::MAX`: not (yet) known as such.
type Crossing = (u32, QuickSkim);

/// A stream's event header, when the skimming loops can read it
/// without the decoder.
#[derive(Clone, Copy)]
enum Head {
    /// [`crate::prog::Prog::id_ts`].
    IdTs((u32, u32)),
    /// [`crate::prog::Prog::tagged`].
    Tagged(Tagged),
}

const UNKNOWN: Crossing = (u32::MAX, QuickSkim::NONE);

/// Event ids up to which [`Crossing`]s are kept (larger ones take the
/// decoder).
const CROSSING_IDS: u64 = 4096;

impl Drop for StreamCursor {
    /// Releases what the cursor still holds mapped (a reader stopping in
    /// the middle of a stream, as a viewer's window queries do, would
    /// otherwise leave those pages resident).
    fn drop(&mut self) {
        if let Some((f, s, e)) = self.unreleased.take() {
            f.release(s, e);
        }
        self.forget_ahead();
        if self.in_packet {
            if let Some(f) = &self.file {
                let s = self.packet.offset as usize;
                f.release_all(s, s + (self.packet.packet_bits / 8) as usize);
            }
        }
    }
}

/// Bytes of read packets a cursor gathers before releasing them: memory
/// stays bounded by this much per stream (plus a packet).
pub const RELEASE_CHUNK: usize = 1 << 20;

impl StreamCursor {
    pub fn new(trace: Arc<Trace>, source: usize) -> StreamCursor {
        let stream = trace.sources[source].stream;
        let slots = trace.class.streams[stream].refs.len();
        let ph_slots = trace.class.packet_header_slots;
        StreamCursor {
            trace,
            source,
            stream,
            file_idx: 0,
            file: None,
            st: State::new(slots),
            ph_state: State::new(ph_slots),
            pos: 0,
            next_packet: 0,
            in_packet: false,
            packet: PacketInfo::default(),
            prev_packet: None,
            packet_context: Vec::new(),
            scratch: Vec::new(),
            event: EventData::default(),
            pending: Vec::new(),
            done: false,
            packets_read: 0,
            progress: None,
            skip_values: false,
            unreleased: None,
            populated: None,
            want: None,
            release_chunk: RELEASE_CHUNK,
            behind: 0,
            crossing: Vec::new(),
        }
    }

    /// For readers that need each event's class, time and offset but none
    /// of its fields (`reef check`): events are still decoded and checked
    /// in full, but [`EventData::values`] stays empty (all bounds 0).
    pub fn skip_values(&mut self, skip: bool) {
        self.skip_values = skip;
    }

    /// For readers that need the fields of a few event classes only.
    /// Without [`StreamCursor::skip_values`], the context and payload
    /// values of the classes `want` does not mark are not kept (their
    /// event header and common context still are); with it, those of the
    /// classes it marks are kept (and no others). `want` is indexed as the
    /// stream class's events (`EventData::event`); `None`: no exception.
    pub fn values_of(&mut self, want: Option<Arc<[bool]>>) {
        self.want = want;
        self.crossing.clear();
    }

    /// Releases the pages of read packets once this many bytes of them are
    /// waiting (default [`RELEASE_CHUNK`]): less memory per stream, more
    /// releases (each interrupts the process's other threads).
    pub fn release_every(&mut self, bytes: usize) {
        self.release_chunk = bytes.max(4096);
    }

    /// The file the current packet lies in.
    pub fn file(&self) -> Option<&Arc<StreamFile>> {
        self.file.as_ref()
    }

    /// For readers that decode a stream on another thread and present its
    /// messages here: makes this cursor show a packet read elsewhere (its
    /// file, properties and context values). The caller then fills
    /// [`StreamCursor::event`] for each event.
    pub fn present_packet(
        &mut self,
        file: &Arc<StreamFile>,
        info: &PacketInfo,
        context: &[Value],
        packets_read: u64,
    ) {
        // The previous packet's pages, touched again through this view
        // (strings, text), leave this process's memory as in `next`.
        if self.file.is_some() && self.packets_read > 0 {
            let start = self.packet.offset as usize;
            self.release_later(start, start + (self.packet.packet_bits / 8) as usize);
        }
        if !self.file.as_ref().is_some_and(|f| Arc::ptr_eq(f, file)) {
            self.file = Some(file.clone());
        }
        self.packet.clone_from(info);
        self.packet_context.clear();
        self.packet_context.extend_from_slice(context);
        self.packets_read = packets_read;
    }

    /// Within a packet larger than [`StreamCursor::release_every`]: hands
    /// what lies behind the next event to `release_later`, so that a
    /// stream holds about that much of its file, whatever its packet size.
    #[inline]
    fn release_behind(&mut self) {
        let at = self.pos / 8;
        if at >= self.behind + self.release_chunk as u64 {
            let from = self.behind.max(self.packet.offset);
            self.behind = at;
            self.release_later(from as usize, at as usize);
        }
    }

    /// Releases bytes `start..end` of the current file once read: ranges
    /// are gathered and released together once [`RELEASE_CHUNK`] bytes are
    /// waiting (or the cursor moves to another file), because each release
    /// interrupts the process's other threads (a TLB shootdown) and costs
    /// far more than reading a small packet.
    fn release_later(&mut self, start: usize, end: usize) {
        let Some(f) = &self.file else { return };
        match &mut self.unreleased {
            Some((pf, s, e)) if Arc::ptr_eq(pf, f) => {
                *s = (*s).min(start);
                *e = (*e).max(end);
            }
            other => {
                if let Some((pf, s, e)) = other.take() {
                    pf.release(s, e);
                }
                *other = Some((f.clone(), start, end));
            }
        }
        if let Some((pf, s, e)) = &self.unreleased {
            if e - s >= self.release_chunk {
                pf.release(*s, *e);
                self.unreleased = None;
            }
        }
    }

    /// Bit position in the current file of the next event (or of the end
    /// of the current packet's events): where the event just returned by
    /// [`StreamCursor::next`] ends.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Whether the current packet has events left to read and no notice
    /// is waiting: the next [`StreamCursor::next`] returns one of its
    /// events (a writer copying a packet's events stops when it is false).
    pub fn in_events(&self) -> bool {
        self.in_packet
            && self.pending.is_empty()
            && self.pos < self.packet.offset * 8 + self.packet.content_bits
    }

    /// The bytes of the file the current event lies in (for [`Value::Bytes`]).
    pub fn data(&self) -> &[u8] {
        self.file.as_deref().map_or(&[], |f| f.data())
    }

    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.file.as_deref().map(|f| f.path.as_path())
    }

    /// Advances to the next item; `Ok(None)` at the end of the stream.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(it) = self.pending.pop() {
                return Ok(Some(it));
            }
            if self.done {
                return Ok(None);
            }
            if self.in_packet {
                if self.pos < self.packet.offset * 8 + self.packet.content_bits {
                    self.release_behind();
                    let r = if self.skip_values {
                        self.read_event::<false>()
                    } else {
                        self.read_event::<true>()
                    };
                    if crate::guard::tripped() {
                        self.check_intact()?;
                    }
                    r?;
                    return Ok(Some(Item::Event));
                }
                self.in_packet = false;
                let start = self.behind.max(self.packet.offset) as usize;
                self.release_later(
                    start,
                    (self.packet.offset + self.packet.packet_bits / 8) as usize,
                );
                if let Some(p) = &self.progress {
                    p.fetch_add(self.packet.packet_bits / 8, Ordering::Relaxed);
                }
                self.prev_packet = Some(self.packet.clone());
                continue;
            }
            if !self.open_next_packet()? {
                self.done = true;
            }
        }
    }

    /// [`StreamCursor::next`] for a cursor set to [`StreamCursor::skip_values`]:
    /// the same items, with the decoding of an event inlined in the
    /// caller's loop (`reef check` spends most of its time here).
    #[inline(always)]
    pub fn next_skimmed(&mut self) -> Result<Option<Item>, Error> {
        if self.skip_values
            && self.in_packet
            && self.pending.is_empty()
            && self.pos < self.packet.offset * 8 + self.packet.content_bits
        {
            self.release_behind();
            let r = self.decode_event::<false>();
            if crate::guard::tripped() {
                self.check_intact()?;
            }
            r?;
            return Ok(Some(Item::Event));
        }
        self.next()
    }

    /// Moves the cursor, before its first [`StreamCursor::next`], to the
    /// first packet that can hold a message at or after `ns` nanoseconds
    /// from the origin: the first packet whose end time is at or after it.
    /// Packets are found with LTTng's `index/<file>.idx` files when present
    /// and valid, by walking the packet headers and contexts otherwise; no
    /// event is decoded. Streams without a clock or packet end times are
    /// left at their start. The packet before the target is read so that
    /// discarded-event counts stay relative to it.
    pub fn seek_ns(&mut self, ns: i64) -> Result<(), Error> {
        if self.packets_read > 0 || self.done {
            return Ok(());
        }
        let trace = self.trace.clone();
        let sp = &trace.class.streams[self.stream];
        let Some(ci) = sp.clock else { return Ok(()) };
        let clock = &trace.class.meta.clocks[ci];
        let before = |cycles: u64| clock.ns_from_origin(cycles).is_some_and(|t| t < ns);
        let files = &trace.sources[self.source].files;
        // The last packet seen before the target: (file index, offset).
        let mut prev: Option<(usize, u64)> = None;
        let mut target: Option<(usize, u64)> = None;
        'files: for (fi, f) in files.iter().enumerate() {
            if let Some(table) = f.packets.get() {
                // The packets found when the trace was opened.
                // Packets without an end time (their stream class has
                // none): left at the start, as below.
                if table.first().is_some_and(|&(_, end)| end == u64::MAX) {
                    return Ok(());
                }
                let k = table.partition_point(|&(_, end)| before(end));
                if k > 0 {
                    prev = Some((fi, table[k - 1].0));
                }
                if k < table.len() {
                    target = Some((fi, table[k].0));
                    break 'files;
                }
                continue;
            }
            if let Some(idx) = crate::index::PacketIndex::open(f) {
                let n = idx.len();
                let k = idx.partition_point(|e| e.ts_end.is_some_and(before));
                if k > 0 {
                    prev = Some((fi, idx.get(k - 1).offset));
                }
                if k < n {
                    target = Some((fi, idx.get(k).offset));
                    break 'files;
                }
                continue;
            }
            let mut off = 0u64;
            let len = f.end();
            while off < len {
                let (_, info, _) = read_packet(
                    &trace.class,
                    f,
                    off,
                    &mut PacketScratch {
                        st: &mut self.st,
                        ph_state: &mut self.ph_state,
                        scratch: &mut self.scratch,
                        context: &mut self.packet_context,
                    },
                )?;
                let next = off + info.packet_bits / 8;
                f.release(off as usize, next as usize);
                match info.ts_end {
                    Some(e) if before(e) => prev = Some((fi, off)),
                    Some(_) => {
                        target = Some((fi, off));
                        break 'files;
                    }
                    None => return Ok(()),
                }
                off = next;
            }
        }
        let (fi, off) = match target {
            Some(t) => t,
            None => {
                // Every packet ends before `ns`: nothing to read.
                self.done = true;
                return Ok(());
            }
        };
        if let Some((pfi, poff)) = prev {
            let (_, info, _) = read_packet(
                &trace.class,
                &files[pfi],
                poff,
                &mut PacketScratch {
                    st: &mut self.st,
                    ph_state: &mut self.ph_state,
                    scratch: &mut self.scratch,
                    context: &mut self.packet_context,
                },
            )?;
            // Only its header and context were read: drop the pages that
            // brought in (a server seeking again and again would otherwise
            // keep a little of every packet it ever sought near).
            let head = poff as usize;
            files[pfi].release(head, head + (info.packet_bits / 8).min(1 << 16) as usize);
            self.prev_packet = Some(info);
        }
        if let Some(p) = &self.progress {
            let skipped: u64 = files[..fi].iter().map(|f| f.data().len() as u64).sum();
            p.fetch_add(skipped + off, Ordering::Relaxed);
        }
        self.forget_ahead();
        self.file_idx = fi;
        self.file = Some(files[fi].clone());
        self.next_packet = off;
        Ok(())
    }

    /// Where the cursor stands, for [`StreamCursor::go_to`]. Notices
    /// waiting to be returned are not part of a place.
    pub fn place(&self) -> Place {
        if self.done {
            Place::Ended
        } else if self.in_packet {
            Place::At {
                file: self.file_idx as u32,
                packet: self.packet.offset,
                pos: self.pos,
                clock: self.st.clock,
            }
        } else if self.packets_read == 0 {
            Place::Unread
        } else {
            // Between packets: `next` opens the next one in the same call,
            // so only a cursor that failed stops here.
            Place::Ended
        }
    }

    /// Moves a cursor that has read nothing yet (or was only sought) to
    /// `place`, taken by [`StreamCursor::place`] on a cursor of the same
    /// stream: the packet there is read again (header and context), the
    /// next item is the event at the place. No notice of discarded events
    /// or packets comes before it.
    pub fn go_to(&mut self, place: &Place) -> Result<(), Error> {
        match *place {
            Place::Unread => Ok(()),
            Place::Ended => {
                self.done = true;
                Ok(())
            }
            Place::At {
                file,
                packet,
                pos,
                clock,
            } => {
                let f = self.trace.sources[self.source]
                    .files
                    .get(file as usize)
                    .cloned()
                    .ok_or_else(|| self.err_at(packet, format!("no stream file {file}")))?;
                self.forget_ahead();
                self.file_idx = file as usize;
                self.file = Some(f);
                self.next_packet = packet;
                self.prev_packet = None;
                self.in_packet = false;
                self.done = false;
                if !self.open_next_packet()? {
                    return Err(self.err_at(packet, "no packet at this offset".into()));
                }
                let end = self.packet.offset * 8 + self.packet.content_bits;
                if pos < self.pos || pos > end {
                    return Err(
                        self.err_at(packet, format!("bit {pos} is outside the packet's events"))
                    );
                }
                self.pending.clear();
                self.pos = pos;
                self.st.clock = clock;
                Ok(())
            }
        }
    }

    /// Time of the beginning of this stream's first packet, in cycles.
    pub fn first_packet_begin(&mut self) -> Result<Option<u64>, Error> {
        let trace = self.trace.clone();
        let Some(f) = trace.sources[self.source].files.first() else {
            return Ok(None);
        };
        let (_, info, _) = read_packet(
            &trace.class,
            f,
            0,
            &mut PacketScratch {
                st: &mut self.st,
                ph_state: &mut self.ph_state,
                scratch: &mut self.scratch,
                context: &mut self.packet_context,
            },
        )?;
        Ok(info.ts_begin)
    }

    fn err_at(&self, offset: u64, msg: String) -> Error {
        Error::Stream {
            path: self
                .file_path()
                .map(|p| p.to_path_buf())
                .unwrap_or_default(),
            offset,
            msg,
        }
    }

    /// Reads the next packet's header and context. Returns false at the end
    /// of the stream.
    fn open_next_packet(&mut self) -> Result<bool, Error> {
        let sources = &self.trace.sources[self.source];
        loop {
            if self.file.is_none() {
                match sources.files.get(self.file_idx) {
                    Some(f) => {
                        self.file = Some(f.clone());
                        self.next_packet = 0;
                    }
                    None => return Ok(false),
                }
            }
            let len = self.file.as_deref().map_or(0, |f| f.end());
            if self.next_packet >= len {
                // Read to its end: a file truncated or written over while
                // it was read is reported, not passed over.
                if let Some(f) = &self.file {
                    f.changed()?;
                }
                self.file = None;
                self.file_idx += 1;
                continue;
            }
            break;
        }
        let file = self.file.clone().unwrap_or_else(|| unreachable!());
        let off = self.next_packet;
        self.populate_ahead(&file, off);
        let trace = self.trace.clone();
        let clock_before = self.st.clock;
        let read = read_packet(
            &trace.class,
            &file,
            off,
            &mut PacketScratch {
                st: &mut self.st,
                ph_state: &mut self.ph_state,
                scratch: &mut self.scratch,
                context: &mut self.packet_context,
            },
        );
        file.check_intact(off)?;
        let (stream, info, events_at) = read?;
        if stream != self.stream {
            return Err(self.err_at(
                off,
                "packet belongs to another stream class than the stream's first packet".into(),
            ));
        }
        let cur_pos = events_at;
        let packet_bits = info.packet_bits;
        self.st.clock = info.ts_begin.unwrap_or(clock_before);
        self.queue_notices(&info);
        self.packet = info;
        self.pos = cur_pos;
        self.behind = off;
        self.next_packet = off + packet_bits / 8;
        self.in_packet = true;
        self.packets_read += 1;
        Ok(true)
    }

    /// Maps the pages of `file` from `off`, where the next packet begins,
    /// a release chunk ahead: one call for the chunk rather than a page
    /// fault per 64 KiB of it (Linux 5.14 and later). Memory stays bounded
    /// by the streams: a chunk ahead, as one waits behind to be released.
    fn populate_ahead(&mut self, file: &Arc<StreamFile>, off: u64) {
        let chunk = self.release_chunk as u64;
        let upto = match &self.populated {
            Some((f, e)) if Arc::ptr_eq(f, file) && *e >= off => *e,
            _ => off,
        };
        // (a chunk at a time: once less than half of one lies ahead)
        if upto >= off.saturating_add(chunk / 2) {
            return;
        }
        let end = off.saturating_add(chunk).min(file.end());
        if end > upto {
            file.populate(upto as usize, end as usize);
        }
        self.populated = Some((file.clone(), end.max(upto)));
    }

    /// Releases the pages mapped ahead of the next packet (the cursor
    /// moves elsewhere, or stops).
    fn forget_ahead(&mut self) {
        if let Some((f, e)) = self.populated.take() {
            let from = match self.in_packet {
                true => self.packet.offset + self.packet.packet_bits / 8,
                false => self.next_packet,
            };
            if let Some(cur) = &self.file {
                if Arc::ptr_eq(cur, &f) && e > from {
                    f.release_all(from as usize, e as usize);
                }
            }
        }
    }

    /// Discarded events / packets implied by the step from the previous
    /// packet to `cur`, returned before `cur`'s events (events first, as
    /// babeltrace2 orders them).
    fn queue_notices(&mut self, cur: &PacketInfo) {
        let prev = self.prev_packet.as_ref();
        let mut notices = Vec::new();
        if let Some(c) = cur.events_discarded {
            match prev {
                // The first packet of a stream: the counter may cover events
                // lost before it, in an unknown amount.
                None if c > 0 => notices.push(Item::DiscardedEvents {
                    count: None,
                    begin: cur.ts_begin,
                    end: cur.ts_end,
                }),
                Some(p) => {
                    let pc = p.events_discarded.unwrap_or(0);
                    if c > pc {
                        notices.push(Item::DiscardedEvents {
                            count: Some(c - pc),
                            begin: p.ts_end,
                            end: cur.ts_end,
                        });
                    }
                }
                None => {}
            }
        }
        if let (Some(p), Some(c)) = (prev.and_then(|p| p.seq_num), cur.seq_num) {
            if c > p.wrapping_add(1) {
                notices.push(Item::DiscardedPackets {
                    count: c - p - 1,
                    begin: prev.and_then(|p| p.ts_end),
                    end: cur.ts_begin,
                });
            }
        }
        // `pending` is popped from the back.
        notices.reverse();
        self.pending.extend(notices);
    }

    /// The truncation of the current file, if reading it found one
    /// ([`crate::guard`]): reported at the current event.
    #[cold]
    fn check_intact(&self) -> Result<(), Error> {
        match &self.file {
            Some(f) => f.check_intact(self.event.offset),
            None => Ok(()),
        }
    }

    /// Decodes the event at `self.pos`; with `KEEP` false its values are
    /// not kept.
    #[inline(never)]
    fn read_event<const KEEP: bool>(&mut self) -> Result<(), Error> {
        self.decode_event::<KEEP>()
    }

    /// What decoding an event at `self.pos` borrows, field by field (no
    /// reference count changes per event).
    #[inline(always)]
    fn event_parts(&mut self) -> EventParts<'_> {
        let StreamCursor {
            trace,
            file,
            st,
            event,
            want,
            ..
        } = self;
        let file = file.as_deref().unwrap_or_else(|| unreachable!());
        EventParts {
            class: &trace.class,
            sp: &trace.class.streams[self.stream],
            file,
            st,
            event,
            want: want.as_deref(),
            cur: packet_cursor(file.data(), &self.packet, self.pos),
        }
    }

    #[inline(always)]
    fn decode_event<const KEEP: bool>(&mut self) -> Result<(), Error> {
        let mut p = self.event_parts();
        p.event.offset = p.cur.pos / 8;
        let (idx, body) = p.decode::<KEEP>()?;
        p.event.body = body / 8;
        p.event.end = p.cur.pos / 8;
        let EventParts {
            sp,
            st,
            event,
            cur,
            want,
            ..
        } = p;
        if !KEEP && !want.is_some_and(|w| w.get(idx).copied().unwrap_or(false)) {
            event.values.clear();
            event.bounds = [0; 4];
        }
        event.event = idx;
        event.ts = sp.clock.map(|_| st.clock);
        self.pos = cur.pos;
        Ok(())
    }

    /// For a cursor set to [`StreamCursor::skip_values`], between
    /// [`StreamCursor::next_skimmed`] calls: decodes and checks the events
    /// left in the current packet, as `next_skimmed` would, while each one
    /// has a time (in cycles) of at least `*last` and within `lo..=hi`;
    /// counts them in `*n` and leaves `*last` at the last one's time. Stops
    /// at the end of the packet, or before an event that does not meet
    /// these conditions (left for `next_skimmed`, as are packets and
    /// notices). Meant for readers that only need to know events are in
    /// order (`reef check`): no per-event item, one loop per packet.
    pub fn skim_run(&mut self, last: &mut u64, lo: u64, hi: u64, n: &mut u64) -> Result<(), Error> {
        if !(self.skip_values && self.in_packet && self.pending.is_empty()) {
            return Ok(());
        }
        self.release_behind();
        let mut crossing = std::mem::take(&mut self.crossing);
        let mut p = self.event_parts();
        if p.sp.clock.is_none() {
            self.crossing = crossing;
            return Ok(());
        }
        let head = p.crossing_head();
        let mut done = 0u64;
        let mut result = Ok(());
        while p.cur.pos < p.cur.end {
            let (start, clock) = (p.cur.pos, p.st.clock);
            // The event's class, time and values are not wanted: only its
            // time is, from the clock.
            match head.and_then(|h| p.cross(h, &crossing)) {
                Some(_) => {}
                None => match p.decode::<false>() {
                    Ok((idx, _)) => p.learn(head, &mut crossing, idx),
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                },
            }
            if crate::guard::tripped() && p.file.faulted() {
                p.cur.pos = start;
                p.st.clock = clock;
                result = p.file.check_intact(start / 8);
                break;
            }
            let cy = p.st.clock;
            if cy < *last || cy < lo || cy > hi {
                // Decoded again by `next_skimmed`, from the same state.
                p.cur.pos = start;
                p.st.clock = clock;
                break;
            }
            *last = cy;
            done += 1;
        }
        *n += done;
        self.pos = p.cur.pos;
        self.crossing = crossing;
        result
    }
}

impl StreamCursor {
    /// [`StreamCursor::skim_run`] for readers that need each event's
    /// class: calls `f(class, cycles)` (class: index into the stream
    /// class's events) for each event of the current packet decoded while
    /// its time is at least `*last` and at most `hi`, and leaves `*last`
    /// at the last one's time. An event whose class's values are wanted
    /// ([`StreamCursor::values_of`]) is not passed to `f`: the cursor
    /// stops *at* it, decoded (its values, class and time in
    /// [`StreamCursor::event`], as [`StreamCursor::next_skimmed`] would
    /// have returned it), and `Ok(true)` says so. Otherwise stops at the
    /// end of the packet or before an event that does not meet these
    /// conditions (left for `next_skimmed`) with `Ok(false)`. The cursor
    /// must be set to [`StreamCursor::skip_values`].
    pub fn skim_each(
        &mut self,
        last: &mut u64,
        hi: u64,
        mut f: impl FnMut(usize, u64),
    ) -> Result<bool, Error> {
        self.skim_bodies(last, hi, usize::MAX, |e| f(e.class, e.cycles))
    }

    /// [`StreamCursor::skim_each`] for readers that also read fields of
    /// the events passed to `f`, in their bytes ([`Skimmed::body`] and
    /// [`crate::access::RawField`]): the bytes of the current packet, in
    /// [`StreamCursor::data`], until the cursor leaves it. At most `max`
    /// events are given to `f` (the cursor then stands before the next).
    pub fn skim_bodies(
        &mut self,
        last: &mut u64,
        hi: u64,
        max: usize,
        mut f: impl FnMut(Skimmed),
    ) -> Result<bool, Error> {
        if !(self.skip_values && self.in_packet && self.pending.is_empty()) {
            return Ok(false);
        }
        self.release_behind();
        let mut crossing = std::mem::take(&mut self.crossing);
        let mut p = self.event_parts();
        if p.sp.clock.is_none() {
            self.crossing = crossing;
            return Ok(false);
        }
        let head = p.crossing_head();
        let want = p.want;
        let mut result = Ok(false);
        let mut left = max;
        while p.cur.pos < p.cur.end && left > 0 {
            left -= 1;
            let (start, clock) = (p.cur.pos, p.st.clock);
            // Decoded once: the values of wanted classes are kept.
            let (idx, body) = match head.and_then(|h| p.cross(h, &crossing)) {
                Some(crossed) => crossed,
                None => match p.decode::<false>() {
                    Ok((idx, body)) => {
                        p.learn(head, &mut crossing, idx);
                        (idx, body)
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                },
            };
            if crate::guard::tripped() && p.file.faulted() {
                p.cur.pos = start;
                p.st.clock = clock;
                result = p.file.check_intact(start / 8).map(|_| false);
                break;
            }
            let cy = p.st.clock;
            if cy < *last || cy > hi {
                // Decoded again by `next_skimmed`, from the same state.
                p.cur.pos = start;
                p.st.clock = clock;
                break;
            }
            *last = cy;
            if want.is_some_and(|w| w.get(idx) == Some(&true)) {
                p.event.offset = start / 8;
                p.event.body = body / 8;
                p.event.end = p.cur.pos / 8;
                p.event.event = idx;
                p.event.ts = Some(cy);
                result = Ok(true);
                break;
            }
            f(Skimmed {
                class: idx,
                cycles: cy,
                offset: start / 8,
                body: crate::access::RawBody {
                    body: (body / 8) as usize,
                    end: (p.cur.pos / 8) as usize,
                    packet_mod8: ((p.cur.base / 8) & 7) as u8,
                },
            });
        }
        self.pos = p.cur.pos;
        self.crossing = crossing;
        result
    }
}

/// An event [`StreamCursor::skim_bodies`] crossed.
#[derive(Debug, Clone, Copy)]
pub struct Skimmed {
    /// Index into the stream class's events.
    pub class: usize,
    /// Its time, in cycles of the stream's clock.
    pub cycles: u64,
    /// Byte offset of the event in its file.
    pub offset: u64,
    /// Where its body lies in the packet's file.
    pub body: crate::access::RawBody,
}

/// The parts of a [`StreamCursor`] that decoding its current event uses.
struct EventParts<'a> {
    class: &'a TraceClass,
    sp: &'a crate::trace::StreamPlans,
    file: &'a StreamFile,
    st: &'a mut State,
    event: &'a mut EventData,
    want: Option<&'a [bool]>,
    cur: Cursor<'a>,
}

impl EventParts<'_> {
    /// The stream's event header when its events can be crossed by their
    /// id ([`Crossing`]).
    #[inline(always)]
    fn crossing_head(&self) -> Option<Head> {
        if !self.sp.event_common_context.prog.ops.is_empty() {
            return None;
        }
        let prog = &self.sp.event_header.prog;
        match (prog.id_ts, prog.tagged) {
            (Some(shape), _) => Some(Head::IdTs(shape)),
            (None, Some(h)) => Some(Head::Tagged(h)),
            (None, None) => None,
        }
    }

    /// Crosses the event at the cursor when its class is one of
    /// `crossing`, as the decoder would: the clock, the event id's meaning
    /// and the header's slot updated, the cursor after its body. Returns
    /// its class and the bit offset of its body; `None` (nothing changed):
    /// the decoder's way.
    #[inline(always)]
    fn cross(&mut self, head: Head, crossing: &[Crossing]) -> Option<(usize, u64)> {
        match head {
            Head::IdTs(shape) => self.cross_id_ts(shape, crossing),
            Head::Tagged(h) => self.cross_tagged(h, crossing),
        }
    }

    /// [`EventParts::cross`] for a header of shape `(id, ts)` bytes.
    #[inline(always)]
    fn cross_id_ts(&mut self, (id, ts): (u32, u32), crossing: &[Crossing]) -> Option<(usize, u64)> {
        let cur = &self.cur;
        let bits = u64::from(id + ts) * 8;
        if !(cur.pos | cur.base).is_multiple_of(8) || cur.pos > cur.end || cur.end - cur.pos < bits
        {
            return None;
        }
        prefetch(cur.data, (cur.pos / 8) as usize + PREFETCH_AHEAD);
        let b = (cur.pos / 8) as usize;
        let word = |at: usize| -> Option<u64> {
            let w = cur.data.get(at..)?.first_chunk::<8>()?;
            Some(u64::from_le_bytes(*w))
        };
        let mask = |bytes: u32| u64::MAX >> (64 - 8 * bytes);
        let v_id = word(b)? & mask(id);
        let &(idx, quick) = crossing.get(v_id as usize)?;
        if idx == u32::MAX {
            return None;
        }
        let v_ts = word(b + id as usize)? & mask(ts);
        let body = cur.pos + bits;
        let mut after = Cursor { pos: body, ..*cur };
        if !self.cross_body(idx, quick, &mut after) {
            return None;
        }
        self.st.meanings[Meaning::EventId as usize] = Some(v_id);
        self.st.update_clock(v_ts, ts * 8);
        self.event.values.clear();
        self.cur.pos = after.pos;
        Some((idx as usize, body))
    }

    /// [`EventParts::cross`] for a tagged header (LTTng's compact and
    /// extended ones), read by [`crate::prog::tagged`], then undone when
    /// the class is not one of `crossing`.
    #[inline(always)]
    fn cross_tagged(&mut self, h: Tagged, crossing: &[Crossing]) -> Option<(usize, u64)> {
        let saved = (
            self.st.clock,
            self.st.slots[h.slot as usize],
            self.st.meanings[Meaning::EventId as usize],
        );
        prefetch(self.cur.data, (self.cur.pos / 8) as usize + PREFETCH_AHEAD);
        let mut after = self.cur;
        let id = crate::prog::tagged::<false>(h, &mut after, self.st, &mut self.event.values)?;
        if let Some(&(idx, quick)) = crossing.get(id as usize) {
            let body = after.pos;
            if idx != u32::MAX && self.cross_body(idx, quick, &mut after) {
                self.event.values.clear();
                self.cur.pos = after.pos;
                return Some((idx as usize, body));
            }
        }
        (
            self.st.clock,
            self.st.slots[h.slot as usize],
            self.st.meanings[Meaning::EventId as usize],
        ) = saved;
        None
    }

    /// Crosses the body (context and payload) of an event of class
    /// `idx`: by its quick skim, else by its class's skim.
    #[inline(always)]
    fn cross_body(&self, idx: u32, quick: QuickSkim, after: &mut Cursor) -> bool {
        if quick != QuickSkim::NONE {
            return quick.cross(after);
        }
        self.sp
            .compiled(&self.class.meta, idx as usize)
            .is_ok_and(|ep| ep.skim.as_ref().is_some_and(|s| s.cross(after)))
    }

    /// After the decoder read an event of class `idx` (the stream's
    /// header: `head`): notes its class in `crossing` when its events
    /// can be crossed by their id.
    #[inline(always)]
    fn learn(&self, head: Option<Head>, crossing: &mut Vec<Crossing>, idx: usize) {
        let Some(id) = head.and(self.st.meanings[Meaning::EventId as usize]) else {
            return;
        };
        if id >= CROSSING_IDS || crossing.get(id as usize).is_some_and(|c| c.0 != u32::MAX) {
            return;
        }
        if self.want.is_some_and(|w| w.get(idx) == Some(&true)) {
            return;
        }
        let Ok(ep) = self.sp.compiled(&self.class.meta, idx) else {
            return;
        };
        if ep.quick == QuickSkim::NONE && ep.skim.is_none() {
            return;
        }
        if crossing.len() <= id as usize {
            crossing.resize(id as usize + 1, UNKNOWN);
        }
        crossing[id as usize] = (idx as u32, ep.quick);
    }

    /// [`decode_one`] at the cursor, into the event's values and bounds.
    #[inline(always)]
    fn decode<const KEEP: bool>(&mut self) -> Result<(usize, u64), Error> {
        decode_one::<KEEP>(
            self.class,
            self.sp,
            &self.file.path,
            self.st,
            &mut self.event.values,
            &mut self.event.bounds,
            &mut self.cur,
            self.want,
        )
    }
}

/// A cursor at bit `pos` of `packet`'s content in `data`.
#[inline(always)]
fn packet_cursor<'d>(data: &'d [u8], packet: &PacketInfo, pos: u64) -> Cursor<'d> {
    Cursor {
        data,
        base: packet.offset * 8,
        pos,
        end: packet.offset * 8 + packet.content_bits,
    }
}

/// Decodes the event at `cur` (its four scopes) into `values`, with the
/// scope bounds in `bounds`, and returns its class (index into
/// `sp.events`) and the bit offset of its body (specific context). With `KEEP` false the values are not kept: `values` is
/// only scratch and `bounds` is left as it is. With `want`, the context
/// and payload values of the classes it does not mark are not kept.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn decode_one<const KEEP: bool>(
    class: &TraceClass,
    sp: &crate::trace::StreamPlans,
    path: &std::path::Path,
    st: &mut State,
    values: &mut Vec<Value>,
    bounds: &mut [usize; 4],
    cur: &mut Cursor,
    want: Option<&[bool]>,
) -> Result<(usize, u64), Error> {
    let start = cur.pos;
    let packet_offset = cur.base / 8;
    prefetch(cur.data, (start / 8) as usize + PREFETCH_AHEAD);
    let decode_err = |e| Error::Decode {
        path: path.to_path_buf(),
        packet_offset,
        err: e,
    };
    values.clear();
    st.meanings[Meaning::EventId as usize] = None;
    st.reset_budget();
    let header = &sp.event_header;
    let prog = &header.prog;
    let read = match (prog.id_ts, prog.tagged) {
        (Some(shape), _) => crate::prog::id_ts::<KEEP>(shape, cur, st, values).map(Some),
        (None, Some(h)) => crate::prog::tagged::<KEEP>(h, cur, st, values).map(Some),
        (None, None) if prog.all_ints => crate::prog::ints::<KEEP>(&prog.ops, cur, st, values),
        (None, None) => None,
    };
    if read.is_none() {
        exec::<KEEP>(header, cur, st, values).map_err(decode_err)?;
    }
    if KEEP {
        bounds[0] = values.len();
    }
    let common = &sp.event_common_context;
    if !common.prog.ops.is_empty() {
        exec::<KEEP>(common, cur, st, values).map_err(decode_err)?;
    }
    if KEEP {
        bounds[1] = values.len();
    }
    let id = match read {
        // Read from the header, unless the common context sets it again.
        Some(id) if common.prog.ops.is_empty() => id,
        _ => st.meaning(Meaning::EventId),
    };
    let idx = match id {
        Some(id) => sp.event_by_id(id).ok_or_else(|| Error::Stream {
            path: path.to_path_buf(),
            offset: start / 8,
            msg: format!(
                "event id {id} is not declared in stream class {}",
                class.meta.streams[sp.class].id
            ),
        })?,
        None if sp.events.len() == 1 => 0,
        None => {
            return Err(Error::Stream {
                path: path.to_path_buf(),
                offset: start / 8,
                msg: if sp.events.is_empty() {
                    "event found in a stream class that declares no event".into()
                } else {
                    "event header has no id but the stream class declares several events".into()
                },
            })
        }
    };
    let ep = sp.compiled(&class.meta, idx).map_err(|msg| Error::Stream {
        path: path.to_path_buf(),
        offset: start / 8,
        msg: format!(
            "event class '{}': {msg}",
            class.meta.streams[sp.class].events[sp.events[idx].class].name
        ),
    })?;
    let body = cur.pos;
    // Whether this class's context and payload values are kept: with
    // `KEEP` unless `want` leaves it out, without only if `want` marks it.
    let marked = |dflt: bool| want.map_or(dflt, |w| w.get(idx).copied().unwrap_or(dflt));
    let keep_body = if KEEP {
        marked(true)
    } else {
        want.is_some() && marked(false)
    };
    if keep_body && !KEEP {
        values.clear();
        bounds[0] = 0;
        bounds[1] = 0;
    }
    let skimmed =
        !keep_body && (ep.quick.cross(cur) || ep.skim.as_ref().is_some_and(|s| s.cross(cur)));
    if !skimmed {
        if keep_body {
            exec::<true>(&ep.context, cur, st, values).map_err(decode_err)?;
            bounds[2] = values.len();
            exec::<true>(&ep.payload, cur, st, values).map_err(decode_err)?;
            bounds[3] = values.len();
        } else {
            let at = values.len();
            exec::<false>(&ep.context, cur, st, values).map_err(decode_err)?;
            exec::<false>(&ep.payload, cur, st, values).map_err(decode_err)?;
            values.truncate(at);
        }
    }
    if KEEP && !keep_body {
        bounds[2] = values.len();
        bounds[3] = values.len();
    }
    if cur.pos == start {
        return Err(Error::Stream {
            path: path.to_path_buf(),
            offset: start / 8,
            msg: "event occupies no bits: the packet would never end".into(),
        });
    }
    Ok((idx, body))
}

/// How far ahead of the event being decoded its stream's bytes are
/// prefetched: the hardware prefetcher stops at each 4 KiB page.
const PREFETCH_AHEAD: usize = 512;

/// Asks for the cache line holding `data[at]` (nothing if out of range).
#[inline(always)]
fn prefetch(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = data.get(at) {
        // SAFETY: a prefetch only hints the cache; the address is inside
        // `data`, and prefetching never faults anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast::<i8>(),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// Buffers and states that [`read_packet`] decodes into.
pub struct PacketScratch<'a> {
    /// The stream-level state (slots, meanings, clock).
    pub st: &'a mut State,
    /// The state for the trace-level packet header decode.
    pub ph_state: &'a mut State,
    pub scratch: &'a mut Vec<Value>,
    /// Receives the packet context's values.
    pub context: &'a mut Vec<Value>,
}

/// Reads and validates the header and context of the packet at byte `off`
/// of `file`. Returns the stream class (index into `class.streams`), the
/// packet's properties, and the bit offset where its first event starts.
///
/// The packet a file's cut falls in ([`StreamFile::cut`]) is given as
/// what is left of it: its size is what the file holds, its content
/// ends where its last complete event ends.
pub fn read_packet(
    class: &TraceClass,
    file: &StreamFile,
    off: u64,
    s: &mut PacketScratch,
) -> Result<(usize, PacketInfo, u64), Error> {
    let data = file.data();
    let len = data.len() as u64;
    let cut = file
        .cut
        .get()
        .filter(|c| c.packet == off)
        .and_then(|c| c.events_end);
    let (stream, mut info, at) =
        read_packet_in(class, data, 0, len, &file.path, off, s, cut.is_some())?;
    if let Some(end) = cut {
        info.packet_bits = (len - off) * 8;
        info.content_bits = end.saturating_sub(off * 8).max(at - off * 8);
    }
    Ok((stream, info, at))
}

/// [`read_packet`] over `data`, one packet's bytes (a packet being
/// written, checked before it is): offsets are relative to `data`, `path`
/// names it in errors.
pub fn read_packet_bytes(
    class: &TraceClass,
    data: &[u8],
    path: &std::path::Path,
    s: &mut PacketScratch,
) -> Result<(usize, PacketInfo, u64), Error> {
    read_packet_in(class, data, 0, data.len() as u64, path, 0, s, false)
}

/// Decodes the event at `cur` (a cursor over a packet of stream class
/// `stream`, base at the packet's start) with the state `st` that its
/// packet's header and context (and the events before it) left: its
/// values (header, common context, specific context, payload, split by
/// `bounds`) and its class (index into the stream class's events). For
/// writers that check an event they placed decodes as the original did.
#[allow(clippy::too_many_arguments)]
pub fn decode_event_at(
    class: &TraceClass,
    stream: usize,
    path: &std::path::Path,
    cur: &mut Cursor,
    st: &mut State,
    values: &mut Vec<Value>,
    bounds: &mut [usize; 4],
) -> Result<usize, Error> {
    let sp = &class.streams[stream];
    decode_one::<true>(class, sp, path, st, values, bounds, cur, None).map(|(i, _)| i)
}

/// [`read_packet`] over `data`, the bytes of a file of `file_len` bytes
/// from its offset `data_start` on (all of them, or only some: a read that
/// fails for want of bytes may succeed over the whole file, one that
/// succeeds gives what the whole file would). Offsets in errors are
/// relative to `data_start`; the returned ones are the file's. With
/// `cut_ok`, a packet larger than what is left of the file is no error:
/// its declared sizes are returned as they are (the caller sees that the
/// file is cut inside it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_packet_in(
    class: &TraceClass,
    data: &[u8],
    data_start: u64,
    file_len: u64,
    path: &std::path::Path,
    off: u64,
    s: &mut PacketScratch,
    cut_ok: bool,
) -> Result<(usize, PacketInfo, u64), Error> {
    let data_bits = data.len() as u64 * 8;
    let rel = (off - data_start) * 8;
    let err_at = |msg: String| Error::Stream {
        path: path.to_path_buf(),
        offset: off,
        msg,
    };
    let decode_err = |e| Error::Decode {
        path: path.to_path_buf(),
        packet_offset: off,
        err: e,
    };

    // The trace-level header first, to learn the stream class.
    let mut cur = Cursor {
        data,
        base: rel,
        pos: rel,
        end: data_bits,
    };
    s.scratch.clear();
    s.ph_state.meanings = Default::default();
    s.ph_state.reset_budget();
    s.st.reset_budget();
    decode_scope(&class.packet_header, &mut cur, s.ph_state, s.scratch).map_err(decode_err)?;
    if let Some(m) = s.ph_state.meaning(Meaning::Magic) {
        if m != CTF_MAGIC {
            return Err(err_at(format!(
                "bad packet magic number {m:#x}, expected {CTF_MAGIC:#x}"
            )));
        }
    }
    // babeltrace2 does not compare the packet header's UUID with the
    // metadata's (Babeltrace's own intersection traces differ), so neither
    // does reef.
    let stream = stream_of_packet(class, s.ph_state).map_err(err_at)?;
    let sp = &class.streams[stream];

    // The stream-level header + context, with this stream's slots.
    let clock_before = s.st.clock;
    s.st.meanings = Default::default();
    let mut cur = Cursor {
        data,
        base: rel,
        pos: rel,
        end: data_bits,
    };
    s.scratch.clear();
    decode_scope(&sp.packet_header, &mut cur, s.st, s.scratch).map_err(decode_err)?;
    s.context.clear();
    decode_scope(&sp.packet_context, &mut cur, s.st, s.context).map_err(decode_err)?;
    s.st.clock = clock_before;

    let remaining = (file_len - off) * 8;
    let packet_bits = s.st.meaning(Meaning::PacketSize).unwrap_or(remaining);
    let content_bits = s.st.meaning(Meaning::ContentSize).unwrap_or(packet_bits);
    if packet_bits == 0 || !packet_bits.is_multiple_of(8) {
        return Err(err_at(format!(
            "packet size {packet_bits} bits is not a positive multiple of 8"
        )));
    }
    if packet_bits > remaining && !cut_ok {
        return Err(err_at(format!(
            "packet size {packet_bits} bits exceeds the {remaining} bits left in the file"
        )));
    }
    if content_bits > packet_bits {
        return Err(err_at(format!(
            "content size {content_bits} bits exceeds packet size {packet_bits} bits"
        )));
    }
    if cur.pos - rel > content_bits {
        return Err(err_at(format!(
            "packet header and context take {} bits, more than the content size {content_bits}",
            cur.pos - rel
        )));
    }
    let info = PacketInfo {
        offset: off,
        packet_bits,
        content_bits,
        ts_begin: s.st.meaning(Meaning::TimestampBegin),
        ts_end: s.st.meaning(Meaning::TimestampEnd),
        events_discarded: s.st.meaning(Meaning::EventsDiscarded),
        seq_num: s.st.meaning(Meaning::PacketSeqNum),
        stream_instance_id: s.st.meaning(Meaning::StreamInstanceId),
    };
    Ok((stream, info, cur.pos + data_start * 8))
}

/// Whether `e`, met while decoding bytes that the end of their file cuts,
/// can be that cut: the data ran out (a field, a string or an array needs
/// bytes past the end), as opposed to bytes that are wrong in themselves.
pub(crate) fn is_cut_error(e: &Error) -> bool {
    use crate::decode::DecodeErrorKind as K;
    matches!(
        e,
        Error::Decode { err, .. } if matches!(
            err.kind,
            K::Truncated { .. } | K::UnterminatedString | K::LengthTooLarge { .. }
        )
    )
}

/// What is left of a packet the end of its file cuts: its events decoded
/// from bit `events_at` while they end before bit `end` (the file's end,
/// or the packet's content end when that comes first).
pub(crate) struct CompleteEvents {
    /// Bit (of the file) where the last complete event ends (`events_at`
    /// when there is none).
    pub end: u64,
    /// Complete events.
    pub count: u64,
    /// Time of the last one (cycles), when the stream has a clock and
    /// the packet its beginning time.
    pub last_ts: Option<u64>,
    /// The error decoding the next event gave, if one stopped the walk.
    pub stop: Option<Error>,
}

/// Decodes the events of `info`, a packet of stream class `stream` in
/// `file` whose header and context were just read into `st` (see
/// [`CompleteEvents`]).
pub(crate) fn complete_events(
    class: &TraceClass,
    stream: usize,
    file: &StreamFile,
    info: &PacketInfo,
    events_at: u64,
    end: u64,
    st: &mut State,
) -> CompleteEvents {
    let sp = &class.streams[stream];
    let mut cur = Cursor {
        data: file.data(),
        base: info.offset * 8,
        pos: events_at,
        end,
    };
    // As a cursor does at a packet's beginning; without a beginning time
    // the clock would continue the previous packet's, unknown here.
    st.clock = info.ts_begin.unwrap_or(0);
    let timed = sp.clock.is_some() && info.ts_begin.is_some();
    let (mut values, mut bounds) = (Vec::new(), [0usize; 4]);
    let mut done = CompleteEvents {
        end: events_at,
        count: 0,
        last_ts: None,
        stop: None,
    };
    while cur.pos < end {
        match decode_one::<false>(
            class,
            sp,
            &file.path,
            st,
            &mut values,
            &mut bounds,
            &mut cur,
            None,
        ) {
            Ok(_) => {
                done.end = cur.pos;
                done.count += 1;
                done.last_ts = timed.then_some(st.clock);
            }
            Err(e) => {
                done.stop = Some(e);
                break;
            }
        }
    }
    done
}
