//! ftrace's event format descriptions (`events/<system>/<event>/format`),
//! as a `.dat` file holds them.

/// One event's format.
#[derive(Debug, Clone)]
pub struct Format {
    pub system: String,
    pub name: String,
    pub id: u32,
    /// The common fields (`common_type`, `common_pid`, ...), in offset
    /// order.
    pub common: Vec<FieldFmt>,
    /// The event's own fields, in offset order.
    pub fields: Vec<FieldFmt>,
}

/// One `field:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFmt {
    /// The declaration's type (`unsigned long`, `char`, `const char *`).
    pub ty: String,
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub kind: FieldKind,
}

/// What the declaration says of the field's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Scalar,
    /// `type name[N]`.
    Array(usize),
    /// `type name[]` at the end of the record (its rest).
    Flexible,
    /// `__data_loc type[] name`: a 32-bit word, offset (low 16 bits, from
    /// the record's start) and length (high 16 bits).
    DataLoc,
    /// `__rel_loc type[] name`: as [`FieldKind::DataLoc`], the offset from
    /// the end of the word.
    RelLoc,
}

impl FieldFmt {
    /// Whether its elements are characters (text).
    pub fn is_text(&self) -> bool {
        let t = self.ty.trim();
        let t = t.strip_prefix("const ").unwrap_or(t);
        matches!(t, "char" | "unsigned char" | "signed char")
    }

    /// Whether it holds an address (a pointer type).
    pub fn is_pointer(&self) -> bool {
        self.ty.contains('*')
    }

    /// The byte size of one element of an array field, from its type and
    /// `long_size` (the kernel's `long`); `None` when the type is unknown.
    pub fn elem_size(&self, long_size: usize) -> Option<usize> {
        if let FieldKind::Array(n) = self.kind {
            if n > 0 && self.size.is_multiple_of(n) {
                return Some(self.size / n);
            }
        }
        let t = self.ty.trim();
        let t = t.strip_prefix("const ").unwrap_or(t);
        let t = t.strip_prefix("unsigned ").unwrap_or(t);
        let t = t.strip_prefix("signed ").unwrap_or(t);
        if t.contains('*') {
            return Some(long_size);
        }
        Some(match t {
            "char" | "u8" | "s8" | "__u8" | "__s8" | "bool" | "_Bool" => 1,
            "short" | "u16" | "s16" | "__u16" | "__s16" => 2,
            "int" | "u32" | "s32" | "__u32" | "__s32" | "pid_t" => 4,
            "long long" | "u64" | "s64" | "__u64" | "__s64" => 8,
            "long" => long_size,
            _ => return None,
        })
    }
}

/// Parses one format file of event system `system`.
pub fn parse(system: &str, text: &str) -> Result<Format, String> {
    let mut name = None;
    let mut id = None;
    let mut common = Vec::new();
    let mut fields = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(v) = l.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("bad ID line {l:?}"))?,
            );
        } else if l.starts_with("field:") {
            let f = parse_field(l).map_err(|e| format!("{e} in {l:?}"))?;
            if f.name.starts_with("common_") {
                common.push(f);
            } else {
                fields.push(f);
            }
        } else if l.starts_with("print fmt:") {
            break;
        }
    }
    let name = name.ok_or("no name line")?;
    let id = id.ok_or_else(|| format!("event {name}: no ID line"))?;
    common.sort_by_key(|f| f.offset);
    fields.sort_by_key(|f| f.offset);
    Ok(Format {
        system: system.to_string(),
        name,
        id,
        common,
        fields,
    })
}

/// `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`
fn parse_field(l: &str) -> Result<FieldFmt, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in l.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or("no declaration")?;
    let offset = offset.ok_or("no offset")?;
    let size = size.ok_or("no size")?;
    let (mut kind, mut decl) = (FieldKind::Scalar, decl);
    for (prefix, k) in [
        ("__data_loc ", FieldKind::DataLoc),
        ("__rel_loc ", FieldKind::RelLoc),
    ] {
        if let Some(rest) = decl.strip_prefix(prefix) {
            kind = k;
            decl = rest.trim();
        }
    }
    // The name is the last word, after the type; `[...]` may follow the
    // name (`char comm[16]`) or the type (`__data_loc char[] name`).
    let mut d = decl.to_string();
    let mut array = None;
    if let Some(open) = d.rfind('[') {
        if d.ends_with(']') {
            let n = d[open + 1..d.len() - 1].trim().to_string();
            d.truncate(open);
            array = Some(n);
        }
    }
    let d = d.trim_end();
    let split = d
        .rfind(|c: char| c.is_whitespace() || c == '*')
        .ok_or("no field name")?;
    let name = d[split + 1..].trim();
    let mut ty = d[..=split].trim().to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(format!("bad field name {name:?}"));
    }
    if let Some(t) = ty.strip_suffix("[]") {
        ty = t.trim().to_string();
    }
    if kind == FieldKind::Scalar {
        if let Some(n) = array {
            kind = if n.is_empty() {
                FieldKind::Flexible
            } else {
                // A length the kernel wrote as an expression: the size
                // over the element's gives it.
                match n.parse::<usize>() {
                    Ok(n) => FieldKind::Array(n),
                    Err(_) => FieldKind::Array(0),
                }
            };
        }
    }
    Ok(FieldFmt {
        ty,
        name: name.to_string(),
        offset,
        size,
        signed,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\
\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:char buf[];\toffset:40;\tsize:0;\tsigned:0;\n\
\nprint fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn fields() {
        let f = parse("sched", SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        assert_eq!(f.common.len(), 2);
        let k: Vec<_> = f.fields.iter().map(|x| (x.name.as_str(), x.kind)).collect();
        assert_eq!(
            k,
            [
                ("prev_comm", FieldKind::Array(16)),
                ("name", FieldKind::DataLoc),
                ("filename", FieldKind::Scalar),
                ("prev_state", FieldKind::Scalar),
                ("buf", FieldKind::Flexible),
            ]
        );
        assert!(f.fields[0].is_text() && f.fields[1].is_text());
        assert!(f.fields[2].is_pointer());
        assert_eq!(f.fields[2].ty, "const char *");
        assert!(f.fields[3].signed);
    }
}
