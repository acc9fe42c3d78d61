//! TSDL tokenizer: identifiers, keywords, integer/string/character
//! literals, punctuators; comments and whitespace are skipped.

use std::borrow::Cow;

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

impl Kw {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kw::Align => "align",
            Kw::Callsite => "callsite",
            Kw::Const => "const",
            Kw::Char => "char",
            Kw::Clock => "clock",
            Kw::Double => "double",
            Kw::Enum => "enum",
            Kw::Env => "env",
            Kw::Event => "event",
            Kw::FloatingPoint => "floating_point",
            Kw::Float => "float",
            Kw::Integer => "integer",
            Kw::Int => "int",
            Kw::Long => "long",
            Kw::Short => "short",
            Kw::Signed => "signed",
            Kw::Stream => "stream",
            Kw::String => "string",
            Kw::Struct => "struct",
            Kw::Trace => "trace",
            Kw::Typealias => "typealias",
            Kw::Typedef => "typedef",
            Kw::Unsigned => "unsigned",
            Kw::Variant => "variant",
            Kw::Void => "void",
            Kw::Bool => "_Bool",
            Kw::Complex => "_Complex",
            Kw::Imaginary => "_Imaginary",
        }
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
    Some(match s {
        "align" => Kw::Align,
        "callsite" => Kw::Callsite,
        "const" => Kw::Const,
        "char" => Kw::Char,
        "clock" => Kw::Clock,
        "double" => Kw::Double,
        "enum" => Kw::Enum,
        "env" => Kw::Env,
        "event" => Kw::Event,
        "floating_point" => Kw::FloatingPoint,
        "float" => Kw::Float,
        "integer" => Kw::Integer,
        "int" => Kw::Int,
        "long" => Kw::Long,
        "short" => Kw::Short,
        "signed" => Kw::Signed,
        "stream" => Kw::Stream,
        "string" => Kw::String,
        "struct" => Kw::Struct,
        "trace" => Kw::Trace,
        "typealias" => Kw::Typealias,
        "typedef" => Kw::Typedef,
        "unsigned" => Kw::Unsigned,
        "variant" => Kw::Variant,
        "void" => Kw::Void,
        "_Bool" => Kw::Bool,
        "_Complex" => Kw::Complex,
        "_Imaginary" => Kw::Imaginary,
        _ => return None,
    })
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
pub(crate) enum Tok<'a> {
    Ident(&'a str),
    Kw(Kw),
    Int(u64),
    /// A string or character literal, unescaped (borrowed from the text
    /// when it has no escape sequence).
    Str(Cow<'a, str>),
    Punct(P),
    Eof,
}

impl Tok<'_> {
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
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
}

/// A byte-level scanner. Positions are byte offsets into `src`; lines and
/// columns (1-based, columns counting characters) are updated as the
/// scanner moves over the bytes.
struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    line: u32,
    col: u32,
}

// Errors are built out of the lexer's hot path.
#[cold]
fn err(line: u32, col: u32, msg: impl Into<String>) -> MetadataError {
    MetadataError {
        line,
        column: col,
        message: msg.into(),
    }
}

#[cold]
fn invalid_char(c: char, line: u32, col: u32) -> MetadataError {
    let shown = if c == '\0' {
        "NUL character".to_string()
    } else if c.is_control() {
        format!("character U+{:04X}", c as u32)
    } else {
        format!("character '{c}'")
    };
    err(line, col, format!("invalid {shown}"))
}

/// Whether each byte may follow the first of an identifier, as a table
/// (one load per byte tested).
const IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

/// Whether each byte may be in a [`TokenStream::plain_block`].
const PLAIN: [bool; 256] = {
    let mut t = IDENT;
    let mut i = 0;
    let more = *b" \t\r\n=;.";
    while i < more.len() {
        t[more[i] as usize] = true;
        i += 1;
    }
    t
};

/// Whether `b` starts a character (is not a UTF-8 continuation byte).
fn starts_char(b: u8) -> bool {
    (b as i8) >= -0x40
}

/// Counts the characters of `bytes`, a slice of UTF-8 text.
fn count_chars(bytes: &[u8]) -> u32 {
    // (metadata is ASCII but for its strings: a word at a time then)
    let n = match bytes.is_ascii() {
        true => bytes.len(),
        false => bytes.iter().filter(|&&b| starts_char(b)).count(),
    };
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The line and column reached from `(line, col)` after the text `bytes`.
fn advance(line: u32, col: u32, bytes: &[u8]) -> (u32, u32) {
    match memchr::memrchr(b'\n', bytes) {
        None => (line, col.saturating_add(count_chars(bytes))),
        Some(last) => {
            let nl = memchr::memchr_iter(b'\n', bytes).count();
            let nl = u32::try_from(nl).unwrap_or(u32::MAX);
            (
                line.saturating_add(nl),
                1u32.saturating_add(count_chars(&bytes[last + 1..])),
            )
        }
    }
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            b: src.as_bytes(),
            pos: 0,
            line: 1,
            col: 1,
        }
    }

    fn peek(&self, off: usize) -> Option<u8> {
        self.b.get(self.pos + off).copied()
    }

    /// The character at byte offset `at` (a character boundary).
    fn char_at(&self, at: usize) -> char {
        self.src[at..].chars().next().unwrap_or('\0')
    }

    /// Moves to byte offset `to`, updating the line and column.
    fn move_to(&mut self, to: usize) {
        (self.line, self.col) = advance(self.line, self.col, &self.b[self.pos..to]);
        self.pos = to;
    }

    /// Moves over `n` bytes of one line (no newline among them).
    fn skip_inline(&mut self, n: usize) {
        self.col = self
            .col
            .saturating_add(count_chars(&self.b[self.pos..self.pos + n]));
        self.pos += n;
    }

    fn skip_trivia(&mut self) -> Result<(), MetadataError> {
        loop {
            // Whitespace, with the position kept in registers.
            let (mut pos, mut line, mut col) = (self.pos, self.line, self.col);
            while let Some(&c) = self.b.get(pos) {
                match c {
                    b' ' | b'\t' | b'\r' => col = col.saturating_add(1),
                    b'\n' => {
                        line = line.saturating_add(1);
                        col = 1;
                    }
                    _ => break,
                }
                pos += 1;
            }
            (self.pos, self.line, self.col) = (pos, line, col);
            match (self.peek(0), self.peek(1)) {
                (Some(b'/'), Some(b'*')) => {
                    let body = self.pos + 2;
                    match memchr::memmem::find(&self.b[body..], b"*/") {
                        Some(i) => self.move_to(body + i + 2),
                        None => return Err(err(self.line, self.col, "unterminated comment")),
                    }
                }
                (Some(b'/'), Some(b'/')) => {
                    let end = memchr::memchr(b'\n', &self.b[self.pos..])
                        .map_or(self.b.len(), |i| self.pos + i);
                    self.skip_inline(end - self.pos);
                }
                _ => return Ok(()),
            }
        }
    }

    // Inlined into its callers: its result is then built in place.
    #[inline(always)]
    fn next_token(&mut self) -> Result<Token<'a>, MetadataError> {
        self.skip_trivia()?;
        let (line, col) = (self.line, self.col);
        let mk = |tok| Token { tok, line, col };
        let Some(c) = self.peek(0) else {
            return Ok(mk(Tok::Eof));
        };
        if c == b'L' && matches!(self.peek(1), Some(b'"' | b'\'')) {
            return Err(err(
                line,
                col,
                "wide string and character literals are not supported",
            ));
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = self.pos;
            let n = self.b[start..]
                .iter()
                .position(|&c| !IDENT[c as usize])
                .unwrap_or(self.b.len() - start);
            // (ASCII: as many characters as bytes)
            self.pos += n;
            self.col = self.col.saturating_add(n as u32);
            let s = &self.src[start..start + n];
            return Ok(mk(match keyword(s) {
                Some(k) => Tok::Kw(k),
                None => Tok::Ident(s),
            }));
        }
        if c.is_ascii_digit() {
            return self.integer(line, col).map(mk);
        }
        if c == b'"' || c == b'\'' {
            return self.string(c, line, col).map(mk);
        }
        let (p, n) = match (c, self.peek(1), self.peek(2)) {
            (b'.', Some(b'.'), Some(b'.')) => (P::Ellipsis, 3),
            (b'-', Some(b'>'), _) => (P::Arrow, 2),
            (b':', Some(b'='), _) => (P::TypeAssign, 2),
            (b'[', ..) => (P::LBracket, 1),
            (b']', ..) => (P::RBracket, 1),
            (b'(', ..) => (P::LParen, 1),
            (b')', ..) => (P::RParen, 1),
            (b'{', ..) => (P::LBrace, 1),
            (b'}', ..) => (P::RBrace, 1),
            (b'*', ..) => (P::Star, 1),
            (b'+', ..) => (P::Plus, 1),
            (b'-', ..) => (P::Minus, 1),
            (b'<', ..) => (P::Lt, 1),
            (b'>', ..) => (P::Gt, 1),
            (b':', ..) => (P::Colon, 1),
            (b';', ..) => (P::Semi, 1),
            (b'.', ..) => (P::Dot, 1),
            (b'=', ..) => (P::Eq, 1),
            (b',', ..) => (P::Comma, 1),
            _ => return Err(invalid_char(self.char_at(self.pos), line, col)),
        };
        self.pos += n;
        self.col = self.col.saturating_add(n as u32);
        Ok(mk(Tok::Punct(p)))
    }

    /// The length of the run of bytes satisfying `f` at the current
    /// position.
    fn run(&self, f: impl Fn(u8) -> bool) -> usize {
        self.b[self.pos..]
            .iter()
            .position(|&c| !f(c))
            .unwrap_or(self.b.len() - self.pos)
    }

    fn integer(&mut self, line: u32, col: u32) -> Result<Tok<'a>, MetadataError> {
        let (radix, digits) =
            if self.peek(0) == Some(b'0') && matches!(self.peek(1), Some(b'x' | b'X')) {
                self.skip_inline(2);
                let n = self.run(|c| c.is_ascii_hexdigit());
                if n == 0 {
                    return Err(err(line, col, "hexadecimal literal without digits"));
                }
                let d = &self.src[self.pos..self.pos + n];
                self.skip_inline(n);
                (16, d)
            } else {
                let n = self.run(|c| c.is_ascii_digit());
                let d = &self.src[self.pos..self.pos + n];
                self.skip_inline(n);
                if d.len() > 1 && d.starts_with('0') {
                    if d.bytes().any(|c| c == b'8' || c == b'9') {
                        return Err(err(line, col, format!("invalid octal literal '{d}'")));
                    }
                    (8, &d[1..])
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
                Some(b'u' | b'U') if !seen_u => {
                    seen_u = true;
                    self.skip_inline(1);
                }
                Some(c @ (b'l' | b'L')) if !seen_l => {
                    seen_l = true;
                    self.skip_inline(1);
                    if self.peek(0) == Some(c) {
                        self.skip_inline(1);
                    }
                }
                _ => break,
            }
        }
        if let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == b'_' {
                return Err(err(
                    line,
                    col,
                    format!("invalid character '{}' in integer literal", c as char),
                ));
            }
        }
        let value = if digits.is_empty() {
            Some(0)
        } else {
            u64::from_str_radix(digits, radix).ok()
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

    fn string(&mut self, delim: u8, line: u32, col: u32) -> Result<Tok<'a>, MetadataError> {
        let body = self.pos + 1;
        let unterminated = || {
            let what = if delim == b'"' { "string" } else { "character" };
            err(line, col, format!("unterminated {what} literal"))
        };
        // The common case: no escape sequence, the literal is borrowed.
        let Some(i) = memchr::memchr2(delim, b'\\', &self.b[body..]) else {
            return Err(unterminated());
        };
        if self.b[body + i] == delim {
            let mut s = &self.src[body..body + i];
            // TSDL strings are C strings: everything after a NUL is not seen.
            if let Some(p) = s.find('\0') {
                s = &s[..p];
            }
            self.move_to(body + i + 1);
            return Ok(Tok::Str(Cow::Borrowed(s)));
        }
        let mut out: Vec<u8> = self.b[body..body + i].to_vec();
        let mut at = body + i;
        loop {
            let Some(&c) = self.b.get(at) else {
                return Err(unterminated());
            };
            if c == delim {
                at += 1;
                break;
            }
            if c != b'\\' {
                out.push(c);
                at += 1;
                continue;
            }
            let escape = at;
            let Some(&e) = self.b.get(at + 1) else {
                return Err(err(line, col, "unterminated string literal"));
            };
            at += 2;
            let b = match e {
                b'a' => 0x07,
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 0x0b,
                b'\\' => b'\\',
                b'\'' => b'\'',
                b'"' => b'"',
                b'?' => b'?',
                b'0'..=b'7' => {
                    let mut v = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.b.get(at) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                at += 1;
                            }
                            _ => break,
                        }
                    }
                    (v & 0xff) as u8
                }
                b'x' => {
                    let mut v = 0u32;
                    let mut n = 0;
                    while n < 3 {
                        match self.b.get(at).and_then(|&d| (d as char).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                n += 1;
                                at += 1;
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        let (el, ec) = advance(self.line, self.col, &self.b[self.pos..escape]);
                        return Err(err(el, ec, "'\\x' escape without hexadecimal digits"));
                    }
                    (v & 0xff) as u8
                }
                _ => {
                    let (el, ec) = advance(self.line, self.col, &self.b[self.pos..escape]);
                    let other = self.char_at(escape + 1);
                    return Err(err(
                        el,
                        ec,
                        format!("invalid escape sequence '\\{}'", other.escape_debug()),
                    ));
                }
            };
            out.push(b);
        }
        self.move_to(at);
        // TSDL strings are C strings: everything after a NUL is not seen.
        if let Some(p) = out.iter().position(|&b| b == 0) {
            out.truncate(p);
        }
        Ok(Tok::Str(Cow::Owned(
            String::from_utf8_lossy(&out).into_owned(),
        )))
    }
}

/// The tokens of `src` before its end or its first lexical error.
pub(crate) fn tokens(src: &str) -> impl Iterator<Item = Token<'_>> {
    let mut lx = Lexer::new(src);
    std::iter::from_fn(move || lx.next_token().ok().filter(|t| t.tok != Tok::Eof)).fuse()
}

/// Whether `src` is entirely made of valid tokens.
pub(crate) fn lexes(src: &str) -> bool {
    let mut lx = Lexer::new(src);
    loop {
        match lx.next_token() {
            Ok(t) if t.tok == Tok::Eof => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

/// The tokens of a text as the parser reads them: the current one and the
/// next one, lexed on demand (the text is never held as a token list).
///
/// The result must be that of tokenizing the whole text before parsing it,
/// so a lexical error wins over any parse error, wherever it is: the first
/// one ends the stream (the parser then sees the end of the text) and is
/// kept, and [`TokenStream::finish`] returns it.
pub(crate) struct TokenStream<'a> {
    lx: Lexer<'a>,
    cur: Token<'a>,
    ahead: Token<'a>,
    err: Option<MetadataError>,
}

impl<'a> TokenStream<'a> {
    pub(crate) fn new(src: &'a str) -> TokenStream<'a> {
        let eof = Token {
            tok: Tok::Eof,
            line: 1,
            col: 1,
        };
        let mut s = TokenStream {
            lx: Lexer::new(src),
            cur: eof.clone(),
            ahead: eof,
            err: None,
        };
        s.cur = s.pull();
        s.ahead = s.pull();
        s
    }

    fn pull(&mut self) -> Token<'a> {
        if self.err.is_none() {
            match self.lx.next_token() {
                Ok(t) => return t,
                Err(e) => self.err = Some(e),
            }
        }
        Token {
            tok: Tok::Eof,
            line: self.lx.line,
            col: self.lx.col,
        }
    }

    /// The current token ([`Tok::Eof`] at the end).
    pub(crate) fn cur(&self) -> &Token<'a> {
        &self.cur
    }

    /// The token after the current one.
    pub(crate) fn ahead(&self) -> &Tok<'a> {
        &self.ahead.tok
    }

    /// The text between the token after the current one, an opening
    /// brace, and the first closing brace after it, with its byte offset:
    /// when that text can only be made of names, numbers, `=`, `;`, `.`
    /// and white space (no comment, string, nor nested brace), so that
    /// the same bytes always give the same tokens.
    pub(crate) fn plain_block(&self) -> Option<(&'a str, usize)> {
        self.block_text()
            .filter(|(text, _)| text.bytes().all(|c| PLAIN[c as usize]))
    }

    /// The text between the token after the current one, an opening
    /// brace, and the first closing brace after it, with its byte offset,
    /// whatever it holds: the same text as a [`TokenStream::plain_block`]
    /// seen before is one too.
    pub(crate) fn block_text(&self) -> Option<(&'a str, usize)> {
        if self.err.is_some() || !matches!(self.ahead.tok, Tok::Punct(P::LBrace)) {
            return None;
        }
        let start = self.lx.pos;
        let len = memchr::memchr(b'}', &self.lx.b[start..])?;
        Some((&self.lx.src[start..start + len], start))
    }

    /// The text between the token after the current one, an opening
    /// brace, and its matching closing brace, with its byte offset: when
    /// that text holds no string, character literal nor comment (no `"`,
    /// `'` or `/`), so that counting braces finds the block's end and the
    /// same bytes always give the same tokens.
    pub(crate) fn brace_block(&self) -> Option<(&'a str, usize)> {
        if self.err.is_some() || !matches!(self.ahead.tok, Tok::Punct(P::LBrace)) {
            return None;
        }
        let start = self.lx.pos;
        let rest = &self.lx.b[start..];
        let mut depth = 1u32;
        for i in memchr::memchr2_iter(b'{', b'}', rest) {
            if rest[i] == b'{' {
                depth += 1;
                continue;
            }
            depth -= 1;
            if depth == 0 {
                let text = &rest[..i];
                return memchr::memchr3(b'"', b'\'', b'/', text)
                    .is_none()
                    .then(|| (&self.lx.src[start..start + i], start));
            }
        }
        None
    }

    /// Whether the text after byte `at` starts, past white space, with
    /// `word`.
    pub(crate) fn word_after(&self, at: usize, word: &str) -> bool {
        let rest = self.lx.b.get(at..).unwrap_or_default();
        let n = rest
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        rest[n..].starts_with(word.as_bytes())
    }

    /// Moves past the closing brace of a [`TokenStream::plain_block`] at
    /// byte `start` of `len` bytes: the token after it becomes the current
    /// one.
    pub(crate) fn skip_plain_block(&mut self, start: usize, len: usize) {
        debug_assert_eq!(self.lx.pos, start);
        self.lx.move_to(start + len + 1);
        self.cur = self.pull();
        self.ahead = self.pull();
    }

    /// Moves to the next token; stays on [`Tok::Eof`].
    pub(crate) fn bump(&mut self) {
        if !matches!(self.cur.tok, Tok::Eof) {
            let next = self.pull();
            self.cur = std::mem::replace(&mut self.ahead, next);
        }
    }

    /// `parsed`, unless the text has a lexical error (looked for up to the
    /// end of the text): then the first one.
    pub(crate) fn finish<T>(
        &mut self,
        parsed: Result<T, MetadataError>,
    ) -> Result<T, MetadataError> {
        while self.err.is_none() && self.cur.tok != Tok::Eof {
            self.bump();
        }
        match self.err.take() {
            Some(e) => Err(e),
            None => parsed,
        }
    }
}
