//! Intermediate ("declared") field types built while parsing, before they
//! are instantiated in a dynamic scope (see `resolve.rs`).
//!
//! Types are shared (`Rc`) so that using a type alias is cheap; field
//! references (sequence lengths, variant tags) are kept in a form that does
//! not yet depend on where the type ends up.

use std::rc::Rc;

use crate::model::{EnumClass, FloatClass, IntegerClass, Scope, StringClass};

/// Maximum nesting depth of types and of the TSDL text.
pub(crate) const MAX_DEPTH: u32 = 100;

#[derive(Debug, Clone)]
pub(crate) enum Ty {
    Int(IntegerClass),
    Float(FloatClass),
    Enum(Rc<EnumClass>),
    Str(StringClass),
    Struct(Rc<StructTy>),
    Variant(Rc<VariantTy>),
    Array(Rc<ArrTy>),
}

impl Ty {
    pub(crate) fn depth(&self) -> u32 {
        match self {
            Ty::Int(_) | Ty::Float(_) | Ty::Enum(_) | Ty::Str(_) => 1,
            Ty::Struct(s) => s.depth,
            Ty::Variant(v) => v.depth,
            Ty::Array(a) => a.depth,
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Ty::Int(_) => "an integer",
            Ty::Float(_) => "a floating point number",
            Ty::Enum(_) => "an enumeration",
            Ty::Str(_) => "a string",
            Ty::Struct(_) => "a structure",
            Ty::Variant(_) => "a variant",
            Ty::Array(a) => match a.len {
                ArrLen::Fixed(_) => "an array",
                ArrLen::Seq(_) => "a sequence",
            },
        }
    }
}

#[derive(Debug)]
pub(crate) struct StructTy {
    /// Identifies the struct body (the lexical scope) for relative refs.
    pub anchor: u32,
    pub min_align: u32,
    pub members: Vec<(String, Ty)>,
    pub depth: u32,
}

#[derive(Debug)]
pub(crate) struct VariantTy {
    pub tag: Option<PathRef>,
    pub options: Vec<(String, Ty)>,
    pub depth: u32,
}

#[derive(Debug)]
pub(crate) enum ArrLen {
    Fixed(u64),
    Seq(PathRef),
}

#[derive(Debug)]
pub(crate) struct ArrTy {
    pub elem: Ty,
    pub len: ArrLen,
    pub depth: u32,
}

/// A sequence length or variant tag reference.
#[derive(Debug, Clone)]
pub(crate) struct PathRef {
    pub kind: RefKind,
    /// The path as written, for messages.
    pub text: String,
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone)]
pub(crate) enum RefKind {
    /// Resolved in the lexical scope: member indices `path` starting at the
    /// struct body identified by `anchor`.
    Lexical { anchor: u32, path: Vec<u32> },
    /// An absolute path: names of members below the root of `scope`.
    Absolute { scope: Scope, names: Vec<String> },
    /// A relative path not found in the lexical scope: looked up where the
    /// type is used, in the enclosing structures of the field (as
    /// babeltrace2 does). `id` identifies it, so that one never resolved
    /// (in an unused type) is still reported.
    Deferred { id: u32, names: Vec<String> },
}

/// Whether `ty` can be a sequence length: an unsigned integer, or an
/// enumeration with an unsigned container.
pub(crate) fn check_length_target(ty: &Ty) -> Result<(), String> {
    match ty {
        Ty::Int(i) if !i.signed => Ok(()),
        Ty::Enum(e) if !e.container.signed => Ok(()),
        Ty::Int(_) | Ty::Enum(_) => {
            Err("sequence length must be an unsigned integer, found a signed one".into())
        }
        other => Err(format!(
            "sequence length must be an unsigned integer, found {}",
            other.kind_name()
        )),
    }
}

/// Whether `ty` can be the tag of a variant with `options`: an enumeration
/// of which at least one label names an option.
pub(crate) fn check_tag_target(ty: &Ty, options: &[(String, Ty)]) -> Result<(), String> {
    let Ty::Enum(e) = ty else {
        return Err(format!(
            "variant tag must be an enumeration, found {}",
            ty.kind_name()
        ));
    };
    if !options.is_empty()
        && !options
            .iter()
            .any(|(n, _)| e.mappings.iter().any(|m| &m.label == n))
    {
        return Err("no option of the variant matches a label of its tag enumeration".into());
    }
    Ok(())
}

/// Dynamic scope prefixes of absolute paths (CTF 1.8 section 7.3.2).
pub(crate) const ABSOLUTE_PREFIXES: &[(&[&str], Scope)] = &[
    (&["trace", "packet", "header"], Scope::PacketHeader),
    (&["stream", "packet", "context"], Scope::PacketContext),
    (&["stream", "event", "header"], Scope::EventHeader),
    (&["stream", "event", "context"], Scope::EventCommonContext),
    (&["event", "context"], Scope::EventSpecificContext),
    (&["event", "fields"], Scope::EventPayload),
];

pub(crate) fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::PacketHeader => "trace.packet.header",
        Scope::PacketContext => "stream.packet.context",
        Scope::EventHeader => "stream.event.header",
        Scope::EventCommonContext => "stream.event.context",
        Scope::EventSpecificContext => "event.context",
        Scope::EventPayload => "event.fields",
    }
}
