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

use std::sync::Arc;

use reef_ctf::access::RawBody;
use reef_ctf::{Item, StreamCursor};
use reef_iter::ClockConv;
use reef_read::Streams;

use crate::event::{event_of, packet_cpu, ClassInfo, Event, Interest};

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
}

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
    /// Byte offset in its file of the message of `buf[0]` (the only one
    /// that can be out of order: `skim_bodies` stops before the others).
    first_offset: u64,
    /// The `cpu_id` of the packet the records in `buf` are from.
    cpu: Option<i64>,
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
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(item) = self.cur.next_skimmed()? else {
            self.done = true;
            return Ok(());
        };
        if item == Item::Event {
            self.cpu = packet_cpu(&self.cur);
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
        let run = cur.skim_bodies(last_cy, u64::MAX, |e| {
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
    mut f: impl FnMut(&Event<'_>) -> Result<bool, E>,
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
    let mut tables: Vec<(usize, usize, usize, Arc<[bool]>)> = Vec::new();
    let mut order: Vec<(usize, Stream)> = Vec::new();
    for ((mut cur, r), conv) in cursors.into_iter().zip(rank).zip(clocks) {
        let key = (Arc::as_ptr(&cur.trace) as usize, cur.stream);
        let (base, want) = match tables.iter().find(|t| (t.0, t.1) == key) {
            Some(t) => (t.2, t.3.clone()),
            None => {
                let base = classes.len();
                let n = cur.trace.class.streams[cur.stream].events.len();
                let mut want = Vec::with_capacity(n);
                for e in 0..n {
                    let mut info = ClassInfo::new(&cur.trace, cur.stream, e, true, interest);
                    want.push(info.needs_values());
                    if info.needs_values() {
                        info = ClassInfo::new(&cur.trace, cur.stream, e, false, interest);
                    }
                    classes.push(info);
                }
                let want: Arc<[bool]> = want.into();
                tables.push((key.0, key.1, base, want.clone()));
                (base, want)
            }
        };
        cur.skip_values(true);
        cur.values_of(Some(want.clone()));
        let Some(conv) = conv else {
            unreachable!("streams without a clock are not read here (can_read)")
        };
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
                first_offset: 0,
                cpu: None,
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
    let mut last = i64::MIN;
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
        if r.ns < last {
            return Ok(ending.error(
                Some(
                reef_ctf::Error::Stream {
                    path: s.cur.file_path().map(|p| p.to_path_buf()).unwrap_or_default(),
                    offset: s.first_offset,
                    msg: format!(
                        "time goes backwards: message at {} ns from origin follows one at {last} ns",
                        r.ns
                    ),
                }
                .into()),
                false,
            ));
        }
        last = r.ns;
        if r.what != What::Untimed {
            if r.ns > end {
                return Ok(ending.error(None, true));
            }
            if matches!(r.what, What::Raw | What::Values) && r.ns >= begin {
                let class = r.class as usize;
                let info = &classes[s.base + class];
                let ev = event_of(info, &s.cur, class, r.body, r.ns, s.cpu);
                if !f(&ev)? {
                    return Ok(ending.error(None, true));
                }
            }
        }
        s.at += 1;
        if s.at == s.buf.len() {
            if let Err(e) = s.fill() {
                return Ok(ending.error(Some(e.into()), false));
            }
            if s.done {
                streams.remove(i);
                heads.remove(i);
                continue;
            }
        }
        heads[i] = s.buf[s.at].ns;
    }
    Ok(ending.error(None, false))
}
