//! Decode plans: each dynamic scope's field class tree compiled once into a
//! flat array of [`Node`]s with everything the decoder needs precomputed
//! (concrete byte order, alignment, the slot a length/tag value is kept in,
//! the variant selectors, which fields babeltrace2 shows).
//!
//! *Architecture invariant*: plans are built once per stream class / event
//! class when a trace is opened; nothing on the per-event path allocates.

use crate::model::*;

/// Sentinel for "no slot" / "no enum".
pub const NONE: u32 = u32::MAX;

/// What a field means to the reader, beyond its value (babeltrace2's
/// "meaning"): packet header / context and event header fields that the
/// reader consumes rather than shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Meaning {
    None = 0,
    Magic,
    StreamId,
    StreamInstanceId,
    EventId,
    TimestampBegin,
    TimestampEnd,
    ContentSize,
    PacketSize,
    EventsDiscarded,
    PacketSeqNum,
}

/// Number of [`Meaning`] variants.
pub const MEANINGS: usize = 11;

#[derive(Debug, Clone)]
pub enum Node {
    /// An integer or enumeration of at most 64 bits.
    Int {
        size: u32,
        align: u32,
        signed: bool,
        le: bool,
        base: u32,
        /// Slot the value is stored in for later sequences/variants, or NONE.
        slot: u32,
        /// Mapped to the stream's clock: updates the clock value.
        clock: bool,
        meaning: Meaning,
        /// Index into [`Plan::enums`], or NONE for a plain integer.
        enum_idx: u32,
        visible: bool,
    },
    /// An integer wider than 64 bits: shown as raw hexadecimal.
    BigInt {
        size: u32,
        align: u32,
        le: bool,
    },
    Float {
        size: u32,
        align: u32,
        le: bool,
    },
    String,
    Struct {
        align: u32,
        /// Children are `plan.children[first..first + count]`, names in
        /// `plan.names` at the same indices.
        first: u32,
        count: u32,
        visible: bool,
    },
    Variant {
        tag_slot: u32,
        /// Selectors are `plan.selectors[sel_first..sel_first + sel_count]`.
        sel_first: u32,
        sel_count: u32,
        /// Options are `plan.children[first..first + count]`.
        first: u32,
        count: u32,
        visible: bool,
    },
    Array {
        length: u64,
        elem: u32,
        /// The element's alignment: applied even when the array is empty.
        align: u32,
        /// An array of byte-aligned 8-bit encoded integers: shown as a string.
        text: bool,
        /// Smallest size an element can have, in bits (0 for empty structs).
        elem_min_bits: u64,
        /// The packet header's `uuid` array.
        uuid: bool,
        visible: bool,
    },
    Sequence {
        len_slot: u32,
        elem: u32,
        align: u32,
        text: bool,
        elem_min_bits: u64,
        visible: bool,
    },
    /// CTF 2: a variable-length (LEB128) integer; decodes to a
    /// [`crate::Value::U`] or [`crate::Value::I`] like [`Node::Int`].
    VarInt {
        signed: bool,
        base: u32,
        slot: u32,
        clock: bool,
        meaning: Meaning,
        enum_idx: u32,
        visible: bool,
    },
    /// CTF 2: a BLOB or a UTF-16/32 string, one [`crate::Value::Bytes`]
    /// (a null-terminated string's bytes without the NUL unit).
    Bytes {
        /// The static length in bytes (when `len_slot` is NONE and not `null`).
        length: u64,
        len_slot: u32,
        /// Null-terminated (a string).
        null: bool,
        text: Option<TextEncoding>,
        /// The metadata stream UUID.
        uuid: bool,
    },
    /// CTF 2: an optional: [`crate::Value::Opt`] 1 then the field's values
    /// when present, `Opt(0)` alone when not.
    Optional {
        sel_slot: u32,
        /// Selector ranges in `plan.selectors` (none: a boolean selector).
        sel_first: u32,
        sel_count: u32,
        ranged: bool,
        child: u32,
        visible: bool,
    },
}

/// [`Node::Int`]'s `base` of a CTF 2 boolean: shown `true` / `false`.
pub const BASE_BOOL: u32 = 0;
/// [`Node::Int`]'s `base` of a CTF 2 bit map with flags (`enum_idx`):
/// shown in hexadecimal followed by its active flags.
pub const BASE_BITMAP: u32 = 1;

/// What decoding an integer of at most 64 bits needs: the decoding part
/// of a [`Node::Int`].
#[derive(Debug, Clone, Copy)]
pub struct IntOp {
    pub size: u32,
    pub align: u32,
    pub signed: bool,
    pub le: bool,
    pub slot: u32,
    pub clock: bool,
    pub meaning: Meaning,
}

impl IntOp {
    /// Node `n`'s integer, if it is a [`Node::Int`].
    #[inline(always)]
    pub fn of(n: &Node) -> Option<IntOp> {
        match *n {
            Node::Int {
                size,
                align,
                signed,
                le,
                slot,
                clock,
                meaning,
                ..
            } => Some(IntOp {
                size,
                align,
                signed,
                le,
                slot,
                clock,
                meaning,
            }),
            _ => None,
        }
    }
}

/// One range of tag values selecting a variant option.
#[derive(Debug, Clone, Copy)]
pub struct Selector {
    pub lo: i128,
    pub hi: i128,
    pub option: u32,
}

/// A structure whose every member has a fixed size and a fixed offset from
/// the structure's (aligned) start: integers of at most 64 bits, floats and
/// such structures. The decoder checks the whole size once and reads every
/// leaf at its precomputed offset, rather than walking the members.
#[derive(Debug, Clone, Default)]
pub struct FixedRun {
    /// Size of the structure, in bits, from its aligned start.
    pub bits: u64,
    pub ops: Vec<FixedOp>,
    /// No leaf sets a slot, the clock or a meaning: a reader that wants no
    /// values may skip the run.
    pub pure: bool,
    /// Every leaf is a plain integer ([`FixedOp::plain_bytes`] non-zero).
    pub plain: bool,
}

/// One leaf of a [`FixedRun`], in pre-order (the order values are pushed).
#[derive(Debug, Clone, Copy)]
pub struct FixedOp {
    /// Bit offset from the structure's start.
    pub off: u32,
    pub size: u32,
    pub le: bool,
    pub kind: FixedKind,
    /// As in [`Node::Int`].
    pub slot: u32,
    pub clock: bool,
    pub meaning: Meaning,
    /// A plain unsigned little-endian integer of 8/16/32/64 bits at a byte
    /// offset, with no slot, clock or meaning: its size in bytes (1, 2, 4,
    /// 8), else 0. The decoder reads these with one load when the
    /// structure starts on a byte.
    pub plain_bytes: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedKind {
    Unsigned,
    Signed,
    Float,
}

/// The compiled plan of one dynamic scope.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub nodes: Vec<Node>,
    pub children: Vec<u32>,
    pub names: Vec<String>,
    pub enums: Vec<EnumClass>,
    pub selectors: Vec<Selector>,
    pub root: Option<u32>,
    /// Some field of this scope is mapped to a clock.
    pub has_clock: bool,
    /// For each node: index into `runs` when it is a structure of fixed
    /// layout, or NONE.
    pub fixed: Vec<u32>,
    pub runs: Vec<FixedRun>,
    /// The tree compiled into a flat program ([`crate::prog`]): what
    /// [`crate::decode::decode_scope`] runs.
    pub prog: crate::prog::Prog,
}

impl Plan {
    /// Whether an optional with selector value `sel` holds its field:
    /// `sel` in one of its ranges (`ranged`), else a boolean selector set.
    pub fn optional_present(
        &self,
        sel_first: u32,
        sel_count: u32,
        ranged: bool,
        sel: i128,
    ) -> bool {
        if ranged {
            self.selectors[sel_first as usize..(sel_first + sel_count) as usize]
                .iter()
                .any(|s| s.lo <= sel && sel <= s.hi)
        } else {
            sel != 0
        }
    }

    /// The fixed layout of node `n`, if it is a structure that has one.
    #[inline]
    pub fn fixed_run(&self, n: u32) -> Option<&FixedRun> {
        match self.fixed.get(n as usize) {
            Some(&r) if r != NONE => self.runs.get(r as usize),
            _ => None,
        }
    }

    /// Finds the structures of fixed layout (called once, after compiling).
    fn find_fixed_runs(&mut self) {
        self.fixed = vec![NONE; self.nodes.len()];
        for n in 0..self.nodes.len() {
            if !matches!(self.nodes[n], Node::Struct { .. }) {
                continue;
            }
            let mut run = FixedRun::default();
            let mut pos = 0u64;
            if self.layout(n as u32, &mut pos, &mut run.ops) && pos <= u32::MAX as u64 {
                run.bits = pos;
                run.pure = run
                    .ops
                    .iter()
                    .all(|o| o.slot == NONE && !o.clock && o.meaning == Meaning::None);
                run.plain = run.ops.iter().all(|o| o.plain_bytes != 0);
                self.fixed[n] = self.runs.len() as u32;
                self.runs.push(run);
            }
        }
    }

    /// Lays node `n` out at bit `pos` (relative to an enclosing start
    /// aligned to the enclosing structure's alignment); false if its size
    /// or position can vary.
    fn layout(&self, n: u32, pos: &mut u64, ops: &mut Vec<FixedOp>) -> bool {
        if ops.len() > 256 {
            return false;
        }
        let align_to = |pos: &mut u64, a: u32| *pos = crate::bits::align_up(*pos, a);
        if let Some(IntOp {
            size,
            align,
            signed,
            le,
            slot,
            clock,
            meaning,
        }) = IntOp::of(&self.nodes[n as usize])
        {
            align_to(pos, align);
            let plain = le
                && !signed
                && slot == NONE
                && !clock
                && meaning == Meaning::None
                && (*pos).is_multiple_of(8)
                && matches!(size, 8 | 16 | 32 | 64);
            ops.push(FixedOp {
                off: *pos as u32,
                size,
                le,
                kind: if signed {
                    FixedKind::Signed
                } else {
                    FixedKind::Unsigned
                },
                slot,
                clock,
                meaning,
                plain_bytes: if plain { (size / 8) as u8 } else { 0 },
            });
            *pos += size as u64;
            return true;
        }
        match self.nodes[n as usize] {
            Node::Float { size, align, le } if size == 32 || size == 64 => {
                align_to(pos, align);
                ops.push(FixedOp {
                    off: *pos as u32,
                    size,
                    le,
                    kind: FixedKind::Float,
                    slot: NONE,
                    clock: false,
                    meaning: Meaning::None,
                    plain_bytes: 0,
                });
                *pos += size as u64;
                true
            }
            Node::Struct {
                align,
                first,
                count,
                ..
            } => {
                align_to(pos, align);
                (first..first + count).all(|i| self.layout(self.children[i as usize], pos, ops))
                    && *pos < (1 << 31)
            }
            _ => false,
        }
    }

    /// Whether babeltrace2 would show this scope at all.
    pub fn visible(&self) -> bool {
        match self.root {
            Some(r) => self.nodes[r as usize].visible(),
            None => false,
        }
    }

    /// Index of the root member named `name`, if the root is a struct.
    pub fn root_member(&self, name: &str) -> Option<u32> {
        let r = self.root?;
        if let Node::Struct { first, count, .. } = self.nodes[r as usize] {
            (first..first + count)
                .find(|&i| self.names[i as usize] == name)
                .map(|i| self.children[i as usize])
        } else {
            None
        }
    }
}

impl Node {
    pub fn visible(&self) -> bool {
        match *self {
            Node::Int { visible, .. }
            | Node::Struct { visible, .. }
            | Node::Variant { visible, .. }
            | Node::Array { visible, .. }
            | Node::Sequence { visible, .. }
            | Node::VarInt { visible, .. }
            | Node::Optional { visible, .. } => visible,
            Node::Bytes { uuid, .. } => !uuid,
            Node::BigInt { .. } | Node::Float { .. } | Node::String => true,
        }
    }
}

/// Error building a plan (a reference the parser let through but that cannot
/// be decoded, e.g. a tag that is not an enumeration).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// The roots of all the scopes visible from an event class of a stream class.
#[derive(Clone, Copy)]
pub struct ScopeRoots<'a> {
    pub packet_header: Option<&'a FieldClass>,
    pub packet_context: Option<&'a FieldClass>,
    pub event_header: Option<&'a FieldClass>,
    pub event_common_context: Option<&'a FieldClass>,
    pub event_specific_context: Option<&'a FieldClass>,
    pub event_payload: Option<&'a FieldClass>,
    /// CTF 2 metadata: fields mean what their roles say, whatever their
    /// names.
    pub ctf2: bool,
}

impl<'a> ScopeRoots<'a> {
    pub fn get(&self, s: Scope) -> Option<&'a FieldClass> {
        match s {
            Scope::PacketHeader => self.packet_header,
            Scope::PacketContext => self.packet_context,
            Scope::EventHeader => self.event_header,
            Scope::EventCommonContext => self.event_common_context,
            Scope::EventSpecificContext => self.event_specific_context,
            Scope::EventPayload => self.event_payload,
        }
    }

    /// The field class a reference points to.
    pub fn resolve(&self, r: &FieldRef) -> Option<&'a FieldClass> {
        let mut fc = self.get(r.scope)?;
        for &i in &r.path {
            fc = match fc {
                FieldClass::Struct(s) => &s.members.get(i as usize)?.class,
                FieldClass::Variant(v) => &v.options.get(i as usize)?.class,
                FieldClass::Optional(o) if i == 0 => &o.class,
                _ => return None,
            };
        }
        Some(fc)
    }
}

/// Collects every field reference (sequence lengths, variant tags) found in
/// `fc`, so that the referenced fields get slots.
pub fn collect_refs(fc: &FieldClass, out: &mut Vec<FieldRef>) {
    match fc {
        FieldClass::Struct(s) => s.members.iter().for_each(|m| collect_refs(&m.class, out)),
        FieldClass::Variant(v) => {
            if !out.contains(&v.tag) {
                out.push(v.tag.clone());
            }
            v.options.iter().for_each(|o| collect_refs(&o.class, out));
        }
        FieldClass::Array(a) => collect_refs(&a.element, out),
        FieldClass::Sequence(s) => {
            if !out.contains(&s.length) {
                out.push(s.length.clone());
            }
            collect_refs(&s.element, out);
        }
        FieldClass::Bytes(BytesClass {
            length: BytesLength::Dynamic(r),
            ..
        }) if !out.contains(r) => out.push(r.clone()),
        FieldClass::Optional(o) => {
            if !out.contains(&o.selector) {
                out.push(o.selector.clone());
            }
            collect_refs(&o.class, out);
        }
        _ => {}
    }
}

/// Compiles the scope `scope` (whose root is `roots.get(scope)`) into a plan.
/// `refs` lists the referenced fields; a field at position `i` of `refs`
/// stores its value in slot `i`.
pub fn compile(scope: Scope, roots: &ScopeRoots, refs: &[FieldRef]) -> Result<Plan, PlanError> {
    let mut c = Compiler {
        plan: Plan::default(),
        scope,
        roots,
        refs,
        path: Vec::new(),
    };
    if let Some(fc) = roots.get(scope) {
        // Sized once (a kernel trace compiles over a thousand plans).
        let (nodes, members) = plan_sizes(fc);
        c.plan.nodes.reserve_exact(nodes);
        c.plan.children.reserve_exact(members);
        c.plan.names.reserve_exact(members);
        let root = c.node(fc, true, "")?;
        c.plan.root = Some(root);
    }
    c.plan.find_fixed_runs();
    c.plan.prog = crate::prog::Prog::compile(&c.plan);
    Ok(c.plan)
}

/// The number of nodes of the plan of `fc` (one per field class) and of
/// structure members and variant options among them.
fn plan_sizes(fc: &FieldClass) -> (usize, usize) {
    let (mut nodes, mut members) = (1, 0);
    let mut add = |fc: &FieldClass| {
        let (n, m) = plan_sizes(fc);
        nodes += n;
        members += m;
    };
    match fc {
        FieldClass::Struct(s) => {
            s.members.iter().for_each(|m| add(&m.class));
            members += s.members.len();
        }
        FieldClass::Variant(v) => {
            v.options.iter().for_each(|o| add(&o.class));
            members += v.options.len();
        }
        FieldClass::Array(a) => add(&a.element),
        FieldClass::Sequence(s) => add(&s.element),
        FieldClass::Optional(o) => add(&o.class),
        _ => {}
    }
    (nodes, members)
}

struct Compiler<'r, 'a> {
    plan: Plan,
    scope: Scope,
    roots: &'r ScopeRoots<'a>,
    refs: &'r [FieldRef],
    path: Vec<u32>,
}

impl Compiler<'_, '_> {
    fn slot_here(&self) -> u32 {
        self.refs
            .iter()
            .position(|r| r.scope == self.scope && r.path == self.path)
            .map_or(NONE, |p| p as u32)
    }

    fn meaning(&self, at_root_member: bool, name: &str, roles: Roles) -> Meaning {
        if self.roots.ctf2 {
            return role_meaning(self.scope, roles);
        }
        // babeltrace2 matches these names after stripping one leading `_`.
        let name = name.strip_prefix('_').unwrap_or(name);
        if !at_root_member {
            // The extended LTTng event header keeps its id inside a variant.
            if self.scope == Scope::EventHeader && name == "id" {
                return Meaning::EventId;
            }
            return Meaning::None;
        }
        match (self.scope, name) {
            (Scope::PacketHeader, "magic") => Meaning::Magic,
            (Scope::PacketHeader, "stream_id") => Meaning::StreamId,
            (Scope::PacketHeader, "stream_instance_id") => Meaning::StreamInstanceId,
            (Scope::PacketContext, "timestamp_begin") => Meaning::TimestampBegin,
            (Scope::PacketContext, "timestamp_end") => Meaning::TimestampEnd,
            (Scope::PacketContext, "content_size") => Meaning::ContentSize,
            (Scope::PacketContext, "packet_size") => Meaning::PacketSize,
            (Scope::PacketContext, "events_discarded") => Meaning::EventsDiscarded,
            (Scope::PacketContext, "packet_seq_num") => Meaning::PacketSeqNum,
            (Scope::EventHeader, "id") => Meaning::EventId,
            _ => Meaning::None,
        }
    }

    fn push(&mut self, n: Node) -> u32 {
        self.plan.nodes.push(n);
        (self.plan.nodes.len() - 1) as u32
    }

    fn int_node(&mut self, i: &IntegerClass, enum_idx: u32, name: &str, root_member: bool) -> u32 {
        if i.size > 64 {
            return self.push(Node::BigInt {
                size: i.size,
                align: i.align,
                le: i.byte_order == ByteOrder::Little,
            });
        }
        let meaning = self.meaning(root_member, name, i.roles);
        // An unmapped event header `timestamp` is mapped to the stream's
        // clock (the only one, or an implicit 1 GHz one), as babeltrace2 does.
        let clock = i.mapped_clock.is_some()
            || (!self.roots.ctf2
                && self.scope == Scope::EventHeader
                && name.strip_prefix('_').unwrap_or(name) == "timestamp");
        self.plan.has_clock |= clock;
        let slot = self.slot_here();
        self.push(Node::Int {
            size: i.size,
            align: i.align,
            signed: i.signed,
            le: i.byte_order == ByteOrder::Little,
            base: i.base,
            slot,
            clock,
            meaning,
            enum_idx,
            // Hidden when babeltrace2 consumes it, unless a sequence or
            // variant refers to it.
            visible: (!clock && meaning == Meaning::None) || slot != NONE,
        })
    }

    fn node(&mut self, fc: &FieldClass, is_root: bool, name: &str) -> Result<u32, PlanError> {
        if self.path.len() > 512 {
            return Err(PlanError("field classes nested too deeply".into()));
        }
        let root_member = self.path.len() == 1 && !is_root;
        Ok(match fc {
            FieldClass::Integer(i) => self.int_node(i, NONE, name, root_member),
            FieldClass::Enum(e) => {
                self.plan.enums.push(unsigned_view(e));
                let idx = (self.plan.enums.len() - 1) as u32;
                self.int_node(&e.container, idx, name, root_member)
            }
            FieldClass::Bool(i) => {
                let n = self.int_node(i, NONE, name, root_member);
                if let Node::Int { base, .. } = &mut self.plan.nodes[n as usize] {
                    *base = BASE_BOOL;
                }
                n
            }
            FieldClass::BitMap(b) => {
                let idx = if b.flags.is_empty() {
                    NONE
                } else {
                    self.plan.enums.push(EnumClass {
                        container: b.container.clone(),
                        mappings: b.flags.clone(),
                    });
                    (self.plan.enums.len() - 1) as u32
                };
                let n = self.int_node(&b.container, idx, name, root_member);
                if let Node::Int { base, .. } = &mut self.plan.nodes[n as usize] {
                    *base = if idx == NONE { 16 } else { BASE_BITMAP };
                }
                n
            }
            FieldClass::VarInt(v) => {
                let enum_idx = if v.mappings.is_empty() {
                    NONE
                } else {
                    self.plan.enums.push(EnumClass {
                        container: IntegerClass {
                            size: 64,
                            align: 8,
                            signed: v.signed,
                            byte_order: ByteOrder::Little,
                            base: v.base,
                            encoding: Encoding::None,
                            mapped_clock: None,
                            roles: v.roles,
                        },
                        mappings: v.mappings.clone(),
                    });
                    (self.plan.enums.len() - 1) as u32
                };
                let meaning = self.meaning(root_member, name, v.roles);
                let clock = v.mapped_clock.is_some();
                self.plan.has_clock |= clock;
                let slot = self.slot_here();
                self.push(Node::VarInt {
                    signed: v.signed,
                    base: v.base,
                    slot,
                    clock,
                    meaning,
                    enum_idx,
                    visible: (!clock && meaning == Meaning::None) || slot != NONE,
                })
            }
            FieldClass::Bytes(b) => {
                let (length, len_slot, null) = match &b.length {
                    BytesLength::Null => (0, NONE, true),
                    BytesLength::Static(n) => (*n, NONE, false),
                    BytesLength::Dynamic(r) => {
                        let slot = self
                            .refs
                            .iter()
                            .position(|x| x == r)
                            .map(|p| p as u32)
                            .ok_or_else(|| PlanError("length not collected".into()))?;
                        self.check_length(r)?;
                        (0, slot, false)
                    }
                };
                self.push(Node::Bytes {
                    length,
                    len_slot,
                    null,
                    text: b.text,
                    uuid: b.uuid && self.scope == Scope::PacketHeader,
                })
            }
            FieldClass::Optional(o) => {
                let sel_slot = self
                    .refs
                    .iter()
                    .position(|r| *r == o.selector)
                    .map(|p| p as u32)
                    .ok_or_else(|| PlanError("optional selector not collected".into()))?;
                let sel_first = self.plan.selectors.len() as u32;
                for &(lo, hi) in o.ranges.iter().flatten() {
                    self.plan.selectors.push(Selector { lo, hi, option: 1 });
                }
                let sel_count = self.plan.selectors.len() as u32 - sel_first;
                self.path.push(0);
                let child = self.node(&o.class, false, name);
                self.path.pop();
                let child = child?;
                self.push(Node::Optional {
                    sel_slot,
                    sel_first,
                    sel_count,
                    ranged: o.ranges.is_some(),
                    child,
                    visible: self.plan.nodes[child as usize].visible(),
                })
            }
            FieldClass::Float(f) => self.push(Node::Float {
                size: f.size(),
                align: f.align,
                le: f.byte_order == ByteOrder::Little,
            }),
            FieldClass::String(_) => self.push(Node::String),
            FieldClass::Struct(s) => {
                let mut kids = Vec::with_capacity(s.members.len());
                for (i, m) in s.members.iter().enumerate() {
                    self.path.push(i as u32);
                    let k = self.node(&m.class, false, &m.name);
                    self.path.pop();
                    kids.push((k?, m.name.clone()));
                }
                let visible = kids.is_empty()
                    || kids
                        .iter()
                        .any(|&(k, _)| self.plan.nodes[k as usize].visible());
                let first = self.plan.children.len() as u32;
                for (k, n) in kids {
                    self.plan.children.push(k);
                    self.plan.names.push(n);
                }
                self.push(Node::Struct {
                    align: fc.align(),
                    first,
                    count: s.members.len() as u32,
                    visible,
                })
            }
            FieldClass::Variant(v) => {
                let tag_slot = self
                    .refs
                    .iter()
                    .position(|r| *r == v.tag)
                    .map(|p| p as u32)
                    .ok_or_else(|| PlanError("variant tag not collected".into()))?;
                let ranged = v.options.iter().any(|o| o.ranges.is_some());
                let tag = match self.roots.resolve(&v.tag) {
                    Some(FieldClass::Enum(e)) => unsigned_view(e),
                    Some(
                        FieldClass::Integer(_) | FieldClass::VarInt(_) | FieldClass::BitMap(_),
                    ) if ranged => EnumClass {
                        container: IntegerClass {
                            size: 64,
                            align: 1,
                            signed: false,
                            byte_order: ByteOrder::Little,
                            base: 10,
                            encoding: Encoding::None,
                            mapped_clock: None,
                            roles: Roles::default(),
                        },
                        mappings: Vec::new(),
                    },
                    _ => return Err(PlanError("variant tag is not an enumeration".into())),
                };
                let sel_first = self.plan.selectors.len() as u32;
                for (oi, o) in v.options.iter().enumerate() {
                    for &(lo, hi) in o.ranges.iter().flatten() {
                        self.plan.selectors.push(Selector {
                            lo,
                            hi,
                            option: oi as u32,
                        });
                    }
                    for m in tag.mappings.iter().filter(|m| !ranged && m.label == o.name) {
                        for &(lo, hi) in &m.ranges {
                            self.plan.selectors.push(Selector {
                                lo,
                                hi,
                                option: oi as u32,
                            });
                        }
                    }
                }
                let sel_count = self.plan.selectors.len() as u32 - sel_first;
                let mut kids = Vec::with_capacity(v.options.len());
                for (i, o) in v.options.iter().enumerate() {
                    self.path.push(i as u32);
                    let k = self.node(&o.class, false, &o.name);
                    self.path.pop();
                    kids.push((k?, o.name.clone()));
                }
                let visible = kids
                    .iter()
                    .any(|&(k, _)| self.plan.nodes[k as usize].visible());
                let first = self.plan.children.len() as u32;
                for (k, n) in kids {
                    self.plan.children.push(k);
                    self.plan.names.push(n);
                }
                self.push(Node::Variant {
                    tag_slot,
                    sel_first,
                    sel_count,
                    first,
                    count: v.options.len() as u32,
                    visible,
                })
            }
            FieldClass::Array(a) => {
                let uuid = self.scope == Scope::PacketHeader
                    && root_member
                    && name == "uuid"
                    && !self.roots.ctf2;
                let elem = self.node(&a.element, false, "")?;
                let text = is_text(&a.element);
                self.push(Node::Array {
                    length: a.length,
                    elem,
                    align: fc.align(),
                    text,
                    elem_min_bits: min_bits(&a.element),
                    uuid,
                    visible: self.plan.nodes[elem as usize].visible(),
                })
            }
            FieldClass::Sequence(s) => {
                let len_slot = self
                    .refs
                    .iter()
                    .position(|r| *r == s.length)
                    .map(|p| p as u32)
                    .ok_or_else(|| PlanError("sequence length not collected".into()))?;
                self.check_length(&s.length)?;
                let elem = self.node(&s.element, false, "")?;
                self.push(Node::Sequence {
                    len_slot,
                    elem,
                    align: fc.align(),
                    text: is_text(&s.element),
                    elem_min_bits: min_bits(&s.element),
                    visible: self.plan.nodes[elem as usize].visible(),
                })
            }
        })
    }
}

impl Compiler<'_, '_> {
    fn check_length(&self, r: &FieldRef) -> Result<(), PlanError> {
        match self.roots.resolve(r) {
            Some(FieldClass::Integer(_) | FieldClass::Enum(_) | FieldClass::VarInt(_)) => Ok(()),
            _ => Err(PlanError("sequence length is not an integer".into())),
        }
    }
}

/// The meaning of a CTF 2 integer with `roles` in `scope`.
fn role_meaning(scope: Scope, roles: Roles) -> Meaning {
    let pairs = [
        (Roles::MAGIC, Meaning::Magic),
        (Roles::STREAM_CLASS_ID, Meaning::StreamId),
        (Roles::STREAM_ID, Meaning::StreamInstanceId),
        (Roles::EVENT_CLASS_ID, Meaning::EventId),
        (Roles::PACKET_TOTAL_LENGTH, Meaning::PacketSize),
        (Roles::PACKET_CONTENT_LENGTH, Meaning::ContentSize),
        (Roles::PACKET_END_TIMESTAMP, Meaning::TimestampEnd),
        (Roles::DISCARDED, Meaning::EventsDiscarded),
        (Roles::PACKET_SEQ_NUM, Meaning::PacketSeqNum),
    ];
    if let Some(&(_, m)) = pairs.iter().find(|(r, _)| roles.has(*r)) {
        return m;
    }
    if roles.has(Roles::TIMESTAMP) && scope == Scope::PacketContext {
        return Meaning::TimestampBegin;
    }
    Meaning::None
}

/// babeltrace2 shows arrays/sequences of byte-aligned 8-bit integers with an
/// encoding as strings.
fn is_text(elem: &FieldClass) -> bool {
    match elem {
        FieldClass::Integer(i) => i.size == 8 && i.align == 8 && i.encoding != Encoding::None,
        _ => false,
    }
}

/// The fewest bits a field of this class can occupy (alignment padding
/// aside): used to reject absurd lengths before looping over them.
pub fn min_bits(fc: &FieldClass) -> u64 {
    match fc {
        FieldClass::Integer(i) => i.size as u64,
        FieldClass::Enum(e) => e.container.size as u64,
        FieldClass::Float(f) => f.size() as u64,
        FieldClass::String(_) => 8,
        FieldClass::Struct(s) => s
            .members
            .iter()
            .fold(0u64, |acc, m| acc.saturating_add(min_bits(&m.class))),
        FieldClass::Variant(v) => v
            .options
            .iter()
            .map(|o| min_bits(&o.class))
            .min()
            .unwrap_or(0),
        FieldClass::Array(a) => min_bits(&a.element).saturating_mul(a.length),
        FieldClass::Sequence(_) => 0,
        FieldClass::Bool(i) => i.size as u64,
        FieldClass::BitMap(b) => b.container.size as u64,
        FieldClass::VarInt(_) => 8,
        FieldClass::Bytes(b) => match &b.length {
            BytesLength::Null => b.text.map_or(8, |t| t.unit() as u64 * 8),
            BytesLength::Static(n) => n.saturating_mul(8),
            BytesLength::Dynamic(_) => 0,
        },
        FieldClass::Optional(_) => 0,
    }
}

/// An enumeration as the decoder sees it: for an unsigned container, a
/// negative range bound (LTTng writes `"MINUS_ONE" = -1` in unsigned enums)
/// stands for the same bits read as unsigned, as babeltrace2 treats it.
fn unsigned_view(e: &EnumClass) -> EnumClass {
    let mut e = e.clone();
    if !e.container.signed {
        // babeltrace2 keeps such a bound as 64 bits whatever the
        // container's size.
        let fix = |b: i128| -> i128 {
            if b < 0 {
                b as i64 as u64 as i128
            } else {
                b
            }
        };
        for m in &mut e.mappings {
            for r in &mut m.ranges {
                *r = (fix(r.0), fix(r.1));
            }
        }
    }
    e
}
