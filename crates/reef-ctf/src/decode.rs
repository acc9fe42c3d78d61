//! The decoder: runs a [`Plan`] over packet bytes, appending [`Value`]s in
//! pre-order into a caller-owned buffer (reused across events, so decoding
//! allocates nothing once the buffer has grown to the largest event).

use crate::bits::{align_up, read_be, read_le, sign_extend};
use crate::plan::{FixedKind, FixedRun, IntOp, Meaning, Node, Plan, MEANINGS, NONE};

/// A decoded value. Compound fields are flattened in pre-order: a struct
/// contributes its members' values, an array its elements', a sequence a
/// [`Value::Len`] then its elements', a variant an [`Value::Opt`] then the
/// option's values. Text arrays/sequences and strings are a single
/// [`Value::Bytes`] pointing into the stream data (zero copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U(u64),
    I(i64),
    F(f64),
    /// `len` bytes at byte offset `off` of the stream data; for a string,
    /// the terminating NUL is not included.
    Bytes {
        off: usize,
        len: usize,
    },
    Len(u64),
    Opt(u32),
    /// An integer wider than 64 bits, at this bit offset of the stream data.
    Big {
        bit_off: u64,
    },
}

/// Why decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("field needs {needed} bits but only {available} remain in the packet")]
    Truncated { needed: u64, available: u64 },
    #[error("string is not terminated before the end of the packet")]
    UnterminatedString,
    #[error("variant tag value {0} selects no option")]
    NoVariantOption(i128),
    #[error("sequence length {0} is negative")]
    NegativeLength(i128),
    #[error(
        "sequence/array of {len} elements cannot fit in the {available} bits left in the packet"
    )]
    LengthTooLarge { len: u64, available: u64 },
    #[error("{0}")]
    Other(&'static str),
}

/// A decoding error at a bit offset of the stream file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {} (bit {bit_offset}): {kind}", bit_offset / 8)]
pub struct DecodeError {
    pub bit_offset: u64,
    pub kind: DecodeErrorKind,
}

/// Most zero-sized elements (arrays of empty structures) one event or packet
/// header may hold: they consume no bytes, so the packet size cannot bound
/// them.
pub const MAX_EMPTY_ELEMENTS: u64 = 1 << 20;

/// Per-stream decoding state that outlives a single scope.
#[derive(Debug, Clone)]
pub struct State {
    /// Values of the fields that sequence lengths / variant tags refer to.
    pub slots: Vec<i128>,
    /// Values of the fields with a special meaning seen since the last reset.
    pub meanings: [Option<u64>; MEANINGS],
    pub uuid: Option<[u8; 16]>,
    /// The stream's current clock value, in cycles.
    pub clock: u64,
    /// Elements of zero-sized arrays (empty structures) still allowed in the
    /// current scope group: they consume no bits, so the packet size cannot
    /// bound them. Reset by [`State::reset_budget`].
    pub empty_budget: u64,
}

impl State {
    pub fn new(slots: usize) -> State {
        State {
            slots: vec![0; slots],
            meanings: [None; MEANINGS],
            uuid: None,
            clock: 0,
            empty_budget: MAX_EMPTY_ELEMENTS,
        }
    }

    /// Restores the zero-sized element budget (once per event or packet).
    #[inline]
    pub fn reset_budget(&mut self) {
        self.empty_budget = MAX_EMPTY_ELEMENTS;
    }

    pub fn meaning(&self, m: Meaning) -> Option<u64> {
        self.meanings[m as usize]
    }

    /// Updates the clock with a `size`-bit sample, assuming at most one
    /// wrap-around of those bits since the last update.
    #[inline]
    pub fn update_clock(&mut self, value: u64, size: u32) {
        if size >= 64 {
            self.clock = value;
            return;
        }
        let mask = (1u64 << size) - 1;
        if value < self.clock & mask {
            self.clock = self.clock.wrapping_add(mask + 1);
        }
        self.clock = (self.clock & !mask) | value;
    }
}

/// A cursor over one packet's bits.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'d> {
    pub data: &'d [u8],
    /// Bit offset in `data` where the packet starts (alignment is relative to it).
    pub base: u64,
    /// Current absolute bit offset.
    pub pos: u64,
    /// Absolute bit offset where the packet content ends.
    pub end: u64,
}

impl<'d> Cursor<'d> {
    #[inline]
    fn align(&mut self, align: u32) {
        if align > 1 {
            self.pos = self.base + align_up(self.pos - self.base, align);
        }
    }

    #[inline]
    fn need(&self, bits: u64) -> Result<(), DecodeError> {
        if self.pos > self.end || self.end - self.pos < bits {
            return Err(DecodeError {
                bit_offset: self.pos,
                kind: DecodeErrorKind::Truncated {
                    needed: bits,
                    available: self.end.saturating_sub(self.pos),
                },
            });
        }
        Ok(())
    }

    fn err(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            bit_offset: self.pos,
            kind,
        }
    }

    /// Aligns to `align` and checks that `bits` remain.
    #[inline]
    pub fn align_need(&mut self, align: u32, bits: u64) -> Result<(), DecodeError> {
        self.align(align);
        self.need(bits)
    }
}

/// Decodes the whole scope of `plan` (nothing if it has no root).
#[inline]
pub fn decode_scope(
    plan: &Plan,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    crate::prog::run(plan, cur, st, out)
}

/// Decodes node `n` of `plan` at the cursor.
pub fn decode(
    plan: &Plan,
    n: u32,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    match plan.nodes[n as usize] {
        Node::Int { .. } => {
            if let Some(i) = IntOp::of(&plan.nodes[n as usize]) {
                out.push(decode_int(i, cur, st)?);
            }
        }
        Node::BigInt { size, align, .. } => {
            cur.align_need(align, size as u64)?;
            out.push(Value::Big { bit_off: cur.pos });
            cur.pos += size as u64;
        }
        Node::Float { size, align, le } => {
            cur.align_need(align, size as u64)?;
            let v = match size {
                32 => {
                    let raw = if le {
                        read_le(cur.data, cur.pos, 32)
                    } else {
                        read_be(cur.data, cur.pos, 32)
                    };
                    f32::from_bits(raw as u32) as f64
                }
                64 => {
                    let raw = if le {
                        read_le(cur.data, cur.pos, 64)
                    } else {
                        read_be(cur.data, cur.pos, 64)
                    };
                    f64::from_bits(raw)
                }
                _ => return Err(cur.err(DecodeErrorKind::Other("unsupported floating point size"))),
            };
            cur.pos += size as u64;
            out.push(Value::F(v));
        }
        Node::String => {
            cur.align_need(8, 8)?;
            let start = (cur.pos / 8) as usize;
            let end = (cur.end / 8) as usize;
            let hay = &cur.data[start..end.min(cur.data.len())];
            match hay.iter().position(|&b| b == 0) {
                Some(len) => {
                    out.push(Value::Bytes { off: start, len });
                    cur.pos += (len as u64 + 1) * 8;
                }
                None => return Err(cur.err(DecodeErrorKind::UnterminatedString)),
            }
        }
        Node::Struct {
            align,
            first,
            count,
            ..
        } => {
            cur.align_need(align, 0)?;
            if let Some(run) = plan.fixed_run(n) {
                if cur.end - cur.pos >= run.bits {
                    decode_fixed(run, cur, st, out);
                    return Ok(());
                }
                // Too short: the member-by-member walk below reports which
                // field is truncated.
            }
            for i in first..first + count {
                let c = plan.children[i as usize];
                // Leaf integers inline: no call, no dispatch on the node.
                if let Some(i) = IntOp::of(&plan.nodes[c as usize]) {
                    out.push(decode_int(i, cur, st)?);
                } else {
                    decode(plan, c, cur, st, out)?;
                }
            }
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
                .ok_or_else(|| cur.err(DecodeErrorKind::NoVariantOption(tag)))?;
            out.push(Value::Opt(sel.option));
            decode(
                plan,
                plan.children[(first + sel.option) as usize],
                cur,
                st,
                out,
            )?;
        }
        Node::Array {
            length,
            elem,
            align,
            text,
            elem_min_bits,
            uuid,
            ..
        } => {
            cur.align_need(align, 0)?;
            if uuid && length == 16 {
                let start = cur.pos;
                decode_elements(plan, elem, length, elem_min_bits, text, cur, st, out)?;
                if start.is_multiple_of(8) && cur.pos - start == 128 {
                    let s = (start / 8) as usize;
                    let mut u = [0u8; 16];
                    u.copy_from_slice(&cur.data[s..s + 16]);
                    st.uuid = Some(u);
                }
            } else {
                decode_elements(plan, elem, length, elem_min_bits, text, cur, st, out)?;
            }
        }
        Node::VarInt {
            signed,
            slot,
            clock,
            meaning,
            ..
        } => {
            let (raw, bits) = read_leb128(cur)?;
            let v = if signed {
                let s = if bits < 64 {
                    sign_extend(raw, bits)
                } else {
                    raw as i64
                };
                if slot != NONE {
                    st.slots[slot as usize] = s as i128;
                }
                Value::I(s)
            } else {
                if slot != NONE {
                    st.slots[slot as usize] = raw as i128;
                }
                Value::U(raw)
            };
            if clock {
                st.update_clock(raw, 64);
            }
            if meaning != Meaning::None {
                st.meanings[meaning as usize] = Some(raw);
            }
            out.push(v);
        }
        Node::Bytes {
            length,
            len_slot,
            null,
            text,
            uuid,
        } => {
            cur.align_need(8, 0)?;
            let start = (cur.pos / 8) as usize;
            if null {
                let unit = text.map_or(1, |t| t.unit()) as usize;
                let end = ((cur.end / 8) as usize).min(cur.data.len());
                let hay = &cur.data[start..end.max(start)];
                match hay
                    .chunks_exact(unit)
                    .position(|c| c.iter().all(|&b| b == 0))
                {
                    Some(units) => {
                        out.push(Value::Bytes {
                            off: start,
                            len: units * unit,
                        });
                        cur.pos += ((units + 1) * unit) as u64 * 8;
                    }
                    None => return Err(cur.err(DecodeErrorKind::UnterminatedString)),
                }
            } else {
                let len = if len_slot == NONE {
                    length as i128
                } else {
                    st.slots[len_slot as usize]
                };
                if len < 0 {
                    return Err(cur.err(DecodeErrorKind::NegativeLength(len)));
                }
                let bits = (len as u64).saturating_mul(8);
                cur.need(bits)?;
                out.push(Value::Bytes {
                    off: start,
                    len: len as usize,
                });
                if uuid && len == 16 {
                    let mut u = [0u8; 16];
                    u.copy_from_slice(&cur.data[start..start + 16]);
                    st.uuid = Some(u);
                }
                cur.pos += bits;
            }
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
            out.push(Value::Opt(present as u32));
            if present {
                decode(plan, child, cur, st, out)?;
            }
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
                return Err(cur.err(DecodeErrorKind::NegativeLength(len)));
            }
            let len = len as u64;
            out.push(Value::Len(len));
            cur.align_need(align, 0)?;
            decode_elements(plan, elem, len, elem_min_bits, text, cur, st, out)?;
        }
    }
    Ok(())
}

/// Reads an unsigned LEB128 integer at a byte boundary: its value (the
/// low 64 bits) and how many bits of it are significant (7 per byte).
fn read_leb128(cur: &mut Cursor) -> Result<(u64, u32), DecodeError> {
    cur.align_need(8, 8)?;
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        cur.need(8)?;
        let b = cur.data[(cur.pos / 8) as usize];
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        } else if b & 0x7f != 0 {
            return Err(cur.err(DecodeErrorKind::Other(
                "variable-length integer does not fit in 64 bits",
            )));
        }
        cur.pos += 8;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok((v, shift.min(64)));
        }
    }
}

/// Decodes an integer of at most 64 bits.
#[inline(always)]
pub(crate) fn decode_int(i: IntOp, cur: &mut Cursor, st: &mut State) -> Result<Value, DecodeError> {
    let IntOp {
        size,
        align,
        signed,
        le,
        slot,
        clock,
        meaning,
    } = i;
    cur.align_need(align, size as u64)?;
    let b = (cur.pos >> 3) as usize;
    // Byte-aligned little-endian loads inline; the rest through `bits`.
    let raw = match (le && cur.pos & 7 == 0, size) {
        (true, 8) => cur.data[b] as u64,
        (true, 16) => u16::from_le_bytes([cur.data[b], cur.data[b + 1]]) as u64,
        (true, 32) => u32::from_le_bytes(cur.data[b..b + 4].try_into().unwrap_or([0; 4])) as u64,
        (true, 64) => u64::from_le_bytes(cur.data[b..b + 8].try_into().unwrap_or([0; 8])),
        _ if le => read_le(cur.data, cur.pos, size),
        _ => read_be(cur.data, cur.pos, size),
    };
    cur.pos += size as u64;
    let v = if signed {
        let s = sign_extend(raw, size);
        if slot != NONE {
            st.slots[slot as usize] = s as i128;
        }
        Value::I(s)
    } else {
        if slot != NONE {
            st.slots[slot as usize] = raw as i128;
        }
        Value::U(raw)
    };
    if clock {
        st.update_clock(raw, size);
    }
    if meaning != Meaning::None {
        st.meanings[meaning as usize] = Some(raw);
    }
    Ok(v)
}

/// Decodes a structure of fixed layout whose `run.bits` bits are known to
/// lie inside the packet.
#[inline(always)]
pub(crate) fn decode_fixed(run: &FixedRun, cur: &mut Cursor, st: &mut State, out: &mut Vec<Value>) {
    let base = cur.pos;
    if base & 7 == 0 && run.plain {
        decode_plain(run, cur, out);
        return;
    }
    decode_fixed_leaves(run, cur, st, out);
}

/// A fixed run of plain integers starting on a byte: one reserve, one
/// load per leaf.
#[inline(always)]
fn decode_plain(run: &FixedRun, cur: &mut Cursor, out: &mut Vec<Value>) {
    let data = cur.data;
    let b0 = (cur.pos >> 3) as usize;
    out.extend(run.ops.iter().map(|op| {
        let b = b0 + (op.off >> 3) as usize;
        Value::U(match op.plain_bytes {
            8 => u64::from_le_bytes(data[b..b + 8].try_into().unwrap_or([0; 8])),
            4 => u32::from_le_bytes(data[b..b + 4].try_into().unwrap_or([0; 4])) as u64,
            2 => u16::from_le_bytes([data[b], data[b + 1]]) as u64,
            _ => data[b] as u64,
        })
    }));
    cur.pos += run.bits;
}

/// A fixed run leaf by leaf.
#[inline(never)]
fn decode_fixed_leaves(run: &FixedRun, cur: &mut Cursor, st: &mut State, out: &mut Vec<Value>) {
    let base = cur.pos;
    out.reserve(run.ops.len());
    let bytes = base & 7 == 0;
    for op in &run.ops {
        if bytes {
            // Plain unsigned little-endian integers: one load, one push.
            let b = ((base + op.off as u64) >> 3) as usize;
            let v = match op.plain_bytes {
                8 => Some(u64::from_le_bytes(
                    cur.data[b..b + 8].try_into().unwrap_or([0; 8]),
                )),
                4 => {
                    Some(u32::from_le_bytes(cur.data[b..b + 4].try_into().unwrap_or([0; 4])) as u64)
                }
                2 => Some(u16::from_le_bytes([cur.data[b], cur.data[b + 1]]) as u64),
                1 => Some(cur.data[b] as u64),
                _ => None,
            };
            if let Some(v) = v {
                out.push(Value::U(v));
                continue;
            }
        }
        let at = base + op.off as u64;
        let b = (at >> 3) as usize;
        // Byte-aligned little-endian fields (the common case) with one
        // load; `run.bits` lie inside the packet, so inside `data`.
        let raw = match (bytes && op.off & 7 == 0 && op.le, op.size) {
            (true, 64) => u64::from_le_bytes(cur.data[b..b + 8].try_into().unwrap_or([0; 8])),
            (true, 32) => {
                u32::from_le_bytes(cur.data[b..b + 4].try_into().unwrap_or([0; 4])) as u64
            }
            (true, 16) => u16::from_le_bytes([cur.data[b], cur.data[b + 1]]) as u64,
            (true, 8) => cur.data[b] as u64,
            _ if op.le => read_le(cur.data, at, op.size),
            _ => read_be(cur.data, at, op.size),
        };
        let v = match op.kind {
            FixedKind::Unsigned => Value::U(raw),
            FixedKind::Signed => Value::I(sign_extend(raw, op.size)),
            FixedKind::Float => Value::F(if op.size == 32 {
                f32::from_bits(raw as u32) as f64
            } else {
                f64::from_bits(raw)
            }),
        };
        if op.slot != NONE {
            st.slots[op.slot as usize] = match v {
                Value::I(i) => i as i128,
                _ => raw as i128,
            };
        }
        if op.clock {
            st.update_clock(raw, op.size);
        }
        if op.meaning != Meaning::None {
            st.meanings[op.meaning as usize] = Some(raw);
        }
        out.push(v);
    }
    cur.pos = base + run.bits;
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn decode_elements(
    plan: &Plan,
    elem: u32,
    len: u64,
    elem_min_bits: u64,
    text: bool,
    cur: &mut Cursor,
    st: &mut State,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    if len == 0 {
        return Ok(());
    }
    let available = cur.end.saturating_sub(cur.pos);
    if elem_min_bits == 0 {
        if len > st.empty_budget {
            return Err(cur.err(DecodeErrorKind::LengthTooLarge { len, available }));
        }
        st.empty_budget -= len;
    } else if len.saturating_mul(elem_min_bits) > available {
        return Err(cur.err(DecodeErrorKind::LengthTooLarge { len, available }));
    }
    if text {
        cur.align_need(8, len * 8)?;
        out.push(Value::Bytes {
            off: (cur.pos / 8) as usize,
            len: len as usize,
        });
        cur.pos += len * 8;
        return Ok(());
    }
    for _ in 0..len {
        decode(plan, elem, cur, st, out)?;
    }
    Ok(())
}
