//! Where every field of a scope lies: a walk over a decode plan that
//! mirrors `reef_ctf::decode::decode` (the same alignment, the same
//! variant, optional and length choices, from the same state) and tells a
//! visitor each alignment and each leaf field's bits. Used to lay an
//! event out again at another position of another packet (its leaves
//! copied, the padding recomputed) and to find the packet context fields
//! a writer patches.

use reef_ctf::decode::{decode, Cursor, DecodeError, DecodeErrorKind, State, MAX_EMPTY_ELEMENTS};
use reef_ctf::plan::{Meaning, Node, Plan};
use reef_ctf::Value;

/// What the walk meets, in order.
pub enum Visit {
    /// The field that follows is aligned to this many bits.
    Align(u32),
    /// A leaf field: bits `start..end` of the source, in that byte order
    /// (strings and BLOBs: whole bytes, either order), with its meaning;
    /// `int` when it is an integer of at most 64 bits (`Meaning` fields
    /// are).
    Leaf {
        start: u64,
        end: u64,
        le: bool,
        meaning: Meaning,
    },
}

/// Walks node `n` of `plan` at `cur`, updating `st` as decoding does.
pub fn walk(
    plan: &Plan,
    n: u32,
    cur: &mut Cursor,
    st: &mut State,
    scratch: &mut Vec<Value>,
    v: &mut impl FnMut(Visit),
) -> Result<(), DecodeError> {
    let leaf = |cur: &mut Cursor,
                st: &mut State,
                scratch: &mut Vec<Value>,
                v: &mut dyn FnMut(Visit),
                align: u32,
                le: bool,
                meaning: Meaning|
     -> Result<(), DecodeError> {
        cur.align_need(align, 0)?;
        v(Visit::Align(align));
        let start = cur.pos;
        scratch.clear();
        decode(plan, n, cur, st, scratch)?;
        v(Visit::Leaf {
            start,
            end: cur.pos,
            le,
            meaning,
        });
        Ok(())
    };
    match plan.nodes[n as usize] {
        Node::Int {
            align, le, meaning, ..
        } => leaf(cur, st, scratch, v, align, le, meaning),
        Node::BigInt { align, le, .. } | Node::Float { align, le, .. } => {
            leaf(cur, st, scratch, v, align, le, Meaning::None)
        }
        Node::String | Node::Bytes { .. } => leaf(cur, st, scratch, v, 8, true, Meaning::None),
        Node::VarInt { meaning, .. } => leaf(cur, st, scratch, v, 8, true, meaning),
        Node::Struct {
            align,
            first,
            count,
            ..
        } => {
            cur.align_need(align, 0)?;
            v(Visit::Align(align));
            for i in first..first + count {
                walk(plan, plan.children[i as usize], cur, st, scratch, v)?;
            }
            Ok(())
        }
        Node::Variant {
            tag_slot,
            sel_first,
            sel_count,
            first,
            ..
        } => {
            let tag = st.slots[tag_slot as usize];
            let sel = plan.selectors[sel_first as usize..(sel_first + sel_count) as usize]
                .iter()
                .find(|s| s.lo <= tag && tag <= s.hi)
                .ok_or(DecodeError {
                    bit_offset: cur.pos,
                    kind: DecodeErrorKind::NoVariantOption(tag),
                })?;
            let child = plan.children[(first + sel.option) as usize];
            walk(plan, child, cur, st, scratch, v)
        }
        Node::Optional {
            sel_slot,
            sel_first,
            sel_count,
            ranged,
            child,
            ..
        } => {
            let sel = st.slots[sel_slot as usize];
            let present = plan.optional_present(sel_first, sel_count, ranged, sel);
            if present {
                walk(plan, child, cur, st, scratch, v)?;
            }
            Ok(())
        }
        Node::Array {
            length,
            elem,
            align,
            text,
            elem_min_bits,
            ..
        } => {
            cur.align_need(align, 0)?;
            v(Visit::Align(align));
            elements(plan, elem, length, elem_min_bits, text, cur, st, scratch, v)
        }
        Node::Sequence {
            len_slot,
            elem,
            align,
            text,
            elem_min_bits,
            ..
        } => {
            let len = st.slots[len_slot as usize];
            if len < 0 {
                return Err(DecodeError {
                    bit_offset: cur.pos,
                    kind: DecodeErrorKind::NegativeLength(len),
                });
            }
            cur.align_need(align, 0)?;
            v(Visit::Align(align));
            elements(
                plan,
                elem,
                len as u64,
                elem_min_bits,
                text,
                cur,
                st,
                scratch,
                v,
            )
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn elements(
    plan: &Plan,
    elem: u32,
    len: u64,
    elem_min_bits: u64,
    text: bool,
    cur: &mut Cursor,
    st: &mut State,
    scratch: &mut Vec<Value>,
    v: &mut impl FnMut(Visit),
) -> Result<(), DecodeError> {
    if len == 0 {
        return Ok(());
    }
    let available = cur.end.saturating_sub(cur.pos);
    let too_large = DecodeError {
        bit_offset: cur.pos,
        kind: DecodeErrorKind::LengthTooLarge { len, available },
    };
    if elem_min_bits == 0 {
        if len > st.empty_budget.min(MAX_EMPTY_ELEMENTS) {
            return Err(too_large);
        }
        st.empty_budget -= len;
    } else if len.saturating_mul(elem_min_bits) > available {
        return Err(too_large);
    }
    if text {
        cur.align_need(8, len * 8)?;
        v(Visit::Align(8));
        let start = cur.pos;
        cur.pos += len * 8;
        v(Visit::Leaf {
            start,
            end: cur.pos,
            le: true,
            meaning: Meaning::None,
        });
        return Ok(());
    }
    for _ in 0..len {
        walk(plan, elem, cur, st, scratch, v)?;
    }
    Ok(())
}

/// Walks the whole scope of `plan` (nothing if it has no root).
pub fn walk_scope(
    plan: &Plan,
    cur: &mut Cursor,
    st: &mut State,
    scratch: &mut Vec<Value>,
    v: &mut impl FnMut(Visit),
) -> Result<(), DecodeError> {
    match plan.root {
        Some(r) => walk(plan, r, cur, st, scratch, v),
        None => Ok(()),
    }
}

/// The largest alignment (bits, at least 8) of any field of `plans`: an
/// event moved by a multiple of it keeps every field's padding, so its
/// bytes can be copied as they are.
pub fn max_align<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> u64 {
    let mut a = 8u64;
    for p in plans {
        for n in &p.nodes {
            let x = match *n {
                Node::Int { align, .. }
                | Node::BigInt { align, .. }
                | Node::Float { align, .. }
                | Node::Struct { align, .. }
                | Node::Array { align, .. }
                | Node::Sequence { align, .. } => align as u64,
                _ => 8,
            };
            a = a.max(x);
        }
    }
    a
}
