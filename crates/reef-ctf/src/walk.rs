//! Walking a scope's decoded values with its plan: the one place outside
//! the decoder that knows how [`Value`]s follow [`Node`]s (an optional's
//! `Opt` then its field, a sequence's `Len` then its elements, a text
//! array's single `Bytes`, ...). [`walk`] gives each field in declaration
//! order (pre-order), compounds as a [`Step::Begin`] and a [`Step::End`]
//! around their members or elements.

use std::ops::ControlFlow;

use crate::decode::Value;
use crate::plan::{Node, Plan, NONE};
use crate::TextEncoding;

/// A compound field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compound {
    Struct,
    Array,
    Sequence,
    /// One option, the chosen one, inside.
    Variant,
    /// Its field inside when present, nothing when not.
    Optional,
}

/// A field's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf<'a> {
    U(u64),
    I(i64),
    F(f64),
    /// Text: a string, a text array or sequence (UTF-8, or the CTF 2
    /// string's encoding), without a terminating NUL.
    Str(&'a [u8], TextEncoding),
    /// A CTF 2 BLOB.
    Blob(&'a [u8]),
    /// An integer wider than 64 bits: `size` bits at bit `bit_off` of the
    /// stream data.
    Big {
        bit_off: u64,
        size: u32,
        le: bool,
    },
}

/// One step of a walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step<'a> {
    /// A field with a value; `enum_idx` (into [`Plan::enums`], or
    /// [`NONE`]) names its enumeration, `base` its preferred display base.
    Leaf {
        value: Leaf<'a>,
        enum_idx: u32,
        base: u32,
    },
    /// A compound begins: `len` members (a structure), elements (an array
    /// or a sequence), 1 (a variant), 1 or 0 (an optional present or
    /// not). `option` is a variant's chosen option's index.
    Begin {
        kind: Compound,
        len: u64,
        option: u32,
    },
    End(Compound),
}

/// Where a step is: its name (a member's, a variant option's; empty for an
/// element), its index among its siblings, its depth (0: a member of the
/// scope's root structure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At<'a> {
    pub name: &'a str,
    pub index: u64,
    pub depth: u32,
}

/// Walks the scope `values` (decoded with `plan`, their bytes in `data`)
/// member by member of its root structure; with `visible_only`, fields a
/// reader does not show (an LTTng `_uuid`, hidden lengths) are left out.
/// `f` breaking stops the walk.
pub fn walk<'a>(
    plan: &'a Plan,
    values: &'a [Value],
    data: &'a [u8],
    visible_only: bool,
    f: &mut dyn FnMut(At<'a>, Step<'a>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Some(root) = plan.root else {
        return ControlFlow::Continue(());
    };
    let mut w = Walk {
        plan,
        values,
        data,
        visible_only,
        vi: 0,
    };
    match plan.nodes[root as usize] {
        Node::Struct { first, count, .. } => w.members(first, count, 0, f),
        _ => w.node(
            root,
            At {
                name: "",
                index: 0,
                depth: 0,
            },
            f,
        ),
    }
}

struct Walk<'a> {
    plan: &'a Plan,
    values: &'a [Value],
    data: &'a [u8],
    visible_only: bool,
    vi: usize,
}

impl<'a> Walk<'a> {
    fn take(&mut self) -> Value {
        let v = self.values.get(self.vi).copied().unwrap_or(Value::U(0));
        self.vi += 1;
        v
    }

    fn bytes(&self, v: Value) -> &'a [u8] {
        match v {
            Value::Bytes { off, len } => self.data.get(off..off + len).unwrap_or(&[]),
            _ => &[],
        }
    }

    fn members(
        &mut self,
        first: u32,
        count: u32,
        depth: u32,
        f: &mut dyn FnMut(At<'a>, Step<'a>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let plan = self.plan;
        let mut index = 0;
        for k in first..first + count {
            let child = plan.children[k as usize];
            if self.visible_only && !plan.nodes[child as usize].visible() {
                self.skip(child);
                continue;
            }
            let name = plan.names[k as usize].as_str();
            let at = At {
                name: name.strip_prefix('_').unwrap_or(name),
                index,
                depth,
            };
            self.node(child, at, f)?;
            index += 1;
        }
        ControlFlow::Continue(())
    }

    fn visible_count(&self, first: u32, count: u32) -> u64 {
        let plan = self.plan;
        (first..first + count)
            .filter(|&k| {
                !self.visible_only || plan.nodes[plan.children[k as usize] as usize].visible()
            })
            .count() as u64
    }

    fn elements(
        &mut self,
        kind: Compound,
        elem: u32,
        len: u64,
        text: bool,
        at: At<'a>,
        f: &mut dyn FnMut(At<'a>, Step<'a>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if text {
            // One value for the whole text (none when empty).
            let bytes = if len > 0 {
                let v = self.take();
                self.bytes(v)
            } else {
                &[]
            };
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            return f(
                at,
                Step::Leaf {
                    value: Leaf::Str(&bytes[..end], TextEncoding::Utf8),
                    enum_idx: NONE,
                    base: 10,
                },
            );
        }
        f(
            at,
            Step::Begin {
                kind,
                len,
                option: 0,
            },
        )?;
        for i in 0..len {
            let e = At {
                name: "",
                index: i,
                depth: at.depth + 1,
            };
            self.node(elem, e, f)?;
        }
        f(at, Step::End(kind))
    }

    fn node(
        &mut self,
        n: u32,
        at: At<'a>,
        f: &mut dyn FnMut(At<'a>, Step<'a>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let plan = self.plan;
        let leaf = |value, enum_idx, base| Step::Leaf {
            value,
            enum_idx,
            base,
        };
        match plan.nodes[n as usize] {
            ref node @ (Node::Int { .. }
            | Node::VarInt { .. }
            | Node::BigInt { .. }
            | Node::Float { .. }
            | Node::String
            | Node::Bytes { .. }) => {
                let v = self.take();
                let (value, enum_idx, base) =
                    leaf_of(node, v, self.data).unwrap_or((Leaf::U(0), NONE, 10));
                f(at, leaf(value, enum_idx, base))
            }
            Node::Struct { first, count, .. } => {
                f(
                    at,
                    Step::Begin {
                        kind: Compound::Struct,
                        len: self.visible_count(first, count),
                        option: 0,
                    },
                )?;
                self.members(first, count, at.depth + 1, f)?;
                f(at, Step::End(Compound::Struct))
            }
            Node::Variant { first, .. } => {
                let Value::Opt(o) = self.take() else {
                    return ControlFlow::Continue(());
                };
                f(
                    at,
                    Step::Begin {
                        kind: Compound::Variant,
                        len: 1,
                        option: o,
                    },
                )?;
                let k = (first + o) as usize;
                let name = plan.names[k].as_str();
                let inner = At {
                    name: name.strip_prefix('_').unwrap_or(name),
                    index: 0,
                    depth: at.depth + 1,
                };
                self.node(plan.children[k], inner, f)?;
                f(at, Step::End(Compound::Variant))
            }
            Node::Optional { child, .. } => {
                let present = matches!(self.take(), Value::Opt(1));
                f(
                    at,
                    Step::Begin {
                        kind: Compound::Optional,
                        len: present as u64,
                        option: 0,
                    },
                )?;
                if present {
                    let inner = At {
                        name: "",
                        index: 0,
                        depth: at.depth + 1,
                    };
                    self.node(child, inner, f)?;
                }
                f(at, Step::End(Compound::Optional))
            }
            Node::Array {
                length, elem, text, ..
            } => self.elements(Compound::Array, elem, length, text, at, f),
            Node::Sequence { elem, text, .. } => {
                let Value::Len(len) = self.take() else {
                    return ControlFlow::Continue(());
                };
                self.elements(Compound::Sequence, elem, len, text, at, f)
            }
        }
    }

    /// Moves past node `n`'s values.
    fn skip(&mut self, n: u32) {
        let mut ignore = |_: At<'a>, _: Step<'a>| ControlFlow::Continue(());
        let at = At {
            name: "",
            index: 0,
            depth: 0,
        };
        let _ = self.node(n, at, &mut ignore);
    }
}

/// A leaf node's value `v` (its bytes in `data`) as a [`Leaf`], with its
/// enumeration and display base; `None` for a compound node.
pub fn leaf_of<'a>(node: &Node, v: Value, data: &'a [u8]) -> Option<(Leaf<'a>, u32, u32)> {
    let bytes = |v: Value| match v {
        Value::Bytes { off, len } => data.get(off..off + len).unwrap_or(&[]),
        _ => &[],
    };
    Some(match *node {
        Node::Int { enum_idx, base, .. } | Node::VarInt { enum_idx, base, .. } => {
            let l = match v {
                Value::I(i) => Leaf::I(i),
                Value::U(u) => Leaf::U(u),
                _ => Leaf::U(0),
            };
            (l, enum_idx, base)
        }
        Node::BigInt { size, le, .. } => {
            let l = match v {
                Value::Big { bit_off } => Leaf::Big { bit_off, size, le },
                _ => Leaf::U(0),
            };
            (l, NONE, 16)
        }
        Node::Float { .. } => (
            Leaf::F(match v {
                Value::F(x) => x,
                _ => 0.0,
            }),
            NONE,
            10,
        ),
        Node::String => (Leaf::Str(bytes(v), TextEncoding::Utf8), NONE, 10),
        Node::Bytes { text, .. } => {
            let b = bytes(v);
            let l = match text {
                Some(enc) => Leaf::Str(b, enc),
                None => Leaf::Blob(b),
            };
            (l, NONE, 16)
        }
        _ => return None,
    })
}

/// Where a path of member names leads in a scope, known from its plan
/// alone (for readers that look a field up in many events of a class).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The leaf `node`, whose value is always `values[value]`.
    Fixed { value: usize, node: u32 },
    /// Where it is depends on the values (behind a sequence, in a
    /// variant or an optional), or it is not a leaf: walk the values.
    Dynamic,
    /// The scope has no such field.
    Absent,
}

/// How many values node `n` always decodes to; `None` when that depends
/// on the data (sequences, variants, optionals).
fn fixed_count(plan: &Plan, n: u32) -> Option<usize> {
    match plan.nodes[n as usize] {
        Node::Int { .. }
        | Node::VarInt { .. }
        | Node::BigInt { .. }
        | Node::Float { .. }
        | Node::String
        | Node::Bytes { .. } => Some(1),
        Node::Struct { first, count, .. } => (first..first + count).try_fold(0usize, |acc, k| {
            acc.checked_add(fixed_count(plan, plan.children[k as usize])?)
        }),
        Node::Array {
            length, elem, text, ..
        } => {
            if text {
                Some((length > 0) as usize)
            } else {
                usize::try_from(length)
                    .ok()?
                    .checked_mul(fixed_count(plan, elem)?)
            }
        }
        Node::Sequence { .. } | Node::Variant { .. } | Node::Optional { .. } => None,
    }
}

/// The [`Slot`] of the member path `names` in `plan` (each name compared
/// with `same(member name, wanted)`, the member's one leading `_`
/// stripped as [`walk`] gives it): the first member of a name decides, as
/// a walk looking for it would.
pub fn slot_of(plan: &Plan, names: &[&str], same: impl Fn(&str, &str) -> bool) -> Slot {
    let Some(mut node) = plan.root else {
        return Slot::Absent;
    };
    // Values before the current structure's first member (None: unknown).
    let mut base = Some(0usize);
    for (i, want) in names.iter().enumerate() {
        let Node::Struct { first, count, .. } = plan.nodes[node as usize] else {
            return Slot::Absent;
        };
        let mut off = base;
        let mut hit = None;
        for k in first..first + count {
            let child = plan.children[k as usize];
            let name = plan.names[k as usize].as_str();
            if same(name.strip_prefix('_').unwrap_or(name), want) {
                hit = Some(child);
                break;
            }
            off = off.and_then(|o| o.checked_add(fixed_count(plan, child)?));
        }
        let Some(child) = hit else {
            return Slot::Absent;
        };
        let last = i + 1 == names.len();
        match plan.nodes[child as usize] {
            Node::Struct { .. } if !last => {
                node = child;
                base = off;
            }
            Node::Int { .. }
            | Node::VarInt { .. }
            | Node::BigInt { .. }
            | Node::Float { .. }
            | Node::String
            | Node::Bytes { .. } => {
                return match (last, off) {
                    (false, _) => Slot::Absent,
                    (true, Some(value)) => Slot::Fixed { value, node: child },
                    (true, None) => Slot::Dynamic,
                }
            }
            _ => return Slot::Dynamic,
        }
    }
    Slot::Dynamic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_the_members_of_a_decoded_event_in_order() {
        let meta = b"/* CTF 1.8 */
typealias integer { size = 32; align = 8; signed = false; } := u32;
trace { major = 1; minor = 8; byte_order = le;
  packet.header := struct { u32 magic; u32 stream_id; }; };
stream { id = 0; event.header := struct { u32 id; }; };
event { id = 0; stream_id = 0; name = \"e\"; fields := struct {
  u32 a; string s; u32 n; u32 seq[n]; struct { u32 x; } inner; }; };
";
        let class =
            crate::capture::class_from_metadata(meta, std::path::Path::new("t")).expect("metadata");
        let plan = &class.streams[0].event(0).payload;
        let mut data = Vec::new();
        data.extend_from_slice(b"hi");
        let values = [
            Value::U(7),
            Value::Bytes { off: 0, len: 2 },
            Value::U(2),
            Value::Len(2),
            Value::U(10),
            Value::U(11),
            Value::U(5),
        ];
        let mut seen = Vec::new();
        let _ = walk(plan, &values, &data, true, &mut |at, s| {
            seen.push(format!(
                "{}{}:{:?}",
                "  ".repeat(at.depth as usize),
                at.name,
                s
            ));
            ControlFlow::Continue(())
        });
        let text = seen.join("\n");
        assert!(text.starts_with("a:Leaf { value: U(7)"), "{text}");
        assert!(
            text.contains("s:Leaf { value: Str([104, 105], Utf8)"),
            "{text}"
        );
        assert!(
            text.contains("seq:Begin { kind: Sequence, len: 2"),
            "{text}"
        );
        assert!(text.contains("\n  :Leaf { value: U(11)"), "{text}");
        assert!(
            text.contains("inner:Begin { kind: Struct, len: 1"),
            "{text}"
        );
        assert!(text.contains("\n  x:Leaf { value: U(5)"), "{text}");
        assert!(text.ends_with("inner:End(Struct)"), "{text}");
        let eq = |a: &str, b: &str| a == b;
        assert_eq!(
            slot_of(plan, &["s"], eq),
            Slot::Fixed {
                value: 1,
                node: plan_child(plan, 1)
            }
        );
        assert_eq!(slot_of(plan, &["seq"], eq), Slot::Dynamic);
        assert_eq!(slot_of(plan, &["inner", "x"], eq), Slot::Dynamic);
        assert_eq!(slot_of(plan, &["nope"], eq), Slot::Absent);
        assert_eq!(slot_of(plan, &["a", "b"], eq), Slot::Absent);
        let Slot::Fixed { value, node } = slot_of(plan, &["n"], eq) else {
            panic!("n is at a fixed place");
        };
        let (l, _, _) = leaf_of(&plan.nodes[node as usize], values[value], &data).unwrap();
        assert_eq!(l, Leaf::U(2));
    }

    /// The root structure's `i`-th member node.
    fn plan_child(plan: &Plan, i: u32) -> u32 {
        let Some(root) = plan.root else {
            panic!("no root")
        };
        let Node::Struct { first, .. } = plan.nodes[root as usize] else {
            panic!("root is not a structure")
        };
        plan.children[(first + i) as usize]
    }
}
