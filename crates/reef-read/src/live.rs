//! Receiving a running program's trace from libreef's `REEF_LISTEN`
//! socket (framing: `reef_ctf::capture`): keeping it as a CTF trace
//! directory ([`TraceWriter`]) and decoding it as it arrives, one burst of
//! packets at a time ([`Burst`]).
//!
//! A burst is everything that arrived without a 5 ms pause, at most 4 MiB.
//! It is decoded as one small trace: each stream's new packets, preceded by
//! that stream's previous packet so that discarded-event and
//! discarded-packet notices are computed across bursts exactly as for a
//! whole trace (the previous packet's messages are not given again).
//! Streams are named as the files the writer makes (`DIR/stream_<id>`,
//! else `HOST:PORT/stream_<id>`), and decoding errors give offsets in
//! those files. Times are converted with the metadata received first;
//! libreef re-measures its clock at exit and sends the final metadata last
//! (what the writer keeps).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reef_ctf::capture::{self, Kind};
use reef_ctf::{EnvValue, Item, Metadata, StreamCursor, Trace, TraceClass};
use reef_iter::{Muxer, TraceLabel};

use crate::Error;

/// A burst is decoded once this many bytes are pending.
const BURST_BYTES: usize = 4 << 20;
/// ... or once no byte arrives for this long.
const BURST_PAUSE: Duration = Duration::from_millis(5);

/// `HOST:PORT`, `[V6]:PORT`, `:PORT`, `PORT` (host 127.0.0.1).
pub fn parse_addr(s: &str) -> Result<(String, u16), Error> {
    let bad = |expected: &str| Error::Address {
        addr: s.to_string(),
        expected: expected.to_string(),
    };
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:").ok_or_else(|| bad("[IPV6]:PORT"))?;
        (h.to_string(), p)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (if h.is_empty() { "127.0.0.1" } else { h }.to_string(), p),
            None => ("127.0.0.1".to_string(), s),
        }
    };
    let port = port
        .parse::<u16>()
        .map_err(|_| bad("HOST:PORT with a port number"))?;
    Ok((host, port))
}

fn connect(host: &str, port: u16, wait: Duration) -> Result<TcpStream, Error> {
    let deadline = Instant::now() + wait.min(Duration::from_secs(86400));
    loop {
        let r = (host, port).to_socket_addrs().and_then(|mut addrs| {
            let a = addrs
                .next()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
            TcpStream::connect(a)
        });
        match r {
            Ok(s) => return Ok(s),
            Err(err) if Instant::now() >= deadline => {
                return Err(Error::Connect {
                    addr: format!("{host}:{port}"),
                    err,
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn write_err(path: &Path, err: std::io::Error) -> Error {
    Error::Trace(reef_ctf::Error::io(path, err))
}

/// The trace directory being written: the metadata and one
/// `stream_<id>` file per stream, as received.
pub struct TraceWriter {
    dir: PathBuf,
    files: HashMap<u64, File>,
    written: Arc<Mutex<Written>>,
    /// Stream id -> its index in `Written::streams`.
    order: HashMap<u64, usize>,
}

/// What a [`TraceWriter`] has written so far, for a reader of the
/// directory as it grows: its files hold whole packets up to these sizes
/// (a packet being written may already be partly there).
#[derive(Debug, Default, Clone)]
pub struct Written {
    /// Metadata texts written (each replaced the file).
    pub metadata: u32,
    /// Per stream, in the order streams first appeared: its id and the
    /// bytes of the whole packets in its file.
    pub streams: Vec<(u64, u64)>,
    pub packets: u64,
    pub bytes: u64,
}

impl TraceWriter {
    /// Creates `dir` if needed; an earlier trace there is removed (it
    /// would mix with this one).
    pub fn create(dir: &Path) -> Result<TraceWriter, Error> {
        std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
        for e in std::fs::read_dir(dir).map_err(|e| write_err(dir, e))? {
            let e = e.map_err(|e| write_err(dir, e))?;
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n == "metadata" || n.starts_with("stream_") {
                std::fs::remove_file(e.path()).map_err(|err| write_err(&e.path(), err))?;
            }
        }
        Ok(TraceWriter {
            dir: dir.to_path_buf(),
            files: HashMap::new(),
            written: Arc::default(),
            order: HashMap::new(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of stream `id`.
    pub fn stream_path(dir: &Path, id: u64) -> PathBuf {
        dir.join(format!("stream_{id}"))
    }

    /// What was written so far, updated as packets are written.
    pub fn written(&self) -> Arc<Mutex<Written>> {
        self.written.clone()
    }

    /// Replaces the metadata (atomically).
    pub fn metadata(&mut self, text: &[u8]) -> Result<(), Error> {
        let tmp = self.dir.join(".metadata.tmp");
        let path = self.dir.join("metadata");
        std::fs::write(&tmp, text).map_err(|e| write_err(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| write_err(&path, e))?;
        if let Ok(mut w) = self.written.lock() {
            w.metadata += 1;
        }
        Ok(())
    }

    /// Appends a packet to its stream's file.
    pub fn packet(&mut self, stream: u64, bytes: &[u8]) -> Result<(), Error> {
        if !self.files.contains_key(&stream) && self.files.len() >= 256 {
            // Many threads come and go: keep few files open.
            self.files.clear();
        }
        let p = TraceWriter::stream_path(&self.dir, stream);
        let f = match self.files.entry(stream) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&p)
                    .map_err(|e| write_err(&p, e))?;
                v.insert(f)
            }
        };
        f.write_all(bytes).map_err(|e| write_err(&p, e))?;
        if let Ok(mut w) = self.written.lock() {
            let n = w.streams.len();
            let i = *self.order.entry(stream).or_insert(n);
            if i == n {
                w.streams.push((stream, 0));
            }
            w.streams[i].1 += bytes.len() as u64;
            w.packets += 1;
            w.bytes += bytes.len() as u64;
        }
        Ok(())
    }
}

/// One message of a burst.
pub struct BurstMsg<'a> {
    pub item: Item,
    /// Its stream's cursor (the event's fields).
    pub cursor: &'a StreamCursor,
    /// ns from the origin, when known.
    pub ns: Option<i64>,
}

/// One burst of packets, decoded as a small trace: its messages in time
/// order with [`Burst::next`].
pub struct Burst {
    mux: Muxer,
    /// Per source: whether its first packet is the previous burst's last.
    prefixed: Vec<bool>,
    /// Burst file name -> where its byte 0 is in the stream as received.
    origin: HashMap<PathBuf, i128>,
    /// The trace's label (its hostname).
    pub label: TraceLabel,
}

impl Burst {
    /// The next message in time order. Errors name offsets in the stream
    /// as received.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<BurstMsg<'_>>, Error> {
        loop {
            let i = match self.mux.next() {
                Ok(Some(i)) => i,
                Ok(None) => return Ok(None),
                Err(e) => return Err(remap(&self.origin, e).into()),
            };
            let c = self.mux.cursor(i);
            if self.prefixed[c.source] && c.packets_read <= 1 {
                continue; // the previous burst's last packet, given already
            }
            let (item, ns) = (self.mux.item(i), self.mux.time_ns(i));
            return Ok(Some(BurstMsg {
                item,
                cursor: self.mux.cursor(i),
                ns,
            }));
        }
    }
}

/// `e` with its offset in the burst's file turned into the offset in the
/// stream as received (`origin`: where each burst file's byte 0 is).
fn remap(origin: &HashMap<PathBuf, i128>, e: reef_ctf::Error) -> reef_ctf::Error {
    let at = |path: &PathBuf, off: u64| {
        origin
            .get(path)
            .map_or(off, |o| (o + off as i128).max(0) as u64)
    };
    match e {
        reef_ctf::Error::Decode {
            path,
            packet_offset,
            err,
        } => reef_ctf::Error::Decode {
            packet_offset: at(&path, packet_offset),
            path,
            err,
        },
        reef_ctf::Error::Stream { path, offset, msg } => reef_ctf::Error::Stream {
            offset: at(&path, offset),
            path,
            msg,
        },
        other => other,
    }
}

/// Collects packets into bursts.
struct Bursts {
    name: PathBuf,
    meta: Option<Metadata>,
    /// The compiled metadata, taken back from the last burst's trace.
    class: Option<TraceClass>,
    label: TraceLabel,
    /// This burst's packets, per stream, and where the last one starts.
    pending: BTreeMap<u64, (Vec<u8>, usize)>,
    pending_bytes: usize,
    /// The last packet given of each stream.
    prev: HashMap<u64, Vec<u8>>,
    /// Bytes received of each stream before this burst.
    received: HashMap<u64, u64>,
    stream_dir: PathBuf,
}

impl Bursts {
    fn metadata<E: From<Error>>(
        &mut self,
        bytes: &[u8],
        f: &mut impl FnMut(&mut Burst) -> Result<(), E>,
    ) -> Result<(), E> {
        self.flush(f)?;
        let class = capture::class_from_metadata(bytes, &self.name).map_err(Error::from)?;
        self.label = TraceLabel {
            name: match class.meta.env_get("hostname") {
                Some(EnvValue::Str(s)) => s.clone(),
                _ => String::new(),
            },
        };
        self.meta = Some(class.meta.clone());
        self.class = Some(class);
        Ok(())
    }

    fn packet(&mut self, stream: u64, bytes: &[u8]) {
        let e = self.pending.entry(stream).or_default();
        e.1 = e.0.len();
        e.0.extend_from_slice(bytes);
        self.pending_bytes += bytes.len();
    }

    fn flush<E: From<Error>>(
        &mut self,
        f: &mut impl FnMut(&mut Burst) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let Some(meta) = &self.meta else {
            return Ok(());
        };
        let class = match self.class.take() {
            Some(c) => c,
            None => TraceClass::new(meta.clone()).map_err(|msg| {
                Error::Trace(reef_ctf::Error::Stream {
                    path: self.name.clone(),
                    offset: 0,
                    msg,
                })
            })?,
        };
        let mut files = Vec::new();
        let mut prefixed = Vec::new();
        let mut origin: HashMap<PathBuf, i128> = HashMap::new();
        for (id, (bytes, last)) in &pending {
            let prev = self.prev.get(id);
            prefixed.push(prev.is_some());
            let name = self.stream_dir.join(format!("stream_{id}"));
            let before = self.received.entry(*id).or_default();
            origin.insert(
                name.clone(),
                *before as i128 - prev.map_or(0, |p| p.len()) as i128,
            );
            *before += bytes.len() as u64;
            files.push(
                capture::temp_stream_file(name, |w| {
                    if let Some(p) = prev {
                        w.write_all(p)?;
                    }
                    w.write_all(bytes)
                })
                .map_err(Error::from)?,
            );
            self.prev.insert(*id, bytes[*last..].to_vec());
        }
        let trace = capture::trace_from_streams(class, self.name.clone(), files)
            .map_err(|e| Error::from(remap(&origin, e)))?;
        let trace: Arc<Trace> = Arc::new(trace);
        let mux = Muxer::with_names(
            std::slice::from_ref(&trace),
            std::slice::from_ref(&self.label.name),
        );
        let mut burst = Burst {
            mux,
            prefixed,
            origin,
            label: self.label.clone(),
        };
        let r = f(&mut burst);
        drop(burst);
        self.class = Arc::try_unwrap(trace).ok().map(|t| t.class);
        r
    }
}

/// What a [`Listener`] received.
#[derive(Debug, Clone, Default)]
pub struct Received {
    pub packets: u64,
    pub bytes: u64,
    /// Distinct streams.
    pub streams: usize,
    /// The program said the trace ended (rather than the connection
    /// closing).
    pub ended: bool,
}

/// A connection to a traced program.
pub struct Listener {
    rd: capture::Reader<BufReader<TcpStream>>,
    name: PathBuf,
    writer: Option<TraceWriter>,
    bursts: Option<Bursts>,
    streams: HashSet<u64>,
    received: Received,
    check: Check,
}

/// What arrives is checked before it is kept: a metadata record must
/// parse, a packet record's header and context must decode with the
/// metadata and declare the record's own length. A record that does not
/// is left out (not written, not decoded) and said in
/// [`Listener::refused`]; what is good is kept.
pub struct Check {
    class: Option<TraceClass>,
    st: reef_ctf::decode::State,
    ph: reef_ctf::decode::State,
    scratch: Vec<reef_ctf::Value>,
    ctx: Vec<reef_ctf::Value>,
    refused: Vec<String>,
}

impl Default for Check {
    fn default() -> Check {
        Check {
            class: None,
            st: reef_ctf::decode::State::new(0),
            ph: reef_ctf::decode::State::new(0),
            scratch: Vec::new(),
            ctx: Vec::new(),
            refused: Vec::new(),
        }
    }
}

impl Check {
    /// Checks a metadata record (it must parse and compile); a good one
    /// becomes what packets are checked against. `name`: for messages.
    pub fn metadata(&mut self, bytes: &[u8], name: &Path) -> Result<(), String> {
        if bytes.is_empty() {
            return Err("an empty metadata record".into());
        }
        let class = capture::class_from_metadata(bytes, name).map_err(|e| e.to_string())?;
        let slots = class
            .streams
            .iter()
            .map(|s| s.refs.len())
            .max()
            .unwrap_or(0);
        self.st = reef_ctf::decode::State::new(slots);
        self.ph = reef_ctf::decode::State::new(class.packet_header_slots);
        self.class = Some(class);
        Ok(())
    }

    /// Checks a packet record against the last good metadata: its header
    /// and context decode, and it declares the record's length.
    /// `Ok(false)`: no metadata to check it against yet.
    pub fn packet(&mut self, bytes: &[u8], name: &Path) -> Result<bool, String> {
        let Some(class) = &self.class else {
            return Ok(false);
        };
        let mut ps = reef_ctf::stream::PacketScratch {
            st: &mut self.st,
            ph_state: &mut self.ph,
            scratch: &mut self.scratch,
            context: &mut self.ctx,
        };
        let (_, info, _) = reef_ctf::stream::read_packet_bytes(class, bytes, name, &mut ps)
            .map_err(|e| e.to_string())?;
        if info.packet_bits != bytes.len() as u64 * 8 {
            return Err(format!(
                "the packet declares {} bytes (packet_size), the record holds {}",
                info.packet_bits / 8,
                bytes.len()
            ));
        }
        Ok(true)
    }
}

impl Listener {
    /// Connects to `addr` (see [`parse_addr`]), retrying for up to `wait`.
    /// With `output`, what is received is written there as a trace
    /// directory; with `decode`, [`Listener::receive`] gives bursts.
    pub fn connect(
        addr: &str,
        wait: Duration,
        output: Option<&Path>,
        decode: bool,
    ) -> Result<Listener, Error> {
        let mut writer = output.map(TraceWriter::create).transpose()?;
        Listener::connect_with(addr, wait, &mut writer, decode)
    }

    /// [`Listener::connect`] writing with `writer` (from an earlier
    /// connection's [`Listener::into_writer`]: the same program
    /// reconnected, its packets appended to the same files), which is
    /// taken once connected.
    pub fn connect_with(
        addr: &str,
        wait: Duration,
        writer: &mut Option<TraceWriter>,
        decode: bool,
    ) -> Result<Listener, Error> {
        let (host, port) = parse_addr(addr)?;
        let sock = connect(&host, port, wait)?;
        let writer = writer.take();
        let output = writer.as_ref().map(|w| w.dir().to_path_buf());
        let output = output.as_deref();
        let name = PathBuf::from(format!("{host}:{port}"));
        let rd = capture::Reader::new(BufReader::with_capacity(1 << 18, sock), name.clone());
        let bursts = decode.then(|| Bursts {
            name: name.clone(),
            meta: None,
            class: None,
            label: TraceLabel::default(),
            pending: BTreeMap::new(),
            pending_bytes: 0,
            prev: HashMap::new(),
            received: HashMap::new(),
            stream_dir: match output {
                Some(d) => std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()),
                None => name.clone(),
            },
        });
        Ok(Listener {
            rd,
            name,
            writer,
            bursts,
            streams: HashSet::new(),
            received: Received::default(),
            check: Check::default(),
        })
    }

    /// The records left out (each said with the address and the offset
    /// of its record): a metadata record that does not parse, a packet
    /// record that does not match the metadata. Everything else was kept.
    pub fn refused(&self) -> &[String] {
        &self.check.refused
    }

    /// The writer, files still open, for a later connection.
    pub fn into_writer(self) -> Option<TraceWriter> {
        self.writer
    }

    /// `HOST:PORT`.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// What was received so far.
    pub fn received(&self) -> Received {
        Received {
            streams: self.streams.len(),
            ..self.received.clone()
        }
    }

    /// Whether any byte arrived.
    pub fn received_any(&self) -> bool {
        self.rd.offset() > 0
    }

    /// Receives until the program ends its trace or the connection closes,
    /// writing and giving each burst to `f` (when decoding). Whatever was
    /// received is written and given, even after an error, which is then
    /// returned.
    pub fn receive<E: From<Error>>(
        &mut self,
        mut f: impl FnMut(&mut Burst) -> Result<(), E>,
    ) -> Result<(), E> {
        let r = self.receive_all(&mut f);
        let flushed = match self.bursts.as_mut() {
            Some(b) => b.flush(&mut f),
            None => Ok(()),
        };
        r.and(flushed)
    }

    fn receive_all<E: From<Error>>(
        &mut self,
        f: &mut impl FnMut(&mut Burst) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut buf = Vec::new();
        loop {
            if let Some(b) = self.bursts.as_mut() {
                if !b.pending.is_empty()
                    && self.rd.get_ref().buffer().is_empty()
                    && !more_within(&mut self.rd, BURST_PAUSE)
                        .map_err(|e| Error::from(reef_ctf::Error::io(&self.name, e)))?
                {
                    b.flush(f)?;
                }
            }
            let at = self.rd.offset();
            let Some(rec) = self.rd.next(&mut buf).map_err(Error::from)? else {
                return Ok(());
            };
            let refuse = |check: &mut Check, what: &str, why: String, kept: &str| {
                let m = format!(
                    "{}: at byte {at}: {what} record left out: {why}{kept}",
                    self.name.display()
                );
                eprintln!("reef: warning: {m}");
                check.refused.push(m);
            };
            match rec.kind {
                Kind::Metadata => {
                    if let Err(why) = self.check.metadata(&buf, &self.name) {
                        let kept = if self.check.class.is_some() {
                            "; the metadata received before is kept"
                        } else {
                            ""
                        };
                        refuse(&mut self.check, "metadata", why, kept);
                        continue;
                    }
                    if let Some(w) = self.writer.as_mut() {
                        w.metadata(&buf)?;
                    }
                    if let Some(b) = self.bursts.as_mut() {
                        b.metadata(&buf, f)?;
                    }
                }
                Kind::Packet => {
                    if let Err(why) = self.check.packet(&buf, &self.name) {
                        let why = format!("stream {}: {why}", rec.stream);
                        refuse(&mut self.check, "packet", why, "");
                        continue;
                    }
                    self.received.packets += 1;
                    self.received.bytes += buf.len() as u64;
                    self.streams.insert(rec.stream);
                    if let Some(w) = self.writer.as_mut() {
                        w.packet(rec.stream, &buf)?;
                    }
                    if let Some(b) = self.bursts.as_mut() {
                        b.packet(rec.stream, &buf);
                        if b.pending_bytes >= BURST_BYTES {
                            b.flush(f)?;
                        }
                    }
                }
                Kind::End => {
                    self.received.ended = true;
                    return Ok(());
                }
            }
        }
    }
}

/// Whether more input arrives within `wait` (the reader's buffer is empty).
fn more_within(
    rd: &mut capture::Reader<BufReader<TcpStream>>,
    wait: Duration,
) -> std::io::Result<bool> {
    rd.get_ref().get_ref().set_read_timeout(Some(wait))?;
    let r = match rd.get_mut().fill_buf() {
        Ok(b) => Ok(!b.is_empty()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    };
    rd.get_ref().get_ref().set_read_timeout(None)?;
    r
}

#[cfg(test)]
mod tests {
    use super::parse_addr;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("6666").unwrap(), ("127.0.0.1".into(), 6666));
        assert_eq!(parse_addr(":7000").unwrap(), ("127.0.0.1".into(), 7000));
        assert_eq!(parse_addr("host:1").unwrap(), ("host".into(), 1));
        assert_eq!(parse_addr("[::1]:2").unwrap(), ("::1".into(), 2));
        assert!(parse_addr("host:").is_err());
        assert!(parse_addr("host:99999").is_err());
    }
}
