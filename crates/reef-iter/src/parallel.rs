//! Decoding streams on worker threads, ahead of the merge.
//!
//! Each stream's real [`StreamCursor`] lives in a `Slot`; worker threads
//! take streams from a work queue and decode the next *batch* of their
//! messages: the items, the values of every event copied one after the
//! other, and the packets that begin in the batch. A stream has at most
//! `DEPTH` (2) batches waiting; it is queued again when the merging thread
//! takes one. The merging thread presents each message through a *view*
//! cursor per stream (the cursor the printer and the field accessors see),
//! so the messages and their order are those of sequential decoding, only
//! computed earlier. Batches are recycled: no allocation per event once
//! they have grown.
//!
//! Memory: per stream, at most `DEPTH` ready batches, one being filled and
//! one being presented, each capped in values ([`Feed::new`] shares a
//! budget between the streams).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use reef_ctf::trace::StreamFile;
use reef_ctf::{Error, Item, PacketInfo, StreamCursor, Value};

/// Formats events on the worker threads (see [`Feed::new`]): renders the
/// current event of a cursor, whose time is `ns`, appending to `out`.
pub trait Render: Send {
    fn render(&mut self, c: &StreamCursor, ns: Option<i64>, out: &mut Vec<u8>);
}

/// Makes one [`Render`] per worker thread.
pub type RenderFactory = Arc<dyn Fn() -> Box<dyn Render> + Send + Sync>;

/// Ready batches per stream before its decoding pauses.
const DEPTH: usize = 2;
/// Values (all streams together) the ready batches may hold, roughly.
const VALUE_BUDGET: usize = 1 << 18;

#[derive(Clone, Copy)]
struct BItem {
    item: Item,
    /// Index into `Batch::packets` of a packet that begins at this item.
    packet: u32,
    event: u32,
    ts: Option<u64>,
    offset: u64,
    v0: u32,
    bounds: [u32; 4],
    /// The rendered text, in `Batch::text`, when rendering.
    text: (u32, u32),
    /// The item's time in ns from the origin, when known (converted here,
    /// on the worker, rather than by the merging thread).
    ns: Option<i64>,
}

struct BPacket {
    file: Arc<StreamFile>,
    info: PacketInfo,
    ctx: Range<usize>,
    packets_read: u64,
}

#[derive(Default)]
struct Batch {
    items: Vec<BItem>,
    values: Vec<Value>,
    packets: Vec<BPacket>,
    ctx: Vec<Value>,
    text: Vec<u8>,
    /// Set when the stream ended after these items: `Ok` at its end, or
    /// the error that stopped it.
    end: Option<Result<(), Error>>,
    /// Packets read when the stream ended: trailing packets without a
    /// message are counted too, as in sequential decoding.
    end_packets: u64,
}

const NO_PACKET: u32 = u32::MAX;

impl Batch {
    fn clear(&mut self) {
        self.items.clear();
        self.values.clear();
        self.packets.clear();
        self.ctx.clear();
        self.text.clear();
        self.end = None;
    }

    /// Decodes messages of `c` until the batch is full or the stream ends.
    fn fill(
        &mut self,
        c: &mut StreamCursor,
        seen_packets: &mut u64,
        max_values: usize,
        mut render: Option<&mut (dyn Render + '_)>,
        clock: Option<crate::ClockConv>,
    ) {
        self.clear();
        while self.items.len() < 4096
            && self.values.len() < max_values
            && self.text.len() < max_values * 8
        {
            let item = match c.next() {
                Ok(Some(item)) => item,
                Ok(None) => {
                    self.end = Some(Ok(()));
                    self.end_packets = c.packets_read;
                    return;
                }
                Err(e) => {
                    self.end = Some(Err(e));
                    self.end_packets = c.packets_read;
                    return;
                }
            };
            let mut packet = NO_PACKET;
            if c.packets_read != *seen_packets {
                *seen_packets = c.packets_read;
                if let Some(file) = c.file() {
                    let start = self.ctx.len();
                    self.ctx.extend_from_slice(&c.packet_context);
                    packet = self.packets.len() as u32;
                    self.packets.push(BPacket {
                        file: file.clone(),
                        info: c.packet.clone(),
                        ctx: start..self.ctx.len(),
                        packets_read: c.packets_read,
                    });
                }
            }
            let ev = &c.event;
            let v0 = self.values.len() as u32;
            let t0 = self.text.len();
            let cycles = match item {
                Item::Event => ev.ts,
                Item::DiscardedEvents { begin, end, .. }
                | Item::DiscardedPackets { begin, end, .. } => begin.or(end),
            };
            let ns = match (cycles, clock) {
                (Some(cy), Some(conv)) => match conv.ns_of_item(cy, c, item) {
                    Ok(ns) => Some(ns),
                    Err(e) => {
                        self.end = Some(Err(e));
                        self.end_packets = c.packets_read;
                        return;
                    }
                },
                _ => None,
            };
            if item == Item::Event {
                match render.as_deref_mut() {
                    Some(r) => r.render(c, ns, &mut self.text),
                    None => self.values.extend_from_slice(&ev.values),
                }
            }
            self.items.push(BItem {
                item,
                packet,
                event: ev.event as u32,
                ts: ev.ts,
                offset: ev.offset,
                v0,
                bounds: ev.bounds.map(|b| b as u32),
                text: (t0 as u32, (self.text.len() - t0) as u32),
                ns,
            });
        }
    }
}

struct Slot {
    ready: VecDeque<Batch>,
    free: Vec<Batch>,
    cursor: Option<Box<StreamCursor>>,
    /// In the work queue or being decoded.
    queued: bool,
    seen_packets: u64,
}

struct Shared {
    slots: Vec<Mutex<Slot>>,
    ready_cv: Vec<Condvar>,
    /// Streams to decode a batch of, and the shutdown flag.
    work: Mutex<(VecDeque<usize>, bool)>,
    work_cv: Condvar,
    max_values: usize,
    render: Option<RenderFactory>,
    clocks: Vec<Option<crate::ClockConv>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker never panics while holding a lock (decoding errors are
    // values); recover the data if one did anyway.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn push_work(&self, s: usize) {
        lock(&self.work).0.push_back(s);
        self.work_cv.notify_one();
    }

    fn worker(&self) {
        let mut render = self.render.as_ref().map(|f| f());
        loop {
            let s = {
                let mut w = lock(&self.work);
                loop {
                    if w.1 {
                        return;
                    }
                    if let Some(s) = w.0.pop_front() {
                        break s;
                    }
                    w = self.work_cv.wait(w).unwrap_or_else(|p| p.into_inner());
                }
            };
            self.decode_batch(s, render.as_deref_mut());
        }
    }

    /// Decodes the next batch of stream `s` (taken from the work queue).
    fn decode_batch(&self, s: usize, render: Option<&mut (dyn Render + '_)>) {
        let (cursor, batch, mut seen) = {
            let mut sl = lock(&self.slots[s]);
            let seen = sl.seen_packets;
            (sl.cursor.take(), sl.free.pop().unwrap_or_default(), seen)
        };
        let (Some(mut cursor), mut batch) = (cursor, batch) else {
            return;
        };
        batch.fill(
            &mut cursor,
            &mut seen,
            self.max_values,
            render,
            self.clocks[s],
        );
        let ended = batch.end.is_some();
        let requeue = {
            let mut sl = lock(&self.slots[s]);
            sl.cursor = Some(cursor);
            sl.seen_packets = seen;
            sl.ready.push_back(batch);
            let again = !ended && sl.ready.len() < DEPTH;
            sl.queued = again;
            again
        };
        self.ready_cv[s].notify_one();
        if requeue {
            self.push_work(s);
        }
    }

    /// The next batch of stream `s`. While it is not ready, the calling
    /// (merging) thread decodes queued batches itself rather than wait: with
    /// as many workers as cores, a worker it waits for may not be running.
    fn take(&self, s: usize, mut render: Option<&mut (dyn Render + '_)>) -> Batch {
        let mut sl = lock(&self.slots[s]);
        loop {
            if let Some(b) = sl.ready.pop_front() {
                let ended = b.end.is_some();
                if !sl.queued && !ended && sl.ready.iter().all(|r| r.end.is_none()) {
                    sl.queued = true;
                    drop(sl);
                    self.push_work(s);
                }
                return b;
            }
            drop(sl);
            // Prefer the stream waited for, else any queued one.
            let job = {
                let mut w = lock(&self.work);
                match w.0.iter().position(|&q| q == s) {
                    Some(i) => w.0.remove(i),
                    None => w.0.pop_front(),
                }
            };
            if let Some(j) = job {
                self.decode_batch(j, render.as_deref_mut());
                sl = lock(&self.slots[s]);
                continue;
            }
            sl = lock(&self.slots[s]);
            if sl.ready.is_empty() {
                sl = self.ready_cv[s].wait(sl).unwrap_or_else(|p| p.into_inner());
            }
        }
    }
}

/// Streams decoded ahead by worker threads.
pub struct Feed {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The batch being presented for each stream, and the next item in it.
    current: Vec<Option<(Batch, usize)>>,
    /// The merging thread's renderer, for the batches it decodes itself.
    render: Option<Box<dyn Render>>,
    finished: Vec<bool>,
}

impl Feed {
    /// Starts `workers` threads decoding `cursors` (moved to the workers);
    /// `views` receives what the caller presents. The calling thread also
    /// decodes batches, whenever the one it needs next is not ready.
    ///
    /// With `render`, each worker formats every event as it decodes it;
    /// the events' values are then not kept ([`Feed::text`] gives the
    /// text; the view shows the event's class, time and offset only).
    pub fn new(
        cursors: Vec<StreamCursor>,
        workers: usize,
        render: Option<RenderFactory>,
        clocks: Vec<Option<crate::ClockConv>>,
    ) -> Feed {
        let n = cursors.len();
        let max_values = (VALUE_BUDGET / n.max(1)).clamp(1024, 1 << 15);
        let shared = Arc::new(Shared {
            slots: cursors
                .into_iter()
                .map(|c| {
                    Mutex::new(Slot {
                        ready: VecDeque::new(),
                        free: Vec::new(),
                        seen_packets: c.packets_read,
                        cursor: Some(Box::new(c)),
                        queued: true,
                    })
                })
                .collect(),
            ready_cv: (0..n).map(|_| Condvar::new()).collect(),
            work: Mutex::new(((0..n).collect(), false)),
            work_cv: Condvar::new(),
            max_values,
            render,
            clocks,
        });
        let threads = (0..workers.min(n.max(1)))
            .map(|_| {
                let sh = shared.clone();
                std::thread::spawn(move || sh.worker())
            })
            .collect();
        Feed {
            render: shared.render.as_ref().map(|f| f()),
            shared,
            threads,
            current: (0..n).map(|_| None).collect(),
            finished: vec![false; n],
        }
    }

    /// The rendered text of the event [`Feed::next`] last returned for
    /// stream `s` (empty without rendering).
    pub fn text(&self, s: usize) -> &[u8] {
        match &self.current[s] {
            Some((b, pos)) if *pos > 0 => match b.items.get(*pos - 1) {
                Some(it) => {
                    let (a, l) = (it.text.0 as usize, it.text.1 as usize);
                    &b.text[a..a + l]
                }
                None => &[],
            },
            _ => &[],
        }
    }

    /// The time (ns from the origin) of the message [`Feed::next`] last
    /// returned for stream `s`, when its stream has a clock.
    pub fn ns(&self, s: usize) -> Option<i64> {
        match &self.current[s] {
            Some((b, pos)) if *pos > 0 => b.items.get(*pos - 1).and_then(|it| it.ns),
            _ => None,
        }
    }

    /// The next message of stream `s`, presented in `view`.
    pub fn next(&mut self, s: usize, view: &mut StreamCursor) -> Result<Option<Item>, Error> {
        loop {
            if self.finished[s] {
                return Ok(None);
            }
            if let Some((batch, pos)) = &mut self.current[s] {
                if let Some(&it) = batch.items.get(*pos) {
                    *pos += 1;
                    if it.packet != NO_PACKET {
                        let p = &batch.packets[it.packet as usize];
                        view.present_packet(
                            &p.file,
                            &p.info,
                            &batch.ctx[p.ctx.clone()],
                            p.packets_read,
                        );
                    }
                    if it.item == Item::Event {
                        let ev = &mut view.event;
                        let v0 = it.v0 as usize;
                        ev.values.clear();
                        if it.text.1 == 0 {
                            ev.values
                                .extend_from_slice(&batch.values[v0..v0 + it.bounds[3] as usize]);
                            ev.bounds = it.bounds.map(|b| b as usize);
                        } else {
                            ev.bounds = [0; 4];
                        }
                        ev.event = it.event as usize;
                        ev.ts = it.ts;
                        ev.offset = it.offset;
                    }
                    return Ok(Some(it.item));
                }
                if let Some(end) = batch.end.take() {
                    self.finished[s] = true;
                    view.packets_read = batch.end_packets;
                    if let Some((b, _)) = self.current[s].take() {
                        lock(&self.shared.slots[s]).free.push(b);
                    }
                    return end.map(|()| None);
                }
                if let Some((b, _)) = self.current[s].take() {
                    lock(&self.shared.slots[s]).free.push(b);
                }
            }
            let batch = self.shared.take(s, self.render.as_deref_mut());
            self.current[s] = Some((batch, 0));
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        lock(&self.shared.work).1 = true;
        self.shared.work_cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
