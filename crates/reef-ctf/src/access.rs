//! Named access to the current event of a [`StreamCursor`]: its name, its
//! time, and its fields looked up by name, for commands that compute over
//! events (filters, statistics, analyses) rather than print them.
//!
//! A [`Field`] is built once per name and caches, per (trace, stream class,
//! event class), where that name lives: which scope, which plan node, and —
//! when every member before it has a fixed number of values — its index in
//! the scope's flattened values, so a lookup is then a hash probe (skipped
//! when the event class repeats) and an index. Otherwise the scope's top-level
//! members are walked, skipping the values of the ones before it.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use reef_ctf::{access::Field, Item, StreamCursor, Trace};
//! let trace = Arc::new(Trace::open("kernel-trace".as_ref())?);
//! let mut cur = StreamCursor::new(trace, 0);
//! let mut prev_tid = Field::new("prev_tid");
//! while let Some(item) = cur.next()? {
//!     if item == Item::Event && cur.event_name() == "sched_switch" {
//!         println!("{:?}", prev_tid.get(&cur).and_then(|v| v.as_i64()));
//!     }
//! }
//! # Ok::<(), reef_ctf::Error>(())
//! ```
//!
//! Names match as printed: a metadata name's one leading `_` may be left
//! out (`prev_comm` finds `_prev_comm`), as babeltrace2 shows it.
//!
//! Only scalar fields have a [`FieldVal`]: integers (enumerations give their
//! integer), floats, strings and text arrays/sequences. A variant gives the
//! value of its selected option when that is scalar. Structures and
//! non-text arrays/sequences give `None`, as does a name no scope has.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::decode::Value;
use crate::model::EventClass;
use crate::plan::{Node, Plan};
use crate::stream::StreamCursor;
use crate::trace::StreamPlans;

/// A scalar field value borrowed from the cursor's stream data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldVal<'a> {
    U(u64),
    I(i64),
    F(f64),
    Str(&'a [u8]),
}

impl<'a> FieldVal<'a> {
    /// The value as a signed integer: integers that fit, `None` otherwise.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            FieldVal::U(u) => i64::try_from(u).ok(),
            FieldVal::I(i) => Some(i),
            _ => None,
        }
    }

    /// The value as an unsigned integer: non-negative integers, `None` otherwise.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            FieldVal::U(u) => Some(u),
            FieldVal::I(i) => u64::try_from(i).ok(),
            _ => None,
        }
    }

    /// Any integer or float as a float.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            FieldVal::U(u) => Some(u as f64),
            FieldVal::I(i) => Some(i as f64),
            FieldVal::F(f) => Some(f),
            FieldVal::Str(_) => None,
        }
    }

    /// The bytes of a string or text field.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            FieldVal::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A string or text field's bytes as [`FieldVal::as_str`] shows them
    /// (text arrays stop at their first NUL), not checked as UTF-8.
    pub fn as_text_bytes(&self) -> Option<&'a [u8]> {
        self.as_bytes()
            .map(|b| crate::prog::find_nul(b).map_or(b, |n| &b[..n]))
    }

    /// A string or text field as text (invalid UTF-8 replaced; text arrays
    /// stop at their first NUL, as babeltrace2 shows them).
    pub fn as_str(&self) -> Option<std::borrow::Cow<'a, str>> {
        self.as_text_bytes().map(|b| match std::str::from_utf8(b) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(b),
        })
    }
}

/// The scopes a [`Field`] searches, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scopes {
    /// Payload, event specific context, event common context, event header,
    /// packet context: the first scope that has a top-level member of that
    /// name wins.
    Any,
    Payload,
    /// Specific then common event context.
    Context,
    EventHeader,
    PacketContext,
}

/// Index of a scope in `EventData::values` order; `PACKET` is the packet context.
const HEADER: u8 = 0;
const COMMON: u8 = 1;
const SPECIFIC: u8 = 2;
const PAYLOAD: u8 = 3;
const PACKET: u8 = 4;

/// A member's place among a scope's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loc {
    scope: u8,
    /// The member's node in the scope's plan.
    node: u32,
    /// Position of the member among the root's members.
    member: u32,
    /// Index of its first value in the scope's values, when fixed.
    fixed: Option<u32>,
}

impl Loc {
    /// The member's value in `cur`'s current event.
    #[inline]
    fn value<'c>(&self, cur: &'c StreamCursor) -> Option<FieldVal<'c>> {
        let sp = &cur.trace.class.streams[cur.stream];
        let plan = scope_plan(sp, cur.event.event, self.scope);
        let values = scope_values(cur, self.scope);
        let idx = match self.fixed {
            Some(i) => i as usize,
            None => member_index(plan, values, self.member)?,
        };
        scalar(plan, self.node, values, idx, cur.data())
    }
}

type Key = (usize, usize, usize);

/// A field name, looked up in the current event of any cursor.
#[derive(Debug, Clone)]
pub struct Field {
    name: String,
    scopes: Scopes,
    /// Keyed by small integers: a cheap hash, looked up on every event
    /// whose class differs from the previous one's.
    cache: FxHashMap<Key, Option<Loc>>,
    last: Option<(Key, Option<Loc>)>,
}

impl Field {
    /// A field searched in every scope (see [`Scopes::Any`]).
    pub fn new(name: &str) -> Field {
        Field::in_scopes(name, Scopes::Any)
    }

    pub fn in_scopes(name: &str, scopes: Scopes) -> Field {
        Field {
            name: name.to_string(),
            scopes,
            cache: FxHashMap::default(),
            last: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field's value in `cur`'s current event (call after
    /// [`StreamCursor::next`] returned [`crate::Item::Event`]).
    pub fn get<'c>(&mut self, cur: &'c StreamCursor) -> Option<FieldVal<'c>> {
        let key = (
            Arc::as_ptr(&cur.trace) as usize,
            cur.stream,
            cur.event.event,
        );
        let loc = match self.last {
            Some((k, loc)) if k == key => loc,
            _ => {
                let loc = *self.cache.entry(key).or_insert_with(|| {
                    let sp = &cur.trace.class.streams[cur.stream];
                    locate(sp, cur.event.event, &self.name, self.scopes)
                });
                self.last = Some((key, loc));
                loc
            }
        }?;
        loc.value(cur)
    }

    /// Where this field lies in the events of class `event` (index into
    /// the stream class's events) of stream class `stream` of `trace`, to
    /// read it from many events without looking it up again. With `raw`,
    /// the events of that class are read without their values
    /// ([`StreamCursor::values_of`] does not mark it): a field of their
    /// body is then found in their bytes, when it can be.
    pub fn locate(&self, trace: &crate::Trace, stream: usize, event: usize, raw: bool) -> Located {
        let sp = &trace.class.streams[stream];
        // The class's plans, compiled if they were not (a class whose
        // plans cannot be compiled has no field: its events fail to decode).
        let _ = trace.class.event_plans(stream, event);
        let Some(loc) = locate(sp, event, &self.name, self.scopes) else {
            return Located::Absent;
        };
        if !raw || loc.scope == PACKET {
            return Located::At(FieldLoc::Values(loc));
        }
        if loc.scope != PAYLOAD && loc.scope != SPECIFIC {
            return Located::NeedsValues;
        }
        match raw_field(sp, event, loc) {
            Some(Some(f)) => Located::At(FieldLoc::Raw(f)),
            // Not a scalar: `get` would give nothing.
            Some(None) => Located::Absent,
            None => Located::NeedsValues,
        }
    }
}

/// What [`Field::locate`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Located {
    /// No scope has the field (or it is not a scalar): no value.
    Absent,
    At(FieldLoc),
    /// The field is there, but only the event's values can give it (its
    /// class must be read with its values).
    NeedsValues,
}

/// A field's place in the events of one class ([`Field::locate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldLoc {
    /// Among the values the cursor keeps (the packet context's, or those
    /// of an event whose values are kept).
    Values(Loc),
    /// In the bytes of the event's body.
    Raw(RawField),
}

impl FieldLoc {
    /// Whether the field is in the packet context (the same for every
    /// event of a packet).
    pub fn in_packet(&self) -> bool {
        matches!(self, FieldLoc::Values(l) if l.scope == PACKET)
    }

    /// The field's value in an event of its class, the current event of
    /// `cur` or one that [`StreamCursor::skim_bodies`] crossed in the
    /// current packet, whose body lies at `body`.
    #[inline(always)]
    pub fn get<'c>(&self, cur: &'c StreamCursor, body: RawBody) -> Option<FieldVal<'c>> {
        match self {
            FieldLoc::Values(loc) => loc.value(cur),
            FieldLoc::Raw(f) => f.get(cur.data(), body),
        }
    }
}

/// Where an event's body (specific context, then payload) lies in the
/// bytes of its file: byte offsets of its start and of the event's end,
/// and where its packet starts, modulo 8 (alignment is relative to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawBody {
    pub body: usize,
    pub end: usize,
    pub packet_mod8: u8,
}

impl RawBody {
    /// The body of `cur`'s current event.
    pub fn of(cur: &StreamCursor) -> RawBody {
        RawBody {
            body: cur.event.body as usize,
            end: cur.event.end as usize,
            packet_mod8: (cur.packet.offset & 7) as u8,
        }
    }

    /// `at` aligned to `align` bytes (a power of two, at most 8) relative
    /// to the packet.
    #[inline(always)]
    fn align(self, at: usize, align: u8) -> usize {
        at + (usize::from(self.packet_mod8).wrapping_sub(at) & (usize::from(align) - 1))
    }
}

/// Where a field lies from the start of an event's body: the body's
/// start aligned to `a0` bytes, `pre` bytes on, aligned to `a1` bytes,
/// `off` bytes on (see [`RawPlace::at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPlace {
    a0: u8,
    pre: u32,
    a1: u8,
    off: u32,
    /// `pre + off` when no alignment moves the field (`a0` and `a1` 1),
    /// else `u32::MAX`: the common case is one add.
    fixed: u32,
}

impl RawPlace {
    /// The body's first byte.
    pub const BODY: RawPlace = RawPlace::new(1, 0, 1, 0);

    const fn new(a0: u8, pre: u32, a1: u8, off: u32) -> RawPlace {
        let fixed = match (a0, a1, pre.checked_add(off)) {
            (1, 1, Some(f)) => f,
            _ => u32::MAX,
        };
        RawPlace {
            a0,
            pre,
            a1,
            off,
            fixed,
        }
    }

    /// The field's byte offset in the file for the body at `b`.
    #[inline(always)]
    pub fn at(&self, b: RawBody) -> usize {
        if self.fixed != u32::MAX {
            return b.body + self.fixed as usize;
        }
        b.align(b.align(b.body, self.a0) + self.pre as usize, self.a1) + self.off as usize
    }
}

/// A scalar field of an event class whose body a skim crosses
/// ([`crate::prog::Skim`]: fields of a fixed size and strings), at a
/// fixed place from the start of the body (before its first string, past
/// at most two alignments) or from its end (after its last string and
/// the last alignment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawField {
    from_end: bool,
    place: RawPlace,
    kind: RawKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RawKind {
    Int {
        bytes: u8,
        signed: bool,
        le: bool,
    },
    /// A text array of this many bytes.
    Text(u32),
    /// A NUL-terminated string.
    Str,
}

impl RawField {
    /// For a little-endian integer at a fixed place from the start of the
    /// body: that place, its size in bytes and whether it is signed (what
    /// a reader's fast path for integers needs).
    pub fn le_int_from_start(&self) -> Option<(RawPlace, u8, bool)> {
        match self.kind {
            RawKind::Int { bytes, signed, le } if le && !self.from_end => {
                Some((self.place, bytes, signed))
            }
            _ => None,
        }
    }

    /// For a text array at a fixed place from the start of the body:
    /// where its bytes lie (what a reader's fast path for names needs).
    pub fn text_from_start(&self) -> Option<RawText> {
        match self.kind {
            RawKind::Text(len) if !self.from_end => Some(RawText {
                place: self.place,
                len,
            }),
            _ => None,
        }
    }

    /// The value in the bytes of an event's body: what the decoder would
    /// have given (`None` if the bytes are not there).
    #[inline(always)]
    pub fn get<'d>(&self, data: &'d [u8], b: RawBody) -> Option<FieldVal<'d>> {
        let at = if self.from_end {
            b.end.checked_sub(self.place.off as usize)?
        } else {
            self.place.at(b)
        };
        match self.kind {
            RawKind::Int { bytes, signed, le } => {
                // One load of 8 bytes where the data has them, the
                // integer's bytes kept by shifts.
                let shift = 64 - u32::from(bytes) * 8;
                let raw = match data.get(at..).and_then(|d| d.first_chunk::<8>()) {
                    Some(w) if le => (u64::from_le_bytes(*w) << shift) >> shift,
                    Some(w) => u64::from_be_bytes(*w) >> shift,
                    None => {
                        let w = data.get(at..at + usize::from(bytes))?;
                        let fold = |acc: u64, (i, &b): (usize, &u8)| {
                            let k = if le { i } else { w.len() - 1 - i };
                            acc | u64::from(b) << (8 * k)
                        };
                        w.iter().enumerate().fold(0, fold)
                    }
                };
                Some(if signed {
                    FieldVal::I(((raw << shift) as i64) >> shift)
                } else {
                    FieldVal::U(raw)
                })
            }
            RawKind::Text(len) => data.get(at..at + len as usize).map(FieldVal::Str),
            RawKind::Str => {
                let hay = data.get(at..b.end)?;
                memchr::memchr(0, hay).map(|n| FieldVal::Str(&hay[..n]))
            }
        }
    }
}

/// A text array at a fixed place from the start of an event's body
/// ([`RawField::text_from_start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawText {
    place: RawPlace,
    len: u32,
}

impl RawText {
    /// Its bytes up to the first NUL in the body at `b`, as
    /// [`FieldVal::as_text_bytes`] gives them from [`RawField::get`]
    /// (`None` if the bytes are not there).
    #[inline(always)]
    pub fn get(self, data: &[u8], b: RawBody) -> Option<&[u8]> {
        let at = self.place.at(b);
        let t = data.get(at..at + self.len as usize)?;
        Some(crate::prog::find_nul(t).map_or(t, |n| &t[..n]))
    }
}

/// The [`RawField`] of the member `loc` (of the payload or specific
/// context) of event class `event`: `None` if the class has no skim or
/// the member is not at a fixed place from the body's start or end;
/// `Some(None)` if it is not a scalar.
fn raw_field(sp: &StreamPlans, event: usize, loc: Loc) -> Option<Option<RawField>> {
    let ep = sp.event(event);
    ep.skim.as_ref()?;
    // The member's place: (part, offset in it) of its first byte.
    let mut found = None;
    let parts = crate::prog::skim_layout(
        &[&ep.context, &ep.payload],
        |k, plan, m, part, off, node| {
            if [SPECIFIC, PAYLOAD][k] == loc.scope && m == loc.member {
                found = Some((part, off, raw_kind(plan, node)));
            }
        },
    )?;
    let (part, off, kind) = found?;
    let Some(kind) = kind? else {
        return Some(None);
    };
    let last = parts.len() - 1;
    let align = |k: usize| u8::try_from(parts[k].align).ok();
    let place = RawPlace::new;
    let (from_end, place) = if part == 0 {
        (false, place(align(0)?, 0, 1, off))
    } else if part == 1 && !parts[1].after_str {
        (false, place(align(0)?, parts[0].bytes, align(1)?, off))
    } else if part == last && kind != RawKind::Str {
        (true, place(1, 0, 1, parts[last].bytes - off))
    } else {
        return None;
    };
    Some(Some(RawField {
        from_end,
        place,
        kind,
    }))
}

/// How a member of a skimmed body reads as a scalar: `Some(None)` if it
/// is not one, `None` if it is one that is not read in bytes here (a float,
/// an integer of an odd size).
fn raw_kind(plan: &Plan, n: u32) -> Option<Option<RawKind>> {
    match plan.nodes[n as usize] {
        Node::Int {
            size, signed, le, ..
        } if matches!(size, 8 | 16 | 32 | 64) => Some(Some(RawKind::Int {
            bytes: (size / 8) as u8,
            signed,
            le,
        })),
        Node::Array {
            length, text: true, ..
        } => Some(Some(RawKind::Text(u32::try_from(length).ok()?))),
        Node::String => Some(Some(RawKind::Str)),
        Node::Int { .. } | Node::Float { .. } => None,
        _ => Some(None),
    }
}

impl StreamCursor {
    /// The current event's class.
    pub fn event_class(&self) -> &EventClass {
        let sp = &self.trace.class.streams[self.stream];
        &self.trace.class.meta.streams[sp.class].events[sp.events[self.event.event].class]
    }

    /// The current event's name.
    pub fn event_name(&self) -> &str {
        self.class_name(self.event.event)
    }

    /// The name of event class `event` (index into the stream class's
    /// events, as [`crate::EventData::event`]).
    pub fn class_name(&self, event: usize) -> &str {
        let sp = &self.trace.class.streams[self.stream];
        &self.trace.class.meta.streams[sp.class].events[sp.events[event].class].name
    }

    /// The current event's time in nanoseconds from its clock's origin, if
    /// its stream has a clock.
    pub fn event_ns(&self) -> Option<i64> {
        let ci = self.trace.class.streams[self.stream].clock?;
        self.trace.class.meta.clocks[ci].ns_from_origin(self.event.ts?)
    }
}

fn scope_plan(sp: &StreamPlans, event: usize, s: u8) -> &Plan {
    match s {
        HEADER => &sp.event_header,
        COMMON => &sp.event_common_context,
        SPECIFIC => &sp.event(event).context,
        PAYLOAD => &sp.event(event).payload,
        _ => &sp.packet_context,
    }
}

fn scope_values(cur: &StreamCursor, s: u8) -> &[Value] {
    let ev = &cur.event;
    match s {
        HEADER => ev.header(),
        COMMON => ev.common_context(),
        SPECIFIC => ev.specific_context(),
        PAYLOAD => ev.payload(),
        _ => &cur.packet_context,
    }
}

fn locate(sp: &StreamPlans, event: usize, name: &str, scopes: Scopes) -> Option<Loc> {
    let order: &[u8] = match scopes {
        Scopes::Any => &[PAYLOAD, SPECIFIC, COMMON, HEADER, PACKET],
        Scopes::Payload => &[PAYLOAD],
        Scopes::Context => &[SPECIFIC, COMMON],
        Scopes::EventHeader => &[HEADER],
        Scopes::PacketContext => &[PACKET],
    };
    for &s in order {
        let plan = scope_plan(sp, event, s);
        let Some(root) = plan.root else { continue };
        let Node::Struct { first, count, .. } = plan.nodes[root as usize] else {
            continue;
        };
        let mut fixed = Some(0u32);
        for m in 0..count {
            let i = (first + m) as usize;
            let node = plan.children[i];
            let n = &plan.names[i];
            if n == name || n.strip_prefix('_') == Some(name) {
                return Some(Loc {
                    scope: s,
                    node,
                    member: m,
                    fixed,
                });
            }
            fixed = fixed.and_then(|f| Some(f + fixed_count(plan, node)?));
        }
    }
    None
}

/// Number of values node `n` always contributes, or `None` if it varies.
fn fixed_count(plan: &Plan, n: u32) -> Option<u32> {
    match plan.nodes[n as usize] {
        Node::Int { .. }
        | Node::BigInt { .. }
        | Node::Float { .. }
        | Node::String
        | Node::VarInt { .. }
        | Node::Bytes { .. } => Some(1),
        Node::Struct { first, count, .. } => (first..first + count)
            .map(|i| fixed_count(plan, plan.children[i as usize]))
            .try_fold(0u32, |acc, c| acc.checked_add(c?)),
        Node::Array {
            length, elem, text, ..
        } => {
            if length == 0 {
                Some(0)
            } else if text {
                Some(1)
            } else {
                u32::try_from(length)
                    .ok()?
                    .checked_mul(fixed_count(plan, elem)?)
            }
        }
        Node::Sequence { .. } | Node::Variant { .. } | Node::Optional { .. } => None,
    }
}

/// Index of the first value of the root's member `member`, walking the
/// values of the members before it.
fn member_index(plan: &Plan, values: &[Value], member: u32) -> Option<usize> {
    let Node::Struct { first, .. } = plan.nodes[plan.root? as usize] else {
        return None;
    };
    let mut idx = 0;
    for m in 0..member {
        idx = skip(plan, plan.children[(first + m) as usize], values, idx)?;
    }
    Some(idx)
}

/// Index just past the values of node `n`, whose first value is at `idx`.
fn skip(plan: &Plan, n: u32, values: &[Value], idx: usize) -> Option<usize> {
    match plan.nodes[n as usize] {
        Node::Int { .. }
        | Node::BigInt { .. }
        | Node::Float { .. }
        | Node::String
        | Node::VarInt { .. }
        | Node::Bytes { .. } => Some(idx + 1),
        Node::Optional { child, .. } => match values.get(idx)? {
            Value::Opt(0) => Some(idx + 1),
            Value::Opt(_) => skip(plan, child, values, idx + 1),
            _ => None,
        },
        Node::Struct { first, count, .. } => {
            let mut i = idx;
            for c in first..first + count {
                i = skip(plan, plan.children[c as usize], values, i)?;
            }
            Some(i)
        }
        Node::Array {
            length, elem, text, ..
        } => elements(plan, elem, length, text, values, idx),
        Node::Sequence { elem, text, .. } => match values.get(idx)? {
            Value::Len(len) => elements(plan, elem, *len, text, values, idx + 1),
            _ => None,
        },
        Node::Variant { first, .. } => match values.get(idx)? {
            Value::Opt(o) => skip(plan, plan.children[(first + o) as usize], values, idx + 1),
            _ => None,
        },
    }
}

fn elements(
    plan: &Plan,
    elem: u32,
    len: u64,
    text: bool,
    values: &[Value],
    idx: usize,
) -> Option<usize> {
    if len == 0 {
        return Some(idx);
    }
    if text {
        return Some(idx + 1);
    }
    if let Some(c) = fixed_count(plan, elem) {
        let end = idx.checked_add(usize::try_from(len).ok()?.checked_mul(c as usize)?)?;
        return (end <= values.len()).then_some(end);
    }
    let mut i = idx;
    for _ in 0..len {
        i = skip(plan, elem, values, i)?;
    }
    Some(i)
}

/// The scalar value of node `n` whose first value is `values[idx]`.
fn scalar<'d>(
    plan: &Plan,
    n: u32,
    values: &[Value],
    idx: usize,
    data: &'d [u8],
) -> Option<FieldVal<'d>> {
    let bytes = |v: &Value| match *v {
        Value::Bytes { off, len } => data.get(off..off.checked_add(len)?).map(FieldVal::Str),
        _ => None,
    };
    match plan.nodes[n as usize] {
        Node::Int { .. } | Node::Float { .. } | Node::String | Node::VarInt { .. } => {
            match *values.get(idx)? {
                Value::U(u) => Some(FieldVal::U(u)),
                Value::I(i) => Some(FieldVal::I(i)),
                Value::F(f) => Some(FieldVal::F(f)),
                ref v @ Value::Bytes { .. } => bytes(v),
                _ => None,
            }
        }
        Node::Array { length, text, .. } if text => {
            if length == 0 {
                Some(FieldVal::Str(&[]))
            } else {
                bytes(values.get(idx)?)
            }
        }
        Node::Sequence { text: true, .. } => match values.get(idx)? {
            Value::Len(0) => Some(FieldVal::Str(&[])),
            Value::Len(_) => bytes(values.get(idx + 1)?),
            _ => None,
        },
        Node::Bytes { text: Some(_), .. } => bytes(values.get(idx)?),
        Node::Optional { child, .. } => match values.get(idx)? {
            Value::Opt(1) => scalar(plan, child, values, idx + 1, data),
            _ => None,
        },
        Node::Variant { first, .. } => match values.get(idx)? {
            Value::Opt(o) => scalar(
                plan,
                plan.children[(first + o) as usize],
                values,
                idx + 1,
                data,
            ),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Item;
    use std::path::PathBuf;

    fn conformance(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance")
            .join(rel)
    }

    /// Every sched_switch of a kernel trace: the fields read by name agree
    /// with the values found by walking the payload by hand (member order
    /// from the metadata), and the name lookup finds packet context fields.
    #[test]
    fn kernel_fields_by_name() {
        let dir = conformance("kernel-traces/bug446190");
        if !dir.exists() {
            eprintln!("skipping: {} missing", dir.display());
            return;
        }
        let trace = Arc::new(crate::Trace::open(&dir).unwrap());
        let mut prev_comm = Field::new("prev_comm");
        let mut prev_tid = Field::new("prev_tid");
        let mut next_tid = Field::new("next_tid");
        let mut cpu = Field::new("cpu_id");
        let mut nope = Field::new("no_such_field");
        let mut switches = 0;
        for s in 0..trace.sources.len() {
            let mut cur = StreamCursor::new(trace.clone(), s);
            while let Some(item) = cur.next().unwrap() {
                if item != Item::Event {
                    continue;
                }
                assert!(nope.get(&cur).is_none());
                assert!(cpu.get(&cur).and_then(|v| v.as_u64()).is_some());
                if cur.event_name() != "sched_switch" {
                    continue;
                }
                switches += 1;
                let sp = &cur.trace.class.streams[cur.stream];
                let plan = &sp.event(cur.event.event).payload;
                let Node::Struct { first, count, .. } = plan.nodes[plan.root.unwrap() as usize]
                else {
                    panic!("payload is not a struct")
                };
                let names: Vec<&str> = (first..first + count)
                    .map(|i| plan.names[i as usize].trim_start_matches('_'))
                    .collect();
                // sched_switch's payload is all scalars: value i is member i.
                let p = cur.event.payload();
                assert_eq!(p.len(), names.len());
                let at = |n: &str| p[names.iter().position(|&m| m == n).unwrap()];
                let Value::Bytes { off, len } = at("prev_comm") else {
                    panic!("prev_comm not text")
                };
                assert_eq!(
                    prev_comm.get(&cur).unwrap(),
                    FieldVal::Str(&cur.data()[off..off + len])
                );
                let as_i = |v: Value| match v {
                    Value::I(i) => i,
                    Value::U(u) => u as i64,
                    _ => panic!("not an integer"),
                };
                assert_eq!(
                    prev_tid.get(&cur).unwrap().as_i64(),
                    Some(as_i(at("prev_tid")))
                );
                assert_eq!(
                    next_tid.get(&cur).unwrap().as_i64(),
                    Some(as_i(at("next_tid")))
                );
                assert!(cur.event_ns().is_some());
            }
        }
        assert!(switches > 100, "only {switches} sched_switch events");
    }

    /// Fields after a sequence are found by walking (no fixed index).
    #[test]
    fn field_after_sequence() {
        let meta = r#"
            /* CTF 1.8 */
            typealias integer { size = 8; align = 8; signed = false; } := u8;
            typealias integer { size = 32; align = 8; signed = false; } := u32;
            trace { major = 1; minor = 8; byte_order = le; };
            event {
                name = "ev";
                fields := struct {
                    u8 n;
                    u32 seq[n];
                    string s;
                    u8 after;
                };
            };
        "#;
        let tmp = std::env::temp_dir().join(format!("reef-access-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("metadata"), meta).unwrap();
        let mut data = vec![2u8];
        data.extend_from_slice(&7u32.to_le_bytes());
        data.extend_from_slice(&9u32.to_le_bytes());
        data.extend_from_slice(b"hi\0");
        data.push(42);
        data.push(0); // second event: empty sequence
        data.extend_from_slice(b"\0");
        data.push(43);
        std::fs::write(tmp.join("stream"), &data).unwrap();
        let trace = Arc::new(crate::Trace::open(&tmp).unwrap());
        let mut cur = StreamCursor::new(trace, 0);
        let mut after = Field::in_scopes("after", Scopes::Payload);
        let mut s = Field::new("s");
        let mut seq = Field::new("seq");
        let mut got = Vec::new();
        while let Some(item) = cur.next().unwrap() {
            assert_eq!(item, Item::Event);
            assert_eq!(cur.event_name(), "ev");
            assert!(seq.get(&cur).is_none(), "a non-text sequence is not scalar");
            got.push((
                after.get(&cur).unwrap().as_u64().unwrap(),
                s.get(&cur).unwrap().as_str().unwrap().into_owned(),
            ));
        }
        std::fs::remove_dir_all(&tmp).ok();
        assert_eq!(got, vec![(42, "hi".to_string()), (43, String::new())]);
    }

    /// When field `n` of the current event of `skim` is a text array read
    /// by [`RawText`]: checks that it gives the bytes `value` (what the
    /// decoder gives) shows, and returns 1; else 0.
    fn same_text(
        trace: &crate::Trace,
        skim: &StreamCursor,
        n: &str,
        value: Option<FieldVal>,
    ) -> usize {
        let loc = Field::new(n).locate(trace, skim.stream, skim.event.event, true);
        let Located::At(FieldLoc::Raw(r)) = loc else {
            return 0;
        };
        let Some(t) = r.text_from_start() else {
            return 0;
        };
        let text = t.get(skim.data(), RawBody::of(skim));
        assert_eq!(text, value.and_then(|v| v.as_text_bytes()), "text {n}");
        assert!(text.is_some(), "text {n}");
        1
    }

    /// Every field of a skimmed class read in the bytes of its events
    /// (before and after a string, signed, big-endian, text) gives what
    /// its values give.
    #[test]
    fn raw_fields_match_values() {
        let meta = r#"
            /* CTF 1.8 */
            typealias integer { size = 8; align = 8; signed = false; } := u8;
            typealias integer { size = 8; align = 8; signed = true; encoding = UTF8; } := ch;
            typealias integer { size = 16; align = 8; signed = true; byte_order = be; } := i16be;
            typealias integer { size = 32; align = 8; signed = false; } := u32;
            typealias integer { size = 64; align = 8; signed = true; } := i64;
            trace { major = 1; minor = 8; byte_order = le; };
            event {
                name = "ev";
                fields := struct {
                    u8 _a;
                    ch t[4];
                    i16be b;
                    string s;
                    u32 after;
                    i64 neg;
                    struct { u8 x; u8 y; } st;
                };
            };
        "#;
        let tmp = std::env::temp_dir().join(format!("reef-access-raw-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("metadata"), meta).unwrap();
        let mut data = Vec::new();
        for (i, text) in [&b"ab\0\0"[..], b"wxyz"].iter().enumerate() {
            data.push(7 + i as u8);
            data.extend_from_slice(text);
            data.extend_from_slice(&(-300i16 + i as i16).to_be_bytes());
            data.extend_from_slice(if i == 0 { b"hello\0" } else { b"\0" });
            data.extend_from_slice(&(0xdead_beefu32 + i as u32).to_le_bytes());
            data.extend_from_slice(&(-5i64 - i as i64).to_le_bytes());
            data.extend_from_slice(&[1, 2]);
        }
        std::fs::write(tmp.join("stream"), &data).unwrap();
        let trace = Arc::new(crate::Trace::open(&tmp).unwrap());
        let mut full = StreamCursor::new(trace.clone(), 0);
        let mut skim = StreamCursor::new(trace.clone(), 0);
        skim.skip_values(true);
        let names = ["a", "t", "b", "s", "after", "neg", "st", "none"];
        let (mut seen, mut texts) = (0, 0);
        while let Some(item) = full.next().unwrap() {
            assert_eq!(item, Item::Event);
            assert_eq!(skim.next_skimmed().unwrap(), Some(Item::Event));
            assert!(skim.event.values.is_empty());
            for n in names {
                let f = Field::new(n);
                let by_values = Field::new(n).get(&full);
                let got = match f.locate(&trace, skim.stream, skim.event.event, true) {
                    Located::At(loc) => loc.get(&skim, RawBody::of(&skim)),
                    Located::Absent => None,
                    Located::NeedsValues => panic!("{n}: not found in bytes"),
                };
                assert_eq!(got, by_values, "field {n}");
                if n != "st" && n != "none" {
                    assert!(got.is_some(), "field {n}");
                }
                texts += same_text(&trace, &skim, n, got);
            }
            seen += 1;
        }
        std::fs::remove_dir_all(&tmp).ok();
        assert_eq!(seen, 2);
        // (`t` in each event)
        assert_eq!(texts, 2);
    }

    /// Fields behind alignments that vary with where the event lies (a
    /// one-byte header, events of other sizes between): each read in the
    /// bytes, across the specific context's and the payload's alignments
    /// and after a string, gives what its values give.
    #[test]
    fn raw_fields_across_alignments_match_values() {
        let meta = r#"
            /* CTF 1.8 */
            typealias integer { size = 8; align = 8; signed = false; } := u8;
            typealias integer { size = 8; align = 8; signed = true; encoding = UTF8; } := ch;
            typealias integer { size = 16; align = 16; signed = false; } := u16a;
            typealias integer { size = 32; align = 32; signed = true; } := i32a;
            typealias integer { size = 64; align = 64; signed = false; } := u64a;
            trace { major = 1; minor = 8; byte_order = le; };
            stream { event.header := struct { u8 id; }; };
            event {
                name = "ev";
                id = 0;
                context := struct { u8 c; };
                fields := struct {
                    ch comm[3];
                    i32a tid;
                    string s;
                    u64a y;
                    u16a x;
                };
            };
            event { name = "pad"; id = 1; fields := struct { u8 k; }; };
        "#;
        let tmp = std::env::temp_dir().join(format!("reef-access-align-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("metadata"), meta).unwrap();
        let pad = |d: &mut Vec<u8>, a: usize| d.resize(d.len().next_multiple_of(a), 0);
        let mut data = Vec::new();
        let mut evs = 0;
        for (i, pads) in [0usize, 1, 2, 3, 0, 5, 6, 7].iter().enumerate() {
            for _ in 0..*pads {
                data.extend_from_slice(&[1, 0xee]);
            }
            data.push(0);
            data.push(i as u8);
            pad(&mut data, 8);
            data.extend_from_slice(b"ab\0");
            pad(&mut data, 4);
            data.extend_from_slice(&(-(i as i32) - 1000).to_le_bytes());
            data.extend_from_slice(&b"hello"[..i % 6]);
            data.push(0);
            pad(&mut data, 8);
            data.extend_from_slice(&(u64::MAX - i as u64).to_le_bytes());
            data.extend_from_slice(&(300 + i as u16).to_le_bytes());
            evs += pads + 1;
        }
        std::fs::write(tmp.join("stream"), &data).unwrap();
        let trace = Arc::new(crate::Trace::open(&tmp).unwrap());
        let mut full = StreamCursor::new(trace.clone(), 0);
        let mut skim = StreamCursor::new(trace.clone(), 0);
        skim.skip_values(true);
        let names = ["c", "comm", "tid", "s", "y", "x", "k"];
        let (mut seen, mut texts) = (0, 0);
        while let Some(item) = full.next().unwrap() {
            assert_eq!(item, Item::Event);
            assert_eq!(skim.next_skimmed().unwrap(), Some(Item::Event));
            for n in names {
                let by_values = Field::new(n).get(&full);
                let got = match Field::new(n).locate(&trace, skim.stream, skim.event.event, true) {
                    Located::At(loc) => loc.get(&skim, RawBody::of(&skim)),
                    Located::Absent => None,
                    Located::NeedsValues => panic!("{n}: not found in bytes"),
                };
                assert_eq!(got, by_values, "field {n} of event {seen}");
                texts += same_text(&trace, &skim, n, got);
            }
            seen += 1;
        }
        std::fs::remove_dir_all(&tmp).ok();
        assert_eq!(seen, evs);
        // (`comm` in each of the 8 `ev` events)
        assert_eq!(texts, 8);
        assert!(trace.class.streams[0]
            .event_plans()
            .all(|e| e.skim.is_some()));
    }
}
