//! Reading the streams of kernel traces for the model: each stream's
//! events decoded a packet at a time into small records (time, class,
//! where the body lies), the records of all streams merged in time order,
//! and each one turned into an [`Event`] from the few fields its class's
//! kind reads.
//!
//! The events of a class are read in their bytes ([`ClassInfo`],
//! `reef_ctf::access::RawField`) when its body has a skim and the fields
//! the model reads lie at fixed places; a class the model ignores is only
//! crossed. Other classes are decoded with their values, one at a time
//! (a record of such a class ends its stream's batch: the cursor holds its
//! values). The messages, their order, the errors and where they stop the
//! reading are those of [`reef_read::Source`] (babeltrace2's order); this
//! is its merge without a filter, for streams that all have a clock.
//!
//! With two CPUs or more, on large traces ([`pipelined`]), a second
//! thread decodes the streams into batches of records ahead of the merge
//! (eight per stream in flight, handed back and forth through channels),
//! while the calling thread merges them and runs the model. The decoding
//! thread also makes the [`Event`]s of most batches (their texts point
//! into the stream files, which outlive the reading), as many as it can
//! without keeping the merge waiting; the merging thread makes the
//! others, reading the fields through a view of each stream
//! ([`StreamCursor::present_packet`]) that shows the packet of the batch
//! it reads and, for an event read with its values, those values. The
//! result is the same as decoding on the calling thread (`tests/fold.rs`
//! and `tests/values.rs` run both).
//!
//! Events of the classes the model ignores only move the analysed
//! period's end. Once the callback says in which times that holds
//! ([`Next::Go`]), such events are not handed over: the one the merge
//! picks is only noted, and those that follow it in its stream's batch
//! (monotonic, not the batch's last) are folded ahead of the merge, so
//! that they never enter it. The latest of them that the merge would have
//! reached is handed over when the reading stops (at its end, at the
//! end of the range, or on an error: then only those before the message
//! where it stops). A message out of order is found against its own
//! stream's previous one, which is the one the merge gave just before it
//! (`tests/fold.rs` compares the result with `Source`'s on whole, ranged,
//! cut and garbled traces, with and without the decoding thread).

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use reef_ctf::access::{FieldLoc, RawBody};
use reef_ctf::trace::StreamFile;
use reef_ctf::{EventData, Item, PacketInfo, StreamCursor};
use reef_iter::ClockConv;
use reef_read::Streams;

use crate::event::{
    event_made, event_of, packet_cpu_at, packet_cpu_field, ClassInfo, Event, Interest,
};

/// What a [`Rec`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// An event whose fields are read in its bytes.
    Raw,
    /// An event of a class the model ignores (its fields unread).
    Ignored,
    /// An event of a class the model reads for its packet's CPU alone (as
    /// ignored once the model knows the CPU).
    CpuOnly,
    /// The cursor's current event, with its values.
    Values,
    /// A notice (discarded events or packets) with a time.
    Notice,
    /// A message without a time (its stream's last time orders it).
    Untimed,
    /// An event of a class the model ignores, crossed for its time alone
    /// ahead of the merge (see [`Next::Go`]).
    Folded,
}

/// What [`for_each_event`]'s callback says after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Stop reading (the event was not used).
    Stop,
    /// Go on. With a range: from now on, an event of a class the model
    /// ignores whose time lies in it would only move the analysed period's
    /// end to its time, and the callback wants the last of them only (the
    /// reader may then cross such events without handing them over, ahead
    /// of the merge, and hands over the latest it crossed among those
    /// the merge would have reached before it stops).
    Go(Option<(i64, i64)>),
}

/// The most records a stream's batch holds: a packet's events are read
/// in batches of this many, which stay in the caches (and do not grow
/// a buffer to a whole packet's size).
const BATCH: usize = 512;

#[derive(Debug, Clone, Copy)]
struct Rec {
    ns: i64,
    class: u32,
    what: What,
    body: RawBody,
}

/// A stream's next records, as [`Filler::fill`] reads them (the records
/// of one packet), with, when they are decoded on another thread, what
/// the merging thread's view of the stream needs to read them.
#[derive(Default)]
struct Batch<'f> {
    recs: Vec<Rec>,
    /// Decoded on another thread: by record, its event made there
    /// ([`event_made`]; `None`: the merge makes it), for the records of
    /// events the model reads; empty when not made ahead.
    made: Made<'f>,
    /// The `cpu_id` of the packet the records are from.
    cpu: Option<i64>,
    /// Byte offset in its file of the message of `recs[0]` (the only one
    /// that can be out of order: `skim_bodies` stops before the others).
    first_offset: u64,
    /// The stream has no more messages (`recs` is empty).
    done: bool,
    /// Decoded on another thread: the error the filling gave (no records).
    failed: Option<reef_ctf::Error>,
    /// Decoded on another thread: the records' packet is not the previous
    /// batch's, and `packet` holds it.
    new_packet: bool,
    packet: Shown,
    /// Decoded on another thread: the last record is an event read with
    /// its values ([`What::Values`]), which `event` holds.
    has_event: bool,
    event: EventData,
}

/// The events made ahead of a batch's records ([`Batch::made`]), kept so
/// that clearing them reads none of them.
///
/// The merging thread reads the events, so their memory sits in its CPU's
/// cache when the batch comes back to be refilled: a plain `Vec::clear`
/// would read every one of them again there to find what to free (that
/// drop was 5 % of `reef iolog`'s time on a 10 M-event trace). Most events
/// hold nothing to free; those that may are listed, and dropped first.
#[derive(Default)]
struct Made<'f> {
    events: Vec<ManuallyDrop<Option<Event<'f>>>>,
    /// Which of `events` may own memory.
    owning: Vec<u32>,
}

impl<'f> Made<'f> {
    fn push(&mut self, ev: Option<Event<'f>>) {
        if ev.as_ref().is_some_and(Event::may_own) {
            self.owning.push(self.events.len() as u32);
        }
        self.events.push(ManuallyDrop::new(ev));
    }

    fn get(&self, k: usize) -> Option<&Event<'f>> {
        self.events.get(k).and_then(|e| e.as_ref())
    }

    fn clear(&mut self) {
        for &k in &self.owning {
            // (moved out, it drops as any value)
            drop(std::mem::take(&mut *self.events[k as usize]));
        }
        self.owning.clear();
        // (what is left owns nothing: no element is read)
        self.events.clear();
    }
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A packet as a view presents it ([`StreamCursor::present_packet`]).
#[derive(Default)]
struct Shown {
    file: Option<Arc<StreamFile>>,
    info: PacketInfo,
    context: Vec<reef_ctf::Value>,
    packets_read: u64,
}

/// The decoding side of a stream: its cursor and what reading it into
/// records takes.
struct Filler {
    cur: StreamCursor,
    conv: ClockConv,
    /// What each class's events are recorded as: [`What::Values`] for
    /// the classes read with their values, else [`What::Raw`],
    /// [`What::Ignored`] or [`What::CpuOnly`].
    kinds: Arc<[What]>,
    last_cy: u64,
    /// Time of the stream's last timed message.
    last_ns: i64,
    /// Where the stream's packet contexts hold the CPU.
    cpu_field: Option<FieldLoc>,
    /// The error that ended the last batch, given once it is read.
    error: Option<reef_ctf::Error>,
    /// The packet (file, offset) last shown in a batch.
    shown: (usize, u64),
}

impl Filler {
    /// Records the stream's next messages in `b`: the next one, and when
    /// it is an event read in its bytes, the events after it in its
    /// packet.
    fn fill(&mut self, b: &mut Batch<'_>) -> Result<(), reef_ctf::Error> {
        // A time past the range of nanoseconds from the origin ends the
        // stream with an error (as in every reader), after the records
        // before it.
        let mut overflow = None;
        let r = self.fill_records(b, &mut overflow);
        if let Some((at, cycles)) = overflow {
            b.recs.truncate(at);
            let e = reef_iter::out_of_range(&self.cur, self.cur.packet.offset, cycles);
            if b.recs.is_empty() {
                return Err(e);
            }
            self.error = Some(e);
        }
        r
    }

    fn fill_records(
        &mut self,
        b: &mut Batch<'_>,
        overflow: &mut Option<(usize, u64)>,
    ) -> Result<(), reef_ctf::Error> {
        b.recs.clear();
        b.done = false;
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(item) = self.cur.next_skimmed()? else {
            b.done = true;
            return Ok(());
        };
        if item == Item::Event {
            b.cpu = packet_cpu_at(&self.cur, self.cpu_field);
        }
        b.first_offset = self.cur.event.offset;
        let Filler {
            cur,
            conv,
            kinds,
            last_cy,
            last_ns,
            ..
        } = self;
        let buf = &mut b.recs;
        let mut push = |cycles: Option<u64>, class: usize, what: What, body| {
            let (ns, what) = match cycles.map(|cy| (cy, conv.ns(cy))) {
                Some((_, Some(ns))) => {
                    *last_ns = ns;
                    (ns, what)
                }
                Some((cy, None)) => {
                    if overflow.is_none() {
                        *overflow = Some((buf.len(), cy));
                    }
                    (*last_ns, What::Untimed)
                }
                None => (*last_ns, What::Untimed),
            };
            buf.push(Rec {
                ns,
                class: class as u32,
                what,
                body,
            });
        };
        match item {
            Item::Event => {
                let class = cur.event.event;
                let what = kinds[class];
                push(cur.event.ts, class, what, RawBody::of(cur));
                if what == What::Values {
                    return Ok(());
                }
                if let Some(cy) = cur.event.ts {
                    *last_cy = cy;
                }
            }
            Item::DiscardedEvents { begin, end, .. }
            | Item::DiscardedPackets { begin, end, .. } => {
                push(begin.or(end), 0, What::Notice, RawBody::default());
                return Ok(());
            }
        }
        let run = cur.skim_bodies(last_cy, u64::MAX, BATCH - 1, |e| {
            // (a class read with its values stops the loop)
            push(Some(e.cycles), e.class, kinds[e.class], e.body)
        });
        match run {
            Ok(true) => push(
                cur.event.ts,
                cur.event.event,
                What::Values,
                RawBody::of(cur),
            ),
            Ok(false) => {}
            // Given once the events before it are read.
            Err(e) => self.error = Some(e),
        }
        Ok(())
    }

    /// Fills `b` for the merging thread's view: the next records, the
    /// error, the packet when it is a new one, the values of the last
    /// event when it has them.
    fn fill_for_view(&mut self, b: &mut Batch<'_>) {
        b.new_packet = false;
        b.has_event = false;
        b.failed = self.fill(b).err();
        if b.failed.is_some() || b.done {
            return;
        }
        let cur = &self.cur;
        if let Some(file) = cur.file() {
            let key = (Arc::as_ptr(file) as usize, cur.packet.offset);
            if key != self.shown {
                self.shown = key;
                b.new_packet = true;
                let p = &mut b.packet;
                p.file = Some(file.clone());
                p.info.clone_from(&cur.packet);
                p.context.clone_from(&cur.packet_context);
                p.packets_read = cur.packets_read;
            }
        }
        if b.recs.last().is_some_and(|r| r.what == What::Values) {
            b.has_event = true;
            let (from, to) = (&cur.event, &mut b.event);
            to.event = from.event;
            to.ts = from.ts;
            to.values.clone_from(&from.values);
            to.bounds = from.bounds;
            to.offset = from.offset;
            to.body = from.body;
            to.end = from.end;
        }
    }
}

/// Where a stream's batches come from.
enum Feed<'f> {
    /// Decoded on the merging thread.
    Here(Box<Filler>),
    /// Decoded on another thread ([`decode`]): batches come through `rx`
    /// and go back through `back` once read, [`DEPTH`] / 2 at a time
    /// (`spent`: so that the decoding thread wakes up for as many);
    /// `view` presents their packets and events to the readers of fields.
    Piped {
        view: Box<StreamCursor>,
        rx: Receiver<Batch<'f>>,
        back: Sender<(usize, Vec<Batch<'f>>)>,
        spent: Vec<Batch<'f>>,
        idx: usize,
        /// Set when the merge waited for a batch (see [`decode`]).
        starved: &'f AtomicBool,
    },
}

/// A stream as the merge reads it.
struct Stream<'f> {
    feed: Feed<'f>,
    /// Index of the stream's first event class in the class table.
    base: usize,
    b: Batch<'f>,
    at: usize,
    /// Time of the stream's last message that left the merge (or was
    /// folded): a message before it is out of order.
    prev: i64,
    /// The latest time of the events of the batch folded ahead of the
    /// merge.
    folded: i64,
}

impl<'f> Stream<'f> {
    fn new(feed: Feed<'f>, base: usize) -> Stream<'f> {
        Stream {
            feed,
            base,
            b: Batch::default(),
            at: 0,
            prev: i64::MIN,
            folded: i64::MIN,
        }
    }

    /// The cursor the batch's fields are read through.
    #[inline(always)]
    fn cur(&self) -> &StreamCursor {
        match &self.feed {
            Feed::Here(f) => &f.cur,
            Feed::Piped { view, .. } => view,
        }
    }

    /// Takes the stream's next batch.
    fn next_batch(&mut self) -> Result<(), reef_ctf::Error> {
        self.at = 0;
        self.folded = i64::MIN;
        match &mut self.feed {
            Feed::Here(f) => f.fill(&mut self.b),
            Feed::Piped {
                view,
                rx,
                back,
                spent,
                idx,
                starved,
            } => {
                // (the decoding thread sends batches until the stream's
                // last one, and stops only once the merge has)
                let next = match rx.try_recv() {
                    Ok(b) => b,
                    Err(_) => {
                        starved.store(true, Ordering::Relaxed);
                        rx.recv().expect("the decoding thread outlives the merge")
                    }
                };
                spent.push(std::mem::replace(&mut self.b, next));
                if spent.len() >= DEPTH / 2 {
                    let _ = back.send((*idx, std::mem::take(spent)));
                }
                let b = &mut self.b;
                if let Some(e) = b.failed.take() {
                    return Err(e);
                }
                if b.new_packet {
                    let p = &b.packet;
                    if let Some(file) = &p.file {
                        view.present_packet(file, &p.info, &p.context, p.packets_read);
                    }
                }
                if b.has_event {
                    std::mem::swap(&mut view.event, &mut b.event);
                }
                Ok(())
            }
        }
    }
}

/// Batches in flight per stream when decoding on another thread.
const DEPTH: usize = 8;

/// Whether [`for_each_event`] should decode streams of `bytes` bytes on a
/// second thread while the calling one merges them and runs the model:
/// with `workers` 2 or more, and by default when the machine has two
/// CPUs or more and the streams hold [`PIPE_BYTES`] or more (on a trace
/// of a few MB, the thread costs more than it saves: cputop on a 1 MB
/// kernel trace takes 4.4 ms of CPU time with it, 3.4 without). The
/// decoding thread also makes the events of the batches it decodes as
/// long as it keeps ahead of the merge, so that the model's thread does
/// little but the model. Measured on a 10 M-event kernel trace (2-core
/// VM), it takes 15-31 % off the wall-clock time of the
/// analyses and costs 16-50 % more CPU time.
pub fn pipelined(workers: Option<usize>, bytes: u64) -> bool {
    match workers {
        Some(n) => n > 1,
        None => {
            bytes >= PIPE_BYTES && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        }
    }
}

/// See [`pipelined`].
pub const PIPE_BYTES: u64 = 16 << 20;

/// The decoding thread: fills [`DEPTH`] batches per stream, then one more
/// for each that comes back, until the merge stops (or every stream
/// ended), and makes the events of a share of them ([`Ahead::make`]):
/// of the analyses, some leave the model's thread with little to do
/// (cputop), where making every event here would keep the merge waiting,
/// and others with much (the I/O ones), where this thread has time for
/// it.
fn decode<'f>(
    mut fillers: Vec<Filler>,
    ahead: Vec<Ahead<'f>>,
    ready: Vec<Sender<Batch<'f>>>,
    back: Receiver<(usize, Vec<Batch<'f>>)>,
    starved: &AtomicBool,
) {
    let mut ended = vec![false; fillers.len()];
    // Of every [`SHARES`] batches, how many have their events made here:
    // one less each time the merge had to wait for a batch, one more each
    // time this thread waits for the merge, so that the two threads share
    // the work (which events are made where never changes the events).
    let level = std::cell::Cell::new(SHARES);
    let mut tick = 0u32;
    // Fills a batch of stream `i` and sends it; false once the merge has
    // stopped (it no longer receives).
    let mut give = |i: usize, mut b: Batch<'f>| {
        if ended[i] {
            return true;
        }
        fillers[i].fill_for_view(&mut b);
        if starved.swap(false, Ordering::Relaxed) {
            level.set(level.get().saturating_sub(1));
        }
        tick = tick.wrapping_add(1);
        if tick % SHARES < level.get() {
            ahead[i].make(&fillers[i].cur, &mut b);
        } else {
            b.made.clear();
        }
        ended[i] = b.done || b.failed.is_some();
        ready[i].send(b).is_ok()
    };
    for _ in 0..DEPTH {
        for i in 0..ready.len() {
            if !give(i, Batch::default()) {
                return;
            }
        }
    }
    loop {
        let (i, spent) = match back.try_recv() {
            Ok(m) => m,
            Err(_) => {
                level.set((level.get() + 1).min(SHARES));
                match back.recv() {
                    Ok(m) => m,
                    Err(_) => return,
                }
            }
        };
        for b in spent {
            if !give(i, b) {
                return;
            }
        }
    }
}

/// See [`decode`].
const SHARES: u32 = 8;

/// What the decoding thread needs to make a stream's events ahead of the
/// merge ([`Batch::made`]): the class table and where the stream's
/// classes begin in it, and the bytes of each of the stream's files
/// (by the file's address), all of which outlive the reading.
struct Ahead<'f> {
    classes: &'f [ClassInfo],
    base: usize,
    files: Vec<(usize, &'f [u8])>,
}

impl<'f> Ahead<'f> {
    /// Makes the events of `b`'s records that the model reads, as `cur`
    /// (which filled it) reads them.
    fn make(&self, cur: &StreamCursor, b: &mut Batch<'f>) {
        b.made.clear();
        if b.failed.is_some() || b.done {
            return;
        }
        let Some(file) = cur.file() else { return };
        let key = Arc::as_ptr(file) as usize;
        let Some(&(_, data)) = self.files.iter().find(|f| f.0 == key) else {
            return;
        };
        let cpu = b.cpu;
        for r in &b.recs {
            b.made.push(match r.what {
                What::Raw | What::Values | What::CpuOnly => event_made(
                    &self.classes[self.base + r.class as usize],
                    data,
                    cur,
                    r.body,
                    r.ns,
                    cpu,
                ),
                _ => None,
            });
        }
    }
}

/// Whether [`for_each_event`] can read `cursors` (every stream has a clock).
pub fn can_read(cursors: &[StreamCursor]) -> bool {
    cursors
        .iter()
        .all(|c| c.trace.class.streams[c.stream].clock.is_some())
}

/// Gives every event of `streams` (see [`can_read`]) with a time, in time
/// order, to `f`, until `f` says `false` or the end, read for a model that
/// follows `interest`; with `piped` (see [`pipelined`]), the streams are
/// decoded on a second thread. As
/// [`reef_read::Source::for_each_event`]: a reading error ends the loop
/// and is returned as `Ok(Some(error))`, an error of `f`'s own stops
/// everything.
pub fn for_each_event<E>(
    streams: Streams,
    interest: Interest,
    piped: bool,
    f: impl FnMut(&Event<'_>) -> Result<Next, E>,
) -> Result<Option<reef_read::Error>, E> {
    let Streams {
        cursors,
        rank,
        clocks,
        window,
        ending,
        ..
    } = streams;
    // The class table: each (trace, stream class)'s classes, found once.
    let mut classes: Vec<ClassInfo> = Vec::new();
    // (trace, stream class): first class's index, classes read with their
    // values, what each class's events are recorded as
    type Table = (usize, usize, usize, Arc<[bool]>, Arc<[What]>);
    let mut tables: Vec<Table> = Vec::new();
    // (rank, the stream's filler, its first class's index)
    type Opened = (usize, Filler, usize);
    let mut order: Vec<Opened> = Vec::new();
    for ((mut cur, r), conv) in cursors.into_iter().zip(rank).zip(clocks) {
        let key = (Arc::as_ptr(&cur.trace) as usize, cur.stream);
        let (base, want, kinds) = match tables.iter().find(|t| (t.0, t.1) == key) {
            Some(t) => (t.2, t.3.clone(), t.4.clone()),
            None => {
                let base = classes.len();
                let n = cur.trace.class.streams[cur.stream].events.len();
                let mut want = Vec::with_capacity(n);
                let mut kinds = Vec::with_capacity(n);
                classes.reserve(n);
                for e in 0..n {
                    let mut info = ClassInfo::new(&cur.trace, cur.stream, e, true, interest);
                    // (read with its values: its fields are found there)
                    let values = info.needs_values();
                    want.push(values);
                    if values {
                        info = ClassInfo::new(&cur.trace, cur.stream, e, false, interest);
                    }
                    kinds.push(if values {
                        What::Values
                    } else if info.is_other() {
                        What::Ignored
                    } else if info.is_packet_cpu_only() {
                        What::CpuOnly
                    } else {
                        What::Raw
                    });
                    classes.push(info);
                }
                let want: Arc<[bool]> = want.into();
                let kinds: Arc<[What]> = kinds.into();
                tables.push((key.0, key.1, base, want.clone(), kinds.clone()));
                (base, want, kinds)
            }
        };
        cur.skip_values(true);
        cur.values_of(Some(want));
        let Some(conv) = conv else {
            unreachable!("streams without a clock are not read here (can_read)")
        };
        let cpu_field = packet_cpu_field(&cur.trace, cur.stream);
        let filler = Filler {
            cur,
            conv,
            kinds,
            last_cy: 0,
            last_ns: i64::MIN,
            cpu_field,
            error: None,
            shown: (0, u64::MAX),
        };
        order.push((r, filler, base));
    }
    // By rank: at the same time, the first stream in this order goes first.
    order.sort_by_key(|o| o.0);
    let here = |order: Vec<Opened>| -> Vec<Stream> {
        order
            .into_iter()
            .map(|(_, filler, base)| Stream::new(Feed::Here(Box::new(filler)), base))
            .collect()
    };
    if !piped {
        return merge(here(order), &classes, window, ending, f);
    }
    // The traces, whose files the events made ahead of the merge read
    // (kept here, they outlive the threads).
    let kept: Vec<Arc<reef_ctf::Trace>> = order.iter().map(|o| o.1.cur.trace.clone()).collect();
    let starved = &AtomicBool::new(false);
    std::thread::scope(|sc| {
        // The decoding thread gets its streams once it runs (if it cannot
        // start, they are decoded here).
        type Given<'f> = (
            Vec<Filler>,
            Vec<Ahead<'f>>,
            Vec<Sender<Batch<'f>>>,
            Receiver<(usize, Vec<Batch<'f>>)>,
        );
        let (give, given) = channel::<Given>();
        let spawned = std::thread::Builder::new()
            .name("reef-decode".into())
            .spawn_scoped(sc, move || {
                if let Ok((fillers, ahead, ready, back)) = given.recv() {
                    decode(fillers, ahead, ready, back, starved);
                }
            });
        if spawned.is_err() {
            return merge(here(order), &classes, window, ending, f);
        }
        let (back_tx, back_rx) = channel();
        let mut ready = Vec::with_capacity(order.len());
        let mut fillers = Vec::with_capacity(order.len());
        let mut ahead = Vec::with_capacity(order.len());
        let mut streams = Vec::with_capacity(order.len());
        for (idx, (_, filler, base)) in order.into_iter().enumerate() {
            let (tx, rx) = channel();
            let feed = Feed::Piped {
                view: Box::new(StreamCursor::new(
                    filler.cur.trace.clone(),
                    filler.cur.source,
                )),
                rx,
                back: back_tx.clone(),
                spent: Vec::with_capacity(DEPTH),
                idx,
                starved,
            };
            streams.push(Stream::new(feed, base));
            ahead.push(Ahead {
                classes: &classes,
                base,
                files: kept[idx]
                    .sources
                    .get(filler.cur.source)
                    .map(|s| {
                        s.files
                            .iter()
                            .map(|f| (Arc::as_ptr(f) as usize, f.data()))
                            .collect()
                    })
                    .unwrap_or_default(),
            });
            ready.push(tx);
            fillers.push(filler);
        }
        drop(back_tx);
        // (the thread runs until it gets them: it cannot have gone)
        let _ = give.send((fillers, ahead, ready, back_rx));
        merge(streams, &classes, window, ending, f)
    })
}

/// The merge of [`for_each_event`], over `streams` (in rank order) whose
/// classes are those of `classes`.
fn merge<'f, E>(
    mut streams: Vec<Stream<'f>>,
    classes: &'f [ClassInfo],
    (begin, end): (i64, i64),
    ending: reef_read::Ending,
    mut f: impl FnMut(&Event<'_>) -> Result<Next, E>,
) -> Result<Option<reef_read::Error>, E> {
    for s in &mut streams {
        if let Err(e) = s.next_batch() {
            return Ok(ending.error(Some(e.into()), false));
        }
    }
    streams.retain(|s| !s.b.done);
    let mut heads: Vec<i64> = streams.iter().map(|s| s.b.recs[0].ns).collect();
    // The range in which ignored events may be folded (from the callback).
    let mut fold: Option<(i64, i64)> = None;
    // The latest time of the ignored events crossed without the callback
    // that the merge has reached.
    let mut passed = i64::MIN;
    // The CPUs the model knows from an event of a `cpu_only` class it
    // read in the fold range: later ones of theirs are as ignored.
    let mut told: Vec<i64> = Vec::new();
    // Whether the model ignores the event of `r` in stream `s`.
    let ignored = |s: &Stream, r: &Rec, told: &[i64]| {
        r.what == What::Ignored
            || (r.what == What::CpuOnly && s.b.cpu.is_some_and(|c| told.contains(&c)))
    };
    // The latest folded event the merge would have reached before a stop
    // after the message at `at` of stream `of` (None: all of them), given
    // to the callback as an ignored event at its time.
    macro_rules! stop {
        ($streams:expr, $at:expr, $stopped:expr) => {{
            let mut t = passed;
            for (j, s) in $streams.iter().enumerate() {
                for r in &s.b.recs[..s.at.min(s.b.recs.len())] {
                    let reached = match $at {
                        None => true,
                        Some((z, of)) => (r.ns, j) <= (z, of),
                    };
                    if r.what == What::Folded && reached {
                        t = t.max(r.ns);
                    }
                }
            }
            if t > i64::MIN {
                f(&Event {
                    ts: t,
                    cpu: None,
                    kind: crate::event::Kind::Other,
                })?;
            }
            return Ok($stopped);
        }};
    }
    while !heads.is_empty() {
        // The first of the earliest (streams alternate unpredictably: no
        // branch on which).
        let (mut i, mut min) = (0, heads[0]);
        for (k, &h) in heads.iter().enumerate().skip(1) {
            let earlier = h < min;
            i = if earlier { k } else { i };
            min = if earlier { h } else { min };
        }
        let s = &mut streams[i];
        let r = s.b.recs[s.at];
        if r.ns < s.prev {
            // (the merge's order is the streams': a message out of order
            // follows its own stream's previous one, which the merge gave
            // just before it)
            let z = s.prev;
            let e = reef_ctf::Error::Stream {
                path: s
                    .cur()
                    .file_path()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default(),
                offset: s.b.first_offset,
                msg: format!(
                    "time goes backwards: message at {} ns from origin follows one at {z} ns",
                    r.ns
                ),
            };
            stop!(streams, Some((z, i)), ending.error(Some(e.into()), false));
        }
        s.prev = r.ns;
        if r.what != What::Untimed {
            if r.ns > end {
                stop!(streams, None::<(i64, usize)>, ending.error(None, true));
            }
            if matches!(
                r.what,
                What::Raw | What::Values | What::Ignored | What::CpuOnly
            ) && r.ns >= begin
            {
                let class = r.class as usize;
                let in_fold = fold.is_some_and(|(lo, hi)| lo <= r.ns && r.ns <= hi);
                if in_fold && ignored(s, &r, &told) {
                    passed = passed.max(r.ns);
                } else {
                    let made;
                    let ev = match s.b.made.get(s.at) {
                        Some(ev) => ev,
                        None => {
                            let info = &classes[s.base + class];
                            made = event_of(info, s.cur(), class, r.body, r.ns, s.b.cpu);
                            &made
                        }
                    };
                    match f(ev)? {
                        Next::Go(range) => {
                            // (an event in the fold range is one the model read)
                            if in_fold && r.what == What::CpuOnly {
                                told.extend(s.b.cpu.filter(|c| !told.contains(c)));
                            }
                            fold = range;
                        }
                        Next::Stop => {
                            stop!(streams, None::<(i64, usize)>, ending.error(None, true))
                        }
                    }
                }
            }
        }
        let s = &mut streams[i];
        s.at += 1;
        if let Some((lo, hi)) = fold {
            // Fold the ignored events that follow in the stream's batch,
            // in order, ahead of the merge: not the batch's last message
            // (the batch is refilled once the merge reaches it, all of
            // them behind) nor one the next message precedes (that one
            // would be out of order: the merge must reach it as before).
            let (lo, hi) = (lo.max(begin), hi.min(end));
            let n = s.b.recs.len();
            while s.at + 1 < n {
                let r = s.b.recs[s.at];
                if !ignored(s, &r, &told) || r.ns < lo || r.ns > hi || s.b.recs[s.at + 1].ns < r.ns
                {
                    break;
                }
                s.b.recs[s.at].what = What::Folded;
                s.folded = r.ns;
                s.prev = r.ns;
                s.at += 1;
            }
        }
        if s.at == s.b.recs.len() {
            passed = passed.max(s.folded);
            if let Err(e) = s.next_batch() {
                let z = s.prev;
                stop!(streams, Some((z, i)), ending.error(Some(e.into()), false));
            }
            if s.b.done {
                streams.remove(i);
                heads.remove(i);
                continue;
            }
        }
        heads[i] = s.b.recs[s.at].ns;
    }
    stop!(streams, None::<(i64, usize)>, ending.error(None, false))
}
