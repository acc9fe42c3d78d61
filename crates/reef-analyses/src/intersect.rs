//! The "stream intersection" lttng-analyses reads by default (babeltrace
//! 1.5's intersect mode): only the time range every stream covers, from
//! the latest first-packet beginning to the earliest last-packet end, so
//! that no CPU's state is guessed while another's stream has no data yet.
//!
//! The trace's opening scan knows where every packet lies and when most
//! of them end (`StreamFile::packets`): a stream file's beginning is read
//! in its first packet, its end taken from the table, or read in its last
//! packet when the table has none (no end time, or one before its
//! beginning). A stream whose file is cut inside a packet ends at its
//! last complete event. Where that does not tell (no table, a first
//! packet without a beginning, a last one without an end), every
//! packet's header and context is read, their pages released behind, as
//! the streams' readers do.

use std::sync::Arc;

use reef_ctf::decode::State;
use reef_ctf::stream::{read_packet, PacketScratch};
use reef_ctf::trace::StreamFile;
use reef_ctf::{PacketInfo, Trace, TraceClass};

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
            let mut scratch = PacketScratch {
                st: &mut st,
                ph_state: &mut ph_state,
                scratch: &mut scratch,
                context: &mut context,
            };
            for f in &src.files {
                let (b, e) = match f.packets.get() {
                    Some(table) => ends_from_table(class, f, table, &mut scratch),
                    None => ends_by_walk(class, f, &mut scratch),
                };
                first = first.or(b);
                last = e.or(last);
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

/// What a stream file's packets say of its time range: the beginning of
/// the first packet that has one, the end of the last one that has one
/// (the cut packet's: the time of its last complete event).
type Ends = (Option<u64>, Option<u64>);

/// The end of `f`'s packet at `off`, whose header and context say
/// `info`: the time of its last complete event when it is the cut packet,
/// else its `timestamp_end` (`None` without one).
fn packet_end(f: &StreamFile, off: u64, info: &PacketInfo) -> Option<u64> {
    let cut_end = f
        .cut
        .get()
        .and_then(|c| Some((c.packet, f.packets.get()?.last()?.1)));
    match cut_end {
        Some((at, end)) if at == off && end != u64::MAX => Some(end),
        _ => info.ts_end,
    }
}

/// [`Ends`] of `f` from its packet table (`table`, of the opening scan):
/// the first packet's beginning, and the last one's end from the table,
/// or from the packet when the table has none. A file whose first packet
/// has no beginning, or whose last has no end, is walked
/// ([`ends_by_walk`]).
fn ends_from_table(
    class: &TraceClass,
    f: &StreamFile,
    table: &[(u64, u64)],
    s: &mut PacketScratch,
) -> Ends {
    let (Some(&(first, _)), Some(&(last, end))) = (table.first(), table.last()) else {
        return ends_by_walk(class, f, s);
    };
    let Some(begin) = read_one(class, f, first, s).and_then(|p| p.ts_begin) else {
        return ends_by_walk(class, f, s);
    };
    // The table's end is the packet's, unless it has none or one before
    // its beginning (`u64::MAX` then): the packet tells.
    let end = match end {
        u64::MAX => read_one(class, f, last, s).and_then(|p| packet_end(f, last, &p)),
        e => Some(e),
    };
    match end {
        Some(_) => (Some(begin), end),
        None => ends_by_walk(class, f, s),
    }
}

/// The packet of `f` at `off`, read for [`ends_from_table`], its pages
/// released (`None` if it is malformed).
fn read_one(
    class: &TraceClass,
    f: &StreamFile,
    off: u64,
    s: &mut PacketScratch,
) -> Option<PacketInfo> {
    let read = read_packet(class, f, off, s).ok().map(|r| r.1);
    let at = off as usize;
    f.release_all(at, at.saturating_add(4096).min(f.end() as usize));
    read
}

/// [`Ends`] of `f`, every packet's header and context read in turn.
fn ends_by_walk(class: &TraceClass, f: &StreamFile, s: &mut PacketScratch) -> Ends {
    let (mut first, mut last) = (None, None);
    let len = f.end();
    let mut off = 0u64;
    // (the headers' pages are released as the trace's opening scan does,
    // in batches: the analysis maps them again when it gets there, and
    // memory stays bounded by the streams)
    let mut released = 0u64;
    while off < len {
        // A malformed packet ends the scan of this file: the analysis
        // reports the error when it gets there, after the events before it.
        let Ok((_, info, _)) = read_packet(class, f, off, s) else {
            break;
        };
        if first.is_none() {
            first = info.ts_begin;
        }
        if let Some(e) = packet_end(f, off, &info) {
            last = Some(e);
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
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// The trace directories under `dir` (those holding a `metadata`).
    fn traces_under(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut subs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        subs.sort();
        if subs
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "metadata"))
        {
            out.push(dir.to_path_buf());
        }
        for p in subs.into_iter().filter(|p| p.is_dir()) {
            traces_under(&p, out);
        }
    }

    /// Compares both ways on every stream file of the traces of `dir`
    /// that opens: (files, with a time range, cut, whose table has no end
    /// for the last packet).
    fn compare(dir: &Path) -> [usize; 4] {
        let mut n = [0; 4];
        let Ok(src) = reef_read::Source::open(&reef_read::ReadOptions::new([dir])) else {
            return n;
        };
        for t in &src.traces {
            let class = &t.class;
            let mut ph_state = State::new(class.packet_header_slots);
            let (mut scratch, mut context) = (Vec::new(), Vec::new());
            for s in &t.sources {
                let mut st = State::new(class.streams[s.stream].refs.len());
                let mut ps = PacketScratch {
                    st: &mut st,
                    ph_state: &mut ph_state,
                    scratch: &mut scratch,
                    context: &mut context,
                };
                for f in &s.files {
                    let Some(table) = f.packets.get() else {
                        continue;
                    };
                    let walked = ends_by_walk(class, f, &mut ps);
                    let from_table = ends_from_table(class, f, table, &mut ps);
                    assert_eq!(from_table, walked, "{}", f.path.display());
                    n[0] += 1;
                    n[1] += usize::from(walked.1.is_some());
                    n[2] += usize::from(f.cut.get().is_some());
                    n[3] += usize::from(table.last().is_some_and(|p| p.1 == u64::MAX));
                }
            }
        }
        n
    }

    fn add(a: &mut [usize; 4], b: [usize; 4]) {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
    }

    /// On every shared trace that opens, the packet table gives each
    /// stream file's time range as walking its packets does.
    #[test]
    fn table_ends_are_walked_ends() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance");
        let mut dirs = Vec::new();
        for d in [
            "babeltrace-traces",
            "ctf2/traces",
            "kernel-traces",
            "ctf-testsuite-1.8",
        ] {
            traces_under(&root.join(d), &mut dirs);
        }
        let mut n = [0; 4];
        for dir in &dirs {
            add(&mut n, compare(dir));
        }
        // (hundreds of stream files, most with a time range; some whose
        // last packet's end the table does not give)
        let [files, ranged, _, endless] = n;
        assert!(files > 250 && ranged > 150 && endless > 50, "{n:?}");
    }

    /// The same on a kernel trace whose stream file is cut: inside its
    /// last packet's events, inside a packet's header, anywhere.
    #[test]
    fn table_ends_of_cut_files() {
        let kernel = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/kernel-traces/bug446190");
        let tmp = std::env::temp_dir().join(format!("reef-intersect-{}", std::process::id()));
        let mut n = [0; 4];
        let whole = std::fs::read(kernel.join("channel0_0")).unwrap();
        let len = whole.len();
        for cut in [len - 1, len - 3000, len / 2 + 17, len / 3, 4096 + 3, 100] {
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(&tmp).unwrap();
            // (the stream files and the metadata: not LTTng's index, which
            // speaks of the whole file)
            for name in ["metadata", "channel0_1", "channel0_2", "channel0_3"] {
                std::fs::write(tmp.join(name), std::fs::read(kernel.join(name)).unwrap()).unwrap();
            }
            std::fs::write(tmp.join("channel0_0"), &whole[..cut]).unwrap();
            add(&mut n, compare(&tmp));
        }
        let _ = std::fs::remove_dir_all(&tmp);
        let [files, _, cut, _] = n;
        assert!(files >= 10 && cut >= 4, "{n:?}");
    }
}
