//! `reef listen`: receive a running program's trace from libreef's
//! `REEF_LISTEN` socket (framing: `reef_ctf::capture`), write it as a CTF
//! trace directory and/or print its events as they arrive.
//!
//! Printing decodes the packets received in one burst (everything that
//! arrived without a 5 ms pause, at most 4 MiB) as one small trace: each
//! stream's new packets, preceded by that stream's previous packet so that
//! discarded-event and discarded-packet notices are computed across bursts
//! exactly as for a whole trace (the previous packet's events are not
//! printed again). Events of one burst are merged in time order; an event
//! older than one already printed (another stream's packet closed earlier)
//! is printed with an unknown delta. Streams are named as the files `-o`
//! writes (`DIR/stream_<id>`, else `HOST:PORT/stream_<id>`), and decoding
//! errors give offsets in those files. Times are converted with the
//! metadata received first; libreef re-measures its clock at exit and sends
//! the final metadata last (what `-o` keeps), so times printed live can
//! differ from a later `reef print DIR` by a few nanoseconds per second.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reef_ctf::capture::{self, Kind};
use reef_ctf::{EnvValue, Item, Metadata, TraceClass};
use reef_iter::Muxer;
use reef_print::{ClockOptions, Fields, Names, Options, Pretty, TraceLabel};

use crate::output::ColorWhen;

#[derive(clap::Args)]
pub struct ListenArgs {
    /// The traced program's address: HOST:PORT, [IPV6]:PORT, :PORT or PORT
    /// (host 127.0.0.1).
    pub addr: String,
    /// Write what is received to this directory as a CTF trace (metadata and
    /// one `stream_<id>` file per stream; an earlier trace there is replaced).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Print events as they arrive, as `reef print` does (the default
    /// without -o).
    #[arg(long)]
    pub print: bool,
    /// Retry connecting for up to this many seconds.
    #[arg(long, value_name = "SECONDS", default_value = "0")]
    pub wait: f64,
    /// Print timestamps in seconds since the Epoch.
    #[arg(long)]
    pub clock_seconds: bool,
    /// Print the date as well as the time of day.
    #[arg(long)]
    pub clock_date: bool,
    /// Print times in UTC rather than the local time zone (TZ).
    #[arg(long)]
    pub clock_gmt: bool,
    /// Do not print the time since the previous event.
    #[arg(long)]
    pub no_delta: bool,
    /// When to colour the output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorWhen,
}

/// "HOST:PORT", "[V6]:PORT", ":PORT", "PORT".
fn parse_addr(s: &str) -> anyhow::Result<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest
            .split_once("]:")
            .with_context(|| format!("`{s}`: expected [IPV6]:PORT"))?;
        (h.to_string(), p)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (if h.is_empty() { "127.0.0.1" } else { h }.to_string(), p),
            None => ("127.0.0.1".to_string(), s),
        }
    };
    let port = port
        .parse::<u16>()
        .with_context(|| format!("`{s}`: expected HOST:PORT with a port number"))?;
    Ok((host, port))
}

fn connect(host: &str, port: u16, wait: f64) -> anyhow::Result<TcpStream> {
    let deadline = Instant::now() + Duration::from_secs_f64(wait.clamp(0.0, 86400.0));
    loop {
        let r = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))
            .and_then(|mut addrs| {
                let a = addrs.next().context("no address")?;
                TcpStream::connect(a).with_context(|| format!("connecting to {host}:{port}"))
            });
        match r {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The trace directory being written.
struct DirSink {
    dir: PathBuf,
    files: HashMap<u64, File>,
}

impl DirSink {
    fn create(dir: &Path) -> anyhow::Result<DirSink> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // An earlier trace in the directory would mix with this one.
        for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let e = e?;
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n == "metadata" || n.starts_with("stream_") {
                std::fs::remove_file(e.path())
                    .with_context(|| format!("removing {}", e.path().display()))?;
            }
        }
        Ok(DirSink {
            dir: dir.to_path_buf(),
            files: HashMap::new(),
        })
    }

    fn metadata(&mut self, text: &[u8]) -> anyhow::Result<()> {
        let tmp = self.dir.join(".metadata.tmp");
        let path = self.dir.join("metadata");
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    fn packet(&mut self, stream: u64, bytes: &[u8]) -> anyhow::Result<()> {
        if !self.files.contains_key(&stream) && self.files.len() >= 256 {
            // Many threads come and go: keep few files open.
            self.files.clear();
        }
        let f = match self.files.entry(stream) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let p = self.dir.join(format!("stream_{stream}"));
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&p)
                    .with_context(|| format!("creating {}", p.display()))?;
                v.insert(f)
            }
        };
        f.write_all(bytes)
            .with_context(|| format!("writing {}/stream_{stream}", self.dir.display()))
    }
}

/// Decodes and prints the packets of each burst.
struct LivePrinter {
    pretty: Pretty,
    opts: Options,
    name: PathBuf,
    meta: Option<Metadata>,
    /// The compiled metadata, taken back from the last burst's trace.
    class: Option<TraceClass>,
    label: TraceLabel,
    /// This burst's packets, per stream, and where the last one starts.
    pending: BTreeMap<u64, (Vec<u8>, usize)>,
    pending_bytes: usize,
    /// The last packet printed of each stream.
    prev: HashMap<u64, Vec<u8>>,
    /// Bytes received of each stream before this burst.
    received: HashMap<u64, u64>,
    /// Where stream files are named: the -o directory (absolute), else
    /// HOST:PORT.
    stream_dir: PathBuf,
    last_ns: Option<i64>,
    warn_color: bool,
}

impl LivePrinter {
    fn metadata(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.flush()?;
        let class = capture::class_from_metadata(bytes, &self.name)?;
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

    fn flush(&mut self) -> anyhow::Result<()> {
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
            None => TraceClass::new(meta.clone()).map_err(|msg| reef_ctf::Error::Stream {
                path: self.name.clone(),
                offset: 0,
                msg,
            })?,
        };
        let mut files = Vec::new();
        let mut prefixed = Vec::new();
        // Burst file name -> where its byte 0 is in the stream as received
        // (as written to stream_<id>), to report errors at that offset.
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
            files.push(capture::temp_stream_file(name, |w| {
                if let Some(p) = prev {
                    w.write_all(p)?;
                }
                w.write_all(bytes)
            })?);
            self.prev.insert(*id, bytes[*last..].to_vec());
        }
        let remap = |e: reef_ctf::Error| -> reef_ctf::Error {
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
        };
        let trace =
            Arc::new(capture::trace_from_streams(class, self.name.clone(), files).map_err(remap)?);
        let mut mux = Muxer::with_names(
            std::slice::from_ref(&trace),
            std::slice::from_ref(&self.label.name),
        );
        let mut out = Vec::with_capacity(1 << 16);
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        loop {
            let i = match mux.next() {
                Ok(Some(i)) => i,
                Ok(None) => break,
                Err(e) => {
                    // What decoded before the error is shown first.
                    lock.write_all(&out)?;
                    lock.flush()?;
                    return Err(remap(e).into());
                }
            };
            let c = mux.cursor(i);
            if prefixed[c.source] && c.packets_read <= 1 {
                continue; // the previous burst's last packet, printed already
            }
            match mux.item(i) {
                Item::Event => {
                    let ns = mux.time_ns(i);
                    if let (Some(n), Some(l)) = (ns, self.last_ns) {
                        if n < l {
                            self.pretty = Pretty::new(self.opts.clone());
                        }
                    }
                    if ns.is_some() {
                        self.last_ns = ns;
                    }
                    self.pretty.event(&mut out, &self.label, c, ns);
                }
                notice => {
                    lock.write_all(&out)?;
                    out.clear();
                    lock.flush()?;
                    let mut w = Vec::new();
                    self.pretty
                        .discarded(&mut w, &self.label, c, notice, self.warn_color);
                    std::io::stderr().write_all(&w)?;
                }
            }
            if out.len() >= 1 << 16 {
                lock.write_all(&out)?;
                out.clear();
            }
        }
        lock.write_all(&out)?;
        lock.flush()?;
        drop(mux);
        self.class = Arc::try_unwrap(trace).ok().map(|t| t.class);
        Ok(())
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

pub fn run(a: &ListenArgs) -> anyhow::Result<ExitCode> {
    let (host, port) = parse_addr(&a.addr)?;
    let sock = connect(&host, port, a.wait)?;
    let name = PathBuf::from(format!("{host}:{port}"));
    let mut rd = capture::Reader::new(BufReader::with_capacity(1 << 18, sock), name.clone());
    let mut sink = a.output.as_deref().map(DirSink::create).transpose()?;
    let opts = Options {
        names: Names::default(),
        fields: Fields::default(),
        clock: ClockOptions {
            seconds: a.clock_seconds,
            date: a.clock_date,
            gmt: a.clock_gmt,
            cycles: false,
            delta: !a.no_delta,
        },
        color: a.color.enabled(),
    };
    let mut live = (a.print || a.output.is_none()).then(|| LivePrinter {
        pretty: Pretty::new(opts.clone()),
        opts,
        name: name.clone(),
        meta: None,
        class: None,
        label: TraceLabel::default(),
        pending: BTreeMap::new(),
        pending_bytes: 0,
        prev: HashMap::new(),
        received: HashMap::new(),
        stream_dir: match &a.output {
            Some(d) => std::path::absolute(d).unwrap_or_else(|_| d.clone()),
            None => name.clone(),
        },
        last_ns: None,
        warn_color: crate::output::term_color_support(),
    });
    let (mut packets, mut bytes, mut ended) = (0u64, 0u64, false);
    let mut streams = std::collections::HashSet::new();
    let mut buf = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        loop {
            if let Some(p) = live.as_mut() {
                if !p.pending.is_empty()
                    && rd.get_ref().buffer().is_empty()
                    && !more_within(&mut rd, Duration::from_millis(5))
                        .map_err(|e| reef_ctf::Error::io(&name, e))?
                {
                    p.flush()?;
                }
            }
            let Some(rec) = rd.next(&mut buf)? else {
                break;
            };
            match rec.kind {
                Kind::Metadata => {
                    if let Some(s) = sink.as_mut() {
                        s.metadata(&buf)?;
                    }
                    if let Some(p) = live.as_mut() {
                        p.metadata(&buf)?;
                    }
                }
                Kind::Packet => {
                    packets += 1;
                    bytes += buf.len() as u64;
                    streams.insert(rec.stream);
                    if let Some(s) = sink.as_mut() {
                        s.packet(rec.stream, &buf)?;
                    }
                    if let Some(p) = live.as_mut() {
                        p.packet(rec.stream, &buf);
                        if p.pending_bytes >= 4 << 20 {
                            p.flush()?;
                        }
                    }
                }
                Kind::End => {
                    ended = true;
                    break;
                }
            }
        }
        Ok(())
    })();
    // Whatever was received is printed and written, even after an error.
    let flushed = live.as_mut().map_or(Ok(()), |p| p.flush());
    drop(sink);
    let what = match &a.output {
        Some(d) => format!(", written to {}", d.display()),
        None => String::new(),
    };
    eprintln!(
        "reef listen: {packets} packets ({bytes} bytes) of {} streams received{what}{}",
        streams.len(),
        if ended || result.is_err() {
            ""
        } else {
            "; the connection closed before the end of the trace"
        }
    );
    result?;
    flushed?;
    if rd.offset() == 0 {
        bail!("{}: the connection closed before any data", name.display());
    }
    Ok(ExitCode::SUCCESS)
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
