//! CTF 2 metadata (CTF2-SPEC-2.0): a JSON text sequence (RFC 7464: each
//! fragment preceded by the record separator 0x1E) read into the same
//! resolved [`Metadata`] as TSDL, so that plans, decoding and printing do
//! not know which format a trace was written in.
//!
//! Fragments: a preamble first (exactly once), then field class aliases,
//! at most one trace class, clock classes, data stream classes and event
//! record classes, each of the last three referring only to what came
//! before it. Field classes map onto the model as follows: fixed-length
//! integers onto [`IntegerClass`] (with mappings: [`EnumClass`]), UTF-8
//! strings onto CTF 1.8's strings and text arrays / sequences, static- and
//! dynamic-length arrays onto arrays and sequences, structures and
//! variants onto theirs (a variant's options keep their selector ranges);
//! what CTF 1.8 lacks has a class of its own: booleans, bit maps,
//! variable-length integers, BLOBs and UTF-16/32 strings, optionals.
//!
//! Field locations (an origin scope and a path of member names, or a path
//! relative to the structure holding the field, where `null` goes up one
//! structure) become [`FieldRef`]s once their scope is complete: a path
//! crosses arrays (the element being decoded), optionals and variants (the
//! option holding the next name, the referring field's own option first).
//! Roles become [`Roles`]; a `default-clock-timestamp` or
//! `packet-end-default-clock-timestamp` integer is mapped to its data stream
//! class's default clock.
//!
//! Errors name the fragment (1-based), the JSON path inside it and what was
//! expected; their line and column are those of the fragment's start.

use std::collections::HashMap;

use serde_json::{Map, Value as J};

use super::MetadataError;
use crate::model::*;

type R<T> = Result<T, MetadataError>;

/// The JSON text sequence's record separator, the first byte of CTF 2
/// metadata.
pub const RS: u8 = 0x1e;

/// Whether `bytes` is CTF 2 metadata (a JSON text sequence; CTF 2
/// metadata is never packetized).
pub fn is_ctf2(bytes: &[u8]) -> bool {
    bytes.first() == Some(&RS)
}

/// Most nested field classes (and alias expansions) accepted.
const MAX_DEPTH: usize = 100;

/// Reads CTF 2 metadata into a validated [`Metadata`].
pub fn read(bytes: &[u8]) -> R<Metadata> {
    let mut r = Reader::default();
    let frags = split(bytes);
    if frags.is_empty() {
        return Err(MetadataError {
            line: 1,
            column: 1,
            message: "CTF 2 metadata holds no fragment".into(),
        });
    }
    for (i, &(start, end)) in frags.iter().enumerate() {
        let (line, column) = line_col(bytes, start);
        r.frag = Frag {
            index: i + 1,
            line,
            column,
            kind: String::new(),
        };
        let text = &bytes[start..end];
        let v: J = serde_json::from_slice(text).map_err(|e| MetadataError {
            line: line + e.line().saturating_sub(1) as u32,
            column: if e.line() <= 1 {
                column + e.column().saturating_sub(1) as u32
            } else {
                e.column() as u32
            },
            message: format!("fragment {}: invalid JSON: {e}", i + 1),
        })?;
        r.fragment(&v)?;
    }
    r.finish()
}

/// The fragments of a JSON text sequence: byte ranges after each RS.
fn split(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b == RS {
            if let Some(s) = start {
                out.push((s, i));
            }
            start = Some(i + 1);
        }
    }
    if let Some(s) = start {
        out.push((s, bytes.len()));
    }
    out
}

fn line_col(bytes: &[u8], at: usize) -> (u32, u32) {
    let before = &bytes[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = at
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
    )
}

#[derive(Default)]
struct Frag {
    index: usize,
    line: u32,
    column: u32,
    kind: String,
}

/// A field location waiting for its scope to be complete.
struct Pending {
    scope: Scope,
    /// Absolute member names from the scope's root.
    names: Vec<String>,
    /// The referring field's own path (member / option indices).
    own: Vec<u32>,
    /// What the location is for: "length", "selector".
    what: &'static str,
    at: String,
}

#[derive(Default)]
struct Reader {
    frag: Frag,
    preamble: bool,
    uuid: Option<[u8; 16]>,
    uid: Option<String>,
    trace_class: bool,
    packet_header: Option<FieldClass>,
    env: Vec<(String, EnvValue)>,
    clocks: Vec<ClockClass>,
    streams: Vec<StreamClass>,
    aliases: HashMap<String, J>,
    // While building one scope:
    scope: Option<Scope>,
    names: Vec<String>,
    own: Vec<u32>,
    pending: Vec<Pending>,
    depth: usize,
    /// The clock that timestamp roles map to in the scope being built.
    clock: Option<String>,
}

/// Marks a [`FieldRef`] not resolved yet: `path` is `[UNRESOLVED, i]`,
/// `i` indexing [`Reader::pending`].
const UNRESOLVED: u32 = u32::MAX;

impl Reader {
    fn err(&self, at: &str, msg: impl std::fmt::Display) -> MetadataError {
        let kind = if self.frag.kind.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.frag.kind)
        };
        let at = if at.is_empty() { "/" } else { at };
        MetadataError {
            line: self.frag.line,
            column: self.frag.column,
            message: format!("fragment {}{kind}: at {at}: {msg}", self.frag.index),
        }
    }

    fn fragment(&mut self, v: &J) -> R<()> {
        let o = self.obj(v, "")?;
        let kind = self.req_str(o, "", "type")?.to_string();
        self.frag.kind = kind.clone();
        self.extensions(o, "")?;
        if !self.preamble && kind != "preamble" {
            return Err(self.err("/type", "expected the preamble as the first fragment"));
        }
        match kind.as_str() {
            "preamble" => self.preamble(o),
            "field-class-alias" => {
                let name = self.req_str(o, "", "name")?.to_string();
                let fc = o
                    .get("field-class")
                    .ok_or_else(|| self.err("", "expected a `field-class` property"))?;
                if self.aliases.contains_key(&name) {
                    return Err(self.err("/name", format!("field class alias `{name}` already exists")));
                }
                // Checked where it is used: its roles and field locations
                // depend on the scope.
                self.aliases.insert(name, fc.clone());
                Ok(())
            }
            "trace-class" => self.trace_class(o),
            "clock-class" => self.clock_class(o),
            "data-stream-class" => self.stream_class(o),
            "event-record-class" => self.event_class(o),
            other => Err(self.err(
                "/type",
                format!("unknown fragment type `{other}` (expected preamble, field-class-alias, trace-class, clock-class, data-stream-class or event-record-class)"),
            )),
        }
    }

    fn finish(self) -> R<Metadata> {
        if self.streams.is_empty() {
            return Err(MetadataError {
                line: 1,
                column: 1,
                message: "CTF 2 metadata has no data stream class".into(),
            });
        }
        Ok(Metadata {
            major: 2,
            minor: 0,
            uuid: self.uuid,
            uid: self.uid,
            byte_order: ByteOrder::Little,
            packet_header: self.packet_header,
            env: self.env,
            clocks: self.clocks,
            streams: self.streams,
            callsites: Vec::new(),
        })
    }

    // ---- fragments ----

    fn preamble(&mut self, o: &Map<String, J>) -> R<()> {
        if self.preamble {
            return Err(self.err("/type", "a second preamble (expected it once, first)"));
        }
        self.preamble = true;
        match o.get("version") {
            Some(J::Number(n)) if n.as_u64() == Some(2) => {}
            Some(v) => {
                return Err(self.err("/version", format!("expected version 2, got {v}")));
            }
            None => return Err(self.err("", "expected a `version` property")),
        }
        if let Some(u) = o.get("uuid") {
            self.uuid = Some(self.uuid_of(u, "/uuid")?);
        }
        Ok(())
    }

    fn trace_class(&mut self, o: &Map<String, J>) -> R<()> {
        if self.trace_class {
            return Err(self.err("/type", "a second trace class"));
        }
        if !self.streams.is_empty() {
            return Err(self.err("/type", "a trace class after a data stream class"));
        }
        self.trace_class = true;
        if let Some(u) = o.get("uid") {
            self.uid = Some(self.str_of(u, "/uid")?.to_string());
        }
        if let Some(env) = o.get("environment") {
            let env = self.obj(env, "/environment")?;
            for (k, v) in env {
                let at = format!("/environment/{k}");
                let val = match v {
                    J::String(s) => EnvValue::Str(s.clone()),
                    J::Number(n) => match n.as_i64() {
                        Some(i) => EnvValue::Int(i),
                        None => return Err(self.err(&at, "expected a 64-bit signed integer")),
                    },
                    _ => return Err(self.err(&at, "expected a string or an integer")),
                };
                self.env.push((k.clone(), val));
            }
        }
        if let Some(fc) = o.get("packet-header-field-class") {
            self.begin(Scope::PacketHeader, None);
            let fc = self.scope_fc(fc, "/packet-header-field-class")?;
            let fc = self.resolve(fc, &Roots::default(), Scope::PacketHeader)?;
            self.packet_header = Some(fc);
        }
        Ok(())
    }

    fn clock_class(&mut self, o: &Map<String, J>) -> R<()> {
        let id = self.req_str(o, "", "id")?.to_string();
        if self.clocks.iter().any(|c| c.name == id) {
            return Err(self.err("/id", format!("clock class `{id}` already exists")));
        }
        let freq = self.req_u64(o, "", "frequency")?;
        if freq == 0 {
            return Err(self.err("/frequency", "expected a frequency greater than 0"));
        }
        let mut c = ClockClass {
            name: id,
            freq,
            ..Default::default()
        };
        if let Some(d) = o.get("description") {
            c.description = Some(self.str_of(d, "/description")?.to_string());
        }
        if let Some(p) = o.get("precision") {
            c.precision = self.u64_of(p, "/precision")?;
        }
        if let Some(off) = o.get("offset-from-origin") {
            let off = self.obj(off, "/offset-from-origin")?;
            if let Some(s) = off.get("seconds") {
                c.offset_s = self.i64_of(s, "/offset-from-origin/seconds")?;
            }
            if let Some(cy) = off.get("cycles") {
                let cy = self.u64_of(cy, "/offset-from-origin/cycles")?;
                if cy >= freq {
                    return Err(self.err(
                        "/offset-from-origin/cycles",
                        "expected fewer cycles than the frequency",
                    ));
                }
                c.offset = cy as i64;
            }
        }
        c.absolute = match o.get("origin") {
            None => false,
            Some(J::String(s)) if s == "unix-epoch" => true,
            Some(J::Object(m)) => {
                for k in ["name", "uid"] {
                    self.req_str(m, "/origin", k)?;
                }
                false
            }
            Some(_) => {
                return Err(self.err(
                    "/origin",
                    "expected \"unix-epoch\" or an object with `name` and `uid`",
                ))
            }
        };
        self.clocks.push(c);
        Ok(())
    }

    fn stream_class(&mut self, o: &Map<String, J>) -> R<()> {
        let id = match o.get("id") {
            Some(v) => self.u64_of(v, "/id")?,
            None => 0,
        };
        if self.streams.iter().any(|s| s.id == id) {
            return Err(self.err("/id", format!("data stream class {id} already exists")));
        }
        let clock = match o.get("default-clock-class-id") {
            Some(v) => {
                let c = self.str_of(v, "/default-clock-class-id")?;
                if !self.clocks.iter().any(|k| k.name == c) {
                    return Err(self.err(
                        "/default-clock-class-id",
                        format!("no clock class `{c}` before this fragment"),
                    ));
                }
                Some(c.to_string())
            }
            None => None,
        };
        let mut sc = StreamClass {
            id,
            packet_context: None,
            event_header: None,
            event_context: None,
            events: Vec::new(),
            default_clock: clock.clone(),
        };
        let ph = self.packet_header.clone();
        for (key, scope) in [
            ("packet-context-field-class", Scope::PacketContext),
            ("event-record-header-field-class", Scope::EventHeader),
            (
                "event-record-common-context-field-class",
                Scope::EventCommonContext,
            ),
        ] {
            let Some(v) = o.get(key) else { continue };
            self.begin(scope, clock.clone());
            let fc = self.scope_fc(v, &format!("/{key}"))?;
            // The scope being built is `fc` itself (see `resolve`).
            let roots = Roots {
                ph: ph.as_ref(),
                pc: sc.packet_context.as_ref(),
                eh: sc.event_header.as_ref(),
                ..Default::default()
            };
            let fc = self.resolve(fc, &roots, scope)?;
            match scope {
                Scope::PacketContext => sc.packet_context = Some(fc),
                Scope::EventHeader => sc.event_header = Some(fc),
                _ => sc.event_context = Some(fc),
            }
        }
        self.streams.push(sc);
        Ok(())
    }

    fn event_class(&mut self, o: &Map<String, J>) -> R<()> {
        let id = match o.get("id") {
            Some(v) => self.u64_of(v, "/id")?,
            None => 0,
        };
        let sid = match o.get("data-stream-class-id") {
            Some(v) => self.u64_of(v, "/data-stream-class-id")?,
            None => 0,
        };
        let Some(si) = self.streams.iter().position(|s| s.id == sid) else {
            return Err(self.err(
                "/data-stream-class-id",
                format!("no data stream class {sid} before this fragment"),
            ));
        };
        if self.streams[si].events.iter().any(|e| e.id == id) {
            return Err(self.err(
                "/id",
                format!("event record class {id} of data stream class {sid} already exists"),
            ));
        }
        let name = match o.get("name") {
            Some(v) => self.str_of(v, "/name")?.to_string(),
            None => String::new(),
        };
        let (mut loglevel, mut emf) = (None, None);
        if let Some(a) = o.get("attributes") {
            let a = self.obj(a, "/attributes")?;
            // babeltrace2's namespace first, then LTTng's.
            for ns in ["babeltrace.org,2020", "lttng.org,2009"] {
                let Some(J::Object(m)) = a.get(ns) else {
                    continue;
                };
                if loglevel.is_none() {
                    if let Some(J::String(l)) = m.get("log-level") {
                        loglevel = log_level(l);
                    }
                }
                if emf.is_none() {
                    if let Some(J::String(u)) = m.get("emf-uri") {
                        emf = Some(u.clone());
                    }
                }
            }
        }
        let sc = self.streams[si].clone();
        let ph = self.packet_header.clone();
        let clock = sc.default_clock.clone();
        let mut ctx = None;
        let mut payload = None;
        for (key, scope) in [
            ("specific-context-field-class", Scope::EventSpecificContext),
            ("payload-field-class", Scope::EventPayload),
        ] {
            let Some(v) = o.get(key) else { continue };
            self.begin(scope, clock.clone());
            let fc = self.scope_fc(v, &format!("/{key}"))?;
            let roots = Roots {
                ph: ph.as_ref(),
                pc: sc.packet_context.as_ref(),
                eh: sc.event_header.as_ref(),
                ecc: sc.event_context.as_ref(),
                esc: ctx.as_ref(),
                ep: None,
            };
            let fc = self.resolve(fc, &roots, scope)?;
            if scope == Scope::EventSpecificContext {
                ctx = Some(fc);
            } else {
                payload = Some(fc);
            }
        }
        self.streams[si].events.push(EventClass {
            id,
            name,
            loglevel,
            model_emf_uri: emf,
            context: ctx,
            payload,
        });
        Ok(())
    }

    // ---- field classes ----

    fn begin(&mut self, scope: Scope, clock: Option<String>) {
        self.scope = Some(scope);
        self.names.clear();
        self.own.clear();
        self.pending.clear();
        self.depth = 0;
        self.clock = clock;
    }

    /// A scope's root field class: a structure.
    fn scope_fc(&mut self, v: &J, at: &str) -> R<FieldClass> {
        let fc = self.fc(v, at)?;
        if !matches!(fc, FieldClass::Struct(_)) {
            return Err(self.err(at, "expected a structure field class as a scope's root"));
        }
        Ok(fc)
    }

    fn fc(&mut self, v: &J, at: &str) -> R<FieldClass> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(at, "field classes nested too deeply"));
        }
        self.depth += 1;
        let r = self.fc_inner(v, at);
        self.depth -= 1;
        r
    }

    fn fc_inner(&mut self, v: &J, at: &str) -> R<FieldClass> {
        if let J::String(alias) = v {
            let Some(a) = self.aliases.get(alias).cloned() else {
                return Err(self.err(at, format!("no field class alias `{alias}`")));
            };
            return self.fc(&a, at);
        }
        let o = self.obj(v, at)?;
        let ty = self.req_str(o, at, "type")?.to_string();
        self.extensions(o, at)?;
        let sub = |k: &str| format!("{at}/{k}");
        Ok(match ty.as_str() {
            "fixed-length-bit-array" | "fixed-length-bit-map" => {
                let container = self.fixed_int(o, at, false, 16)?;
                let flags = if ty == "fixed-length-bit-map" {
                    let f = o
                        .get("flags")
                        .ok_or_else(|| self.err(at, "expected a `flags` property"))?;
                    let m = self.mappings(f, &sub("flags"), false)?;
                    if m.is_empty() {
                        return Err(self.err(&sub("flags"), "expected at least one flag"));
                    }
                    for fl in &m {
                        if fl
                            .ranges
                            .iter()
                            .any(|&(_, hi)| hi >= container.size as i128)
                        {
                            return Err(self.err(
                                &format!("{at}/flags/{}", fl.label),
                                format!(
                                    "expected bit indices below the length, {}",
                                    container.size
                                ),
                            ));
                        }
                    }
                    m
                } else {
                    Vec::new()
                };
                FieldClass::BitMap(BitMapClass { container, flags })
            }
            "fixed-length-boolean" => FieldClass::Bool(self.fixed_int(o, at, false, 10)?),
            "fixed-length-unsigned-integer" | "fixed-length-signed-integer" => {
                let signed = ty == "fixed-length-signed-integer";
                let base = self.base(o, at)?;
                let mut i = self.fixed_int(o, at, signed, base)?;
                i.roles = self.roles(o, at, signed)?;
                if i.roles.has(Roles::TIMESTAMP) || i.roles.has(Roles::PACKET_END_TIMESTAMP) {
                    i.mapped_clock = Some(self.timestamp_clock(at)?);
                }
                match o.get("mappings") {
                    Some(m) => {
                        let mappings = self.mappings(m, &sub("mappings"), signed)?;
                        if mappings.is_empty() {
                            FieldClass::Integer(i)
                        } else {
                            FieldClass::Enum(EnumClass {
                                container: i,
                                mappings,
                            })
                        }
                    }
                    None => FieldClass::Integer(i),
                }
            }
            "variable-length-unsigned-integer" | "variable-length-signed-integer" => {
                let signed = ty == "variable-length-signed-integer";
                let roles = self.roles(o, at, signed)?;
                let mapped_clock =
                    if roles.has(Roles::TIMESTAMP) || roles.has(Roles::PACKET_END_TIMESTAMP) {
                        Some(self.timestamp_clock(at)?)
                    } else {
                        None
                    };
                let mappings = match o.get("mappings") {
                    Some(m) => self.mappings(m, &sub("mappings"), signed)?,
                    None => Vec::new(),
                };
                FieldClass::VarInt(VarIntClass {
                    signed,
                    base: self.base(o, at)?,
                    mappings,
                    mapped_clock,
                    roles,
                })
            }
            "fixed-length-floating-point-number" => {
                let i = self.fixed_int(o, at, true, 10)?;
                let (exp_dig, mant_dig) = match i.size {
                    32 => (8, 24),
                    64 => (11, 53),
                    n => {
                        return Err(self.err(
                            &sub("length"),
                            format!(
                                "unsupported floating point number length {n} (expected 32 or 64)"
                            ),
                        ))
                    }
                };
                FieldClass::Float(FloatClass {
                    exp_dig,
                    mant_dig,
                    align: i.align,
                    byte_order: i.byte_order,
                })
            }
            "null-terminated-string" => match self.encoding(o, at)? {
                TextEncoding::Utf8 => FieldClass::String(StringClass {
                    encoding: Encoding::Utf8,
                }),
                e => FieldClass::Bytes(BytesClass {
                    length: BytesLength::Null,
                    text: Some(e),
                    uuid: false,
                }),
            },
            "static-length-string" | "static-length-blob" => {
                let length = self.req_u64(o, at, "length")?;
                if ty == "static-length-blob" {
                    let roles = self.role_names(o, at)?;
                    if roles.iter().any(|r| r != "metadata-stream-uuid") {
                        return Err(self.err(
                            &sub("roles"),
                            "expected no role but `metadata-stream-uuid` on a BLOB",
                        ));
                    }
                    let uuid = !roles.is_empty();
                    if uuid && length != 16 {
                        return Err(self.err(
                            &sub("length"),
                            "expected a length of 16 for the metadata stream UUID",
                        ));
                    }
                    FieldClass::Bytes(BytesClass {
                        length: BytesLength::Static(length),
                        text: None,
                        uuid,
                    })
                } else {
                    match self.encoding(o, at)? {
                        TextEncoding::Utf8 => FieldClass::Array(ArrayClass {
                            element: Box::new(utf8_unit()),
                            length,
                            min_align: 1,
                        }),
                        e => {
                            if length % e.unit() as u64 != 0 {
                                return Err(self.err(
                                    &sub("length"),
                                    format!("expected a multiple of {} bytes", e.unit()),
                                ));
                            }
                            FieldClass::Bytes(BytesClass {
                                length: BytesLength::Static(length),
                                text: Some(e),
                                uuid: false,
                            })
                        }
                    }
                }
            }
            "dynamic-length-string" | "dynamic-length-blob" => {
                let r = self.location(o, at, "length-field-location", "length")?;
                if ty == "dynamic-length-blob" {
                    FieldClass::Bytes(BytesClass {
                        length: BytesLength::Dynamic(r),
                        text: None,
                        uuid: false,
                    })
                } else {
                    match self.encoding(o, at)? {
                        TextEncoding::Utf8 => FieldClass::Sequence(SequenceClass {
                            element: Box::new(utf8_unit()),
                            length: r,
                            min_align: 1,
                        }),
                        e => FieldClass::Bytes(BytesClass {
                            length: BytesLength::Dynamic(r),
                            text: Some(e),
                            uuid: false,
                        }),
                    }
                }
            }
            "structure" => {
                let min_align = self.min_align(o, at)?;
                let mut members: Vec<StructMember> = Vec::new();
                if let Some(mc) = o.get("member-classes") {
                    let J::Array(list) = mc else {
                        return Err(self.err(&sub("member-classes"), "expected an array"));
                    };
                    for (i, m) in list.iter().enumerate() {
                        let mat = format!("{at}/member-classes/{i}");
                        let mo = self.obj(m, &mat)?;
                        self.extensions(mo, &mat)?;
                        let name = self.req_str(mo, &mat, "name")?.to_string();
                        if members.iter().any(|x| x.name == model_name(&name)) {
                            return Err(self.err(
                                &format!("{mat}/name"),
                                format!("a second member named `{name}`"),
                            ));
                        }
                        let fc = mo
                            .get("field-class")
                            .ok_or_else(|| self.err(&mat, "expected a `field-class` property"))?;
                        self.names.push(name.clone());
                        self.own.push(i as u32);
                        let class = self.fc(fc, &format!("{mat}/field-class"));
                        self.names.pop();
                        self.own.pop();
                        members.push(StructMember {
                            name: model_name(&name),
                            class: class?,
                        });
                    }
                }
                FieldClass::Struct(StructClass { min_align, members })
            }
            "static-length-array" | "dynamic-length-array" => {
                let min_align = self.min_align(o, at)?;
                let e = o
                    .get("element-field-class")
                    .ok_or_else(|| self.err(at, "expected an `element-field-class` property"))?;
                if ty == "static-length-array" {
                    let length = self.req_u64(o, at, "length")?;
                    let element = Box::new(self.fc(e, &sub("element-field-class"))?);
                    FieldClass::Array(ArrayClass {
                        element,
                        length,
                        min_align,
                    })
                } else {
                    let r = self.location(o, at, "length-field-location", "length")?;
                    let element = Box::new(self.fc(e, &sub("element-field-class"))?);
                    FieldClass::Sequence(SequenceClass {
                        element,
                        length: r,
                        min_align,
                    })
                }
            }
            "optional" => {
                let selector = self.location(o, at, "selector-field-location", "selector")?;
                let ranges = match o.get("selector-field-ranges") {
                    Some(r) => Some(self.ranges(r, &sub("selector-field-ranges"), true)?),
                    None => None,
                };
                let f = o
                    .get("field-class")
                    .ok_or_else(|| self.err(at, "expected a `field-class` property"))?;
                self.own.push(0);
                let class = self.fc(f, &sub("field-class"));
                self.own.pop();
                FieldClass::Optional(OptionalClass {
                    selector,
                    ranges,
                    class: Box::new(class?),
                })
            }
            "variant" => {
                let tag = self.location(o, at, "selector-field-location", "selector")?;
                let Some(J::Array(opts)) = o.get("options") else {
                    return Err(self.err(at, "expected an `options` array"));
                };
                if opts.is_empty() {
                    return Err(self.err(&sub("options"), "expected at least one option"));
                }
                let mut options: Vec<VariantOption> = Vec::new();
                for (i, op) in opts.iter().enumerate() {
                    let oat = format!("{at}/options/{i}");
                    let oo = self.obj(op, &oat)?;
                    self.extensions(oo, &oat)?;
                    let name = match oo.get("name") {
                        Some(n) => self.str_of(n, &format!("{oat}/name"))?.to_string(),
                        None => String::new(),
                    };
                    let r = oo.get("selector-field-ranges").ok_or_else(|| {
                        self.err(&oat, "expected a `selector-field-ranges` property")
                    })?;
                    let ranges = self.ranges(r, &format!("{oat}/selector-field-ranges"), true)?;
                    for prev in &options {
                        for &(lo, hi) in prev.ranges.iter().flatten() {
                            if ranges.iter().any(|&(l, h)| l <= hi && lo <= h) {
                                return Err(self.err(
                                    &format!("{oat}/selector-field-ranges"),
                                    "expected selector ranges that no other option's overlap",
                                ));
                            }
                        }
                    }
                    let f = oo
                        .get("field-class")
                        .ok_or_else(|| self.err(&oat, "expected a `field-class` property"))?;
                    self.own.push(i as u32);
                    let class = self.fc(f, &format!("{oat}/field-class"));
                    self.own.pop();
                    options.push(VariantOption {
                        name,
                        class: class?,
                        ranges: Some(ranges),
                    });
                }
                FieldClass::Variant(VariantClass { tag, options })
            }
            other => {
                return Err(self.err(&sub("type"), format!("unknown field class type `{other}`")))
            }
        })
    }

    /// The clock a timestamp role maps to.
    fn timestamp_clock(&self, at: &str) -> R<String> {
        self.clock.clone().ok_or_else(|| {
            self.err(
                &format!("{at}/roles"),
                "a clock timestamp role, but the data stream class has no default clock class",
            )
        })
    }

    /// The bit array part of a fixed-length field class: length,
    /// byte order, bit order, alignment.
    fn fixed_int(&self, o: &Map<String, J>, at: &str, signed: bool, base: u32) -> R<IntegerClass> {
        let size = self.req_u64(o, at, "length")?;
        if size == 0 || size > 1024 {
            return Err(self.err(
                &format!("{at}/length"),
                "expected a length between 1 and 1024 bits",
            ));
        }
        let bo = match self.req_str(o, at, "byte-order")? {
            "little-endian" => ByteOrder::Little,
            "big-endian" => ByteOrder::Big,
            other => {
                return Err(self.err(
                    &format!("{at}/byte-order"),
                    format!("expected \"little-endian\" or \"big-endian\", got \"{other}\""),
                ))
            }
        };
        if let Some(b) = o.get("bit-order") {
            let b = self.str_of(b, &format!("{at}/bit-order"))?;
            let natural = if bo == ByteOrder::Little {
                "first-to-last"
            } else {
                "last-to-first"
            };
            if b != natural {
                return Err(self.err(
                    &format!("{at}/bit-order"),
                    format!("unsupported bit order \"{b}\" for this byte order (expected \"{natural}\")"),
                ));
            }
        }
        let align = self.align(o, at, "alignment")?;
        Ok(IntegerClass {
            size: size as u32,
            align,
            signed,
            byte_order: bo,
            base,
            encoding: Encoding::None,
            mapped_clock: None,
            roles: Roles::default(),
        })
    }

    fn align(&self, o: &Map<String, J>, at: &str, key: &str) -> R<u32> {
        match o.get(key) {
            None => Ok(1),
            Some(v) => {
                let a = self.u64_of(v, &format!("{at}/{key}"))?;
                if !a.is_power_of_two() || a > 1 << 20 {
                    return Err(self.err(&format!("{at}/{key}"), "expected a power of two"));
                }
                Ok(a as u32)
            }
        }
    }

    fn min_align(&self, o: &Map<String, J>, at: &str) -> R<u32> {
        self.align(o, at, "minimum-alignment")
    }

    fn base(&self, o: &Map<String, J>, at: &str) -> R<u32> {
        match o.get("preferred-display-base") {
            None => Ok(10),
            Some(v) => match self.u64_of(v, &format!("{at}/preferred-display-base"))? {
                b @ (2 | 8 | 10 | 16) => Ok(b as u32),
                _ => Err(self.err(
                    &format!("{at}/preferred-display-base"),
                    "expected 2, 8, 10 or 16",
                )),
            },
        }
    }

    fn encoding(&self, o: &Map<String, J>, at: &str) -> R<TextEncoding> {
        Ok(match o.get("encoding") {
            None => TextEncoding::Utf8,
            Some(v) => match self.str_of(v, &format!("{at}/encoding"))? {
                "utf-8" => TextEncoding::Utf8,
                "utf-16be" => TextEncoding::Utf16Be,
                "utf-16le" => TextEncoding::Utf16Le,
                "utf-32be" => TextEncoding::Utf32Be,
                "utf-32le" => TextEncoding::Utf32Le,
                other => {
                    return Err(self.err(
                        &format!("{at}/encoding"),
                        format!("unknown encoding \"{other}\" (expected utf-8, utf-16be, utf-16le, utf-32be or utf-32le)"),
                    ))
                }
            },
        })
    }

    fn role_names(&self, o: &Map<String, J>, at: &str) -> R<Vec<String>> {
        match o.get("roles") {
            None => Ok(Vec::new()),
            Some(J::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, r)| Ok(self.str_of(r, &format!("{at}/roles/{i}"))?.to_string()))
                .collect(),
            Some(_) => Err(self.err(&format!("{at}/roles"), "expected an array of strings")),
        }
    }

    fn roles(&self, o: &Map<String, J>, at: &str, signed: bool) -> R<Roles> {
        let names = self.role_names(o, at)?;
        if signed && !names.is_empty() {
            return Err(self.err(
                &format!("{at}/roles"),
                "expected no role on a signed integer",
            ));
        }
        let mut roles = Roles::default();
        for (i, n) in names.iter().enumerate() {
            roles.0 |= match n.as_str() {
                "packet-magic-number" => Roles::MAGIC,
                "data-stream-class-id" => Roles::STREAM_CLASS_ID,
                "data-stream-id" => Roles::STREAM_ID,
                "packet-total-length" => Roles::PACKET_TOTAL_LENGTH,
                "packet-content-length" => Roles::PACKET_CONTENT_LENGTH,
                "default-clock-timestamp" => Roles::TIMESTAMP,
                "packet-end-default-clock-timestamp" => Roles::PACKET_END_TIMESTAMP,
                "discarded-event-record-counter-snapshot" => Roles::DISCARDED,
                "packet-sequence-number" => Roles::PACKET_SEQ_NUM,
                "event-record-class-id" => Roles::EVENT_CLASS_ID,
                other => {
                    return Err(self.err(
                        &format!("{at}/roles/{i}"),
                        format!("unknown unsigned integer role \"{other}\""),
                    ))
                }
            };
        }
        let scope = self.scope.unwrap_or(Scope::EventPayload);
        let allowed = match scope {
            Scope::PacketHeader => {
                Roles::MAGIC | Roles::STREAM_CLASS_ID | Roles::STREAM_ID | Roles::UUID
            }
            Scope::PacketContext => {
                Roles::PACKET_TOTAL_LENGTH
                    | Roles::PACKET_CONTENT_LENGTH
                    | Roles::TIMESTAMP
                    | Roles::PACKET_END_TIMESTAMP
                    | Roles::DISCARDED
                    | Roles::PACKET_SEQ_NUM
            }
            Scope::EventHeader => Roles::TIMESTAMP | Roles::EVENT_CLASS_ID,
            _ => 0,
        };
        if roles.0 & !allowed != 0 {
            return Err(self.err(
                &format!("{at}/roles"),
                format!(
                    "a role that a field of the {} scope cannot have",
                    scope_name(scope)
                ),
            ));
        }
        if roles.has(Roles::MAGIC) && self.own != [0] {
            return Err(self.err(
                &format!("{at}/roles"),
                "the packet magic number must be the packet header's first member",
            ));
        }
        Ok(roles)
    }

    /// Mappings or flags: `{label: [[lo, hi], ...]}`.
    fn mappings(&self, v: &J, at: &str, signed: bool) -> R<Vec<EnumMapping>> {
        let m = self.obj(v, at)?;
        let mut out = Vec::new();
        for (label, r) in m {
            let ranges = self.ranges(r, &format!("{at}/{label}"), signed)?;
            out.push(EnumMapping {
                label: label.clone(),
                ranges,
            });
        }
        Ok(out)
    }

    /// An integer range set: `[[lo, hi], ...]`, non-empty, `lo <= hi`.
    fn ranges(&self, v: &J, at: &str, allow_neg: bool) -> R<Vec<(i128, i128)>> {
        let J::Array(a) = v else {
            return Err(self.err(at, "expected an array of [lower, upper] ranges"));
        };
        if a.is_empty() {
            return Err(self.err(at, "expected at least one range"));
        }
        let mut out = Vec::with_capacity(a.len());
        for (i, r) in a.iter().enumerate() {
            let rat = format!("{at}/{i}");
            let pair = match r {
                J::Array(p) if p.len() == 2 => p,
                _ => return Err(self.err(&rat, "expected a [lower, upper] pair")),
            };
            let lo = self.int_of(&pair[0], &format!("{rat}/0"))?;
            let hi = self.int_of(&pair[1], &format!("{rat}/1"))?;
            if lo > hi {
                return Err(self.err(&rat, "expected a lower bound not above the upper one"));
            }
            if !allow_neg && lo < 0 {
                return Err(self.err(&rat, "expected non-negative bounds"));
            }
            out.push((lo, hi));
        }
        Ok(out)
    }

    /// A field location property: a pending [`FieldRef`], resolved when
    /// the scope is complete.
    fn location(
        &mut self,
        o: &Map<String, J>,
        at: &str,
        key: &str,
        what: &'static str,
    ) -> R<FieldRef> {
        let lat = format!("{at}/{key}");
        let l = o
            .get(key)
            .ok_or_else(|| self.err(at, format!("expected a `{key}` property")))?;
        let lo = self.obj(l, &lat)?;
        let Some(J::Array(path)) = lo.get("path") else {
            return Err(self.err(&lat, "expected a `path` array"));
        };
        let mut items = Vec::with_capacity(path.len());
        for (i, p) in path.iter().enumerate() {
            items.push(match p {
                J::String(s) => Some(s.clone()),
                J::Null => None,
                _ => {
                    return Err(
                        self.err(&format!("{lat}/path/{i}"), "expected a member name or null")
                    )
                }
            });
        }
        let Some(cur) = self.scope else {
            return Err(self.err(&lat, "a field location outside any scope"));
        };
        let (scope, names) = match lo.get("origin") {
            Some(origin) => {
                let s = self.str_of(origin, &format!("{lat}/origin"))?;
                let scope = match s {
                    "packet-header" => Scope::PacketHeader,
                    "packet-context" => Scope::PacketContext,
                    "event-record-header" => Scope::EventHeader,
                    "event-record-common-context" => Scope::EventCommonContext,
                    "event-record-specific-context" => Scope::EventSpecificContext,
                    "event-record-payload" => Scope::EventPayload,
                    other => {
                        return Err(self.err(
                            &format!("{lat}/origin"),
                            format!("unknown origin \"{other}\""),
                        ))
                    }
                };
                if scope > cur {
                    return Err(self.err(
                        &format!("{lat}/origin"),
                        format!(
                            "the {} scope is decoded after the {} scope of this field",
                            scope_name(scope),
                            scope_name(cur)
                        ),
                    ));
                }
                let mut names = Vec::new();
                for (i, it) in items.into_iter().enumerate() {
                    match it {
                        Some(n) => names.push(n),
                        None => {
                            return Err(self.err(
                                &format!("{lat}/path/{i}"),
                                "null in an absolute field location",
                            ))
                        }
                    }
                }
                (scope, names)
            }
            None => {
                // Relative to the structure holding this field.
                let mut base: Vec<String> =
                    self.names[..self.names.len().saturating_sub(1)].to_vec();
                let mut rest: Vec<String> = Vec::new();
                for (i, it) in items.into_iter().enumerate() {
                    match it {
                        Some(n) => rest.push(n),
                        None if !rest.is_empty() => {
                            rest.pop();
                        }
                        None => {
                            if base.pop().is_none() {
                                return Err(self.err(
                                    &format!("{lat}/path/{i}"),
                                    "goes up past the scope's root structure",
                                ));
                            }
                        }
                    }
                }
                base.extend(rest);
                (cur, base)
            }
        };
        if names.is_empty() {
            return Err(self.err(&format!("{lat}/path"), "expected at least one member name"));
        }
        self.pending.push(Pending {
            scope,
            names,
            own: self.own.clone(),
            what,
            at: lat,
        });
        Ok(FieldRef {
            scope,
            path: vec![UNRESOLVED, (self.pending.len() - 1) as u32],
        })
    }

    /// Resolves the pending locations of the scope just built (`fc`, the
    /// root of `scope`).
    fn resolve(&mut self, mut fc: FieldClass, roots: &Roots, scope: Scope) -> R<FieldClass> {
        let mut resolved = Vec::with_capacity(self.pending.len());
        for p in &self.pending {
            let root = if p.scope == scope {
                Some(&fc)
            } else {
                roots.get(p.scope)
            };
            let Some(root) = root else {
                return Err(self.err(
                    &p.at,
                    format!("the {} scope has no field class", scope_name(p.scope)),
                ));
            };
            let own = (p.scope == scope).then_some(&p.own[..]);
            let Some((path, target)) = find(root, &p.names, own) else {
                return Err(self.err(
                    &p.at,
                    format!(
                        "no field `{}` in the {} scope",
                        p.names.join("/"),
                        scope_name(p.scope)
                    ),
                ));
            };
            if p.scope == scope && path >= p.own {
                return Err(self.err(
                    &p.at,
                    format!(
                        "the {} field `{}` is not decoded before this field",
                        p.what,
                        p.names.join("/")
                    ),
                ));
            }
            let ok = match (p.what, target) {
                ("selector", FieldClass::Bool(_)) => true,
                (_, FieldClass::Integer(_) | FieldClass::Enum(_) | FieldClass::VarInt(_)) => {
                    p.what == "selector" || !signed(target)
                }
                _ => false,
            };
            if !ok {
                let want = if p.what == "length" {
                    "an unsigned integer"
                } else {
                    "a boolean or an integer"
                };
                return Err(self.err(
                    &p.at,
                    format!("the {} field `{}` is not {want}", p.what, p.names.join("/")),
                ));
            }
            resolved.push(FieldRef {
                scope: p.scope,
                path,
            });
        }
        fill(&mut fc, &resolved);
        self.pending.clear();
        self.scope = None;
        Ok(fc)
    }

    // ---- JSON helpers ----

    fn extensions(&self, o: &Map<String, J>, at: &str) -> R<()> {
        match o.get("extensions") {
            None => Ok(()),
            Some(J::Object(m)) if m.is_empty() => Ok(()),
            Some(J::Object(m)) => Err(self.err(
                &format!("{at}/extensions"),
                format!(
                    "unsupported extension `{}` (this reader supports no CTF 2 extension)",
                    m.keys().next().map_or("", |k| k.as_str())
                ),
            )),
            Some(_) => Err(self.err(&format!("{at}/extensions"), "expected an object")),
        }
    }

    fn obj<'v>(&self, v: &'v J, at: &str) -> R<&'v Map<String, J>> {
        match v {
            J::Object(m) => Ok(m),
            _ => Err(self.err(at, format!("expected an object, got {}", kind(v)))),
        }
    }

    fn str_of<'v>(&self, v: &'v J, at: &str) -> R<&'v str> {
        match v {
            J::String(s) => Ok(s),
            _ => Err(self.err(at, format!("expected a string, got {}", kind(v)))),
        }
    }

    fn req_str<'v>(&self, o: &'v Map<String, J>, at: &str, key: &str) -> R<&'v str> {
        match o.get(key) {
            Some(v) => self.str_of(v, &format!("{at}/{key}")),
            None => Err(self.err(at, format!("expected a `{key}` property"))),
        }
    }

    fn u64_of(&self, v: &J, at: &str) -> R<u64> {
        match v {
            J::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or(0)),
            _ => Err(self.err(at, format!("expected an unsigned integer, got {}", kind(v)))),
        }
    }

    fn i64_of(&self, v: &J, at: &str) -> R<i64> {
        match v {
            J::Number(n) if n.as_i64().is_some() => Ok(n.as_i64().unwrap_or(0)),
            _ => Err(self.err(at, format!("expected a signed integer, got {}", kind(v)))),
        }
    }

    fn int_of(&self, v: &J, at: &str) -> R<i128> {
        match v {
            J::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Ok(u as i128)
                } else if let Some(i) = n.as_i64() {
                    Ok(i as i128)
                } else {
                    Err(self.err(at, "expected an integer"))
                }
            }
            _ => Err(self.err(at, format!("expected an integer, got {}", kind(v)))),
        }
    }

    fn req_u64(&self, o: &Map<String, J>, at: &str, key: &str) -> R<u64> {
        match o.get(key) {
            Some(v) => self.u64_of(v, &format!("{at}/{key}")),
            None => Err(self.err(at, format!("expected a `{key}` property"))),
        }
    }

    fn uuid_of(&self, v: &J, at: &str) -> R<[u8; 16]> {
        let bad = || self.err(at, "expected an array of 16 bytes");
        let J::Array(a) = v else { return Err(bad()) };
        if a.len() != 16 {
            return Err(bad());
        }
        let mut u = [0u8; 16];
        for (i, b) in a.iter().enumerate() {
            u[i] = b
                .as_u64()
                .and_then(|b| u8::try_from(b).ok())
                .ok_or_else(bad)?;
        }
        Ok(u)
    }
}

fn kind(v: &J) -> &'static str {
    match v {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "an array",
        J::Object(_) => "an object",
    }
}

fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::PacketHeader => "packet header",
        Scope::PacketContext => "packet context",
        Scope::EventHeader => "event record header",
        Scope::EventCommonContext => "event record common context",
        Scope::EventSpecificContext => "event record specific context",
        Scope::EventPayload => "event record payload",
    }
}

/// babeltrace2's log levels (`lttng.org,2009` / `babeltrace.org,2020`
/// `log-level` attribute) as the numbers CTF 1.8's `loglevel` holds.
fn log_level(s: &str) -> Option<i64> {
    Some(match s {
        "emergency" => 0,
        "alert" => 1,
        "critical" => 2,
        "error" => 3,
        "warning" => 4,
        "notice" => 5,
        "info" => 6,
        "debug:system" => 7,
        "debug:program" => 8,
        "debug:process" => 9,
        "debug:module" => 10,
        "debug:unit" => 11,
        "debug:function" => 12,
        "debug:line" => 13,
        "debug" => 14,
        _ => return None,
    })
}

/// A CTF 2 member name as the model keeps names: as TSDL writes them,
/// babeltrace2 dropping one leading underscore when it shows a CTF 1.8
/// name. CTF 2 names are shown as they are, so one starting with `_` gets
/// one more.
fn model_name(name: &str) -> String {
    if name.starts_with('_') {
        format!("_{name}")
    } else {
        name.to_string()
    }
}

/// A UTF-8 code unit: the element of a CTF 1.8 text array.
fn utf8_unit() -> FieldClass {
    FieldClass::Integer(IntegerClass {
        size: 8,
        align: 8,
        signed: false,
        byte_order: ByteOrder::Little,
        base: 10,
        encoding: Encoding::Utf8,
        mapped_clock: None,
        roles: Roles::default(),
    })
}

fn signed(fc: &FieldClass) -> bool {
    match fc {
        FieldClass::Integer(i) => i.signed,
        FieldClass::Enum(e) => e.container.signed,
        FieldClass::VarInt(v) => v.signed,
        _ => false,
    }
}

/// The roots of the scopes an event record class sees (also used by
/// `write.rs`).
#[derive(Default, Clone, Copy)]
pub(super) struct Roots<'a> {
    pub(super) ph: Option<&'a FieldClass>,
    pub(super) pc: Option<&'a FieldClass>,
    pub(super) eh: Option<&'a FieldClass>,
    pub(super) ecc: Option<&'a FieldClass>,
    pub(super) esc: Option<&'a FieldClass>,
    pub(super) ep: Option<&'a FieldClass>,
}

impl<'a> Roots<'a> {
    pub(super) fn get(&self, s: Scope) -> Option<&'a FieldClass> {
        match s {
            Scope::PacketHeader => self.ph,
            Scope::PacketContext => self.pc,
            Scope::EventHeader => self.eh,
            Scope::EventCommonContext => self.ecc,
            Scope::EventSpecificContext => self.esc,
            Scope::EventPayload => self.ep,
        }
    }
}

/// Finds the field named by `names` from `root`: its [`FieldRef`] path and
/// class. Arrays are crossed (no step), optionals are step 0, a variant's
/// options are searched for the next name (the option on `own`, the
/// referring field's path, first).
fn find<'a>(
    root: &'a FieldClass,
    names: &[String],
    own: Option<&[u32]>,
) -> Option<(Vec<u32>, &'a FieldClass)> {
    fn walk<'a>(
        fc: &'a FieldClass,
        names: &[String],
        path: &mut Vec<u32>,
        own: Option<&[u32]>,
    ) -> Option<&'a FieldClass> {
        let on_own = |path: &[u32]| {
            own.filter(|o| o.starts_with(path))
                .and_then(|o| o.get(path.len()).copied())
        };
        let Some((first, rest)) = names.split_first() else {
            return Some(fc);
        };
        match fc {
            FieldClass::Struct(s) => {
                let i = s.members.iter().position(|m| m.name == model_name(first))?;
                path.push(i as u32);
                walk(&s.members[i].class, rest, path, own)
            }
            FieldClass::Array(a) => walk(&a.element, names, path, own),
            FieldClass::Sequence(s) => walk(&s.element, names, path, own),
            FieldClass::Optional(o) => {
                path.push(0);
                walk(&o.class, names, path, own)
            }
            FieldClass::Variant(v) => {
                let mut order: Vec<usize> = (0..v.options.len()).collect();
                if let Some(o) = on_own(path) {
                    order.retain(|&i| i != o as usize);
                    order.insert(0, o as usize);
                }
                for i in order.into_iter().filter(|&i| i < v.options.len()) {
                    let mut p = path.clone();
                    p.push(i as u32);
                    if let Some(t) = walk(&v.options[i].class, names, &mut p, own) {
                        *path = p;
                        return Some(t);
                    }
                }
                None
            }
            _ => None,
        }
    }
    let mut path = Vec::new();
    let t = walk(root, names, &mut path, own)?;
    Some((path, t))
}

/// Replaces the unresolved [`FieldRef`]s of `fc` by `resolved`.
fn fill(fc: &mut FieldClass, resolved: &[FieldRef]) {
    let fix = |r: &mut FieldRef| {
        if r.path.first() == Some(&UNRESOLVED) {
            if let Some(x) = r.path.get(1).and_then(|&i| resolved.get(i as usize)) {
                *r = x.clone();
            }
        }
    };
    match fc {
        FieldClass::Struct(s) => s
            .members
            .iter_mut()
            .for_each(|m| fill(&mut m.class, resolved)),
        FieldClass::Variant(v) => {
            fix(&mut v.tag);
            v.options
                .iter_mut()
                .for_each(|o| fill(&mut o.class, resolved));
        }
        FieldClass::Array(a) => fill(&mut a.element, resolved),
        FieldClass::Sequence(s) => {
            fix(&mut s.length);
            fill(&mut s.element, resolved);
        }
        FieldClass::Bytes(BytesClass {
            length: BytesLength::Dynamic(r),
            ..
        }) => fix(r),
        FieldClass::Optional(o) => {
            fix(&mut o.selector);
            fill(&mut o.class, resolved);
        }
        _ => {}
    }
}
