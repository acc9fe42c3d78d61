//! Reading an LTTng session live from lttng-relayd
//! (`net://HOST[:PORT]/host/TARGET_HOST/SESSION`), as babeltrace2's
//! `src.ctf.lttng-live` does.
//!
//! [`LiveRead`] attaches to every session of that name and host (as
//! babeltrace2, from the packets being written now), then keeps asking
//! each stream for its next packet. What arrives is written to a
//! temporary directory — one trace per CTF trace of the session (its
//! `metadata` and one file per stream, packets appended) — and read from
//! there with the ordinary reading machinery, one *epoch* at a time:
//!
//! - each stream has a *horizon*, the time before which it holds nothing
//!   more: the end of its last packet received, or the time of its last
//!   inactivity beacon (an index with status INACTIVE), or none yet;
//! - an epoch is the [`Source`] of everything up to the smallest horizon
//!   of the streams still open (every stream's future packets start at or
//!   after its horizon), after the previous epoch's end. So the
//!   messages come in time order across epochs, each once;
//! - a stream that hung up has no horizon; when the session is gone and
//!   its streams too, the last epoch reads everything left.
//!
//! When no session of that name is there — at first, or after the
//! session ended — [`SessionNotFound`] says what to do, as babeltrace2's
//! `session-not-found-action`: end (the default), fail, or keep looking
//! (`continue`). The default is the babeltrace2 command's: `babeltrace2
//! -i lttng-live URL` gives its source `session-not-found-action=end`, so
//! it ends once the session is destroyed and its streams are read
//! (`source.ctf.lttng-live`'s own default, `continue`, never ends).
//!
//! *Why a directory*: the CTF decoding, the muxer, trimming and filtering
//! stay the ones every other input uses, so live output is what `reef
//! print` gives on the same data from disk; memory stays bounded by the
//! streams (the files are mapped, not held).

mod proto;
mod relay;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use proto::SessionInfo;
use proto::{Cmd, IndexStatus, MetadataStatus, PacketStatus};
use relay::Relay;

use crate::{Error, ReadOptions, Source, TimeSpec};

/// Epochs are at least this far apart while data flows.
const EPOCH_EVERY: Duration = Duration::from_millis(100);

/// lttng-relayd's default viewer port.
pub const DEFAULT_PORT: u16 = 5344;

/// What to do when the session is not (or no longer) on the relay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionNotFound {
    /// Keep asking the relay until a session of that name appears (also
    /// after the session ended: the reading never ends).
    Continue,
    /// An error, when the session is not there at first; the end once it
    /// ended.
    Fail,
    /// End the reading (with nothing, at first): the default, as the
    /// babeltrace2 command's.
    #[default]
    End,
}

impl std::str::FromStr for SessionNotFound {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "continue" => Ok(SessionNotFound::Continue),
            "fail" => Ok(SessionNotFound::Fail),
            "end" => Ok(SessionNotFound::End),
            _ => Err(format!("`{s}`: expected `continue`, `fail` or `end`")),
        }
    }
}

/// A parsed `net://` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveUrl {
    pub host: String,
    pub port: u16,
    /// `None`: the bare relay address (list its sessions).
    pub target: Option<(String, String)>,
    /// `net://HOST[:PORT]` as the user wrote it (babeltrace2 lists
    /// sessions under it).
    pub base: String,
}

/// Whether `path` names a live session or relay rather than a file.
pub fn is_live(path: &Path) -> bool {
    path.to_str().is_some_and(|s| s.starts_with("net://"))
}

impl LiveUrl {
    pub fn parse(s: &str) -> Result<LiveUrl, Error> {
        let bad = || Error::Address {
            addr: s.to_string(),
            expected: "net://HOST[:PORT][/host/TARGET_HOST/SESSION]".into(),
        };
        let rest = s.strip_prefix("net://").ok_or_else(bad)?;
        let (hp, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (host, port) = if let Some(r) = hp.strip_prefix('[') {
            let (h, p) = r.split_once(']').ok_or_else(bad)?;
            (h.to_string(), p.strip_prefix(':'))
        } else {
            match hp.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hp.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(bad());
        }
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| bad())?,
            None => DEFAULT_PORT,
        };
        let base = format!("net://{hp}");
        let target = match path {
            None | Some("/") => None,
            Some(p) => {
                let mut parts = p[1..].splitn(3, '/');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some("host"), Some(h), Some(n)) if !h.is_empty() && !n.is_empty() => {
                        Some((h.to_string(), n.to_string()))
                    }
                    _ => return Err(bad()),
                }
            }
        };
        Ok(LiveUrl {
            host,
            port,
            target,
            base,
        })
    }
}

/// The relay's sessions, as babeltrace2 lists them: one line per host and
/// session name (stream counts summed, client counts the largest), in
/// the relay's order.
pub fn list_sessions(url: &LiveUrl) -> Result<String, Error> {
    let mut relay = Relay::connect(&url.host, url.port)?;
    let sessions = relay.list_sessions()?;
    let mut rows: Vec<(String, String, u32, u64, u32)> = Vec::new();
    for s in sessions {
        match rows.iter_mut().find(|r| r.0 == s.hostname && r.1 == s.name) {
            Some(r) => {
                r.3 += u64::from(s.streams);
                r.4 = r.4.max(s.clients);
            }
            None => rows.push((
                s.hostname,
                s.name,
                s.live_timer,
                s.streams.into(),
                s.clients,
            )),
        }
    }
    let mut out = String::new();
    for (h, n, timer, streams, clients) in rows {
        out += &format!(
            "{}/host/{h}/{n} (timer = {timer}, {streams} stream(s), {clients} client(s) connected)\n",
            url.base
        );
    }
    Ok(out)
}

/// A directory the session is written to: a temporary one, removed when
/// dropped, or one the caller keeps.
struct TempDir(PathBuf, bool);

impl TempDir {
    fn new() -> Result<TempDir, Error> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "reef-lttng-live-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).map_err(|e| io_err(&p, e))?;
        Ok(TempDir(p, true))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn io_err(path: &Path, err: std::io::Error) -> Error {
    Error::Trace(reef_ctf::Error::io(path, err))
}

/// One CTF trace of an attached session: its directory.
struct TraceDir {
    dir: PathBuf,
    metadata_stream: Option<u64>,
    metadata: Vec<u8>,
    /// The metadata must be asked for before the next packet.
    metadata_needed: bool,
    /// The metadata stream is gone (the relay said ERR for it).
    metadata_closed: bool,
    clock: Option<reef_iter::ClockConv>,
    streams: usize,
    packets: u64,
}

struct LiveStream {
    id: u64,
    /// Key of its trace.
    trace: (u64, u64),
    file: PathBuf,
    /// Cycles before which it holds nothing more.
    horizon: Option<u64>,
    /// An index whose packet could not be had yet (asked again).
    pending: Option<proto::Index>,
    /// Its file exists (a packet arrived).
    has_file: bool,
    /// Bytes in its file (whole packets).
    bytes: u64,
    /// When its first packet arrived, among the streams (the order of
    /// [`LiveRead::traces`]).
    first: u64,
    done: bool,
}

/// What [`LiveRead::pump`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pump {
    /// No session of that name yet (`continue`): asked again later.
    Waiting,
    /// A round over the streams; whether anything arrived.
    Round(bool),
    /// The session ended (or, with `end`, was not there): every stream
    /// is written whole.
    Ended,
}

/// One CTF trace of the session as written so far (see
/// [`LiveRead::traces`]).
#[derive(Debug, Clone, Default)]
pub struct LiveTrace {
    pub dir: PathBuf,
    /// Bytes of its `metadata` file (0: none yet).
    pub metadata: usize,
    /// Its streams with a file (`stream_ID` in `dir`), in the order their
    /// first packet arrived: the id and the bytes of whole packets.
    pub streams: Vec<(u64, u64)>,
    pub packets: u64,
}

struct Session {
    id: u64,
    closed: bool,
    new_streams: bool,
}

/// A live reading: [`LiveRead::next_source`] gives the epochs.
pub struct LiveRead {
    url: LiveUrl,
    relay: Relay,
    action: SessionNotFound,
    opts: ReadOptions,
    dir: std::sync::Arc<TempDirKeep>,
    sessions: Vec<Session>,
    traces: BTreeMap<(u64, u64), TraceDir>,
    streams: Vec<LiveStream>,
    /// The previous epoch ended here (ns, inclusive).
    given_to: Option<i64>,
    /// Attachments so far (directory names stay apart).
    generation: u64,
    found_once: bool,
    finished: bool,
    /// The traces of sessions that ended.
    ended: Vec<PathBuf>,
    last_epoch: Option<std::time::Instant>,
    /// The error that stopped the reading, given after the last epoch.
    failed: Option<Error>,
    /// Packets received (the order of streams' first packets).
    packets: u64,
}

/// The directory, kept while a [`Source`] reads from it.
pub struct TempDirKeep(#[allow(dead_code)] TempDir);

impl LiveRead {
    /// Connects to the relay of `url` (which must name a session).
    /// `opts`: the filter and workers of each epoch's source (its paths,
    /// `begin` and `end` are ignored).
    pub fn open(
        url: &LiveUrl,
        action: SessionNotFound,
        opts: &ReadOptions,
    ) -> Result<LiveRead, Error> {
        LiveRead::open_dir(url, action, opts, None)
    }

    /// As [`LiveRead::open`], writing the session into `out` (kept; made
    /// if missing) rather than a temporary directory.
    pub fn open_dir(
        url: &LiveUrl,
        action: SessionNotFound,
        opts: &ReadOptions,
        out: Option<&Path>,
    ) -> Result<LiveRead, Error> {
        if url.target.is_none() {
            return Err(Error::Address {
                addr: url.base.clone(),
                expected: "net://HOST[:PORT]/host/TARGET_HOST/SESSION (a session to read)".into(),
            });
        }
        let mut relay = Relay::connect(&url.host, url.port)?;
        relay.send(Cmd::CreateSession, &proto::request(Cmd::CreateSession, &[]))?;
        let b = relay.recv(4, Cmd::CreateSession, "reply")?;
        let st = proto::count(&b, "CREATE_SESSION reply").map_err(|e| relay.bad(e))?;
        if st != 1 {
            return Err(relay.err(format!(
                "CREATE_SESSION reply: status {st}, expected 1 (OK)"
            )));
        }
        Ok(LiveRead {
            url: url.clone(),
            relay,
            action,
            opts: opts.clone(),
            dir: std::sync::Arc::new(TempDirKeep(match out {
                Some(d) => {
                    std::fs::create_dir_all(d).map_err(|e| io_err(d, e))?;
                    TempDir(d.to_path_buf(), false)
                }
                None => TempDir::new()?,
            })),
            sessions: Vec::new(),
            traces: BTreeMap::new(),
            streams: Vec::new(),
            given_to: None,
            generation: 0,
            found_once: false,
            finished: false,
            ended: Vec::new(),
            last_epoch: None,
            failed: None,
            packets: 0,
        })
    }

    /// One step of a reading that follows the files rather than the
    /// epochs (`reef view`): looks for the session while it is not
    /// attached, else one round over its streams (sleeping a little when
    /// nothing arrived). Once the session ended, `Ended` (the streams'
    /// files stay as they are); `fail` fails only before the session
    /// was found, as in [`LiveRead::next_source`].
    pub fn pump(&mut self) -> Result<Pump, Error> {
        if self.sessions.is_empty() {
            if self.found_once {
                return Ok(Pump::Ended);
            }
            if !self.attach()? {
                return match self.action {
                    SessionNotFound::Fail => {
                        let (h, n) = self.url.target.clone().unwrap_or_default();
                        Err(self.relay.err(format!(
                            "no session `{n}` of host `{h}` on the relay (session-not-found-action=fail)"
                        )))
                    }
                    SessionNotFound::End => Ok(Pump::Ended),
                    SessionNotFound::Continue => {
                        std::thread::sleep(Duration::from_millis(100));
                        Ok(Pump::Waiting)
                    }
                };
            }
        }
        let progressed = self.round()?;
        if self.sessions.iter().all(|s| s.closed) && self.streams.iter().all(|s| s.done) {
            return Ok(Pump::Ended);
        }
        if !progressed {
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Pump::Round(progressed))
    }

    /// The time (ns) before which every open stream holds nothing more
    /// (its last packet's end or inactivity beacon): all of the session
    /// before it is written. `None` while a stream has told nothing yet.
    pub fn horizon_ns(&self) -> Option<i64> {
        self.horizon()
    }

    /// The session's CTF traces as written so far, in the relay's order
    /// (session, trace id).
    pub fn traces(&self) -> Vec<LiveTrace> {
        self.traces
            .iter()
            .map(|(k, t)| {
                let mut streams: Vec<&LiveStream> = self
                    .streams
                    .iter()
                    .filter(|s| s.trace == *k && s.has_file)
                    .collect();
                streams.sort_by_key(|s| s.first);
                LiveTrace {
                    dir: t.dir.clone(),
                    metadata: t.metadata.len(),
                    streams: streams.iter().map(|s| (s.id, s.bytes)).collect(),
                    packets: t.packets,
                }
            })
            .collect()
    }

    /// The directory the session is written to.
    pub fn dir(&self) -> &Path {
        &self.dir.0 .0
    }

    /// The next epoch, waiting for it; `None` once the session ended (and
    /// the action is not `continue`). A source may be empty.
    pub fn next_source(&mut self) -> Result<Option<Source>, Error> {
        loop {
            if self.finished {
                return self.failed.take().map_or(Ok(None), Err);
            }
            if self.sessions.is_empty() && !self.attach()? {
                // As babeltrace2: `fail` fails only if the session was
                // never found; once it ended, `fail` and `end` end.
                match (self.action, self.found_once) {
                    (SessionNotFound::Fail, false) => {
                        let (h, n) = self.url.target.clone().unwrap_or_default();
                        return Err(self.relay.err(format!(
                            "no session `{n}` of host `{h}` on the relay (session-not-found-action=fail)"
                        )));
                    }
                    (SessionNotFound::Continue, _) => {
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    }
                    _ => {
                        self.finished = true;
                        return Ok(None);
                    }
                }
            }
            let progressed = match self.round() {
                Ok(p) => p,
                Err(e) => {
                    // What was received is given first (nothing more will
                    // come to order it against), then the error.
                    self.finished = true;
                    let last = match self.given_to {
                        Some(i64::MAX) => None,
                        _ => self.epoch(i64::MAX).ok().flatten(),
                    };
                    self.failed = Some(e);
                    if let Some(src) = last {
                        return Ok(Some(src));
                    }
                    continue;
                }
            };
            let all_gone =
                self.sessions.iter().all(|s| s.closed) && self.streams.iter().all(|s| s.done);
            let horizon = if all_gone {
                Some(i64::MAX)
            } else {
                self.horizon()
            };
            // Each epoch opens the traces again (their packets scanned):
            // at most one per `EPOCH_EVERY` while data flows.
            let due = all_gone || self.last_epoch.is_none_or(|t| t.elapsed() >= EPOCH_EVERY);
            let epoch = match horizon {
                Some(h) if due && self.given_to.is_none_or(|g| h > g) => {
                    self.last_epoch = Some(std::time::Instant::now());
                    self.epoch(h)?
                }
                _ => None,
            };
            if all_gone {
                self.detach();
                if self.action != SessionNotFound::Continue {
                    self.finished = true;
                }
            }
            if let Some(src) = epoch {
                return Ok(Some(src));
            }
            if !progressed && !all_gone {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Reads the whole session (to its end) and gives one source over it;
    /// a failure of the relay is that source's error once it has given
    /// everything received.
    pub fn read_all(mut self) -> Result<Source, Error> {
        // An error (the relay gone) ends the reading after what arrived.
        let mut failed = loop {
            match self.next_source() {
                Ok(Some(_)) => {}
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        let mut paths = std::mem::take(&mut self.ended);
        paths.extend(self.trace_paths());
        let keep = self.dir.clone();
        let mut o = self.opts.clone();
        o.paths = paths;
        if o.paths.is_empty() {
            // Nothing received: the error at once.
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        let mut src = if o.paths.is_empty() {
            Source::empty(&o)?
        } else {
            Source::open(&o)?
        };
        src.keep_alive(keep);
        if let Some(e) = failed {
            src.fail_at_end(e);
        }
        Ok(src)
    }

    fn trace_paths(&self) -> Vec<PathBuf> {
        self.traces
            .values()
            .filter(|t| !t.metadata.is_empty() && t.streams > 0)
            .map(|t| t.dir.clone())
            .collect()
    }

    /// A source of everything in `(given_to, h)` (all of it with
    /// `i64::MAX`).
    fn epoch(&mut self, h: i64) -> Result<Option<Source>, Error> {
        let paths = self.trace_paths();
        if paths.is_empty() {
            return Ok(None);
        }
        let end = if h == i64::MAX { h } else { h - 1 };
        let mut o = self.opts.clone();
        o.paths = paths;
        o.begin = self.given_to.map(|g| TimeSpec::Ns(g.saturating_add(1)));
        o.end = (end != i64::MAX).then_some(TimeSpec::Ns(end));
        self.given_to = Some(end);
        let mut src = Source::open(&o)?;
        src.keep_alive(self.dir.clone());
        Ok(Some(src))
    }

    /// The smallest horizon (ns) of the streams still open; `None` while
    /// one has none.
    fn horizon(&self) -> Option<i64> {
        let mut h = i64::MAX;
        let mut any = false;
        for s in self.streams.iter().filter(|s| !s.done) {
            let c = s.horizon?;
            let t = self.traces.get(&s.trace)?;
            let ns = match &t.clock {
                Some(conv) => conv.ns(c)?,
                None => i64::try_from(c).ok()?,
            };
            h = h.min(ns);
            any = true;
        }
        any.then_some(h)
    }

    /// Finds the sessions of the URL's name and host and attaches to them.
    fn attach(&mut self) -> Result<bool, Error> {
        let (host, name) = self.url.target.clone().unwrap_or_default();
        let ids: Vec<u64> = self
            .relay
            .list_sessions()?
            .into_iter()
            .filter(|s| s.hostname == host && s.name == name)
            .map(|s| s.id)
            .collect();
        for id in &ids {
            self.relay
                .send(Cmd::AttachSession, &proto::attach_request(*id))?;
            let b = self
                .relay
                .recv(proto::STATUS_COUNT_LEN, Cmd::AttachSession, "reply")?;
            let (st, n) =
                proto::status_count(&b, "ATTACH_SESSION reply").map_err(|e| self.relay.bad(e))?;
            // Stream records follow whatever the status.
            let streams = self.relay.streams(n, Cmd::AttachSession)?;
            match st {
                1 => {}
                2 => {
                    return Err(self.relay.err(format!(
                        "ATTACH_SESSION: session {id}: a viewer is already attached"
                    )))
                }
                3 => {
                    return Err(self.relay.err(format!(
                        "ATTACH_SESSION: session {id}: unknown to the relay"
                    )))
                }
                4 => {
                    return Err(self
                        .relay
                        .err(format!("ATTACH_SESSION: session {id}: not a live session")))
                }
                s => {
                    return Err(self
                        .relay
                        .err(format!("ATTACH_SESSION reply: status {s}, expected 1 (OK)")))
                }
            }
            self.sessions.push(Session {
                id: *id,
                closed: false,
                new_streams: false,
            });
            self.add_streams(*id, streams)?;
        }
        if !ids.is_empty() {
            self.found_once = true;
        }
        Ok(!ids.is_empty())
    }

    fn add_streams(&mut self, session: u64, streams: Vec<proto::StreamInfo>) -> Result<(), Error> {
        for s in streams {
            let key = (session, s.ctf_trace);
            if !self.traces.contains_key(&key) {
                // Named so that an error's path says which session and
                // trace: HOST/SESSION-ID[-N]/trace-ID/stream_ID (N: the
                // session's attachment, after the first).
                let (host, name) = self.url.target.clone().unwrap_or_default();
                let clean = |s: &str| s.replace(['/', '\0'], "_");
                let mut sdir = format!("{}-{session}", clean(&name));
                if self.generation > 0 {
                    sdir += &format!("-{}", self.generation);
                }
                let dir = self
                    .dir()
                    .join(clean(&host))
                    .join(sdir)
                    .join(format!("trace-{}", s.ctf_trace));
                std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
                self.traces.insert(
                    key,
                    TraceDir {
                        dir,
                        metadata_stream: None,
                        metadata: Vec::new(),
                        metadata_needed: true,
                        metadata_closed: false,
                        clock: None,
                        streams: 0,
                        packets: 0,
                    },
                );
            }
            let Some(t) = self.traces.get_mut(&key) else {
                continue;
            };
            if s.metadata {
                t.metadata_stream = Some(s.id);
                t.metadata_needed = true;
            } else if !self.streams.iter().any(|x| x.id == s.id) {
                let file = t.dir.join(format!("stream_{}", s.id));
                self.streams.push(LiveStream {
                    id: s.id,
                    trace: key,
                    file,
                    horizon: None,
                    pending: None,
                    has_file: false,
                    bytes: 0,
                    first: 0,
                    done: false,
                });
            }
        }
        Ok(())
    }

    fn detach(&mut self) {
        for s in std::mem::take(&mut self.sessions) {
            // A session that ended may be unknown already: no answer matters.
            if self
                .relay
                .send(
                    Cmd::DetachSession,
                    &proto::id_request(Cmd::DetachSession, s.id),
                )
                .is_ok()
            {
                let _ = self.relay.recv(4, Cmd::DetachSession, "reply");
            }
        }
        self.streams.clear();
        // The last epoch was made (and reads the directories, which stay
        // until the reading ends); a later session of the same name starts
        // afresh.
        let ended = self.trace_paths();
        self.ended.extend(ended);
        self.traces.clear();
        self.given_to = None;
        self.generation += 1;
    }

    /// Metadata of trace `key` until the relay has no more.
    fn fetch_metadata(&mut self, key: (u64, u64)) -> Result<bool, Error> {
        let Some(t) = self.traces.get(&key) else {
            return Ok(false);
        };
        let (Some(id), false) = (t.metadata_stream, t.metadata_closed) else {
            return Ok(false);
        };
        let mut got = false;
        loop {
            self.relay
                .send(Cmd::GetMetadata, &proto::id_request(Cmd::GetMetadata, id))?;
            let b = self
                .relay
                .recv(proto::METADATA_REPLY_LEN, Cmd::GetMetadata, "reply")?;
            let (len, st) = proto::metadata_reply(&b).map_err(|e| self.relay.bad(e))?;
            let t = self
                .traces
                .get_mut(&key)
                .ok_or_else(|| self.relay.err("trace vanished"))?;
            match st {
                MetadataStatus::NoNew => {
                    t.metadata_needed = false;
                    break;
                }
                MetadataStatus::Err => {
                    t.metadata_closed = true;
                    t.metadata_needed = false;
                    break;
                }
                MetadataStatus::Ok => {}
            }
            let data = self
                .relay
                .recv(len as usize, Cmd::GetMetadata, "metadata text")?;
            let t = self
                .traces
                .get_mut(&key)
                .ok_or_else(|| self.relay.err("trace vanished"))?;
            t.metadata.extend_from_slice(&data);
            got = true;
        }
        if got {
            let t = self
                .traces
                .get_mut(&key)
                .ok_or_else(|| self.relay.err("trace vanished"))?;
            // Replaced whole (written aside, then renamed): a reader of
            // the growing trace never sees half of it.
            let path = t.dir.join("metadata");
            let part = t.dir.join(".metadata.part");
            std::fs::write(&part, &t.metadata).map_err(|e| io_err(&part, e))?;
            std::fs::rename(&part, &path).map_err(|e| io_err(&path, e))?;
            // The clock, for the horizons; the metadata may still be
            // incomplete (more comes with a later packet's flag).
            if let Ok(class) = reef_ctf::capture::class_from_metadata(&t.metadata, &path) {
                t.clock = class.meta.clocks.first().map(reef_iter::ClockConv::new);
            }
        }
        Ok(got)
    }

    /// One pass over the sessions and streams; whether anything arrived.
    fn round(&mut self) -> Result<bool, Error> {
        let mut progressed = false;
        let keys: Vec<(u64, u64)> = self
            .traces
            .iter()
            .filter(|(_, t)| t.metadata_needed)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            progressed |= self.fetch_metadata(k)?;
        }
        // New streams: when told so, and while a session has none open
        // (how a session's end is learnt).
        for i in 0..self.sessions.len() {
            let sid = self.sessions[i].id;
            let open = self.streams.iter().any(|s| !s.done && s.trace.0 == sid);
            if self.sessions[i].closed || (open && !self.sessions[i].new_streams) {
                continue;
            }
            self.sessions[i].new_streams = false;
            self.relay.send(
                Cmd::GetNewStreams,
                &proto::id_request(Cmd::GetNewStreams, sid),
            )?;
            let b = self
                .relay
                .recv(proto::STATUS_COUNT_LEN, Cmd::GetNewStreams, "reply")?;
            let (st, n) =
                proto::status_count(&b, "GET_NEW_STREAMS reply").map_err(|e| self.relay.bad(e))?;
            let streams = self.relay.streams(n, Cmd::GetNewStreams)?;
            match st {
                1 => {
                    progressed |= !streams.is_empty();
                    self.add_streams(sid, streams)?;
                }
                2 => {}
                4 => self.sessions[i].closed = true,
                3 => {
                    return Err(self.relay.err(format!(
                        "GET_NEW_STREAMS: the relay reported an error for session {sid}"
                    )))
                }
                s => {
                    return Err(self.relay.err(format!(
                        "GET_NEW_STREAMS reply: status {s}, expected 1 to 4 (OK, NO_NEW, ERR, HUP)"
                    )))
                }
            }
            let keys: Vec<(u64, u64)> = self
                .traces
                .iter()
                .filter(|(_, t)| t.metadata_needed)
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                progressed |= self.fetch_metadata(k)?;
            }
        }
        for i in 0..self.streams.len() {
            // Up to a few packets per stream and round, so that the
            // others are asked too.
            for _ in 0..64 {
                if self.streams[i].done || !self.next_packet(i)? {
                    break;
                }
                progressed = true;
            }
        }
        Ok(progressed)
    }

    /// Gets stream `i`'s next packet or beacon; whether a packet arrived.
    fn next_packet(&mut self, i: usize) -> Result<bool, Error> {
        let id = self.streams[i].id;
        let index = match self.streams[i].pending.take() {
            Some(ix) => ix,
            None => {
                self.relay
                    .send(Cmd::GetNextIndex, &proto::id_request(Cmd::GetNextIndex, id))?;
                let b = self
                    .relay
                    .recv(proto::INDEX_LEN, Cmd::GetNextIndex, "reply")?;
                let ix = proto::index(&b).map_err(|e| self.relay.bad(e))?;
                self.flags(i, ix.flags);
                match ix.status {
                    IndexStatus::Ok => ix,
                    IndexStatus::Inactive => {
                        let s = &mut self.streams[i];
                        s.horizon = Some(s.horizon.map_or(ix.ts_end, |h| h.max(ix.ts_end)));
                        return Ok(false);
                    }
                    IndexStatus::Retry => return Ok(false),
                    IndexStatus::Hup | IndexStatus::Eof => {
                        self.streams[i].done = true;
                        return Ok(false);
                    }
                    IndexStatus::Err => {
                        return Err(self.relay.err(format!(
                            "GET_NEXT_INDEX: the relay reported an error for stream {id}"
                        )))
                    }
                }
            }
        };
        let key = self.streams[i].trace;
        if self.traces.get(&key).is_some_and(|t| t.metadata_needed) {
            self.fetch_metadata(key)?;
        }
        let len = (index.packet_size / 8) as u32;
        self.relay.send(
            Cmd::GetPacket,
            &proto::packet_request(id, index.offset, len),
        )?;
        let b = self
            .relay
            .recv(proto::PACKET_REPLY_LEN, Cmd::GetPacket, "reply")?;
        let (st, _, flags) = proto::packet_reply(&b, len).map_err(|e| self.relay.bad(e))?;
        match st {
            PacketStatus::Ok => {}
            PacketStatus::Retry => {
                self.streams[i].pending = Some(index);
                return Ok(false);
            }
            PacketStatus::Err
                if flags & (proto::FLAG_NEW_METADATA | proto::FLAG_NEW_STREAM) != 0 =>
            {
                self.flags(i, flags);
                self.streams[i].pending = Some(index);
                return Ok(false);
            }
            PacketStatus::Err => {
                return Err(self.relay.err(format!(
                    "GET_PACKET: the relay reported an error for stream {id} at offset {}",
                    index.offset
                )))
            }
            PacketStatus::Eof => {
                self.streams[i].done = true;
                return Ok(false);
            }
        }
        let data = self
            .relay
            .recv(len as usize, Cmd::GetPacket, "packet data")?;
        let s = &mut self.streams[i];
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&s.file)
                .map_err(|e| io_err(&s.file, e))?;
            f.write_all(&data).map_err(|e| io_err(&s.file, e))?;
        }
        let first = !s.has_file;
        s.has_file = true;
        s.bytes += data.len() as u64;
        if first {
            s.first = self.packets;
        }
        self.packets += 1;
        s.horizon = Some(s.horizon.map_or(index.ts_end, |h| h.max(index.ts_end)));
        if let Some(t) = self.traces.get_mut(&key) {
            t.streams += usize::from(first);
            t.packets += 1;
        }
        Ok(true)
    }

    fn flags(&mut self, i: usize, flags: u32) {
        if flags & proto::FLAG_NEW_METADATA != 0 {
            let key = self.streams[i].trace;
            if let Some(t) = self.traces.get_mut(&key) {
                t.metadata_needed = true;
            }
        }
        if flags & proto::FLAG_NEW_STREAM != 0 {
            for s in &mut self.sessions {
                s.new_streams = true;
            }
        }
    }
}
