//! The base index's pass, on every core: the streams are cut into
//! *intervals* of time chosen before reading (from the packets found when
//! the traces were opened, about a quarter of [`View::spacing`] bytes of
//! stream data each); decoding threads read one stream's part of one
//! interval at a time into compact [`Rec`]ords (class, CPU or thread, the
//! few fields the kernel model reads), and the index thread applies each
//! interval's records in `reef print` order: merged by time (ties as
//! babeltrace2 breaks them) when the model or the rows need it, stream
//! after stream when every row is a stream. A checkpoint is taken at the
//! start of an interval once [`View::spacing`] bytes lie since the last.
//!
//! The result is the one the merged reading would give, message for
//! message: the same records applied in the same order (the decoded
//! windows of `query.rs` go through the same [`Model::apply`]), the same
//! first error (a stream's decoding error or step back in time stops
//! everything after that stream's last good message, as the merge does),
//! the same window trimming.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use reef_ctf::{Item, Place, StreamCursor};
use reef_filter::EventFilter;
use reef_iter::ClockConv;
use reef_read::Streams;

use crate::index::{push_checkpoint, MarkSink, ModelPoint, Phase, View};
use crate::model::{ClassKeys, Extract, Names, Rec, R_CPU, R_KEPT};

/// Intervals decoded ahead of the index thread.
const AHEAD: usize = 4;

/// Intervals per checkpoint, about: the pass's intervals are smaller than
/// the checkpoints' spacing, so that reading ahead costs little memory.
pub const PER_CHECKPOINT: u64 = 4;

/// Interval bounds: `T_1 < … < T_m` (ns from the clock's origin), about
/// `spacing` bytes of stream data apart, each with the bytes before it
/// (estimated: see below). `None` when a packet's end time or a stream's
/// clock is unknown.
pub fn bounds(streams: &Streams, spacing: u64) -> Option<Vec<(i64, u64)>> {
    // Each packet's bytes taken as spread evenly from the previous
    // packet's end to its own, in pieces of at most `spacing / 2`: bounds
    // can then fall inside packets, and intervals hold about as much data
    // each even when the streams' packets end together.
    let piece = (spacing / 2).max(1);
    let mut ends: Vec<(i64, u64)> = Vec::new();
    for (c, conv) in streams.cursors.iter().zip(&streams.clocks) {
        let conv = (*conv)?;
        let mut packets: Vec<(i64, u64)> = Vec::new();
        for f in &c.trace.sources[c.source].files {
            let table = f.packets.get()?;
            let len = f.data().len() as u64;
            for (i, &(off, end)) in table.iter().enumerate() {
                if end == u64::MAX {
                    return None;
                }
                let next = table.get(i + 1).map_or(len, |p| p.0);
                packets.push((conv.ns(end)?, next.saturating_sub(off)));
            }
        }
        for (i, &(t1, size)) in packets.iter().enumerate() {
            // The first packet: taken as long as the second.
            let t0 = match i {
                0 => packets
                    .get(1)
                    .map_or(t1, |p| t1.saturating_sub(p.0.saturating_sub(t1))),
                _ => packets[i - 1].0,
            }
            .min(t1);
            let m = size.div_ceil(piece).max(1);
            for j in 1..=m {
                let t = t0 + ((t1 - t0) as i128 * j as i128 / m as i128) as i64;
                ends.push((t, size / m));
            }
        }
    }
    ends.sort_unstable();
    let mut out: Vec<(i64, u64)> = Vec::new();
    let (mut acc, mut total) = (0u64, 0u64);
    for (ns, size) in ends {
        acc += size;
        total += size;
        if acc >= spacing {
            acc = 0;
            let t = ns.saturating_add(1);
            if out.last().is_none_or(|&(l, _)| t > l) {
                out.push((t, total));
            }
        }
    }
    Some(out)
}

/// An event of a trace whose rows are its streams: time, class key and
/// flags ([`Rec`]'s).
#[derive(Clone, Copy, Default)]
struct Lite {
    ns: i64,
    ckey: u32,
    flags: u32,
}

/// Records of one stream's part of an interval, in blocks of [`BLOCK`]
/// taken from a pool the decoding threads share: a part grows without
/// ever reallocating (a large vector growing and shrinking is remapped
/// each time, and every remap stops the other threads), and the blocks one
/// stream's burst took serve the others afterwards. The memory is that of
/// the records in flight.
struct Blocks<T> {
    blocks: Vec<Box<[T]>>,
    len: usize,
}

const BLOCK_BITS: u32 = 9;
const BLOCK: usize = 1 << BLOCK_BITS;

type Pool<T> = Mutex<Vec<Box<[T]>>>;

impl<T> Default for Blocks<T> {
    fn default() -> Blocks<T> {
        Blocks {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Copy + Default> Blocks<T> {
    #[inline]
    fn push(&mut self, v: T, pool: &Pool<T>) {
        let b = self.len >> BLOCK_BITS;
        if b == self.blocks.len() {
            self.grow(pool);
        }
        self.blocks[b][self.len & (BLOCK - 1)] = v;
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self, pool: &Pool<T>) {
        let block = lock(pool)
            .pop()
            .unwrap_or_else(|| vec![T::default(); BLOCK].into_boxed_slice());
        self.blocks.push(block);
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self.blocks[i >> BLOCK_BITS][i & (BLOCK - 1)])
    }

    fn first(&self) -> Option<&T> {
        self.get(0)
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.blocks
            .iter()
            .enumerate()
            .flat_map(move |(k, b)| &b[..self.len.saturating_sub(k * BLOCK).min(BLOCK)])
    }

    /// Empties it, its blocks back to `pool`.
    fn release(&mut self, pool: &Pool<T>) {
        self.len = 0;
        if !self.blocks.is_empty() {
            lock(pool).append(&mut self.blocks);
        }
    }
}

impl Chunk {
    /// The time of its first record.
    fn first_ns(&self) -> Option<i64> {
        self.recs
            .first()
            .map(|r| r.ns)
            .or(self.lite.first().map(|l| l.ns))
    }
}

/// One stream's part of one interval.
#[derive(Default)]
struct Chunk {
    recs: Blocks<Rec>,
    /// Instead of `recs` when every row is a stream: what a mark needs.
    lite: Blocks<Lite>,
    names: Names,
    /// Events the list keeps, and the last of them: (ns, cycles).
    kept: u64,
    last_kept: Option<(i64, Option<u64>)>,
    /// Time of the stream's last message read without error.
    last_msg: Option<i64>,
    /// The error that ended the stream after `last_msg`.
    error: Option<reef_read::Error>,
    /// The stream ended at a message after the window.
    past_end: bool,
    /// The stream ended in this interval.
    ended: bool,
    /// Where the stream stands at the interval's end: before its first
    /// message of a later interval (what a checkpoint there keeps).
    end: Option<Place>,
}

impl Chunk {
    fn clear(&mut self) {
        self.recs.len = 0;
        self.lite.len = 0;
        self.names.clear();
        self.kept = 0;
        self.last_kept = None;
        self.last_msg = None;
        self.error = None;
        self.past_end = false;
        self.ended = false;
        self.end = None;
    }
}

/// The short way's cycle bounds of the last (clock, interval end) asked:
/// the streams of a group mostly share both.
#[derive(Default)]
struct Tops {
    /// The clock, the interval's end, and the range's start and last.
    last: Option<(ClockConv, i64, CycleRange)>,
}

type CycleRange = Option<(u64, u64)>;

impl Tops {
    /// The clock's defined range's start and its last cycles before `hi`.
    #[inline]
    fn get(&mut self, cv: ClockConv, hi: i64) -> Option<(ClockConv, u64, u64)> {
        let found = match self.last {
            Some((c, h, r)) if h == hi && c == cv => r,
            _ => {
                let r = cv
                    .defined_range()
                    .and_then(|(lo, top)| Some((lo, cv.last_before(hi, lo, top)?)));
                self.last = Some((cv, hi, r));
                r
            }
        };
        found.map(|(lo, top)| (cv, lo, top))
    }
}

/// What a decoding thread keeps from unit to unit.
struct Local {
    x: Extract,
    filter: Option<EventFilter>,
    tops: Tops,
}

struct StreamState {
    cur: StreamCursor,
    trace: usize,
    conv: Option<ClockConv>,
    skim: bool,
    /// A message read but not applied yet (it belongs to a later
    /// interval): its item and time.
    pending: Option<(Item, Option<i64>)>,
    /// Where the cursor stood before its last message (the pending one,
    /// when there is one) was read.
    before: Place,
    /// Time of the last message, and its cycles.
    last: i64,
    last_cy: u64,
    done: bool,
    /// The cursor of the ended stream was dropped.
    released: bool,
    /// The interval to read next.
    next: usize,
}

struct Slots {
    next_unit: usize,
    /// Intervals the index thread has taken.
    taken: usize,
    /// Per interval slot (`i % AHEAD`), per stream.
    ready: Vec<Vec<Option<Chunk>>>,
    filled: Vec<usize>,
    /// Per interval slot: complete (and merged, unless `direct`).
    complete: Vec<bool>,
    /// Per interval slot: the streams of its records in merged order.
    order: Vec<Vec<u32>>,
    /// Order vectors to reuse.
    orders: Vec<Vec<u32>>,
    /// Per stream: its chunks to reuse (their room fits that stream).
    free: Vec<Vec<Chunk>>,
    stop: bool,
}

struct Shared {
    /// Interval bounds and the bytes before them (see [`bounds`]).
    bounds: Vec<(i64, u64)>,
    /// Stream data between checkpoints, about.
    spacing: u64,
    /// Each stream's tie-break rank.
    rank: Vec<usize>,
    /// Every row is a stream: records ([`Lite`]) are applied stream after
    /// stream.
    direct: bool,
    /// Streams a worker reads in one go (a unit of work: the streams of
    /// one group in one interval), so that many small streams do not cost
    /// a lock and a wait each per interval.
    group: usize,
    window: (i64, i64),
    streams: Vec<(Mutex<StreamState>, Condvar)>,
    recs: Pool<Rec>,
    lites: Pool<Lite>,
    slots: Mutex<Slots>,
    cv: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn intervals(&self) -> usize {
        self.bounds.len() + 1
    }

    /// The end of interval `i` (exclusive).
    fn end_of(&self, i: usize) -> i64 {
        self.bounds.get(i).map_or(i64::MAX, |b| b.0)
    }

    fn worker(&self, keys: &Arc<ClassKeys>, filter: Option<&str>) {
        lower_priority(5);
        let mut local = Local {
            x: Extract::new(keys.clone()),
            filter: filter.and_then(|f| EventFilter::new(f).ok()),
            tops: Tops::default(),
        };
        let n = self.streams.len();
        let (gs, groups) = (self.group, n.div_ceil(self.group));
        let mut done: Vec<(usize, Chunk)> = Vec::with_capacity(gs);
        loop {
            let i = {
                let mut sl = lock(&self.slots);
                loop {
                    if sl.stop || sl.next_unit >= self.intervals() * groups {
                        return;
                    }
                    let i = sl.next_unit / groups;
                    if i < sl.taken + AHEAD {
                        let u = sl.next_unit;
                        sl.next_unit += 1;
                        let g = u % groups;
                        for s in g * gs..((g + 1) * gs).min(n) {
                            let c = sl.free[s].pop().unwrap_or_default();
                            done.push((s, c));
                        }
                        break i;
                    }
                    sl = self.cv.wait(sl).unwrap_or_else(|p| p.into_inner());
                }
            };
            for (s, chunk) in &mut done {
                let s = *s;
                chunk.clear();
                let (m, cv) = &self.streams[s];
                let mut st = lock(m);
                while st.next != i {
                    st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                self.read(&mut st, s, self.end_of(i), &mut local, chunk);
                chunk.end = Some(match (st.done, st.pending) {
                    (true, _) => Place::Ended,
                    (false, Some(_)) => st.before,
                    (false, None) => st.cur.place(),
                });
                if st.done && !st.released {
                    st.released = true;
                    chunk.ended = true;
                    // Let the pages it still holds go (a cursor releases
                    // them when dropped).
                    let (t, src) = (st.cur.trace.clone(), st.cur.source);
                    st.cur = StreamCursor::new(t, src);
                }
                st.next = i + 1;
                cv.notify_all();
            }
            let mut sl = lock(&self.slots);
            let slot = i % AHEAD;
            sl.filled[slot] += done.len();
            for (s, chunk) in done.drain(..) {
                sl.ready[slot][s] = Some(chunk);
            }
            if sl.filled[slot] == n {
                if !self.direct {
                    // The last part of the interval: merge it here, while
                    // the index thread applies the one before.
                    let chunks: Vec<Chunk> = sl.ready[slot]
                        .iter_mut()
                        .map(|c| c.take().unwrap_or_default())
                        .collect();
                    let mut order = sl.orders.pop().unwrap_or_default();
                    drop(sl);
                    merge(&chunks, &self.rank, &mut order);
                    sl = lock(&self.slots);
                    for (s, c) in chunks.into_iter().enumerate() {
                        sl.ready[slot][s] = Some(c);
                    }
                    sl.order[slot] = order;
                }
                sl.complete[slot] = true;
                self.cv.notify_all();
            }
        }
    }

    /// Reads stream `s`'s messages before `hi` into `out`.
    fn read(&self, st: &mut StreamState, s: usize, hi: i64, local: &mut Local, out: &mut Chunk) {
        let Local { x, filter, tops } = local;
        let filter = filter.as_ref();
        let (b, e) = self.window;
        // The short way: events of a packet in order, inside the clock's
        // defined range and before `hi`, read in one loop (no window,
        // no values).
        let fast = match st.conv {
            Some(cv) if st.skim && b == i64::MIN && e == i64::MAX => tops.get(cv, hi),
            _ => None,
        };
        loop {
            if st.done {
                return;
            }
            // Whether the short way stopped at an event it decoded.
            let mut at_event = false;
            if let (Some((cv, lo, top)), None) = (fast, st.pending) {
                let mut last = st.last_cy.max(lo);
                let base = x.keys.key_base(st.trace, st.cur.stream);
                let (direct, recs, lite) = (self.direct, &mut out.recs, &mut out.lite);
                let (rp, lp) = (&self.recs, &self.lites);
                // A kernel event's CPU: its packet's.
                let (key, flags) = match x.keys.kernel[st.trace] {
                    true => match x.cpu(s, &st.cur) {
                        Some(cpu) => (cpu, R_KEPT | R_CPU),
                        None => (0, R_KEPT),
                    },
                    false => (0, R_KEPT),
                };
                let mut added = 0u64;
                let mut last_ns = 0;
                let run = st.cur.skim_each(&mut last, top, |idx, cy| {
                    let ns = cv.ns(cy).unwrap_or(i64::MAX);
                    let ckey = base + idx as u32;
                    if direct {
                        lite.push(
                            Lite {
                                ns,
                                ckey,
                                flags: R_KEPT as u32,
                            },
                            lp,
                        );
                    } else {
                        recs.push(
                            Rec {
                                ns,
                                key,
                                ckey,
                                nm: u32::MAX,
                                flags,
                                ..Rec::default()
                            },
                            rp,
                        );
                    }
                    added += 1;
                    last_ns = ns;
                });
                if added > 0 {
                    st.last_cy = last;
                    st.last = last_ns;
                    out.last_msg = Some(last_ns);
                    out.kept += added;
                    out.last_kept = Some((last_ns, Some(last)));
                }
                match run {
                    Ok(stopped) => at_event = stopped,
                    Err(err) => {
                        st.done = true;
                        out.error = Some(err.into());
                        return;
                    }
                }
            }
            let (item, ns) = match st.pending.take() {
                Some(p) => p,
                None => {
                    if !at_event {
                        st.before = st.cur.place();
                    }
                    let next = if at_event {
                        Ok(Some(Item::Event))
                    } else if st.skim {
                        st.cur.next_skimmed()
                    } else {
                        st.cur.next()
                    };
                    let item = match next {
                        Ok(Some(item)) => item,
                        Ok(None) => {
                            st.done = true;
                            return;
                        }
                        Err(err) => {
                            st.done = true;
                            out.error = Some(err.into());
                            return;
                        }
                    };
                    let cycles = match item {
                        Item::Event => st.cur.event.ts,
                        Item::DiscardedEvents { begin, end, .. }
                        | Item::DiscardedPackets { begin, end, .. } => begin.or(end),
                    };
                    if let Some(cy) = cycles {
                        st.last_cy = cy;
                    }
                    let ns = cycles.zip(st.conv).and_then(|(cy, cv)| cv.ns(cy));
                    if let Some(ns) = ns {
                        if ns < st.last {
                            st.done = true;
                            out.error = Some(
                                reef_ctf::Error::Stream {
                                    path: st.cur.file_path().map(|p| p.to_path_buf()).unwrap_or_default(),
                                    offset: st.cur.event.offset,
                                    msg: format!(
                                        "time goes backwards: message at {ns} ns from origin follows one at {} ns",
                                        st.last
                                    ),
                                }
                                .into(),
                            );
                            return;
                        }
                    }
                    (item, ns)
                }
            };
            if let Some(ns) = ns {
                if ns >= hi {
                    st.pending = Some((item, Some(ns)));
                    return;
                }
                if ns > e {
                    st.done = true;
                    out.past_end = true;
                    return;
                }
                st.last = ns;
            }
            out.last_msg = Some(st.last);
            let Some(ns) = ns else { continue };
            if item != Item::Event || ns < b {
                continue;
            }
            let mut r = x.event(st.trace, s, &st.cur, ns, &mut out.names);
            if filter.is_none_or(|f| f.matches(&st.cur)) {
                r.flags |= R_KEPT;
                out.kept += 1;
                out.last_kept = Some((ns, st.cur.event.ts));
            }
            if self.direct {
                out.lite.push(
                    Lite {
                        ns,
                        ckey: r.ckey,
                        flags: r.flags as u32,
                    },
                    &self.lites,
                );
            } else {
                out.recs.push(r, &self.recs);
            }
        }
    }
}

/// Makes the calling (decoding) thread yield to the index thread: the
/// index thread applies intervals in order, alone, so whenever it can run
/// it should; the decoding threads fill the cores around it. Without this,
/// three threads sharing two cores give it two thirds of one, and the
/// decoding threads, held back by how far ahead they may read, leave a
/// core idle.
pub(crate) fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority only read and set this thread's
    // scheduling priority (raising the nice value needs no privilege).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice);
    }
}

/// The streams of the records of `chunks` in merged order: by time, then
/// rank.
fn merge(chunks: &[Chunk], rank: &[usize], order: &mut Vec<u32>) {
    use std::cmp::Reverse;
    order.clear();
    if chunks.len() <= 8 {
        // A few streams (a kernel trace's CPUs): the least of their heads,
        // packed as one number each (time, rank), found by a scan.
        let key = |s: usize, p: usize| -> u128 {
            chunks[s].recs.get(p).map_or(u128::MAX, |r| {
                (u128::from(r.ns as u64 ^ 1 << 63) << 64) | (rank[s] as u128) << 8 | s as u128
            })
        };
        let mut pos = [0usize; 8];
        let mut heads = [u128::MAX; 8];
        for (s, h) in heads.iter_mut().enumerate().take(chunks.len()) {
            *h = key(s, 0);
        }
        loop {
            let best = heads.iter().fold(u128::MAX, |b, &k| b.min(k));
            if best == u128::MAX {
                return;
            }
            let s = (best & 0xff) as usize;
            order.push(s as u32);
            pos[s] += 1;
            heads[s] = key(s, pos[s]);
        }
    }
    let mut pos = vec![0usize; chunks.len()];
    let mut heads: std::collections::BinaryHeap<Reverse<(i64, usize, u32)>> = chunks
        .iter()
        .enumerate()
        .filter_map(|(s, c)| c.recs.first().map(|r| Reverse((r.ns, rank[s], s as u32))))
        .collect();
    while let Some(Reverse((_, rk, s))) = heads.pop() {
        let c = &chunks[s as usize];
        let p = &mut pos[s as usize];
        // The stream's records while they come before every other head.
        let next = heads.peek().map(|Reverse(h)| (h.0, h.1));
        loop {
            order.push(s);
            *p += 1;
            match c.recs.get(*p) {
                Some(r) if next.is_none_or(|n| (r.ns, rk) < n) => {}
                Some(r) => {
                    heads.push(Reverse((r.ns, rk, s)));
                    break;
                }
                None => break,
            }
        }
    }
}

/// Builds the base index from `streams`, on `workers` decoding threads
/// and the calling thread.
pub fn run(
    view: &View,
    streams: Streams,
    bounds: Vec<(i64, u64)>,
    keys: Arc<ClassKeys>,
    filter: Option<String>,
    workers: usize,
) {
    let Streams {
        cursors,
        rank,
        clocks,
        trace_of,
        window,
        ending,
    } = streams;
    let n = cursors.len();
    // Every row a stream: no model, no merge needed.
    let direct = trace_of.iter().all(|&t| !keys.kernel[t] && !keys.vtid[t]);
    // Every stream is read a little at a time, in turn: what each holds
    // mapped (behind and ahead of it) adds up over the streams. Smaller
    // chunks cost more than they save: 64 KiB on the 128 streams of
    // bench/view's libreef trace cut the pass's peak RSS from 65 to 39 MB
    // but made it 1.6x slower (each release interrupts the other core).
    let chunk = 256 << 10;
    let shared = Shared {
        bounds,
        spacing: view.spacing,
        rank,
        direct,
        // About four units per worker and interval.
        group: (n / (4 * workers.max(1))).max(1),
        window,
        streams: cursors
            .into_iter()
            .zip(clocks)
            .enumerate()
            .map(|(s, (mut cur, conv))| {
                let trace = trace_of[s];
                // Values: those of the classes the model reads (kernel),
                // the common context's (`vtid`), every one (a filter).
                let skim = filter.is_none() && !keys.vtid[trace];
                if filter.is_none() {
                    keys.model_values(trace, &mut cur);
                }
                cur.release_every(chunk);
                (
                    Mutex::new(StreamState {
                        cur,
                        trace,
                        conv,
                        skim,
                        pending: None,
                        before: Place::Unread,
                        last: i64::MIN,
                        last_cy: 0,
                        done: false,
                        released: false,
                        next: 0,
                    }),
                    Condvar::new(),
                )
            })
            .collect(),
        recs: Mutex::new(Vec::new()),
        lites: Mutex::new(Vec::new()),
        slots: Mutex::new(Slots {
            next_unit: 0,
            taken: 0,
            ready: (0..AHEAD).map(|_| (0..n).map(|_| None).collect()).collect(),
            filled: vec![0; AHEAD],
            complete: vec![false; AHEAD],
            order: vec![Vec::new(); AHEAD],
            orders: Vec::new(),
            free: (0..n).map(|_| Vec::new()).collect(),
            stop: false,
        }),
        cv: Condvar::new(),
    };
    std::thread::scope(|sc| {
        let mut started = 0;
        for _ in 0..workers.max(1) {
            let (sh, k, f) = (&shared, &keys, filter.as_deref());
            started += std::thread::Builder::new()
                .name("reef-view-decode".into())
                .spawn_scoped(sc, move || sh.worker(k, f))
                .is_ok() as usize;
        }
        if started == 0 {
            if let Ok(mut b) = view.base.write() {
                b.marks
                    .finish(Phase::Error("cannot start a decoding thread".into()));
            }
            return;
        }
        apply_all(view, &shared, &trace_of, &ending);
        crate::set_mmap_threshold(8 << 20);
        lock(&shared.slots).stop = true;
        shared.cv.notify_all();
    });
}

/// The index thread: each interval's chunks, in order.
fn apply_all(view: &View, sh: &Shared, trace_of: &[usize], ending: &reef_read::Ending) {
    let (n, rank, direct) = (sh.streams.len(), &sh.rank[..], sh.direct);
    let mut since_fit = 0usize;
    let mut past_end = false;
    // Bytes before the last checkpoint.
    let mut cp_bytes = 0u64;
    // Where each stream stands at the current interval's start.
    let mut places = vec![Place::Unread; n];
    for i in 0..sh.intervals() {
        let (mut chunks, order): (Vec<Chunk>, Vec<u32>) = {
            let mut sl = lock(&sh.slots);
            let slot = i % AHEAD;
            while !sl.complete[slot] {
                sl = sh.cv.wait(sl).unwrap_or_else(|p| p.into_inner());
            }
            sl.filled[slot] = 0;
            sl.complete[slot] = false;
            let c = sl.ready[slot]
                .iter_mut()
                .map(|c| c.take().unwrap_or_default())
                .collect();
            let o = std::mem::take(&mut sl.order[slot]);
            sl.taken = i + 1;
            sh.cv.notify_all();
            (c, o)
        };
        past_end |= chunks.iter().any(|c| c.past_end);
        // The first error in merged order: after the last good message of
        // the stream whose last good message comes first.
        let stop = chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.error.is_some())
            .map(|(s, c)| (c.last_msg.unwrap_or(i64::MIN), rank[s], s))
            .min();
        let limit = stop.map(|(ns, r, _)| (ns, r));
        let Ok(mut g) = view.base.write() else { return };
        let b = &mut *g;
        // The interval's start is a checkpoint once the origin is known.
        if let Some(origin) = b.origin {
            let (t, bytes) = match i {
                0 => (i64::MIN, 0),
                _ => (sh.bounds[i - 1].0 - origin, sh.bounds[i - 1].1),
            };
            if bytes >= cp_bytes + sh.spacing {
                cp_bytes = bytes;
                if b.marks.checkpoints.last().is_none_or(|c| t > c.t) {
                    push_checkpoint(&mut b.marks, t);
                    b.points.push(ModelPoint {
                        kernel: b.model.kernel.point(),
                        values: b.model.values(),
                        places: places.as_slice().into(),
                    });
                }
            }
        } else {
            let first = chunks
                .iter()
                .enumerate()
                .filter_map(|(s, c)| c.first_ns().map(|ns| (ns, rank[s])))
                .filter(|&k| limit.is_none_or(|l| k <= l))
                .min();
            if let Some((ns, _)) = first {
                b.origin = Some(ns);
                push_checkpoint(&mut b.marks, 0);
                b.points.push(ModelPoint {
                    kernel: b.model.kernel.point(),
                    values: b.model.values(),
                    places: places.as_slice().into(),
                });
            }
        }
        for (p, c) in places.iter_mut().zip(&chunks) {
            if let Some(e) = c.end {
                *p = e;
            }
        }
        if let Some(origin) = b.origin {
            let budget = view.budget;
            let mut apply = |b: &mut crate::index::Base, s: usize, r: &Rec, names: &Names| {
                let t = r.ns - origin;
                let kept = r.flags & R_KEPT != 0;
                b.model.apply(
                    trace_of[s],
                    s,
                    r,
                    names,
                    t,
                    |_| kept,
                    &mut MarkSink { m: &mut b.marks },
                );
                if kept {
                    b.marks.events += 1;
                }
                b.end = b.end.max(t);
                since_fit += 1;
                if since_fit >= 16384 {
                    since_fit = 0;
                    b.marks.fit(budget);
                }
            };
            let within = |s: usize, r: &Rec| limit.is_none_or(|l| (r.ns, rank[s]) <= l);
            if direct {
                for (s, c) in chunks.iter().enumerate() {
                    let mut rest = c
                        .lite
                        .iter()
                        .take_while(|l| limit.is_none_or(|m| (l.ns, rank[s]) <= m));
                    let Some(first) = rest.next() else {
                        continue;
                    };
                    // The first through the model (it makes the row and
                    // classes), the others straight to the row's track.
                    let r = Rec {
                        ns: first.ns,
                        ckey: first.ckey,
                        flags: first.flags as u8,
                        nm: u32::MAX,
                        ..Rec::default()
                    };
                    apply(b, s, &r, &c.names);
                    let Some(row) = b.model.stream_row(s) else {
                        continue;
                    };
                    if b.marks.tracks.len() <= row as usize {
                        b.marks.track(row, crate::model::OnRule::Never);
                    }
                    let k = b.marks.k;
                    let (mut kept, mut end) = (0u64, b.end);
                    let tr = &mut b.marks.tracks[row as usize];
                    // Marks in one bucket counted together: (bucket,
                    // first time, its class, count, last time).
                    let mut run: Option<(i64, i64, u32, u32, i64)> = None;
                    for r in rest {
                        let t = r.ns - origin;
                        end = end.max(t);
                        if r.flags & R_KEPT as u32 == 0 {
                            continue;
                        }
                        kept += 1;
                        // Every class seen is registered, in order, as
                        // single marks would (a class first seen inside a
                        // run gets its id here).
                        let class = b.model.class_id(r.ckey);
                        match &mut run {
                            Some(x) if x.0 == t >> k => (x.3, x.4) = (x.3 + 1, t),
                            _ => {
                                if let Some((_, t0, class, n, t1)) = run {
                                    tr.mark_n(t0, t1, class, n, k);
                                }
                                run = Some((t >> k, t, class, 1, t));
                            }
                        }
                    }
                    if let Some((_, t0, class, n, t1)) = run {
                        tr.mark_n(t0, t1, class, n, k);
                    }
                    b.marks.events += kept;
                    b.end = end;
                    b.marks.fit(view.budget);
                }
            } else {
                let mut pos = vec![0usize; n];
                for &s in &order {
                    let s = s as usize;
                    let c = &chunks[s];
                    let Some(r) = c.recs.get(pos[s]) else {
                        continue;
                    };
                    pos[s] += 1;
                    if within(s, r) {
                        apply(b, s, r, &c.names);
                    }
                }
            }
            // The list's last event, for the next checkpoint's delta.
            if let Some((_, ns, cy)) = chunks
                .iter()
                .enumerate()
                .filter_map(|(s, c)| c.last_kept.map(|(ns, cy)| ((ns, rank[s]), ns, cy)))
                .max_by_key(|k| k.0)
            {
                b.marks.prev = (Some(ns), cy);
            }
        }
        b.marks.fit(view.budget);
        if let Some((_, _, s)) = stop {
            let err = chunks[s]
                .error
                .take()
                .map(|e| ending.stopped(e).to_string())
                .unwrap_or_default();
            b.marks.finish(Phase::Error(err));
            return;
        }
        drop(g);
        let mut sl = lock(&sh.slots);
        for (s, mut c) in chunks.into_iter().enumerate() {
            c.recs.release(&sh.recs);
            c.lite.release(&sh.lites);
            if c.ended {
                // Later chunks of an ended stream stay empty.
                sl.free[s].push(Chunk::default());
                continue;
            }
            c.clear();
            sl.free[s].push(c);
        }
        if sl.orders.len() <= AHEAD {
            let mut order = order;
            let keep = order.len() + 4096;
            order.clear();
            if order.capacity() > 16 * keep {
                order.shrink_to(4 * keep);
            }
            sl.orders.push(order);
        }
    }
    let Ok(mut b) = view.base.write() else { return };
    match ending.error(None, past_end) {
        Some(e) => b.marks.finish(Phase::Error(e.to_string())),
        None => b.marks.finish(Phase::Ready),
    }
}
