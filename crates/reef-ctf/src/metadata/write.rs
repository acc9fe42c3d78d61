//! Writing a [`Metadata`] model out again, in either form: CTF 2 (a JSON
//! text sequence, [`to_ctf2`]) or CTF 1.8 (TSDL text, [`to_tsdl`]), so that
//! `reef convert --ctf-version` can change a trace's version while its
//! stream files keep their bytes: both writers describe the same binary
//! layout (sizes, alignments, byte orders, field order) as the model.
//!
//! What differs between the two forms, and how it is translated:
//!
//! - **Roles and reserved names.** CTF 1.8 gives meaning to member names
//!   (`magic`, `stream_id`, `timestamp_begin`, `id`, ...: the names the
//!   reader's plan looks for, one leading `_` stripped); CTF 2 to roles.
//!   To CTF 2, each such member gets the role its name gives it in CTF
//!   1.8, a packet header `uuid` of 16 bytes becomes the
//!   `metadata-stream-uuid` BLOB, and an event header `timestamp` (or an
//!   integer mapped to a clock there) a `default-clock-timestamp`. To
//!   TSDL, each member with a role is named after it (`packet_size`,
//!   `timestamp_end`, ...), and a member that has no role but a reserved
//!   name is refused (TSDL would give it the meaning).
//! - **Names.** babeltrace2 shows a CTF 1.8 name without one leading `_`
//!   and a CTF 2 name as it is (the model keeps TSDL names: see
//!   `json::model_name`), so a member or option name loses one leading `_`
//!   to CTF 2; to TSDL, a name that is a TSDL keyword gets one (it shows
//!   the same), and a name that is no identifier is refused.
//! - **Clocks.** CTF 2 data stream classes name their default clock
//!   class; CTF 1.8 maps the timestamp integers to it
//!   (`map = clock.NAME.value`). A clock offset is written normalized
//!   (whole seconds, then cycles below the frequency); `absolute = TRUE`
//!   and the `unix-epoch` origin stand for each other.
//! - **Variants.** CTF 1.8 selects the option named like the tag's
//!   enumeration label; CTF 2 gives each option its selector ranges. To
//!   CTF 2, an option's ranges are those of the labels naming it (an
//!   option no label names is refused). To TSDL, the selector must be an
//!   enumeration whose labels name the options with exactly their ranges.
//! - **Event record attributes.** The log level and EMF URI go to the
//!   `lttng.org,2009` namespace (`log-level` named as babeltrace2 names
//!   CTF 1.8 levels 0 to 14).
//! - **Field locations** are written absolute: CTF 2 `origin` and member
//!   names (variants and optionals crossed without a name); TSDL
//!   `event.fields.a.b` paths (a variant's option named).
//!
//! What TSDL cannot express is refused with an error naming the field:
//! booleans, bit maps, variable-length integers, BLOBs (but the
//! packet header UUID), UTF-16/32 strings, optionals, arrays with a
//! minimum alignment above their element's, and floats other than 32 and
//! 64 bits in CTF 2. Callsites (CTF 1.8 only) are not written to CTF 2.

use std::fmt::Write as _;

use serde_json::{json, Map, Value as J};

use super::json::Roots;
use crate::model::*;

/// A model that the other form cannot express: where (the fragment or
/// block, the field's path) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct TranslateError {
    pub at: String,
    pub message: String,
}

type R<T> = Result<T, TranslateError>;

/// A member's name as babeltrace2 shows it: one leading `_` dropped (the
/// model keeps TSDL names; CTF 2 names are shown as they are).
fn shown(name: &str) -> &str {
    name.strip_prefix('_').unwrap_or(name)
}

/// What a member is being written for.
struct Place<'a> {
    scope: Scope,
    /// A member of the scope's root structure.
    root: bool,
    /// The member's (model) name.
    name: &'a str,
}

/// CTF 2 roles of a CTF 1.8 integer: what its name means there (as the
/// reader's plan reads it).
fn roles_of_name(p: &Place, i: &IntegerClass) -> Vec<&'static str> {
    let n = shown(p.name);
    let r = match (p.scope, p.root, n) {
        (Scope::PacketHeader, true, "magic") => "packet-magic-number",
        (Scope::PacketHeader, true, "stream_id") => "data-stream-class-id",
        (Scope::PacketHeader, true, "stream_instance_id") => "data-stream-id",
        (Scope::PacketContext, true, "timestamp_begin") => "default-clock-timestamp",
        (Scope::PacketContext, true, "timestamp_end") => "packet-end-default-clock-timestamp",
        (Scope::PacketContext, true, "content_size") => "packet-content-length",
        (Scope::PacketContext, true, "packet_size") => "packet-total-length",
        (Scope::PacketContext, true, "events_discarded") => {
            "discarded-event-record-counter-snapshot"
        }
        (Scope::PacketContext, true, "packet_seq_num") => "packet-sequence-number",
        (Scope::EventHeader, _, "id") => "event-record-class-id",
        (Scope::EventHeader, _, _) if n == "timestamp" || i.mapped_clock.is_some() => {
            "default-clock-timestamp"
        }
        _ => return Vec::new(),
    };
    vec![r]
}

fn role_names(r: Roles) -> Vec<&'static str> {
    let all = [
        (Roles::MAGIC, "packet-magic-number"),
        (Roles::STREAM_CLASS_ID, "data-stream-class-id"),
        (Roles::STREAM_ID, "data-stream-id"),
        (Roles::PACKET_TOTAL_LENGTH, "packet-total-length"),
        (Roles::PACKET_CONTENT_LENGTH, "packet-content-length"),
        (Roles::TIMESTAMP, "default-clock-timestamp"),
        (
            Roles::PACKET_END_TIMESTAMP,
            "packet-end-default-clock-timestamp",
        ),
        (Roles::DISCARDED, "discarded-event-record-counter-snapshot"),
        (Roles::PACKET_SEQ_NUM, "packet-sequence-number"),
        (Roles::EVENT_CLASS_ID, "event-record-class-id"),
    ];
    all.iter()
        .filter(|(b, _)| r.has(*b))
        .map(|&(_, n)| n)
        .collect()
}

/// babeltrace2's names of the CTF 1.8 log levels 0 to 14.
fn log_level_name(l: i64) -> Option<&'static str> {
    Some(match l {
        0 => "emergency",
        1 => "alert",
        2 => "critical",
        3 => "error",
        4 => "warning",
        5 => "notice",
        6 => "info",
        7 => "debug:system",
        8 => "debug:program",
        9 => "debug:process",
        10 => "debug:module",
        11 => "debug:unit",
        12 => "debug:function",
        13 => "debug:line",
        14 => "debug",
        _ => return None,
    })
}

fn bo_name(b: ByteOrder) -> &'static str {
    match b {
        ByteOrder::Little => "little-endian",
        ByteOrder::Big => "big-endian",
    }
}

fn origin_name(s: Scope) -> &'static str {
    match s {
        Scope::PacketHeader => "packet-header",
        Scope::PacketContext => "packet-context",
        Scope::EventHeader => "event-record-header",
        Scope::EventCommonContext => "event-record-common-context",
        Scope::EventSpecificContext => "event-record-specific-context",
        Scope::EventPayload => "event-record-payload",
    }
}

fn tsdl_scope(s: Scope) -> &'static str {
    super::types::scope_name(s)
}

fn uuid_text(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn ranges_json(r: &[(i128, i128)]) -> J {
    J::Array(
        r.iter()
            .map(|&(lo, hi)| json!([num(lo), num(hi)]))
            .collect(),
    )
}

fn num(v: i128) -> J {
    if v >= 0 {
        json!(v as u64)
    } else {
        json!(v as i64)
    }
}

/// Walks `path` (a [`FieldRef`]'s) from `root`: each step's member (or
/// option) name, `None` for the steps that have none in CTF 2 (variant
/// options and optionals), arrays crossed without a step.
fn path_steps<'a>(root: &'a FieldClass, path: &[u32]) -> Option<Vec<(Option<&'a str>, &'a str)>> {
    let mut out = Vec::new();
    let mut cur = root;
    for &i in path {
        loop {
            match cur {
                FieldClass::Array(a) => cur = &a.element,
                FieldClass::Sequence(s) => cur = &s.element,
                _ => break,
            }
        }
        match cur {
            FieldClass::Struct(s) => {
                let m = s.members.get(i as usize)?;
                out.push((Some(m.name.as_str()), m.name.as_str()));
                cur = &m.class;
            }
            FieldClass::Variant(v) => {
                let o = v.options.get(i as usize)?;
                out.push((None, o.name.as_str()));
                cur = &o.class;
            }
            FieldClass::Optional(o) => {
                out.push((None, ""));
                cur = &o.class;
            }
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------- CTF 2 --

/// Writes `meta` as CTF 2 metadata: a JSON text sequence (each fragment
/// preceded by the record separator 0x1E and followed by a line feed):
/// the preamble, the trace class, the clock classes, then each data
/// stream class followed by its event record classes.
pub fn to_ctf2(meta: &Metadata) -> R<Vec<u8>> {
    let w = Ctf2 { meta };
    let mut frags: Vec<J> = Vec::new();
    let mut pre = json!({"type": "preamble", "version": 2});
    if let Some(u) = &meta.uuid {
        pre["uuid"] = json!(u.to_vec());
    }
    frags.push(pre);
    let mut tc = Map::new();
    tc.insert("type".into(), json!("trace-class"));
    // A CTF 1.8 trace's UUID becomes the UID, as babeltrace2 2.1's
    // sink.ctf.fs writes it (readers name the trace by it).
    let uid = meta.uid.clone().or_else(|| {
        meta.uuid.filter(|_| meta.major < 2).map(|u| {
            let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        })
    });
    if let Some(uid) = uid {
        tc.insert("uid".into(), json!(uid));
    }
    if !meta.env.is_empty() {
        let mut env = Map::new();
        for (k, v) in &meta.env {
            env.insert(
                k.clone(),
                match v {
                    EnvValue::Int(i) => json!(i),
                    EnvValue::Str(s) => json!(s),
                },
            );
        }
        tc.insert("environment".into(), J::Object(env));
    }
    let roots = Roots {
        ph: meta.packet_header.as_ref(),
        ..Default::default()
    };
    if let Some(ph) = &meta.packet_header {
        let at = "trace class: packet header".to_string();
        tc.insert(
            "packet-header-field-class".into(),
            w.fc(ph, &roots, Scope::PacketHeader, &at, None)?,
        );
    }
    frags.push(J::Object(tc));
    // babeltrace2 gives an LTTng trace's clocks the Unix epoch as their
    // origin (LTTng's metadata says `absolute` nowhere, but its clocks
    // are the system's).
    let lttng = meta.major < 2
        && matches!(meta.env_get("tracer_name"), Some(EnvValue::Str(t)) if t.starts_with("lttng"));
    for c in &meta.clocks {
        let mut o = Map::new();
        o.insert("type".into(), json!("clock-class"));
        o.insert("id".into(), json!(c.name));
        o.insert("name".into(), json!(c.name));
        o.insert("frequency".into(), json!(c.freq.max(1)));
        let (s, cy) = c.normalized_offset();
        let mut off = Map::new();
        if s != 0 {
            off.insert("seconds".into(), json!(s));
        }
        if cy != 0 {
            off.insert("cycles".into(), json!(cy));
        }
        if !off.is_empty() {
            o.insert("offset-from-origin".into(), J::Object(off));
        }
        if c.absolute || lttng {
            o.insert("origin".into(), json!("unix-epoch"));
        }
        if c.precision != 0 {
            o.insert("precision".into(), json!(c.precision));
        }
        if let Some(d) = &c.description {
            o.insert("description".into(), json!(d));
        }
        if let Some(u) = &c.uuid {
            o.insert("uid".into(), json!(uuid_text(u)));
        }
        frags.push(J::Object(o));
    }
    for sc in &meta.streams {
        let at = format!("data stream class {}", sc.id);
        let mut o = Map::new();
        o.insert("type".into(), json!("data-stream-class"));
        o.insert("id".into(), json!(sc.id));
        if let Some(c) = w.default_clock(sc, &at)? {
            o.insert("default-clock-class-id".into(), json!(c));
        }
        let mut roots = Roots {
            ph: meta.packet_header.as_ref(),
            pc: sc.packet_context.as_ref(),
            eh: sc.event_header.as_ref(),
            ecc: sc.event_context.as_ref(),
            ..Default::default()
        };
        for (key, scope, fc, what) in [
            (
                "packet-context-field-class",
                Scope::PacketContext,
                &sc.packet_context,
                "packet context",
            ),
            (
                "event-record-header-field-class",
                Scope::EventHeader,
                &sc.event_header,
                "event record header",
            ),
            (
                "event-record-common-context-field-class",
                Scope::EventCommonContext,
                &sc.event_context,
                "event record common context",
            ),
        ] {
            if let Some(fc) = fc {
                o.insert(
                    key.into(),
                    w.fc(fc, &roots, scope, &format!("{at}: {what}"), None)?,
                );
            }
        }
        frags.push(J::Object(o));
        for ec in &sc.events {
            let at = format!(
                "event record class `{}` (id {}, data stream class {})",
                ec.name, ec.id, sc.id
            );
            let mut o = Map::new();
            o.insert("type".into(), json!("event-record-class"));
            o.insert("id".into(), json!(ec.id));
            o.insert("data-stream-class-id".into(), json!(sc.id));
            o.insert("name".into(), json!(ec.name));
            let mut attrs = Map::new();
            if let Some(l) = ec.loglevel {
                let Some(n) = log_level_name(l) else {
                    return Err(TranslateError {
                        at,
                        message: format!(
                            "log level {l} has no CTF 2 name (expected 0 to 14, as babeltrace2 names them)"
                        ),
                    });
                };
                attrs.insert("log-level".into(), json!(n));
            }
            if let Some(u) = &ec.model_emf_uri {
                attrs.insert("emf-uri".into(), json!(u));
            }
            if !attrs.is_empty() {
                o.insert(
                    "attributes".into(),
                    json!({ "lttng.org,2009": J::Object(attrs) }),
                );
            }
            roots.esc = ec.context.as_ref();
            roots.ep = ec.payload.as_ref();
            for (key, scope, fc, what) in [
                (
                    "specific-context-field-class",
                    Scope::EventSpecificContext,
                    &ec.context,
                    "specific context",
                ),
                (
                    "payload-field-class",
                    Scope::EventPayload,
                    &ec.payload,
                    "payload",
                ),
            ] {
                if let Some(fc) = fc {
                    o.insert(
                        key.into(),
                        w.fc(fc, &roots, scope, &format!("{at}: {what}"), None)?,
                    );
                }
            }
            frags.push(J::Object(o));
        }
    }
    let mut out = Vec::new();
    for f in frags {
        out.push(super::json::RS);
        // Serializing a `Value` cannot fail.
        out.extend_from_slice(serde_json::to_string(&f).unwrap_or_default().as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

struct Ctf2<'m> {
    meta: &'m Metadata,
}

impl Ctf2<'_> {
    fn err(&self, at: &str, message: impl Into<String>) -> TranslateError {
        TranslateError {
            at: at.to_string(),
            message: message.into(),
        }
    }

    /// The default clock class of `sc`: its own (CTF 2), else the clock
    /// its timestamp integers are mapped to (CTF 1.8).
    fn default_clock(&self, sc: &StreamClass, at: &str) -> R<Option<String>> {
        if let Some(c) = &sc.default_clock {
            return Ok(Some(c.clone()));
        }
        let mut found: Option<String> = None;
        let mut needs = false;
        for (fc, scope) in [
            (&sc.packet_context, Scope::PacketContext),
            (&sc.event_header, Scope::EventHeader),
        ] {
            if let Some(fc) = fc {
                clocks_of(fc, scope, 0, "", &mut found, &mut needs);
            }
        }
        if found.is_none() && needs {
            // An unmapped timestamp: the trace's only clock.
            if self.meta.clocks.len() == 1 {
                found = Some(self.meta.clocks[0].name.clone());
            } else {
                return Err(self.err(
                    at,
                    "a timestamp field is mapped to no clock and the trace has no single clock",
                ));
            }
        }
        Ok(found)
    }

    /// A field class. `place`: the member it is the class of (for roles).
    /// A static- or dynamic-length (`kind`) array of `element`, or string
    /// when its elements are text bytes, without its length.
    fn array(
        &self,
        kind: &str,
        element: &FieldClass,
        min_align: u32,
        (roots, scope, at, place): (&Roots, Scope, &str, Option<&Place>),
    ) -> R<Map<String, J>> {
        let mut o = Map::new();
        if is_text(element) && min_align <= 8 {
            o.insert("type".into(), json!(format!("{kind}-string")));
        } else {
            o.insert("type".into(), json!(format!("{kind}-array")));
            o.insert(
                "element-field-class".into(),
                self.fc(element, roots, scope, at, nested(place))?,
            );
            if min_align > 1 {
                o.insert("minimum-alignment".into(), json!(min_align));
            }
        }
        Ok(o)
    }

    fn fc(
        &self,
        fc: &FieldClass,
        roots: &Roots,
        scope: Scope,
        at: &str,
        place: Option<&Place>,
    ) -> R<J> {
        let ctf2 = self.meta.major >= 2;
        let int = |i: &IntegerClass, place: Option<&Place>| -> R<Map<String, J>> {
            let mut o = Map::new();
            o.insert(
                "type".into(),
                json!(if i.signed {
                    "fixed-length-signed-integer"
                } else {
                    "fixed-length-unsigned-integer"
                }),
            );
            o.insert("length".into(), json!(i.size));
            o.insert("byte-order".into(), json!(bo_name(i.byte_order)));
            if i.align > 1 {
                o.insert("alignment".into(), json!(i.align));
            }
            if i.base != 10 {
                o.insert("preferred-display-base".into(), json!(i.base));
            }
            let roles = if ctf2 {
                role_names(i.roles)
            } else {
                place.map_or(Vec::new(), |p| roles_of_name(p, i))
            };
            if !roles.is_empty() {
                if i.signed {
                    return Err(self.err(
                        at,
                        format!(
                            "a signed integer named `{}`: CTF 2 gives its meaning (role {}) to unsigned integers only",
                            place.map_or("", |p| p.name),
                            roles[0]
                        ),
                    ));
                }
                o.insert("roles".into(), json!(roles));
            }
            Ok(o)
        };
        Ok(match fc {
            FieldClass::Integer(i) => J::Object(int(i, place)?),
            FieldClass::Enum(e) => {
                let mut o = int(&e.container, place)?;
                let mut m = Map::new();
                for mp in &e.mappings {
                    // One label, all its ranges (TSDL may repeat a label).
                    let entry = m.entry(mp.label.clone()).or_insert_with(|| json!([]));
                    if let (J::Array(a), J::Array(b)) = (entry, ranges_json(&mp.ranges)) {
                        a.extend(b);
                    }
                }
                if !m.is_empty() {
                    o.insert("mappings".into(), J::Object(m));
                }
                J::Object(o)
            }
            FieldClass::Bool(i) => {
                let mut o = int(i, None)?;
                o.insert("type".into(), json!("fixed-length-boolean"));
                o.remove("preferred-display-base");
                J::Object(o)
            }
            FieldClass::BitMap(b) => {
                let mut o = int(&b.container, None)?;
                o.insert("type".into(), json!("fixed-length-bit-map"));
                o.remove("preferred-display-base");
                let mut m = Map::new();
                for f in &b.flags {
                    m.insert(f.label.clone(), ranges_json(&f.ranges));
                }
                o.insert("flags".into(), J::Object(m));
                J::Object(o)
            }
            FieldClass::VarInt(v) => {
                let mut o = Map::new();
                o.insert(
                    "type".into(),
                    json!(if v.signed {
                        "variable-length-signed-integer"
                    } else {
                        "variable-length-unsigned-integer"
                    }),
                );
                if v.base != 10 {
                    o.insert("preferred-display-base".into(), json!(v.base));
                }
                let roles = role_names(v.roles);
                if !roles.is_empty() {
                    o.insert("roles".into(), json!(roles));
                }
                if !v.mappings.is_empty() {
                    let mut m = Map::new();
                    for mp in &v.mappings {
                        m.insert(mp.label.clone(), ranges_json(&mp.ranges));
                    }
                    o.insert("mappings".into(), J::Object(m));
                }
                J::Object(o)
            }
            FieldClass::Float(f) => {
                let len = match (f.exp_dig, f.mant_dig) {
                    (8, 24) => 32,
                    (11, 53) => 64,
                    (e, m) => {
                        return Err(self.err(
                            at,
                            format!("a floating point number with {e} exponent and {m} mantissa bits: CTF 2 has the 32- and 64-bit IEEE 754 ones only"),
                        ))
                    }
                };
                let mut o = Map::new();
                o.insert("type".into(), json!("fixed-length-floating-point-number"));
                o.insert("length".into(), json!(len));
                o.insert("byte-order".into(), json!(bo_name(f.byte_order)));
                if f.align > 1 {
                    o.insert("alignment".into(), json!(f.align));
                }
                J::Object(o)
            }
            FieldClass::String(_) => json!({"type": "null-terminated-string"}),
            FieldClass::Bytes(b) => {
                let enc = b.text.map(|e| match e {
                    TextEncoding::Utf8 => "utf-8",
                    TextEncoding::Utf16Be => "utf-16be",
                    TextEncoding::Utf16Le => "utf-16le",
                    TextEncoding::Utf32Be => "utf-32be",
                    TextEncoding::Utf32Le => "utf-32le",
                });
                let mut o = Map::new();
                let kind = if enc.is_some() { "string" } else { "blob" };
                match &b.length {
                    BytesLength::Null => {
                        o.insert("type".into(), json!("null-terminated-string"));
                    }
                    BytesLength::Static(n) => {
                        o.insert("type".into(), json!(format!("static-length-{kind}")));
                        o.insert("length".into(), json!(n));
                    }
                    BytesLength::Dynamic(r) => {
                        o.insert("type".into(), json!(format!("dynamic-length-{kind}")));
                        o.insert("length-field-location".into(), self.location(r, roots, at)?);
                    }
                }
                if let Some(e) = enc {
                    o.insert("encoding".into(), json!(e));
                }
                if b.uuid {
                    o.insert("roles".into(), json!(["metadata-stream-uuid"]));
                }
                J::Object(o)
            }
            FieldClass::Struct(s) => {
                let mut members = Vec::with_capacity(s.members.len());
                let mut seen: Vec<&str> = Vec::new();
                for m in &s.members {
                    let name = shown(&m.name);
                    if seen.contains(&name) {
                        return Err(self.err(
                            at,
                            format!("two members named `{name}` once babeltrace2's leading `_` is dropped"),
                        ));
                    }
                    seen.push(name);
                    let p = Place {
                        scope,
                        root: place.is_none(),
                        name: &m.name,
                    };
                    let mat = format!("{at}: `{}`", m.name);
                    let class = if let Some(u) = self.uuid_blob(&p, &m.class) {
                        u
                    } else {
                        self.fc(&m.class, roots, scope, &mat, Some(&p))?
                    };
                    members.push(json!({"name": name, "field-class": class}));
                }
                let mut o = Map::new();
                o.insert("type".into(), json!("structure"));
                o.insert("member-classes".into(), J::Array(members));
                if s.min_align > 1 {
                    o.insert("minimum-alignment".into(), json!(s.min_align));
                }
                J::Object(o)
            }
            FieldClass::Array(a) => {
                let mut o = self.array(
                    "static-length",
                    &a.element,
                    a.min_align,
                    (roots, scope, at, place),
                )?;
                o.insert("length".into(), json!(a.length));
                J::Object(o)
            }
            FieldClass::Sequence(s) => {
                let mut o = self.array(
                    "dynamic-length",
                    &s.element,
                    s.min_align,
                    (roots, scope, at, place),
                )?;
                o.insert(
                    "length-field-location".into(),
                    self.location(&s.length, roots, at)?,
                );
                J::Object(o)
            }
            FieldClass::Variant(v) => {
                let tag = self.target(&v.tag, roots, at)?;
                let mut opts = Vec::with_capacity(v.options.len());
                let mut taken: Vec<(i128, i128)> = Vec::new();
                for o in &v.options {
                    let ranges = match &o.ranges {
                        Some(r) => r.clone(),
                        None => {
                            let FieldClass::Enum(e) = tag else {
                                return Err(self.err(at, "a variant whose tag is no enumeration"));
                            };
                            e.mappings
                                .iter()
                                .filter(|m| m.label == o.name)
                                .flat_map(|m| m.ranges.iter().copied())
                                .collect()
                        }
                    };
                    if ranges.is_empty() {
                        return Err(self.err(
                            at,
                            format!("variant option `{}` is named by no label of its tag, so it is never selected: CTF 2 needs its selector ranges", o.name),
                        ));
                    }
                    if ranges
                        .iter()
                        .any(|&(lo, hi)| taken.iter().any(|&(l, h)| lo <= h && l <= hi))
                    {
                        return Err(self.err(
                            at,
                            format!("variant option `{}` is selected by values that also select another option (overlapping tag labels): CTF 2 options' ranges cannot overlap", o.name),
                        ));
                    }
                    taken.extend(ranges.iter().copied());
                    let oat = format!("{at}: option `{}`", o.name);
                    opts.push(json!({
                        // The CTF 2 reader keeps option names as written
                        // (babeltrace2 drops a CTF 1.8 one's leading `_`).
                        "name": if ctf2 { o.name.as_str() } else { shown(&o.name) },
                        "selector-field-ranges": ranges_json(&ranges),
                        "field-class": self.fc(&o.class, roots, scope, &oat, nested(place))?,
                    }));
                }
                json!({
                    "type": "variant",
                    "selector-field-location": self.location(&v.tag, roots, at)?,
                    "options": opts,
                })
            }
            FieldClass::Optional(op) => {
                let mut o = Map::new();
                o.insert("type".into(), json!("optional"));
                o.insert(
                    "selector-field-location".into(),
                    self.location(&op.selector, roots, at)?,
                );
                if let Some(r) = &op.ranges {
                    o.insert("selector-field-ranges".into(), ranges_json(r));
                }
                o.insert(
                    "field-class".into(),
                    self.fc(&op.class, roots, scope, at, nested(place))?,
                );
                J::Object(o)
            }
        })
    }

    /// A CTF 1.8 packet header `uuid` (16 bytes): the metadata stream UUID
    /// BLOB.
    fn uuid_blob(&self, p: &Place, fc: &FieldClass) -> Option<J> {
        if self.meta.major >= 2 || p.scope != Scope::PacketHeader || !p.root {
            return None;
        }
        if shown(p.name) != "uuid" {
            return None;
        }
        let FieldClass::Array(a) = fc else {
            return None;
        };
        match &*a.element {
            FieldClass::Integer(i) if a.length == 16 && i.size == 8 && i.align == 8 => {}
            _ => return None,
        }
        let mut o = json!({"type": "static-length-blob", "length": 16});
        if self.meta.uuid.is_some() {
            o["roles"] = json!(["metadata-stream-uuid"]);
        }
        Some(o)
    }

    fn target<'a>(&self, r: &FieldRef, roots: &Roots<'a>, at: &str) -> R<&'a FieldClass> {
        let mut cur = roots
            .get(r.scope)
            .ok_or_else(|| self.err(at, "a field location in a scope with no field class"))?;
        for &i in &r.path {
            loop {
                match cur {
                    FieldClass::Array(a) => cur = &a.element,
                    FieldClass::Sequence(s) => cur = &s.element,
                    _ => break,
                }
            }
            cur = match cur {
                FieldClass::Struct(s) => s.members.get(i as usize).map(|m| &m.class),
                FieldClass::Variant(v) => v.options.get(i as usize).map(|o| &o.class),
                FieldClass::Optional(o) => Some(&*o.class),
                _ => None,
            }
            .ok_or_else(|| self.err(at, "a field location that names no field"))?;
        }
        Ok(cur)
    }

    fn location(&self, r: &FieldRef, roots: &Roots, at: &str) -> R<J> {
        let root = roots
            .get(r.scope)
            .ok_or_else(|| self.err(at, "a field location in a scope with no field class"))?;
        let steps = path_steps(root, &r.path)
            .ok_or_else(|| self.err(at, "a field location that names no field"))?;
        let names: Vec<&str> = steps.iter().filter_map(|(n, _)| n.map(shown)).collect();
        Ok(json!({"origin": origin_name(r.scope), "path": names}))
    }
}

/// The place of a field nested in an array, option or optional: no
/// longer a root member; its name stays (an event header's nested
/// `timestamp`, in a variant option's structure, keeps its role).
fn nested<'a>(p: Option<&'a Place<'a>>) -> Option<&'a Place<'a>> {
    p
}

/// Clocks that the timestamp integers of `fc` (a packet context or event
/// header; `depth` 0 for the scope's root) are mapped to: the first one
/// into `found`; `needs` when one is mapped to none.
fn clocks_of(
    fc: &FieldClass,
    scope: Scope,
    depth: usize,
    name: &str,
    found: &mut Option<String>,
    needs: &mut bool,
) {
    let int = |i: &IntegerClass, found: &mut Option<String>, needs: &mut bool| {
        if let Some(c) = &i.mapped_clock {
            found.get_or_insert_with(|| c.clone());
        } else {
            let n = shown(name);
            *needs |= match scope {
                Scope::PacketContext => {
                    depth == 1 && (n == "timestamp_begin" || n == "timestamp_end")
                }
                _ => n == "timestamp",
            };
        }
    };
    match fc {
        FieldClass::Integer(i) => int(i, found, needs),
        FieldClass::Enum(e) => int(&e.container, found, needs),
        FieldClass::Struct(s) => {
            for m in &s.members {
                clocks_of(&m.class, scope, depth + 1, &m.name, found, needs);
            }
        }
        FieldClass::Variant(v) => {
            for o in &v.options {
                clocks_of(&o.class, scope, depth + 1, &o.name, found, needs);
            }
        }
        _ => {}
    }
}

/// babeltrace2 shows arrays and sequences of byte-aligned 8-bit integers
/// with an encoding as strings (as the plan reads them).
fn is_text(elem: &FieldClass) -> bool {
    matches!(elem, FieldClass::Integer(i) if i.size == 8 && i.align == 8 && i.encoding != Encoding::None)
}

// ----------------------------------------------------------------- TSDL --

/// TSDL keywords: a name spelled like one gets a leading `_` (which
/// babeltrace2 and reef drop when they show it).
pub(crate) const KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "const",
    "char",
    "clock",
    "double",
    "enum",
    "env",
    "event",
    "floating_point",
    "float",
    "integer",
    "int",
    "long",
    "short",
    "signed",
    "stream",
    "string",
    "struct",
    "trace",
    "typealias",
    "typedef",
    "unsigned",
    "variant",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|x| x == '_' || x.is_ascii_alphanumeric())
}

fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A clock class id as a TSDL identifier (CTF 2 ids are any string).
fn clock_ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c == '_' || c.is_ascii_alphanumeric() {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || KEYWORDS.contains(&&*s) {
        s.insert(0, '_');
    }
    s
}

/// Writes `meta` as CTF 1.8 TSDL metadata (plain text, not packetized).
pub fn to_tsdl(meta: &Metadata) -> R<String> {
    let w = Tsdl { meta };
    let mut out = String::from("/* CTF 1.8 */\n\n");
    // The trace's byte order: the magic number's, else the first
    // integer's (each integer also says its own).
    let bo = meta
        .packet_header
        .as_ref()
        .and_then(first_int)
        .or_else(|| {
            meta.streams.iter().find_map(|s| {
                [&s.packet_context, &s.event_header]
                    .into_iter()
                    .flatten()
                    .find_map(first_int)
            })
        })
        .map_or(meta.byte_order, |i| i.byte_order);
    out.push_str("trace {\n\tmajor = 1;\n\tminor = 8;\n");
    if let Some(u) = &meta.uuid {
        let _ = writeln!(out, "\tuuid = \"{}\";", uuid_text(u));
    }
    let _ = writeln!(
        out,
        "\tbyte_order = {};",
        if bo == ByteOrder::Little { "le" } else { "be" }
    );
    let roots = Roots {
        ph: meta.packet_header.as_ref(),
        ..Default::default()
    };
    if let Some(ph) = &meta.packet_header {
        let t = w.ty(
            ph,
            &roots,
            Scope::PacketHeader,
            "trace: packet header",
            true,
            1,
        )?;
        let _ = writeln!(out, "\tpacket.header := {t};");
    }
    out.push_str("};\n\n");
    if !meta.env.is_empty() {
        out.push_str("env {\n");
        for (k, v) in &meta.env {
            if !is_ident(k) || KEYWORDS.contains(&k.as_str()) {
                return Err(TranslateError {
                    at: "trace class: environment".into(),
                    message: format!("entry `{k}` is no TSDL identifier"),
                });
            }
            match v {
                EnvValue::Int(i) => {
                    let _ = writeln!(out, "\t{k} = {i};");
                }
                EnvValue::Str(s) => {
                    let _ = writeln!(out, "\t{k} = {};", quote(s));
                }
            }
        }
        out.push_str("};\n\n");
    }
    for c in &meta.clocks {
        out.push_str("clock {\n");
        let _ = writeln!(out, "\tname = {};", clock_ident(&c.name));
        if let Some(u) = &c.uuid {
            let _ = writeln!(out, "\tuuid = \"{}\";", uuid_text(u));
        }
        if let Some(d) = &c.description {
            let _ = writeln!(out, "\tdescription = {};", quote(d));
        }
        let (s, cy) = c.normalized_offset();
        let _ = writeln!(out, "\tfreq = {};", c.freq.max(1));
        let _ = writeln!(out, "\tprecision = {};", c.precision);
        let _ = writeln!(out, "\toffset_s = {s};");
        let _ = writeln!(out, "\toffset = {cy};");
        let _ = writeln!(
            out,
            "\tabsolute = {};",
            if c.absolute { "true" } else { "false" }
        );
        out.push_str("};\n\n");
    }
    let single = meta.streams.len() == 1 && meta.streams[0].id == 0;
    for sc in &meta.streams {
        let at = format!("data stream class {}", sc.id);
        let mut roots = Roots {
            ph: meta.packet_header.as_ref(),
            pc: sc.packet_context.as_ref(),
            eh: sc.event_header.as_ref(),
            ecc: sc.event_context.as_ref(),
            ..Default::default()
        };
        out.push_str("stream {\n");
        if !single {
            let _ = writeln!(out, "\tid = {};", sc.id);
        }
        for (key, scope, fc, what) in [
            (
                "packet.context",
                Scope::PacketContext,
                &sc.packet_context,
                "packet context",
            ),
            (
                "event.header",
                Scope::EventHeader,
                &sc.event_header,
                "event record header",
            ),
            (
                "event.context",
                Scope::EventCommonContext,
                &sc.event_context,
                "event record common context",
            ),
        ] {
            if let Some(fc) = fc {
                let t = w.ty(fc, &roots, scope, &format!("{at}: {what}"), true, 1)?;
                let _ = writeln!(out, "\t{key} := {t};");
            }
        }
        out.push_str("};\n\n");
        for ec in &sc.events {
            let at = format!(
                "event record class `{}` (id {}, data stream class {})",
                ec.name, ec.id, sc.id
            );
            out.push_str("event {\n");
            let _ = writeln!(out, "\tname = {};", quote(&ec.name));
            let _ = writeln!(out, "\tid = {};", ec.id);
            if !single {
                let _ = writeln!(out, "\tstream_id = {};", sc.id);
            }
            if let Some(l) = ec.loglevel {
                let _ = writeln!(out, "\tloglevel = {l};");
            }
            if let Some(u) = &ec.model_emf_uri {
                let _ = writeln!(out, "\tmodel.emf.uri = {};", quote(u));
            }
            roots.esc = ec.context.as_ref();
            roots.ep = ec.payload.as_ref();
            for (key, scope, fc, what) in [
                (
                    "context",
                    Scope::EventSpecificContext,
                    &ec.context,
                    "specific context",
                ),
                ("fields", Scope::EventPayload, &ec.payload, "payload"),
            ] {
                if let Some(fc) = fc {
                    let t = w.ty(fc, &roots, scope, &format!("{at}: {what}"), true, 1)?;
                    let _ = writeln!(out, "\t{key} := {t};");
                }
            }
            out.push_str("};\n\n");
        }
    }
    Ok(out)
}

fn first_int(fc: &FieldClass) -> Option<&IntegerClass> {
    match fc {
        FieldClass::Integer(i) => Some(i),
        FieldClass::Enum(e) => Some(&e.container),
        FieldClass::Struct(s) => s.members.iter().find_map(|m| first_int(&m.class)),
        _ => None,
    }
}

struct Tsdl<'m> {
    meta: &'m Metadata,
}

/// The TSDL name a CTF 2 role gives a member.
fn role_member_name(scope: Scope, r: Roles) -> Option<&'static str> {
    let pairs: &[(u16, &str)] = match scope {
        Scope::PacketHeader => &[
            (Roles::MAGIC, "magic"),
            (Roles::STREAM_CLASS_ID, "stream_id"),
            (Roles::STREAM_ID, "stream_instance_id"),
        ],
        Scope::PacketContext => &[
            (Roles::PACKET_TOTAL_LENGTH, "packet_size"),
            (Roles::PACKET_CONTENT_LENGTH, "content_size"),
            (Roles::PACKET_END_TIMESTAMP, "timestamp_end"),
            (Roles::TIMESTAMP, "timestamp_begin"),
            (Roles::DISCARDED, "events_discarded"),
            (Roles::PACKET_SEQ_NUM, "packet_seq_num"),
        ],
        Scope::EventHeader => &[
            (Roles::EVENT_CLASS_ID, "id"),
            (Roles::TIMESTAMP, "timestamp"),
        ],
        _ => &[],
    };
    pairs.iter().find(|(b, _)| r.has(*b)).map(|&(_, n)| n)
}

/// Names that mean something in a CTF 1.8 scope (one leading `_`
/// dropped), at its root (or anywhere, for the event header's).
fn reserved(scope: Scope, root: bool, name: &str) -> bool {
    let n = shown(name);
    match scope {
        Scope::PacketHeader => {
            root && matches!(n, "magic" | "stream_id" | "stream_instance_id" | "uuid")
        }
        Scope::PacketContext => {
            root && matches!(
                n,
                "timestamp_begin"
                    | "timestamp_end"
                    | "content_size"
                    | "packet_size"
                    | "events_discarded"
                    | "packet_seq_num"
            )
        }
        Scope::EventHeader => matches!(n, "id" | "timestamp"),
        _ => false,
    }
}

fn roles_of(fc: &FieldClass) -> Roles {
    match fc {
        FieldClass::Integer(i) => i.roles,
        FieldClass::Enum(e) => e.container.roles,
        FieldClass::VarInt(v) => v.roles,
        FieldClass::Bytes(b) if b.uuid => Roles(Roles::UUID),
        _ => Roles::default(),
    }
}

impl Tsdl<'_> {
    fn err(&self, at: &str, message: impl Into<String>) -> TranslateError {
        TranslateError {
            at: at.to_string(),
            message: message.into(),
        }
    }

    /// The TSDL name of member `m` of a structure (`root`: the scope's
    /// root structure).
    fn member_name(&self, scope: Scope, root: bool, m: &StructMember, at: &str) -> R<String> {
        let roles = roles_of(&m.class);
        if !roles.is_empty() {
            if roles.has(Roles::UUID) {
                if scope == Scope::PacketHeader && root {
                    return Ok("uuid".into());
                }
            } else if let Some(n) = role_member_name(scope, roles) {
                if root || (scope == Scope::EventHeader) {
                    return Ok(n.into());
                }
            }
            return Err(self.err(
                at,
                format!(
                    "member `{}` has a role that CTF 1.8 gives only to a member of the scope's root structure named after it",
                    m.name
                ),
            ));
        }
        if self.meta.major >= 2 && reserved(scope, root, &m.name) {
            return Err(self.err(
                at,
                format!(
                    "member `{}` has no role, but CTF 1.8 gives one to a member with its name",
                    m.name
                ),
            ));
        }
        self.ident(&m.name, at)
    }

    fn ident(&self, name: &str, at: &str) -> R<String> {
        if !is_ident(name) {
            return Err(self.err(at, format!("name `{name}` is no TSDL identifier")));
        }
        Ok(if KEYWORDS.contains(&name) {
            format!("_{name}")
        } else {
            name.to_string()
        })
    }

    /// The TSDL name of variant option `o` whose tag is `e`: TSDL selects
    /// the option named like the tag's label, so a CTF 2 option (selected
    /// by its ranges) takes the name of the label whose ranges are exactly
    /// its own (its own name when that is one: babeltrace2 shows no option
    /// name, only the option's value).
    fn option_name(&self, e: &EnumClass, o: &VariantOption, at: &str) -> R<String> {
        let Some(r) = &o.ranges else {
            return self.ident(&o.name, at);
        };
        let ranges_of = |label: &str| {
            let mut v: Vec<(i128, i128)> = e
                .mappings
                .iter()
                .filter(|m| m.label == label)
                .flat_map(|m| m.ranges.iter().copied())
                .collect();
            v.sort_unstable();
            v
        };
        let mut have = r.clone();
        have.sort_unstable();
        let label = if ranges_of(&o.name) == have {
            Some(o.name.as_str())
        } else {
            e.mappings
                .iter()
                .map(|m| m.label.as_str())
                .find(|l| ranges_of(l) == have)
        };
        match label {
            Some(l) => self.ident(l, at),
            None => Err(self.err(
                at,
                "no label of the tag's enumeration has exactly this option's selector ranges (TSDL selects an option by label)",
            )),
        }
    }

    /// A TSDL path to a field from a field of `scope`: its names from
    /// its scope's root (`a.b`, which the lexical lookup finds walking out
    /// from the referring field: babeltrace2's grammar takes no keyword in
    /// a variant tag), prefixed by the scope (`event.fields.a.b`) when it is
    /// another scope's.
    fn path(&self, r: &FieldRef, roots: &Roots, scope: Scope, at: &str) -> R<String> {
        let root = roots
            .get(r.scope)
            .ok_or_else(|| self.err(at, "a field reference in a scope with no field class"))?;
        let mut out = if r.scope == scope {
            String::new()
        } else {
            tsdl_scope(r.scope).to_string()
        };
        // Member names as `member_name` writes them: walk again.
        let mut cur = root;
        for (depth, &i) in r.path.iter().enumerate() {
            loop {
                match cur {
                    FieldClass::Array(a) => cur = &a.element,
                    FieldClass::Sequence(s) => cur = &s.element,
                    _ => break,
                }
            }
            match cur {
                FieldClass::Struct(s) => {
                    let m = s
                        .members
                        .get(i as usize)
                        .ok_or_else(|| self.err(at, "a field reference that names no field"))?;
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&self.member_name(r.scope, depth == 0, m, at)?);
                    cur = &m.class;
                }
                FieldClass::Variant(v) => {
                    let o = v
                        .options
                        .get(i as usize)
                        .ok_or_else(|| self.err(at, "a field reference that names no field"))?;
                    if !out.is_empty() {
                        out.push('.');
                    }
                    let tag = Ctf2 { meta: self.meta }.target(&v.tag, roots, at)?;
                    let name = match tag {
                        FieldClass::Enum(e) => self.option_name(e, o, at)?,
                        _ => self.ident(&o.name, at)?,
                    };
                    out.push_str(&name);
                    cur = &o.class;
                }
                _ => {
                    return Err(self.err(at, "a field reference through an optional"));
                }
            }
        }
        Ok(out)
    }

    /// The TSDL type of `fc` (for arrays and sequences: of their innermost
    /// element; see `decl`). `root`: `fc` is a scope's root structure.
    fn ty(
        &self,
        fc: &FieldClass,
        roots: &Roots,
        scope: Scope,
        at: &str,
        root: bool,
        ind: usize,
    ) -> R<String> {
        let int = |i: &IntegerClass| -> String {
            let mut s = format!(
                "integer {{ size = {}; align = {}; signed = {}; byte_order = {}; base = {};",
                i.size,
                i.align.max(1),
                i.signed,
                if i.byte_order == ByteOrder::Little {
                    "le"
                } else {
                    "be"
                },
                i.base
            );
            match i.encoding {
                Encoding::None => {}
                Encoding::Utf8 => s.push_str(" encoding = UTF8;"),
                Encoding::Ascii => s.push_str(" encoding = ASCII;"),
            }
            if let Some(c) = &i.mapped_clock {
                let _ = write!(s, " map = clock.{}.value;", clock_ident(c));
            }
            s.push_str(" }");
            s
        };
        let refuse = |what: &str| -> R<String> {
            Err(self.err(
                at,
                format!(
                    "{what}: CTF 1.8 (TSDL) has no such field class (write this trace as CTF 2)"
                ),
            ))
        };
        let tabs = "\t".repeat(ind);
        Ok(match fc {
            FieldClass::Integer(i) => int(i),
            FieldClass::Enum(e) => {
                let mut s = format!("enum : {} {{", int(&e.container));
                let mut first = true;
                for m in &e.mappings {
                    for &(lo, hi) in &m.ranges {
                        if !first {
                            s.push(',');
                        }
                        first = false;
                        if lo == hi {
                            let _ = write!(s, " {} = {lo}", quote(&m.label));
                        } else {
                            let _ = write!(s, " {} = {lo} ... {hi}", quote(&m.label));
                        }
                    }
                }
                s.push_str(" }");
                s
            }
            FieldClass::Float(f) => format!(
                "floating_point {{ exp_dig = {}; mant_dig = {}; align = {}; byte_order = {}; }}",
                f.exp_dig,
                f.mant_dig,
                f.align.max(1),
                if f.byte_order == ByteOrder::Little {
                    "le"
                } else {
                    "be"
                }
            ),
            FieldClass::String(s) => match s.encoding {
                Encoding::Ascii => "string { encoding = ASCII; }".into(),
                _ => "string { encoding = UTF8; }".into(),
            },
            FieldClass::Struct(st) => {
                let mut s = String::from("struct {\n");
                let mut seen: Vec<String> = Vec::new();
                for m in &st.members {
                    let mat = format!("{at}: `{}`", m.name);
                    let name = self.member_name(scope, root, m, &mat)?;
                    if seen.contains(&name) {
                        return Err(self.err(&mat, format!("a second member named `{name}`")));
                    }
                    let d = self.decl(&m.class, &name, roots, scope, &mat, ind + 1)?;
                    seen.push(name);
                    let _ = writeln!(s, "{tabs}\t{d};");
                }
                let _ = write!(s, "{tabs}}}");
                if st.min_align > 1 {
                    let _ = write!(s, " align({})", st.min_align);
                }
                s
            }
            FieldClass::Variant(v) => {
                let path = self.path(&v.tag, roots, scope, at)?;
                let tag = Ctf2 { meta: self.meta }.target(&v.tag, roots, at)?;
                let FieldClass::Enum(e) = tag else {
                    return Err(self.err(
                        at,
                        "a variant whose selector is no enumeration: TSDL selects an option by the label of an enumeration tag",
                    ));
                };
                let mut s = format!("variant <{path}> {{\n");
                for o in &v.options {
                    let oat = format!("{at}: option `{}`", o.name);
                    let name = self.option_name(e, o, &oat)?;
                    let d = self.decl(&o.class, &name, roots, scope, &oat, ind + 1)?;
                    let _ = writeln!(s, "{tabs}\t{d};");
                }
                let _ = write!(s, "{tabs}}}");
                s
            }
            FieldClass::Array(_) | FieldClass::Sequence(_) => {
                return Err(self.err(at, "an array where a named member was expected"))
            }
            FieldClass::Bool(_) => return refuse("a boolean"),
            FieldClass::BitMap(_) => return refuse("a bit map"),
            FieldClass::VarInt(_) => return refuse("a variable-length (LEB128) integer"),
            FieldClass::Optional(_) => return refuse("an optional"),
            FieldClass::Bytes(b) => {
                if b.uuid && b.length == BytesLength::Static(16) {
                    return Ok("integer { size = 8; align = 8; signed = false; byte_order = le; base = 16; }".into());
                }
                return refuse(match b.text {
                    None => "a BLOB",
                    Some(_) => "a UTF-16 or UTF-32 string",
                });
            }
        })
    }

    /// A member or option declaration: `TYPE NAME[...]...`.
    fn decl(
        &self,
        fc: &FieldClass,
        name: &str,
        roots: &Roots,
        scope: Scope,
        at: &str,
        ind: usize,
    ) -> R<String> {
        let mut suffix = String::new();
        let mut cur = fc;
        loop {
            match cur {
                FieldClass::Array(a) => {
                    if a.min_align > a.element.align() {
                        return Err(self.err(at, "an array with a minimum alignment above its element's: TSDL cannot express it"));
                    }
                    let _ = write!(suffix, "[{}]", a.length);
                    cur = &a.element;
                }
                FieldClass::Sequence(s) => {
                    if s.min_align > s.element.align() {
                        return Err(self.err(at, "a sequence with a minimum alignment above its element's: TSDL cannot express it"));
                    }
                    let _ = write!(suffix, "[{}]", self.path(&s.length, roots, scope, at)?);
                    cur = &s.element;
                }
                FieldClass::Bytes(b) if b.uuid && b.length == BytesLength::Static(16) => {
                    suffix.push_str("[16]");
                    break;
                }
                _ => break,
            }
        }
        let t = self.ty(cur, roots, scope, at, false, ind)?;
        Ok(format!("{t} {name}{suffix}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{parse_metadata, read_metadata};
    use std::path::PathBuf;

    fn shared(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance")
            .join(rel)
    }

    fn metadata_files(rel: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(shared(rel)) else {
            return out;
        };
        for e in rd.flatten() {
            let m = e.path().join("metadata");
            if m.is_file() {
                out.push(m);
            }
        }
        out.sort();
        out
    }

    /// Clock offsets compared normalized; what TSDL or CTF 2 does not
    /// keep left out.
    fn comparable(mut m: Metadata) -> Metadata {
        for c in &mut m.clocks {
            let (s, cy) = c.normalized_offset();
            c.offset_s = s;
            c.offset = cy as i64;
        }
        m.callsites.clear();
        m.byte_order = ByteOrder::Little;
        m
    }

    /// Every shared CTF 2 metadata, written again as CTF 2, reads into
    /// the same model.
    #[test]
    fn ctf2_written_again_reads_the_same() {
        let files: Vec<PathBuf> = ["ctf2/traces/succeed", "ctf2/traces/converted"]
            .iter()
            .flat_map(|d| metadata_files(d))
            .collect();
        if files.is_empty() {
            eprintln!("skipped: no shared conformance data");
            return;
        }
        for f in files {
            let m = read_metadata(&std::fs::read(&f).unwrap()).unwrap();
            let text = to_ctf2(&m).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let back = read_metadata(&text).unwrap_or_else(|e| {
                panic!("{}: {e}\n{}", f.display(), String::from_utf8_lossy(&text))
            });
            assert_eq!(comparable(back), comparable(m), "{}", f.display());
        }
    }

    /// Every shared CTF 1.8 metadata that reef reads, written again as
    /// TSDL, reads into the same model.
    #[test]
    fn tsdl_written_again_reads_the_same() {
        let files = metadata_files("babeltrace-traces/succeed");
        if files.is_empty() {
            eprintln!("skipped: no shared conformance data");
            return;
        }
        let mut n = 0;
        for f in files {
            let Ok(m) = read_metadata(&std::fs::read(&f).unwrap()) else {
                continue;
            };
            let text = to_tsdl(&m).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let back =
                parse_metadata(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", f.display()));
            let mut want = comparable(m);
            // TSDL written from a model says `absolute` and each integer's
            // base and byte order explicitly: the model already holds them.
            want.major = 1;
            assert_eq!(comparable(back), want, "{}", f.display());
            n += 1;
        }
        assert!(n > 20, "only {n} traces read");
    }

    const RS: &str = "\u{1e}";

    /// A CTF 2 event with the field classes TSDL lacks.
    fn rich() -> Vec<u8> {
        let u8fc = r#"{"type": "fixed-length-unsigned-integer", "length": 8, "byte-order": "little-endian", "alignment": 8}"#;
        let bool8 = r#"{"type": "fixed-length-boolean", "length": 8, "byte-order": "little-endian", "alignment": 8}"#;
        let members = [
            format!(r#"{{"name": "flag", "field-class": {bool8}}}"#),
            r#"{"name": "u", "field-class": {"type": "variable-length-unsigned-integer", "preferred-display-base": 16}}"#.to_string(),
            r#"{"name": "s", "field-class": {"type": "variable-length-signed-integer", "mappings": {"NEG": [[-9, -1]]}}}"#.to_string(),
            r#"{"name": "bm", "field-class": {"type": "fixed-length-bit-map", "length": 8, "byte-order": "big-endian", "flags": {"A": [[0, 0]], "B": [[1, 2]]}}}"#.to_string(),
            format!(r#"{{"name": "blen", "field-class": {u8fc}}}"#),
            r#"{"name": "blob", "field-class": {"type": "dynamic-length-blob", "length-field-location": {"path": ["blen"]}}}"#.to_string(),
            r#"{"name": "sblob", "field-class": {"type": "static-length-blob", "length": 3}}"#.to_string(),
            r#"{"name": "u16", "field-class": {"type": "null-terminated-string", "encoding": "utf-16le"}}"#.to_string(),
            r#"{"name": "u32", "field-class": {"type": "static-length-string", "length": 8, "encoding": "utf-32be"}}"#.to_string(),
            r#"{"name": "opt", "field-class": {"type": "optional", "selector-field-location": {"path": ["flag"]}, "field-class": {"type": "null-terminated-string"}}}"#.to_string(),
            format!(r#"{{"name": "opt2", "field-class": {{"type": "optional", "selector-field-location": {{"origin": "event-record-payload", "path": ["blen"]}}, "selector-field-ranges": [[1, 4]], "field-class": {u8fc}}}}}"#),
            format!(r#"{{"name": "v", "field-class": {{"type": "variant", "selector-field-location": {{"path": ["blen"]}}, "options": [{{"name": "a", "selector-field-ranges": [[0, 0], [5, 6]], "field-class": {u8fc}}}, {{"name": "_b", "selector-field-ranges": [[1, 1]], "field-class": {{"type": "null-terminated-string"}}}}]}}}}"#),
            r#"{"name": "arr", "field-class": {"type": "static-length-array", "length": 2, "minimum-alignment": 64, "element-field-class": {"type": "fixed-length-floating-point-number", "length": 32, "byte-order": "little-endian", "alignment": 32}}}"#.to_string(),
        ];
        let frags = [
            r#"{"type": "preamble", "version": 2}"#.to_string(),
            r#"{"type": "trace-class", "environment": {"k": "v", "n": -3}}"#.to_string(),
            r#"{"type": "clock-class", "id": "my clock", "frequency": 1000, "offset-from-origin": {"seconds": -2, "cycles": 999}, "origin": "unix-epoch"}"#.to_string(),
            r#"{"type": "data-stream-class", "default-clock-class-id": "my clock", "event-record-header-field-class": {"type": "structure", "member-classes": [{"name": "ts", "field-class": {"type": "variable-length-unsigned-integer", "roles": ["default-clock-timestamp"]}}]}}"#.to_string(),
            format!(
                r#"{{"type": "event-record-class", "name": "ev", "attributes": {{"lttng.org,2009": {{"log-level": "debug:unit", "emf-uri": "x:y"}}}}, "payload-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
                members.join(",")
            ),
        ];
        let mut out = String::new();
        for f in frags {
            out.push_str(RS);
            out.push_str(&f);
            out.push('\n');
        }
        out.into_bytes()
    }

    #[test]
    fn every_ctf2_field_class_written_again() {
        let m = read_metadata(&rich()).unwrap();
        let text = to_ctf2(&m).unwrap();
        let back = read_metadata(&text).unwrap();
        assert_eq!(back, m);
        let ev = &back.streams[0].events[0];
        assert_eq!(ev.loglevel, Some(11));
        assert_eq!(ev.model_emf_uri.as_deref(), Some("x:y"));
    }

    #[test]
    fn tsdl_refuses_what_it_cannot_express() {
        let m = read_metadata(&rich()).unwrap();
        let e = to_tsdl(&m).unwrap_err();
        // The first refused field: the event header's LEB128 timestamp.
        assert!(e.message.contains("variable-length"), "{e}");
        assert!(
            e.at.contains("data stream class 0: event record header"),
            "{e}"
        );
        // Each kind named, one at a time.
        let cases: &[(&str, &str)] = &[
            (
                r#"{"type": "fixed-length-boolean", "length": 8, "byte-order": "little-endian"}"#,
                "a boolean",
            ),
            (r#"{"type": "static-length-blob", "length": 2}"#, "a BLOB"),
            (
                r#"{"type": "null-terminated-string", "encoding": "utf-16be"}"#,
                "UTF-16 or UTF-32",
            ),
            (r#"{"type": "variable-length-signed-integer"}"#, "LEB128"),
        ];
        for (fc, want) in cases {
            let meta = format!(
                "{RS}{{\"type\": \"preamble\", \"version\": 2}}{RS}{{\"type\": \"data-stream-class\"}}{RS}{{\"type\": \"event-record-class\", \"name\": \"e\", \"payload-field-class\": {{\"type\": \"structure\", \"member-classes\": [{{\"name\": \"f\", \"field-class\": {fc}}}]}}}}"
            );
            let m = read_metadata(meta.as_bytes()).unwrap();
            let e = to_tsdl(&m).unwrap_err();
            assert!(e.message.contains(want), "{fc}: {e}");
            assert!(
                e.at.contains("event record class `e`") && e.at.contains("`f`"),
                "{e}"
            );
        }
    }

    /// A CTF 2 trace without the field classes TSDL lacks: its TSDL reads
    /// into the model with the roles' meanings given by names.
    #[test]
    fn tsdl_from_ctf2_names_roles() {
        let meta = format!(
            "{RS}{{\"type\": \"preamble\", \"version\": 2, \"uuid\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}\
             {RS}{{\"type\": \"trace-class\", \"packet-header-field-class\": {{\"type\": \"structure\", \"member-classes\": [\
               {{\"name\": \"m\", \"field-class\": {{\"type\": \"fixed-length-unsigned-integer\", \"length\": 32, \"byte-order\": \"big-endian\", \"alignment\": 8, \"roles\": [\"packet-magic-number\"]}}}},\
               {{\"name\": \"u\", \"field-class\": {{\"type\": \"static-length-blob\", \"length\": 16, \"roles\": [\"metadata-stream-uuid\"]}}}}]}}}}\
             {RS}{{\"type\": \"clock-class\", \"id\": \"c-1\", \"frequency\": 100}}\
             {RS}{{\"type\": \"data-stream-class\", \"default-clock-class-id\": \"c-1\", \"packet-context-field-class\": {{\"type\": \"structure\", \"member-classes\": [\
               {{\"name\": \"x-size\", \"field-class\": {{\"type\": \"fixed-length-unsigned-integer\", \"length\": 16, \"byte-order\": \"little-endian\", \"roles\": [\"packet-total-length\"]}}}},\
               {{\"name\": \"b\", \"field-class\": {{\"type\": \"fixed-length-unsigned-integer\", \"length\": 64, \"byte-order\": \"little-endian\", \"roles\": [\"default-clock-timestamp\"]}}}}]}}}}\
             {RS}{{\"type\": \"event-record-class\", \"name\": \"e\", \"payload-field-class\": {{\"type\": \"structure\", \"member-classes\": [{{\"name\": \"struct\", \"field-class\": {{\"type\": \"null-terminated-string\"}}}}]}}}}"
        );
        let m = read_metadata(meta.as_bytes()).unwrap();
        let text = to_tsdl(&m).unwrap();
        let back = parse_metadata(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let names = |fc: &Option<FieldClass>| -> Vec<String> {
            fc.as_ref()
                .and_then(FieldClass::as_struct)
                .map_or(Vec::new(), |s| {
                    s.members.iter().map(|m| m.name.clone()).collect()
                })
        };
        assert_eq!(names(&back.packet_header), ["magic", "uuid"]);
        assert_eq!(
            names(&back.streams[0].packet_context),
            ["packet_size", "timestamp_begin"]
        );
        // A keyword gets a `_` (shown without it).
        assert_eq!(names(&back.streams[0].events[0].payload), ["_struct"]);
        assert_eq!(back.clocks[0].name, "c_1");
        assert_eq!(back.uuid, m.uuid);
        let FieldClass::Struct(pc) = back.streams[0].packet_context.as_ref().unwrap() else {
            unreachable!()
        };
        let FieldClass::Integer(ts) = &pc.members[1].class else {
            unreachable!()
        };
        assert_eq!(ts.mapped_clock.as_deref(), Some("c_1"));
    }
}
