//! The JSON dictionary: ids → names, descriptions and field types, for tools
//! that want the schema without parsing `.reef` or TSDL.

use serde::Serialize;

use crate::header::{event_macro, function_name, subsystem_macro};
use crate::schema::*;

#[derive(Serialize)]
struct Dict<'a> {
    schema: &'a str,
    format: u32,
    enums: Vec<EnumOut<'a>>,
    subsystems: Vec<SubOut<'a>>,
}

#[derive(Serialize)]
struct EnumOut<'a> {
    name: &'a str,
    container: &'static str,
    values: Vec<EnumValue<'a>>,
}

#[derive(Serialize)]
struct EnumValue<'a> {
    label: &'a str,
    value: i64,
}

#[derive(Serialize)]
struct SubOut<'a> {
    name: &'a str,
    id: u32,
    r#macro: String,
    events: Vec<EventOut<'a>>,
}

#[derive(Serialize)]
struct EventOut<'a> {
    name: &'a str,
    /// The CTF event class name.
    ctf_name: String,
    id: u32,
    index: u32,
    r#macro: String,
    function: String,
    description: &'a str,
    fields: Vec<FieldOut<'a>>,
}

#[derive(Serialize)]
struct FieldOut<'a> {
    name: &'a str,
    /// `u32`, `string`, `enum state`, `u32[4]`, `u8[]`.
    r#type: String,
}

fn scalar_name(schema: &Schema, s: &Scalar) -> String {
    match s {
        Scalar::Int(t) => t.keyword().to_string(),
        Scalar::F32 => "f32".into(),
        Scalar::F64 => "f64".into(),
        Scalar::Bool => "bool".into(),
        Scalar::Ptr => "ptr".into(),
        Scalar::Enum(i) => format!("enum {}", schema.enums[*i].name),
    }
}

/// The dictionary, pretty-printed, ending with a newline.
pub fn json_dictionary(schema: &Schema) -> String {
    let dict = Dict {
        schema: &schema.name,
        format: 1,
        enums: schema
            .enums
            .iter()
            .map(|d| EnumOut {
                name: &d.name,
                container: d.container.keyword(),
                values: d
                    .entries
                    .iter()
                    .map(|(l, v)| EnumValue {
                        label: l,
                        value: *v,
                    })
                    .collect(),
            })
            .collect(),
        subsystems: schema
            .subsystems
            .iter()
            .map(|s| SubOut {
                name: &s.name,
                id: s.index,
                r#macro: subsystem_macro(s),
                events: s
                    .events
                    .iter()
                    .map(|e| EventOut {
                        name: &e.name,
                        ctf_name: format!("{}:{}", s.name, e.name),
                        id: e.id,
                        index: e.index,
                        r#macro: event_macro(s, e),
                        function: function_name(s, e),
                        description: &e.description,
                        fields: e
                            .fields
                            .iter()
                            .map(|f| FieldOut {
                                name: &f.name,
                                r#type: match &f.ty {
                                    FieldType::Scalar(sc) => scalar_name(schema, sc),
                                    FieldType::String => "string".into(),
                                    FieldType::Array(sc, n) => {
                                        format!("{}[{n}]", scalar_name(schema, sc))
                                    }
                                    FieldType::Sequence(sc) => {
                                        format!("{}[]", scalar_name(schema, sc))
                                    }
                                },
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&dict).unwrap_or_default();
    s.push('\n');
    s
}
