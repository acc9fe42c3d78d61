//! The "stream intersection" lttng-analyses reads by default (babeltrace
//! 1.5's intersect mode): only the time range every stream covers, from
//! the latest first-packet beginning to the earliest last-packet end, so
//! that no CPU's state is guessed while another's stream has no data yet.
//!
//! Only packet headers and contexts are read, one per packet (their pages
//! released behind, as the streams' readers do). A stream whose file is
//! cut inside a packet ends at its last complete event.

use std::sync::Arc;

use reef_ctf::decode::State;
use reef_ctf::stream::{read_packet, PacketScratch};
use reef_ctf::Trace;

/// `[begin, end]` in ns from the origin, over every stream of `traces` that
/// has packets with timestamps; `None` if no stream has any. `begin > end`
/// when some streams do not overlap at all.
pub fn stream_intersection(traces: &[Arc<Trace>]) -> Option<(i64, i64)> {
    let mut window: Option<(i64, i64)> = None;
    for t in traces {
        let class = &t.class;
        let mut ph_state = State::new(class.packet_header_slots);
        let mut scratch = Vec::new();
        let mut context = Vec::new();
        for src in &t.sources {
            let sp = &class.streams[src.stream];
            let Some(clock) = sp.clock.map(|c| &class.meta.clocks[c]) else {
                continue;
            };
            let mut st = State::new(sp.refs.len());
            let mut first: Option<u64> = None;
            let mut last: Option<u64> = None;
            for f in &src.files {
                let len = f.end();
                // A stream file cut inside a packet ends with its last
                // complete event (see `reef_ctf::FileCut`): the packet's
                // end time speaks of events that are not there.
                let cut_end = f
                    .cut
                    .get()
                    .and_then(|c| Some((c.packet, f.packets.get()?.last()?.1)));
                let mut off = 0u64;
                // (the headers' pages are released as the trace's opening
                // scan does, in batches: the analysis maps them again when
                // it gets there, and memory stays bounded by the streams)
                let mut released = 0u64;
                while off < len {
                    // A malformed packet ends the scan of this stream: the
                    // analysis reports the error when it gets there, after
                    // the events before it.
                    let Ok((_, info, _)) = read_packet(
                        class,
                        f,
                        off,
                        &mut PacketScratch {
                            st: &mut st,
                            ph_state: &mut ph_state,
                            scratch: &mut scratch,
                            context: &mut context,
                        },
                    ) else {
                        break;
                    };
                    if first.is_none() {
                        first = info.ts_begin;
                    }
                    match cut_end {
                        Some((at, end)) if at == off && end != u64::MAX => last = Some(end),
                        _ if info.ts_end.is_some() => last = info.ts_end,
                        _ => {}
                    }
                    let step = info.packet_bits / 8;
                    if step == 0 {
                        break;
                    }
                    off += step;
                    if (off - released) as usize >= reef_ctf::stream::RELEASE_CHUNK {
                        f.release(released as usize, off as usize);
                        released = off;
                    }
                }
                f.release_all(released as usize, off.min(len) as usize);
            }
            let (Some(b), Some(e)) = (
                first.and_then(|c| clock.ns_from_origin(c)),
                last.and_then(|c| clock.ns_from_origin(c)),
            ) else {
                continue;
            };
            window = Some(match window {
                None => (b, e),
                Some((wb, we)) => (wb.max(b), we.min(e)),
            });
        }
    }
    window
}
