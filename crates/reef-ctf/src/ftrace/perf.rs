//! perf.data files (`perf record`, file mode, version 2): their tracepoint
//! samples, read as ftrace events.
//!
//! A tracepoint sample's raw data is the ftrace record itself, described by
//! the event formats perf keeps in the file (its `HEADER_TRACING_DATA`
//! feature, trace-cmd's version 6 header). Each CPU's samples become a CTF
//! stream as a `.dat` file's pages do ([`super::convert`]), one packet per
//! run of 64 KiB; `PERF_RECORD_LOST` and `PERF_RECORD_LOST_SAMPLES` counts
//! become the next packet's discarded events on their CPU. Samples without
//! raw data (a `cpu-clock` profile) and the other records (`COMM`, `FORK`,
//! `MMAP`, ...) are left out.

use std::collections::BTreeSet;
use std::io::Write;

use super::convert::{finish_packet, start_packet, Writer};
use super::dat::{self, Dat, DatError};

pub const MAGIC: &[u8; 8] = b"PERFILE2";
const MAGIC_BE: &[u8; 8] = b"2ELIFREP";

type Res<T> = Result<T, DatError>;

fn err<T>(offset: u64, msg: impl Into<String>) -> Res<T> {
    Err(DatError {
        offset,
        msg: msg.into(),
    })
}

/// Whether `bytes` start like a perf.data file.
pub fn is_perf(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && (&bytes[..8] == MAGIC || &bytes[..8] == MAGIC_BE)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

// perf_event_attr.sample_type bits.
const S_IP: u64 = 1 << 0;
const S_TID: u64 = 1 << 1;
const S_TIME: u64 = 1 << 2;
const S_ADDR: u64 = 1 << 3;
const S_READ: u64 = 1 << 4;
const S_CALLCHAIN: u64 = 1 << 5;
const S_ID: u64 = 1 << 6;
const S_CPU: u64 = 1 << 7;
const S_PERIOD: u64 = 1 << 8;
const S_STREAM_ID: u64 = 1 << 9;
const S_RAW: u64 = 1 << 10;
const S_IDENTIFIER: u64 = 1 << 16;

const RECORD_LOST: u32 = 2;
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST_SAMPLES: u32 = 13;
const RECORD_COMPRESSED: u32 = 81;

/// The feature bit of the tracing data.
const HEADER_TRACING_DATA: u32 = 1;

/// What the header says.
pub struct Perf {
    pub dat: Dat,
    /// The sample type of every record, when all attributes share one.
    single: Option<u64>,
    /// Else each attribute's, by id (`PERF_SAMPLE_IDENTIFIER`).
    types: std::collections::HashMap<u64, u64>,
    sample_id_all: bool,
    data: (u64, u64),
}

/// Reads the header, the attributes and the tracing data of `b`.
pub fn read(b: &[u8]) -> Res<Perf> {
    if b.len() >= 8 && &b[..8] == MAGIC_BE {
        return err(0, "a big-endian perf.data file is not supported");
    }
    let need = |at: usize, what: &str| -> Res<u64> {
        u64_at(b, at).ok_or(DatError {
            offset: at as u64,
            msg: format!("the file ends inside the header ({what})"),
        })
    };
    let hsize = need(8, "its size")?;
    let attr_size = need(16, "the attribute size")?;
    let (attrs_off, attrs_size) = (need(24, "the attributes")?, need(32, "the attributes")?);
    let (data_off, data_size) = (need(40, "the data section")?, need(48, "the data section")?);
    if hsize < 104 {
        return err(
            8,
            format!("a header of {hsize} bytes (104 expected): not a perf.data file of version 2"),
        );
    }
    let mut features = [0u64; 4];
    for (i, f) in features.iter_mut().enumerate() {
        *f = need(72 + 8 * i, "the feature bits")?;
    }
    if attr_size < 16 + 64 || attrs_size % attr_size != 0 {
        return err(
            16,
            format!("attribute entries of {attr_size} bytes in {attrs_size}"),
        );
    }
    // Each attribute's sample type, by its ids; with several types, each
    // record's `PERF_SAMPLE_IDENTIFIER` tells its own.
    let mut types = std::collections::HashMap::new();
    let mut distinct = BTreeSet::new();
    let mut sample_id_all = false;
    let mut at = attrs_off;
    while at < attrs_off + attrs_size {
        let a = at as usize;
        let st = u64_at(b, a + 24).ok_or(DatError {
            offset: at,
            msg: "the file ends inside an attribute".into(),
        })?;
        if st & S_READ != 0 {
            return err(at, "samples with PERF_SAMPLE_READ are not supported");
        }
        let flags = u64_at(b, a + 40).unwrap_or(0);
        sample_id_all |= flags & (1 << 18) != 0;
        distinct.insert(st);
        let ids = a + attr_size as usize - 16;
        if let (Some(io), Some(is)) = (u64_at(b, ids), u64_at(b, ids + 8)) {
            for k in 0..is / 8 {
                if let Some(id) = u64_at(b, (io + 8 * k) as usize) {
                    types.insert(id, st);
                }
            }
        }
        at += attr_size;
    }
    let single =
        match distinct.len() {
            0 => return err(24, "no event attribute"),
            1 => distinct.first().copied(),
            _ if distinct.iter().all(|t| t & S_IDENTIFIER != 0) => None,
            _ => return err(
                attrs_off,
                "events of different sample types without PERF_SAMPLE_IDENTIFIER are not supported",
            ),
        };
    // The feature sections' table follows the data; one entry per bit set.
    let table = data_off
        .checked_add(data_size)
        .filter(|&t| t <= b.len() as u64)
        .ok_or(DatError {
            offset: 40,
            msg: format!(
                "the data section ({data_size} bytes at byte {data_off}) runs past the end of the file ({} bytes)",
                b.len()
            ),
        })?;
    let bit = |i: u32| features[(i / 64) as usize] >> (i % 64) & 1 == 1;
    if !bit(HEADER_TRACING_DATA) {
        return err(
            72,
            "the file holds no tracing data (no tracepoint was recorded: perf record -e 'sched:*')",
        );
    }
    let index = (0..HEADER_TRACING_DATA).filter(|&i| bit(i)).count() as u64;
    let ent = (table + 16 * index) as usize;
    let (toff, tsize) = match (u64_at(b, ent), u64_at(b, ent + 8)) {
        (Some(o), Some(s)) => (o, s),
        _ => return err(ent as u64, "the file ends inside the feature table"),
    };
    let td = b
        .get(toff as usize..toff.saturating_add(tsize) as usize)
        .ok_or(DatError {
            offset: ent as u64,
            msg: "the tracing data lies beyond the end of the file".into(),
        })?;
    let mut dat = dat::read_tracing_data(td, toff)?;
    // The host's name and kernel release (features 3 and 4: a u32 length,
    // then the NUL-padded text).
    let text = |i: u32| -> Option<String> {
        if !bit(i) {
            return None;
        }
        let k = (0..i).filter(|&j| bit(j)).count() as u64;
        let e = (table + 16 * k) as usize;
        let off = u64_at(b, e)? as usize;
        let n = u32_at(b, off)? as usize;
        let t = b.get(off + 4..off + 4 + n)?;
        let t = &t[..memchr::memchr(0, t).unwrap_or(t.len())];
        Some(String::from_utf8_lossy(t).into_owned())
    };
    if let (Some(h), Some(r)) = (text(3), text(4)) {
        dat.uname = Some(format!("Linux {h} {r}"));
    }
    Ok(Perf {
        dat,
        single,
        types,
        sample_id_all,
        data: (data_off, data_size),
    })
}

/// The byte size of the `sample_id` trailer of non-sample records.
fn trailer_size(st: u64) -> usize {
    [S_TID, S_TIME, S_ID, S_STREAM_ID, S_CPU, S_IDENTIFIER]
        .iter()
        .filter(|&&f| st & f != 0)
        .count()
        * 8
}

/// A trailer's CPU.
fn trailer_cpu(st: u64, t: &[u8]) -> Option<u32> {
    let mut at = 0;
    for f in [S_TID, S_TIME, S_ID, S_STREAM_ID] {
        if st & f != 0 {
            at += 8;
        }
    }
    (st & S_CPU != 0).then(|| u32_at(t, at)).flatten()
}

/// One CPU's stream being written.
struct Cpu {
    pkt: Vec<u8>,
    open: bool,
    last: u64,
    discarded: u64,
    out: std::io::BufWriter<std::fs::File>,
}

/// The stream file of each CPU, where the data is damaged, and the number
/// of samples read.
pub struct Streams {
    pub files: Vec<(u32, std::fs::File)>,
    pub damage: Option<DatError>,
    pub events: u64,
}

/// The size of a packet's events before it is closed.
const PACKET: usize = 64 << 10;

/// Converts the samples of `b` (read by [`read`]) into a stream file per
/// CPU (temporary files made by `tmp`).
pub fn streams(
    p: &Perf,
    b: &[u8],
    w: &Writer,
    used: &mut BTreeSet<u32>,
    tmp: &mut dyn FnMut() -> std::io::Result<std::fs::File>,
) -> std::io::Result<Streams> {
    // A record's sample type: the only one, or its identifier's (the
    // first word of a sample, the last of another record's trailer).
    let type_of = |rec: &[u8], sample: bool| -> Option<u64> {
        if let Some(t) = p.single {
            return Some(t);
        }
        let id = if sample {
            u64_at(rec, 0)?
        } else {
            u64_at(rec, rec.len().checked_sub(8)?)?
        };
        p.types.get(&id).copied()
    };
    let mut cpus: std::collections::BTreeMap<u32, Cpu> = Default::default();
    let mut damage = None;
    let mut events = 0u64;
    let (start, size) = p.data;
    let end = (start + size) as usize;
    let mut at = start as usize;
    let mut pending_lost: std::collections::BTreeMap<u32, u64> = Default::default();
    while at + 8 <= end {
        let (Some(ty), Some(len)) = (u32_at(b, at), u16_at(b, at + 6)) else {
            break;
        };
        let len = len as usize;
        if len < 8 || at + len > end {
            damage = Some(DatError {
                offset: at as u64,
                msg: format!("a record of {len} bytes where at least 8, within the data section, are expected"),
            });
            break;
        }
        let rec = &b[at + 8..at + len];
        match ty {
            RECORD_SAMPLE => match type_of(rec, true)
                .ok_or_else(|| "a sample of no recorded event (unknown identifier)".to_string())
                .and_then(|st| sample(st, rec))
            {
                Ok(Some((cpu, ts, raw))) => {
                    let c = match cpus.get_mut(&cpu) {
                        Some(c) => c,
                        None => {
                            let f = tmp()?;
                            cpus.entry(cpu).or_insert(Cpu {
                                pkt: Vec::with_capacity(PACKET + 4096),
                                open: false,
                                last: 0,
                                discarded: pending_lost.remove(&cpu).unwrap_or(0),
                                out: std::io::BufWriter::with_capacity(1 << 16, f),
                            })
                        }
                    };
                    if c.open && ts < c.last {
                        damage = Some(DatError {
                            offset: at as u64,
                            msg: format!(
                                "a sample on CPU {cpu} at {ts} ns, before the one before it ({} ns): samples out of order are not supported",
                                c.last
                            ),
                        });
                        break;
                    }
                    if !c.open {
                        c.discarded += pending_lost.remove(&cpu).unwrap_or(0);
                        start_packet(&mut c.pkt, false, ts, c.discarded, cpu);
                        c.open = true;
                    }
                    if let Err(m) = w.event(raw, ts, false, &mut c.pkt, used) {
                        damage = Some(DatError {
                            offset: at as u64,
                            msg: m,
                        });
                        break;
                    }
                    c.last = ts;
                    events += 1;
                    if c.pkt.len() >= PACKET {
                        finish_packet(&mut c.pkt, false, c.last);
                        c.out.write_all(&c.pkt)?;
                        c.pkt.clear();
                        c.open = false;
                    }
                }
                Ok(None) => {}
                Err(m) => {
                    damage = Some(DatError {
                        offset: at as u64,
                        msg: m,
                    });
                    break;
                }
            },
            RECORD_LOST | RECORD_LOST_SAMPLES => {
                let lost = if ty == RECORD_LOST {
                    u64_at(rec, 8)
                } else {
                    u64_at(rec, 0)
                }
                .unwrap_or(0);
                let cpu = match type_of(rec, false) {
                    Some(st) if p.sample_id_all && rec.len() >= trailer_size(st) => {
                        trailer_cpu(st, &rec[rec.len() - trailer_size(st)..])
                    }
                    _ => None,
                };
                let cpu = cpu.unwrap_or(0);
                match cpus.get_mut(&cpu) {
                    // Counted in the CPU's next packet.
                    Some(c) if c.open => {
                        finish_packet(&mut c.pkt, false, c.last);
                        c.out.write_all(&c.pkt)?;
                        c.pkt.clear();
                        c.open = false;
                        c.discarded += lost;
                    }
                    Some(c) => c.discarded += lost,
                    None => *pending_lost.entry(cpu).or_default() += lost,
                }
            }
            RECORD_COMPRESSED => {
                damage = Some(DatError {
                    offset: at as u64,
                    msg: "compressed records (perf record -z) are not supported; record without -z"
                        .into(),
                });
                break;
            }
            _ => {}
        }
        at += len;
    }
    let mut files = Vec::new();
    for (cpu, mut c) in cpus {
        if c.open {
            finish_packet(&mut c.pkt, false, c.last);
            c.out.write_all(&c.pkt)?;
        }
        let f = c.out.into_inner().map_err(|e| e.into_error())?;
        files.push((cpu, f));
    }
    Ok(Streams {
        files,
        damage,
        events,
    })
}

/// A sample's CPU, time and raw data; `None` for a sample with no raw
/// data.
/// A tracepoint sample: its CPU, time and raw record.
type Sample<'a> = (u32, u64, &'a [u8]);

fn sample(st: u64, r: &[u8]) -> Result<Option<Sample<'_>>, String> {
    let short = || "a sample record shorter than its fields".to_string();
    let mut at = 0;
    let skip = |at: &mut usize, f: u64| {
        if st & f != 0 {
            *at += 8;
        }
    };
    skip(&mut at, S_IDENTIFIER);
    skip(&mut at, S_IP);
    skip(&mut at, S_TID);
    let ts = if st & S_TIME != 0 {
        let t = u64_at(r, at).ok_or_else(short)?;
        at += 8;
        t
    } else {
        return Err("samples without PERF_SAMPLE_TIME are not supported".into());
    };
    skip(&mut at, S_ADDR);
    skip(&mut at, S_ID);
    skip(&mut at, S_STREAM_ID);
    let cpu = if st & S_CPU != 0 {
        let c = u32_at(r, at).ok_or_else(short)?;
        at += 8;
        c
    } else {
        0
    };
    skip(&mut at, S_PERIOD);
    if st & S_CALLCHAIN != 0 {
        let n = u64_at(r, at).ok_or_else(short)? as usize;
        at = at
            .checked_add(8 + n.checked_mul(8).ok_or_else(short)?)
            .ok_or_else(short)?;
    }
    if st & S_RAW == 0 {
        return Ok(None);
    }
    let n = u32_at(r, at).ok_or_else(short)? as usize;
    let raw = r.get(at + 4..at + 4 + n).ok_or_else(short)?;
    Ok(Some((cpu, ts, raw)))
}
