//! TSDL tokenizer: identifiers, keywords, integer/string/character
//! literals, punctuators; comments and whitespace are skipped.

use super::MetadataError;

/// TSDL reserved keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kw {
    Align,
    Callsite,
    Const,
    Char,
    Clock,
    Double,
    Enum,
    Env,
    Event,
    FloatingPoint,
    Float,
    Integer,
    Int,
    Long,
    Short,
    Signed,
    Stream,
    String,
    Struct,
    Trace,
    Typealias,
    Typedef,
    Unsigned,
    Variant,
    Void,
    Bool,
    Complex,
    Imaginary,
}

const KEYWORDS: &[(&str, Kw)] = &[
    ("align", Kw::Align),
    ("callsite", Kw::Callsite),
    ("const", Kw::Const),
    ("char", Kw::Char),
    ("clock", Kw::Clock),
    ("double", Kw::Double),
    ("enum", Kw::Enum),
    ("env", Kw::Env),
    ("event", Kw::Event),
    ("floating_point", Kw::FloatingPoint),
    ("float", Kw::Float),
    ("integer", Kw::Integer),
    ("int", Kw::Int),
    ("long", Kw::Long),
    ("short", Kw::Short),
    ("signed", Kw::Signed),
    ("stream", Kw::Stream),
    ("string", Kw::String),
    ("struct", Kw::Struct),
    ("trace", Kw::Trace),
    ("typealias", Kw::Typealias),
    ("typedef", Kw::Typedef),
    ("unsigned", Kw::Unsigned),
    ("variant", Kw::Variant),
    ("void", Kw::Void),
    ("_Bool", Kw::Bool),
    ("_Complex", Kw::Complex),
    ("_Imaginary", Kw::Imaginary),
];

impl Kw {
    pub(crate) fn as_str(self) -> &'static str {
        KEYWORDS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(s, _)| s)
    }

    /// Keywords that may appear in a C-like type specifier list
    /// (`unsigned long`, `const char`, ...).
    pub(crate) fn is_basic_type(self) -> bool {
        matches!(
            self,
            Kw::Char
                | Kw::Double
                | Kw::Float
                | Kw::Int
                | Kw::Long
                | Kw::Short
                | Kw::Signed
                | Kw::Unsigned
                | Kw::Void
                | Kw::Bool
                | Kw::Complex
                | Kw::Imaginary
        )
    }
}

pub(crate) fn keyword(s: &str) -> Option<Kw> {
    KEYWORDS.iter().find(|(n, _)| *n == s).map(|(_, k)| *k)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum P {
    LBracket,
    RBracket,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Arrow,
    Star,
    Plus,
    Minus,
    Lt,
    Gt,
    TypeAssign,
    Colon,
    Semi,
    Ellipsis,
    Dot,
    Eq,
    Comma,
}

impl P {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            P::LBracket => "[",
            P::RBracket => "]",
            P::LParen => "(",
            P::RParen => ")",
            P::LBrace => "{",
            P::RBrace => "}",
            P::Arrow => "->",
            P::Star => "*",
            P::Plus => "+",
            P::Minus => "-",
            P::Lt => "<",
            P::Gt => ">",
            P::TypeAssign => ":=",
            P::Colon => ":",
            P::Semi => ";",
            P::Ellipsis => "...",
            P::Dot => ".",
            P::Eq => "=",
            P::Comma => ",",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    Kw(Kw),
    Int(u64),
    Str(String),
    Punct(P),
    Eof,
}

impl Tok {
    /// A short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier '{}'", shorten(s)),
            Tok::Kw(k) => format!("keyword '{}'", k.as_str()),
            Tok::Int(v) => format!("integer {v}"),
            Tok::Str(s) => format!("string \"{}\"", shorten(&s.escape_debug().to_string())),
            Tok::Punct(p) => format!("'{}'", p.as_str()),
            Tok::Eof => "end of metadata".to_string(),
        }
    }
}

/// `s`, cut to a reasonable length for an error message.
pub(crate) fn shorten(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub line: u32,
    pub col: u32,
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    col: u32,
    _src: &'a str,
}

fn err(line: u32, col: u32, msg: impl Into<String>) -> MetadataError {
    MetadataError {
        line,
        column: col,
        message: msg.into(),
    }
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    fn skip_trivia(&mut self) -> Result<(), MetadataError> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(' ' | '\t' | '\r' | '\n'), _) => {
                    self.bump();
                }
                (Some('/'), Some('*')) => {
                    let (l, c) = (self.line, self.col);
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            None => return Err(err(l, c, "unterminated comment")),
                            Some('*') if self.peek(0) == Some('/') => {
                                self.bump();
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                (Some('/'), Some('/')) => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_token(&mut self) -> Result<Token, MetadataError> {
        self.skip_trivia()?;
        let (line, col) = (self.line, self.col);
        let mk = |tok| Token { tok, line, col };
        let Some(c) = self.peek(0) else {
            return Ok(mk(Tok::Eof));
        };
        if c == 'L' && matches!(self.peek(1), Some('"' | '\'')) {
            return Err(err(
                line,
                col,
                "wide string and character literals are not supported",
            ));
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(c) = self.peek(0) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    s.push(c);
                    self.bump();
                } else {
                    break;
                }
            }
            return Ok(mk(match keyword(&s) {
                Some(k) => Tok::Kw(k),
                None => Tok::Ident(s),
            }));
        }
        if c.is_ascii_digit() {
            return self.integer(line, col).map(mk);
        }
        if c == '"' || c == '\'' {
            return self.string(c, line, col).map(mk);
        }
        let p = match (c, self.peek(1), self.peek(2)) {
            ('.', Some('.'), Some('.')) => {
                self.bump();
                self.bump();
                P::Ellipsis
            }
            ('-', Some('>'), _) => {
                self.bump();
                P::Arrow
            }
            (':', Some('='), _) => {
                self.bump();
                P::TypeAssign
            }
            ('[', ..) => P::LBracket,
            (']', ..) => P::RBracket,
            ('(', ..) => P::LParen,
            (')', ..) => P::RParen,
            ('{', ..) => P::LBrace,
            ('}', ..) => P::RBrace,
            ('*', ..) => P::Star,
            ('+', ..) => P::Plus,
            ('-', ..) => P::Minus,
            ('<', ..) => P::Lt,
            ('>', ..) => P::Gt,
            (':', ..) => P::Colon,
            (';', ..) => P::Semi,
            ('.', ..) => P::Dot,
            ('=', ..) => P::Eq,
            (',', ..) => P::Comma,
            _ => {
                let shown = if c == '\0' {
                    "NUL character".to_string()
                } else if c.is_control() {
                    format!("character U+{:04X}", c as u32)
                } else {
                    format!("character '{c}'")
                };
                return Err(err(line, col, format!("invalid {shown}")));
            }
        };
        self.bump();
        Ok(mk(Tok::Punct(p)))
    }

    fn integer(&mut self, line: u32, col: u32) -> Result<Tok, MetadataError> {
        let (radix, digits) =
            if self.peek(0) == Some('0') && matches!(self.peek(1), Some('x' | 'X')) {
                self.bump();
                self.bump();
                let mut d = String::new();
                while let Some(c) = self.peek(0) {
                    if c.is_ascii_hexdigit() {
                        d.push(c);
                        self.bump();
                    } else {
                        break;
                    }
                }
                if d.is_empty() {
                    return Err(err(line, col, "hexadecimal literal without digits"));
                }
                (16, d)
            } else {
                let mut d = String::new();
                while let Some(c) = self.peek(0) {
                    if c.is_ascii_digit() {
                        d.push(c);
                        self.bump();
                    } else {
                        break;
                    }
                }
                if d.len() > 1 && d.starts_with('0') {
                    if d.chars().any(|c| c == '8' || c == '9') {
                        return Err(err(line, col, format!("invalid octal literal '{d}'")));
                    }
                    (8, d[1..].to_string())
                } else {
                    (10, d)
                }
            };
        // Integer suffix: any combination of one `u`/`U` and `l`/`ll`
        // (`L`/`LL`), in either order.
        let mut seen_u = false;
        let mut seen_l = false;
        loop {
            match self.peek(0) {
                Some('u' | 'U') if !seen_u => {
                    seen_u = true;
                    self.bump();
                }
                Some(c @ ('l' | 'L')) if !seen_l => {
                    seen_l = true;
                    self.bump();
                    if self.peek(0) == Some(c) {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        if let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == '_' {
                return Err(err(
                    line,
                    col,
                    format!("invalid character '{c}' in integer literal"),
                ));
            }
        }
        let value = if digits.is_empty() {
            Some(0)
        } else {
            u64::from_str_radix(&digits, radix).ok()
        };
        match value {
            Some(v) => Ok(Tok::Int(v)),
            None => Err(err(
                line,
                col,
                "integer literal out of range (larger than 64 bits)",
            )),
        }
    }

    fn string(&mut self, delim: char, line: u32, col: u32) -> Result<Tok, MetadataError> {
        self.bump();
        let mut out: Vec<u8> = Vec::new();
        loop {
            let (el, ec) = (self.line, self.col);
            let Some(c) = self.bump() else {
                let what = if delim == '"' { "string" } else { "character" };
                return Err(err(line, col, format!("unterminated {what} literal")));
            };
            if c == delim {
                break;
            }
            if c != '\\' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            let Some(e) = self.bump() else {
                return Err(err(line, col, "unterminated string literal"));
            };
            let b = match e {
                'a' => 0x07,
                'b' => 0x08,
                'f' => 0x0c,
                'n' => b'\n',
                'r' => b'\r',
                't' => b'\t',
                'v' => 0x0b,
                '\\' => b'\\',
                '\'' => b'\'',
                '"' => b'"',
                '?' => b'?',
                '0'..='7' => {
                    let mut v = e as u32 - '0' as u32;
                    for _ in 0..2 {
                        match self.peek(0) {
                            Some(d @ '0'..='7') => {
                                v = v * 8 + (d as u32 - '0' as u32);
                                self.bump();
                            }
                            _ => break,
                        }
                    }
                    (v & 0xff) as u8
                }
                'x' => {
                    let mut v = 0u32;
                    let mut n = 0;
                    while n < 3 {
                        match self.peek(0).and_then(|d| d.to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                n += 1;
                                self.bump();
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        return Err(err(el, ec, "'\\x' escape without hexadecimal digits"));
                    }
                    (v & 0xff) as u8
                }
                other => {
                    return Err(err(
                        el,
                        ec,
                        format!("invalid escape sequence '\\{}'", other.escape_debug()),
                    ))
                }
            };
            out.push(b);
        }
        // TSDL strings are C strings: everything after a NUL is not seen.
        if let Some(p) = out.iter().position(|&b| b == 0) {
            out.truncate(p);
        }
        Ok(Tok::Str(String::from_utf8_lossy(&out).into_owned()))
    }
}

/// Splits `src` into tokens, the last one being [`Tok::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, MetadataError> {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        _src: src,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next_token()?;
        let eof = t.tok == Tok::Eof;
        out.push(t);
        if eof {
            return Ok(out);
        }
    }
}
