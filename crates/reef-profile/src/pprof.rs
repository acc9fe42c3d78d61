//! pprof's `profile.proto` (github.com/google/pprof, `proto/profile.proto`),
//! the messages reef writes, declared for prost from the format's field
//! numbers; `go tool pprof` and the many tools that read pprof open the
//! gzipped result.

use std::collections::HashMap;
use std::io::{self, Write};

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Index 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Innermost frame first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn id(&mut self, s: &str) -> i64 {
        if self.table.is_empty() {
            self.table.push(String::new());
            self.index.insert(String::new(), 0);
        }
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.table.push(s.to_string());
        let i = self.table.len() as i64 - 1;
        self.index.insert(s.to_string(), i);
        i
    }
}

/// What the values count: `("samples", "count")`, or self time
/// `("time", "nanoseconds")`.
pub struct Kind<'a> {
    pub sample_type: &'a str,
    pub unit: &'a str,
    /// For samples: the sampling period (ns of `cpu-clock`), if known.
    pub period_ns: Option<i64>,
}

/// One pprof profile of every group of `stacks` (a group, when not empty,
/// is the `thread` or `process` label of its samples; `label_key` names
/// it), gzipped.
pub fn write(
    stacks: &crate::Stacks,
    label_key: &str,
    kind: &Kind,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut s = Strings::default();
    s.id("");
    let mut p = Profile {
        sample_type: vec![ValueType {
            r#type: s.id(kind.sample_type),
            unit: s.id(kind.unit),
        }],
        ..Default::default()
    };
    if let Some(period) = kind.period_ns {
        p.period_type = Some(ValueType {
            r#type: s.id("cpu"),
            unit: s.id("nanoseconds"),
        });
        p.period = period;
    }
    // One function and one location per name.
    let mut loc_of: HashMap<String, u64> = HashMap::new();
    for (g, stacks) in &stacks.groups {
        let mut keys: Vec<_> = stacks.iter().collect();
        keys.sort();
        for (stack, w) in keys {
            let mut ids = Vec::with_capacity(stack.len());
            for f in stack.iter().rev() {
                let id = match loc_of.get(f) {
                    Some(&id) => id,
                    None => {
                        let id = loc_of.len() as u64 + 1;
                        let name = s.id(f);
                        p.function.push(Function {
                            id,
                            name,
                            system_name: name,
                        });
                        p.location.push(Location {
                            id,
                            line: vec![Line { function_id: id }],
                        });
                        loc_of.insert(f.clone(), id);
                        id
                    }
                };
                ids.push(id);
            }
            let label = if g.is_empty() {
                Vec::new()
            } else {
                vec![Label {
                    key: s.id(label_key),
                    str: s.id(g),
                }]
            };
            p.sample.push(Sample {
                location_id: ids,
                value: vec![*w as i64],
                label,
            });
        }
    }
    p.string_table = s.table;
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&p.encode_to_vec())?;
    gz.finish()?;
    Ok(())
}
