//! From parsed blocks to the validated [`Metadata`]: trace, clocks, env,
//! stream and event classes, and the instantiation of declared types in
//! their dynamic scopes (where field references become [`FieldRef`]s).

use rustc_hash::FxHashSet;

use super::parser::{Attr, AttrValue, Block, BlockKind, Value};
use super::types::*;
use super::MetadataError;
use crate::model::*;

type R<T> = Result<T, MetadataError>;

/// Upper bound on the number of field classes the whole metadata may
/// expand to (type aliases can otherwise blow up exponentially).
const MAX_NODES: usize = 4_000_000;

fn err(line: u32, col: u32, msg: impl Into<String>) -> MetadataError {
    MetadataError {
        line,
        column: col,
        message: msg.into(),
    }
}

fn verr(a: &Attr, msg: impl Into<String>) -> MetadataError {
    err(a.vline, a.vcol, msg)
}

fn val<'v>(a: &'v Attr) -> R<&'v Value<'v>> {
    match &a.value {
        AttrValue::Val(v) => Ok(v),
        AttrValue::Type(_) => Err(err(
            a.line,
            a.col,
            format!("'{}' expects a value ('='), not a type (':=')", a.name),
        )),
    }
}

fn uint_attr(a: &Attr, max: u128) -> R<u64> {
    match val(a)? {
        &Value::Int(v) if v >= 0 && (v as u128) <= max => Ok(v as u64),
        v => Err(verr(
            a,
            format!(
                "invalid '{}' {} (expected an unsigned integer)",
                a.name,
                v.describe()
            ),
        )),
    }
}

fn int_attr(a: &Attr) -> R<i64> {
    match val(a)? {
        &Value::Int(v) if v >= i64::MIN as i128 && v <= i64::MAX as i128 => Ok(v as i64),
        v => Err(verr(
            a,
            format!(
                "invalid '{}' {} (expected a 64-bit signed integer)",
                a.name,
                v.describe()
            ),
        )),
    }
}

fn str_attr(a: &Attr) -> R<String> {
    match val(a)? {
        Value::Str(s) => Ok(s.to_string()),
        v => Err(verr(
            a,
            format!("invalid '{}' {} (expected a string)", a.name, v.describe()),
        )),
    }
}

/// A name given as a string or as an identifier.
fn name_attr(a: &Attr) -> R<String> {
    match val(a)? {
        Value::Str(s) => Ok(s.to_string()),
        Value::Path(p) => Ok(p.to_string()),
        v => Err(verr(
            a,
            format!("invalid '{}' {} (expected a name)", a.name, v.describe()),
        )),
    }
}

fn bool_attr(a: &Attr) -> R<bool> {
    match val(a)? {
        Value::Int(0) => Ok(false),
        Value::Int(1) => Ok(true),
        Value::Path(p) if p == "true" || p == "TRUE" => Ok(true),
        Value::Path(p) if p == "false" || p == "FALSE" => Ok(false),
        v => Err(verr(
            a,
            format!(
                "invalid '{}' {} (expected true or false)",
                a.name,
                v.describe()
            ),
        )),
    }
}

fn type_attr(a: &Attr) -> R<Ty> {
    match &a.value {
        AttrValue::Type(t @ Ty::Struct(_)) => Ok(t.clone()),
        AttrValue::Type(t) => Err(verr(
            a,
            format!("'{}' must be a structure, found {}", a.name, t.kind_name()),
        )),
        AttrValue::Val(_) => Err(err(
            a.line,
            a.col,
            format!("'{}' expects a type (':='), not a value", a.name),
        )),
    }
}

pub(crate) fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut i = 0;
    while i < 36 {
        if matches!(i, 8 | 13 | 18 | 23) {
            if b[i] != b'-' {
                return None;
            }
            i += 1;
            continue;
        }
        let hi = (b[i] as char).to_digit(16)?;
        let lo = (*b.get(i + 1)? as char).to_digit(16)?;
        *out.get_mut(n)? = (hi * 16 + lo) as u8;
        n += 1;
        i += 2;
    }
    (n == 16).then_some(out)
}

fn uuid_attr(a: &Attr) -> R<[u8; 16]> {
    let s = str_attr(a)?;
    parse_uuid(&s).ok_or_else(|| {
        verr(
            a,
            format!(
                "invalid UUID \"{}\" (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
                super::lexer::shorten(&s.escape_debug().to_string())
            ),
        )
    })
}

/// Rejects a second occurrence of a known attribute.
fn check_dup<'v>(seen: &mut Vec<&'v str>, a: &'v Attr, what: &str) -> R<()> {
    if seen.contains(&&*a.name) {
        return Err(err(
            a.line,
            a.col,
            format!("duplicate attribute '{}' in {what} block", a.name),
        ));
    }
    seen.push(&a.name);
    Ok(())
}

struct TraceDecl {
    major: u32,
    minor: u32,
    uuid: Option<[u8; 16]>,
    byte_order: ByteOrder,
    packet_header: Option<Ty>,
}

struct StreamDecl {
    id: u64,
    packet_context: Option<Ty>,
    event_header: Option<Ty>,
    event_context: Option<Ty>,
    line: u32,
    col: u32,
}

struct EventDecl {
    id: Option<u64>,
    stream_id: Option<(u64, u32, u32)>,
    name: String,
    loglevel: Option<i64>,
    model_emf_uri: Option<String>,
    context: Option<Ty>,
    fields: Option<Ty>,
    line: u32,
    col: u32,
}

fn trace_decl(b: &Block) -> R<TraceDecl> {
    let mut seen = Vec::with_capacity(b.attrs.len());
    let (mut major, mut minor, mut uuid, mut bo, mut ph) = (None, None, None, None, None);
    for a in &b.attrs {
        match &*a.name {
            "major" => {
                check_dup(&mut seen, a, "trace")?;
                major = Some((uint_attr(a, u32::MAX as u128)? as u32, a));
            }
            "minor" => {
                check_dup(&mut seen, a, "trace")?;
                minor = Some((uint_attr(a, u32::MAX as u128)? as u32, a));
            }
            "uuid" => {
                check_dup(&mut seen, a, "trace")?;
                uuid = Some(uuid_attr(a)?);
            }
            "byte_order" => {
                check_dup(&mut seen, a, "trace")?;
                bo = Some(match val(a)? {
                    Value::Path(p) if p == "be" || p == "network" => ByteOrder::Big,
                    Value::Path(p) if p == "le" => ByteOrder::Little,
                    v => {
                        return Err(verr(
                            a,
                            format!(
                                "invalid trace byte_order {} (expected be, le or network)",
                                v.describe()
                            ),
                        ))
                    }
                });
            }
            "packet.header" => {
                check_dup(&mut seen, a, "trace")?;
                ph = Some(type_attr(a)?);
            }
            _ => {}
        }
    }
    let (Some((major, ma)), Some((minor, _))) = (major, minor) else {
        return Err(err(
            b.line,
            b.col,
            "trace block needs 'major' and 'minor' attributes",
        ));
    };
    if (major, minor) != (1, 8) {
        return Err(verr(
            ma,
            format!("unsupported trace version {major}.{minor} (expected 1.8)"),
        ));
    }
    let Some(byte_order) = bo else {
        return Err(err(
            b.line,
            b.col,
            "trace block needs a 'byte_order' attribute",
        ));
    };
    Ok(TraceDecl {
        major,
        minor,
        uuid,
        byte_order,
        packet_header: ph,
    })
}

fn clock_decl(b: &Block) -> R<ClockClass> {
    let mut seen = Vec::with_capacity(b.attrs.len());
    let mut c = ClockClass::default();
    let mut has_name = false;
    for a in &b.attrs {
        match &*a.name {
            "name" => {
                check_dup(&mut seen, a, "clock")?;
                c.name = name_attr(a)?;
                has_name = true;
            }
            "uuid" => {
                check_dup(&mut seen, a, "clock")?;
                c.uuid = Some(uuid_attr(a)?);
            }
            "description" => {
                check_dup(&mut seen, a, "clock")?;
                c.description = Some(str_attr(a)?);
            }
            "freq" => {
                check_dup(&mut seen, a, "clock")?;
                c.freq = uint_attr(a, u64::MAX as u128)?;
                if c.freq == 0 {
                    return Err(verr(a, "clock frequency cannot be 0"));
                }
            }
            "precision" => {
                check_dup(&mut seen, a, "clock")?;
                c.precision = uint_attr(a, u64::MAX as u128)?;
            }
            "offset_s" => {
                check_dup(&mut seen, a, "clock")?;
                c.offset_s = int_attr(a)?;
            }
            "offset" => {
                check_dup(&mut seen, a, "clock")?;
                c.offset = int_attr(a)?;
            }
            "absolute" => {
                check_dup(&mut seen, a, "clock")?;
                c.absolute = bool_attr(a)?;
            }
            _ => {}
        }
    }
    if !has_name {
        return Err(err(b.line, b.col, "clock block needs a 'name' attribute"));
    }
    Ok(c)
}

fn stream_decl(b: &Block, first: bool) -> R<StreamDecl> {
    let mut seen = Vec::with_capacity(b.attrs.len());
    let mut s = StreamDecl {
        id: 0,
        packet_context: None,
        event_header: None,
        event_context: None,
        line: b.line,
        col: b.col,
    };
    let mut has_id = false;
    for a in &b.attrs {
        match &*a.name {
            "id" => {
                check_dup(&mut seen, a, "stream")?;
                s.id = uint_attr(a, u64::MAX as u128)?;
                has_id = true;
            }
            "packet.context" => {
                check_dup(&mut seen, a, "stream")?;
                s.packet_context = Some(type_attr(a)?);
            }
            "event.header" => {
                check_dup(&mut seen, a, "stream")?;
                s.event_header = Some(type_attr(a)?);
            }
            "event.context" => {
                check_dup(&mut seen, a, "stream")?;
                s.event_context = Some(type_attr(a)?);
            }
            _ => {}
        }
    }
    if !has_id && !first {
        return Err(err(
            b.line,
            b.col,
            "stream block needs an 'id' attribute when there are several streams",
        ));
    }
    Ok(s)
}

fn event_decl(b: &Block) -> R<EventDecl> {
    let mut seen = Vec::with_capacity(b.attrs.len());
    let mut e = EventDecl {
        id: None,
        stream_id: None,
        name: String::new(),
        loglevel: None,
        model_emf_uri: None,
        context: None,
        fields: None,
        line: b.line,
        col: b.col,
    };
    let mut has_name = false;
    for a in &b.attrs {
        match &*a.name {
            "name" => {
                check_dup(&mut seen, a, "event")?;
                e.name = name_attr(a)?;
                has_name = true;
            }
            "id" => {
                check_dup(&mut seen, a, "event")?;
                e.id = Some(uint_attr(a, u64::MAX as u128)?);
            }
            "stream_id" => {
                check_dup(&mut seen, a, "event")?;
                e.stream_id = Some((uint_attr(a, u64::MAX as u128)?, a.vline, a.vcol));
            }
            "loglevel" => {
                check_dup(&mut seen, a, "event")?;
                e.loglevel = Some(int_attr(a)?);
            }
            "model.emf.uri" => {
                check_dup(&mut seen, a, "event")?;
                e.model_emf_uri = Some(str_attr(a)?);
            }
            "context" => {
                check_dup(&mut seen, a, "event")?;
                e.context = Some(type_attr(a)?);
            }
            "fields" => {
                check_dup(&mut seen, a, "event")?;
                e.fields = Some(type_attr(a)?);
            }
            _ => {}
        }
    }
    if !has_name {
        return Err(err(b.line, b.col, "event block needs a 'name' attribute"));
    }
    Ok(e)
}

fn callsite_decl(b: &Block) -> R<Callsite> {
    let mut c = Callsite {
        name: String::new(),
        func: String::new(),
        file: String::new(),
        line: 0,
        ip: 0,
    };
    for a in &b.attrs {
        match &*a.name {
            "name" => c.name = name_attr(a)?,
            "func" => c.func = name_attr(a)?,
            "file" => c.file = name_attr(a)?,
            "line" => c.line = uint_attr(a, u64::MAX as u128)?,
            "ip" => c.ip = uint_attr(a, u64::MAX as u128)?,
            _ => {}
        }
    }
    Ok(c)
}

fn env_value(a: &Attr) -> R<EnvValue> {
    Ok(match val(a)? {
        // Values beyond i64 wrap, as babeltrace's C code does.
        Value::Int(v) => EnvValue::Int(*v as i64),
        Value::Str(s) | Value::Path(s) => EnvValue::Str(s.to_string()),
    })
}

/// The declared types of the dynamic scopes visible from one event.
#[derive(Default, Clone)]
struct ScopeTys {
    tys: [Option<Ty>; 6],
}

fn scope_index(s: Scope) -> usize {
    match s {
        Scope::PacketHeader => 0,
        Scope::PacketContext => 1,
        Scope::EventHeader => 2,
        Scope::EventCommonContext => 3,
        Scope::EventSpecificContext => 4,
        Scope::EventPayload => 5,
    }
}

/// State shared by all instantiations.
struct Shared {
    /// Field classes that may still be created.
    budget: usize,
    /// Deferred references resolved at least once.
    resolved: std::collections::HashSet<u32>,
}

/// An enclosing struct or variant while instantiating: its members, and
/// the length of the path to it.
struct DynFrame<'a> {
    members: &'a [(String, Ty)],
    is_variant: bool,
    depth: usize,
}

struct Inst<'a, 's> {
    scope: Scope,
    roots: &'a ScopeTys,
    /// The structures being instantiated: their anchor and the length of
    /// `path` at them (their path is that prefix of `path`).
    anchors: Vec<(u32, usize)>,
    frames: Vec<DynFrame<'a>>,
    path: Vec<u32>,
    shared: &'s mut Shared,
    line: u32,
    col: u32,
}

/// Follows `names` from `ty`, through structure members and variant
/// options; returns the indices and the target type.
fn descend<'t>(mut ty: &'t Ty, names: &[String], r: &PathRef) -> R<(Vec<u32>, &'t Ty)> {
    let mut path = Vec::new();
    for name in names {
        let found = match ty {
            Ty::Struct(s) => s
                .members
                .iter()
                .position(|(n, _)| n == name)
                .map(|j| (j, &s.members[j].1)),
            Ty::Variant(v) => v
                .options
                .iter()
                .position(|(n, _)| n == name)
                .map(|j| (j, &v.options[j].1)),
            Ty::Array(_) => {
                return Err(err(
                    r.line,
                    r.col,
                    format!(
                        "'{}': cannot refer to a field inside an array or sequence",
                        r.text
                    ),
                ))
            }
            _ => None,
        };
        let Some((j, t)) = found else {
            return Err(err(
                r.line,
                r.col,
                format!("'{}': no field '{name}' in {}", r.text, ty.kind_name()),
            ));
        };
        path.push(j as u32);
        ty = t;
    }
    Ok((path, ty))
}

impl<'a> Inst<'a, '_> {
    fn field_ref(&mut self, r: &PathRef) -> R<(FieldRef, Option<Ty>)> {
        match &r.kind {
            RefKind::Lexical { anchor, path } => {
                let &(_, depth) = self
                    .anchors
                    .iter()
                    .rev()
                    .find(|(a, _)| a == anchor)
                    .ok_or_else(|| {
                        err(
                            r.line,
                            r.col,
                            format!(
                                "'{}': the referenced field is not reachable from here",
                                r.text
                            ),
                        )
                    })?;
                let mut full = Vec::with_capacity(depth + path.len());
                full.extend_from_slice(&self.path[..depth]);
                full.extend_from_slice(path);
                Ok((
                    FieldRef {
                        scope: self.scope,
                        path: full,
                    },
                    None,
                ))
            }
            RefKind::Deferred { id, names } => {
                let Some(first) = names.first() else {
                    return Err(err(r.line, r.col, "empty field path"));
                };
                for f in self.frames.iter().rev() {
                    if f.is_variant {
                        continue;
                    }
                    // Only fields before the one being decoded.
                    let limit = self.path.get(f.depth).map_or(0, |&i| i as usize);
                    let Some(i) = f.members[..limit.min(f.members.len())]
                        .iter()
                        .position(|(n, _)| n == first)
                    else {
                        continue;
                    };
                    let (rest, target) = descend(&f.members[i].1, &names[1..], r)?;
                    let mut full = self.path[..f.depth].to_vec();
                    full.push(i as u32);
                    full.extend(rest);
                    self.shared.resolved.insert(*id);
                    return Ok((
                        FieldRef {
                            scope: self.scope,
                            path: full,
                        },
                        Some(target.clone()),
                    ));
                }
                Err(err(
                    r.line,
                    r.col,
                    format!(
                        "no field '{first}' declared before this point in an enclosing structure"
                    ),
                ))
            }
            RefKind::Absolute { scope, names } => {
                if *scope > self.scope {
                    return Err(err(
                        r.line,
                        r.col,
                        format!(
                            "'{}' refers to {}, which is decoded after {}",
                            r.text,
                            scope_name(*scope),
                            scope_name(self.scope)
                        ),
                    ));
                }
                let root = self.roots.tys[scope_index(*scope)]
                    .as_ref()
                    .ok_or_else(|| {
                        err(
                            r.line,
                            r.col,
                            format!("'{}': scope {} is not defined", r.text, scope_name(*scope)),
                        )
                    })?;
                let (path, ty) = descend(root, names, r)?;
                if *scope == self.scope {
                    let k = path
                        .iter()
                        .zip(&self.path)
                        .take_while(|(a, b)| a == b)
                        .count();
                    let before = k < path.len() && k < self.path.len() && path[k] < self.path[k];
                    if !before {
                        return Err(err(
                            r.line,
                            r.col,
                            format!(
                                "'{}' refers to a field that is not decoded before this one",
                                r.text
                            ),
                        ));
                    }
                }
                Ok((
                    FieldRef {
                        scope: *scope,
                        path,
                    },
                    Some(ty.clone()),
                ))
            }
        }
    }

    fn inst(&mut self, ty: &'a Ty) -> R<FieldClass> {
        if self.shared.budget == 0 {
            return Err(err(
                self.line,
                self.col,
                format!("metadata expands to more than {MAX_NODES} field classes"),
            ));
        }
        self.shared.budget -= 1;
        Ok(match ty {
            Ty::Int(i) => FieldClass::Integer(i.clone()),
            Ty::Float(f) => FieldClass::Float(f.clone()),
            Ty::Enum(e) => FieldClass::Enum((**e).clone()),
            Ty::Str(s) => FieldClass::String(s.clone()),
            Ty::Struct(s) => {
                self.anchors.push((s.anchor, self.path.len()));
                self.frames.push(DynFrame {
                    members: &s.members,
                    is_variant: false,
                    depth: self.path.len(),
                });
                let mut members = Vec::with_capacity(s.members.len());
                for (i, (name, t)) in s.members.iter().enumerate() {
                    self.path.push(i as u32);
                    let class = self.inst(t);
                    self.path.pop();
                    members.push(StructMember {
                        name: name.clone(),
                        class: class?,
                    });
                }
                self.anchors.pop();
                self.frames.pop();
                FieldClass::Struct(StructClass {
                    min_align: s.min_align,
                    members,
                })
            }
            Ty::Variant(v) => {
                let Some(tag) = &v.tag else {
                    return Err(err(
                        self.line,
                        self.col,
                        "a variant without a tag is used as a field",
                    ));
                };
                let (fr, target) = self.field_ref(tag)?;
                if let Some(t) = target {
                    check_tag_target(&t, &v.options)
                        .map_err(|m| err(tag.line, tag.col, format!("'{}': {m}", tag.text)))?;
                }
                let mut options = Vec::with_capacity(v.options.len());
                self.frames.push(DynFrame {
                    members: &v.options,
                    is_variant: true,
                    depth: self.path.len(),
                });
                for (i, (name, t)) in v.options.iter().enumerate() {
                    self.path.push(i as u32);
                    let class = self.inst(t);
                    self.path.pop();
                    options.push(VariantOption {
                        name: name.clone(),
                        class: class?,
                        ranges: None,
                    });
                }
                self.frames.pop();
                FieldClass::Variant(VariantClass { tag: fr, options })
            }
            Ty::Array(a) => {
                // Array elements are not path steps: a reference from inside
                // an element designates the element being decoded.
                let element = Box::new(self.inst(&a.elem)?);
                match &a.len {
                    ArrLen::Fixed(n) => FieldClass::Array(ArrayClass {
                        element,
                        length: *n,
                        min_align: 1,
                    }),
                    ArrLen::Seq(r) => {
                        let (fr, target) = self.field_ref(r)?;
                        if let Some(t) = target {
                            check_length_target(&t)
                                .map_err(|m| err(r.line, r.col, format!("'{}': {m}", r.text)))?;
                        }
                        FieldClass::Sequence(SequenceClass {
                            element,
                            length: fr,
                            min_align: 1,
                        })
                    }
                }
            }
        })
    }
}

fn instantiate(
    scope: Scope,
    roots: &ScopeTys,
    shared: &mut Shared,
    line: u32,
    col: u32,
) -> R<Option<FieldClass>> {
    let Some(ty) = &roots.tys[scope_index(scope)] else {
        return Ok(None);
    };
    let mut inst = Inst {
        scope,
        roots,
        anchors: Vec::new(),
        frames: Vec::new(),
        path: Vec::new(),
        shared,
        line,
        col,
    };
    inst.inst(ty).map(Some)
}

pub(crate) fn build(
    blocks: &[Block],
    clock_maps: &[(String, u32, u32)],
    deferred: &[(u32, u32, u32, String)],
    eof: (u32, u32),
) -> R<Metadata> {
    // The trace block.
    let mut trace = None;
    for b in blocks.iter().filter(|b| b.kind == BlockKind::Trace) {
        if trace.is_some() {
            return Err(err(b.line, b.col, "more than one trace block"));
        }
        trace = Some(trace_decl(b)?);
    }
    let Some(trace) = trace else {
        return Err(err(eof.0, eof.1, "metadata has no trace block"));
    };

    // Clocks, env, callsites.
    let mut clocks: Vec<ClockClass> = Vec::new();
    for b in blocks.iter().filter(|b| b.kind == BlockKind::Clock) {
        let c = clock_decl(b)?;
        if clocks.iter().any(|o| o.name == c.name) {
            return Err(err(
                b.line,
                b.col,
                format!("clock '{}' is defined twice", c.name),
            ));
        }
        clocks.push(c);
    }
    let mut env: Vec<(String, EnvValue)> = Vec::new();
    for b in blocks.iter().filter(|b| b.kind == BlockKind::Env) {
        for a in &b.attrs {
            let v = env_value(a)?;
            match env.iter_mut().find(|(k, _)| *k == a.name) {
                Some(e) => e.1 = v,
                None => env.push((a.name.to_string(), v)),
            }
        }
    }
    let callsites = blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Callsite)
        .map(callsite_decl)
        .collect::<R<Vec<_>>>()?;

    // Streams, then events (whatever their order in the text).
    let mut streams: Vec<StreamDecl> = Vec::new();
    for b in blocks.iter().filter(|b| b.kind == BlockKind::Stream) {
        let s = stream_decl(b, streams.is_empty())?;
        if streams.iter().any(|o| o.id == s.id) {
            return Err(err(
                b.line,
                b.col,
                format!("stream id {} is defined twice", s.id),
            ));
        }
        streams.push(s);
    }
    // The events in text order with their stream's index, then per stream
    // (each list sized once: a kernel trace has thousands of event
    // classes); the number of events of each stream so far.
    let event_blocks = blocks.iter().filter(|b| b.kind == BlockKind::Event);
    let mut decls: Vec<(usize, EventDecl)> = Vec::with_capacity(event_blocks.clone().count());
    let mut counts: Vec<usize> = vec![0; streams.len()];
    // (stream index, event id) of the events so far.
    let mut ids: FxHashSet<(usize, u64)> =
        FxHashSet::with_capacity_and_hasher(decls.capacity(), Default::default());
    for b in event_blocks {
        let e = event_decl(b)?;
        let si = match e.stream_id {
            Some((sid, l, c)) => {
                if streams.is_empty() && sid == 0 {
                    None
                } else {
                    Some(streams.iter().position(|s| s.id == sid).ok_or_else(|| {
                        err(
                            l,
                            c,
                            format!("event '{}' refers to undefined stream {sid}", e.name),
                        )
                    })?)
                }
            }
            None => match streams.len() {
                0 => None,
                1 => Some(0),
                _ => {
                    return Err(err(
                        b.line,
                        b.col,
                        format!(
                            "event '{}' has no 'stream_id' but there are several streams",
                            e.name
                        ),
                    ))
                }
            },
        };
        let si = match si {
            Some(i) => i,
            None => {
                // An implicit stream class (id 0) for a metadata without
                // stream blocks.
                if streams.is_empty() {
                    streams.push(StreamDecl {
                        id: 0,
                        packet_context: None,
                        event_header: None,
                        event_context: None,
                        line: b.line,
                        col: b.col,
                    });
                    counts.push(0);
                }
                0
            }
        };
        let id = match e.id {
            Some(id) => id,
            None if counts[si] == 0 => 0,
            None => {
                return Err(err(
                    b.line,
                    b.col,
                    format!(
                        "event '{}' has no 'id' but its stream has other events",
                        e.name
                    ),
                ))
            }
        };
        if !ids.insert((si, id)) {
            return Err(err(
                b.line,
                b.col,
                format!("event id {id} is used twice in stream {}", streams[si].id),
            ));
        }
        counts[si] += 1;
        decls.push((si, EventDecl { id: Some(id), ..e }));
    }
    if streams.is_empty() {
        streams.push(StreamDecl {
            id: 0,
            packet_context: None,
            event_header: None,
            event_context: None,
            line: eof.0,
            col: eof.1,
        });
        counts.push(0);
    }
    let mut events: Vec<Vec<EventDecl>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (si, e) in decls {
        events[si].push(e);
    }

    // Instantiate every dynamic scope.
    let mut budget = Shared {
        budget: MAX_NODES,
        resolved: Default::default(),
    };
    let mut roots = ScopeTys::default();
    roots.tys[0] = trace.packet_header.clone();
    let tb = blocks
        .iter()
        .find(|b| b.kind == BlockKind::Trace)
        .map_or(eof, |b| (b.line, b.col));
    let packet_header = instantiate(Scope::PacketHeader, &roots, &mut budget, tb.0, tb.1)?;
    let mut out_streams = Vec::with_capacity(streams.len());
    for (s, evs) in streams.iter().zip(events) {
        let mut sroots = roots.clone();
        sroots.tys[1] = s.packet_context.clone();
        sroots.tys[2] = s.event_header.clone();
        sroots.tys[3] = s.event_context.clone();
        let (l, c) = (s.line, s.col);
        let packet_context = instantiate(Scope::PacketContext, &sroots, &mut budget, l, c)?;
        let event_header = instantiate(Scope::EventHeader, &sroots, &mut budget, l, c)?;
        let event_context = instantiate(Scope::EventCommonContext, &sroots, &mut budget, l, c)?;
        let mut out_events = Vec::with_capacity(evs.len());
        // (the stream's scopes, with each event's own in turn)
        let mut eroots = sroots;
        for e in evs {
            eroots.tys[4] = e.context.clone();
            eroots.tys[5] = e.fields.clone();
            let (l, c) = (e.line, e.col);
            let context = instantiate(Scope::EventSpecificContext, &eroots, &mut budget, l, c)?;
            let payload = instantiate(Scope::EventPayload, &eroots, &mut budget, l, c)?;
            out_events.push(EventClass {
                id: e.id.unwrap_or(0),
                name: e.name,
                loglevel: e.loglevel,
                model_emf_uri: e.model_emf_uri,
                context,
                payload,
            });
        }
        out_streams.push(StreamClass {
            id: s.id,
            packet_context,
            event_header,
            event_context,
            events: out_events,
            default_clock: None,
        });
    }

    let md = Metadata {
        major: trace.major,
        minor: trace.minor,
        uuid: trace.uuid,
        uid: None,
        byte_order: trace.byte_order,
        packet_header,
        env,
        clocks,
        streams: out_streams,
        callsites,
    };

    // Relative paths of types that were never used, and not found where
    // they are written.
    for (id, line, col, first) in deferred {
        if !budget.resolved.contains(id) {
            return Err(err(
                *line,
                *col,
                format!("no field '{first}' declared before this point in an enclosing structure"),
            ));
        }
    }
    let stream_pos: Vec<(u32, u32)> = streams.iter().map(|s| (s.line, s.col)).collect();
    check_meanings(&md, tb, &stream_pos)?;

    // Every `map = clock.NAME.value` must name a defined clock.
    for (name, l, c) in clock_maps {
        if md.clock(name).is_none() {
            return Err(err(
                *l,
                *c,
                format!("integer mapped to clock '{name}', which is not defined"),
            ));
        }
    }
    Ok(md)
}

/// The root member `name` of a scope structure, with its index.
fn root_member<'a>(scope: Option<&'a FieldClass>, name: &str) -> Option<(usize, &'a FieldClass)> {
    let FieldClass::Struct(s) = scope? else {
        return None;
    };
    s.members
        .iter()
        .enumerate()
        .find(|(_, m)| m.name == name)
        .map(|(i, m)| (i, &m.class))
}

fn check_unsigned(fc: &FieldClass, what: &str, pos: (u32, u32)) -> R<()> {
    let int = match fc {
        FieldClass::Integer(i) => i,
        FieldClass::Enum(e) => &e.container,
        _ => return Err(err(pos.0, pos.1, format!("{what} must be an integer"))),
    };
    if int.signed {
        return Err(err(pos.0, pos.1, format!("{what} must be unsigned")));
    }
    Ok(())
}

/// Checks the fields that have a meaning for the reader (`magic`,
/// `stream_id`, `content_size`, event header `id`, ...), as babeltrace2
/// does.
fn check_meanings(md: &Metadata, trace_pos: (u32, u32), stream_pos: &[(u32, u32)]) -> R<()> {
    let ph = md.packet_header.as_ref();
    if let Some((i, fc)) = root_member(ph, "magic") {
        if i != 0 {
            return Err(err(
                trace_pos.0,
                trace_pos.1,
                "packet header 'magic' must be the first field",
            ));
        }
        check_unsigned(fc, "packet header 'magic'", trace_pos)?;
        if let FieldClass::Integer(IntegerClass { size, .. })
        | FieldClass::Enum(EnumClass {
            container: IntegerClass { size, .. },
            ..
        }) = fc
        {
            if *size != 32 {
                return Err(err(
                    trace_pos.0,
                    trace_pos.1,
                    "packet header 'magic' must be a 32-bit integer",
                ));
            }
        }
    }
    match root_member(ph, "stream_id") {
        Some((_, fc)) => check_unsigned(fc, "packet header 'stream_id'", trace_pos)?,
        None if md.streams.len() > 1 => {
            return Err(err(
                trace_pos.0,
                trace_pos.1,
                "the packet header needs a 'stream_id' field as there are several streams",
            ))
        }
        None => {}
    }
    if let Some((_, fc)) = root_member(ph, "stream_instance_id") {
        check_unsigned(fc, "packet header 'stream_instance_id'", trace_pos)?;
    }
    if let Some((_, fc)) = root_member(ph, "uuid") {
        let ok = match fc {
            FieldClass::Array(a) => {
                a.length == 16
                    && matches!(&*a.element, FieldClass::Integer(i) if !i.signed && i.size == 8 && i.align == 8)
            }
            _ => false,
        };
        if !ok {
            return Err(err(
                trace_pos.0,
                trace_pos.1,
                "packet header 'uuid' must be an array of 16 unsigned 8-bit, byte-aligned integers",
            ));
        }
    }
    for (s, pos) in md.streams.iter().zip(stream_pos) {
        let pc = s.packet_context.as_ref();
        for name in [
            "timestamp_begin",
            "timestamp_end",
            "events_discarded",
            "packet_seq_num",
            "packet_size",
            "content_size",
        ] {
            if let Some((_, fc)) = root_member(pc, name) {
                check_unsigned(fc, &format!("packet context '{name}'"), *pos)?;
            }
        }
        match root_member(s.event_header.as_ref(), "id") {
            Some((_, fc)) => check_unsigned(fc, "event header 'id'", *pos)?,
            None if s.events.len() > 1 => {
                return Err(err(
                    pos.0,
                    pos.1,
                    format!(
                    "stream {} has several event classes but its event header has no 'id' field",
                    s.id
                ),
                ))
            }
            None => {}
        }
    }
    Ok(())
}
