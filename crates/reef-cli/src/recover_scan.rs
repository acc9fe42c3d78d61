//! The byte-level reading of `reef recover`'s inputs (std only, so that
//! `fuzz/fuzz_targets/rings.rs` includes this file as it is): a libreef
//! stream file's packets ([`stream_file`]) and a crash-safe ring's
//! ([`ring`]), with every range that cannot be used said, and where.
//!
//! Layouts: `tracer/src/internal.h` (packet header and context, `struct
//! reef_ring_header`, the commit word at the end of each slot).

// Packet header and context of libreef traces (tracer/src/internal.h).
pub const MAGIC: u32 = 0xC1FC_1FC1;
pub const OFF_UUID: usize = 4;
pub const OFF_INSTANCE_ID: usize = 24;
pub const OFF_TS_BEGIN: usize = 32;
pub const OFF_TS_END: usize = 40;
pub const OFF_CONTENT_SIZE: usize = 48;
pub const OFF_PACKET_SIZE: usize = 56;
pub const OFF_SEQ_NUM: usize = 64;
pub const OFF_DISCARDED: usize = 72;
pub const OFF_TID: usize = 80;
pub const HEADER: usize = 100;
pub const COMMIT_WORD: usize = 8;
pub const RING_MAGIC: &[u8; 8] = b"reefring";
/// `REEF_RING_HEADER`: where slot 0 begins.
pub const RING_HEADER: usize = 4096;

pub fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(off..off + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    if let Some(s) = b.get_mut(off..off + 8) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// How a packet of the recovered stream was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Closed: its sizes and times as written.
    Closed,
    /// The ring's open packet: its complete events (the commit word).
    Open,
    /// A closed packet whose sizes were damaged (or cleared): its length
    /// from its `packet_size` or its commit word; its context is completed
    /// as the open packet's is.
    Repaired,
}

/// A packet of the recovered stream.
#[derive(Debug, Clone)]
pub struct Packet {
    pub seq: u64,
    pub bytes: Vec<u8>,
    pub kind: Kind,
}

/// A range of an input that could not be used.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Byte offset in the file.
    pub offset: u64,
    pub what: String,
    /// The sequence number the range's packet claims, when its header is
    /// legible: nothing is lost when the output holds that packet anyway.
    pub seq: Option<u64>,
    /// Data is left out (else the problem was worked around).
    pub lost: bool,
}

/// Why the packet header at the start of `p` is not one of stream `id` of
/// this trace (`None`: it is).
pub fn foreign(p: &[u8], uuid: Option<&[u8; 16]>, id: u64) -> Option<&'static str> {
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

/// Why `p` does not begin with a complete closed packet of stream `id`;
/// else its size.
fn closed_at(p: &[u8], uuid: Option<&[u8; 16]>, id: u64) -> Result<usize, String> {
    if let Some(w) = foreign(p, uuid, id) {
        return Err(w.to_string());
    }
    let psize = u64_at(p, OFF_PACKET_SIZE);
    let content = u64_at(p, OFF_CONTENT_SIZE);
    if !psize.is_multiple_of(8) || psize / 8 < HEADER as u64 || content != psize {
        return Err(format!(
            "packet sizes out of range (content_size {content}, packet_size {psize} bits)"
        ));
    }
    let size = psize / 8;
    if size > p.len() as u64 {
        return Err(format!("a packet of {size} bytes cut short"));
    }
    Ok(size as usize)
}

/// The next offset after `from` where a complete packet of stream `id`
/// begins.
fn next_packet(data: &[u8], from: usize, uuid: Option<&[u8; 16]>, id: u64) -> Option<usize> {
    let m = MAGIC.to_le_bytes();
    let mut at = from;
    while at + HEADER <= data.len() {
        let rel = data[at..].windows(4).position(|w| w == m)?;
        at += rel;
        if closed_at(&data[at..], uuid, id).is_ok() {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// What a stream file holds.
#[derive(Debug, Default)]
pub struct FileScan {
    pub packets: Vec<Packet>,
    /// Ranges that are not complete packets, in file order: where, how
    /// long, why, and the sequence numbers of the packets before and after
    /// (`None` at the file's ends).
    pub gaps: Vec<Gap>,
}

#[derive(Debug, Clone)]
pub struct Gap {
    pub start: u64,
    pub end: u64,
    pub why: String,
    pub before: Option<u64>,
    pub after: Option<u64>,
    /// The range is the file's end and begins as a packet of this stream
    /// does: the packet the consumer was writing when the process died.
    pub cut_tail: bool,
    /// The sequence number of that packet, when its header is legible.
    pub seq: Option<u64>,
}

/// The complete packets of a stream file; a range that is not one is
/// passed over to the next packet of the stream (found by its magic
/// number, UUID, ids and sizes).
pub fn stream_file(data: &[u8], uuid: Option<&[u8; 16]>, id: u64) -> FileScan {
    let mut scan = FileScan::default();
    let mut at = 0usize;
    while at < data.len() {
        match closed_at(&data[at..], uuid, id) {
            Ok(size) => {
                scan.packets.push(Packet {
                    seq: u64_at(&data[at..], OFF_SEQ_NUM),
                    bytes: data[at..at + size].to_vec(),
                    kind: Kind::Closed,
                });
                at += size;
            }
            Err(why) => {
                let before = scan.packets.last().map(|p| p.seq);
                let next = next_packet(data, at + 1, uuid, id);
                let end = next.unwrap_or(data.len());
                let p = &data[at..];
                // A packet begun at the end of the file: its header as far
                // as it goes is this stream's.
                let starts = {
                    let mut h = [0u8; OFF_INSTANCE_ID + 8];
                    h[..4].copy_from_slice(&MAGIC.to_le_bytes());
                    match uuid {
                        Some(u) => h[OFF_UUID..OFF_UUID + 16].copy_from_slice(u),
                        None => {
                            for (k, b) in p.iter().enumerate().take(OFF_UUID + 16).skip(OFF_UUID) {
                                h[k] = *b;
                            }
                        }
                    }
                    h[OFF_INSTANCE_ID..].copy_from_slice(&id.to_le_bytes());
                    let n = p.len().min(h.len());
                    p[..n] == h[..n]
                };
                let cut_tail = next.is_none() && starts;
                scan.gaps.push(Gap {
                    start: at as u64,
                    end: end as u64,
                    why,
                    before,
                    after: next.map(|n| u64_at(&data[n..], OFF_SEQ_NUM)),
                    cut_tail,
                    seq: (cut_tail && p.len() >= OFF_SEQ_NUM + 8).then(|| u64_at(p, OFF_SEQ_NUM)),
                });
                at = end;
            }
        }
    }
    scan
}

/// What a ring file holds.
#[derive(Debug, Default)]
pub struct RingScan {
    /// All zero: the ring of a thread still being set up (no event in it).
    pub not_started: bool,
    /// The stream the ring is of.
    pub instance_id: u64,
    pub tid: Option<u32>,
    pub uuid: Option<[u8; 16]>,
    pub packets: Vec<Packet>,
    pub problems: Vec<Problem>,
    pub slots: usize,
    /// After the open packet's complete events: the event id and time an
    /// event header there holds, and the packet's beginning (an event
    /// that had begun when the process died, when the id is known and the
    /// time no earlier than the beginning).
    pub after_open: Option<(u64, u64, u64)>,
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A ring file's packets: the closed ones, and the committed part of the
/// open one. `name_id`: the instance id its name gives (`ring_<id>`);
/// `uuid`: the trace's.
pub fn ring(data: &[u8], name_id: Option<u64>, uuid: Option<&[u8; 16]>) -> RingScan {
    let mut scan = RingScan::default();
    if data.iter().all(|&b| b == 0) {
        scan.not_started = true;
        return scan;
    }
    let problem = |scan: &mut RingScan, offset: usize, what: String, seq, lost| {
        scan.problems.push(Problem {
            offset: offset as u64,
            what,
            seq,
            lost,
        })
    };
    let (hsize, psize, np) = (
        u32_at(data, 12) as usize,
        u32_at(data, 16) as usize,
        u32_at(data, 20) as usize,
    );
    let sizes_ok = data.len() >= 64
        && (4096..=1 << 30).contains(&psize)
        && (64..=1 << 20).contains(&hsize)
        && (1..=(1 << 30) / 4096).contains(&np)
        && hsize <= data.len();
    let magic_ok = data.len() >= 64 && &data[..8] == RING_MAGIC && u32_at(data, 8) == 1;
    let header_id = u64_at(data, 24);
    let header_uuid: Option<[u8; 16]> = data.get(40..56).and_then(|s| s.try_into().ok());
    if !magic_ok {
        problem(
            &mut scan,
            0,
            format!(
                "not a libreef ring header (expected \"reefring\", version 1){}",
                if sizes_ok {
                    "; read by the sizes it gives"
                } else {
                    "; its slots found by their packet headers"
                }
            ),
            None,
            false,
        );
    } else if !sizes_ok {
        problem(
            &mut scan,
            12,
            "the ring's packet or header size is out of range; its slots found by their packet headers".into(),
            None,
            false,
        );
    }
    // Which stream: the header's id, unless the file's name and the
    // slots' packets say otherwise.
    let uuid = uuid.copied().or(if magic_ok { header_uuid } else { None });
    let count = |id: u64, hs: usize, ps: usize| {
        (0..)
            .map(|i| hs + i * ps)
            .take_while(|&o| o + HEADER <= data.len())
            .filter(|&o| foreign(&data[o..], uuid.as_ref(), id).is_none())
            .count()
    };
    let (hs0, ps0) = if sizes_ok {
        (hsize, psize)
    } else {
        (RING_HEADER, 4096)
    };
    let mut id = if magic_ok {
        header_id
    } else {
        name_id.unwrap_or(header_id)
    };
    if let Some(n) = name_id {
        if n != id {
            let (a, b) = (count(id, hs0, ps0), count(n, hs0, ps0));
            problem(
                &mut scan,
                24,
                format!(
                    "the header's instance id {id} is not the file name's ({n}); read as stream {}",
                    if b > a { n } else { id }
                ),
                None,
                false,
            );
            if b > a {
                id = n;
            }
        }
    }
    scan.instance_id = id;
    scan.uuid = uuid;
    if magic_ok {
        scan.tid = Some(u32_at(data, 56));
    }
    // The slots' layout.
    let (hs, ps, mut n, base) = if sizes_ok {
        (hsize, psize, np, Some(u64_at(data, 32)))
    } else {
        // Slots begin at 4096-byte boundaries after the header page: the
        // slot size divides the distances between packet headers.
        let starts: Vec<usize> = (0..)
            .map(|i| RING_HEADER + i * 4096)
            .take_while(|&o| o + HEADER <= data.len())
            .filter(|&o| foreign(&data[o..], uuid.as_ref(), id).is_none())
            .collect();
        let mut g = data.len().saturating_sub(RING_HEADER);
        for s in &starts {
            g = gcd(g, s - RING_HEADER);
        }
        if starts.is_empty() || g < 4096 {
            problem(
                &mut scan,
                0,
                "no packet of this stream found at a slot boundary: the ring's data is left out"
                    .into(),
                None,
                true,
            );
            return scan;
        }
        // The base address from a closed packet's commit word (the address
        // of its end).
        let base = starts.iter().find_map(|&o| {
            let s = &data[o..];
            let c = u64_at(s, OFF_CONTENT_SIZE);
            (c != 0
                && c == u64_at(s, OFF_PACKET_SIZE)
                && c.is_multiple_of(8)
                && o + g <= data.len())
            .then(|| {
                u64_at(s, g - COMMIT_WORD)
                    .wrapping_sub(c / 8)
                    .wrapping_sub((o - RING_HEADER) as u64)
            })
        });
        (RING_HEADER, g, (data.len() - RING_HEADER) / g, base)
    };
    let want = hs as u128 + ps as u128 * n as u128;
    if (data.len() as u128) < want {
        let have = data.len().saturating_sub(hs) / ps;
        problem(
            &mut scan,
            data.len(),
            format!("the ring is cut short (expected {want} bytes): reading its first {have} of {n} slots"),
            None,
            true,
        );
        n = have;
    }
    scan.slots = n;
    let slot = |i: usize| &data[hs + i * ps..hs + (i + 1) * ps];
    // Slots with content_size 0 and committed events: the open packet is
    // the latest; any other is a closed packet whose sizes were cleared.
    let mut open: Vec<(u64, usize, usize)> = Vec::new(); // seq, slot, length
    for i in 0..n {
        let s = slot(i);
        let at = hs + i * ps;
        if s[..HEADER].iter().all(|&b| b == 0) {
            continue; // never used
        }
        let seq = u64_at(s, OFF_SEQ_NUM);
        if let Some(w) = foreign(s, uuid.as_ref(), id) {
            problem(
                &mut scan,
                at,
                format!("slot {i}: {w}: its packet is left out"),
                Some(seq),
                true,
            );
            continue;
        }
        let content = u64_at(s, OFF_CONTENT_SIZE);
        let size = u64_at(s, OFF_PACKET_SIZE);
        let fits = |bits: u64| {
            bits.is_multiple_of(8)
                && (HEADER as u64..=(ps - COMMIT_WORD) as u64).contains(&(bits / 8))
        };
        let commit = base.and_then(|b| {
            let n = u64_at(s, ps - COMMIT_WORD).wrapping_sub(b.wrapping_add((i * ps) as u64));
            (HEADER as u64..=(ps - COMMIT_WORD) as u64)
                .contains(&n)
                .then_some(n as usize)
        });
        if content != 0 {
            if fits(content) && content == size {
                scan.packets.push(Packet {
                    seq,
                    bytes: s[..(content / 8) as usize].to_vec(),
                    kind: Kind::Closed,
                });
                continue;
            }
            let len = if fits(size) && commit.is_none_or(|c| c as u64 == size / 8) {
                Some(((size / 8) as usize, "its packet_size"))
            } else {
                commit.map(|c| (c, "its commit word"))
            };
            match len {
                Some((len, how)) => {
                    problem(
                        &mut scan,
                        at + OFF_CONTENT_SIZE,
                        format!(
                            "slot {i} (packet {seq}): content_size {content} does not fit (packet_size {size}): the packet's length taken from {how} ({len} bytes)"
                        ),
                        Some(seq),
                        false,
                    );
                    scan.packets.push(Packet {
                        seq,
                        bytes: s[..len].to_vec(),
                        kind: Kind::Repaired,
                    });
                }
                None => problem(
                    &mut scan,
                    at + OFF_CONTENT_SIZE,
                    format!(
                        "slot {i} (packet {seq}): content_size {content} and packet_size {size} do not fit the slot, nor does its commit word: the packet is left out"
                    ),
                    Some(seq),
                    true,
                ),
            }
            continue;
        }
        match commit {
            Some(c) => open.push((seq, i, c)),
            None => problem(
                &mut scan,
                at + ps - COMMIT_WORD,
                format!(
                    "slot {i} (packet {seq}): an open packet whose commit word {} is not in its slot: its events are left out",
                    if base.is_some() { "" } else { "(the ring's base address unknown)" }
                ),
                Some(seq),
                true,
            ),
        }
    }
    open.sort();
    let last = open.len().saturating_sub(1);
    for (k, (seq, i, len)) in open.into_iter().enumerate() {
        let s = slot(i);
        if len == HEADER {
            // Being opened (no event yet), or an empty open packet.
            continue;
        }
        if k != last {
            problem(
                &mut scan,
                hs + i * ps + OFF_CONTENT_SIZE,
                format!(
                    "slot {i} (packet {seq}): content_size 0 in a packet before the open one: its length taken from its commit word ({len} bytes)"
                ),
                Some(seq),
                false,
            );
        }
        if k == last && len + 10 <= ps - COMMIT_WORD {
            let id = u16::from_le_bytes([s[len], s[len + 1]]) as u64;
            scan.after_open = Some((id, u64_at(s, len + 2), u64_at(s, OFF_TS_BEGIN)));
        }
        scan.packets.push(Packet {
            seq,
            bytes: s[..len].to_vec(),
            kind: if k == last {
                Kind::Open
            } else {
                Kind::Repaired
            },
        });
    }
    scan
}
