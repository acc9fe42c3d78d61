//! `reef-iter`: finding traces, and merging all their streams into one
//! sequence of messages in timestamp order.
//!
//! ```
//! let dir = "../../../shared/conformance/kernel-traces/bug446190";
//! let traces = reef_iter::open_traces(&[dir.into()])?;
//! let mut mux = reef_iter::Muxer::new(&traces);
//! let mut last = i64::MIN;
//! while let Some(i) = mux.next()? {
//!     if let Some(ns) = mux.time_ns(i) {
//!         assert!(ns >= last, "every stream merged in time order");
//!         last = ns;
//!     }
//! }
//! # Ok::<(), reef_ctf::Error>(())
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reef_ctf::{Error, Item, StreamCursor, Trace};

pub mod parallel;
pub mod time;

/// What a reader knows about a trace beyond its metadata: the name
/// babeltrace2 gives it (the muxer's tie-break, the printer's `trace` field).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceLabel {
    /// babeltrace2's trace name: the `hostname` env entry and/or the
    /// trace's path relative to the input directory, joined by `/`.
    pub name: String,
}

/// Finds every trace (a directory holding a `metadata` file) under `paths`,
/// recursively, in path order. A trace directory is not searched further.
pub fn find_traces(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let md = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if md.is_file() && (reef_ctf::capture::is_capture(p) || reef_ctf::source::is_source(p)) {
            out.push(p.clone()); // a live capture file or a source's file is a trace
            continue;
        }
        if !md.is_dir() {
            let names: Vec<String> = reef_ctf::source::formats()
                .iter()
                .map(|f| f.name().to_string())
                .collect();
            let mut msg = format!(
                "not a trace: neither a trace directory nor a file reef reads (a live capture, \
                 or a source's: {})",
                names.join(", ")
            );
            for e in reef_ctf::source::provider_errors() {
                msg.push_str(&format!("; {e}"));
            }
            return Err(Error::io(
                p,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, msg),
            ));
        }
        walk(p, &mut out)?;
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    if dir.join("metadata").is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for d in subdirs {
        walk(&d, out)?;
    }
    Ok(())
}

/// Finds and opens every trace under `paths`.
pub fn open_traces(paths: &[PathBuf]) -> Result<Vec<Arc<Trace>>, Error> {
    find_traces(paths)?
        .iter()
        .map(|p| Trace::open(p).map(Arc::new))
        .collect()
}

/// Sort key of a cursor's current item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    /// Nanoseconds from the origin (i64::MIN when unknown).
    ns: i64,
    /// babeltrace2's tie-break between streams: see [`Muxer::with_names`].
    rank: usize,
    /// Events before discarded-events before discarded-packets notices.
    kind: u8,
    cursor: usize,
}

impl Key {
    /// The key as one number of the same order, for the scan of at most
    /// [`SCAN_MAX`] streams (rank and cursor below 2^24): a minimum found
    /// without a branch per stream, which streams whose events alternate
    /// (one per thread) would mispredict.
    fn pack(self) -> u128 {
        debug_assert!(self.rank < 1 << 24 && self.cursor < 1 << 24);
        (u128::from(self.ns as u64 ^ 1 << 63) << 64)
            | ((self.rank as u128) << 32)
            | (u128::from(self.kind) << 24)
            | self.cursor as u128
    }

    fn unpack(p: u128) -> Key {
        Key {
            ns: ((p >> 64) as u64 ^ 1 << 63) as i64,
            rank: ((p >> 32) & 0xff_ffff) as usize,
            kind: (p >> 24) as u8,
            cursor: (p & 0xff_ffff) as usize,
        }
    }
}

/// No key in [`Muxer::keys`] (not a packed key: cursors are below 2^24).
const NO_KEY: u128 = u128::MAX;

/// Merges the streams of several traces in timestamp order.
pub struct Muxer {
    cursors: Vec<StreamCursor>,
    items: Vec<Option<Item>>,
    /// Last known time of each cursor, for items that carry none.
    last_ns: Vec<i64>,
    /// Decoding threads (1: decode on the calling thread).
    workers: usize,
    /// The worker threads' output, once started with several workers;
    /// `cursors` are then views presenting it.
    feed: Option<parallel::Feed>,
    /// Each cursor's clock conversion.
    clocks: Vec<Option<ClockConv>>,
    /// Formats events on the worker threads (see [`Muxer::render_with`]).
    render: Option<parallel::RenderFactory>,
    /// Each stream's current key, packed ([`Key::pack`]; [`NO_KEY`]: none),
    /// when there are at most [`SCAN_MAX`] streams (a scan beats a heap).
    keys: Vec<u128>,
    heap: BinaryHeap<Reverse<Key>>,
    /// Cursor whose item was handed out last and must advance next.
    advance: Option<usize>,
    started: bool,
    rank: Vec<usize>,
    /// Time of the last message handed out.
    last_emitted: i64,
    /// Whether a message earlier than the last one handed out is an
    /// error, as in babeltrace2 2.0's muxer: for CTF 1.8 traces. Its
    /// reference for CTF 2, babeltrace2 2.1, hands such a message out in
    /// turn (an LTTng-UST packet whose end time lies after the next
    /// packet's beginning makes its discarded-events notice precede
    /// earlier events).
    strict: bool,
}

impl Muxer {
    /// A muxer over every stream of `traces`, all named "".
    pub fn new(traces: &[Arc<Trace>]) -> Muxer {
        Muxer::with_names(traces, &vec![String::new(); traces.len()])
    }

    /// A muxer over every stream of `traces`, whose names (as printed, see
    /// `reef_print::TraceLabel`) break ties as in babeltrace2: messages at
    /// the same time come first from traces with a UUID (by UUID bytes),
    /// then by trace name, stream class id and stream id.
    pub fn with_names(traces: &[Arc<Trace>], names: &[String]) -> Muxer {
        let mut cursors = Vec::new();
        let mut order = Vec::new();
        for (ti, t) in traces.iter().enumerate() {
            for s in 0..t.sources.len() {
                let src = &t.sources[s];
                let sc = t.class.meta.streams[t.class.streams[src.stream].class].id;
                let sid = src.instance_id.unwrap_or(t.stream_ordinal(s) as u64);
                let uuid = t.class.meta.uuid;
                order.push((
                    uuid.is_none(),
                    uuid.unwrap_or_default(),
                    names.get(ti).cloned().unwrap_or_default(),
                    sc,
                    sid,
                    cursors.len(),
                ));
                cursors.push(StreamCursor::new(t.clone(), s));
            }
        }
        order.sort();
        let mut rank = vec![0; cursors.len()];
        for (r, o) in order.iter().enumerate() {
            rank[o.5] = r;
        }
        let mut m = Muxer::from_cursors(cursors);
        m.rank = rank;
        m
    }

    pub fn from_cursors(cursors: Vec<StreamCursor>) -> Muxer {
        let n = cursors.len();
        let clocks = cursors
            .iter()
            .map(|c| {
                let sp = &c.trace.class.streams[c.stream];
                sp.clock
                    .map(|ci| ClockConv::new(&c.trace.class.meta.clocks[ci]))
            })
            .collect();
        let strict = cursors.iter().any(|c| c.trace.class.meta.major < 2);
        Muxer {
            cursors,
            items: vec![None; n],
            last_ns: vec![i64::MIN; n],
            workers: 1,
            feed: None,
            clocks,
            render: None,
            keys: vec![NO_KEY; n],
            heap: BinaryHeap::with_capacity(n),
            advance: None,
            started: false,
            rank: (0..n).collect(),
            last_emitted: i64::MIN,
            strict,
        }
    }

    /// Decodes the streams on `n` threads (1: on the calling thread). The
    /// messages and their order do not depend on `n`.
    pub fn workers(mut self, n: usize) -> Muxer {
        self.workers = n.max(1);
        self
    }

    /// With several workers, has them format every event as they decode
    /// it (for a printer): [`Muxer::text`] then gives an event's text, and
    /// its cursor shows the event's class and time but no values.
    pub fn render_with(&mut self, factory: parallel::RenderFactory) {
        if !self.started {
            self.render = Some(factory);
        }
    }

    /// The text the workers rendered for cursor `i`'s current event, if
    /// rendering (see [`Muxer::render_with`]).
    pub fn text(&self, i: usize) -> Option<&[u8]> {
        match (&self.feed, &self.render) {
            (Some(f), Some(_)) => Some(f.text(i)),
            _ => None,
        }
    }

    /// The earliest packet beginning time of all streams, in ns from the
    /// origin (reads only the first packet header of each stream).
    pub fn first_ns(&mut self) -> Option<i64> {
        let mut first: Option<i64> = None;
        for c in &mut self.cursors {
            let Ok(Some(cy)) = c.first_packet_begin() else {
                continue;
            };
            let sp = &c.trace.class.streams[c.stream];
            let ns = sp
                .clock
                .and_then(|ci| c.trace.class.meta.clocks[ci].ns_from_origin(cy));
            if let Some(ns) = ns {
                first = Some(first.map_or(ns, |f| f.min(ns)));
            }
        }
        first
    }

    /// Before the first [`Muxer::next`]: moves every stream to the first
    /// packet that can hold a message at or after `ns` (see
    /// [`StreamCursor::seek_ns`]). Messages before `ns` may still follow;
    /// the caller trims them.
    pub fn seek_ns(&mut self, ns: i64) -> Result<(), Error> {
        if self.started {
            return Ok(());
        }
        for c in &mut self.cursors {
            c.seek_ns(ns)?;
        }
        Ok(())
    }

    /// Makes every stream cursor add the bytes of the packets it finishes
    /// to `counter` (before the first [`Muxer::next`]).
    pub fn set_progress(&mut self, counter: &Arc<std::sync::atomic::AtomicU64>) {
        for c in &mut self.cursors {
            c.progress = Some(counter.clone());
        }
    }

    /// The stream cursors, before the first [`Muxer::next`] (for readers
    /// that do not merge).
    pub fn into_cursors(self) -> Vec<StreamCursor> {
        self.cursors
    }

    /// The stream cursors with each one's tie-break rank (the order of
    /// messages at the same time: see [`Muxer::with_names`]) and clock
    /// conversion, before the first [`Muxer::next`]: for readers that
    /// merge streams themselves.
    pub fn into_parts(self) -> (Vec<StreamCursor>, Vec<usize>, Vec<Option<ClockConv>>) {
        (self.cursors, self.rank, self.clocks)
    }

    pub fn cursor(&self, i: usize) -> &StreamCursor {
        &self.cursors[i]
    }

    pub fn cursors(&self) -> &[StreamCursor] {
        &self.cursors
    }

    /// The stream cursors, to set how they decode (before the first
    /// [`Muxer::next`]: the workers take them as they are).
    pub fn cursors_mut(&mut self) -> &mut [StreamCursor] {
        &mut self.cursors
    }

    /// The current item of cursor `i` (valid after [`Muxer::next`] returned `i`).
    pub fn item(&self, i: usize) -> Item {
        self.items[i].unwrap_or(Item::Event)
    }

    /// Nanoseconds from the origin of cursor `i`'s current item, if known.
    pub fn time_ns(&self, i: usize) -> Option<i64> {
        let ns = self.last_ns[i];
        (ns != i64::MIN).then_some(ns)
    }

    fn pull(&mut self, i: usize) -> Result<(), Error> {
        let (item, ns) = match &mut self.feed {
            // The workers converted the time.
            Some(feed) => {
                let item = feed.next(i, &mut self.cursors[i])?;
                (item, feed.ns(i))
            }
            None => {
                let item = self.cursors[i].next()?;
                let c = &self.cursors[i];
                let cycles = match item {
                    Some(Item::Event) => c.event.ts,
                    Some(Item::DiscardedEvents { begin, end, .. })
                    | Some(Item::DiscardedPackets { begin, end, .. }) => begin.or(end),
                    None => None,
                };
                let ns = match (cycles, self.clocks[i].as_ref(), item) {
                    (Some(cy), Some(conv), Some(it)) => Some(conv.ns_of_item(cy, c, it)?),
                    _ => None,
                };
                (item, ns)
            }
        };
        self.items[i] = item;
        let Some(item) = item else {
            self.keys[i] = NO_KEY;
            return Ok(());
        };
        if let Some(ns) = ns {
            self.last_ns[i] = ns;
        }
        let key = Key {
            ns: self.last_ns[i],
            rank: self.rank[i],
            kind: match item {
                Item::Event => 0,
                Item::DiscardedEvents { .. } => 1,
                Item::DiscardedPackets { .. } => 2,
            },
            cursor: i,
        };
        if self.cursors.len() <= SCAN_MAX {
            self.keys[i] = key.pack();
        } else {
            self.heap.push(Reverse(key));
        }
        Ok(())
    }

    /// Moves the stream cursors to worker threads, leaving views in their
    /// place (several workers only).
    fn start_workers(&mut self) {
        if self.workers < 2 || self.cursors.is_empty() {
            return;
        }
        let views: Vec<StreamCursor> = self
            .cursors
            .iter()
            .map(|c| StreamCursor::new(c.trace.clone(), c.source))
            .collect();
        let real = std::mem::replace(&mut self.cursors, views);
        // The merging thread decodes too (see `Feed::take`): N decoding
        // threads are N - 1 workers and itself, no more threads than cores.
        self.feed = Some(parallel::Feed::new(
            real,
            self.workers - 1,
            self.render.clone(),
            self.clocks.clone(),
        ));
    }

    fn pop_min(&mut self) -> Option<Key> {
        if self.cursors.len() <= SCAN_MAX {
            let best = self.keys.iter().fold(NO_KEY, |b, &k| b.min(k));
            if best == NO_KEY {
                return None;
            }
            let k = Key::unpack(best);
            self.keys[k.cursor] = NO_KEY;
            Some(k)
        } else {
            self.heap.pop().map(|Reverse(k)| k)
        }
    }

    /// Advances to the next message in time order and returns the index of
    /// the cursor holding it, or `None` when every stream is exhausted.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<usize>, Error> {
        if !self.started {
            self.started = true;
            self.start_workers();
            for i in 0..self.cursors.len() {
                self.pull(i)?;
            }
        } else if let Some(i) = self.advance.take() {
            self.pull(i)?;
        }
        match self.pop_min() {
            Some(k) => {
                if k.ns < self.last_emitted && self.strict {
                    // As babeltrace2: a stream going back in time is fatal.
                    let c = &self.cursors[k.cursor];
                    return Err(Error::Stream {
                        path: c.file_path().map(Path::to_path_buf).unwrap_or_default(),
                        offset: c.event.offset,
                        msg: format!(
                            "time goes backwards: message at {} ns from origin follows one at {} ns",
                            k.ns, self.last_emitted
                        ),
                    });
                }
                self.last_emitted = k.ns;
                self.advance = Some(k.cursor);
                Ok(Some(k.cursor))
            }
            None => Ok(None),
        }
    }
}

/// Up to this many streams, the next message is found by a scan of the
/// streams' current keys rather than with a heap.
const SCAN_MAX: usize = 8;

/// The error of a message at `cycles`, at byte `offset` of `c`'s file,
/// whose time is past the 64-bit range of nanoseconds from the origin.
pub fn out_of_range(c: &reef_ctf::StreamCursor, offset: u64, cycles: u64) -> reef_ctf::Error {
    reef_ctf::Error::Stream {
        path: c.file_path().map(|p| p.to_path_buf()).unwrap_or_default(),
        offset,
        msg: format!(
            "cannot convert clock cycles {cycles} to nanoseconds from the clock's origin: \
             the time is past the 64-bit range (clock offset too large)"
        ),
    }
}

/// A clock's cycles-to-nanoseconds conversion with the offset precomputed:
/// the same result as [`reef_ctf::ClockClass::ns_from_origin`], without
/// its per-call 128-bit divisions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockConv {
    base: i128,
    freq: u64,
    /// `1 / freq`, rounded: see [`fast_cycles_to_ns`].
    inv: f64,
}

impl ClockConv {
    pub fn new(c: &reef_ctf::ClockClass) -> ClockConv {
        let (secs, off_cycles) = c.normalized_offset();
        let freq = c.freq.max(1);
        ClockConv {
            base: secs as i128 * 1_000_000_000 + cycles_to_ns(off_cycles, freq) as i128,
            freq,
            inv: 1.0 / freq as f64,
        }
    }

    /// Nanoseconds from the origin of `cycles` for the current item of `c`
    /// (a message at `cycles`); a time past the 64-bit range of
    /// nanoseconds from the origin (an offset too large) is an error, as
    /// in babeltrace2 ("cannot convert clock cycles to nanoseconds from
    /// origin"), not a message without a time.
    pub fn ns_of_item(
        &self,
        cycles: u64,
        c: &reef_ctf::StreamCursor,
        item: reef_ctf::Item,
    ) -> Result<i64, reef_ctf::Error> {
        self.ns(cycles).ok_or_else(|| {
            let offset = match item {
                reef_ctf::Item::Event => c.event.offset,
                _ => c.packet.offset,
            };
            out_of_range(c, offset, cycles)
        })
    }

    /// Nanoseconds from the origin of `cycles`, `None` on overflow.
    #[inline]
    pub fn ns(&self, cycles: u64) -> Option<i64> {
        let v = if self.freq == 1_000_000_000 {
            cycles
        } else {
            fast_cycles_to_ns(cycles, self.freq, self.inv)
        };
        i64::try_from(self.base + v as i128).ok()
    }

    /// The last cycles in `lo..=hi` whose time is before `ns`, if `lo`'s
    /// is (the conversion never decreases: a binary search).
    pub fn last_before(&self, ns: i64, lo: u64, hi: u64) -> Option<u64> {
        let ok = |c: u64| self.ns(c).is_some_and(|t| t < ns);
        if !ok(lo) {
            return None;
        }
        if ok(hi) {
            return Some(hi);
        }
        Some(boundary(lo, hi, |c| !ok(c)) - 1)
    }

    /// The cycles whose time [`ClockConv::ns`] gives (no overflow), as
    /// `(first, last)`: one range, since the conversion never decreases.
    /// `None` if no cycle value has a time, or if the range lies strictly
    /// inside the `u64` values (not found here).
    pub fn defined_range(&self) -> Option<(u64, u64)> {
        let ok = |c: u64| self.ns(c).is_some();
        let first_ok = |bad, good| boundary(bad, good, ok);
        let last_ok = |good, bad| boundary(good, bad, |c| !ok(c)) - 1;
        match (ok(0), ok(u64::MAX)) {
            (true, true) => Some((0, u64::MAX)),
            (true, false) => Some((0, last_ok(0, u64::MAX))),
            (false, true) => Some((first_ok(0, u64::MAX), u64::MAX)),
            (false, false) => None,
        }
    }
}

/// The smallest `c` in `(lo, hi]` with `p(c)`, given `!p(lo)`, `p(hi)`,
/// and `p` false then true (a binary search).
fn boundary(mut lo: u64, mut hi: u64, p: impl Fn(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if p(mid) {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}

/// babeltrace2's conversion: through a double, truncated, saturating.
#[inline]
fn cycles_to_ns(cycles: u64, freq: u64) -> u64 {
    if freq == 1_000_000_000 {
        return cycles;
    }
    let d = 1e9 * cycles as f64 / freq as f64;
    if d >= u64::MAX as f64 {
        u64::MAX
    } else {
        d as u64
    }
}

/// [`cycles_to_ns`] without a division in almost every case (a division
/// costs more than decoding an event of a fixed-size stream). The quotient
/// `x / freq` is first taken as `x * inv`: with `inv` the rounded `1 /
/// freq`, that product lies within 3 units in the last place (ulps) of the
/// exact quotient, and the rounded quotient `cycles_to_ns` truncates
/// within half an ulp of it, so within 4 ulps of the product. When no
/// integer lies within 8 ulps of the product (the ulp measured at the
/// product, at least half the quotient's), both truncate to the same
/// integer; otherwise (about one value in a hundred at today's clock
/// values, and quotients under 1 or past 2^52, which have no fraction
/// bits to tell) the division decides.
#[inline(always)]
fn fast_cycles_to_ns(cycles: u64, freq: u64, inv: f64) -> u64 {
    // Through i64 where the value fits: one instruction each way instead
    // of x86-64's sequences for u64 (the same values).
    let c = if cycles < 1 << 63 {
        cycles as i64 as f64
    } else {
        cycles as f64
    };
    let x = 1e9 * c;
    let y = x * inv;
    if (1.0..4503599627370496.0).contains(&y) {
        let exp = (y.to_bits() >> 52) as i64;
        // 8 ulps of y: 2^(exp - 1023 - 52 + 3), a normal number here.
        let margin = f64::from_bits(((exp - 49) as u64) << 52);
        // (Not `trunc`: without SSE4.1 that is a call.)
        let whole = y as i64;
        let frac = y - whole as f64;
        if frac > margin && 1.0 - frac > margin {
            return whole as u64;
        }
    }
    let d = x / freq as f64;
    if d >= u64::MAX as f64 {
        u64::MAX
    } else {
        d as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast conversion gives the division's result: random cycles and
    /// frequencies, cycles next to whole nanoseconds (where the two could
    /// part), and the extremes.
    #[test]
    fn fast_conversion_equals_the_division() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let freqs = [
            1u64,
            3,
            1_000,
            32_768,
            1_000_000,
            2_399_987_000,
            2_500_000_000,
            3_000_000_001,
            999_999_999,
            1_000_000_001,
            u64::MAX,
        ];
        let mut near = 0u64;
        for i in 0..4_000_000u64 {
            let freq = match i % 3 {
                0 => freqs[(rnd() % freqs.len() as u64) as usize],
                _ => 1 + rnd() % 10_000_000_000,
            };
            let cycles = match i % 4 {
                0 => rnd(),
                1 => rnd() >> (rnd() % 64),
                // Cycles at which a whole nanosecond begins, and around.
                _ => {
                    let ns = rnd() >> (rnd() % 64 + 8);
                    let c = (ns as u128 * freq as u128 / 1_000_000_000) as u64;
                    near += 1;
                    c.wrapping_add(rnd() % 5).wrapping_sub(2)
                }
            };
            assert_eq!(
                fast_cycles_to_ns(cycles, freq, 1.0 / freq as f64),
                cycles_to_ns(cycles, freq),
                "cycles {cycles} freq {freq}"
            );
        }
        assert!(near > 1_000_000);
        for freq in freqs {
            for cycles in [0, 1, 2, u64::MAX, u64::MAX - 1, 1 << 52, (1 << 53) + 1] {
                assert_eq!(
                    fast_cycles_to_ns(cycles, freq, 1.0 / freq as f64),
                    cycles_to_ns(cycles, freq),
                    "cycles {cycles} freq {freq}"
                );
            }
        }
    }

    #[test]
    fn packed_keys_order_as_keys() {
        let ns = [
            i64::MIN,
            -5,
            -1,
            0,
            1,
            7,
            1_700_000_000_000_000_000,
            i64::MAX,
        ];
        let mut keys = Vec::new();
        for &ns in &ns {
            for rank in [0, 1, 7] {
                for kind in [0u8, 1, 2] {
                    for cursor in [0, 3, 7] {
                        keys.push(Key {
                            ns,
                            rank,
                            kind,
                            cursor,
                        });
                    }
                }
            }
        }
        for a in &keys {
            assert_eq!(Key::unpack(a.pack()), *a);
            assert!(a.pack() < NO_KEY);
            for b in &keys {
                assert_eq!(a.cmp(b), a.pack().cmp(&b.pack()), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn clock_conv_matches_the_model() {
        let mut c = reef_ctf::ClockClass::default();
        for (freq, offset_s, offset) in [
            (1_000_000_000u64, 1_600_000_000i64, 123_456_789i64),
            (1_000_000_000, -5, 3),
            (2_400_000_000, 1_700_000_000, 9_999_999_999),
            (1_000, 0, -1),
            (33_333_333, 12, 77),
        ] {
            c.freq = freq;
            c.offset_s = offset_s;
            c.offset = offset;
            let conv = ClockConv::new(&c);
            for cy in [
                0u64,
                1,
                999,
                123_456_789_012,
                1 << 40,
                u64::MAX / 3,
                u64::MAX,
            ] {
                assert_eq!(
                    conv.ns(cy),
                    c.ns_from_origin(cy),
                    "{freq} {offset_s} {offset} {cy}"
                );
            }
        }
    }

    #[test]
    fn defined_range_is_where_times_exist() {
        let mut c = reef_ctf::ClockClass::default();
        for (freq, offset_s) in [
            (1_000_000_000u64, 0i64),
            (1_000_000_000, 1_700_000_000),
            (2_400_000_000, 1_700_000_000),
            (1_000, -9_000_000_000),
            (1, -9_000_000_000_000),
            (100, 9_000_000_000),
        ] {
            c.freq = freq;
            c.offset_s = offset_s;
            let conv = ClockConv::new(&c);
            match conv.defined_range() {
                Some((lo, hi)) => {
                    assert!(
                        conv.ns(lo).is_some() && conv.ns(hi).is_some(),
                        "{freq} {offset_s}"
                    );
                    assert!(lo == 0 || conv.ns(lo - 1).is_none(), "{freq} {offset_s}");
                    assert!(
                        hi == u64::MAX || conv.ns(hi + 1).is_none(),
                        "{freq} {offset_s}"
                    );
                    let mid = lo + (hi - lo) / 2;
                    assert!(conv.ns(mid).is_some(), "{freq} {offset_s}");
                }
                None => {
                    assert!(conv.ns(0).is_none() && conv.ns(u64::MAX).is_none());
                }
            }
        }
    }
}
