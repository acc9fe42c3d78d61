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
}

impl Prog {
    /// Compiles the tree of `plan` (empty when it has no root).
    pub fn compile(plan: &Plan) -> Prog {
        let mut p = Prog::default();
        if let Some(r) = plan.root {
            p.emit(plan, r);
        }
        p.drop_redundant_aligns();
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
            | Node::Sequence { .. } => self.ops.push(Op::Tree { node: n }),
        }
    }
}

/// The bytes of scopes that only hold byte-aligned fields with no slot,
/// clock or meaning, and strings: what a reader that wants no values
/// needs to cross them. `parts[0]` bytes, a string, `parts[1]` bytes, a
/// string, and so on. The event-specific context and the payload of most
/// event classes are such scopes: `reef check` crosses them with this
/// instead of their programs.
#[derive(Debug, Clone, Default)]
pub struct Skim {
    parts: Vec<u32>,
}

impl Skim {
    /// The skim of `plans` read one after the other, if they allow one.
    pub fn of(plans: &[&Plan]) -> Option<Skim> {
        let mut parts = vec![0u64];
        for plan in plans {
            for op in &plan.prog.ops {
                let bits = match *op {
                    Op::Align { align } if align <= 8 => 0,
                    Op::Int(i)
                        if i.align <= 8
                            && i.size % 8 == 0
                            && i.slot == NONE
                            && !i.clock
                            && i.meaning == Meaning::None =>
                    {
                        u64::from(i.size)
                    }
                    Op::Fixed { run, align, .. } => {
                        let r = &plan.runs[run as usize];
                        if align > 8 || !r.pure || r.bits % 8 != 0 {
                            return None;
                        }
                        r.bits
                    }
                    Op::Str => {
                        parts.push(0);
                        0
                    }
                    _ => return None,
                };
                *parts.last_mut()? += bits / 8;
            }
        }
        let parts = parts
            .into_iter()
            .map(u32::try_from)
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Skim { parts })
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
        for (k, &n) in self.parts.iter().enumerate() {
            if k > 0 {
                let start = (pos / 8) as usize;
                let end = ((cur.end / 8) as usize).min(cur.data.len());
                match cur.data.get(start..end).and_then(find_nul) {
                    Some(len) => pos += (len as u64 + 1) * 8,
                    None => return false,
                }
            }
            let bits = u64::from(n) * 8;
            if pos > cur.end || cur.end - pos < bits {
                return false;
            }
            pos += bits;
        }
        cur.pos = pos;
        true
    }
}

/// The index of the first NUL byte: most strings of a trace are short,
/// so the first 8 bytes are tested as one word before calling `memchr`.
#[inline(always)]
fn find_nul(hay: &[u8]) -> Option<usize> {
    if let Some(w) = hay.first_chunk::<8>() {
        let v = u64::from_le_bytes(*w);
        let z = v.wrapping_sub(0x0101_0101_0101_0101) & !v & 0x8080_8080_8080_8080;
        if z != 0 {
            return Some((z.trailing_zeros() / 8) as usize);
        }
        return memchr::memchr(0, &hay[8..]).map(|i| i + 8);
    }
    memchr::memchr(0, hay)
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
