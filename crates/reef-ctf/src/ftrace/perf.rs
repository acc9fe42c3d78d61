//! perf.data files (`perf record`, file mode, version 2): their tracepoint
//! samples, read as ftrace events.
//!
//! A tracepoint sample's raw data is the ftrace record itself, described by
//! the event formats perf keeps in the file (its `HEADER_TRACING_DATA`
//! feature, trace-cmd's version 6 header). Each CPU's samples become a CTF
//! stream as a `.dat` file's pages do ([`super::convert`]), one packet per
//! run of 64 KiB; `PERF_RECORD_LOST` and `PERF_RECORD_LOST_SAMPLES` counts
//! become the next packet's discarded events on their CPU.
//!
//! The other samples (a `cpu-clock` profile, `perf record -g`) become
//! events of a class named after their event (`cpu-clock:pppH`), with the
//! process, thread, address, period and callchain (perf's context markers
//! left out); `MMAP`/`MMAP2`, `COMM`, `FORK` and `EXIT` records become
//! `perf_mmap`, `perf_comm`, `perf_fork` and `perf_exit` events. Their
//! formats are made here as a tracepoint's would be, so one converter
//! writes them all. The records perf makes at its start for what already
//! ran (time 0) take the time of the first record that has one. When the
//! records do not tell their CPU (`perf record` of a command, without
//! `-a`), each stream is a run of records in time order instead; so is
//! each further stream of a CPU some of whose records perf wrote after
//! later ones.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use super::convert::{finish_packet, start_packet, Writer};
use super::dat::{self, Dat, DatError};
use super::format::{FieldFmt, FieldKind, Format};

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

const RECORD_MMAP: u32 = 1;
const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_LOST_SAMPLES: u32 = 13;
const RECORD_COMPRESSED: u32 = 81;

/// An `MMAP2` record with a build id instead of the device and inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// A `COMM` record written at an `exec`.
const MISC_COMM_EXEC: u16 = 1 << 13;
const TYPE_TRACEPOINT: u32 = 2;
/// Callchain entries from here up are context markers (`PERF_CONTEXT_*`).
const CONTEXT_MAX: u64 = -4095i64 as u64;

/// The feature bits of the tracing data and of the events' names.
const HEADER_TRACING_DATA: u32 = 1;
const HEADER_EVENT_DESC: u32 = 12;

/// One event of the file (a `perf_event_attr`).
struct Attr {
    sample_type: u64,
    tracepoint: bool,
    /// The class of its samples, when they are not tracepoints'.
    class: u32,
}

/// The classes of the records other than samples.
struct Side {
    mmap: u32,
    comm: u32,
    fork: u32,
    exit: u32,
}

/// What the header says.
pub struct Perf {
    pub dat: Dat,
    attrs: Vec<Attr>,
    /// The sample type of every record, when all events share one.
    single: Option<u64>,
    /// Each event's index, by id.
    ids: HashMap<u64, usize>,
    sample_id_all: bool,
    data: (u64, u64),
    side: Side,
}

/// The common fields of a tracepoint record, as the kernel here lays them
/// out: given to the records made from perf's own (samples, `MMAP`, ...).
fn default_common() -> Vec<FieldFmt> {
    let f = |ty: &str, name: &str, offset, size, signed| FieldFmt {
        ty: ty.into(),
        name: name.into(),
        offset,
        size,
        signed,
        kind: FieldKind::Scalar,
    };
    vec![
        f("unsigned short", "common_type", 0, 2, false),
        f("unsigned char", "common_flags", 2, 1, false),
        f("unsigned char", "common_preempt_count", 3, 1, false),
        f("int", "common_pid", 4, 4, true),
    ]
}

/// A format for records perf writes itself: `fields` (type, name, size,
/// kind) after the common ones, each aligned to its size.
fn synthetic(
    id: u32,
    name: &str,
    common: &[FieldFmt],
    fields: &[(&str, &str, usize, FieldKind)],
) -> Format {
    let mut off = common.iter().map(|c| c.offset + c.size).max().unwrap_or(0);
    let fields = fields
        .iter()
        .map(|&(ty, name, size, kind)| {
            off = off.next_multiple_of(size.clamp(1, 8));
            let f = FieldFmt {
                ty: ty.into(),
                name: name.into(),
                offset: off,
                size,
                signed: ty == "int",
                kind,
            };
            off += size;
            f
        })
        .collect();
    Format {
        system: "perf".into(),
        name: name.into(),
        id,
        common: common.to_vec(),
        fields,
    }
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
    // Each event's sample type and kind, its ids; with several types,
    // each record's `PERF_SAMPLE_IDENTIFIER` tells its own.
    let mut attrs = Vec::new();
    let mut ids = HashMap::new();
    let mut distinct = BTreeSet::new();
    let mut sample_id_all = false;
    let mut at = attrs_off;
    while at < attrs_off + attrs_size {
        let a = at as usize;
        let (Some(ty), Some(st)) = (u32_at(b, a), u64_at(b, a + 24)) else {
            return err(at, "the file ends inside an attribute");
        };
        if st & S_READ != 0 {
            return err(at, "samples with PERF_SAMPLE_READ are not supported");
        }
        let flags = u64_at(b, a + 40).unwrap_or(0);
        sample_id_all |= flags & (1 << 18) != 0;
        distinct.insert(st);
        let id_at = a + attr_size as usize - 16;
        if let (Some(io), Some(is)) = (u64_at(b, id_at), u64_at(b, id_at + 8)) {
            for k in 0..is / 8 {
                if let Some(id) = u64_at(b, (io + 8 * k) as usize) {
                    ids.insert(id, attrs.len());
                }
            }
        }
        attrs.push(Attr {
            sample_type: st,
            tracepoint: ty == TYPE_TRACEPOINT,
            class: 0,
        });
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
    // A feature's section: its table entry's offset, and its bytes.
    let section = |i: u32| -> Res<Option<(u64, &[u8])>> {
        if !bit(i) {
            return Ok(None);
        }
        let ent = (table + 16 * (0..i).filter(|&j| bit(j)).count() as u64) as usize;
        let (Some(off), Some(size)) = (u64_at(b, ent), u64_at(b, ent + 8)) else {
            return err(ent as u64, "the file ends inside the feature table");
        };
        match b.get(off as usize..off.saturating_add(size) as usize) {
            Some(s) => Ok(Some((off, s))),
            None => err(
                ent as u64,
                format!("feature {i}'s section lies beyond the end of the file"),
            ),
        }
    };
    let mut dat = match section(HEADER_TRACING_DATA)? {
        Some((off, td)) => dat::read_tracing_data(td, off)?,
        // No tracepoint recorded: samples and perf's own records only.
        None => Dat::of_perf(false, 4096),
    };
    // The host's name and kernel release (features 3 and 4: a u32 length,
    // then the NUL-padded text).
    let text = |s: &[u8]| -> Option<String> {
        let n = u32_at(s, 0)? as usize;
        let t = s.get(4..4 + n)?;
        let t = &t[..memchr::memchr(0, t).unwrap_or(t.len())];
        Some(String::from_utf8_lossy(t).into_owned())
    };
    let host = section(3)?.and_then(|(_, s)| text(s));
    let release = section(4)?.and_then(|(_, s)| text(s));
    if let (Some(h), Some(r)) = (host, release) {
        dat.uname = Some(format!("Linux {h} {r}"));
    }
    // The events' names (`cpu-clock:pppH`), in the attributes' order: a
    // count, the attribute size, then per event its attribute, its number
    // of ids, its name (a u32 length, then the text) and its ids.
    let mut names = Vec::new();
    if let Some((_, s)) = section(HEADER_EVENT_DESC)? {
        let (n, asz) = (
            u32_at(s, 0).unwrap_or(0),
            u32_at(s, 4).unwrap_or(0) as usize,
        );
        let mut at = 8usize;
        for _ in 0..n.min(attrs.len() as u32) {
            at += asz;
            let Some(nids) = u32_at(s, at) else { break };
            let Some(name) = text(s.get(at + 4..).unwrap_or(&[])) else {
                break;
            };
            let len = u32_at(s, at + 4).unwrap_or(0) as usize;
            names.push(name);
            at += 8 + len + 8 * nids as usize;
        }
    }
    // Classes for the samples that are not tracepoints' and for perf's
    // own records, numbered after the tracepoints'.
    let common = dat
        .formats
        .iter()
        .find(|f| !f.common.is_empty())
        .map_or_else(default_common, |f| f.common.clone());
    let mut next = dat.formats.iter().map(|f| f.id).max().map_or(1, |m| m + 1);
    let mut id = || {
        next += 1;
        next - 1
    };
    use FieldKind::{DataLoc, Scalar};
    for (i, a) in attrs.iter_mut().enumerate().filter(|(_, a)| !a.tracepoint) {
        a.class = id();
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("sample{i}"));
        dat.formats.push(synthetic(
            a.class,
            &name,
            &common,
            &[
                ("int", "pid", 4, Scalar),
                ("int", "tid", 4, Scalar),
                ("void *", "ip", 8, Scalar),
                ("u64", "period", 8, Scalar),
                ("void *", "callchain", 4, DataLoc),
            ],
        ));
    }
    let side = Side {
        mmap: id(),
        comm: id(),
        fork: id(),
        exit: id(),
    };
    dat.formats.push(synthetic(
        side.mmap,
        "perf_mmap",
        &common,
        &[
            ("int", "pid", 4, Scalar),
            ("int", "tid", 4, Scalar),
            ("void *", "start", 8, Scalar),
            ("u64", "len", 8, Scalar),
            ("u64", "pgoff", 8, Scalar),
            ("u32", "prot", 4, Scalar),
            ("u8", "build_id", 4, DataLoc),
            ("char", "filename", 4, DataLoc),
        ],
    ));
    dat.formats.push(synthetic(
        side.comm,
        "perf_comm",
        &common,
        &[
            ("int", "pid", 4, Scalar),
            ("int", "tid", 4, Scalar),
            ("u32", "exec", 4, Scalar),
            ("char", "comm", 4, DataLoc),
        ],
    ));
    for (cid, name) in [(side.fork, "perf_fork"), (side.exit, "perf_exit")] {
        dat.formats.push(synthetic(
            cid,
            name,
            &common,
            &[
                ("int", "pid", 4, Scalar),
                ("int", "ppid", 4, Scalar),
                ("int", "tid", 4, Scalar),
                ("int", "ptid", 4, Scalar),
            ],
        ));
    }
    Ok(Perf {
        dat,
        attrs,
        single,
        ids,
        sample_id_all,
        data: (data_off, data_size),
        side,
    })
}

/// A sample's fields.
#[derive(Default)]
struct Sample<'a> {
    id: Option<u64>,
    ip: u64,
    pid: u32,
    tid: u32,
    time: Option<u64>,
    cpu: Option<u32>,
    period: u64,
    /// The callchain's addresses (u64 each).
    chain: &'a [u8],
    raw: Option<&'a [u8]>,
}

fn word(r: &[u8], at: &mut usize) -> Result<u64, String> {
    let v = u64_at(r, *at).ok_or("a record shorter than its fields")?;
    *at += 8;
    Ok(v)
}

fn parse_sample(st: u64, r: &[u8]) -> Result<Sample<'_>, String> {
    let mut s = Sample::default();
    let at = &mut 0;
    if st & S_IDENTIFIER != 0 {
        s.id = Some(word(r, at)?);
    }
    if st & S_IP != 0 {
        s.ip = word(r, at)?;
    }
    if st & S_TID != 0 {
        let w = word(r, at)?;
        (s.pid, s.tid) = (w as u32, (w >> 32) as u32);
    }
    if st & S_TIME != 0 {
        s.time = Some(word(r, at)?);
    }
    if st & S_ADDR != 0 {
        word(r, at)?;
    }
    if st & S_ID != 0 {
        let id = word(r, at)?;
        s.id = s.id.or(Some(id));
    }
    if st & S_STREAM_ID != 0 {
        word(r, at)?;
    }
    if st & S_CPU != 0 {
        s.cpu = Some(word(r, at)? as u32);
    }
    if st & S_PERIOD != 0 {
        s.period = word(r, at)?;
    }
    let short = || "a sample record shorter than its callchain or raw data".to_string();
    if st & S_CALLCHAIN != 0 {
        let n = word(r, at)? as usize;
        let len = n.checked_mul(8).ok_or_else(short)?;
        s.chain = r.get(*at..at.saturating_add(len)).ok_or_else(short)?;
        *at += len;
    }
    if st & S_RAW != 0 {
        let n = u32_at(r, *at).ok_or_else(short)? as usize;
        s.raw = Some(r.get(*at + 4..*at + 4 + n).ok_or_else(short)?);
    }
    Ok(s)
}

/// The byte size of the `sample_id` trailer of non-sample records.
fn trailer_size(st: u64) -> usize {
    [S_TID, S_TIME, S_ID, S_STREAM_ID, S_CPU, S_IDENTIFIER]
        .iter()
        .filter(|&&f| st & f != 0)
        .count()
        * 8
}

/// A trailer's time and CPU.
fn trailer(st: u64, t: &[u8]) -> (Option<u64>, Option<u32>) {
    let mut at = 0;
    let mut time = None;
    let mut cpu = None;
    for f in [S_TID, S_TIME, S_ID, S_STREAM_ID, S_CPU] {
        if st & f != 0 {
            match f {
                S_TIME => time = u64_at(t, at),
                S_CPU => cpu = u32_at(t, at),
                _ => {}
            }
            at += 8;
        }
    }
    (time, cpu)
}

/// A field's value for [`build`].
enum Val<'a> {
    U(u64),
    B(&'a [u8]),
}

/// Lays out a record of format `f` (of common fields `common`) as the
/// kernel would: fixed fields in place, dynamic ones after them.
fn build(out: &mut Vec<u8>, f: &Format, tid: u32, vals: &[Val]) {
    let put = |out: &mut Vec<u8>, off: usize, len: usize, v: u64| {
        out[off..off + len].copy_from_slice(&v.to_le_bytes()[..len]);
    };
    let fixed = f
        .common
        .iter()
        .chain(&f.fields)
        .map(|c| c.offset + c.size)
        .max()
        .unwrap_or(0);
    out.clear();
    out.resize(fixed, 0);
    for c in &f.common {
        match c.name.as_str() {
            "common_type" => put(out, c.offset, c.size.min(8), u64::from(f.id)),
            "common_pid" => put(out, c.offset, c.size.min(8), u64::from(tid)),
            _ => {}
        }
    }
    for (fl, v) in f.fields.iter().zip(vals) {
        match (fl.kind, v) {
            (FieldKind::DataLoc, Val::B(b)) => {
                // Offsets and lengths are 16-bit: a longer value is cut.
                let start = out.len();
                let room = 0xffffusize.saturating_sub(start + 1);
                let elem = fl.elem_size(8).unwrap_or(1).max(1);
                let mut b = &b[..b.len().min(room) / elem * elem];
                if fl.is_text() {
                    b = &b[..memchr::memchr(0, b).unwrap_or(b.len())];
                }
                out.extend_from_slice(b);
                let mut n = b.len();
                if fl.is_text() {
                    out.push(0);
                    n += 1;
                }
                put(out, fl.offset, 4, (n << 16 | start) as u64);
            }
            (_, Val::U(u)) => put(out, fl.offset, fl.size.min(8), *u),
            _ => {}
        }
    }
}

/// One stream being written: a run of one CPU's records in time order
/// (a CPU has several when perf wrote some of its records after later
/// ones), or of records that do not tell their CPU.
struct Lane {
    pkt: Vec<u8>,
    open: bool,
    last: u64,
    discarded: u64,
    out: std::io::BufWriter<std::fs::File>,
}

/// The stream file of each CPU, where the data is damaged, and the number
/// of samples read.
pub struct Streams {
    /// By CPU and run (by run alone, numbered from 0, when `cpus` is
    /// false).
    pub files: Vec<(u32, u32, std::fs::File)>,
    /// Whether the records told their CPU.
    pub cpus: bool,
    pub damage: Option<DatError>,
    pub events: u64,
}

/// The size of a packet's events before it is closed.
const PACKET: usize = 64 << 10;

/// What one record becomes: an event at a time on a CPU (or on none
/// known), from the tracepoint's raw record or one made from perf's.
struct Item<'a> {
    cpu: Option<u32>,
    ts: Option<u64>,
    rec: &'a [u8],
}

impl Perf {
    /// A record's sample type: the only one, or its identifier's (the
    /// first word of a sample, the last of another record's trailer).
    fn type_of(&self, rec: &[u8], sample: bool) -> Option<u64> {
        if let Some(t) = self.single {
            return Some(t);
        }
        let id = if sample {
            u64_at(rec, 0)?
        } else {
            u64_at(rec, rec.len().checked_sub(8)?)?
        };
        self.ids.get(&id).map(|&i| self.attrs[i].sample_type)
    }

    /// A non-sample record's time and CPU, from its trailer.
    fn side_time(&self, rec: &[u8]) -> (Option<u64>, Option<u32>) {
        match self.type_of(rec, false) {
            Some(st) if self.sample_id_all && rec.len() >= trailer_size(st) => {
                trailer(st, &rec[rec.len() - trailer_size(st)..])
            }
            _ => (None, None),
        }
    }

    /// The format of class `id` (one of those made in [`read`]).
    fn format(&self, id: u32) -> Option<&Format> {
        self.dat.formats.iter().rev().find(|f| f.id == id)
    }

    /// Record `ty` (`misc`, body `rec`) as an event: `None` for records
    /// that give none. `buf` and `chain` hold what is made.
    fn item<'a>(
        &self,
        ty: u32,
        misc: u16,
        rec: &'a [u8],
        buf: &'a mut Vec<u8>,
        chain: &mut Vec<u8>,
    ) -> Result<Option<Item<'a>>, String> {
        let u = |at: usize| u32_at(rec, at).map_or(0, u64::from);
        let q = |at: usize| u64_at(rec, at).unwrap_or(0);
        // A NUL-terminated text from `at`, within the record's body.
        let text = |at: usize, tail: usize| -> &'a [u8] {
            let t = rec.get(at..rec.len().saturating_sub(tail)).unwrap_or(&[]);
            &t[..memchr::memchr(0, t).unwrap_or(t.len())]
        };
        let tail = match self.type_of(rec, false) {
            Some(st) if self.sample_id_all => trailer_size(st),
            _ => 0,
        };
        let (class, tid, vals): (u32, u32, Vec<Val>) = match ty {
            RECORD_SAMPLE => {
                let st = self
                    .type_of(rec, true)
                    .ok_or("a sample of no recorded event (unknown identifier)")?;
                let s = parse_sample(st, rec)?;
                let Some(ts) = s.time else {
                    return Err("samples without PERF_SAMPLE_TIME are not supported".into());
                };
                if let Some(raw) = s.raw {
                    return Ok(Some(Item {
                        cpu: s.cpu,
                        ts: Some(ts),
                        rec: raw,
                    }));
                }
                let attr = match (self.attrs.len(), s.id) {
                    (1, _) | (_, None) => 0,
                    (_, Some(id)) => *self
                        .ids
                        .get(&id)
                        .ok_or("a sample of no recorded event (unknown identifier)")?,
                };
                // The addresses without perf's context markers.
                chain.clear();
                for a in s.chain.chunks_exact(8) {
                    if u64::from_le_bytes(a.try_into().unwrap_or_default()) < CONTEXT_MAX {
                        chain.extend_from_slice(a);
                    }
                }
                let f = self
                    .format(self.attrs[attr].class)
                    .ok_or("a sample of an event without a class")?;
                build(
                    buf,
                    f,
                    s.tid,
                    &[
                        Val::U(u64::from(s.pid)),
                        Val::U(u64::from(s.tid)),
                        Val::U(s.ip),
                        Val::U(s.period),
                        Val::B(chain),
                    ],
                );
                return Ok(Some(Item {
                    cpu: s.cpu,
                    ts: Some(ts),
                    rec: buf,
                }));
            }
            RECORD_MMAP | RECORD_MMAP2 => {
                let (prot, build_id, name_at): (u64, &[u8], usize) = if ty == RECORD_MMAP {
                    // Executable mappings only (`mmap_data` gives MMAP2).
                    (4, &[], 32)
                } else if misc & MISC_MMAP_BUILD_ID != 0 {
                    let n = rec.get(32).map_or(0, |&n| n as usize).min(20);
                    (u(56), rec.get(36..36 + n).unwrap_or(&[]), 64)
                } else {
                    (u(56), &[], 64)
                };
                (
                    self.side.mmap,
                    u(4) as u32,
                    vec![
                        Val::U(u(0)),
                        Val::U(u(4)),
                        Val::U(q(8)),
                        Val::U(q(16)),
                        Val::U(q(24)),
                        Val::U(prot),
                        Val::B(build_id),
                        Val::B(text(name_at, tail)),
                    ],
                )
            }
            RECORD_COMM => (
                self.side.comm,
                u(4) as u32,
                vec![
                    Val::U(u(0)),
                    Val::U(u(4)),
                    Val::U(u64::from(misc & MISC_COMM_EXEC != 0)),
                    Val::B(text(8, tail)),
                ],
            ),
            RECORD_FORK | RECORD_EXIT => (
                if ty == RECORD_FORK {
                    self.side.fork
                } else {
                    self.side.exit
                },
                u(8) as u32,
                vec![Val::U(u(0)), Val::U(u(4)), Val::U(u(8)), Val::U(u(12))],
            ),
            _ => return Ok(None),
        };
        let (ts, cpu) = self.side_time(rec);
        let f = self.format(class).ok_or("a record without a class")?;
        build(buf, f, tid, &vals);
        Ok(Some(Item { cpu, ts, rec: buf }))
    }

    /// The earliest time of a record (perf gives 0 to the records it
    /// makes for what existed before it started).
    fn first_time(&self, b: &[u8], release: &dyn Fn(usize, usize)) -> Option<u64> {
        let (start, size) = self.data;
        let end = (start + size) as usize;
        let mut at = start as usize;
        let mut first: Option<u64> = None;
        let mut released = at;
        while let (Some(ty), Some(len)) = (u32_at(b, at), u16_at(b, at + 6)) {
            if at - released >= 32 << 20 {
                release(released, at);
                released = at;
            }
            let len = len as usize;
            if len < 8 || at + len > end {
                break;
            }
            let rec = &b[at + 8..at + len];
            // perf's own records (`PERF_RECORD_USER_TYPE_START` and up:
            // the thread and CPU maps, the time conversion) have no
            // trailer.
            let t = if ty >= 64 {
                None
            } else if ty == RECORD_SAMPLE {
                self.type_of(rec, true)
                    .and_then(|st| parse_sample(st, rec).ok())
                    .and_then(|s| s.time)
            } else {
                self.side_time(rec).0
            };
            if let Some(t) = t.filter(|&t| t > 0) {
                first = Some(first.map_or(t, |f| f.min(t)));
            }
            at += len;
        }
        first
    }
}

/// Converts the records of `b` (read by [`read`]) into a stream file per
/// CPU (temporary files made by `tmp`). `release(start, end)` is told of
/// each range of `b` read, for the pages of a mapped file to leave memory.
pub fn streams(
    p: &Perf,
    b: &[u8],
    w: &Writer,
    used: &mut BTreeSet<u32>,
    tmp: &mut dyn FnMut() -> std::io::Result<std::fs::File>,
    release: &dyn Fn(usize, usize),
) -> std::io::Result<Streams> {
    let cpus_known = p.attrs.iter().any(|a| a.sample_type & S_CPU != 0);
    let t0 = p.first_time(b, release).unwrap_or(0);
    // By CPU (0 when unknown) and run.
    let mut lanes: BTreeMap<(u32, u32), Lane> = Default::default();
    let mut damage = None;
    let mut events = 0u64;
    let (start, size) = p.data;
    let end = (start + size) as usize;
    let mut at = start as usize;
    let mut pending_lost: BTreeMap<u32, u64> = Default::default();
    let (mut buf, mut chain) = (Vec::new(), Vec::new());
    let mut last_any = t0;
    let mut new_lane =
        |lanes: &mut BTreeMap<(u32, u32), Lane>, key: (u32, u32)| -> std::io::Result<()> {
            let f = tmp()?;
            lanes.insert(
                key,
                Lane {
                    pkt: Vec::with_capacity(PACKET + 4096),
                    open: false,
                    last: 0,
                    discarded: 0,
                    out: std::io::BufWriter::with_capacity(1 << 16, f),
                },
            );
            Ok(())
        };
    let mut released = 0usize;
    while at + 8 <= end {
        if at - released >= 32 << 20 {
            release(released, at);
            released = at;
        }
        let (Some(ty), Some(misc), Some(len)) =
            (u32_at(b, at), u16_at(b, at + 4), u16_at(b, at + 6))
        else {
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
        let fail = move |m: String| {
            Some(DatError {
                offset: at as u64,
                msg: m,
            })
        };
        match ty {
            RECORD_LOST | RECORD_LOST_SAMPLES => {
                let lost = if ty == RECORD_LOST {
                    u64_at(rec, 8)
                } else {
                    u64_at(rec, 0)
                }
                .unwrap_or(0);
                let cpu = if cpus_known {
                    p.side_time(rec).1.unwrap_or(0)
                } else {
                    0
                };
                match lanes.get_mut(&(cpu, 0)) {
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
                damage = fail(
                    "compressed records (perf record -z) are not supported; record without -z"
                        .into(),
                );
                break;
            }
            _ => {
                let it = match p.item(ty, misc, rec, &mut buf, &mut chain) {
                    Ok(Some(it)) => it,
                    Ok(None) => {
                        at += len;
                        continue;
                    }
                    Err(m) => {
                        damage = fail(m);
                        break;
                    }
                };
                // perf's records of what ran before it have time 0: they
                // go first; a record without a time goes at the time
                // reached.
                let ts = match it.ts {
                    Some(0) => t0,
                    Some(t) => t,
                    None => last_any,
                };
                // The CPU's first run whose last record is not later, else
                // a new run.
                let cpu = if cpus_known { it.cpu.unwrap_or(0) } else { 0 };
                let run = lanes
                    .range((cpu, 0)..=(cpu, u32::MAX))
                    .find(|(_, l)| l.last <= ts)
                    .map_or_else(
                        || lanes.range((cpu, 0)..=(cpu, u32::MAX)).count() as u32,
                        |(k, _)| k.1,
                    );
                let key = (cpu, run);
                if !lanes.contains_key(&key) {
                    new_lane(&mut lanes, key)?;
                }
                let c = lanes.get_mut(&key).expect("made above");
                if !c.open {
                    if run == 0 {
                        c.discarded += pending_lost.remove(&cpu).unwrap_or(0);
                    }
                    let id = if cpus_known { cpu } else { run };
                    // A further run of a CPU holds a few records scattered
                    // over the recording: its first packet begins where
                    // the recording does (and its last ends where it
                    // does), so that it does not narrow the time every
                    // stream covers (the analyses' stream intersection).
                    let begin = if run > 0 && c.last == 0 {
                        t0.min(ts)
                    } else {
                        ts
                    };
                    start_packet(&mut c.pkt, false, begin, c.discarded, id);
                    c.open = true;
                }
                if let Err(m) = w.event(it.rec, ts, false, &mut c.pkt, used) {
                    damage = fail(m);
                    break;
                }
                c.last = ts;
                last_any = last_any.max(ts);
                events += 1;
                if c.pkt.len() >= PACKET {
                    finish_packet(&mut c.pkt, false, c.last);
                    c.out.write_all(&c.pkt)?;
                    c.pkt.clear();
                    c.open = false;
                }
            }
        }
        at += len;
    }
    let mut files = Vec::new();
    for ((cpu, run), mut c) in lanes {
        if c.open {
            let end = if run > 0 {
                last_any.max(c.last)
            } else {
                c.last
            };
            finish_packet(&mut c.pkt, false, end);
            c.out.write_all(&c.pkt)?;
        }
        let f = c.out.into_inner().map_err(|e| e.into_error())?;
        files.push((cpu, run, f));
    }
    Ok(Streams {
        files,
        cpus: cpus_known,
        damage,
        events,
    })
}
