//! `libreef_reader`: reef's reader ([`reef_read::Source`]) behind the C API
//! of `include/reef_reader.h`.
//!
//! Every entry point checks its arguments before touching anything: a
//! handle is looked up among the live readers (a thread remembers the last
//! one it checked, so the common case is one atomic load), a reader in a
//! call on another thread is refused, and a panic is caught and turned into
//! `REEF_ERR_INTERNAL`. Field values are reached through
//! [`reef_ctf::walk`], the library's one walker of decoded values.

#![allow(non_camel_case_types)]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use reef_ctf::decode::Value;
use reef_ctf::plan::{Plan, NONE};
use reef_ctf::walk::{self, At, Compound, Leaf, Step};
use reef_ctf::{Item, StreamCursor, TextEncoding};
use reef_read::{ReadOptions, Source, TimeSpec};

pub type reef_status = c_int;

pub const REEF_OK: reef_status = 0;
pub const REEF_END: reef_status = 1;
pub const REEF_ERR_NULL: reef_status = -1;
pub const REEF_ERR_HANDLE: reef_status = -2;
pub const REEF_ERR_BUSY: reef_status = -3;
pub const REEF_ERR_ARG: reef_status = -4;
pub const REEF_ERR_OPEN: reef_status = -5;
pub const REEF_ERR_READ: reef_status = -6;
pub const REEF_ERR_STATE: reef_status = -7;
pub const REEF_ERR_ABSENT: reef_status = -8;
pub const REEF_ERR_TYPE: reef_status = -9;
pub const REEF_ERR_RANGE: reef_status = -10;
pub const REEF_ERR_INTERNAL: reef_status = -11;

const NAMES: [(reef_status, &CStr); 13] = [
    (REEF_OK, c"REEF_OK"),
    (REEF_END, c"REEF_END"),
    (REEF_ERR_NULL, c"REEF_ERR_NULL"),
    (REEF_ERR_HANDLE, c"REEF_ERR_HANDLE"),
    (REEF_ERR_BUSY, c"REEF_ERR_BUSY"),
    (REEF_ERR_ARG, c"REEF_ERR_ARG"),
    (REEF_ERR_OPEN, c"REEF_ERR_OPEN"),
    (REEF_ERR_READ, c"REEF_ERR_READ"),
    (REEF_ERR_STATE, c"REEF_ERR_STATE"),
    (REEF_ERR_ABSENT, c"REEF_ERR_ABSENT"),
    (REEF_ERR_TYPE, c"REEF_ERR_TYPE"),
    (REEF_ERR_RANGE, c"REEF_ERR_RANGE"),
    (REEF_ERR_INTERNAL, c"REEF_ERR_INTERNAL"),
];

pub const REEF_MESSAGE_EVENT: c_int = 1;
pub const REEF_MESSAGE_DISCARDED_EVENTS: c_int = 2;
pub const REEF_MESSAGE_DISCARDED_PACKETS: c_int = 3;

const SCOPE_PACKET_CONTEXT: c_int = 1;
const SCOPE_EVENT_HEADER: c_int = 2;
const SCOPE_COMMON_CONTEXT: c_int = 3;
const SCOPE_CONTEXT: c_int = 4;
const SCOPE_PAYLOAD: c_int = 5;

/// `reef_reader_options`.
#[repr(C)]
pub struct reef_reader_options {
    pub size: usize,
    pub begin: *const c_char,
    pub end: *const c_char,
    pub utc: c_int,
    pub filter: *const c_char,
    pub workers: c_uint,
}

/// `reef_field`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct reef_field {
    pub name: *const c_char,
    pub name_len: usize,
    pub kind: u32,
    pub depth: u32,
    pub index: u64,
    pub count: u64,
    pub u: u64,
    pub i: i64,
    pub d: f64,
    pub bytes: *const c_char,
    pub len: usize,
    pub label: *const c_char,
    pub label_len: usize,
    pub option: u32,
    pub base: u32,
}

mod view;
pub use view::EventView;

const MAGIC: u64 = 0x7265_6566_5f72_6472; // "reef_rdr"

/// The current message.
#[derive(Clone, Copy)]
struct Current {
    stream: usize,
    trace: usize,
    item: Item,
    ns: Option<i64>,
}

/// What a reader reads: its own source, or (a plugin's handle) the
/// event its host has on a cursor.
enum Backing {
    Own(Box<Source>),
    /// The host's cursor, valid while `cur` is `Some` (see [`EventView`]).
    View(*const StreamCursor),
}

pub struct reef_reader {
    magic: u64,
    busy: AtomicBool,
    src: Backing,
    cur: Option<Current>,
    /// Event names, NUL-terminated, by (trace, stream class, event class).
    names: HashMap<(usize, usize, usize), CString>,
    /// Paths resolved per event class, by (the caller's path pointer,
    /// trace, stream class, event class).
    paths: Paths,
    /// A panic left the reader in an unknown state: it reads no more.
    broken: bool,
}

/// The readers alive, by address.
static LIVE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Bumped when a reader is closed: a thread's remembered check is stale.
static CLOSED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The reader this thread last found alive, and `CLOSED` then.
    static CHECKED: Cell<(usize, u64)> = const { Cell::new((0, u64::MAX)) };
    /// The last failure's message, NUL-terminated; its buffer is reused,
    /// so a failure repeated per event (a field absent from most events)
    /// allocates nothing.
    static MESSAGE: RefCell<Vec<u8>> = RefCell::new(vec![0]);
}

fn set_message(m: impl Into<String>) {
    set_message_parts(&[m.into().as_bytes()]);
}

/// Sets the message to the concatenation of `parts` (NUL bytes become
/// spaces).
fn set_message_parts(parts: &[&[u8]]) {
    MESSAGE.with(|c| {
        let mut b = c.borrow_mut();
        b.clear();
        for p in parts {
            b.extend(p.iter().map(|&x| if x == 0 { b' ' } else { x }));
        }
        b.push(0);
    });
}

fn fail(status: reef_status, m: impl Into<String>) -> reef_status {
    set_message(m);
    status
}

/// Whether `p` is a live reader of this library.
fn alive(p: usize) -> bool {
    let gen = CLOSED.load(Ordering::Acquire);
    if CHECKED.with(|c| c.get()) == (p, gen) {
        return true;
    }
    let ok = LIVE.lock().map(|l| l.contains(&p)).unwrap_or(false);
    if ok {
        CHECKED.with(|c| c.set((p, gen)));
    }
    ok
}

/// Runs `f` on the reader `r` after checking it, marked busy meanwhile;
/// a panic becomes `REEF_ERR_INTERNAL`.
fn with_reader(
    r: *const reef_reader,
    f: impl FnOnce(&mut reef_reader) -> reef_status,
) -> reef_status {
    if r.is_null() {
        return fail(REEF_ERR_NULL, "the reader is NULL");
    }
    if !alive(r as usize) {
        return fail(
            REEF_ERR_HANDLE,
            "not a reader of this library, or one already closed",
        );
    }
    // SAFETY: `r` is a live reader made by `reef_reader_open` (checked
    // above); only the thread that set `busy` goes further.
    let rd = unsafe { &mut *(r as *mut reef_reader) };
    if rd.magic != MAGIC {
        return fail(REEF_ERR_HANDLE, "not a reader of this library");
    }
    if rd.busy.swap(true, Ordering::Acquire) {
        return fail(REEF_ERR_BUSY, "the reader is in a call from another thread");
    }
    let out = catch_unwind(AssertUnwindSafe(|| f(&mut *rd)));
    let status = match out {
        Ok(s) => s,
        Err(_) => {
            rd.broken = true;
            rd.cur = None;
            fail(
                REEF_ERR_INTERNAL,
                "an internal error of libreef_reader: the reader reads no more",
            )
        }
    };
    rd.busy.store(false, Ordering::Release);
    status
}

/// For the host's own C functions (reef-plugin's `reef_source_*`): sets
/// the message `reef_error_message` gives and returns `status`.
#[doc(hidden)]
pub fn fail_with(status: reef_status, m: impl Into<String>) -> reef_status {
    fail(status, m)
}

/// For the host's own C functions: runs `f`, a panic becoming
/// `REEF_ERR_INTERNAL`.
#[doc(hidden)]
pub fn guarded(f: impl FnOnce() -> reef_status) -> reef_status {
    guard(f)
}

/// For the host's own C functions: a C string argument, or the status to
/// return (its message set).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
#[doc(hidden)]
pub unsafe fn c_text<'a>(p: *const c_char, what: &str) -> Result<&'a str, reef_status> {
    // SAFETY: the caller's promise.
    unsafe { text(p, what) }
}

fn guard(f: impl FnOnce() -> reef_status) -> reef_status {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| fail(REEF_ERR_INTERNAL, "an internal error of libreef_reader"))
}

/// A C string argument, or the status to return.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, reef_status> {
    if p.is_null() {
        return Err(fail(REEF_ERR_NULL, format!("{what} is NULL")));
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| fail(REEF_ERR_ARG, format!("{what} is not UTF-8")))
}

/// # Safety
/// `paths` holds `npaths` NUL-terminated strings; `options` is NULL or a
/// `reef_reader_options` of at least its `size`; `reader` is writable.
#[no_mangle]
pub unsafe extern "C" fn reef_reader_open(
    paths: *const *const c_char,
    npaths: usize,
    options: *const reef_reader_options,
    reader: *mut *mut reef_reader,
) -> reef_status {
    guard(|| {
        if reader.is_null() {
            return fail(REEF_ERR_NULL, "the reader's place (reader) is NULL");
        }
        // SAFETY: checked not NULL; the caller's promise.
        unsafe { *reader = std::ptr::null_mut() };
        if paths.is_null() {
            return fail(REEF_ERR_NULL, "paths is NULL");
        }
        if npaths == 0 {
            return fail(REEF_ERR_ARG, "no path to read");
        }
        let mut list = Vec::with_capacity(npaths);
        for i in 0..npaths {
            // SAFETY: `paths` holds `npaths` pointers (the caller's promise).
            let p = unsafe { *paths.add(i) };
            // SAFETY: as above.
            match unsafe { text(p, &format!("paths[{i}]")) } {
                Ok(s) => list.push(PathBuf::from(s)),
                Err(e) => return e,
            }
        }
        let mut opts = ReadOptions::new(list);
        if !options.is_null() {
            // SAFETY: not NULL; its `size` says how much of it there is.
            let size = unsafe { (*options).size };
            if size < std::mem::size_of::<reef_reader_options>() {
                return fail(
                    REEF_ERR_ARG,
                    format!(
                        "options.size is {size}: set it to sizeof(reef_reader_options) ({})",
                        std::mem::size_of::<reef_reader_options>()
                    ),
                );
            }
            // SAFETY: as above.
            let o = unsafe { &*options };
            let time = |p: *const c_char, what: &str| -> Result<Option<TimeSpec>, reef_status> {
                if p.is_null() {
                    return Ok(None);
                }
                // SAFETY: a NUL-terminated string (the caller's promise).
                let s = unsafe { text(p, what) }?;
                s.parse::<TimeSpec>()
                    .map(Some)
                    .map_err(|e| fail(REEF_ERR_ARG, format!("options.{what}: {e}")))
            };
            opts.begin = match time(o.begin, "begin") {
                Ok(t) => t,
                Err(e) => return e,
            };
            opts.end = match time(o.end, "end") {
                Ok(t) => t,
                Err(e) => return e,
            };
            opts.gmt = o.utc != 0;
            if !o.filter.is_null() {
                // SAFETY: as above.
                match unsafe { text(o.filter, "options.filter") } {
                    Ok(s) => opts.filter = Some(s.to_string()),
                    Err(e) => return e,
                }
            }
            if o.workers > 0 {
                opts.workers = Some(o.workers as usize);
            }
        }
        let src = match Source::open(&opts) {
            Ok(s) => s,
            Err(e) => {
                let status = match e {
                    reef_read::Error::Filter { .. } => REEF_ERR_ARG,
                    _ => REEF_ERR_OPEN,
                };
                return fail(status, e.to_string());
            }
        };
        let r = Box::new(reef_reader {
            magic: MAGIC,
            busy: AtomicBool::new(false),
            src: Backing::Own(Box::new(src)),
            cur: None,
            names: HashMap::new(),
            paths: Paths::default(),
            broken: false,
        });
        let p = Box::into_raw(r);
        match LIVE.lock() {
            Ok(mut l) => l.push(p as usize),
            Err(_) => {
                // SAFETY: made just above, never shared.
                drop(unsafe { Box::from_raw(p) });
                return fail(REEF_ERR_INTERNAL, "the readers' registry is poisoned");
            }
        }
        // SAFETY: checked not NULL above.
        unsafe { *reader = p };
        REEF_OK
    })
}

/// # Safety
/// `reader` is any value: it is looked up before use.
#[no_mangle]
pub unsafe extern "C" fn reef_reader_close(reader: *mut reef_reader) -> reef_status {
    guard(|| {
        if reader.is_null() {
            return fail(REEF_ERR_NULL, "the reader is NULL");
        }
        let p = reader as usize;
        {
            let Ok(mut l) = LIVE.lock() else {
                return fail(REEF_ERR_INTERNAL, "the readers' registry is poisoned");
            };
            let Some(i) = l.iter().position(|&x| x == p) else {
                return fail(
                    REEF_ERR_HANDLE,
                    "not a reader of this library, or one already closed",
                );
            };
            // SAFETY: live (found above).
            if matches!(unsafe { &*reader }.src, Backing::View(_)) {
                return fail(
                    REEF_ERR_HANDLE,
                    "a plugin's event handle: its host closes it",
                );
            }
            // SAFETY: live (found above).
            if unsafe { &*reader }.busy.load(Ordering::Acquire) {
                return fail(REEF_ERR_BUSY, "the reader is in a call from another thread");
            }
            l.swap_remove(i);
            CLOSED.fetch_add(1, Ordering::AcqRel);
        }
        // SAFETY: made by `reef_reader_open`, now out of the registry.
        let mut r = unsafe { Box::from_raw(reader) };
        r.magic = 0;
        drop(r);
        REEF_OK
    })
}

/// # Safety
/// `reader` is any value; `kind` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_reader_next(
    reader: *mut reef_reader,
    kind: *mut c_int,
) -> reef_status {
    with_reader(reader, |r| {
        if matches!(r.src, Backing::View(_)) {
            return fail(
                REEF_ERR_HANDLE,
                "a plugin's event handle: its host reads the messages",
            );
        }
        r.cur = None;
        if r.broken {
            return fail(
                REEF_ERR_INTERNAL,
                "the reader reads no more (an earlier internal error)",
            );
        }
        let Backing::Own(src) = &mut r.src else {
            return REEF_ERR_INTERNAL;
        };
        match src.next() {
            Ok(Some(m)) => {
                let k = match m.item {
                    Item::Event => REEF_MESSAGE_EVENT,
                    Item::DiscardedEvents { .. } => REEF_MESSAGE_DISCARDED_EVENTS,
                    Item::DiscardedPackets { .. } => REEF_MESSAGE_DISCARDED_PACKETS,
                };
                r.cur = Some(Current {
                    stream: m.stream,
                    trace: m.trace,
                    item: m.item,
                    ns: m.ns,
                });
                if !kind.is_null() {
                    // SAFETY: not NULL: writable (the caller's promise).
                    unsafe { *kind = k };
                }
                REEF_OK
            }
            Ok(None) => REEF_END,
            Err(e) => fail(REEF_ERR_READ, e.to_string()),
        }
    })
}

#[no_mangle]
pub extern "C" fn reef_error_message() -> *const c_char {
    MESSAGE.with(|c| c.borrow().as_ptr().cast())
}

#[no_mangle]
pub extern "C" fn reef_status_name(status: reef_status) -> *const c_char {
    NAMES
        .iter()
        .find(|(s, _)| *s == status)
        .map_or(std::ptr::null(), |(_, n)| n.as_ptr())
}

/// Writes `v` to `out`, or says it is NULL.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn put<T>(out: *mut T, v: T, what: &str) -> reef_status {
    if out.is_null() {
        return fail(REEF_ERR_NULL, format!("{what} is NULL"));
    }
    // SAFETY: not NULL: writable (the caller's promise).
    unsafe { out.write(v) };
    REEF_OK
}

impl reef_reader {
    fn current(&self) -> Result<(Current, &StreamCursor), reef_status> {
        match self.cur {
            Some(c) => Ok((
                c,
                match &self.src {
                    Backing::Own(src) => &src.cursors()[c.stream],
                    // SAFETY: the host's cursor is valid while `cur` is
                    // set (`EventView::show` to `EventView::hide`).
                    Backing::View(p) => unsafe { &**p },
                },
            )),
            None => Err(fail(
                REEF_ERR_STATE,
                "no current message (before the first, or after the last)",
            )),
        }
    }

    fn event(&self) -> Result<&StreamCursor, reef_status> {
        let (c, cur) = self.current()?;
        if c.item != Item::Event {
            return Err(fail(
                REEF_ERR_STATE,
                "the current message is a notice, not an event",
            ));
        }
        Ok(cur)
    }
}

macro_rules! try_s {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(s) => return s,
        }
    };
}

/// # Safety
/// `reader` is any value; `ns` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_message_time(
    reader: *const reef_reader,
    ns: *mut i64,
) -> reef_status {
    with_reader(reader, |r| {
        let (c, _) = try_s!(r.current());
        match c.ns {
            // SAFETY: the caller's promise.
            Some(v) => unsafe { put(ns, v, "ns") },
            None => fail(REEF_ERR_ABSENT, "the message's stream has no clock"),
        }
    })
}

/// # Safety
/// `reader` is any value; `cycles` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_message_cycles(
    reader: *const reef_reader,
    cycles: *mut u64,
) -> reef_status {
    with_reader(reader, |r| {
        let (c, cur) = try_s!(r.current());
        let v = match c.item {
            Item::Event => cur.event.ts,
            Item::DiscardedEvents { begin, .. } | Item::DiscardedPackets { begin, .. } => begin,
        };
        match v {
            // SAFETY: the caller's promise.
            Some(v) => unsafe { put(cycles, v, "cycles") },
            None => fail(REEF_ERR_ABSENT, "the message's stream has no clock"),
        }
    })
}

/// # Safety
/// `reader` is any value; `stream` and `trace` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_message_stream(
    reader: *const reef_reader,
    stream: *mut u64,
    trace: *mut u64,
) -> reef_status {
    with_reader(reader, |r| {
        let (c, _) = try_s!(r.current());
        if stream.is_null() && trace.is_null() {
            return fail(REEF_ERR_NULL, "stream and trace are NULL");
        }
        if !stream.is_null() {
            // SAFETY: not NULL: writable (the caller's promise).
            unsafe { *stream = c.stream as u64 };
        }
        if !trace.is_null() {
            // SAFETY: as above.
            unsafe { *trace = c.trace as u64 };
        }
        REEF_OK
    })
}

/// # Safety
/// `reader` is any value; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_message_discarded(
    reader: *const reef_reader,
    count: *mut u64,
) -> reef_status {
    with_reader(reader, |r| {
        let (c, _) = try_s!(r.current());
        match c.item {
            Item::Event => fail(REEF_ERR_STATE, "the current message is an event"),
            // SAFETY: the caller's promise.
            Item::DiscardedEvents { count: Some(n), .. } => unsafe { put(count, n, "count") },
            Item::DiscardedEvents { count: None, .. } => fail(
                REEF_ERR_ABSENT,
                "the tracer did not say how many events it discarded",
            ),
            // SAFETY: the caller's promise.
            Item::DiscardedPackets { count: n, .. } => unsafe { put(count, n, "count") },
        }
    })
}

/// # Safety
/// `reader` is any value; `name` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_event_name(
    reader: *const reef_reader,
    name: *mut *const c_char,
) -> reef_status {
    with_reader(reader, |r| {
        let cur = try_s!(r.event());
        let key = (r.cur.map_or(0, |c| c.trace), cur.stream, cur.event.event);
        let p = match r.names.get(&key) {
            Some(n) => n.as_ptr(),
            None => {
                let n = CString::new(cur.event_name().replace('\0', " ")).unwrap_or_default();
                let p = n.as_ptr();
                r.names.insert(key, n);
                p
            }
        };
        // SAFETY: the caller's promise.
        unsafe { put(name, p, "name") }
    })
}

/// # Safety
/// `reader` is any value; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_event_class_id(
    reader: *const reef_reader,
    id: *mut u64,
) -> reef_status {
    with_reader(reader, |r| {
        let cur = try_s!(r.event());
        let v = cur.event_class().id;
        // SAFETY: the caller's promise.
        unsafe { put(id, v, "id") }
    })
}

/// A scope's plan and values in the current event.
fn scope(cur: &StreamCursor, s: c_int) -> Option<(&Plan, &[Value])> {
    let sp = &cur.trace.class.streams[cur.stream];
    let ev = &cur.event;
    Some(match s {
        SCOPE_PACKET_CONTEXT => (&sp.packet_context, &cur.packet_context[..]),
        SCOPE_EVENT_HEADER => (&sp.event_header, ev.header()),
        SCOPE_COMMON_CONTEXT => (&sp.event_common_context, ev.common_context()),
        SCOPE_CONTEXT => (&sp.event(ev.event).context, ev.specific_context()),
        SCOPE_PAYLOAD => (&sp.event(ev.event).payload, ev.payload()),
        _ => return None,
    })
}

/// One step of a field path.
#[derive(Debug, PartialEq)]
enum Comp<'p> {
    Name(&'p str),
    Index(u64),
}

/// `[scope.]name{.name|[index]}`: the scope (None: any) and the steps.
fn parse_path(p: &str) -> Option<(Option<c_int>, Vec<Comp<'_>>)> {
    let mut comps = Vec::new();
    let mut rest = p;
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty() || name.contains(']') {
            return None;
        }
        comps.push(Comp::Name(name));
        rest = &rest[end..];
        while let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            comps.push(Comp::Index(r[..close].trim().parse().ok()?));
            rest = &r[close + 1..];
        }
        if let Some(r) = rest.strip_prefix('.') {
            if r.is_empty() {
                return None;
            }
            rest = r;
        } else if !rest.is_empty() {
            return None;
        }
    }
    let scope = match comps.first() {
        Some(Comp::Name(n)) => match *n {
            "payload" => Some(SCOPE_PAYLOAD),
            "context" => Some(SCOPE_CONTEXT),
            "common_context" => Some(SCOPE_COMMON_CONTEXT),
            "header" => Some(SCOPE_EVENT_HEADER),
            "packet_context" => Some(SCOPE_PACKET_CONTEXT),
            _ => None,
        },
        _ => return None,
    };
    if scope.is_some() {
        comps.remove(0);
    }
    if !matches!(comps.first(), Some(Comp::Name(_))) {
        return None;
    }
    Some((scope, comps))
}

/// What a path leads to.
enum Found<'a> {
    Leaf(Leaf<'a>),
    Compound,
    Absent,
}

fn name_is(at: &str, want: &str) -> bool {
    at == want || at.strip_prefix('_') == Some(want) || want.strip_prefix('_') == Some(at)
}

/// The field at `comps` in a scope; variants and optionals stand for the
/// field they hold.
fn find<'a>(plan: &'a Plan, values: &'a [Value], data: &'a [u8], comps: &[Comp]) -> Found<'a> {
    let mut found = Found::Absent;
    // The open compounds: on the path or not, and whether transparent.
    let mut open: Vec<(bool, bool)> = Vec::new();
    let mut matched = 0usize;
    let _ = walk::walk(
        plan,
        values,
        data,
        false,
        &mut |at: At<'a>, step: Step<'a>| {
            if let Step::End(_) = step {
                // Leaving a compound on the path (or an empty optional):
                // the field is not there.
                if let Some((true, _)) = open.pop() {
                    return ControlFlow::Break(());
                }
                return ControlFlow::Continue(());
            }
            if !open.iter().all(|o| o.0) {
                if let Step::Begin { .. } = step {
                    open.push((false, false));
                }
                return ControlFlow::Continue(());
            }
            let inside_transparent = open.last().is_some_and(|o| o.1);
            let hit = inside_transparent
                || match comps[matched] {
                    Comp::Name(n) => name_is(at.name, n),
                    Comp::Index(i) => at.name.is_empty() && at.index == i,
                };
            let last = matched + 1 == comps.len();
            match step {
                Step::Begin { kind, .. } if hit => {
                    let transparent = matches!(kind, Compound::Variant | Compound::Optional);
                    if transparent {
                        open.push((true, true));
                        return ControlFlow::Continue(());
                    }
                    if last {
                        found = Found::Compound;
                        return ControlFlow::Break(());
                    }
                    open.push((true, false));
                    matched += 1;
                    ControlFlow::Continue(())
                }
                Step::Begin { .. } => {
                    open.push((false, false));
                    ControlFlow::Continue(())
                }
                Step::Leaf { value, .. } if hit => {
                    if last {
                        found = Found::Leaf(value);
                    }
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        },
    );
    found
}

/// Where a path leads in events of one class, found once (see
/// [`reef_reader::paths`]).
#[derive(Clone, Copy)]
enum Resolved {
    /// Always `values[value]` of the scope, decoded by `node`.
    Fixed {
        scope: c_int,
        value: usize,
        node: u32,
    },
    /// Walk the values ([`find`]).
    Dynamic,
    Absent,
}

/// A path resolved for a class: the path's bytes (checked on every hit:
/// the key is the caller's pointer) and where it leads.
struct PathEntry {
    bytes: Box<[u8]>,
    res: Resolved,
}

/// At most this many resolved paths per reader (then the table starts
/// again): memory stays bounded whatever paths a program makes up.
const MAX_PATHS: usize = 4096;

/// The hasher of the resolved paths' table: keys are a pointer and small
/// indexes, hashed by a multiply (the table is the reader's own, its keys
/// the program's, not an adversary's).
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type PathKey = (usize, usize, usize, usize);
pub(crate) type Paths = HashMap<PathKey, PathEntry, std::hash::BuildHasherDefault<KeyHasher>>;

/// Whether the C string `p` holds exactly `want` (which has no NUL).
///
/// # Safety
/// `p` is a NUL-terminated string: the comparison stops at its first
/// difference, so never reads past the terminator.
unsafe fn same_text(p: *const c_char, want: &[u8]) -> bool {
    for (i, &b) in want.iter().enumerate() {
        // SAFETY: every byte before this one matched `want`, which holds
        // no NUL: still inside the string.
        if unsafe { *p.add(i) } as u8 != b {
            return false;
        }
    }
    // SAFETY: as above.
    unsafe { *p.add(want.len()) == 0 }
}

/// Where `path` leads in the current event's class, from the reader's
/// table or found now from the plans.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn resolve(r: &mut reef_reader, path: *const c_char) -> Result<Resolved, reef_status> {
    if path.is_null() {
        return Err(fail(REEF_ERR_NULL, "path is NULL"));
    }
    let (c, cur) = match r.cur {
        Some(c) if c.item == Item::Event => (c, r.event()?),
        _ => return r.event().map(|_| Resolved::Dynamic),
    };
    let key = (path as usize, c.trace, cur.stream, cur.event.event);
    if let Some(e) = r.paths.get(&key) {
        // SAFETY: the caller's promise.
        if unsafe { same_text(path, &e.bytes) } {
            return Ok(e.res);
        }
    }
    // SAFETY: the caller's promise.
    let p = unsafe { text(path, "path") }?;
    let Some((scope_of, comps)) = parse_path(p) else {
        return Err(fail(
            REEF_ERR_ARG,
            format!("field path {p:?}: expected [scope.]name{{.name|[index]}}"),
        ));
    };
    let names: Option<Vec<&str>> = comps
        .iter()
        .map(|c| match c {
            Comp::Name(n) => Some(*n),
            Comp::Index(_) => None,
        })
        .collect();
    let res = match names {
        None => Resolved::Dynamic,
        Some(names) => {
            let mut res = Resolved::Absent;
            for &s in scope_order(&scope_of) {
                let Some((plan, _)) = scope(cur, s) else {
                    continue;
                };
                match walk::slot_of(plan, &names, name_is) {
                    walk::Slot::Absent => continue,
                    walk::Slot::Dynamic => res = Resolved::Dynamic,
                    walk::Slot::Fixed { value, node } => {
                        res = Resolved::Fixed {
                            scope: s,
                            value,
                            node,
                        }
                    }
                }
                break;
            }
            res
        }
    };
    if r.paths.len() >= MAX_PATHS {
        r.paths.clear();
    }
    let bytes = p.as_bytes().into();
    r.paths.insert(key, PathEntry { bytes, res });
    Ok(res)
}

/// The scopes a path is looked for in: its own, or all in this order.
fn scope_order(scope_of: &Option<c_int>) -> &[c_int] {
    match scope_of {
        Some(s) => std::slice::from_ref(s),
        None => &[
            SCOPE_PAYLOAD,
            SCOPE_CONTEXT,
            SCOPE_COMMON_CONTEXT,
            SCOPE_EVENT_HEADER,
            SCOPE_PACKET_CONTEXT,
        ],
    }
}

/// The leaf at `path` in the current event: where the path leads is found
/// once per event class and path (a field at a fixed place is then read
/// directly), else the values are walked.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn leaf_at<'r>(
    r: &'r mut reef_reader,
    path: *const c_char,
) -> Result<Leaf<'r>, reef_status> {
    // SAFETY: the caller's promise.
    let res = unsafe { resolve(r, path) }?;
    let r: &'r reef_reader = r;
    match res {
        Resolved::Fixed {
            scope: s,
            value,
            node,
        } => {
            let cur = r.event()?;
            if let Some((plan, values)) = scope(cur, s) {
                if let (Some(&v), Some(n)) = (values.get(value), plan.nodes.get(node as usize)) {
                    if let Some((l, _, _)) = walk::leaf_of(n, v, cur.data()) {
                        return Ok(l);
                    }
                }
            }
            // SAFETY: the caller's promise.
            unsafe { leaf_walked(r, path) }
        }
        Resolved::Absent => {
            // SAFETY: the caller's promise (checked not NULL by `resolve`).
            let p = unsafe { CStr::from_ptr(path) }.to_bytes();
            set_message_parts(&[b"the event has no field \"", p, b"\""]);
            Err(REEF_ERR_ABSENT)
        }
        // SAFETY: the caller's promise.
        Resolved::Dynamic => unsafe { leaf_walked(r, path) },
    }
}

/// The leaf at `path` in the current event, found by walking its values.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn leaf_walked<'r>(
    r: &'r reef_reader,
    path: *const c_char,
) -> Result<Leaf<'r>, reef_status> {
    let cur = r.event()?;
    // SAFETY: the caller's promise.
    let p = unsafe { text(path, "path") }?;
    let Some((scope_of, comps)) = parse_path(p) else {
        return Err(fail(
            REEF_ERR_ARG,
            format!("field path {p:?}: expected [scope.]name{{.name|[index]}}"),
        ));
    };
    for &s in scope_order(&scope_of) {
        let Some((plan, values)) = scope(cur, s) else {
            continue;
        };
        match find(plan, values, cur.data(), &comps) {
            Found::Leaf(l) => return Ok(l),
            Found::Compound => {
                return Err(fail(
                    REEF_ERR_TYPE,
                    format!(
                        "field {p:?} is a compound (a structure, array or sequence), not a value"
                    ),
                ))
            }
            Found::Absent => {}
        }
    }
    Err(fail(
        REEF_ERR_ABSENT,
        format!("the event has no field {p:?}"),
    ))
}

fn kind_of(l: &Leaf) -> &'static str {
    match l {
        Leaf::U(_) | Leaf::I(_) => "an integer",
        Leaf::F(_) => "a floating-point number",
        Leaf::Str(..) => "a string",
        Leaf::Blob(_) => "a BLOB",
        Leaf::Big { .. } => "an integer wider than 64 bits",
    }
}

/// # Safety
/// `reader` is any value; `path` is NULL or a NUL-terminated string;
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_event_uint(
    reader: *const reef_reader,
    path: *const c_char,
    value: *mut u64,
) -> reef_status {
    with_reader(reader, |r| {
        if value.is_null() {
            return fail(REEF_ERR_NULL, "value is NULL");
        }
        // SAFETY: the caller's promise.
        let v = match try_s!(unsafe { leaf_at(r, path) }) {
            Leaf::U(u) => u,
            Leaf::I(i) if i >= 0 => i as u64,
            Leaf::I(i) => return fail(REEF_ERR_RANGE, format!("the value {i} is negative")),
            l => return fail(REEF_ERR_TYPE, format!("the field is {}", kind_of(&l))),
        };
        // SAFETY: the caller's promise.
        unsafe { put(value, v, "value") }
    })
}

/// # Safety
/// As [`reef_event_uint`].
#[no_mangle]
pub unsafe extern "C" fn reef_event_int(
    reader: *const reef_reader,
    path: *const c_char,
    value: *mut i64,
) -> reef_status {
    with_reader(reader, |r| {
        if value.is_null() {
            return fail(REEF_ERR_NULL, "value is NULL");
        }
        // SAFETY: the caller's promise.
        let v = match try_s!(unsafe { leaf_at(r, path) }) {
            Leaf::I(i) => i,
            Leaf::U(u) => match i64::try_from(u) {
                Ok(i) => i,
                Err(_) => return fail(REEF_ERR_RANGE, format!("the value {u} is above INT64_MAX")),
            },
            l => return fail(REEF_ERR_TYPE, format!("the field is {}", kind_of(&l))),
        };
        // SAFETY: the caller's promise.
        unsafe { put(value, v, "value") }
    })
}

/// # Safety
/// As [`reef_event_uint`].
#[no_mangle]
pub unsafe extern "C" fn reef_event_double(
    reader: *const reef_reader,
    path: *const c_char,
    value: *mut f64,
) -> reef_status {
    with_reader(reader, |r| {
        if value.is_null() {
            return fail(REEF_ERR_NULL, "value is NULL");
        }
        // SAFETY: the caller's promise.
        let v = match try_s!(unsafe { leaf_at(r, path) }) {
            Leaf::F(f) => f,
            Leaf::I(i) => i as f64,
            Leaf::U(u) => u as f64,
            l => return fail(REEF_ERR_TYPE, format!("the field is {}", kind_of(&l))),
        };
        // SAFETY: the caller's promise.
        unsafe { put(value, v, "value") }
    })
}

/// # Safety
/// `reader` is any value; `path` is NULL or a NUL-terminated string;
/// `bytes` and `len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_event_string(
    reader: *const reef_reader,
    path: *const c_char,
    bytes: *mut *const c_char,
    len: *mut usize,
) -> reef_status {
    with_reader(reader, |r| {
        if bytes.is_null() || len.is_null() {
            return fail(REEF_ERR_NULL, "bytes or len is NULL");
        }
        // SAFETY: the caller's promise.
        let s = match try_s!(unsafe { leaf_at(r, path) }) {
            Leaf::Str(s, _) => s,
            l => return fail(REEF_ERR_TYPE, format!("the field is {}", kind_of(&l))),
        };
        // SAFETY: both checked not NULL: writable (the caller's promise).
        unsafe {
            *bytes = s.as_ptr().cast();
            *len = s.len();
        }
        REEF_OK
    })
}

fn encoding_code(e: TextEncoding) -> u32 {
    match e {
        TextEncoding::Utf8 => 0,
        TextEncoding::Utf16Be => 1,
        TextEncoding::Utf16Le => 2,
        TextEncoding::Utf32Be => 3,
        TextEncoding::Utf32Le => 4,
    }
}

/// # Safety
/// `reader` is any value; `fields` holds `cap` writable entries (or is
/// NULL with `cap` 0); `n` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn reef_event_fields(
    reader: *const reef_reader,
    scope_of: c_int,
    fields: *mut reef_field,
    cap: usize,
    n: *mut usize,
) -> reef_status {
    with_reader(reader, |r| {
        if n.is_null() {
            return fail(REEF_ERR_NULL, "n is NULL");
        }
        if fields.is_null() && cap > 0 {
            return fail(REEF_ERR_NULL, "fields is NULL");
        }
        let cur = try_s!(r.event());
        let Some((plan, values)) = scope(cur, scope_of) else {
            return fail(
                REEF_ERR_ARG,
                format!("scope {scope_of} is none of reef_scope's values (1 to 5)"),
            );
        };
        let mut count = 0usize;
        let _ = walk::walk(plan, values, cur.data(), true, &mut |at, step| {
            if count < cap {
                let mut f = reef_field {
                    name: at.name.as_ptr().cast(),
                    name_len: at.name.len(),
                    kind: 0,
                    depth: at.depth,
                    index: at.index,
                    count: 0,
                    u: 0,
                    i: 0,
                    d: 0.0,
                    bytes: std::ptr::null(),
                    len: 0,
                    label: std::ptr::null(),
                    label_len: 0,
                    option: 0,
                    base: 10,
                };
                match step {
                    Step::Leaf {
                        value,
                        enum_idx,
                        base,
                    } => {
                        f.base = base;
                        let label_of = |v: i128| {
                            (enum_idx != NONE)
                                .then(|| plan.enums.get(enum_idx as usize))
                                .flatten()
                                .and_then(|e| e.labels_for(v).next())
                        };
                        let label = match value {
                            Leaf::U(u) => {
                                f.kind = 1;
                                f.u = u;
                                label_of(u as i128)
                            }
                            Leaf::I(i) => {
                                f.kind = 2;
                                f.i = i;
                                label_of(i as i128)
                            }
                            Leaf::F(x) => {
                                f.kind = 3;
                                f.d = x;
                                None
                            }
                            Leaf::Str(s, e) => {
                                f.kind = 4;
                                f.bytes = s.as_ptr().cast();
                                f.len = s.len();
                                f.option = encoding_code(e);
                                None
                            }
                            Leaf::Blob(b) => {
                                f.kind = 5;
                                f.bytes = b.as_ptr().cast();
                                f.len = b.len();
                                None
                            }
                            Leaf::Big { .. } => {
                                f.kind = 6;
                                None
                            }
                        };
                        if let Some(l) = label {
                            f.label = l.as_ptr().cast();
                            f.label_len = l.len();
                        }
                    }
                    Step::Begin { kind, len, option } => {
                        f.kind = match kind {
                            Compound::Struct => 7,
                            Compound::Array => 8,
                            Compound::Sequence => 9,
                            Compound::Variant => 10,
                            Compound::Optional => 11,
                        };
                        f.count = len;
                        f.option = option;
                    }
                    Step::End(_) => f.kind = 12,
                }
                // SAFETY: `count < cap` entries of `fields` are writable.
                unsafe { fields.add(count).write(f) };
            }
            count += 1;
            ControlFlow::Continue(())
        });
        // SAFETY: checked not NULL: writable.
        unsafe { *n = count };
        if count > cap {
            return fail(
                REEF_ERR_RANGE,
                format!("the scope has {count} fields, {cap} were given room"),
            );
        }
        REEF_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        let (s, c) = parse_path("payload.seq[2].x").unwrap();
        assert_eq!(s, Some(SCOPE_PAYLOAD));
        assert_eq!(c, [Comp::Name("seq"), Comp::Index(2), Comp::Name("x")]);
        let (s, c) = parse_path("prev_tid").unwrap();
        assert_eq!((s, c), (None, vec![Comp::Name("prev_tid")]));
        for bad in [
            "",
            ".a",
            "a.",
            "a[",
            "a[x]",
            "a]b",
            "payload",
            "payload.[1]",
            "a..b",
        ] {
            assert!(parse_path(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn bad_handles_are_refused_without_a_crash() {
        let mut v = 0u64;
        // SAFETY: the calls under test take any pointer.
        unsafe {
            assert_eq!(
                reef_event_uint(std::ptr::null(), c"a".as_ptr(), &mut v),
                REEF_ERR_NULL
            );
            let garbage = 0x1234usize as *const reef_reader;
            assert_eq!(
                reef_event_uint(garbage, c"a".as_ptr(), &mut v),
                REEF_ERR_HANDLE
            );
            assert_eq!(reef_reader_close(garbage as *mut _), REEF_ERR_HANDLE);
            let mut r = std::ptr::null_mut();
            let p = [c"/nonexistent/trace".as_ptr()];
            assert_eq!(
                reef_reader_open(p.as_ptr(), 1, std::ptr::null(), &mut r),
                REEF_ERR_OPEN
            );
            assert!(r.is_null());
            let msg = CStr::from_ptr(reef_error_message())
                .to_string_lossy()
                .into_owned();
            assert!(msg.contains("/nonexistent/trace"), "{msg}");
        }
    }
}
