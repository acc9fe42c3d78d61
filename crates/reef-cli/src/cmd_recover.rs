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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use reef_read::{ReadOptions, Source};

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

// Packet header and context of libreef traces (tracer/src/internal.h).
const MAGIC: u32 = 0xC1FC_1FC1;
const OFF_UUID: usize = 4;
const OFF_INSTANCE_ID: usize = 24;
const OFF_TS_BEGIN: usize = 32;
const OFF_TS_END: usize = 40;
const OFF_CONTENT_SIZE: usize = 48;
const OFF_PACKET_SIZE: usize = 56;
const OFF_SEQ_NUM: usize = 64;
const OFF_DISCARDED: usize = 72;
const OFF_TID: usize = 80;
const HEADER: usize = 100;
const COMMIT_WORD: usize = 8;
const RING_DIR: &str = ".reef-rings";
const RING_MAGIC: &[u8; 8] = b"reefring";

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// A ring file's header (`struct reef_ring_header`).
struct Ring {
    data: Vec<u8>,
    header_size: usize,
    packet_size: usize,
    npackets: usize,
    instance_id: u64,
    base: u64,
    uuid: [u8; 16],
    tid: u32,
}

impl Ring {
    /// `None`: the ring of a thread that was still being set up (its
    /// header not written yet, so no event in it either).
    fn load(path: &Path) -> anyhow::Result<Option<Ring>> {
        let data = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
        let bad = |what: &str| anyhow!("{}: offset 0: {what}", path.display());
        if data.len() < 8 || data[..8] == [0; 8] {
            return Ok(None);
        }
        if data.len() < 64 || &data[..8] != RING_MAGIC {
            return Err(bad("expected a libreef ring (\"reefring\")"));
        }
        if u32_at(&data, 8) != 1 {
            return Err(bad("unknown ring version (expected 1)"));
        }
        let header_size = u32_at(&data, 12) as usize;
        let packet_size = u32_at(&data, 16) as usize;
        let mut npackets = u32_at(&data, 20) as usize;
        if !(4096..=1 << 30).contains(&packet_size) || !(64..=1 << 20).contains(&header_size) {
            return Err(bad("packet or header size out of range"));
        }
        let want = header_size as u128 + packet_size as u128 * npackets as u128;
        if (data.len() as u128) < want {
            // Cut short (a full disk?): the slots that are all there.
            let have = data.len().saturating_sub(header_size) / packet_size;
            eprintln!(
                "reef recover: {}: offset {}: the ring is cut short (expected {want} bytes): reading its first {have} of {npackets} slots",
                path.display(),
                data.len()
            );
            npackets = have;
        }
        Ok(Some(Ring {
            header_size,
            packet_size,
            npackets,
            instance_id: u64_at(&data, 24),
            base: u64_at(&data, 32),
            uuid: data[40..56].try_into().unwrap(),
            tid: u32_at(&data, 56),
            data,
        }))
    }

    fn slot(&self, i: usize) -> &[u8] {
        let at = self.header_size + i * self.packet_size;
        &self.data[at..at + self.packet_size]
    }
}

/// A packet of the recovered stream.
struct Packet {
    seq: u64,
    bytes: Vec<u8>,
    /// The open packet: its context is completed once its events are known.
    open: bool,
}

/// What the ring says of its open packet beyond its committed events.
struct OpenInfo {
    /// An event had begun there (a header of a known event class stamped
    /// no earlier than the packet's start): it is lost.
    in_flight: bool,
}

/// The complete packets at the start of a stream file; the rest (a packet
/// cut by the crash) is ignored.
/// Why the packet header at the start of `p` is not one of stream `id` of
/// this trace (`None`: it is).
fn foreign(p: &[u8], uuid: Option<&[u8; 16]>, id: u64) -> Option<&'static str> {
    if p.len() < HEADER {
        Some("a packet header cut short")
    } else if u32_at(p, 0) != MAGIC {
        Some("no CTF magic number")
    } else if uuid.is_some_and(|u| &p[OFF_UUID..OFF_UUID + 16] != u) {
        Some("not the trace's UUID")
    } else if u32_at(p, OFF_UUID + 16) != 0 || u64_at(p, OFF_INSTANCE_ID) != id {
        Some("not this stream's ids")
    } else {
        None
    }
}

/// The complete packets at the start of a stream file, the number of
/// bytes after them, and why those were left out.
fn file_packets(
    path: &Path,
    uuid: Option<&[u8; 16]>,
    id: u64,
) -> anyhow::Result<(Vec<Packet>, u64, Option<String>)> {
    let data = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut why = None;
    while at < data.len() {
        let p = &data[at..];
        if let Some(w) = foreign(p, uuid, id) {
            why = Some(format!("{w} at byte {at}"));
            break;
        }
        let size = u64_at(p, OFF_PACKET_SIZE) / 8;
        let content = u64_at(p, OFF_CONTENT_SIZE) / 8;
        if size < HEADER as u64 || content != size {
            why = Some(format!("packet sizes out of range at byte {at}"));
            break;
        }
        if size > p.len() as u64 {
            why = Some(format!("a packet of {size} bytes cut short at byte {at}"));
            break;
        }
        let size = size as usize;
        out.push(Packet {
            seq: u64_at(p, OFF_SEQ_NUM),
            bytes: p[..size].to_vec(),
            open: false,
        });
        at += size;
    }
    Ok((out, (data.len() - at) as u64, why))
}

/// The ring's packets: closed ones, and the committed part of the open one.
fn ring_packets(
    r: &Ring,
    uuid: Option<&[u8; 16]>,
    known_id: &dyn Fn(u64) -> bool,
) -> (Vec<Packet>, OpenInfo) {
    let mut out = Vec::new();
    let mut info = OpenInfo { in_flight: false };
    let mut open: Option<(u64, usize, usize)> = None; // seq, slot, length
    for i in 0..r.npackets {
        let s = r.slot(i);
        if foreign(s, uuid.or(Some(&r.uuid)), r.instance_id).is_some() {
            continue; // never used (or damaged)
        }
        let seq = u64_at(s, OFF_SEQ_NUM);
        let content = u64_at(s, OFF_CONTENT_SIZE);
        if content != 0 {
            let n = (content / 8) as usize;
            if content.is_multiple_of(8) && (HEADER..=r.packet_size - COMMIT_WORD).contains(&n) {
                out.push(Packet {
                    seq,
                    bytes: s[..n].to_vec(),
                    open: false,
                });
            }
            continue;
        }
        let slot_addr = r.base + (i * r.packet_size) as u64;
        let commit = u64_at(s, r.packet_size - COMMIT_WORD).wrapping_sub(slot_addr) as usize;
        if !(HEADER..=r.packet_size - COMMIT_WORD).contains(&commit) {
            continue;
        }
        if open.is_none_or(|(q, _, _)| seq > q) {
            open = Some((seq, i, commit));
        }
    }
    if let Some((seq, i, n)) = open {
        let s = r.slot(i);
        // An event that had begun: a known id and a time no earlier than
        // the packet's beginning (a previous packet in this slot was older).
        if n + 10 <= r.packet_size - COMMIT_WORD {
            let id = u16::from_le_bytes([s[n], s[n + 1]]) as u64;
            let ts = u64_at(s, n + 2);
            info.in_flight = known_id(id) && ts >= u64_at(s, OFF_TS_BEGIN) && ts != 0;
        }
        if n > HEADER {
            out.push(Packet {
                seq,
                bytes: s[..n].to_vec(),
                open: true,
            });
        }
    }
    (out, info)
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
    let mut rings = BTreeMap::new();
    let ring_dir = dir.join(RING_DIR);
    if ring_dir.is_dir() {
        for e in std::fs::read_dir(&ring_dir)? {
            let e = e?;
            let name = e.file_name();
            if !name.to_string_lossy().starts_with("ring_") {
                continue;
            }
            match Ring::load(&e.path())? {
                Some(r) => {
                    rings.insert(r.instance_id, r);
                }
                None => eprintln!(
                    "reef recover: {}: a thread that had not started recording yet",
                    e.path().display()
                ),
            }
        }
    }
    let uuid = class
        .meta
        .uuid
        .or_else(|| rings.values().next().map(|r| r.uuid));
    // Stream files, by instance id.
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(id) = name
            .strip_prefix("stream_")
            .and_then(|s| s.parse::<u64>().ok())
        {
            files.insert(id, e.path());
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
        open: Option<usize>, // index of the open packet in `packets`
        packets: Vec<Packet>,
        in_flight: bool,
    }
    let mut made = Vec::new();
    for id in ids {
        let (mut packets, cut_bytes, cut_why) = match files.get(&id) {
            Some(p) => file_packets(p, uuid.as_ref(), id)?,
            None => (Vec::new(), 0, None),
        };
        let from_file = packets.len();
        let last = packets.last().map(|p| p.seq);
        let (mut from_ring, mut in_flight, mut tid) = (0, false, None);
        if let Some(r) = rings.get(&id) {
            let (mut rp, info) = ring_packets(r, uuid.as_ref(), &known_id);
            rp.retain(|p| last.is_none_or(|l| p.seq > l));
            rp.sort_by_key(|p| p.seq);
            rp.dedup_by_key(|p| p.seq);
            from_ring = rp.iter().filter(|p| !p.open).count();
            in_flight = info.in_flight;
            tid = Some(r.tid);
            packets.extend(rp);
        }
        let open = packets.iter().position(|p| p.open);
        if let Some(o) = open {
            // Sizes now; the discarded count of the packet before (a
            // counter: it never goes down); the end time once decoded.
            let n = packets[o].bytes.len() as u64 * 8;
            let prev = if o > 0 {
                u64_at(&packets[o - 1].bytes, OFF_DISCARDED)
            } else {
                0
            };
            let b = &mut packets[o].bytes;
            put_u64(b, OFF_CONTENT_SIZE, n);
            put_u64(b, OFF_PACKET_SIZE, n);
            put_u64(b, OFF_DISCARDED, prev);
            let begin = u64_at(b, OFF_TS_BEGIN);
            put_u64(b, OFF_TS_END, begin);
        }
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
        if rings.contains_key(&m.id) {
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
    if damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for d in &damaged {
        eprintln!("reef recover: damaged data: {d}");
    }
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
