//! `reef recover DIR -o OUT`: the trace of a libreef program that died,
//! from its stream files and its crash-safe rings (`REEF_CRASH_SAFE=1`).
//!
//! A ring is `DIR/.reef-rings/ring_<instance id>`, a shared mapping the
//! program's thread recorded into (layout: `tracer/src/internal.h`, struct
//! `reef_ring_header`, then the packet slots). A slot holds a closed packet
//! when its `content_size` is set (libreef stores it last when it closes a
//! packet, and clears it first when it opens one), or the open packet,
//! whose last 8 bytes (the commit word) hold the address where its last
//! complete event ends. The output stream `stream_<id>` is: the complete
//! packets of `DIR/stream_<id>` (what the consumer wrote; a packet cut by
//! the crash is left out), then the ring's closed packets with a higher
//! sequence number, in order, then the open packet's complete events. The
//! bytes of the metadata and of every packet are copied as they are; only
//! the open packet's context is completed (sizes, end time: its last
//! event's, discarded count: the previous packet's).
//!
//! Nothing it cannot use is passed over in silence: a ring or stream file
//! that is not a regular file (a FIFO would block), a ring whose header
//! is damaged (read by its sizes, else its slots found by their packet
//! headers), a slot whose sizes are damaged (its length taken from its
//! `packet_size` or its commit word), two rings of one stream (their
//! packets merged by sequence number), a stream file range that is not a
//! packet (passed over to the next packet of the stream). Each is said,
//! with its file and offset; when data is left out, the command exits 1
//! after writing what it could (the bytes scanned: `recover_scan.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use reef_read::{ReadOptions, Source};

#[path = "recover_scan.rs"]
mod scan;

use scan::{put_u64, u32_at, u64_at, Kind, Packet};
use scan::{OFF_CONTENT_SIZE, OFF_DISCARDED, OFF_PACKET_SIZE, OFF_TID, OFF_TS_BEGIN, OFF_TS_END};

/// Write the trace of a libreef program that died: its stream files
/// completed with what its crash-safe rings (REEF_CRASH_SAFE=1) held.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// The trace directory the program was writing (REEF_OUTPUT).
    pub dir: PathBuf,
    /// Where to write the recovered trace (a new or empty directory).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub out: PathBuf,
}

const RING_DIR: &str = ".reef-rings";

/// `path`'s bytes, when it is a regular file (a FIFO or a device is
/// never opened for reading: it could block, or never end).
fn read_regular(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let kind = |m: &std::fs::Metadata| {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        }
    };
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err(format!("{}, not a regular file: left out", kind(&m)));
    }
    // O_NONBLOCK: a FIFO put there since is not waited on.
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(0o4000)
            .open(path)
            .map_err(|e| e.to_string())?
    };
    let m = f.metadata().map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err(format!("{}, not a regular file: left out", kind(&m)));
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut data).map_err(|e| e.to_string())?;
    Ok(data)
}

/// What could not be used: said as it is found; `lost`, when data is
/// left out of the output (the exit status is then 1).
#[derive(Default)]
struct Notes {
    lost: Vec<String>,
}

impl Notes {
    fn note(&mut self, path: &Path, offset: u64, what: &str) {
        eprintln!("reef recover: {}: offset {offset}: {what}", path.display());
    }
    fn lost(&mut self, path: &Path, offset: u64, what: &str) {
        self.lost
            .push(format!("{}: offset {offset}: {what}", path.display()));
    }
}

pub fn run(a: &RecoverArgs) -> anyhow::Result<ExitCode> {
    let dir = &a.dir;
    let meta = dir.join("metadata");
    if !meta.is_file() {
        bail!(
            "{}: no metadata: not a trace directory written by libreef",
            dir.display()
        );
    }
    if a.out.exists() && std::fs::read_dir(&a.out)?.next().is_some() {
        bail!(
            "{}: exists and is not empty: give a new or empty directory",
            a.out.display()
        );
    }
    let class = reef_ctf::trace::TraceClass::load(dir)?;
    // The metadata is copied as it is: a cut one (which reading commands
    // read with the declarations before the cut) would make a damaged
    // trace.
    if let Some(d) = &class.damage {
        return Err(d.error().into());
    }
    // The packet layout read below is libreef's.
    match class.meta.env_get("tracer_name") {
        Some(reef_ctf::model::EnvValue::Str(t)) if t == "reef" => {}
        other => bail!(
            "{}: not a libreef trace (env.tracer_name is {}): reef recover reads libreef's stream files and rings only",
            meta.display(),
            match other {
                Some(reef_ctf::model::EnvValue::Str(t)) => format!("\"{t}\""),
                Some(reef_ctf::model::EnvValue::Int(i)) => i.to_string(),
                None => "missing".into(),
            }
        ),
    }
    let known_id = |id: u64| class.streams.iter().any(|s| s.event_by_id(id).is_some());

    // Rings, by stream instance id.
    let mut notes = Notes::default();
    // Ring files, read whole (regular files only).
    let mut ring_data: Vec<(PathBuf, Option<u64>, Vec<u8>)> = Vec::new();
    let ring_dir = dir.join(RING_DIR);
    if ring_dir.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(&ring_dir)?
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("{}", ring_dir.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix("ring_") else {
                continue;
            };
            let path = e.path();
            match read_regular(&path) {
                Ok(d) => ring_data.push((path, rest.parse::<u64>().ok(), d)),
                Err(why) => notes.lost(&path, 0, &why),
            }
        }
    }
    // Stream files, by instance id.
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(id) = name
            .strip_prefix("stream_")
            .and_then(|s| s.parse::<u64>().ok())
        {
            match read_regular(&e.path()) {
                Ok(d) => {
                    files.insert(id, (e.path(), d));
                }
                Err(why) => notes.lost(&e.path(), 0, &why),
            }
        }
    }
    // The trace's UUID: the metadata's, else the first legible ring
    // header's, else the first stream file's.
    let uuid: Option<[u8; 16]> = class
        .meta
        .uuid
        .or_else(|| {
            ring_data
                .iter()
                .find(|(_, _, d)| d.len() >= 56 && &d[..8] == scan::RING_MAGIC)
                .and_then(|(_, _, d)| d[40..56].try_into().ok())
        })
        .or_else(|| {
            files
                .values()
                .find(|(_, d)| u32_at(d, 0) == scan::MAGIC && d.len() >= 20)
                .and_then(|(_, d)| d[4..20].try_into().ok())
        });
    // Rings, by stream instance id (two rings of one stream are merged).
    struct RingOf {
        path: PathBuf,
        scan: scan::RingScan,
    }
    let mut rings: BTreeMap<u64, Vec<RingOf>> = BTreeMap::new();
    for (path, name_id, data) in ring_data {
        let r = scan::ring(&data, name_id, uuid.as_ref());
        if r.not_started {
            eprintln!(
                "reef recover: {}: a thread that had not started recording yet (the ring is all zero)",
                path.display()
            );
            continue;
        }
        for p in &r.problems {
            if p.lost {
                // Decided once the streams are put together: the packet
                // may be in its stream file anyway.
                continue;
            }
            notes.note(&path, p.offset, &p.what);
        }
        rings
            .entry(r.instance_id)
            .or_default()
            .push(RingOf { path, scan: r });
    }
    for (id, rs) in &rings {
        if rs.len() > 1 {
            let names: Vec<String> = rs.iter().map(|r| r.path.display().to_string()).collect();
            eprintln!(
                "reef recover: {} rings hold stream {id}: {}; their packets are merged by sequence number",
                rs.len(),
                names.join(", ")
            );
        }
    }
    let ids: BTreeSet<u64> = files.keys().chain(rings.keys()).copied().collect();

    std::fs::create_dir_all(&a.out).with_context(|| format!("{}", a.out.display()))?;
    std::fs::copy(&meta, a.out.join("metadata"))
        .with_context(|| format!("{}", a.out.join("metadata").display()))?;

    struct Made {
        id: u64,
        tid: Option<u32>,
        from_file: usize,
        cut_bytes: u64,
        cut_why: Option<String>,
        from_ring: usize,
        has_ring: bool,
        open: Option<usize>, // index of the open packet in `packets`
        packets: Vec<Packet>,
        in_flight: bool,
    }
    let mut made = Vec::new();
    for id in ids {
        let fscan = match files.get(&id) {
            Some((_, d)) => scan::stream_file(d, uuid.as_ref(), id),
            None => scan::FileScan::default(),
        };
        let mut packets = fscan.packets;
        let from_file = packets.len();
        let in_file: BTreeSet<u64> = packets.iter().map(|p| p.seq).collect();
        let (mut from_ring, mut in_flight, mut tid) = (0, false, None);
        let mut rp: Vec<Packet> = Vec::new();
        for r in rings.get(&id).into_iter().flatten() {
            rp.extend(r.scan.packets.iter().cloned());
            if let Some((eid, ts, begin)) = r.scan.after_open {
                in_flight |= known_id(eid) && ts >= begin && ts != 0;
            }
            tid = tid.or(r.scan.tid);
        }
        rp.retain(|p| !in_file.contains(&p.seq));
        // Latest first among equal sequence numbers of several rings: an
        // open packet over a closed one of the same number never happens
        // in one ring; across two, the closed (complete) one is kept.
        rp.sort_by_key(|p| {
            (
                p.seq,
                p.kind != Kind::Closed,
                std::cmp::Reverse(p.bytes.len()),
            )
        });
        let mut kept: Vec<Packet> = Vec::new();
        for p in rp {
            match kept.last() {
                Some(q) if q.seq == p.seq => {
                    if q.bytes != p.bytes && !(q.bytes.starts_with(&p.bytes)) {
                        let path = &rings[&id][0].path;
                        notes.lost(
                            path,
                            0,
                            &format!(
                                "stream {id}: two rings hold different packets numbered {}: the second is left out",
                                p.seq
                            ),
                        );
                    }
                }
                _ => kept.push(p),
            }
        }
        // One open packet: the latest; an earlier one is a closed packet
        // whose sizes were cleared.
        let latest_open = kept.iter().rposition(|p| p.kind == Kind::Open);
        for (k, p) in kept.iter_mut().enumerate() {
            if p.kind == Kind::Open && Some(k) != latest_open {
                p.kind = Kind::Repaired;
            }
        }
        from_ring = from_ring.max(kept.iter().filter(|p| p.kind != Kind::Open).count());
        packets.extend(kept);
        packets.sort_by_key(|p| p.seq);
        let have: BTreeSet<u64> = packets.iter().map(|p| p.seq).collect();
        let has_ring = rings.contains_key(&id);
        // What the rings could not give is lost unless the packet is in
        // the output anyway.
        for r in rings.get(&id).into_iter().flatten() {
            for p in r.scan.problems.iter().filter(|p| p.lost) {
                if p.seq.is_some_and(|s| have.contains(&s)) {
                    notes.note(
                        &r.path,
                        p.offset,
                        &format!("{} (that packet is in the stream file)", p.what),
                    );
                } else {
                    notes.lost(&r.path, p.offset, &p.what);
                }
            }
        }
        // The ranges of the stream file that are not packets: lost unless
        // the packets between those around them are all there.
        let (mut cut_bytes, mut cut_why) = (0u64, None);
        if let Some((path, _)) = files.get(&id) {
            for g in &fscan.gaps {
                let missing: Vec<u64> = match (g.before, g.after, g.seq) {
                    // The packet being written when the process died: in
                    // memory only, without rings.
                    _ if g.cut_tail && !has_ring => Vec::new(),
                    (_, _, Some(s)) if g.cut_tail => {
                        (!have.contains(&s)).then_some(s).into_iter().collect()
                    }
                    (b, Some(n), _) => (b.map_or(0, |b| b + 1)..n)
                        .filter(|s| !have.contains(s))
                        .collect(),
                    (b, None, _) => {
                        let next = b.map_or(0, |b| b + 1);
                        (!have.contains(&next) && (has_ring || !g.cut_tail))
                            .then_some(next)
                            .into_iter()
                            .collect()
                    }
                };
                let what = if g.cut_tail {
                    format!(
                        "a packet cut short at the end of the file ({} bytes, {})",
                        g.end - g.start,
                        g.why
                    )
                } else {
                    format!(
                        "{} bytes that are not a packet of stream {id} ({}){}",
                        g.end - g.start,
                        g.why,
                        if g.after.is_some() {
                            format!("; read again from the packet at byte {}", g.end)
                        } else {
                            String::new()
                        }
                    )
                };
                if g.cut_tail {
                    cut_bytes += g.end - g.start;
                    cut_why.get_or_insert_with(|| format!("{} at byte {}", g.why, g.start));
                }
                if missing.is_empty() {
                    if !g.cut_tail {
                        notes.note(
                            path,
                            g.start,
                            &format!("{what}; no packet is missing there"),
                        );
                    }
                } else if !g.cut_tail && g.after.is_none() && g.before.is_none() && !has_ring {
                    notes.lost(path, g.start, &format!("{what}: left out"));
                } else {
                    let n = missing.len();
                    notes.lost(
                        path,
                        g.start,
                        &format!(
                            "{what}: {} left out",
                            if n == 1 {
                                format!("packet {}", missing[0])
                            } else if g.after.is_some() {
                                format!("packets {}..{} ({n})", missing[0], missing[n - 1])
                            } else {
                                format!("packet {} and any after it", missing[0])
                            }
                        ),
                    );
                }
            }
        }
        // Contexts completed: sizes; the discarded count, never below the
        // packet before's (a counter); the end time: the next packet's
        // beginning, or once decoded (the last packet).
        for k in 0..packets.len() {
            if packets[k].kind == Kind::Closed {
                continue;
            }
            let n = packets[k].bytes.len() as u64 * 8;
            let prev = if k > 0 {
                u64_at(&packets[k - 1].bytes, OFF_DISCARDED)
            } else {
                0
            };
            let next_begin = packets.get(k + 1).map(|p| u64_at(&p.bytes, OFF_TS_BEGIN));
            let open = packets[k].kind == Kind::Open;
            let b = &mut packets[k].bytes;
            put_u64(b, OFF_CONTENT_SIZE, n);
            put_u64(b, OFF_PACKET_SIZE, n);
            let own = u64_at(b, OFF_DISCARDED);
            put_u64(b, OFF_DISCARDED, if open { prev } else { own.max(prev) });
            let begin = u64_at(b, OFF_TS_BEGIN);
            let end = u64_at(b, OFF_TS_END);
            put_u64(
                b,
                OFF_TS_END,
                match next_begin {
                    Some(nb) if !open => {
                        if end >= begin && end <= nb {
                            end
                        } else {
                            nb.max(begin)
                        }
                    }
                    _ => begin,
                },
            );
        }
        // The last packet, when not closed as written, ends at its last
        // event (set once decoded).
        let open = packets
            .len()
            .checked_sub(1)
            .filter(|&k| packets[k].kind != Kind::Closed);
        if tid.is_none() {
            tid = packets.first().map(|p| u32_at(&p.bytes, OFF_TID));
        }
        made.push(Made {
            id,
            tid,
            from_file,
            cut_bytes,
            cut_why,
            from_ring,
            has_ring,
            open,
            packets,
            in_flight,
        });
    }
    let write = |m: &Made| -> anyhow::Result<()> {
        let path = a.out.join(format!("stream_{}", m.id));
        let mut all = Vec::new();
        for p in &m.packets {
            all.extend_from_slice(&p.bytes);
        }
        std::fs::write(&path, all).with_context(|| format!("{}", path.display()))
    };

    // Decode what is written, stream by stream: each open packet then ends
    // at its last event, and a stream whose data is damaged (a packet
    // that does not decode, or times that go back as babeltrace2's muxer
    // refuses them) ends before the damaged packet.
    let mut damaged = Vec::new();
    let (events, discarded) = loop {
        for m in &made {
            write(m)?;
        }
        let mut found = Vec::new();
        let (mut events, mut discarded) = (0u64, 0u64);
        let streams = Source::open(&ReadOptions::new([&a.out]))?.into_streams()?;
        for c in streams.cursors {
            let v = verify(c);
            events += v.events;
            discarded += v.discarded;
            let Some(m) = v
                .path
                .as_ref()
                .and_then(|p| {
                    p.file_name()?
                        .to_str()?
                        .strip_prefix("stream_")?
                        .parse::<u64>()
                        .ok()
                })
                .and_then(|id| made.iter().position(|m| m.id == id))
            else {
                continue;
            };
            if let (Some(o), Some(ts)) = (made[m].open, v.last_ts) {
                let b = &mut made[m].packets[o].bytes;
                let begin = u64_at(b, OFF_TS_BEGIN);
                put_u64(b, OFF_TS_END, ts.max(begin));
            }
            if let Some((offset, what)) = v.damage {
                found.push((m, offset, what));
            }
        }
        if found.is_empty() {
            for m in made.iter().filter(|m| m.open.is_some()) {
                write(m)?; // the open packets' end times
            }
            break (events, discarded);
        }
        for (m, offset, what) in found {
            // The packet holding `offset`: it and those after it go.
            let mut at = 0u64;
            let k = made[m]
                .packets
                .iter()
                .position(|p| {
                    at += p.bytes.len() as u64;
                    at > offset
                })
                .unwrap_or(made[m].packets.len());
            let left_out = made[m].packets.len() - k;
            damaged.push(format!(
                "stream_{}: packet {k} (byte {offset} of the recovered stream): {what}; it and the {} after it are left out",
                made[m].id,
                left_out.saturating_sub(1)
            ));
            made[m].packets.truncate(k);
            if made[m].open.is_some_and(|o| o >= k) {
                made[m].open = None;
            }
        }
    };
    let in_flight = made.iter().filter(|m| m.in_flight).count();
    for m in &made {
        let tid = m.tid.map(|t| format!(" (thread {t})")).unwrap_or_default();
        let mut parts = vec![format!("{} packets from the stream file", m.from_file)];
        if m.cut_bytes > 0 {
            parts.push(format!(
                "{} bytes after them left out ({})",
                m.cut_bytes,
                m.cut_why.as_deref().unwrap_or("")
            ));
        }
        if m.has_ring {
            parts.push(format!("{} closed packets from its ring", m.from_ring));
            parts.push(if m.open.is_some() {
                "the open packet's complete events".to_string()
            } else {
                "no open packet with events".to_string()
            });
        }
        eprintln!("reef recover: stream_{}{tid}: {}", m.id, parts.join(", "));
    }
    if rings.is_empty() {
        eprintln!(
            "reef recover: {}: no crash-safe rings (recorded without REEF_CRASH_SAFE=1, or the program exited cleanly): only the stream files' complete packets",
            dir.display()
        );
    }
    eprintln!(
        "reef recover: {} events in {} streams -> {}; lost in flight: {in_flight} (events being recorded when the process died); discarded while recording: {discarded} (counted in the trace)",
        events,
        made.len(),
        a.out.display()
    );
    if damaged.is_empty() && notes.lost.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for d in notes.lost.iter().chain(&damaged) {
        eprintln!("reef recover: damaged data: {d}");
    }
    eprintln!(
        "reef recover: {} damaged ranges left out (above); the rest is written to {}",
        notes.lost.len() + damaged.len(),
        a.out.display()
    );
    Ok(ExitCode::FAILURE)
}

/// What decoding one recovered stream found.
struct Verified {
    path: Option<PathBuf>,
    events: u64,
    discarded: u64,
    last_ts: Option<u64>,
    /// The first damage: byte offset in the stream file, and what.
    damage: Option<(u64, String)>,
}

/// Decodes a stream to its end; checks that its times never go back
/// (packet beginning, events, packet end, next packet...), as
/// babeltrace2's muxer requires. The last packet's end is not checked: an
/// open packet's is set from its last event.
fn verify(mut c: reef_ctf::stream::StreamCursor) -> Verified {
    let mut v = Verified {
        path: None,
        events: 0,
        discarded: 0,
        last_ts: None,
        damage: None,
    };
    let mut packet: Option<u64> = None;
    let mut prev_end: Option<u64> = None; // the previous packet's end
    let mut time = 0u64;
    loop {
        let item = match c.next() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(e) => {
                let at = match &e {
                    reef_ctf::Error::Decode { packet_offset, .. } => *packet_offset,
                    reef_ctf::Error::Stream { offset, .. } => *offset,
                    _ => c.packet.offset,
                };
                v.damage = Some((at, e.to_string()));
                break;
            }
        };
        if v.path.is_none() {
            // (The cursor lets go of its file at the end.)
            v.path = c.file_path().map(Path::to_owned);
        }
        let p = &c.packet;
        if packet != Some(p.offset) {
            if let (Some(off), Some(end)) = (packet, prev_end.filter(|&e| e < time)) {
                v.damage = Some((
                    off,
                    format!("it ends at {end}, before its events or beginning ({time})"),
                ));
                break;
            }
            packet = Some(p.offset);
            let begin = p.ts_begin.unwrap_or(0);
            if let Some(end) = prev_end.filter(|&e| e > begin) {
                v.damage = Some((
                    p.offset,
                    format!("it begins at {begin}, before the previous packet's end ({end})"),
                ));
                break;
            }
            time = time.max(begin);
            prev_end = p.ts_end;
        }
        match item {
            reef_read::Item::Event => {
                let ts = c.event.ts.unwrap_or(time);
                if ts < time {
                    v.damage = Some((
                        c.packet.offset,
                        format!("an event at {ts} follows time {time}"),
                    ));
                    break;
                }
                time = ts;
                v.events += 1;
                v.last_ts = Some(ts);
            }
            reef_read::Item::DiscardedEvents { count, .. } => v.discarded += count.unwrap_or(0),
            reef_read::Item::DiscardedPackets { .. } => {}
        }
    }
    v
}
