//! Columns for the fields of one scope: a tree that mirrors the scope's
//! [`Plan`], filled from decoded values event after event and turned into
//! Arrow arrays.
//!
//! At the top of a table, structures and variants are flattened into
//! columns with dotted names (`a.b`); a variant gives its selected option's
//! name as a column of its own and nulls in the options not selected. An
//! enumeration gives its integer and, beside it, `NAME_label` (its labels
//! joined by `, `, null when none maps). Inside an array or sequence
//! (an Arrow list), structures, variants and enumerations become Arrow
//! structures instead (`{value, label}` for an enumeration).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, ListArray, StringArray, StructArray, UInt64Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};
use reef_ctf::decode::Value;
use reef_ctf::plan::{Node, Plan};

/// Validity of the rows appended so far (`true`: a value).
#[derive(Debug, Default)]
pub(crate) struct Valid(Vec<bool>);

impl Valid {
    fn finish(&mut self) -> Option<NullBuffer> {
        let v = std::mem::take(&mut self.0);
        if v.iter().all(|&b| b) {
            None
        } else {
            Some(NullBuffer::from(v))
        }
    }
}

/// A string column being filled: bytes and offsets, as Arrow lays them out.
#[derive(Debug)]
pub struct Strs {
    bytes: Vec<u8>,
    offs: Vec<i32>,
    valid: Valid,
}

impl Default for Strs {
    fn default() -> Strs {
        Strs {
            bytes: Vec::new(),
            offs: vec![0],
            valid: Valid::default(),
        }
    }
}

impl Strs {
    /// Appends `b` (invalid UTF-8 replaced, as a Python reader would).
    pub fn push(&mut self, b: &[u8]) {
        match std::str::from_utf8(b) {
            Ok(s) => self.bytes.extend_from_slice(s.as_bytes()),
            Err(_) => self
                .bytes
                .extend_from_slice(String::from_utf8_lossy(b).as_bytes()),
        }
        self.offs.push(self.bytes.len() as i32);
        self.valid.0.push(true);
    }

    pub fn push_null(&mut self) {
        self.offs.push(self.bytes.len() as i32);
        self.valid.0.push(false);
    }

    pub fn len(&self) -> usize {
        self.valid.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.valid.0.is_empty()
    }

    /// Bytes held: batches are cut before their offsets overflow.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    pub fn finish(&mut self) -> ArrayRef {
        let offs = std::mem::replace(&mut self.offs, vec![0]);
        let bytes = std::mem::take(&mut self.bytes);
        let nulls = self.valid.finish();
        Arc::new(StringArray::new(
            OffsetBuffer::new(ScalarBuffer::from(offs)),
            bytes.into(),
            nulls,
        ))
    }
}

/// Integers (signed, or unsigned of 64 bits) or floats with validity.
#[derive(Debug, Default)]
pub struct Prim<T> {
    v: Vec<T>,
    valid: Valid,
}

impl<T: Default + Copy> Prim<T> {
    pub fn push(&mut self, x: T) {
        self.v.push(x);
        self.valid.0.push(true);
    }
    pub fn push_opt(&mut self, x: Option<T>) {
        self.v.push(x.unwrap_or_default());
        self.valid.0.push(x.is_some());
    }
    fn take(&mut self) -> (ScalarBuffer<T>, Option<NullBuffer>)
    where
        T: arrow_buffer::ArrowNativeType,
    {
        let v = std::mem::take(&mut self.v);
        (ScalarBuffer::from(v), self.valid.finish())
    }
}

impl Prim<i64> {
    pub fn finish(&mut self) -> ArrayRef {
        let (v, n) = self.take();
        Arc::new(Int64Array::new(v, n))
    }
}

impl Prim<u64> {
    pub fn finish(&mut self) -> ArrayRef {
        let (v, n) = self.take();
        Arc::new(UInt64Array::new(v, n))
    }
}

impl Prim<f64> {
    pub fn finish(&mut self) -> ArrayRef {
        let (v, n) = self.take();
        Arc::new(Float64Array::new(v, n))
    }
}

/// The columns of one plan node.
#[derive(Debug)]
pub(crate) enum Col {
    /// A signed integer, or an unsigned one narrower than 64 bits.
    I64(Prim<i64>),
    /// An unsigned integer of 64 bits.
    U64(Prim<u64>),
    /// An enumeration: its integer, and its labels.
    Enum {
        int: Box<Col>,
        labels: Strs,
        idx: u32,
    },
    /// An integer wider than 64 bits, as babeltrace2 prints it (hexadecimal).
    Big(Strs, u32, bool),
    F64(Prim<f64>),
    /// A string, or a text array or sequence.
    Str(Strs),
    Struct {
        names: Vec<String>,
        cols: Vec<Col>,
        valid: Valid,
    },
    Variant {
        names: Vec<String>,
        tag: Strs,
        cols: Vec<Col>,
    },
    List {
        offs: Vec<i32>,
        valid: Valid,
        elem: Box<Col>,
    },
}

/// A member name as babeltrace2 shows it (one leading `_` dropped).
pub(crate) fn shown(name: &str) -> &str {
    name.strip_prefix('_').unwrap_or(name)
}

impl Col {
    /// Empty columns for node `n` of `plan`.
    pub(crate) fn of(plan: &Plan, n: u32) -> Col {
        match plan.nodes[n as usize] {
            Node::Int {
                size,
                signed,
                enum_idx,
                ..
            } => {
                let int = if !signed && size >= 64 {
                    Col::U64(Prim::default())
                } else {
                    Col::I64(Prim::default())
                };
                if enum_idx != reef_ctf::plan::NONE {
                    Col::Enum {
                        int: Box::new(int),
                        labels: Strs::default(),
                        idx: enum_idx,
                    }
                } else {
                    int
                }
            }
            Node::BigInt { size, le, .. } => Col::Big(Strs::default(), size, le),
            Node::Float { .. } => Col::F64(Prim::default()),
            Node::String => Col::Str(Strs::default()),
            Node::Struct { first, count, .. } => Col::Struct {
                names: (first..first + count)
                    .map(|i| shown(&plan.names[i as usize]).to_string())
                    .collect(),
                cols: (first..first + count)
                    .map(|i| Col::of(plan, plan.children[i as usize]))
                    .collect(),
                valid: Valid::default(),
            },
            Node::Variant { first, count, .. } => Col::Variant {
                names: (first..first + count)
                    .map(|i| shown(&plan.names[i as usize]).to_string())
                    .collect(),
                tag: Strs::default(),
                cols: (first..first + count)
                    .map(|i| Col::of(plan, plan.children[i as usize]))
                    .collect(),
            },
            Node::Array { text: true, .. } | Node::Sequence { text: true, .. } => {
                Col::Str(Strs::default())
            }
            Node::Array { elem, .. } | Node::Sequence { elem, .. } => Col::List {
                offs: vec![0],
                valid: Valid::default(),
                elem: Box::new(Col::of(plan, elem)),
            },
            Node::VarInt {
                signed, enum_idx, ..
            } => {
                let int = if signed {
                    Col::I64(Prim::default())
                } else {
                    Col::U64(Prim::default())
                };
                if enum_idx != reef_ctf::plan::NONE {
                    Col::Enum {
                        int: Box::new(int),
                        labels: Strs::default(),
                        idx: enum_idx,
                    }
                } else {
                    int
                }
            }
            // A BLOB's bytes, a UTF-16/32 string's code units.
            Node::Bytes { .. } => Col::Str(Strs::default()),
            // The field's column, null where the field is absent.
            Node::Optional { child, .. } => Col::of(plan, child),
        }
    }

    /// Appends the value of node `n`, whose values start at `values[*vi]`.
    pub(crate) fn push(&mut self, w: &Walk, n: u32, vi: &mut usize) {
        let node = &w.plan.nodes[n as usize];
        if let Node::Optional { child, .. } = *node {
            match w.take(vi) {
                Value::Opt(1) => self.push(w, child, vi),
                _ => self.push_null(w.plan, child),
            }
            return;
        }
        match (self, node) {
            (Col::I64(p), _) => match w.take(vi) {
                Value::I(i) => p.push(i),
                Value::U(u) => p.push(u as i64),
                _ => p.push_opt(None),
            },
            (Col::U64(p), _) => match w.take(vi) {
                Value::U(u) => p.push(u),
                Value::I(i) => p.push(i as u64),
                _ => p.push_opt(None),
            },
            (Col::Enum { int, labels, idx }, _) => {
                let v = w.values.get(*vi).copied();
                int.push(w, n, vi);
                let key = match v {
                    Some(Value::I(i)) => i as i128,
                    Some(Value::U(u)) => u as i128,
                    _ => {
                        labels.push_null();
                        return;
                    }
                };
                let mut text = String::new();
                for l in w.plan.enums[*idx as usize].labels_for(key) {
                    if !text.is_empty() {
                        text.push_str(", ");
                    }
                    text.push_str(l);
                }
                if text.is_empty() {
                    labels.push_null();
                } else {
                    labels.push(text.as_bytes());
                }
            }
            (Col::Big(s, size, le), _) => match w.take(vi) {
                Value::Big { bit_off } => {
                    let mut out = Vec::new();
                    reef_print::big_int_hex(&mut out, w.data, bit_off, *size, *le);
                    s.push(&out);
                }
                _ => s.push_null(),
            },
            (Col::F64(p), _) => match w.take(vi) {
                Value::F(f) => p.push(f),
                _ => p.push_opt(None),
            },
            (Col::Str(s), Node::String | Node::Bytes { .. }) => match w.take(vi) {
                Value::Bytes { off, len } => s.push(&w.data[off..off + len]),
                _ => s.push_null(),
            },
            (Col::Str(s), &Node::Array { length, .. }) => w.text(s, length, vi),
            (Col::Str(s), Node::Sequence { .. }) => match w.take(vi) {
                Value::Len(len) => w.text(s, len, vi),
                _ => s.push_null(),
            },
            (Col::Struct { cols, valid, .. }, &Node::Struct { first, .. }) => {
                for (k, c) in cols.iter_mut().enumerate() {
                    c.push(w, w.plan.children[first as usize + k], vi);
                }
                valid.0.push(true);
            }
            (Col::Variant { names, tag, cols }, &Node::Variant { first, .. }) => {
                let sel = match w.take(vi) {
                    Value::Opt(o) => Some(o as usize),
                    _ => None,
                };
                match sel {
                    Some(o) if o < names.len() => tag.push(names[o].as_bytes()),
                    _ => tag.push_null(),
                }
                for (k, c) in cols.iter_mut().enumerate() {
                    let child = w.plan.children[first as usize + k];
                    if sel == Some(k) {
                        c.push(w, child, vi);
                    } else {
                        c.push_null(w.plan, child);
                    }
                }
            }
            (
                Col::List { offs, valid, elem },
                &Node::Array {
                    length, elem: e, ..
                },
            ) => {
                for _ in 0..length {
                    elem.push(w, e, vi);
                }
                let last = *offs.last().unwrap_or(&0);
                offs.push(last + length as i32);
                valid.0.push(true);
            }
            (Col::List { offs, valid, elem }, &Node::Sequence { elem: e, .. }) => {
                let len = match w.take(vi) {
                    Value::Len(l) => l,
                    _ => 0,
                };
                for _ in 0..len {
                    elem.push(w, e, vi);
                }
                let last = *offs.last().unwrap_or(&0);
                offs.push(last + len as i32);
                valid.0.push(true);
            }
            // A column built for another node: cannot happen (columns are
            // made from the same plan); nothing is appended rather than
            // values misread.
            (c, _) => c.push_null(w.plan, n),
        }
    }

    /// Appends a null for node `n` (a variant's option not selected).
    pub(crate) fn push_null(&mut self, plan: &Plan, n: u32) {
        if let Node::Optional { child, .. } = plan.nodes[n as usize] {
            return self.push_null(plan, child);
        }
        match self {
            Col::I64(p) => p.push_opt(None),
            Col::U64(p) => p.push_opt(None),
            Col::Enum { int, labels, .. } => {
                int.push_null(plan, n);
                labels.push_null();
            }
            Col::Big(s, ..) | Col::Str(s) => s.push_null(),
            Col::F64(p) => p.push_opt(None),
            Col::Struct { cols, valid, .. } => {
                if let Node::Struct { first, .. } = plan.nodes[n as usize] {
                    for (k, c) in cols.iter_mut().enumerate() {
                        c.push_null(plan, plan.children[first as usize + k]);
                    }
                }
                valid.0.push(false);
            }
            Col::Variant { tag, cols, .. } => {
                tag.push_null();
                if let Node::Variant { first, .. } = plan.nodes[n as usize] {
                    for (k, c) in cols.iter_mut().enumerate() {
                        c.push_null(plan, plan.children[first as usize + k]);
                    }
                }
            }
            Col::List { offs, valid, .. } => {
                let last = *offs.last().unwrap_or(&0);
                offs.push(last);
                valid.0.push(false);
            }
        }
    }

    /// Bytes of string data held (to cut batches before 2 GiB).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Col::Enum { labels, .. } => labels.bytes(),
            Col::Big(s, ..) | Col::Str(s) => s.bytes(),
            Col::Struct { cols, .. } => cols.iter().map(Col::bytes).sum(),
            Col::Variant { tag, cols, .. } => {
                tag.bytes() + cols.iter().map(Col::bytes).sum::<usize>()
            }
            Col::List { elem, .. } => elem.bytes(),
            _ => 0,
        }
    }

    /// The columns at the top of a table, flattened under `name`, taking
    /// the rows appended so far.
    pub(crate) fn finish_flat(&mut self, name: &str, out: &mut Vec<(Field, ArrayRef)>) {
        match self {
            Col::Enum { int, labels, .. } => {
                int.finish_flat(name, out);
                let a = labels.finish();
                out.push((Field::new(format!("{name}_label"), DataType::Utf8, true), a));
            }
            Col::Struct { names, cols, valid } => {
                valid.0.clear();
                for (n, c) in names.iter().zip(cols) {
                    c.finish_flat(&join(name, n), out);
                }
            }
            Col::Variant { names, tag, cols } => {
                out.push((Field::new(name, DataType::Utf8, true), tag.finish()));
                for (n, c) in names.iter().zip(cols) {
                    c.finish_flat(&join(name, n), out);
                }
            }
            c => {
                let a = c.finish_nested();
                out.push((Field::new(name, a.data_type().clone(), true), a));
            }
        }
    }

    /// One Arrow array for this node (inside a list).
    fn finish_nested(&mut self) -> ArrayRef {
        match self {
            Col::I64(p) => p.finish(),
            Col::U64(p) => p.finish(),
            Col::F64(p) => p.finish(),
            Col::Big(s, ..) | Col::Str(s) => s.finish(),
            Col::Enum { int, labels, .. } => {
                let v = int.finish_nested();
                let l = labels.finish();
                struct_array(
                    vec![
                        (Field::new("value", v.data_type().clone(), true), v),
                        (Field::new("label", DataType::Utf8, true), l),
                    ],
                    None,
                )
            }
            Col::Struct { names, cols, valid } => {
                let rows = valid.0.len();
                let nulls = valid.finish();
                let parts = names
                    .iter()
                    .zip(cols)
                    .map(|(n, c)| {
                        let a = c.finish_nested();
                        (Field::new(n, a.data_type().clone(), true), a)
                    })
                    .collect();
                struct_array_rows(parts, nulls, rows)
            }
            Col::Variant { names, tag, cols } => {
                let rows = tag.len();
                let mut parts = vec![(Field::new("option", DataType::Utf8, true), tag.finish())];
                for (n, c) in names.iter().zip(cols) {
                    let a = c.finish_nested();
                    parts.push((Field::new(n, a.data_type().clone(), true), a));
                }
                struct_array_rows(parts, None, rows)
            }
            Col::List { offs, valid, elem } => {
                let offs = std::mem::replace(offs, vec![0]);
                let nulls = valid.finish();
                let child = elem.finish_nested();
                let f = Arc::new(Field::new("item", child.data_type().clone(), true));
                Arc::new(ListArray::new(
                    f,
                    OffsetBuffer::new(ScalarBuffer::from(offs)),
                    child,
                    nulls,
                ))
            }
        }
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn struct_array(parts: Vec<(Field, ArrayRef)>, nulls: Option<NullBuffer>) -> ArrayRef {
    let rows = parts.first().map(|p| p.1.len()).unwrap_or(0);
    struct_array_rows(parts, nulls, rows)
}

fn struct_array_rows(
    parts: Vec<(Field, ArrayRef)>,
    nulls: Option<NullBuffer>,
    rows: usize,
) -> ArrayRef {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = parts.into_iter().unzip();
    if fields.is_empty() {
        return Arc::new(StructArray::new_empty_fields(rows, nulls));
    }
    Arc::new(StructArray::new(Fields::from(fields), arrays, nulls))
}

/// A scope's plan, values and stream data, walked together.
pub(crate) struct Walk<'a> {
    pub plan: &'a Plan,
    pub values: &'a [Value],
    pub data: &'a [u8],
}

impl Walk<'_> {
    fn take(&self, vi: &mut usize) -> Value {
        let v = self.values.get(*vi).copied().unwrap_or(Value::U(0));
        *vi += 1;
        v
    }

    /// A text array or sequence of `len` bytes (up to its first NUL, as
    /// babeltrace2 shows it).
    fn text(&self, s: &mut Strs, len: u64, vi: &mut usize) {
        if len == 0 {
            s.push(b"");
            return;
        }
        match self.take(vi) {
            Value::Bytes { off, len } => {
                let b = &self.data[off..off + len];
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                s.push(&b[..end]);
            }
            _ => s.push_null(),
        }
    }
}
