//! CTF 1.8 TSDL metadata generator.
//!
//! The generator owns the whole metadata, including the packet header,
//! packet context and event header that libreef writes
//! (`tracer/src/layout.h` mirrors them byte for byte). Values only known when
//! a program runs are left as `@NAME@` placeholders that libreef fills in
//! ([`PLACEHOLDERS`]); [`instantiate`] fills them for a standalone file.
//!
//! *Architecture Invariant*: every integer is byte-aligned (`align = 8`), so an
//! event's layout does not depend on where it starts in a packet and the C fast
//! path writes at offsets fixed by the generator.

use std::fmt::Write;

use crate::schema::*;

/// Placeholders in the template, with the values [`instantiate`] uses for the
/// standalone `.tsdl` file that `reef gen` writes.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("@UUID@", "00000000-0000-0000-0000-000000000000"),
    ("@HOSTNAME@", "unknown"),
    ("@PID@", "0"),
    ("@PROCNAME@", "unknown"),
    ("@CLOCK_SOURCE@", "unknown"),
    ("@CLOCK_FREQ@", "1000000000"),
    ("@CLOCK_OFFSET_S@", "0"),
    ("@CLOCK_OFFSET@", "0"),
];

/// Replaces every placeholder by its standalone default.
pub fn instantiate(template: &str) -> String {
    let mut s = template.to_string();
    for (k, v) in PLACEHOLDERS {
        s = s.replace(k, v);
    }
    s
}

/// TSDL keywords that can still be C parameter names; a field so named is
/// written with a leading `_`, which CTF readers strip.
const TSDL_ONLY_KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "clock",
    "env",
    "event",
    "floating_point",
    "integer",
    "stream",
    "string",
    "trace",
    "typealias",
    "variant",
];

/// The TSDL spelling of a field name: readers strip one leading underscore,
/// so names that start with `_` or are TSDL keywords get one more.
pub fn tsdl_field_name(name: &str) -> String {
    if name.starts_with('_') || TSDL_ONLY_KEYWORDS.contains(&name) {
        format!("_{name}")
    } else {
        name.to_string()
    }
}

/// A TSDL string literal body.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A description as a safe one-line comment body.
fn comment(s: &str) -> String {
    s.replace("*/", "* /").replace(['\n', '\t'], " ")
}

fn scalar_type(schema: &Schema, s: &Scalar) -> String {
    match s {
        Scalar::Int(t) => t.c_type().to_string(),
        Scalar::F32 => "reef_f32_t".into(),
        Scalar::F64 => "reef_f64_t".into(),
        Scalar::Bool => "enum reef_bool".into(),
        Scalar::Ptr => "reef_ptr_t".into(),
        Scalar::Enum(i) => format!("enum {}", schema.enums[*i].name),
    }
}

const PRELUDE: &str = r#"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 8; align = 8; signed = true; } := int8_t;
typealias integer { size = 16; align = 8; signed = true; } := int16_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 64; align = 8; signed = false; base = 16; } := reef_ptr_t;
typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := reef_char_t;
typealias floating_point { exp_dig = 8; mant_dig = 24; align = 8; } := reef_f32_t;
typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := reef_f64_t;

enum reef_bool : uint8_t {
	"false" = 0,
	"true" = 1
};

trace {
	major = 1;
	minor = 8;
	uuid = "@UUID@";
	byte_order = le;
	packet.header := struct {
		uint32_t magic;
		uint8_t uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	};
};

env {
	hostname = "@HOSTNAME@";
	vpid = @PID@;
	procname = "@PROCNAME@";
	tracer_name = "reef";
	tracer_major = 0;
	tracer_minor = 1;
	clock_source = "@CLOCK_SOURCE@";
"#;

const CLOCK_AND_STREAM: &str = r#"clock {
	name = "monotonic";
	description = "Monotonic clock (invariant TSC calibrated against CLOCK_MONOTONIC, or CLOCK_MONOTONIC)";
	freq = @CLOCK_FREQ@;
	precision = 1;
	offset_s = @CLOCK_OFFSET_S@;
	offset = @CLOCK_OFFSET@;
	absolute = false;
};

typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;

stream {
	id = 0;
	packet.context := struct {
		uint64_clock_monotonic_t timestamp_begin;
		uint64_clock_monotonic_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t tid;
		reef_char_t thread_name[16];
	};
	event.header := struct {
		uint16_t id;
		uint64_clock_monotonic_t timestamp;
	};
};
"#;

/// The metadata template: TSDL with `@NAME@` placeholders.
pub fn metadata_template(schema: &Schema) -> String {
    let mut m = String::new();
    m.push_str("/* CTF 1.8 */\n\n");
    let _ = writeln!(
        m,
        "/* Generated by `reef gen` from schema `{}`; do not edit. */\n",
        schema.name
    );
    m.push_str(PRELUDE);
    let _ = writeln!(m, "\tschema = \"{}\";\n}};\n", escape(&schema.name));
    m.push_str(CLOCK_AND_STREAM);
    for d in &schema.enums {
        let _ = writeln!(m, "\nenum {} : {} {{", d.name, d.container.c_type());
        for (k, (label, value)) in d.entries.iter().enumerate() {
            let sep = if k + 1 < d.entries.len() { "," } else { "" };
            let _ = writeln!(m, "\t\"{}\" = {value}{sep}", escape(label));
        }
        m.push_str("};\n");
    }
    for (s, e) in schema.events() {
        m.push('\n');
        let _ = writeln!(m, "/* {} */", comment(&e.description));
        m.push_str("event {\n");
        let _ = writeln!(m, "\tname = \"{}:{}\";", escape(&s.name), escape(&e.name));
        let _ = writeln!(m, "\tid = {};", e.id);
        m.push_str("\tstream_id = 0;\n");
        m.push_str("\tfields := struct {\n");
        for f in &e.fields {
            let n = tsdl_field_name(&f.name);
            match &f.ty {
                FieldType::Scalar(sc) => {
                    let _ = writeln!(m, "\t\t{} {n};", scalar_type(schema, sc));
                }
                FieldType::String => {
                    let _ = writeln!(m, "\t\tstring {n};");
                }
                FieldType::Array(sc, len) => {
                    let _ = writeln!(m, "\t\t{} {n}[{len}];", scalar_type(schema, sc));
                }
                FieldType::Sequence(sc) => {
                    let ln = tsdl_field_name(&format!("{}_len", f.name));
                    let _ = writeln!(m, "\t\tuint32_t {ln};");
                    let _ = writeln!(m, "\t\t{} {n}[{ln}];", scalar_type(schema, sc));
                }
            }
        }
        m.push_str("\t};\n};\n");
    }
    m
}
