//! Flat decode programs: a scope's [`Plan`] tree compiled once more, into a
//! straight list of [`Op`]s that one loop runs without recursion.
//!
//! Structures vanish into an alignment (or a single [`Op::Fixed`] when their
//! layout is fixed), a variant becomes a jump table over its options' code,
//! and integers, strings and fixed runs are read in the loop itself. Arrays,
//! sequences, big integers and floats outside fixed runs are rarer: an
//! [`Op::Tree`] hands that node to the tree decoder ([`crate::decode::decode`]),
//! so every layout decodes, with the same values and the same errors.
//!
//! This is the "decoder compiled from the metadata" in the form of a tight
//! interpreter: a typical event is three to six ops.

use crate::bits::{align_up, sign_extend};
use crate::decode::{decode, decode_fixed, decode_int, Cursor, DecodeError, DecodeErrorKind};
use crate::decode::{State, Value};
use crate::plan::{IntOp, Meaning, Node, Plan, NONE};

/// One step of a [`Prog`].
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// A structure's start: align (relative to the packet) and check that
    /// the position is still inside the content.
    Align { align: u32 },
    /// An integer of at most 64 bits.
    Int(IntOp),
    /// A structure of fixed layout: `plan.runs[run]`; `node` decodes it
    /// member by member when the packet is too short (to name the field).
    Fixed { run: u32, node: u32, align: u32 },
    /// A NUL-terminated string.
    Str,
    /// A variant: pushes the selected option and jumps to its code,
    /// `prog.targets[table + option]`.
    Variant {
        tag_slot: u32,
        sel_first: u32,
        sel_count: u32,
        table: u32,
    },
    /// Continues at this op.
    Jump { to: u32 },
    /// Any other node: decoded by the tree decoder.
    Tree { node: u32 },
}

/// The flat program of one scope.
#[derive(Debug, Clone, Default)]
pub struct Prog {
    pub ops: Vec<Op>,
    /// Jump tables of the variants.
    pub targets: Vec<u32>,
    /// Every op is a little-endian integer of 8, 16, 32 or 64 bits (an
    /// event header like libreef's or barectf's): `exec` reads them
    /// with `ints` first.
    pub all_ints: bool,
    /// The program is an event header of two integers: an unsigned event
    /// id of `.0` bytes and an unsigned timestamp of `.1` bytes (4 or 8),
    /// little-endian, on bytes, with no slot (libreef's header): `id_ts()`
    /// reads it with two loads.
    pub id_ts: Option<(u32, u32)>,
    /// The program is an LTTng event header (compact or large): see
    /// [`Tagged`].
    pub tagged: Option<Tagged>,
}

/// LTTng's event headers: an id of `tag` bits, and a variant on it whose
/// option 0 (every id but the largest) is a timestamp of `ts` bits after
/// it, and whose option 1 (the largest id) is a 32-bit id then a 64-bit
/// timestamp. All little-endian and unsigned, read from a byte, each
/// aligned as the metadata says (relative to the packet: LTTng's large
/// header is aligned on 16 bits, its 32-bit timestamp on 32, so where the
/// timestamp lies depends on where the header does): the compact header
/// (5-bit id, 27-bit timestamp) and the large one (16 bits, 32 bits).
/// `tagged()` reads it with one load (three for the extended form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tagged {
    pub tag: u32,
    pub slot: u32,
    /// Alignments in bits of the id, of option 0's timestamp, of option
    /// 1's id and of its timestamp.
    pub tag_align: u32,
    pub ts_align: u32,
    pub ts: u32,
    pub ext_align: u32,
    pub ext_ts_align: u32,
}

impl Tagged {
    fn of(p: &Prog, plan: &Plan) -> Option<Tagged> {
        let plain = |i: &IntOp| i.le && !i.signed && i.slot == NONE;
        // The header's own alignment, when its id's does not make it
        // redundant (the compact header: `align(8)`, a 5-bit id).
        let (head_align, ops) = match p.ops[..] {
            [Op::Align { align }, ref rest @ ..] => (align, rest),
            ref all => (1, all),
        };
        let [Op::Int(t), Op::Variant {
            tag_slot,
            sel_first,
            sel_count,
            table,
        }, ..] = ops[..]
        else {
            return None;
        };
        // An option's code: the alignment of its structure (when not
        // dropped as redundant), then its integers.
        let option = |at: u32| match p.ops.get(at as usize)? {
            Op::Align { align } => Some((*align, at as usize + 1)),
            _ => Some((1, at as usize)),
        };
        let end = p.ops.len();
        let (c_align, c) = option(*p.targets.get(table as usize)?)?;
        let (e_align, e) = option(*p.targets.get(table as usize + 1)?)?;
        let (Some(&[Op::Int(e_id), Op::Int(e_ts), Op::Jump { to }]), Some(&[Op::Int(c_ts)])) =
            (p.ops.get(e..e + 3), p.ops.get(c..))
        else {
            return None;
        };
        let max = (1i128 << t.size) - 1;
        let sels = plan
            .selectors
            .get(sel_first as usize..(sel_first + sel_count) as usize)?;
        let selects = |lo: i128, hi: i128, option: u32| {
            sels.iter()
                .any(|s| s.lo == lo && s.hi == hi && s.option == option)
        };
        // Alignments of at most 64 bits, and on bytes past the id's.
        let align_ok = |a: u32| a.is_power_of_two() && a <= 64;
        let ok = t.le
            && !t.signed
            && align_ok(t.align)
            && align_ok(head_align)
            && matches!(t.size, 5 | 16)
            && t.slot == tag_slot
            && t.slot != NONE
            && t.meaning == Meaning::EventId
            && !t.clock
            && sels.len() == 2
            && selects(0, max - 1, 0)
            && selects(max, max, 1)
            && to as usize == end
            && c > e
            && align_ok(c_align)
            && align_ok(e_align)
            && plain(&c_ts)
            && c_ts.clock
            && c_ts.meaning == Meaning::None
            && c_ts.size <= 32
            && align_ok(c_ts.align)
            && plain(&e_id)
            && e_id.size == 32
            && align_ok(e_id.align)
            && e_id.meaning == Meaning::EventId
            && !e_id.clock
            && plain(&e_ts)
            && e_ts.size == 64
            && align_ok(e_ts.align)
            && e_ts.clock
            && e_ts.meaning == Meaning::None;
        ok.then_some(Tagged {
            tag: t.size,
            slot: t.slot,
            tag_align: t.align.max(head_align),
            ts_align: c_ts.align.max(c_align),
            ts: c_ts.size,
            ext_align: e_id.align.max(e_align).max(8),
            ext_ts_align: e_ts.align.max(8),
        })
    }
}

impl Prog {
    /// Compiles the tree of `plan` (empty when it has no root).
    pub fn compile(plan: &Plan) -> Prog {
        let mut p = Prog::default();
        // (about an op per node)
        p.ops.reserve(plan.nodes.len());
        if let Some(r) = plan.root {
            p.emit(plan, r);
        }
        p.drop_redundant_aligns();
        p.id_ts = match p.ops[..] {
            [Op::Int(a), Op::Int(b)]
                if [a, b]
                    .iter()
                    .all(|i| i.le && !i.signed && i.align <= 8 && i.slot == NONE)
                    && matches!(a.size, 8 | 16 | 32 | 64)
                    && a.meaning == Meaning::EventId
                    && !a.clock
                    && matches!(b.size, 32 | 64)
                    && b.clock
                    && b.meaning == Meaning::None =>
            {
                Some((a.size / 8, b.size / 8))
            }
            _ => None,
        };
        p.tagged = Tagged::of(&p, plan);
        p.all_ints = !p.ops.is_empty()
            && p.ops
                .iter()
                .all(|op| matches!(op, Op::Int(i) if i.le && matches!(i.size, 8 | 16 | 32 | 64)));
        p
    }

    /// An [`Op::Align`] directly followed by an op that aligns at least as
    /// much (and checks at least as many bits) at the same position does
    /// nothing that op does not: it is removed, and jumps renumbered.
    fn drop_redundant_aligns(&mut self) {
        let align_of = |op: &Op| match *op {
            Op::Int(IntOp { align, .. }) | Op::Fixed { align, .. } | Op::Align { align } => {
                Some(align)
            }
            Op::Str => Some(8),
            _ => None,
        };
        let is_target = |i: usize, t: &[u32]| t.contains(&(i as u32));
        let redundant = |i: usize| {
            let (Some(Op::Align { align }), Some(next)) = (self.ops.get(i), self.ops.get(i + 1))
            else {
                return false;
            };
            // The next op must not be a jump target (reached otherwise).
            let next_target = is_target(i + 1, &self.targets)
                || self
                    .ops
                    .iter()
                    .any(|o| matches!(o, Op::Jump { to } if *to as usize == i + 1));
            !next_target && align_of(next).is_some_and(|a| a >= *align)
        };
        let keep: Vec<bool> = (0..self.ops.len()).map(|i| !redundant(i)).collect();
        if keep.iter().all(|&k| k) {
            return;
        }
        // New index of each old index (an op removed maps to the next kept).
        let mut new_index = Vec::with_capacity(self.ops.len() + 1);
        let mut n = 0u32;
        for &k in &keep {
            new_index.push(n);
            n += k as u32;
        }
        new_index.push(n);
        let mut i = 0;
        self.ops.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        for op in &mut self.ops {
            if let Op::Jump { to } = op {
                *to = new_index[*to as usize];
            }
        }
        for t in &mut self.targets {
            *t = new_index[*t as usize];
        }
    }

    fn emit(&mut self, plan: &Plan, n: u32) {
        if let Some(i) = IntOp::of(&plan.nodes[n as usize]) {
            self.ops.push(Op::Int(i));
            return;
        }
        match plan.nodes[n as usize] {
            Node::Int { .. } => {}
            Node::String => self.ops.push(Op::Str),
            Node::Struct {
                align,
                first,
                count,
                ..
            } => {
                // A small fixed run that sets a slot, the clock or a
                // meaning (an event header, a timestamp in its own
                // structure) is faster as integer ops in the loop than as
                // a call that tests each leaf for all three.
                let as_ints = plan.fixed_run(n).is_some_and(|r| {
                    (r.ops.len() == 1 || (!r.pure && r.ops.len() <= 4))
                        && r.ops
                            .iter()
                            .all(|o| o.kind != crate::plan::FixedKind::Float)
                });
                if plan.fixed_run(n).is_some() && !as_ints {
                    self.ops.push(Op::Fixed {
                        run: plan.fixed[n as usize],
                        node: n,
                        align,
                    });
                    return;
                }
                // Alignment 1 needs no op: every op leaves the position
                // inside the content, so the check could not fail.
                if align > 1 {
                    self.ops.push(Op::Align { align });
                }
                for i in first..first + count {
                    self.emit(plan, plan.children[i as usize]);
                }
            }
            Node::Variant {
                tag_slot,
                sel_first,
                sel_count,
                first,
                count,
                ..
            } => {
                let table = self.targets.len() as u32;
                self.targets.extend((0..count).map(|_| 0));
                self.ops.push(Op::Variant {
                    tag_slot,
                    sel_first,
                    sel_count,
                    table,
                });
                let mut jumps = Vec::with_capacity(count as usize);
                // Options in reverse: the last one emitted, option 0 (LTTng's
                // compact event header, the common case), needs no jump.
                for o in (0..count).rev() {
                    self.targets[(table + o) as usize] = self.ops.len() as u32;
                    self.emit(plan, plan.children[(first + o) as usize]);
                    // The last option's code ends where the variant does.
                    if o > 0 {
                        jumps.push(self.ops.len());
                        self.ops.push(Op::Jump { to: 0 });
                    }
                }
                let end = self.ops.len() as u32;
                for j in jumps {
                    self.ops[j] = Op::Jump { to: end };
                }
            }
            Node::BigInt { .. }
            | Node::Float { .. }
            | Node::Array { .. }
            | Node::Sequence { .. }
            | Node::VarInt { .. }
            | Node::Bytes { .. }
            | Node::Optional { .. } => self.ops.push(Op::Tree { node: n }),
        }
    }
}

/// The bytes of scopes whose fields are all of a fixed size, on whole
/// bytes, with no clock or meaning, and strings: what a reader that
/// wants no values needs to cross them. They lie in parts: runs of
/// bytes of a fixed layout, each starting aligned (relative to the packet)
/// and, but the first, after a string or at a member whose alignment the
/// part's start does not fix. The event-specific context and the payload
/// of most event classes are such scopes (LTTng's kernel events too, whose
/// 32-bit fields follow 16-byte names): `reef check` crosses them with
/// this instead of their programs.
#[derive(Debug, Clone, Default)]
pub struct Skim {
    parts: Vec<Part>,
}

/// One run of fixed layout of a [`Skim`]: after a string when
/// `after_str`, then aligned to `align` bytes, then `bytes` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    pub after_str: bool,
    pub align: u32,
    pub bytes: u32,
}

/// An alignment of `bits` bits, for a position on a byte: in bytes (at
/// most 8, a power of two).
fn align_bytes(bits: u32) -> Option<u32> {
    if bits <= 8 {
        return Some(1);
    }
    let b = bits / 8;
    (bits.is_multiple_of(8) && b.is_power_of_two() && b <= 8).then_some(b)
}

/// Alignment and size in bytes of a node of fixed layout with no string
/// and nothing a reader must keep (see [`Skim`]): its members' places from
/// its aligned start do not depend on where it lies.
pub(crate) fn fixed_layout(plan: &Plan, n: u32) -> Option<(u32, u32)> {
    let whole = |size: u32| size.is_multiple_of(8).then_some(size / 8);
    match plan.nodes[n as usize] {
        // (A slot is only read by a sequence or variant after it in the
        // same event: a skimmed body has none.)
        Node::Int {
            size,
            align,
            clock,
            meaning,
            ..
        } if !clock && meaning == Meaning::None => Some((align_bytes(align)?, whole(size)?)),
        Node::BigInt { size, align, .. } | Node::Float { size, align, .. } => {
            Some((align_bytes(align)?, whole(size)?))
        }
        Node::Struct {
            align,
            first,
            count,
            ..
        } => {
            let s = align_bytes(align)?;
            let mut off = 0u32;
            for i in first..first + count {
                let (a, b) = fixed_layout(plan, plan.children[i as usize])?;
                if a > s {
                    return None;
                }
                off = (align_up(u64::from(off), a) as u32).checked_add(b)?;
            }
            Some((s, off))
        }
        Node::Array {
            length,
            elem,
            align,
            text,
            ..
        } => {
            let a = align_bytes(align)?;
            let len = u32::try_from(length).ok()?;
            if text {
                return Some((a, len));
            }
            let (ea, es) = fixed_layout(plan, elem)?;
            if ea > a {
                return None;
            }
            let stride = align_up(u64::from(es), ea) as u32;
            let size = match len {
                0 => 0,
                _ => (len - 1).checked_mul(stride)?.checked_add(es)?,
            };
            Some((a, size))
        }
        _ => None,
    }
}

/// Lays out the top-level members of the roots of `plans` (read one after
/// the other) in [`Part`]s, if every member allows a skim; `member` is
/// told each member's place: (index in `plans`, plan, member, part,
/// offset in the part's bytes, node). A string's place is where it
/// starts: the next part is after it.
pub(crate) fn skim_layout(
    plans: &[&Plan],
    mut member: impl FnMut(usize, &Plan, u32, usize, u32, u32),
) -> Option<Vec<Part>> {
    let mut parts = vec![Part {
        after_str: false,
        align: 1,
        bytes: 0,
    }];
    // Aligns the position to `a` bytes: within the last part when its
    // start fixes it, else by a new part.
    fn place(parts: &mut Vec<Part>, a: u32) -> Option<()> {
        let p = parts.last_mut()?;
        if a <= p.align {
            p.bytes = u32::try_from(align_up(u64::from(p.bytes), a)).ok()?;
        } else if p.bytes == 0 {
            p.align = a;
        } else {
            parts.push(Part {
                after_str: false,
                align: a,
                bytes: 0,
            });
        }
        Some(())
    }
    for (k, plan) in plans.iter().enumerate() {
        let Some(root) = plan.root else { continue };
        let Node::Struct {
            align,
            first,
            count,
            ..
        } = plan.nodes[root as usize]
        else {
            return None;
        };
        place(&mut parts, align_bytes(align)?)?;
        for m in 0..count {
            let node = plan.children[(first + m) as usize];
            if matches!(plan.nodes[node as usize], Node::String) {
                let p = parts.last()?;
                member(k, plan, m, parts.len() - 1, p.bytes, node);
                parts.push(Part {
                    after_str: true,
                    align: 1,
                    bytes: 0,
                });
                continue;
            }
            let (a, b) = fixed_layout(plan, node)?;
            place(&mut parts, a)?;
            let at = parts.last()?.bytes;
            member(k, plan, m, parts.len() - 1, at, node);
            let p = parts.last_mut()?;
            p.bytes = p.bytes.checked_add(b)?;
        }
    }
    Some(parts)
}

impl Skim {
    /// The skim of `plans` read one after the other, if they allow one.
    pub fn of(plans: &[&Plan]) -> Option<Skim> {
        let parts = skim_layout(plans, |_, _, _, _, _, _| {})?;
        Some(Skim { parts })
    }

    /// Whether a run of it starts with an alignment (of more than a byte).
    pub fn parts_aligned(&self) -> bool {
        self.parts.iter().any(|p| p.align > 1)
    }

    /// Crosses the scopes. False, with the cursor unchanged, when they do
    /// not fit in the packet (their programs then report the error) or the
    /// cursor or the packet is not on a byte.
    #[inline(always)]
    pub fn cross(&self, cur: &mut Cursor) -> bool {
        if !(cur.pos | cur.base).is_multiple_of(8) {
            return false;
        }
        let mut pos = cur.pos;
        for p in &self.parts {
            if p.after_str {
                let start = (pos / 8) as usize;
                let end = ((cur.end / 8) as usize).min(cur.data.len());
                match cur.data.get(start..end).and_then(find_nul) {
                    Some(len) => pos += (len as u64 + 1) * 8,
                    None => return false,
                }
            }
            if p.align > 1 {
                pos = cur.base + align_up(pos - cur.base, p.align * 8);
            }
            let bits = u64::from(p.bytes) * 8;
            if pos > cur.end || cur.end - pos < bits {
                return false;
            }
            pos += bits;
        }
        cur.pos = pos;
        true
    }
}

/// A [`Skim`] of at most one string packed in one word, for a stream
/// class's table by event id: the bytes before the string (bits 0-14), the
/// bytes after it (bits 15-29), and whether there is one (bit 30); without
/// a string, the bytes may come after an alignment of up to 8 bytes (its
/// base-2 logarithm in bits 15-16: the bodies of LTTng kernel traces
/// whose integers are aligned to their size). Crossing an event then
/// takes one load from the table after its id, not three through its
/// class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuickSkim(u32);

impl Default for QuickSkim {
    fn default() -> Self {
        QuickSkim::NONE
    }
}

impl QuickSkim {
    /// No quick skim: the event class's [`Skim`], if any, is used.
    pub const NONE: QuickSkim = QuickSkim(u32::MAX);
    const STR: u32 = 1 << 30;
    const MAX: u32 = (1 << 15) - 1;

    pub fn of(skim: Option<&Skim>) -> QuickSkim {
        let bytes = |p: &Part, after_str: bool| {
            (p.after_str == after_str && p.align == 1 && p.bytes <= Self::MAX).then_some(p.bytes)
        };
        match skim.map(|s| &s.parts[..]) {
            Some([p]) if !p.after_str && p.bytes <= Self::MAX && matches!(p.align, 2 | 4 | 8) => {
                QuickSkim(p.bytes | p.align.trailing_zeros() << 15)
            }
            Some([p]) => bytes(p, false).map_or(Self::NONE, QuickSkim),
            Some([p, q]) => match (bytes(p, false), bytes(q, true)) {
                (Some(a), Some(b)) => QuickSkim(a | b << 15 | Self::STR),
                _ => Self::NONE,
            },
            _ => Self::NONE,
        }
    }

    /// As [`Skim::cross`].
    #[inline(always)]
    pub fn cross(self, cur: &mut Cursor) -> bool {
        if self == Self::NONE || !(cur.pos | cur.base).is_multiple_of(8) {
            return false;
        }
        let mut pos = cur.pos;
        let fits = |pos: u64, bytes: u32| pos <= cur.end && cur.end - pos >= u64::from(bytes) * 8;
        let a = self.0 & Self::MAX;
        if self.0 & Self::STR == 0 {
            let log2 = self.0 >> 15;
            if log2 != 0 {
                // (an alignment: as `Skim::cross`)
                pos = cur.base + align_up(pos - cur.base, 8 << log2);
            }
            if !fits(pos, a) {
                return false;
            }
            cur.pos = pos + u64::from(a) * 8;
            return true;
        }
        if !fits(pos, a) {
            return false;
        }
        pos += u64::from(a) * 8;
        let start = (pos / 8) as usize;
        let end = ((cur.end / 8) as usize).min(cur.data.len());
        match cur.data.get(start..end).and_then(find_nul) {
            Some(len) => pos += (len as u64 + 1) * 8,
            None => return false,
        }
        let b = (self.0 >> 15) & Self::MAX;
        if !fits(pos, b) {
            return false;
        }
        pos += u64::from(b) * 8;
        cur.pos = pos;
        true
    }
}

/// The index of the first NUL byte: most strings of a trace are short
/// (a thread name is 16 bytes), so the first 32 bytes are tested a word
/// at a time before calling `memchr`, which costs more on short text.
#[inline(always)]
pub(crate) fn find_nul(hay: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(w) = hay.get(at..).and_then(|h| h.first_chunk::<8>()) {
        let v = u64::from_le_bytes(*w);
        let z = v.wrapping_sub(0x0101_0101_0101_0101) & !v & 0x8080_8080_8080_8080;
        if z != 0 {
            return Some(at + (z.trailing_zeros() / 8) as usize);
        }
        at += 8;
        if at == 32 {
            break;
        }
    }
    memchr::memchr(0, &hay[at..]).map(|i| i + at)
}

/// Runs `plan`'s program at the cursor: the values, slots, meanings and
/// clock updates are those of [`decode`] on the plan's root.
pub fn run(
    plan: &Plan,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    exec::<true>(plan, cur, st, out)
}

/// Reads an event header of the [`Prog::id_ts`] shape `(id, ts)` (in
/// bytes) as [`ints`] would: the id, with its meaning set and the clock
/// updated. `None`, with nothing changed, when the cursor is not on a byte
/// or the header does not fit with 8 bytes to spare in the data (the last
/// events of a file then take the general way).
#[inline(always)]
pub(crate) fn id_ts<const KEEP: bool>(
    (id, ts): (u32, u32),
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Option<u64> {
    let bits = u64::from(id + ts) * 8;
    if !(cur.pos | cur.base).is_multiple_of(8) || cur.pos > cur.end || cur.end - cur.pos < bits {
        return None;
    }
    let b = (cur.pos / 8) as usize;
    let word = |at: usize| -> Option<u64> {
        let w = cur.data.get(at..at + 8)?;
        Some(u64::from_le_bytes(w.try_into().ok()?))
    };
    let mask = |bytes: u32| u64::MAX >> (64 - 8 * bytes);
    let v_id = word(b)? & mask(id);
    let v_ts = word(b + id as usize)? & mask(ts);
    st.meanings[Meaning::EventId as usize] = Some(v_id);
    st.update_clock(v_ts, ts * 8);
    if KEEP {
        out.push(Value::U(v_id));
        out.push(Value::U(v_ts));
    }
    cur.pos += bits;
    Some(v_id)
}

/// Reads an event header of the [`Tagged`] shape as the interpreter would:
/// the same values, slot, meaning and clock; returns the event id. `None`,
/// with nothing changed, when the cursor is not on a byte or the header
/// does not fit with 8 bytes to spare in the data.
#[inline(always)]
pub(crate) fn tagged<const KEEP: bool>(
    h: Tagged,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Option<u64> {
    if !(cur.pos | cur.base).is_multiple_of(8) || cur.pos > cur.end {
        return None;
    }
    // Bit offsets from the packet's start, then from the header's.
    let rel = cur.pos - cur.base;
    let from = |off: u64, align: u32| align_up(rel + off, align) - rel;
    let start = from(0, h.tag_align);
    let b = ((cur.pos + start) / 8) as usize;
    let word = |at: usize| -> Option<u64> {
        let w = cur.data.get(at..at + 8)?;
        Some(u64::from_le_bytes(w.try_into().ok()?))
    };
    let mask = |bits: u32| u64::MAX >> (64 - bits);
    let left = cur.end - cur.pos;
    let w = word(b)?;
    let tag = w & mask(h.tag);
    let (id, ts, ts_bits, bits, option) = if tag != mask(h.tag) {
        let at = from(start + u64::from(h.tag), h.ts_align) - start;
        let ts = if at + u64::from(h.ts) <= 64 {
            (w >> at) & mask(h.ts)
        } else {
            word(b + (at / 8) as usize)? & mask(h.ts)
        };
        (tag, ts, h.ts, start + at + u64::from(h.ts), 0)
    } else {
        let id_at = from(start + u64::from(h.tag), h.ext_align);
        let ts_at = from(id_at + 32, h.ext_ts_align);
        let id = word((cur.pos / 8 + id_at / 8) as usize)? & mask(32);
        let ts = word((cur.pos / 8 + ts_at / 8) as usize)?;
        (id, ts, 64, ts_at + 64, 1)
    };
    if left < bits {
        return None;
    }
    st.slots[h.slot as usize] = i128::from(tag);
    st.meanings[Meaning::EventId as usize] = Some(id);
    st.update_clock(ts, ts_bits);
    if KEEP {
        out.push(Value::U(tag));
        out.push(Value::Opt(option));
        if option == 1 {
            out.push(Value::U(id));
        }
        out.push(Value::U(ts));
    }
    cur.pos += bits;
    Some(id)
}

/// Runs a program of byte-sized little-endian integers ([`Prog::all_ints`])
/// without the interpreter: the same values, slots, meanings and clock.
/// Returns the event id it read, if any (also in the meanings: returned, the
/// value need not make a round trip through memory on the way to the event's
/// class). `None`, with `cur`, `out` and the clock unchanged, when the cursor
/// is not on a byte or the integers do not fit: the interpreter then decodes
/// them (and reports the error).
#[inline(always)]
pub(crate) fn ints<const KEEP: bool>(
    ops: &[Op],
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Option<Option<u64>> {
    if !(cur.pos | cur.base).is_multiple_of(8) {
        return None;
    }
    let mut id = None;
    let (clock, len) = (st.clock, out.len());
    let mut pos = cur.pos;
    for op in ops {
        let Op::Int(i) = *op else {
            return None;
        };
        // Alignments of a byte or less hold on a byte.
        if i.align > 8 {
            pos = cur.base + align_up(pos - cur.base, i.align);
        }
        let b = (pos / 8) as usize;
        let raw = if pos > cur.end || cur.end - pos < u64::from(i.size) {
            None
        } else {
            match i.size {
                8 => cur.data.get(b).map(|&v| u64::from(v)),
                16 => cur
                    .data
                    .get(b..b + 2)
                    .map(|w| u64::from(u16::from_le_bytes([w[0], w[1]]))),
                32 => cur
                    .data
                    .get(b..b + 4)
                    .and_then(|w| w.try_into().ok())
                    .map(|w| u64::from(u32::from_le_bytes(w))),
                _ => cur
                    .data
                    .get(b..b + 8)
                    .and_then(|w| w.try_into().ok())
                    .map(u64::from_le_bytes),
            }
        };
        let Some(raw) = raw else {
            st.clock = clock;
            out.truncate(len);
            return None;
        };
        pos += u64::from(i.size);
        let v = if i.signed {
            let s = sign_extend(raw, i.size);
            if i.slot != NONE {
                st.slots[i.slot as usize] = i128::from(s);
            }
            Value::I(s)
        } else {
            if i.slot != NONE {
                st.slots[i.slot as usize] = i128::from(raw);
            }
            Value::U(raw)
        };
        if i.clock {
            st.update_clock(raw, i.size);
        }
        if i.meaning != Meaning::None {
            st.meanings[i.meaning as usize] = Some(raw);
            if i.meaning == Meaning::EventId {
                id = Some(raw);
            }
        }
        if KEEP {
            out.push(v);
        }
    }
    cur.pos = pos;
    Some(id)
}

/// The interpreter, inlined where it is called (each copy predicts its
/// own scope's ops). With `KEEP` false the values are not wanted: fixed
/// runs that set no slot, clock or meaning are only checked and skipped,
/// and integers are not pushed (what `out` then holds is unspecified).
#[inline(always)]
pub(crate) fn exec<const KEEP: bool>(
    plan: &Plan,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    let prog = &plan.prog;
    let ops = &prog.ops[..];
    if let Some(shape) = prog.id_ts {
        if id_ts::<KEEP>(shape, cur, st, out).is_some() {
            return Ok(());
        }
    }
    if let Some(h) = prog.tagged {
        if tagged::<KEEP>(h, cur, st, out).is_some() {
            return Ok(());
        }
    }
    if prog.all_ints && ints::<KEEP>(ops, cur, st, out).is_some() {
        return Ok(());
    }
    let mut pc = 0usize;
    while let Some(&op) = ops.get(pc) {
        pc += 1;
        match op {
            Op::Int(i) => {
                let v = decode_int(i, cur, st)?;
                if KEEP {
                    out.push(v);
                }
            }
            Op::Fixed { run, node, align } => {
                cur.align_need(align, 0)?;
                let r = &plan.runs[run as usize];
                if cur.end - cur.pos >= r.bits {
                    if !KEEP && r.pure {
                        cur.pos += r.bits;
                    } else {
                        decode_fixed(r, cur, st, out);
                    }
                } else {
                    // Too short: the member walk names the truncated field.
                    decode(plan, node, cur, st, out)?;
                }
            }
            Op::Str => {
                cur.align_need(8, 8)?;
                let start = (cur.pos / 8) as usize;
                let end = ((cur.end / 8) as usize).min(cur.data.len());
                match find_nul(&cur.data[start..end]) {
                    Some(len) => {
                        if KEEP {
                            out.push(Value::Bytes { off: start, len });
                        }
                        cur.pos += (len as u64 + 1) * 8;
                    }
                    None => {
                        return Err(DecodeError {
                            bit_offset: cur.pos,
                            kind: DecodeErrorKind::UnterminatedString,
                        })
                    }
                }
            }
            Op::Align { align } => cur.align_need(align, 0)?,
            Op::Variant {
                tag_slot,
                sel_first,
                sel_count,
                table,
            } => {
                let tag = st.slots[tag_slot as usize];
                let sels = &plan.selectors[sel_first as usize..(sel_first + sel_count) as usize];
                let Some(sel) = sels.iter().find(|s| s.lo <= tag && tag <= s.hi) else {
                    return Err(DecodeError {
                        bit_offset: cur.pos,
                        kind: DecodeErrorKind::NoVariantOption(tag),
                    });
                };
                if KEEP {
                    out.push(Value::Opt(sel.option));
                }
                pc = prog.targets[(table + sel.option) as usize] as usize;
            }
            Op::Jump { to } => pc = to as usize,
            Op::Tree { node } => decode(plan, node, cur, st, out)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::find_nul;

    #[test]
    fn find_nul_matches_a_plain_scan() {
        // Bytes around the word test's borrow cases (0x00, 0x01, 0x80, 0xff).
        let alphabet = [0u8, 1, 0x7f, 0x80, 0x81, 0xff, b'a'];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..40 {
            for _ in 0..400 {
                let hay: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        alphabet[(state % alphabet.len() as u64) as usize]
                    })
                    .collect();
                assert_eq!(find_nul(&hay), hay.iter().position(|&b| b == 0), "{hay:?}");
            }
        }
    }
}
