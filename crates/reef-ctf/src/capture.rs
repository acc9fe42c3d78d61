//! Live captures: the record framing libreef sends to `REEF_LISTEN` clients,
//! which is also the format of a capture saved with `nc HOST PORT > FILE`.
//!
//! A capture is a sequence of records, each a 24-byte little-endian header
//! then `size` bytes:
//!
//! | bytes | field | |
//! |---|---|---|
//! | 0..4 | magic | `0x66656572` (`"reef"`) |
//! | 4..8 | kind | 1 metadata (TSDL text; a later one replaces it), 2 packet (one whole CTF packet), 3 end (the program finished; size 0) |
//! | 8..16 | stream | the packet's `stream_instance_id`; 0 otherwise |
//! | 16..24 | size | bytes that follow |
//!
//! The first record is metadata. Opening a capture as a trace
//! ([`load_class`], [`stream_files`]) uses its last metadata record and
//! copies each stream's packets, in order, into an unlinked temporary file
//! that is memory-mapped like a stream file: the bytes are exactly those of
//! `stream_<id>` in the directory `reef listen -o DIR` writes, and errors
//! name them `CAPTURE#stream_<id>` with offsets into them.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::Mmap;

use crate::metadata::read_metadata;
use crate::stream::{read_packet, PacketScratch};
use crate::trace::{StreamFile, StreamSource, Trace, TraceClass};
use crate::Error;

/// `"reef"` in little-endian order.
pub const MAGIC: u32 = 0x6665_6572;
/// Bytes in a record header.
pub const HEADER_LEN: usize = 24;
/// Largest metadata record accepted.
pub const MAX_METADATA: u64 = 64 << 20;
/// Largest packet record accepted (libreef's packets are at most 1 GiB).
pub const MAX_PACKET: u64 = 1 << 30;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Metadata,
    Packet,
    End,
}

/// A record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    pub stream: u64,
    pub size: u64,
}

/// Decodes and checks a record header.
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<Record, String> {
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap_or_default());
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
    let magic = u32_at(0);
    if magic != MAGIC {
        return Err(format!(
            "bad record magic {magic:#010x}, expected {MAGIC:#010x} (\"reef\")"
        ));
    }
    let (kind, limit) = match u32_at(4) {
        1 => (Kind::Metadata, MAX_METADATA),
        2 => (Kind::Packet, MAX_PACKET),
        3 => (Kind::End, 0),
        k => return Err(format!("unknown record kind {k}, expected 1, 2 or 3")),
    };
    let size = u64_at(16);
    if size > limit {
        return Err(format!(
            "{kind:?} record of {size} bytes, more than the {limit} allowed"
        ));
    }
    Ok(Record {
        kind,
        stream: u64_at(8),
        size,
    })
}

/// Reads records one after the other, keeping track of the byte offset
/// for errors.
pub struct Reader<R> {
    inner: R,
    /// Offset of the next record.
    offset: u64,
    /// What errors name: the capture file, or the address read from.
    name: PathBuf,
    /// Whether the last error was the input ending inside a record.
    cut: bool,
}

impl<R: Read> Reader<R> {
    pub fn new(inner: R, name: PathBuf) -> Reader<R> {
        Reader {
            inner,
            offset: 0,
            name,
            cut: false,
        }
    }

    /// Whether [`Reader::next`]'s error was the input ending inside a
    /// record (a capture cut off), as opposed to bad bytes.
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn err(&self, offset: u64, msg: String) -> Error {
        Error::Stream {
            path: self.name.clone(),
            offset,
            msg,
        }
    }

    /// The next record, its payload in `payload`; `Ok(None)` at the end of
    /// the input on a record boundary. The payload buffer grows with the
    /// bytes actually read, not with the size a header announces.
    pub fn next(&mut self, payload: &mut Vec<u8>) -> Result<Option<Record>, Error> {
        let mut h = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            match self.inner.read(&mut h[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => {
                    self.cut = true;
                    return Err(self.err(
                        self.offset,
                        format!("input ends inside a record header ({got} of {HEADER_LEN} bytes)"),
                    ));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.name, e)),
            }
        }
        let rec = parse_header(&h).map_err(|m| self.err(self.offset, m))?;
        if self.offset == 0 && rec.kind != Kind::Metadata {
            return Err(self.err(0, "the first record is not metadata".into()));
        }
        payload.clear();
        let n = (&mut self.inner)
            .take(rec.size)
            .read_to_end(payload)
            .map_err(|e| Error::io(&self.name, e))?;
        if (n as u64) < rec.size {
            self.cut = true;
            return Err(self.err(
                self.offset,
                format!(
                    "input ends inside a {:?} record: {} bytes announced, {n} present",
                    rec.kind, rec.size
                ),
            ));
        }
        self.offset += HEADER_LEN as u64 + rec.size;
        Ok(Some(rec))
    }
}

/// Whether `path` is a file that starts like a capture (a metadata record
/// header).
pub fn is_capture(path: &Path) -> bool {
    let mut h = [0u8; 8];
    let ok = File::open(path)
        .and_then(|mut f| f.read_exact(&mut h))
        .is_ok();
    ok && u32::from_le_bytes([h[0], h[1], h[2], h[3]]) == MAGIC
        && u32::from_le_bytes([h[4], h[5], h[6], h[7]]) == 1
}

/// Parses and compiles TSDL metadata received in a record; errors name
/// `name`.
pub fn class_from_metadata(bytes: &[u8], name: &Path) -> Result<TraceClass, Error> {
    let merr = |e| Error::Metadata {
        path: name.to_path_buf(),
        err: e,
    };
    let meta = read_metadata(bytes).map_err(merr)?;
    TraceClass::new(meta).map_err(|msg| Error::Stream {
        path: name.to_path_buf(),
        offset: 0,
        msg,
    })
}

/// Where a capture file ends inside a record: a capture saved with `nc`
/// that was stopped mid-packet, or a disk that filled. Opening keeps the
/// complete records before it; readers report the cut as an error once
/// they have read them (so nothing before it is lost, and the exit status
/// still says the input was incomplete). `offset`: the incomplete record's.
pub type Cut = crate::Damage;

/// The next complete record; `Ok(None)` at the end of the input or where
/// it ends inside a record (then `cut` says where).
fn next_complete<R: Read>(
    r: &mut Reader<R>,
    buf: &mut Vec<u8>,
    cut: &mut Option<Cut>,
) -> Result<Option<Record>, Error> {
    match r.next(buf) {
        Err(Error::Stream { path, offset, msg }) if r.is_cut() => {
            *cut = Some(Cut {
                path,
                offset,
                msg: format!(
                    "{msg} (the capture is cut off here; the records before it were read)"
                ),
            });
            Ok(None)
        }
        other => other,
    }
}

/// The compiled metadata of a capture file: its last complete metadata
/// record.
pub fn load_class(path: &Path) -> Result<TraceClass, Error> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut r = Reader::new(BufReader::with_capacity(1 << 16, f), path.to_path_buf());
    let mut buf = Vec::new();
    let mut meta: Option<Vec<u8>> = None;
    let mut cut = None;
    while let Some(rec) = next_complete(&mut r, &mut buf, &mut cut)? {
        if rec.kind == Kind::Metadata {
            meta = Some(std::mem::take(&mut buf));
        }
    }
    let meta = match (meta, cut) {
        (Some(m), _) => m,
        (None, Some(c)) => return Err(c.error()),
        (None, None) => {
            return Err(Error::Stream {
                path: path.to_path_buf(),
                offset: 0,
                msg: "capture holds no metadata record".into(),
            })
        }
    };
    class_from_metadata(&meta, path)
}

/// A new, already unlinked, temporary file.
pub(crate) fn temp_file() -> std::io::Result<File> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = dir.join(format!(".reef-capture-{}-{n}", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(f) => {
                let _ = std::fs::remove_file(&p);
                return Ok(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Maps a temporary file holding what `fill` writes as a stream file named
/// `name`.
pub fn temp_stream_file(
    name: PathBuf,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<StreamFile, Error> {
    let tmp_err = |e| Error::io(&std::env::temp_dir(), e);
    let f = temp_file().map_err(tmp_err)?;
    {
        let mut w = BufWriter::with_capacity(1 << 16, &f);
        fill(&mut w).map_err(tmp_err)?;
        w.flush().map_err(tmp_err)?;
    }
    // SAFETY: the file is private to this process (unlinked, never written
    // again), so the mapping cannot change under us.
    let map = unsafe { Mmap::map(&f) }.map_err(tmp_err)?;
    Ok(StreamFile::new(name, map))
}

/// Streams whose temporary files are open at once while a capture is
/// unpacked; beyond that the least recently used one is finished (mapped,
/// closed) and a later packet of it starts a new file.
const MAX_OPEN: usize = 256;

/// Each stream of a capture file, its packets copied in order into a
/// temporary stream file named `CAPTURE#stream_<id>` (`...#stream_<id>.<k>`
/// for the k-th further file of a stream, when more than 256 streams
/// interleave), sorted by name. Files of one stream are read in order of
/// their first packet's time, as for LTTng's rotated files. A capture that
/// ends inside a record gives the streams of the records before it and
/// where it was cut.
pub fn stream_files(path: &Path) -> Result<(Vec<StreamFile>, Option<Cut>), Error> {
    struct Open {
        w: BufWriter<File>,
        chunk: u32,
        last_use: u64,
    }
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut r = Reader::new(BufReader::with_capacity(1 << 16, f), path.to_path_buf());
    let mut buf = Vec::new();
    let mut open: BTreeMap<u64, Open> = BTreeMap::new();
    let mut chunks: BTreeMap<u64, u32> = BTreeMap::new();
    let mut out = Vec::new();
    let tmp_err = |e| Error::io(&std::env::temp_dir(), e);
    let finish = |id: u64, o: Open| -> Result<StreamFile, Error> {
        let f = o.w.into_inner().map_err(|e| tmp_err(e.into_error()))?;
        // SAFETY: as in `temp_stream_file`; the map outlives the closed file.
        let map = unsafe { Mmap::map(&f) }.map_err(tmp_err)?;
        let mut name = path.as_os_str().to_os_string();
        name.push(format!("#stream_{id}"));
        if o.chunk > 0 {
            name.push(format!(".{}", o.chunk));
        }
        Ok(StreamFile::new(PathBuf::from(name), map))
    };
    let mut tick = 0u64;
    let mut cut = None;
    while let Some(rec) = next_complete(&mut r, &mut buf, &mut cut)? {
        if rec.kind != Kind::Packet || buf.is_empty() {
            continue;
        }
        tick += 1;
        if !open.contains_key(&rec.stream) {
            if open.len() >= MAX_OPEN {
                let lru = open
                    .iter()
                    .min_by_key(|(_, o)| o.last_use)
                    .map(|(id, _)| *id)
                    .unwrap_or_default();
                if let Some(o) = open.remove(&lru) {
                    out.push(finish(lru, o)?);
                }
            }
            let chunk = chunks.entry(rec.stream).or_default();
            open.insert(
                rec.stream,
                Open {
                    w: BufWriter::with_capacity(1 << 16, temp_file().map_err(tmp_err)?),
                    chunk: *chunk,
                    last_use: tick,
                },
            );
            *chunk += 1;
        }
        if let Some(o) = open.get_mut(&rec.stream) {
            o.last_use = tick;
            o.w.write_all(&buf).map_err(tmp_err)?;
        }
    }
    for (id, o) in std::mem::take(&mut open) {
        out.push(finish(id, o)?);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, cut))
}

/// A trace made of `class` and stream files that each hold one stream
/// (packets received live): the stream class of each is read from its first
/// packet; the other packets are checked as they are read.
pub fn trace_from_streams(
    class: TraceClass,
    path: PathBuf,
    files: Vec<StreamFile>,
) -> Result<Trace, Error> {
    let slots = class
        .streams
        .iter()
        .map(|s| s.refs.len())
        .max()
        .unwrap_or(0);
    let mut st = crate::decode::State::new(slots);
    let mut ph = crate::decode::State::new(class.packet_header_slots);
    let (mut scratch, mut ctx) = (Vec::new(), Vec::new());
    let mut sources = Vec::new();
    for sf in files {
        let (stream, info, _) = read_packet(
            &class,
            &sf,
            0,
            &mut PacketScratch {
                st: &mut st,
                ph_state: &mut ph,
                scratch: &mut scratch,
                context: &mut ctx,
            },
        )?;
        sources.push(StreamSource {
            stream,
            instance_id: info.stream_instance_id,
            files: vec![Arc::new(sf)],
        });
    }
    Ok(Trace {
        path: path.clone(),
        dirs: vec![path],
        class,
        sources,
        cut: None,
        damage: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(magic: u32, kind: u32, stream: u64, size: u64) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&magic.to_le_bytes());
        h.extend_from_slice(&kind.to_le_bytes());
        h.extend_from_slice(&stream.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<(Record, Vec<u8>)>, Error> {
        let mut r = Reader::new(bytes, PathBuf::from("cap"));
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while let Some(rec) = r.next(&mut buf)? {
            out.push((rec, buf.clone()));
        }
        Ok(out)
    }

    #[test]
    fn records_in_order() {
        let mut b = header(MAGIC, 1, 0, 3);
        b.extend_from_slice(b"abc");
        b.extend(header(MAGIC, 2, 7, 2));
        b.extend_from_slice(b"xy");
        b.extend(header(MAGIC, 3, 0, 0));
        let recs = read_all(&b).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].0.kind, Kind::Metadata);
        assert_eq!(recs[0].1, b"abc");
        assert_eq!(
            recs[1].0,
            Record {
                kind: Kind::Packet,
                stream: 7,
                size: 2
            }
        );
        assert_eq!(recs[1].1, b"xy");
        assert_eq!(recs[2].0.kind, Kind::End);
    }

    fn err_text(bytes: &[u8]) -> String {
        read_all(bytes).unwrap_err().to_string()
    }

    #[test]
    fn bad_input_names_the_offset() {
        let mut b = header(MAGIC, 1, 0, 1);
        b.push(b'x');
        b.extend(header(0x1234_5678, 2, 0, 0));
        assert_eq!(
            err_text(&b),
            "cap: at byte 25: bad record magic 0x12345678, expected 0x66656572 (\"reef\")"
        );

        let mut b = header(MAGIC, 1, 0, 1);
        b.push(b'x');
        b.extend(header(MAGIC, 9, 0, 0));
        assert_eq!(
            err_text(&b),
            "cap: at byte 25: unknown record kind 9, expected 1, 2 or 3"
        );

        let mut b = header(MAGIC, 1, 0, 10);
        b.extend_from_slice(b"abc");
        assert_eq!(
            err_text(&b),
            "cap: at byte 0: input ends inside a Metadata record: 10 bytes announced, 3 present"
        );

        let b = header(MAGIC, 1, 0, 0);
        assert_eq!(
            err_text(&b[..10]),
            "cap: at byte 0: input ends inside a record header (10 of 24 bytes)"
        );

        let b = header(MAGIC, 2, 0, 0);
        assert_eq!(
            err_text(&b),
            "cap: at byte 0: the first record is not metadata"
        );

        // A size no allocation follows: refused before reading on.
        let b = header(MAGIC, 2, 0, u64::MAX);
        let mut m = header(MAGIC, 1, 0, 0);
        m.extend(b);
        assert_eq!(
            err_text(&m),
            "cap: at byte 24: Packet record of 18446744073709551615 bytes, more than the 1073741824 allowed"
        );
    }

    /// A minimal TSDL trace whose packets are just a header: magic,
    /// stream_instance_id, and a 64-bit timestamp_begin in the context.
    const TSDL: &str = "/* CTF 1.8 */
typealias integer { size = 32; align = 8; signed = false; byte_order = le; } := u32;
typealias integer { size = 64; align = 8; signed = false; byte_order = le; } := u64;
clock { name = c; freq = 1000000000; };
trace { major = 1; minor = 8; byte_order = le;
  packet.header := struct { u32 magic; u64 stream_instance_id; }; };
stream { packet.context := struct {
    integer { size = 64; align = 8; signed = false; byte_order = le; map = clock.c.value; } timestamp_begin;
    u64 content_size; u64 packet_size; }; };
";

    fn packet(instance: u64, ts: u64) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&0xC1FC_1FC1u32.to_le_bytes());
        p.extend_from_slice(&instance.to_le_bytes());
        p.extend_from_slice(&ts.to_le_bytes());
        p.extend_from_slice(&(36u64 * 8).to_le_bytes());
        p.extend_from_slice(&(36u64 * 8).to_le_bytes());
        p
    }

    #[test]
    fn more_interleaved_streams_than_open_files() {
        // 300 streams, each with packets before and after the others: some
        // are split over two temporary files, read back as one stream.
        let mut cap = header(MAGIC, 1, 0, TSDL.len() as u64);
        cap.extend_from_slice(TSDL.as_bytes());
        for round in 0..2u64 {
            for s in 0..300u64 {
                let p = packet(s, round * 1000 + s);
                cap.extend(header(MAGIC, 2, s, p.len() as u64));
                cap.extend(p);
            }
        }
        let dir = std::env::temp_dir().join(format!("reef-capture-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("many.capture");
        std::fs::write(&path, &cap).unwrap();
        assert!(is_capture(&path));
        let (files, cut) = stream_files(&path).unwrap();
        assert_eq!(cut, None);
        assert!(files.len() > 300, "{} files", files.len());
        let class = load_class(&path).unwrap();
        let trace = Trace::from_class(class, std::slice::from_ref(&path)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(trace.sources.len(), 300);
        for src in &trace.sources {
            let s = src.instance_id.unwrap();
            let bytes: Vec<u8> = src.files.iter().flat_map(|f| f.data().to_vec()).collect();
            assert_eq!(
                bytes,
                [packet(s, s), packet(s, 1000 + s)].concat(),
                "stream {s}"
            );
        }
    }

    #[test]
    fn a_cut_capture_keeps_the_records_before_the_cut() {
        let mut cap = header(MAGIC, 1, 0, TSDL.len() as u64);
        cap.extend_from_slice(TSDL.as_bytes());
        let mut whole = Vec::new();
        for (s, ts) in [(1u64, 10u64), (2, 20), (1, 30)] {
            let p = packet(s, ts);
            cap.extend(header(MAGIC, 2, s, p.len() as u64));
            cap.extend(p);
            whole.push(cap.len());
        }
        let dir = std::env::temp_dir().join(format!("reef-capture-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.capture");
        let name = path.display().to_string();
        // Cut inside the third packet, then inside its record header.
        for (at, what) in [
            (
                whole[2] - 5,
                "a Packet record: 36 bytes announced, 31 present",
            ),
            (whole[1] + 7, "a record header (7 of 24 bytes)"),
        ] {
            std::fs::write(&path, &cap[..at]).unwrap();
            let trace = Trace::open(&path).unwrap();
            let cut = trace.cut.clone().unwrap();
            assert_eq!(cut.offset, whole[1] as u64);
            assert_eq!(
                cut.error().to_string(),
                format!("{name}: at byte {}: input ends inside {what} (the capture is cut off here; the records before it were read)", whole[1])
            );
            let bytes: Vec<Vec<u8>> = trace
                .sources
                .iter()
                .map(|src| src.files.iter().flat_map(|f| f.data().to_vec()).collect())
                .collect();
            assert_eq!(bytes, vec![packet(1, 10), packet(2, 20)]);
        }
        // Whole records only: no cut.
        std::fs::write(&path, &cap).unwrap();
        assert_eq!(Trace::open(&path).unwrap().cut, None);
        // Cut inside the only metadata record: nothing to read, an error.
        std::fs::write(&path, &cap[..40]).unwrap();
        let err = Trace::open(&path).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            err.contains("at byte 0: input ends inside a Metadata record"),
            "{err}"
        );
    }

    #[test]
    fn empty_input_is_no_record() {
        assert!(read_all(&[]).unwrap().is_empty());
    }
}
