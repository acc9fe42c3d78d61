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

    /// A string or text field as text (invalid UTF-8 replaced; text arrays
    /// stop at their first NUL, as babeltrace2 shows them).
    pub fn as_str(&self) -> Option<std::borrow::Cow<'a, str>> {
        self.as_bytes().map(|b| {
            let b = b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n]);
            String::from_utf8_lossy(b)
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

#[derive(Debug, Clone, Copy)]
struct Loc {
    scope: u8,
    /// The member's node in the scope's plan.
    node: u32,
    /// Position of the member among the root's members.
    member: u32,
    /// Index of its first value in the scope's values, when fixed.
    fixed: Option<u32>,
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
                let loc = *self
                    .cache
                    .entry(key)
                    .or_insert_with(|| locate(cur, &self.name, self.scopes));
                self.last = Some((key, loc));
                loc
            }
        }?;
        let (plan, values) = scope(cur, loc.scope);
        let idx = match loc.fixed {
            Some(i) => i as usize,
            None => member_index(plan, values, loc.member)?,
        };
        scalar(plan, loc.node, values, idx, cur.data())
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
        &self.event_class().name
    }

    /// The current event's time in nanoseconds from its clock's origin, if
    /// its stream has a clock.
    pub fn event_ns(&self) -> Option<i64> {
        let ci = self.trace.class.streams[self.stream].clock?;
        self.trace.class.meta.clocks[ci].ns_from_origin(self.event.ts?)
    }
}

fn scope(cur: &StreamCursor, s: u8) -> (&Plan, &[Value]) {
    let sp = &cur.trace.class.streams[cur.stream];
    let ev = &cur.event;
    match s {
        HEADER => (&sp.event_header, ev.header()),
        COMMON => (&sp.event_common_context, ev.common_context()),
        SPECIFIC => (&sp.events[ev.event].context, ev.specific_context()),
        PAYLOAD => (&sp.events[ev.event].payload, ev.payload()),
        _ => (&sp.packet_context, &cur.packet_context),
    }
}

fn locate(cur: &StreamCursor, name: &str, scopes: Scopes) -> Option<Loc> {
    let order: &[u8] = match scopes {
        Scopes::Any => &[PAYLOAD, SPECIFIC, COMMON, HEADER, PACKET],
        Scopes::Payload => &[PAYLOAD],
        Scopes::Context => &[SPECIFIC, COMMON],
        Scopes::EventHeader => &[HEADER],
        Scopes::PacketContext => &[PACKET],
    };
    for &s in order {
        let (plan, _) = scope(cur, s);
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
        Node::Int { .. } | Node::BigInt { .. } | Node::Float { .. } | Node::String => Some(1),
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
        Node::Sequence { .. } | Node::Variant { .. } => None,
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
        Node::Int { .. } | Node::BigInt { .. } | Node::Float { .. } | Node::String => Some(idx + 1),
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
        Node::Int { .. } | Node::Float { .. } | Node::String => match *values.get(idx)? {
            Value::U(u) => Some(FieldVal::U(u)),
            Value::I(i) => Some(FieldVal::I(i)),
            Value::F(f) => Some(FieldVal::F(f)),
            ref v @ Value::Bytes { .. } => bytes(v),
            _ => None,
        },
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
                let plan = &sp.events[cur.event.event].payload;
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
}
