//! The validated schema model that every generator reads.
//!
//! *Architecture Invariant*: a [`Schema`] that exists is valid — names are
//! unique, C-safe and within the id space; generators never fail.

use crate::error::Pos;

/// Largest number of subsystems (ids are `subsystem << 8 | event`): 254,
/// libreef keeps subsystems 254 (`func`, function entry/exit) and 255
/// (`sample`, samples and loaded objects) for its built-in events.
pub const MAX_SUBSYSTEMS: usize = 254;
/// Largest number of events in one subsystem.
pub const MAX_EVENTS_PER_SUBSYSTEM: usize = 256;
/// Largest element count of a fixed array.
pub const MAX_ARRAY_LEN: u64 = 65535;

/// A whole `.reef` file.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// A C identifier derived from the file name (`events.reef` → `events`).
    pub name: String,
    pub enums: Vec<EnumDecl>,
    pub subsystems: Vec<Subsystem>,
}

/// `enum state : u8 { IDLE, RUNNING = 5 };`
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDecl {
    pub name: String,
    pub container: IntType,
    pub entries: Vec<(String, i64)>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subsystem {
    pub name: String,
    /// Declaration index: the `TRACE_SUBSYS_*` value.
    pub index: u32,
    pub events: Vec<Event>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    /// Index within the subsystem.
    pub index: u32,
    /// `subsystem.index << 8 | index`: the CTF event id and the
    /// `TRACE_EVENT_*` value.
    pub id: u32,
    /// The description; the event name when the schema gives none or "".
    pub description: String,
    pub fields: Vec<Field>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
    pub pos: Pos,
}

/// Integer types of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntType {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

impl IntType {
    pub fn bits(self) -> u32 {
        match self {
            IntType::U8 | IntType::I8 => 8,
            IntType::U16 | IntType::I16 => 16,
            IntType::U32 | IntType::I32 => 32,
            IntType::U64 | IntType::I64 => 64,
        }
    }
    pub fn signed(self) -> bool {
        matches!(
            self,
            IntType::I8 | IntType::I16 | IntType::I32 | IntType::I64
        )
    }
    /// The schema spelling, `u32`.
    pub fn keyword(self) -> &'static str {
        match self {
            IntType::U8 => "u8",
            IntType::U16 => "u16",
            IntType::U32 => "u32",
            IntType::U64 => "u64",
            IntType::I8 => "i8",
            IntType::I16 => "i16",
            IntType::I32 => "i32",
            IntType::I64 => "i64",
        }
    }
    /// The C (and TSDL alias) spelling, `uint32_t`.
    pub fn c_type(self) -> &'static str {
        match self {
            IntType::U8 => "uint8_t",
            IntType::U16 => "uint16_t",
            IntType::U32 => "uint32_t",
            IntType::U64 => "uint64_t",
            IntType::I8 => "int8_t",
            IntType::I16 => "int16_t",
            IntType::I32 => "int32_t",
            IntType::I64 => "int64_t",
        }
    }
    pub fn from_keyword(s: &str) -> Option<IntType> {
        Some(match s {
            "u8" => IntType::U8,
            "u16" => IntType::U16,
            "u32" => IntType::U32,
            "u64" => IntType::U64,
            "i8" => IntType::I8,
            "i16" => IntType::I16,
            "i32" => IntType::I32,
            "i64" => IntType::I64,
            _ => return None,
        })
    }
    /// Whether `v` is representable.
    pub fn holds(self, v: i64) -> bool {
        let bits = self.bits();
        if self.signed() {
            let min = -(1i128 << (bits - 1));
            let max = (1i128 << (bits - 1)) - 1;
            (min..=max).contains(&(v as i128))
        } else {
            v >= 0 && (bits == 64 || (v as u64) < (1u64 << bits))
        }
    }
}

/// A fixed-size value: what arrays and sequences may hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Int(IntType),
    F32,
    F64,
    Bool,
    /// A pointer, recorded as 64 bits and shown in hex.
    Ptr,
    /// Index into [`Schema::enums`].
    Enum(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldType {
    Scalar(Scalar),
    /// NUL-terminated, at most `REEF_STRING_MAX` bytes recorded.
    String,
    /// `u32 regs[4]`
    Array(Scalar, u32),
    /// `u8 data[]`: recorded as a `u32` length field `<name>_len` followed by
    /// the elements.
    Sequence(Scalar),
}

impl Scalar {
    /// Size in bytes of the recorded value.
    pub fn size(&self, schema: &Schema) -> u32 {
        match self {
            Scalar::Int(t) => t.bits() / 8,
            Scalar::F32 => 4,
            Scalar::F64 | Scalar::Ptr => 8,
            Scalar::Bool => 1,
            Scalar::Enum(i) => schema.enums[*i].container.bits() / 8,
        }
    }
}

impl Schema {
    /// All events with their subsystem, in id order.
    pub fn events(&self) -> impl Iterator<Item = (&Subsystem, &Event)> {
        self.subsystems
            .iter()
            .flat_map(|s| s.events.iter().map(move |e| (s, e)))
    }
}
