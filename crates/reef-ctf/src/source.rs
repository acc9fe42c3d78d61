//! Sources: formats other than CTF, each read by converting a file once
//! per opening into a CTF trace held in temporary, already unlinked
//! stream files (as a live capture's streams are), so every reader of CTF
//! reads it unchanged.
//!
//! A [`Format`] says whether a file is its own (by its first bytes, or by
//! being named with [`force`]) and converts it. The built-in ones are
//! trace-cmd's `.dat` and perf.data ([`crate::ftrace`]); plugins add
//! theirs with [`register`]. A format that builds its events one by one
//! writes them with a [`Builder`]: event classes with typed fields, a
//! clock and named streams, the model CTF itself gives.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use memmap2::Mmap;

use crate::capture::Cut;
use crate::trace::StreamFile;
use crate::{Error, TraceClass};

/// How many of a file's first bytes detection sees.
pub const HEAD_LEN: usize = 4096;

/// A file converted to CTF.
pub struct Converted {
    pub class: TraceClass,
    pub files: Vec<StreamFile>,
    /// Where the conversion stopped early: the events before it are kept,
    /// the damage is reported once they were read.
    pub cut: Option<Cut>,
}

/// A format reef reads by converting it.
pub trait Format: Send + Sync {
    /// Its name for `-i NAME`: letters, digits, `-` and `_`.
    fn name(&self) -> &str;
    /// A one-line description.
    fn description(&self) -> &str;
    /// Whether the file `path`, whose first bytes are `head` (up to
    /// [`HEAD_LEN`]), is in this format.
    fn detect(&self, path: &Path, head: &[u8]) -> bool;
    /// The file as a CTF trace.
    fn convert(&self, path: &Path) -> Result<Converted, Error>;
}

struct Registry {
    formats: Vec<Arc<dyn Format>>,
    forced: Option<Arc<dyn Format>>,
}

fn registry() -> &'static RwLock<Registry> {
    static R: std::sync::OnceLock<RwLock<Registry>> = std::sync::OnceLock::new();
    R.get_or_init(|| {
        RwLock::new(Registry {
            formats: crate::ftrace::formats(),
            forced: None,
        })
    })
}

/// Gives formats when first needed: a file no format known so far
/// claims, a name not known so far, the list of every format.
pub type Provider = Box<dyn FnOnce() -> Result<Vec<Arc<dyn Format>>, String> + Send>;

static PROVIDERS: Mutex<Vec<Provider>> = Mutex::new(Vec::new());
static PROVIDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds formats that are made only when needed (plugins, loaded then).
pub fn add_provider(p: Provider) {
    if let Ok(mut v) = PROVIDERS.lock() {
        v.push(p);
    }
}

/// Runs the providers not run yet; whether any was.
fn provide() -> bool {
    let pending: Vec<Provider> = match PROVIDERS.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => return false,
    };
    let ran = !pending.is_empty();
    for p in pending {
        let r = p().and_then(|fs| fs.into_iter().try_for_each(register));
        if let (Err(e), Ok(mut errs)) = (r, PROVIDED.lock()) {
            errs.push(e);
        }
    }
    ran
}

/// What the providers run so far could not give (a plugin that does not
/// load), if anything.
pub fn provider_errors() -> Vec<String> {
    PROVIDED.lock().map(|e| e.clone()).unwrap_or_default()
}

/// Adds a format, tried after those registered before it. A name already
/// taken is refused.
pub fn register(f: Arc<dyn Format>) -> Result<(), String> {
    let mut r = registry()
        .write()
        .map_err(|_| "format registry poisoned".to_string())?;
    if r.formats.iter().any(|o| o.name() == f.name()) {
        return Err(format!(
            "a source named '{}' is already registered",
            f.name()
        ));
    }
    r.formats.push(f);
    Ok(())
}

/// The formats known, built-in ones first.
pub fn formats() -> Vec<Arc<dyn Format>> {
    provide();
    registry()
        .read()
        .map(|r| r.formats.clone())
        .unwrap_or_default()
}

/// The format named `name`.
pub fn find(name: &str) -> Option<Arc<dyn Format>> {
    let get = || {
        registry()
            .read()
            .ok()?
            .formats
            .iter()
            .find(|f| f.name() == name)
            .cloned()
    };
    get().or_else(|| if provide() { get() } else { None })
}

/// Reads every file that is neither CTF nor a capture as the format
/// `name` (`-i NAME`), whatever its first bytes; `None` goes back to
/// detection. The choice holds for the whole process.
pub fn force(name: Option<&str>) -> Result<(), String> {
    let f = match name {
        None => None,
        Some(n) => Some(find(n).ok_or_else(|| {
            let names: Vec<String> = formats().iter().map(|f| f.name().to_string()).collect();
            let mut m = format!(
                "no source named '{n}' (known: ctf, lttng-live, {})",
                names.join(", ")
            );
            for e in provider_errors() {
                m.push_str(&format!("; {e}"));
            }
            m
        })?),
    };
    let mut r = registry()
        .write()
        .map_err(|_| "format registry poisoned".to_string())?;
    r.forced = f;
    Ok(())
}

/// The format of the file `path`, if one claims it.
pub fn detect(path: &Path) -> Option<Arc<dyn Format>> {
    let md = std::fs::metadata(path).ok()?;
    if !md.is_file() {
        return None;
    }
    if let Some(f) = registry().read().ok()?.forced.clone() {
        return Some(f);
    }
    let mut head = Vec::with_capacity(HEAD_LEN);
    File::open(path)
        .ok()?
        .take(HEAD_LEN as u64)
        .read_to_end(&mut head)
        .ok()?;
    let claim = |from: usize| {
        let r = registry().read().ok()?;
        r.formats[from.min(r.formats.len())..]
            .iter()
            .find(|f| f.detect(path, &head))
            .cloned()
    };
    let known = registry().read().ok()?.formats.len();
    claim(0).or_else(|| if provide() { claim(known) } else { None })
}

/// Whether some format reads the file `path`.
pub fn is_source(path: &Path) -> bool {
    detect(path).is_some()
}

/// What tells a file from the one converted before.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    path: PathBuf,
    len: u64,
    modified: Option<std::time::SystemTime>,
    ino: u64,
}

fn key(path: &Path) -> Result<Key, Error> {
    let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    use std::os::unix::fs::MetadataExt;
    Ok(Key {
        path: path.to_path_buf(),
        len: md.len(),
        modified: md.modified().ok(),
        ino: md.ino(),
    })
}

/// Conversions whose stream files were not taken yet: opening a trace
/// loads its class, then its streams (`Trace::from_class`).
static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// A conversion's key, streams and cut.
type Pending = (Key, Vec<StreamFile>, Option<Cut>);

fn convert(path: &Path) -> Result<Converted, Error> {
    let f = detect(path).ok_or_else(|| Error::Stream {
        path: path.to_path_buf(),
        offset: 0,
        msg: "not a format reef reads".into(),
    })?;
    f.convert(path)
}

/// The compiled metadata of the file `path` (its streams are kept for
/// [`stream_files`]).
pub fn load_class(path: &Path) -> Result<TraceClass, Error> {
    let k = key(path)?;
    let c = convert(path)?;
    if let Ok(mut p) = PENDING.lock() {
        p.retain(|o| o.0.path != path);
        p.push((k, c.files, c.cut));
    }
    Ok(c.class)
}

/// The streams of the file `path`, and where its conversion stopped
/// early.
pub fn stream_files(path: &Path) -> Result<(Vec<StreamFile>, Option<Cut>), Error> {
    let k = key(path)?;
    let pending = PENDING.lock().ok().and_then(|mut p| {
        let i = p.iter().position(|o| o.0 == k)?;
        Some(p.swap_remove(i))
    });
    match pending {
        Some((_, files, cut)) => Ok((files, cut)),
        None => {
            let c = convert(path)?;
            Ok((c.files, c.cut))
        }
    }
}

/// The type of a field a [`Builder`]'s event class declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// An unsigned integer of 8, 16, 32 or 64 bits.
    Uint(u8),
    /// A signed integer of 8, 16, 32 or 64 bits.
    Int(u8),
    /// An IEEE 754 binary32.
    F32,
    /// An IEEE 754 binary64.
    F64,
    /// A UTF-8 string.
    Str,
}

impl FieldType {
    /// `u8`…`u64`, `s8`…`s64` (or `i8`…), `f32`, `f64`, `string`.
    pub fn parse(s: &str) -> Option<FieldType> {
        let bits = |b: &str| match b {
            "8" => Some(8),
            "16" => Some(16),
            "32" => Some(32),
            "64" => Some(64),
            _ => None,
        };
        match s {
            "f32" | "float" => Some(FieldType::F32),
            "f64" | "double" => Some(FieldType::F64),
            "string" | "str" => Some(FieldType::Str),
            _ => {
                if let Some(b) = s.strip_prefix('u') {
                    bits(b).map(FieldType::Uint)
                } else if let Some(b) = s.strip_prefix('s').or_else(|| s.strip_prefix('i')) {
                    bits(b).map(FieldType::Int)
                } else {
                    None
                }
            }
        }
    }

    fn name(self) -> String {
        match self {
            FieldType::Uint(b) => format!("u{b}"),
            FieldType::Int(b) => format!("s{b}"),
            FieldType::F32 => "f32".into(),
            FieldType::F64 => "f64".into(),
            FieldType::Str => "string".into(),
        }
    }

    fn tsdl(self) -> String {
        match self {
            FieldType::Uint(b) => format!("integer {{ size = {b}; align = 8; signed = false; }}"),
            FieldType::Int(b) => format!("integer {{ size = {b}; align = 8; signed = true; }}"),
            FieldType::F32 => "floating_point { exp_dig = 8; mant_dig = 24; align = 8; }".into(),
            FieldType::F64 => "floating_point { exp_dig = 11; mant_dig = 53; align = 8; }".into(),
            FieldType::Str => "string { encoding = UTF8; }".into(),
        }
    }
}

/// A value given to a [`Builder`]'s event.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(&'a [u8]),
}

struct Class {
    name: String,
    fields: Vec<(String, FieldType)>,
}

struct Stream {
    name: String,
    file: Option<File>,
    packet: Vec<u8>,
    begin: u64,
    /// The time of its last complete event.
    last: u64,
    events: u64,
    /// The packet's length up to its last complete event.
    complete: usize,
}

/// Bytes of events a packet holds before it is written out.
const PACKET_BYTES: usize = 1 << 16;
/// The packet header and context: magic, stream id, packet and content
/// sizes, begin and end times.
const PACKET_HEAD: usize = 4 + 4 + 8 + 8 + 8 + 8;

/// Writes a source's events as a CTF trace: declare classes and streams,
/// then give each event's time and fields in order. Memory holds one
/// packet per stream. Every misuse (a value of another type than its
/// field's, too many or too few values, a time before its stream's
/// previous one, an unknown class or stream) is an error that names the
/// event; the events completed before it are kept.
pub struct Builder {
    /// The file converted, for names and errors.
    path: PathBuf,
    tracer: String,
    freq: u64,
    offset_ns: i64,
    classes: Vec<Class>,
    names: HashMap<String, u32>,
    streams: Vec<Stream>,
    /// The event being built: stream, class, next field; its time.
    cur: Option<(u32, u32, usize)>,
    time: u64,
    /// Events completed, in all streams.
    events: u64,
    /// The source's position (a file offset) for errors.
    offset: u64,
    err: Option<Cut>,
    /// Where the stream files go: a directory, or unlinked temporary
    /// files.
    dir: Option<PathBuf>,
}

impl Builder {
    /// A builder for the file `path`, its trace's `tracer_name` being
    /// `tracer` (the source's name).
    pub fn new(path: &Path, tracer: &str) -> Builder {
        Builder {
            path: path.to_path_buf(),
            tracer: tracer.to_string(),
            freq: 1_000_000_000,
            offset_ns: 0,
            classes: Vec::new(),
            names: HashMap::new(),
            streams: Vec::new(),
            cur: None,
            time: 0,
            events: 0,
            offset: 0,
            err: None,
            dir: None,
        }
    }

    /// A builder writing the trace as a CTF directory `dir` (created;
    /// one file per stream, `metadata`), for [`Builder::finish_dir`]: how
    /// a source running in another process hands its trace over.
    pub fn in_dir(path: &Path, tracer: &str, dir: &Path) -> Builder {
        let mut b = Builder::new(path, tracer);
        b.dir = Some(dir.to_path_buf());
        b
    }

    fn flush(&mut self, k: usize) -> std::io::Result<()> {
        let s = &mut self.streams[k];
        if s.file.is_none() {
            s.file = Some(match &self.dir {
                Some(d) => File::create(d.join(&s.name))?,
                None => crate::capture::temp_file()?,
            });
        }
        flush(s)
    }

    fn fail<T>(&mut self, msg: String) -> Result<T, String> {
        if self.err.is_none() {
            self.err = Some(Cut {
                path: self.path.clone(),
                offset: self.offset,
                msg: format!("{msg} (the {} events before it were read)", self.events),
            });
        }
        Err(msg)
    }

    /// Ends the conversion with `msg` (a source's own failure) unless a
    /// misuse ended it before.
    pub fn fail_with(&mut self, msg: String) {
        let _ = self.fail::<()>(msg);
    }

    /// The first misuse, if any.
    pub fn error(&self) -> Option<&Cut> {
        self.err.as_ref()
    }

    /// Records that the source reached byte `offset` of its file: errors
    /// from here on name it.
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
    }

    /// The clock of every timestamp: `freq` Hz, its zero `offset_ns` after
    /// the Unix epoch (default: ns since the epoch). Before any event.
    pub fn clock(&mut self, freq: u64, offset_ns: i64) -> Result<(), String> {
        if self.events > 0 || self.cur.is_some() {
            return self.fail("the clock is set after the first event".into());
        }
        if freq == 0 {
            return self.fail("a clock of frequency 0".into());
        }
        self.freq = freq;
        self.offset_ns = offset_ns;
        Ok(())
    }

    /// Declares an event class; its id.
    pub fn class(&mut self, name: &str, fields: &[(&str, FieldType)]) -> Result<u32, String> {
        if name.is_empty() || name.contains(['"', '\\', '\n']) {
            return self.fail(format!(
                "event class name {name:?}: empty or with a quote, backslash or newline"
            ));
        }
        if self.names.contains_key(name) {
            return self.fail(format!("event class '{name}' declared twice"));
        }
        for (i, (f, _)) in fields.iter().enumerate() {
            let ident = !f.is_empty()
                && !f.starts_with(|c: char| c.is_ascii_digit())
                && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident {
                return self.fail(format!(
                    "event class '{name}': field name {f:?} is not letters, digits and '_'"
                ));
            }
            if fields[..i].iter().any(|(g, _)| g == f) {
                return self.fail(format!("event class '{name}': field '{f}' declared twice"));
            }
        }
        let id = self.classes.len() as u32;
        self.classes.push(Class {
            name: name.to_string(),
            fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        });
        self.names.insert(name.to_string(), id);
        Ok(id)
    }

    /// Declares a stream (a file of the trace, named `PATH#NAME`); its id.
    pub fn stream(&mut self, name: &str) -> Result<u32, String> {
        if name.is_empty() || name.contains('/') {
            return self.fail(format!("stream name {name:?}: empty or with a '/'"));
        }
        if self.streams.iter().any(|s| s.name == name) {
            return self.fail(format!("stream '{name}' declared twice"));
        }
        self.streams.push(Stream {
            name: name.to_string(),
            file: None,
            packet: Vec::with_capacity(PACKET_BYTES + 256),
            begin: 0,
            last: 0,
            events: 0,
            complete: 0,
        });
        Ok(self.streams.len() as u32 - 1)
    }

    /// Refuses every call after the first misuse.
    fn failed(&self) -> Result<(), String> {
        match &self.err {
            Some(c) => Err(c.msg.clone()),
            None => Ok(()),
        }
    }

    fn what(&self) -> String {
        match self.cur {
            Some((_, c, _)) => format!(
                "event {} ('{}')",
                self.events, self.classes[c as usize].name
            ),
            None => format!("event {}", self.events),
        }
    }

    /// Starts an event of class `class` in stream `stream` at `timestamp`
    /// (the clock's cycles).
    pub fn begin(&mut self, stream: u32, class: u32, timestamp: u64) -> Result<(), String> {
        self.failed()?;
        if self.cur.is_some() {
            let w = self.what();
            return self.fail(format!("{w}: a new event begun before this one ended"));
        }
        if class as usize >= self.classes.len() {
            return self.fail(format!("event {}: no event class {class}", self.events));
        }
        let Some(s) = self.streams.get(stream as usize) else {
            return self.fail(format!("event {}: no stream {stream}", self.events));
        };
        if s.events > 0 && timestamp < s.last {
            let (name, last) = (s.name.clone(), s.last);
            return self.fail(format!(
                "event {}: time {timestamp} is before the previous event's ({last}) in stream '{name}'",
                self.events
            ));
        }
        let s = &mut self.streams[stream as usize];
        if s.packet.is_empty() {
            s.begin = timestamp;
            s.packet.resize(PACKET_HEAD, 0);
        }
        s.packet.extend_from_slice(&class.to_le_bytes());
        s.packet.extend_from_slice(&timestamp.to_le_bytes());
        self.cur = Some((stream, class, 0));
        self.time = timestamp;
        Ok(())
    }

    /// The next field's value.
    pub fn value(&mut self, v: Value) -> Result<(), String> {
        self.failed()?;
        let Some((stream, class, i)) = self.cur else {
            return self.fail(format!(
                "event {}: a value given outside an event",
                self.events
            ));
        };
        let c = &self.classes[class as usize];
        let Some(&(ref fname, ty)) = c.fields.get(i) else {
            let (w, n) = (self.what(), c.fields.len());
            return self.fail(format!("{w}: more values than its {n} fields"));
        };
        let out = &mut self.streams[stream as usize].packet;
        let bad = |got: &str| format!("field '{fname}' is {}, given {got}", ty.name());
        let problem = match (ty, v) {
            (FieldType::Uint(b), Value::Uint(x)) => {
                if b < 64 && x >> b != 0 {
                    Some(format!(
                        "field '{fname}' is u{b}, given {x}, out of its range"
                    ))
                } else {
                    out.extend_from_slice(&x.to_le_bytes()[..b as usize / 8]);
                    None
                }
            }
            (FieldType::Int(b), Value::Int(x)) => {
                let lim = 1i128 << (b - 1);
                if (x as i128) < -lim || (x as i128) >= lim {
                    Some(format!(
                        "field '{fname}' is s{b}, given {x}, out of its range"
                    ))
                } else {
                    out.extend_from_slice(&x.to_le_bytes()[..b as usize / 8]);
                    None
                }
            }
            (FieldType::Int(b), Value::Uint(x))
                if x <= i64::MAX as u64 && (b == 64 || x < 1 << (b - 1)) =>
            {
                out.extend_from_slice(&(x as i64).to_le_bytes()[..b as usize / 8]);
                None
            }
            (FieldType::Uint(b), Value::Int(x)) if x >= 0 && (b == 64 || (x as u64) >> b == 0) => {
                out.extend_from_slice(&(x as u64).to_le_bytes()[..b as usize / 8]);
                None
            }
            (FieldType::F32, Value::Float(x)) => {
                out.extend_from_slice(&(x as f32).to_le_bytes());
                None
            }
            (FieldType::F64, Value::Float(x)) => {
                out.extend_from_slice(&x.to_le_bytes());
                None
            }
            (FieldType::F32 | FieldType::F64, Value::Int(x)) => {
                push_float(out, ty, x as f64);
                None
            }
            (FieldType::F32 | FieldType::F64, Value::Uint(x)) => {
                push_float(out, ty, x as f64);
                None
            }
            (FieldType::Str, Value::Str(s)) => {
                if s.contains(&0) {
                    Some(format!(
                        "field '{fname}' is a string, given one holding a NUL byte"
                    ))
                } else if std::str::from_utf8(s).is_err() {
                    Some(format!(
                        "field '{fname}' is a string, given bytes that are not UTF-8"
                    ))
                } else {
                    out.extend_from_slice(s);
                    out.push(0);
                    None
                }
            }
            (_, Value::Uint(x)) => Some(bad(&format!("the unsigned integer {x}"))),
            (_, Value::Int(x)) => Some(bad(&format!("the integer {x}"))),
            (_, Value::Float(x)) => Some(bad(&format!("the float {x}"))),
            (_, Value::Str(_)) => Some(bad("a string")),
        };
        if let Some(p) = problem {
            let w = self.what();
            return self.fail(format!("{w}: {p}"));
        }
        self.cur = Some((stream, class, i + 1));
        Ok(())
    }

    /// Ends the event begun last: every field must have its value.
    pub fn end(&mut self) -> Result<(), String> {
        self.failed()?;
        let Some((stream, class, i)) = self.cur else {
            return self.fail(format!("event {}: ended without being begun", self.events));
        };
        let n = self.classes[class as usize].fields.len();
        if i != n {
            let w = self.what();
            return self.fail(format!("{w}: {i} values given for its {n} fields"));
        }
        self.cur = None;
        self.events += 1;
        let s = &mut self.streams[stream as usize];
        s.events += 1;
        s.last = self.time;
        s.complete = s.packet.len();
        if s.packet.len() >= PACKET_BYTES {
            if let Err(e) = self.flush(stream as usize) {
                return self.fail(format!("writing the stream file: {e}"));
            }
        }
        Ok(())
    }

    /// The trace: its metadata and the streams that hold events. The
    /// first misuse, if any, is the trace's cut (`Converted::cut`): the
    /// events completed before it are kept. An event left unfinished is
    /// dropped.
    pub fn finish(mut self) -> Result<Converted, Error> {
        self.end_unfinished();
        let tmp_err = |e| Error::io(&std::env::temp_dir(), e);
        self.flush_all().map_err(tmp_err)?;
        let mut files = Vec::new();
        for s in self.streams.iter_mut() {
            if let Some(f) = s.file.take() {
                // SAFETY: the file is private to this process (unlinked,
                // never written again), so the mapping cannot change.
                let map = unsafe { Mmap::map(&f) }.map_err(tmp_err)?;
                let mut name = self.path.as_os_str().to_os_string();
                name.push(format!("#{}", s.name));
                files.push(StreamFile::new(PathBuf::from(name), map));
            }
        }
        let text = self.metadata();
        let class = crate::capture::class_from_metadata(text.as_bytes(), &self.path)?;
        Ok(Converted {
            class,
            files,
            cut: self.err,
        })
    }

    /// An event begun and not ended when the source stopped: a misuse.
    fn end_unfinished(&mut self) {
        if self.cur.is_some() && self.err.is_none() {
            let w = self.what();
            let _ = self.fail::<()>(format!("{w}: the source ended inside it"));
        }
    }

    /// Writes out every stream's last packet, an unfinished event left
    /// out.
    fn flush_all(&mut self) -> std::io::Result<()> {
        for k in 0..self.streams.len() {
            let s = &mut self.streams[k];
            let keep = s.complete;
            s.packet.truncate(keep);
            if s.packet.len() > PACKET_HEAD {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    /// Ends a builder made by [`Builder::in_dir`]: the streams' last
    /// packets, the `metadata` file, and, when the conversion stopped
    /// early, a `cut` file (its offset on the first line, then the
    /// message) that [`read_dir`] turns back into the trace's cut.
    pub fn finish_dir(mut self) -> Result<(), Error> {
        let dir = self.dir.clone().unwrap_or_default();
        self.end_unfinished();
        let io = |e| Error::io(&dir, e);
        self.flush_all().map_err(io)?;
        std::fs::write(dir.join("metadata"), self.metadata()).map_err(io)?;
        if let Some(c) = &self.err {
            std::fs::write(dir.join("cut"), format!("{}\n{}", c.offset, c.msg)).map_err(io)?;
        }
        Ok(())
    }

    /// The trace's TSDL.
    pub fn metadata(&self) -> String {
        let mut t = String::from("/* CTF 1.8 */\n\n");
        t.push_str(
            "trace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = le;\n\tpacket.header := struct {\n\
             \t\tinteger { size = 32; align = 8; signed = false; } magic;\n\
             \t\tinteger { size = 32; align = 8; signed = false; } stream_id;\n\t};\n};\n\n",
        );
        t.push_str(&format!(
            "env {{\n\ttracer_name = \"{}\";\n\tsource = \"{}\";\n}};\n\n",
            self.tracer.replace(['"', '\\'], "_"),
            self.path.display().to_string().replace(['"', '\\'], "_")
        ));
        let (secs, ns) = (
            self.offset_ns.div_euclid(1_000_000_000),
            self.offset_ns.rem_euclid(1_000_000_000),
        );
        // The offset's sub-second part in the clock's cycles.
        let cycles = (ns as u128 * self.freq as u128 / 1_000_000_000) as u64;
        t.push_str(&format!(
            "clock {{\n\tname = \"source\";\n\tfreq = {};\n\toffset_s = {secs};\n\toffset = {cycles};\n\tprecision = 1;\n\tabsolute = TRUE;\n}};\n\n",
            self.freq
        ));
        let ts = "integer { size = 64; align = 8; signed = false; map = clock.source.value; }";
        t.push_str(&format!(
            "stream {{\n\tid = 0;\n\tpacket.context := struct {{\n\
             \t\tinteger {{ size = 64; align = 8; signed = false; }} packet_size;\n\
             \t\tinteger {{ size = 64; align = 8; signed = false; }} content_size;\n\
             \t\t{ts} timestamp_begin;\n\t\t{ts} timestamp_end;\n\t}};\n\
             \tevent.header := struct {{\n\
             \t\tinteger {{ size = 32; align = 8; signed = false; }} id;\n\
             \t\t{ts} timestamp;\n\t}};\n}};\n\n"
        ));
        for (id, c) in self.classes.iter().enumerate() {
            t.push_str(&format!(
                "event {{\n\tid = {id};\n\tname = \"{}\";\n\tstream_id = 0;\n\tfields := struct {{\n",
                c.name
            ));
            for (n, ty) in &c.fields {
                t.push_str(&format!("\t\t{} _{n};\n", ty.tsdl()));
            }
            t.push_str("\t};\n};\n\n");
        }
        t
    }
}

fn push_float(out: &mut Vec<u8>, ty: FieldType, x: f64) {
    if ty == FieldType::F32 {
        out.extend_from_slice(&(x as f32).to_le_bytes());
    } else {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Writes out a stream's packet, its header and context filled in, to its
/// file (open).
fn flush(s: &mut Stream) -> std::io::Result<()> {
    let len = s.packet.len();
    let bits = (len as u64) * 8;
    let p = &mut s.packet;
    p[0..4].copy_from_slice(&0xc1fc_1fc1u32.to_le_bytes());
    p[4..8].copy_from_slice(&0u32.to_le_bytes());
    p[8..16].copy_from_slice(&bits.to_le_bytes());
    p[16..24].copy_from_slice(&bits.to_le_bytes());
    p[24..32].copy_from_slice(&s.begin.to_le_bytes());
    p[32..40].copy_from_slice(&s.last.to_le_bytes());
    if let Some(f) = &mut s.file {
        f.write_all(p)?;
    }
    p.clear();
    s.complete = 0;
    Ok(())
}

/// The trace a source in another process wrote with
/// [`Builder::in_dir`] into `dir`, as the conversion of `path`: its
/// streams mapped (named `PATH#NAME`), then the directory removed.
pub fn read_dir(path: &Path, dir: &Path) -> Result<Converted, Error> {
    let io = |e| Error::io(dir, e);
    let text = std::fs::read(dir.join("metadata")).map_err(io)?;
    let class = crate::capture::class_from_metadata(&text, path)?;
    let cut = match std::fs::read_to_string(dir.join("cut")) {
        Ok(t) => {
            let (off, msg) = t.split_once('\n').unwrap_or(("0", &t));
            Some(Cut {
                path: path.to_path_buf(),
                offset: off.trim().parse().unwrap_or(0),
                msg: msg.to_string(),
            })
        }
        Err(_) => None,
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "metadata" && n != "cut")
        .collect();
    names.sort();
    let mut files = Vec::new();
    for n in names {
        let f = File::open(dir.join(&n)).map_err(io)?;
        // SAFETY: the directory is this conversion's own, removed below:
        // nothing writes the file again.
        let map = unsafe { Mmap::map(&f) }.map_err(io)?;
        let mut name = path.as_os_str().to_os_string();
        name.push(format!("#{n}"));
        files.push(StreamFile::new(PathBuf::from(name), map));
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(Converted { class, files, cut })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> (Builder, u32, u32) {
        let mut b = Builder::new(Path::new("/x/log.bin"), "test");
        let c = b
            .class(
                "line",
                &[("level", FieldType::Uint(8)), ("text", FieldType::Str)],
            )
            .unwrap();
        let s = b.stream("main").unwrap();
        (b, c, s)
    }

    fn event(b: &mut Builder, s: u32, c: u32, t: u64, level: u64) -> Result<(), String> {
        b.begin(s, c, t)?;
        b.value(Value::Uint(level))?;
        b.value(Value::Str(b"hello"))?;
        b.end()
    }

    #[test]
    fn events_become_packets_of_one_stream_file() {
        let (mut b, c, s) = builder();
        for i in 0..10_000 {
            event(&mut b, s, c, 1000 + i, i % 200).unwrap();
        }
        let conv = b.finish().unwrap();
        assert!(conv.cut.is_none());
        assert_eq!(conv.files.len(), 1);
        // 10,000 events of 4 + 8 + 1 + 6 bytes, in packets of about
        // 64 KiB with a 40-byte head each.
        let len = conv.files[0].data().len();
        assert!(len > 190_000 && len < 200_000, "{len}");
        assert!(conv.files[0]
            .path
            .to_string_lossy()
            .ends_with("log.bin#main"));
    }

    #[test]
    fn a_misuse_names_the_event_and_keeps_those_before() {
        let (mut b, c, s) = builder();
        event(&mut b, s, c, 10, 1).unwrap();
        b.set_offset(99);
        b.begin(s, c, 20).unwrap();
        let e = b.value(Value::Uint(300)).unwrap_err();
        assert_eq!(
            e,
            "event 1 ('line'): field 'level' is u8, given 300, out of its range"
        );
        // Every later call is refused with the same message.
        assert_eq!(b.end().unwrap_err(), b.error().unwrap().msg);
        let conv = b.finish().unwrap();
        let cut = conv.cut.unwrap();
        assert_eq!(cut.offset, 99);
        assert!(
            cut.msg.ends_with("(the 1 events before it were read)"),
            "{}",
            cut.msg
        );
        // The unfinished event's bytes are gone: one event's worth.
        assert_eq!(conv.files[0].data().len(), PACKET_HEAD + 4 + 8 + 1 + 6);
    }

    #[test]
    fn misuses() {
        type Case<'a> = (
            &'a str,
            &'a dyn Fn(&mut Builder, u32, u32) -> Result<(), String>,
        );
        let cases: [Case; 5] = [
            ("is before the previous event's", &|b, c, s| {
                event(b, s, c, 10, 1)?;
                event(b, s, c, 5, 1)
            }),
            ("1 values given for its 2 fields", &|b, c, s| {
                b.begin(s, c, 1)?;
                b.value(Value::Uint(1))?;
                b.end()
            }),
            (
                "field 'text' is string, given the integer -3",
                &|b, c, s| {
                    b.begin(s, c, 1)?;
                    b.value(Value::Uint(1))?;
                    b.value(Value::Int(-3))
                },
            ),
            ("no stream 7", &|b, c, _| b.begin(7, c, 1)),
            ("not UTF-8", &|b, c, s| {
                b.begin(s, c, 1)?;
                b.value(Value::Uint(1))?;
                b.value(Value::Str(b"\xff"))
            }),
        ];
        for (want, f) in cases {
            let (mut b, c, s) = builder();
            let e = f(&mut b, c, s).unwrap_err();
            assert!(e.contains(want), "{e} lacks {want}");
        }
        let mut b = Builder::new(Path::new("x"), "t");
        assert!(b
            .class("a", &[("1x", FieldType::F64)])
            .unwrap_err()
            .contains("is not letters"));
    }

    #[test]
    fn types_parse() {
        assert_eq!(FieldType::parse("u16"), Some(FieldType::Uint(16)));
        assert_eq!(FieldType::parse("s64"), Some(FieldType::Int(64)));
        assert_eq!(FieldType::parse("i8"), Some(FieldType::Int(8)));
        assert_eq!(FieldType::parse("string"), Some(FieldType::Str));
        assert_eq!(FieldType::parse("u12"), None);
    }
}
