//! The per-stream scan of `reef check`: every stream decoded on its own,
//! counted without a message per event where it can be.

use reef_ctf::{Item, StreamCursor};

use crate::Error;

/// What [`Source::scan_streams`](crate::Source::scan_streams) found in one stream.
#[derive(Default)]
pub struct StreamScan {
    pub events: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub discarded_events: u64,
    pub discarded_packets: u64,
    pub packets: u64,
    /// The error that stopped the stream, with the time of the last
    /// message before it (to report the earliest error first).
    pub error: Option<(i64, Error)>,
}

// `settle!` also runs just before the loop ends, where its updates are unused.
#[allow(unused_assignments)]
pub(crate) fn scan_one(c: &mut StreamCursor, begin: i64, end: i64) -> StreamScan {
    let mut s = StreamScan::default();
    let conv = c.trace.class.streams[c.stream]
        .clock
        .map(|ci| reef_iter::ClockConv::new(&c.trace.class.meta.clocks[ci]));
    // Converting cycles to ns (babeltrace2's double division) costs more
    // than decoding a small event. The conversion never decreases, so
    // with no window a message whose cycles are at least the previous
    // one's, and whose time exists, is in order: its time is only needed
    // when it is the last. Such messages take the short way below.
    let fast = match conv {
        Some(cv) if begin == i64::MIN && end == i64::MAX => cv.defined_range(),
        _ => None,
    };
    let ns_of = |cy: u64| conv.as_ref().and_then(|cv| cv.ns(cy));
    let mut last = i64::MIN;
    // The cycles `last` is the time of; `stale`: not converted yet.
    let mut last_cy: Option<u64> = None;
    let mut stale = false;
    // The cycles of the last event, when `s.last_ns` is not converted yet.
    let mut last_event_cy: Option<u64> = None;
    // Brings `last` and `s.last_ns` up to date.
    macro_rules! settle {
        () => {
            if stale {
                stale = false;
                if let Some(ns) = last_cy.and_then(ns_of) {
                    last = ns;
                }
            }
            if let Some(cy) = last_event_cy.take() {
                s.last_ns = ns_of(cy).or(s.last_ns);
            }
        };
    }
    loop {
        // Inside a packet, events in order and inside the defined range
        // are counted in one loop, without an item each.
        if let (Some((lo, hi)), Some(mut cy), Some(_)) = (fast, last_cy, s.first_ns) {
            let before = s.events;
            let run = c.skim_run(&mut cy, lo, hi, &mut s.events);
            if s.events != before {
                last_cy = Some(cy);
                stale = true;
                last_event_cy = Some(cy);
            }
            if let Err(err) = run {
                settle!();
                s.error = Some((last, err.into()));
                break;
            }
        }
        let item = match c.next_skimmed() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(err) => {
                settle!();
                s.error = Some((last, err.into()));
                break;
            }
        };
        let cycles = match item {
            Item::Event => c.event.ts,
            Item::DiscardedEvents { begin, end, .. }
            | Item::DiscardedPackets { begin, end, .. } => begin.or(end),
        };
        if let (Some(cy), Some((lo, hi)), Some(lc)) = (cycles, fast, last_cy) {
            if cy >= lc && cy >= lo && cy <= hi && (item != Item::Event || s.first_ns.is_some()) {
                last_cy = Some(cy);
                stale = true;
                match item {
                    Item::Event => {
                        s.events += 1;
                        last_event_cy = Some(cy);
                    }
                    Item::DiscardedEvents { count, .. } => s.discarded_events += count.unwrap_or(0),
                    Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
                }
                continue;
            }
        }
        settle!();
        let ns = match (cycles, conv.as_ref()) {
            (Some(cy), Some(cv)) => match cv.ns_of_item(cy, c, item) {
                Ok(ns) => Some(ns),
                Err(err) => {
                    s.error = Some((last, err.into()));
                    break;
                }
            },
            _ => None,
        };
        if let Some(ns) = ns {
            if ns < last {
                s.error = Some((
                    last,
                    reef_ctf::Error::Stream {
                        path: c.file_path().map(|p| p.to_path_buf()).unwrap_or_default(),
                        offset: c.event.offset,
                        msg: format!(
                            "time goes backwards: message at {ns} ns from origin follows one at {last} ns"
                        ),
                    }
                    .into(),
                ));
                break;
            }
            last = ns;
            last_cy = cycles;
            if ns > end {
                break;
            }
            if ns < begin {
                continue;
            }
        }
        match item {
            Item::Event => {
                s.events += 1;
                if let Some(ns) = ns {
                    s.first_ns.get_or_insert(ns);
                    s.last_ns = Some(ns);
                }
            }
            Item::DiscardedEvents { count, .. } => s.discarded_events += count.unwrap_or(0),
            Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
        }
    }
    if let Some(cy) = last_event_cy {
        s.last_ns = ns_of(cy).or(s.last_ns);
    }
    s.packets = c.packets_read;
    s
}
