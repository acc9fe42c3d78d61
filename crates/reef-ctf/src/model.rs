//! The validated trace model that the TSDL parser produces and the decoder
//! compiles into plans.
//!
//! Everything here is resolved: byte orders are concrete (no `native`),
//! type aliases are expanded, and every sequence length / variant tag is a
//! [`FieldRef`] pointing at an integer or enumeration field of a scope that is
//! decoded before the referring field.

/// Byte order of a field, resolved (TSDL `native`/`network` are mapped here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// Character encoding of an integer (an element of a text array/sequence)
/// or a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    None,
    Utf8,
    Ascii,
}

/// A fixed-size integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegerClass {
    /// Size in bits, >= 1. Sizes above 64 are legal CTF (the conformance
    /// suite has a 1024-bit one); the decoder reads them as raw bits.
    pub size: u32,
    /// Alignment in bits (a power of two); 1 when the field is bit-packed.
    pub align: u32,
    pub signed: bool,
    pub byte_order: ByteOrder,
    /// Preferred display base: 2, 8, 10 or 16.
    pub base: u32,
    pub encoding: Encoding,
    /// Name of the clock class this integer is mapped to (`map = clock.NAME.value`).
    pub mapped_clock: Option<String>,
    /// CTF 2 roles of this integer (empty in CTF 1.8, where reserved
    /// member names play that part).
    pub roles: Roles,
}

/// CTF 2 roles of an unsigned integer (or of the UUID BLOB), as a set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Roles(pub u16);

impl Roles {
    pub const MAGIC: u16 = 1;
    pub const UUID: u16 = 1 << 1;
    pub const STREAM_CLASS_ID: u16 = 1 << 2;
    pub const STREAM_ID: u16 = 1 << 3;
    pub const PACKET_TOTAL_LENGTH: u16 = 1 << 4;
    pub const PACKET_CONTENT_LENGTH: u16 = 1 << 5;
    pub const TIMESTAMP: u16 = 1 << 6;
    pub const PACKET_END_TIMESTAMP: u16 = 1 << 7;
    pub const DISCARDED: u16 = 1 << 8;
    pub const PACKET_SEQ_NUM: u16 = 1 << 9;
    pub const EVENT_CLASS_ID: u16 = 1 << 10;

    pub fn has(self, r: u16) -> bool {
        self.0 & r != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// An IEEE 754 floating point number (32 or 64 bits in practice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FloatClass {
    pub exp_dig: u32,
    pub mant_dig: u32,
    pub align: u32,
    pub byte_order: ByteOrder,
}

impl FloatClass {
    /// Total size in bits (`exp_dig + mant_dig`).
    pub fn size(&self) -> u32 {
        self.exp_dig + self.mant_dig
    }
}

/// One label of an enumeration with the inclusive ranges that map to it, in
/// declaration order. Range bounds are stored as `i128` so that both signed
/// and unsigned 64-bit containers fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumMapping {
    pub label: String,
    pub ranges: Vec<(i128, i128)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumClass {
    pub container: IntegerClass,
    /// Labels in declaration order; one label may own several ranges and
    /// ranges of different labels may overlap.
    pub mappings: Vec<EnumMapping>,
}

impl EnumClass {
    /// Labels whose ranges contain `value`, in declaration order.
    pub fn labels_for(&self, value: i128) -> impl Iterator<Item = &str> {
        self.mappings
            .iter()
            .filter(move |m| m.ranges.iter().any(|&(lo, hi)| lo <= value && value <= hi))
            .map(|m| m.label.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringClass {
    pub encoding: Encoding,
}

/// Encoding of a CTF 2 string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextEncoding {
    Utf8,
    Utf16Be,
    Utf16Le,
    Utf32Be,
    Utf32Le,
}

impl TextEncoding {
    /// Bytes per code unit.
    pub fn unit(self) -> u32 {
        match self {
            TextEncoding::Utf8 => 1,
            TextEncoding::Utf16Be | TextEncoding::Utf16Le => 2,
            TextEncoding::Utf32Be | TextEncoding::Utf32Le => 4,
        }
    }
}

/// How many bytes a CTF 2 BLOB or string holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BytesLength {
    /// Up to and including a NUL code unit (null-terminated strings).
    Null,
    Static(u64),
    /// An unsigned integer decoded before.
    Dynamic(FieldRef),
}

/// A CTF 2 BLOB (`text: None`) or a string that is not a CTF 1.8 one (a
/// UTF-16/32 string, of any length kind). UTF-8 strings map onto CTF 1.8
/// classes: null-terminated ones onto [`StringClass`], static- and
/// dynamic-length ones onto text arrays and sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesClass {
    pub length: BytesLength,
    pub text: Option<TextEncoding>,
    /// The BLOB is the metadata stream UUID (role `metadata-stream-uuid`).
    pub uuid: bool,
}

/// A CTF 2 variable-length (LEB128) integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarIntClass {
    pub signed: bool,
    pub base: u32,
    /// Mappings (the enumeration labels of CTF 1.8), possibly none.
    pub mappings: Vec<EnumMapping>,
    pub mapped_clock: Option<String>,
    pub roles: Roles,
}

/// A CTF 2 optional: `class` is present when the selector (a boolean,
/// `ranges: None`, or an integer within `ranges`) says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionalClass {
    pub selector: FieldRef,
    pub ranges: Option<Vec<(i128, i128)>>,
    pub class: Box<FieldClass>,
}

/// A CTF 2 fixed-length bit map: an unsigned bit array whose flags (the
/// `mappings`, ranges of bit indices) name its set bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitMapClass {
    pub container: IntegerClass,
    pub flags: Vec<EnumMapping>,
}

/// A structure member. Names are kept exactly as written in the TSDL
/// (babeltrace2 strips one leading underscore when *showing* a member name;
/// that is the printer's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructMember {
    pub name: String,
    pub class: FieldClass,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructClass {
    /// Minimum alignment from `align(N)`, in bits (1 when absent). The
    /// effective alignment is the max of this and the members' alignments.
    pub min_align: u32,
    pub members: Vec<StructMember>,
}

/// The dynamic scopes of CTF 1.8, in the order they are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `trace.packet.header`
    PacketHeader,
    /// `stream.packet.context`
    PacketContext,
    /// `stream.event.header`
    EventHeader,
    /// `stream.event.context`
    EventCommonContext,
    /// `event.context`
    EventSpecificContext,
    /// `event.fields`
    EventPayload,
}

/// A resolved reference to an integer or enumeration field used as a
/// sequence length or variant tag.
///
/// `path` is a list of member indices, starting at the root structure of
/// `scope`; each step indexes the members of a structure, or the options of a
/// variant (which the decoder checks is the selected option at run time).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRef {
    pub scope: Scope,
    pub path: Vec<u32>,
}

/// A variant option; `name` is as written in the TSDL and is matched
/// against the tag's enumeration labels verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantOption {
    pub name: String,
    pub class: FieldClass,
    /// CTF 2: the selector ranges of this option (CTF 1.8: `None`, the
    /// option named like a label of the tag's enumeration is selected).
    pub ranges: Option<Vec<(i128, i128)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantClass {
    /// The tag: an enumeration field; the option whose name equals the
    /// enumeration label of the tag's value is selected.
    pub tag: FieldRef,
    pub options: Vec<VariantOption>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayClass {
    pub element: Box<FieldClass>,
    pub length: u64,
    /// CTF 2 `minimum-alignment` (1 in CTF 1.8).
    pub min_align: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceClass {
    pub element: Box<FieldClass>,
    /// The unsigned (or non-negative signed) integer holding the length.
    pub length: FieldRef,
    /// CTF 2 `minimum-alignment` (1 in CTF 1.8).
    pub min_align: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldClass {
    Integer(IntegerClass),
    Float(FloatClass),
    Enum(EnumClass),
    String(StringClass),
    Struct(StructClass),
    Variant(VariantClass),
    Array(ArrayClass),
    Sequence(SequenceClass),
    /// CTF 2: a fixed-length boolean (its integer container).
    Bool(IntegerClass),
    /// CTF 2: a fixed-length bit map.
    BitMap(BitMapClass),
    /// CTF 2: a variable-length integer.
    VarInt(VarIntClass),
    /// CTF 2: a BLOB or a UTF-16/32 string.
    Bytes(BytesClass),
    /// CTF 2: an optional.
    Optional(OptionalClass),
}

impl FieldClass {
    /// Alignment requirement in bits.
    pub fn align(&self) -> u32 {
        match self {
            FieldClass::Integer(i) => i.align,
            FieldClass::Float(f) => f.align,
            FieldClass::Enum(e) => e.container.align,
            FieldClass::String(_) => 8,
            FieldClass::Struct(s) => s
                .members
                .iter()
                .map(|m| m.class.align())
                .fold(s.min_align.max(1), u32::max),
            // A variant has no alignment of its own: the selected option's applies.
            FieldClass::Variant(_) => 1,
            FieldClass::Array(a) => a.element.align().max(a.min_align),
            FieldClass::Sequence(s) => s.element.align().max(s.min_align),
            FieldClass::Bool(i) => i.align,
            FieldClass::BitMap(b) => b.container.align,
            FieldClass::VarInt(_) | FieldClass::Bytes(_) => 8,
            // Like a variant: the field's own alignment applies when present.
            FieldClass::Optional(_) => 1,
        }
    }

    pub fn as_struct(&self) -> Option<&StructClass> {
        match self {
            FieldClass::Struct(s) => Some(s),
            _ => None,
        }
    }
}

/// A value of an `env` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    Int(i64),
    Str(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockClass {
    pub name: String,
    pub uuid: Option<[u8; 16]>,
    pub description: Option<String>,
    /// Frequency in Hz (default 1 GHz).
    pub freq: u64,
    pub precision: u64,
    /// Offset of the clock's origin from the Epoch: `offset_s` seconds plus
    /// `offset` cycles.
    pub offset_s: i64,
    pub offset: i64,
    /// `absolute = true`: the clock is a global reference.
    pub absolute: bool,
}

impl Default for ClockClass {
    fn default() -> Self {
        ClockClass {
            name: String::new(),
            uuid: None,
            description: None,
            freq: 1_000_000_000,
            precision: 0,
            offset_s: 0,
            offset: 0,
            absolute: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventClass {
    pub id: u64,
    pub name: String,
    pub loglevel: Option<i64>,
    pub model_emf_uri: Option<String>,
    /// `event.context`
    pub context: Option<FieldClass>,
    /// `event.fields`
    pub payload: Option<FieldClass>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamClass {
    /// The stream class id (0 when the metadata declares a single stream
    /// without an id).
    pub id: u64,
    /// `stream.packet.context`
    pub packet_context: Option<FieldClass>,
    /// `stream.event.header`
    pub event_header: Option<FieldClass>,
    /// `stream.event.context`
    pub event_context: Option<FieldClass>,
    /// Event classes of this stream, in declaration order.
    pub events: Vec<EventClass>,
    /// CTF 2: the default clock class (`default-clock-class-id`); CTF 1.8
    /// finds it from the integers mapped to a clock.
    pub default_clock: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callsite {
    pub name: String,
    pub func: String,
    pub file: String,
    pub line: u64,
    pub ip: u64,
}

/// A whole parsed and validated CTF 1.8 metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub major: u32,
    pub minor: u32,
    pub uuid: Option<[u8; 16]>,
    /// A CTF 2 trace class's `uid` (babeltrace2 2.1 names a CTF 2 trace
    /// by it in its warnings, where CTF 1.8 gives the UUID).
    pub uid: Option<String>,
    /// The trace's native byte order.
    pub byte_order: ByteOrder,
    /// `trace.packet.header`
    pub packet_header: Option<FieldClass>,
    /// `env` entries in declaration order.
    pub env: Vec<(String, EnvValue)>,
    pub clocks: Vec<ClockClass>,
    pub streams: Vec<StreamClass>,
    pub callsites: Vec<Callsite>,
}

impl Metadata {
    pub fn env_get(&self, key: &str) -> Option<&EnvValue> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn clock(&self, name: &str) -> Option<&ClockClass> {
        self.clocks.iter().find(|c| c.name == name)
    }

    pub fn stream(&self, id: u64) -> Option<&StreamClass> {
        self.streams.iter().find(|s| s.id == id)
    }
}

impl ClockClass {
    /// The clock offset normalized as babeltrace2 does: whole seconds moved
    /// from `offset` (cycles) into `offset_s`, leaving `0 <= cycles < freq`.
    pub fn normalized_offset(&self) -> (i64, u64) {
        let freq = self.freq.max(1) as i128;
        let total = self.offset_s as i128 * freq + self.offset as i128;
        let secs = total.div_euclid(freq);
        let cycles = total.rem_euclid(freq);
        (
            secs.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            cycles as u64,
        )
    }

    /// Converts a clock value to nanoseconds from the Epoch (the clock's
    /// origin when it is not absolute), the way babeltrace2 does: the
    /// offset's cycles and the value are each converted to nanoseconds
    /// (through a double, truncated, unless the frequency is 1 GHz) and then
    /// added to the offset's seconds. `None` on overflow.
    pub fn ns_from_origin(&self, cycles: u64) -> Option<i64> {
        let (secs, off_cycles) = self.normalized_offset();
        let base = (secs as i128).checked_mul(1_000_000_000)?;
        let total =
            base + self.cycles_to_ns(off_cycles) as i128 + self.cycles_to_ns(cycles) as i128;
        i64::try_from(total).ok()
    }

    fn cycles_to_ns(&self, cycles: u64) -> u64 {
        if self.freq == 1_000_000_000 {
            cycles
        } else {
            let d = 1e9 * cycles as f64 / self.freq.max(1) as f64;
            if d >= u64::MAX as f64 {
                u64::MAX
            } else {
                d as u64
            }
        }
    }
}
