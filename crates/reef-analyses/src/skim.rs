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
//! cut and garbled traces).

use std::sync::Arc;

use reef_ctf::access::{FieldLoc, RawBody};
use reef_ctf::{Item, StreamCursor};
use reef_iter::ClockConv;
use reef_read::Streams;

use crate::event::{event_of, packet_cpu_at, packet_cpu_field, ClassInfo, Event, Interest};

/// What a [`Rec`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// An event whose fields are read in its bytes.
    Raw,
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

struct Stream {
    cur: StreamCursor,
    conv: ClockConv,
    /// Index of the stream's first event class in the class table.
    base: usize,
    /// The classes read with their values.
    want: Arc<[bool]>,
    buf: Vec<Rec>,
    at: usize,
    last_cy: u64,
    /// Time of the stream's last timed message.
    last_ns: i64,
    /// Time of the stream's last message that left the merge (or was
    /// folded): a message before it is out of order.
    prev: i64,
    /// The latest time of the events of `buf` folded ahead of the merge.
    folded: i64,
    /// Whether each class (by index from `base`) is one the model ignores.
    other: Arc<[bool]>,
    /// Whether each class is one the model reads for its packet's CPU alone
    /// (as ignored once the model knows the CPU).
    cpu_only: Arc<[bool]>,
    /// Byte offset in its file of the message of `buf[0]` (the only one
    /// that can be out of order: `skim_bodies` stops before the others).
    first_offset: u64,
    /// The `cpu_id` of the packet the records in `buf` are from.
    cpu: Option<i64>,
    /// Where the stream's packet contexts hold it.
    cpu_field: Option<FieldLoc>,
    /// The error that ended the batch in `buf`, given once it is read.
    error: Option<reef_ctf::Error>,
    done: bool,
}

impl Stream {
    /// Records the stream's next messages: the next one, and when it is
    /// an event read in its bytes, the events after it in its packet.
    fn fill(&mut self) -> Result<(), reef_ctf::Error> {
        // A time past the range of nanoseconds from the origin ends the
        // stream with an error (as in every reader), after the records
        // before it.
        let mut overflow = None;
        let r = self.fill_records(&mut overflow);
        if let Some((at, cycles)) = overflow {
            self.buf.truncate(at);
            let e = reef_iter::out_of_range(&self.cur, self.cur.packet.offset, cycles);
            if self.buf.is_empty() {
                return Err(e);
            }
            self.error = Some(e);
        }
        r
    }

    fn fill_records(&mut self, overflow: &mut Option<(usize, u64)>) -> Result<(), reef_ctf::Error> {
        self.buf.clear();
        self.at = 0;
        self.folded = i64::MIN;
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(item) = self.cur.next_skimmed()? else {
            self.done = true;
            return Ok(());
        };
        if item == Item::Event {
            self.cpu = packet_cpu_at(&self.cur, self.cpu_field);
        }
        self.first_offset = self.cur.event.offset;
        let Stream {
            cur,
            conv,
            want,
            buf,
            last_cy,
            last_ns,
            ..
        } = self;
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
                let values = want[class];
                let what = if values { What::Values } else { What::Raw };
                push(cur.event.ts, class, what, RawBody::of(cur));
                if values {
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
            push(Some(e.cycles), e.class, What::Raw, e.body)
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
}

/// Whether [`for_each_event`] can read `cursors` (every stream has a clock).
pub fn can_read(cursors: &[StreamCursor]) -> bool {
    cursors
        .iter()
        .all(|c| c.trace.class.streams[c.stream].clock.is_some())
}

/// Gives every event of `streams` (see [`can_read`]) with a time, in time
/// order, to `f`, until `f` says `false` or the end, read for a model that
/// follows `interest`. As
/// [`reef_read::Source::for_each_event`]: a reading error ends the loop
/// and is returned as `Ok(Some(error))`, an error of `f`'s own stops
/// everything.
pub fn for_each_event<E>(
    streams: Streams,
    interest: Interest,
    mut f: impl FnMut(&Event<'_>) -> Result<Next, E>,
) -> Result<Option<reef_read::Error>, E> {
    let Streams {
        cursors,
        rank,
        clocks,
        window: (begin, end),
        ending,
        ..
    } = streams;
    // The class table: each (trace, stream class)'s classes, found once.
    let mut classes: Vec<ClassInfo> = Vec::new();
    // (trace, stream class): first class's index, classes read with their
    // values, classes the model ignores, classes it reads for their CPU
    type Table = (usize, usize, usize, Arc<[bool]>, Arc<[bool]>, Arc<[bool]>);
    let mut tables: Vec<Table> = Vec::new();
    let mut order: Vec<(usize, Stream)> = Vec::new();
    for ((mut cur, r), conv) in cursors.into_iter().zip(rank).zip(clocks) {
        let key = (Arc::as_ptr(&cur.trace) as usize, cur.stream);
        let (base, want, other, cpu_only) = match tables.iter().find(|t| (t.0, t.1) == key) {
            Some(t) => (t.2, t.3.clone(), t.4.clone(), t.5.clone()),
            None => {
                let base = classes.len();
                let n = cur.trace.class.streams[cur.stream].events.len();
                let mut want = Vec::with_capacity(n);
                let mut other = Vec::with_capacity(n);
                let mut cpu_only = Vec::with_capacity(n);
                for e in 0..n {
                    let mut info = ClassInfo::new(&cur.trace, cur.stream, e, true, interest);
                    want.push(info.needs_values());
                    if info.needs_values() {
                        info = ClassInfo::new(&cur.trace, cur.stream, e, false, interest);
                    }
                    other.push(info.is_other());
                    cpu_only.push(info.is_packet_cpu_only());
                    classes.push(info);
                }
                let want: Arc<[bool]> = want.into();
                let other: Arc<[bool]> = other.into();
                let cpu_only: Arc<[bool]> = cpu_only.into();
                tables.push((
                    key.0,
                    key.1,
                    base,
                    want.clone(),
                    other.clone(),
                    cpu_only.clone(),
                ));
                (base, want, other, cpu_only)
            }
        };
        cur.skip_values(true);
        cur.values_of(Some(want.clone()));
        let Some(conv) = conv else {
            unreachable!("streams without a clock are not read here (can_read)")
        };
        let cpu_field = packet_cpu_field(&cur.trace, cur.stream);
        order.push((
            r,
            Stream {
                cur,
                conv,
                base,
                want,
                buf: Vec::new(),
                at: 0,
                last_cy: 0,
                last_ns: i64::MIN,
                prev: i64::MIN,
                folded: i64::MIN,
                other,
                cpu_only,
                first_offset: 0,
                cpu: None,
                cpu_field,
                error: None,
                done: false,
            },
        ));
    }
    // By rank: at the same time, the first stream in this order goes first.
    order.sort_by_key(|o| o.0);
    let mut streams: Vec<Stream> = order.into_iter().map(|o| o.1).collect();
    for s in &mut streams {
        if let Err(e) = s.fill() {
            return Ok(ending.error(Some(e.into()), false));
        }
    }
    streams.retain(|s| !s.done);
    let mut heads: Vec<i64> = streams.iter().map(|s| s.buf[0].ns).collect();
    // The range in which ignored events may be folded (from the callback).
    let mut fold: Option<(i64, i64)> = None;
    // The latest time of the ignored events crossed without the callback
    // that the merge has reached.
    let mut passed = i64::MIN;
    // The CPUs the model knows from an event of a `cpu_only` class it
    // read in the fold range: later ones of theirs are as ignored.
    let mut told: Vec<i64> = Vec::new();
    // Whether the model ignores the events of `class` in stream `s`.
    let ignored = |s: &Stream, class: usize, told: &[i64]| {
        s.other[class] || (s.cpu_only[class] && s.cpu.is_some_and(|c| told.contains(&c)))
    };
    // The latest folded event the merge would have reached before a stop
    // after the message at `at` of stream `of` (None: all of them), given
    // to the callback as an ignored event at its time.
    macro_rules! stop {
        ($streams:expr, $at:expr, $stopped:expr) => {{
            let mut t = passed;
            for (j, s) in $streams.iter().enumerate() {
                for r in &s.buf[..s.at.min(s.buf.len())] {
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
        let r = s.buf[s.at];
        if r.ns < s.prev {
            // (the merge's order is the streams': a message out of order
            // follows its own stream's previous one, which the merge gave
            // just before it)
            let z = s.prev;
            let e = reef_ctf::Error::Stream {
                path: s
                    .cur
                    .file_path()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default(),
                offset: s.first_offset,
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
            if matches!(r.what, What::Raw | What::Values) && r.ns >= begin {
                let class = r.class as usize;
                let in_fold = fold.is_some_and(|(lo, hi)| lo <= r.ns && r.ns <= hi);
                if r.what == What::Raw && in_fold && ignored(s, class, &told) {
                    passed = passed.max(r.ns);
                } else {
                    let info = &classes[s.base + class];
                    let ev = event_of(info, &s.cur, class, r.body, r.ns, s.cpu);
                    match f(&ev)? {
                        Next::Go(range) => {
                            // (an event in the fold range is one the model read)
                            if in_fold && s.cpu_only[class] {
                                told.extend(s.cpu.filter(|c| !told.contains(c)));
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
            let n = s.buf.len();
            while s.at + 1 < n {
                let r = s.buf[s.at];
                if r.what != What::Raw
                    || !ignored(s, r.class as usize, &told)
                    || r.ns < lo
                    || r.ns > hi
                    || s.buf[s.at + 1].ns < r.ns
                {
                    break;
                }
                s.buf[s.at].what = What::Folded;
                s.folded = r.ns;
                s.prev = r.ns;
                s.at += 1;
            }
        }
        if s.at == s.buf.len() {
            passed = passed.max(s.folded);
            if let Err(e) = s.fill() {
                let z = s.prev;
                stop!(streams, Some((z, i)), ending.error(Some(e.into()), false));
            }
            if s.done {
                streams.remove(i);
                heads.remove(i);
                continue;
            }
        }
        heads[i] = s.buf[s.at].ns;
    }
    stop!(streams, None::<(i64, usize)>, ending.error(None, false))
}
