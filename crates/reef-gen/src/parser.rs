//! Parser and validator: tokens → [`Schema`].
//!
//! Grammar (`?` optional, `*` repeated):
//! ```text
//! file      := (subsystem | enum)*
//! subsystem := "subsystem" IDENT "{" event* "}" ";"?
//! event     := "event" IDENT STRING? ("(" (field ("," field)*)? ")")? ";"
//! field     := type IDENT ("[" INT? "]")?
//! type      := u8 | u16 | u32 | u64 | i8 | i16 | i32 | i64 | f32 | f64
//!            | bool | ptr | string | "enum"? IDENT
//! enum      := "enum" IDENT ":" inttype "{" entry ("," entry)* ","? "}" ";"?
//! entry     := IDENT ("=" "-"? INT)?
//! ```
//! An event without a field list carries one `u32 arg`.

use std::collections::HashMap;

use crate::error::{Pos, SchemaError};
use crate::lexer::{tokenize, Tok, Token};
use crate::schema::*;

/// Parses and validates `text`; `file` names the source in error messages and
/// its stem names the schema.
pub fn parse_schema(file: &str, text: &str) -> Result<Schema, SchemaError> {
    let tokens = tokenize(text).map_err(|e| SchemaError {
        file: file.to_string(),
        pos: e.pos,
        message: e.message,
    })?;
    let mut p = Parser {
        file,
        tokens,
        at: 0,
        enum_refs: Vec::new(),
    };
    let mut schema = Schema {
        name: schema_name(file),
        enums: Vec::new(),
        subsystems: Vec::new(),
    };
    p.parse_file(&mut schema)?;
    p.resolve_enums(&mut schema)?;
    validate(file, &schema)?;
    Ok(schema)
}

/// `dir/my-events.reef` → `my_events`.
fn schema_name(file: &str) -> String {
    let stem = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "schema_");
    }
    name
}

struct Parser<'a> {
    file: &'a str,
    tokens: Vec<Token>,
    at: usize,
    /// Enum names used as field types, resolved after the whole file is read
    /// so that an enum may be declared after its first use:
    /// (subsystem, event, field, enum name, position).
    enum_refs: Vec<(usize, usize, usize, String, Pos)>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token {
        &self.tokens[self.at]
    }
    fn next(&mut self) -> Token {
        let t = self.tokens[self.at].clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }
    fn err(&self, pos: Pos, message: String) -> SchemaError {
        SchemaError {
            file: self.file.to_string(),
            pos,
            message,
        }
    }
    fn expected(&self, what: &str) -> SchemaError {
        let t = self.peek();
        self.err(
            t.pos,
            format!("expected {what}, found {}", t.tok.describe()),
        )
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek().tok == Tok::Punct(c)
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.next();
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: char) -> Result<Pos, SchemaError> {
        if self.is_punct(c) {
            Ok(self.next().pos)
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }
    fn expect_ident(&mut self, what: &str) -> Result<(String, Pos), SchemaError> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let s = s.clone();
                Ok((s, self.next().pos))
            }
            _ => Err(self.expected(what)),
        }
    }
    fn is_keyword(&self, kw: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s == kw)
    }

    fn parse_file(&mut self, schema: &mut Schema) -> Result<(), SchemaError> {
        loop {
            if self.peek().tok == Tok::Eof {
                return Ok(());
            }
            if self.is_keyword("subsystem") {
                self.parse_subsystem(schema)?;
            } else if self.is_keyword("enum") {
                self.parse_enum(schema)?;
            } else {
                return Err(self.expected("`subsystem` or `enum`"));
            }
        }
    }

    fn parse_enum(&mut self, schema: &mut Schema) -> Result<(), SchemaError> {
        self.next();
        let (name, pos) = self.expect_ident("an enumeration name")?;
        self.expect_punct(':')?;
        let container = match &self.peek().tok {
            Tok::Ident(s) if IntType::from_keyword(s).is_some() => {
                let t = IntType::from_keyword(s).unwrap_or(IntType::U32);
                self.next();
                t
            }
            _ => return Err(self.expected("an integer type (`u8` ... `i64`)")),
        };
        self.expect_punct('{')?;
        let mut entries: Vec<(String, i64)> = Vec::new();
        let mut next_value: i128 = 0;
        loop {
            if self.is_punct('}') && !entries.is_empty() {
                break;
            }
            let (label, lpos) = self.expect_ident("an enumerator name")?;
            let mut value = next_value;
            if self.eat_punct('=') {
                let neg = self.eat_punct('-');
                let vpos = self.peek().pos;
                let v = match self.peek().tok {
                    Tok::Int(v) => v,
                    _ => return Err(self.expected("an integer value")),
                };
                self.next();
                value = if neg { -(v as i128) } else { v as i128 };
                let fits = i64::try_from(value)
                    .map(|v| container.holds(v))
                    .unwrap_or(false);
                if !fits {
                    return Err(self.err(
                        vpos,
                        format!(
                            "expected a value that fits in `{}`, found {value}",
                            container.keyword()
                        ),
                    ));
                }
            } else if !i64::try_from(value)
                .map(|v| container.holds(v))
                .unwrap_or(false)
            {
                return Err(self.err(
                    lpos,
                    format!(
                        "expected an explicit value: {value} does not fit in `{}`",
                        container.keyword()
                    ),
                ));
            }
            if entries.iter().any(|(l, _)| *l == label) {
                return Err(self.err(
                    lpos,
                    format!("expected a new enumerator name, `{label}` is already declared"),
                ));
            }
            entries.push((label, value as i64));
            next_value = value + 1;
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct('}')?;
        self.eat_punct(';');
        if schema.enums.iter().any(|e| e.name == name) {
            return Err(self.err(
                pos,
                format!("expected a new enumeration name, `{name}` is already declared"),
            ));
        }
        schema.enums.push(EnumDecl {
            name,
            container,
            entries,
            pos,
        });
        Ok(())
    }

    fn parse_subsystem(&mut self, schema: &mut Schema) -> Result<(), SchemaError> {
        self.next();
        let (name, pos) = self.expect_ident("a subsystem name")?;
        self.expect_punct('{')?;
        let index = schema.subsystems.len() as u32;
        let mut sub = Subsystem {
            name,
            index,
            events: Vec::new(),
            pos,
        };
        while !self.is_punct('}') {
            if !self.is_keyword("event") {
                return Err(self.expected("`event` or `}`"));
            }
            self.parse_event(schema.subsystems.len(), &mut sub)?;
        }
        self.next();
        self.eat_punct(';');
        schema.subsystems.push(sub);
        Ok(())
    }

    fn parse_event(&mut self, sub_index: usize, sub: &mut Subsystem) -> Result<(), SchemaError> {
        self.next();
        let (name, pos) = self.expect_ident("an event name")?;
        let mut description = String::new();
        if let Tok::Str(s) = &self.peek().tok {
            description = s.clone();
            self.next();
        }
        if description.is_empty() {
            description = name.clone();
        }
        let index = sub.events.len() as u32;
        let mut fields = Vec::new();
        if self.eat_punct('(') {
            if !self.is_punct(')') {
                loop {
                    let f = self.parse_field(sub_index, sub.events.len(), fields.len())?;
                    fields.push(f);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            self.expect_punct(')')?;
        } else {
            fields.push(Field {
                name: "arg".into(),
                ty: FieldType::Scalar(Scalar::Int(IntType::U32)),
                pos,
            });
        }
        self.expect_punct(';')?;
        sub.events.push(Event {
            name,
            index,
            id: (sub.index << 8) | index,
            description,
            fields,
            pos,
        });
        Ok(())
    }

    fn parse_field(&mut self, s: usize, e: usize, f: usize) -> Result<Field, SchemaError> {
        let tpos = self.peek().pos;
        let word = match &self.peek().tok {
            Tok::Ident(w) => w.clone(),
            _ => return Err(self.expected("a field type")),
        };
        self.next();
        let base: Option<FieldType> = match word.as_str() {
            "f32" => Some(FieldType::Scalar(Scalar::F32)),
            "f64" => Some(FieldType::Scalar(Scalar::F64)),
            "bool" => Some(FieldType::Scalar(Scalar::Bool)),
            "ptr" => Some(FieldType::Scalar(Scalar::Ptr)),
            "string" => Some(FieldType::String),
            w => IntType::from_keyword(w).map(|t| FieldType::Scalar(Scalar::Int(t))),
        };
        let mut enum_name = None;
        let ty = match base {
            Some(t) => t,
            None => {
                let name = if word == "enum" {
                    self.expect_ident("an enumeration name")?.0
                } else {
                    word
                };
                enum_name = Some(name);
                // Placeholder until resolve_enums.
                FieldType::Scalar(Scalar::Enum(usize::MAX))
            }
        };
        let (name, pos) = self.expect_ident("a field name")?;
        let ty = if self.is_punct('[') {
            let bpos = self.next().pos;
            let scalar = match ty {
                FieldType::Scalar(s) => s,
                _ => {
                    return Err(self.err(
                        bpos,
                        "expected `,` or `)`: arrays of strings are not supported".into(),
                    ))
                }
            };
            if self.eat_punct(']') {
                FieldType::Sequence(scalar)
            } else {
                let lpos = self.peek().pos;
                let n = match self.peek().tok {
                    Tok::Int(n) => n,
                    _ => return Err(self.expected("an array length or `]`")),
                };
                if n == 0 || n > MAX_ARRAY_LEN {
                    return Err(self.err(
                        lpos,
                        format!("expected an array length from 1 to {MAX_ARRAY_LEN}, found {n}"),
                    ));
                }
                self.next();
                self.expect_punct(']')?;
                FieldType::Array(scalar, n as u32)
            }
        } else {
            ty
        };
        if let Some(en) = enum_name {
            self.enum_refs.push((s, e, f, en, tpos));
        }
        Ok(Field { name, ty, pos })
    }

    fn resolve_enums(&mut self, schema: &mut Schema) -> Result<(), SchemaError> {
        for (s, e, f, name, pos) in std::mem::take(&mut self.enum_refs) {
            let Some(idx) = schema.enums.iter().position(|d| d.name == name) else {
                return Err(self.err(
                    pos,
                    format!(
                        "expected a field type (a scalar type or a declared enum), found `{name}`"
                    ),
                ));
            };
            let field = &mut schema.subsystems[s].events[e].fields[f];
            let set = |sc: &mut Scalar| *sc = Scalar::Enum(idx);
            match &mut field.ty {
                FieldType::Scalar(sc) | FieldType::Array(sc, _) | FieldType::Sequence(sc) => {
                    set(sc)
                }
                FieldType::String => {}
            }
        }
        Ok(())
    }
}

/// C and C++ keywords (and a few macros from the standard headers the
/// generated header includes) cannot name parameters.
const C_RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "NULL",
    "errno",
    "assert",
    "offsetof",
    "main",
];

/// Functions of libreef's public API, which generated names must not shadow.
const LIBREEF_API: &[&str] = &[
    "reef_init",
    "reef_shutdown",
    "reef_flush",
    "reef_snapshot",
    "reef_control",
    "reef_enable",
    "reef_disable",
    "reef_enable_all",
    "reef_disable_all",
    "reef_register_schema",
    "reef_config_default",
    "reef_trace_dir",
    "reef_set_thread_name",
];

fn validate(file: &str, schema: &Schema) -> Result<(), SchemaError> {
    let err = |pos: Pos, message: String| SchemaError {
        file: file.to_string(),
        pos,
        message,
    };
    if schema.subsystems.len() > MAX_SUBSYSTEMS {
        return Err(err(
            schema.subsystems[MAX_SUBSYSTEMS].pos,
            format!("expected at most {MAX_SUBSYSTEMS} subsystems"),
        ));
    }
    for d in &schema.enums {
        if d.name.starts_with("reef") {
            return Err(err(
                d.pos,
                format!(
                    "expected an enumeration name not starting with `reef`, found `{}`",
                    d.name
                ),
            ));
        }
    }
    let mut subs: HashMap<String, &Subsystem> = HashMap::new();
    let mut functions: HashMap<String, Pos> = HashMap::new();
    for s in &schema.subsystems {
        if let Some(prev) = subs.insert(s.name.to_ascii_uppercase(), s) {
            return Err(err(
                s.pos,
                format!(
                    "expected a new subsystem name, `{}` is already declared at line {}",
                    s.name, prev.pos.line
                ),
            ));
        }
        if s.events.len() > MAX_EVENTS_PER_SUBSYSTEM {
            return Err(err(
                s.events[MAX_EVENTS_PER_SUBSYSTEM].pos,
                format!(
                    "expected at most {MAX_EVENTS_PER_SUBSYSTEM} events in subsystem `{}`",
                    s.name
                ),
            ));
        }
        let mut evs: HashMap<String, Pos> = HashMap::new();
        for e in &s.events {
            if let Some(prev) = evs.insert(e.name.to_ascii_uppercase(), e.pos) {
                return Err(err(
                    e.pos,
                    format!(
                        "expected a new event name, `{}` is already declared in `{}` at line {}",
                        e.name, s.name, prev.line
                    ),
                ));
            }
            let func = crate::header::function_name(s, e);
            if LIBREEF_API.contains(&func.as_str()) {
                return Err(err(
                    e.pos,
                    format!("expected another event name: `{func}` is a libreef function"),
                ));
            }
            if let Some(prev) = functions.insert(func.clone(), e.pos) {
                return Err(err(
                    e.pos,
                    format!(
                        "expected another event name: function `{func}` is already generated for line {}",
                        prev.line
                    ),
                ));
            }
            let mut names: HashMap<String, Pos> = HashMap::new();
            for f in &e.fields {
                if C_RESERVED.contains(&f.name.as_str()) || f.name.starts_with("reef") {
                    return Err(err(
                        f.pos,
                        format!(
                            "expected a field name that is not a C/C++ keyword and does not start with `reef`, found `{}`",
                            f.name
                        ),
                    ));
                }
                let mut own = vec![f.name.clone()];
                if matches!(f.ty, FieldType::Sequence(_)) {
                    own.push(format!("{}_len", f.name));
                }
                for n in own {
                    if names.insert(n.clone(), f.pos).is_some() {
                        return Err(err(
                            f.pos,
                            format!(
                                "expected a new field name, `{n}` is already used in event `{}`",
                                e.name
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
