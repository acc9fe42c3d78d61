//! The shape of each trace, as `reef check` reports it: streams, packets,
//! event classes, events, time range, discarded events and packets — with
//! every field of every event decoded on the way.

use std::ops::ControlFlow;
use std::path::PathBuf;

use reef_ctf::Item;
use reef_read::{Error, Source};
use serde::Serialize;

/// One trace's shape.
#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceShape {
    /// The trace's directory (or capture file).
    pub path: PathBuf,
    /// babeltrace2's name for it (may be empty).
    pub name: String,
    pub streams: usize,
    pub packets: u64,
    pub event_classes: usize,
    pub events: u64,
    /// ns from the clock's origin; `None` without a clock.
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub discarded_events: u64,
    pub discarded_packets: u64,
}

impl TraceShape {
    fn add_time(&mut self, first: Option<i64>, last: Option<i64>) {
        if let Some(f) = first {
            self.first_ns = Some(self.first_ns.map_or(f, |x| x.min(f)));
        }
        if let Some(l) = last {
            self.last_ns = Some(self.last_ns.map_or(l, |x| x.max(l)));
        }
    }
}

/// Reads everything `src` holds and gives each trace's shape, with the
/// error that stopped the reading (the shapes then cover what was read
/// before it: for several streams, the earliest error in time).
///
/// Without a filter, each stream is decoded on its own, on `workers`
/// threads (the results are per trace, the order across streams does not
/// matter); with one, in time order.
pub fn check(src: Source, workers: usize) -> (Vec<TraceShape>, Option<Error>) {
    let mut shapes: Vec<TraceShape> = src
        .traces
        .iter()
        .zip(&src.labels)
        .map(|(t, l)| TraceShape {
            path: t.path.clone(),
            name: l.name.clone(),
            streams: t.sources.len(),
            event_classes: t.meta().streams.iter().map(|s| s.events.len()).sum(),
            ..Default::default()
        })
        .collect();
    let trace_of = src.trace_of.clone();
    // Reading to the end of a capture cut inside a record is an error;
    // a window with an end may stop before the cut. Damaged inputs are
    // reported whatever the window.
    let (ending, has_end) = (src.ending().clone(), src.has_end());
    let mut src = match src.scan_streams(workers) {
        Ok(scans) => {
            let mut first_err: Option<(i64, Error)> = None;
            for (i, sc) in scans.into_iter().enumerate() {
                let s = &mut shapes[trace_of[i]];
                s.events += sc.events;
                s.packets += sc.packets;
                s.discarded_events += sc.discarded_events;
                s.discarded_packets += sc.discarded_packets;
                s.add_time(sc.first_ns, sc.last_ns);
                if let Some((at, e)) = sc.error {
                    if first_err.as_ref().is_none_or(|(t, _)| at < *t) {
                        first_err = Some((at, e));
                    }
                }
            }
            let err = ending.error(first_err.map(|(_, e)| e), has_end);
            return (shapes, err);
        }
        Err(src) => src,
    };
    let stopped = src
        .for_each_message(|m| {
            let s = &mut shapes[m.trace];
            match m.item {
                Item::Event => {
                    s.events += 1;
                    s.add_time(m.ns, m.ns);
                }
                Item::DiscardedEvents { count, .. } => s.discarded_events += count.unwrap_or(0),
                Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
            }
            Ok::<_, std::convert::Infallible>(ControlFlow::Continue(()))
        })
        .unwrap_or_else(|never| match never {});
    for (i, c) in src.cursors().iter().enumerate() {
        shapes[src.trace_of[i]].packets += c.packets_read;
    }
    (shapes, stopped)
}
