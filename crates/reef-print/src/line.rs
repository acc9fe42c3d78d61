//! Compiled lines: the text of an event class's line after its timestamp,
//! built once into literal runs and value ops.
//!
//! Everything in a pretty line except the field values depends only on the
//! event class and the options: the trace fields, the event name, the
//! separators, braces and field names. [`Builder`] formats that text once
//! (merging adjacent literals) around [`POp`]s that format the values; a
//! field whose text has a varying shape (enumerations, variants, arrays,
//! sequences, floats, big integers) is one op that hands the node to
//! [`FieldPrinter`], so every layout prints exactly as the field walk does.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use reef_ctf::plan::{Node, Plan, NONE};
use reef_ctf::{StreamCursor, Trace, Value};

use crate::fmt;
use crate::FieldPrinter;

#[derive(Debug, Clone, Copy)]
pub(crate) enum POp {
    /// `lits[start..end]`.
    Lit(u32, u32),
    /// The values that follow are scope `k`'s (packet context, common
    /// context, specific context, payload), from their first.
    Scope {
        k: u8,
        names: bool,
    },
    /// An integer (no enumeration).
    Int {
        size: u32,
        signed: bool,
        base: u32,
    },
    Str,
    /// Values of hidden fields.
    Skip(u32),
    /// Node printed by the field walk.
    Tree(u32),
    /// Hidden node whose value count varies.
    TreeSkip(u32),
    /// A text array of this many bytes.
    Text(u64),
    /// Ends the packet context's text, which is the same for every event
    /// of a packet: kept in a [`PacketText`] from its `Scope` op to here.
    PacketEnd,
}

/// The packet context's text for the packet it was formatted for.
#[derive(Default)]
pub(crate) struct PacketText {
    key: Option<PacketKey>,
    text: Vec<u8>,
}

/// Which packet a cursor is in, for caches of text formatted per packet:
/// the trace, the source, the packets read and the packet's offset. The
/// trace's allocation is kept, so that no other trace (`reef listen`
/// opens one per burst) can take its address while a key names it.
pub(crate) struct PacketKey {
    trace: Weak<Trace>,
    at: (usize, u64, u64),
}

impl PacketKey {
    pub(crate) fn of(c: &StreamCursor) -> PacketKey {
        PacketKey {
            trace: Arc::downgrade(&c.trace),
            at: (c.source, c.packets_read, c.packet.offset),
        }
    }

    pub(crate) fn matches(&self, c: &StreamCursor) -> bool {
        Weak::as_ptr(&self.trace) == Arc::as_ptr(&c.trace)
            && self.at == (c.source, c.packets_read, c.packet.offset)
    }
}

/// One event class's compiled line.
pub(crate) struct LineProg {
    ops: Vec<POp>,
    lits: Vec<u8>,
    /// The op after [`POp::PacketEnd`] (where a cached packet context
    /// text continues).
    packet_end: usize,
}

impl LineProg {
    pub(crate) fn run(&self, out: &mut Vec<u8>, c: &StreamCursor, packet: &mut PacketText) {
        let trace = &c.trace;
        let sp = &trace.class.streams[c.stream];
        let ev = &c.event;
        let ep = sp.event(ev.event);
        let data = c.data();
        let slices: [&[Value]; 4] = [
            &c.packet_context,
            ev.common_context(),
            ev.specific_context(),
            ev.payload(),
        ];
        let plans: [&Plan; 4] = [
            &sp.packet_context,
            &sp.event_common_context,
            &ep.context,
            &ep.payload,
        ];
        let mut fp = FieldPrinter {
            plan: plans[0],
            values: slices[0],
            data,
            names: false,
            color: false,
        };
        let mut vi = 0usize;
        let mut pc = 0usize;
        let mut packet_start = None;
        while let Some(&op) = self.ops.get(pc) {
            pc += 1;
            match op {
                POp::Lit(a, b) => push_lit(out, &self.lits, a as usize, b as usize),
                POp::Int { size, signed, base } => {
                    match fp.values.get(vi) {
                        Some(&Value::U(u)) if base == 10 && !signed => fmt::push_u64(out, u),
                        Some(&v) => fmt::integer(out, v, size, signed, base),
                        None => fmt::integer(out, Value::U(0), size, signed, base),
                    }
                    vi += 1;
                }
                POp::Str => {
                    if let Some(&Value::Bytes { off, len }) = fp.values.get(vi) {
                        fmt::push_escaped(out, &data[off..off + len]);
                    }
                    vi += 1;
                }
                POp::Scope { k, names } => {
                    if k == 0 {
                        if packet.key.as_ref().is_some_and(|key| key.matches(c)) {
                            out.extend_from_slice(&packet.text);
                            pc = self.packet_end;
                            continue;
                        }
                        packet.key = Some(PacketKey::of(c));
                        packet_start = Some(out.len());
                    }
                    fp.plan = plans[k as usize];
                    fp.values = slices[k as usize];
                    fp.names = names;
                    vi = 0;
                }
                POp::Skip(n) => vi += n as usize,
                POp::Text(len) => fp.text(out, len, &mut vi),
                POp::Tree(n) => fp.field(out, n, &mut vi),
                POp::TreeSkip(n) => fp.skip(n, &mut vi),
                POp::PacketEnd => {
                    if let Some(start) = packet_start {
                        packet.text.clear();
                        packet.text.extend_from_slice(&out[start..]);
                    }
                }
            }
        }
    }
}

/// Bytes of padding after the literals: what [`push_lit`] may read past one.
const LIT_PAD: usize = 32;

/// Appends `lits[a..b]`. Most literals are short (`", b = "`): copied as
/// one fixed-size block, with no call to `memcpy`.
#[inline(always)]
fn push_lit(out: &mut Vec<u8>, lits: &[u8], a: usize, b: usize) {
    let n = b - a;
    if n <= LIT_PAD && a + LIT_PAD <= lits.len() {
        out.reserve(LIT_PAD);
        let len = out.len();
        // SAFETY: `reserve` leaves at least LIT_PAD writable bytes after
        // `len`, and `lits` has LIT_PAD readable bytes from `a` (checked
        // above); the length grows by n <= LIT_PAD bytes, all written by
        // this copy (the rest of the block lands in spare capacity).
        unsafe {
            std::ptr::copy_nonoverlapping(lits.as_ptr().add(a), out.as_mut_ptr().add(len), LIT_PAD);
            out.set_len(len + n);
        }
    } else {
        out.extend_from_slice(&lits[a..b]);
    }
}

/// Compiles a line: the caller writes literal text into `lits`, then adds
/// scopes and fields.
#[derive(Default)]
pub(crate) struct Builder {
    pub lits: Vec<u8>,
    ops: Vec<POp>,
    /// End of the literal text already covered by ops.
    done: usize,
    packet_end: usize,
}

impl Builder {
    /// Turns the literal text written since the last op into an op.
    fn flush(&mut self) {
        let end = self.lits.len();
        if end > self.done {
            match self.ops.last_mut() {
                Some(POp::Lit(_, e)) if *e as usize == self.done => *e = end as u32,
                _ => self.ops.push(POp::Lit(self.done as u32, end as u32)),
            }
            self.done = end;
        }
    }

    fn op(&mut self, op: POp) {
        self.flush();
        match (self.ops.last_mut(), op) {
            (Some(POp::Skip(a)), POp::Skip(b)) => *a += b,
            _ => self.ops.push(op),
        }
    }

    pub fn scope(&mut self, k: u8, names: bool) {
        self.op(POp::Scope { k, names });
    }

    /// Ends the packet context's text (see [`POp::PacketEnd`]).
    pub fn packet_end(&mut self) {
        self.op(POp::PacketEnd);
        self.packet_end = self.ops.len();
    }

    /// The text of node `n`, as [`FieldPrinter::field`] (without colours)
    /// writes it.
    pub fn field(&mut self, plan: &Plan, n: u32, names: bool) {
        match plan.nodes[n as usize] {
            Node::Int {
                size,
                signed,
                base,
                enum_idx: NONE,
                ..
            } => self.op(POp::Int { size, signed, base }),
            Node::String => self.op(POp::Str),
            Node::Struct { first, count, .. } => {
                self.lits.push(b'{');
                let mut printed = 0;
                for i in first..first + count {
                    let child = plan.children[i as usize];
                    if !plan.nodes[child as usize].visible() {
                        match value_count(plan, child) {
                            Some(k) => self.op(POp::Skip(k)),
                            None => self.op(POp::TreeSkip(child)),
                        }
                        continue;
                    }
                    if printed > 0 {
                        self.lits.push(b',');
                    }
                    self.lits.push(b' ');
                    if names {
                        let name = &plan.names[i as usize];
                        let name = name.strip_prefix('_').unwrap_or(name);
                        self.lits.extend_from_slice(name.as_bytes());
                        self.lits.extend_from_slice(b" = ");
                    }
                    self.field(plan, child, names);
                    printed += 1;
                }
                self.lits.extend_from_slice(b" }");
            }
            Node::Array {
                length, text: true, ..
            } => self.op(POp::Text(length)),
            _ => self.op(POp::Tree(n)),
        }
    }

    pub fn finish(mut self) -> LineProg {
        self.flush();
        self.lits.extend_from_slice(&[0; LIT_PAD]);
        LineProg {
            ops: self.ops,
            lits: self.lits,
            packet_end: self.packet_end,
        }
    }
}

/// How many values node `n` always decodes to, if that does not depend on
/// the data (as [`FieldPrinter::skip`] counts them).
fn value_count(plan: &Plan, n: u32) -> Option<u32> {
    let c: u64 = match plan.nodes[n as usize] {
        Node::Int { .. }
        | Node::BigInt { .. }
        | Node::Float { .. }
        | Node::String
        | Node::VarInt { .. }
        | Node::Bytes { .. } => 1,
        Node::Struct { first, count, .. } => {
            let mut sum = 0u64;
            for i in first..first + count {
                sum += value_count(plan, plan.children[i as usize])? as u64;
            }
            sum
        }
        Node::Array {
            length, elem, text, ..
        } => {
            if text {
                (length > 0) as u64
            } else {
                length.checked_mul(value_count(plan, elem)? as u64)?
            }
        }
        Node::Variant { .. } | Node::Sequence { .. } | Node::Optional { .. } => return None,
    };
    u32::try_from(c).ok().filter(|&c| c < 1 << 24)
}

/// The compiled lines of a printer, per trace, stream class and event
/// class.
#[derive(Default)]
pub(crate) struct Lines {
    /// (trace address, stream class, stamped) -> index into `entries`.
    index: HashMap<(usize, usize, bool), usize>,
    entries: Vec<Entry>,
    /// The last key looked up and its entry.
    last: Option<((usize, usize, bool), usize)>,
}

struct Entry {
    /// Keeps the trace's allocation, so its address is not reused by
    /// another trace while its lines are cached (`reef listen` opens a
    /// trace per burst).
    trace: Weak<Trace>,
    progs: Vec<Option<Box<LineProg>>>,
}

impl Lines {
    /// The line slot of `c`'s current event class (`None` until compiled).
    pub(crate) fn slot(&mut self, c: &StreamCursor, stamped: bool) -> &mut Option<Box<LineProg>> {
        let key = (Arc::as_ptr(&c.trace) as usize, c.stream, stamped);
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let i = match self.index.get(&key) {
                    Some(&i) => i,
                    None => self.insert(key, &c.trace),
                };
                self.last = Some((key, i));
                i
            }
        };
        let progs = &mut self.entries[i].progs;
        let e = c.event.event;
        if progs.len() <= e {
            progs.resize_with(e + 1, || None);
        }
        &mut progs[e]
    }

    fn insert(&mut self, key: (usize, usize, bool), trace: &Arc<Trace>) -> usize {
        if self.entries.len() >= 64 {
            // Forget the traces that are gone.
            let live: Vec<bool> = self
                .entries
                .iter()
                .map(|e| e.trace.strong_count() > 0)
                .collect();
            if live.iter().any(|l| !l) {
                let mut renum = Vec::with_capacity(live.len());
                let mut kept = 0;
                for &l in &live {
                    renum.push(kept);
                    kept += l as usize;
                }
                let mut i = 0;
                self.entries.retain(|_| {
                    i += 1;
                    live[i - 1]
                });
                self.index.retain(|_, v| {
                    let keep = live[*v];
                    *v = renum[*v];
                    keep
                });
                self.last = None;
            }
        }
        self.entries.push(Entry {
            trace: Arc::downgrade(trace),
            progs: Vec::new(),
        });
        let i = self.entries.len() - 1;
        self.index.insert(key, i);
        i
    }
}
