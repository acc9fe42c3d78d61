//! Tokens of the expression text, each with its byte span.

use crate::error::ExprError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `$evt`, `$begin`, `$name`, `$payload`, ...: the word after `$`.
    Dollar(String),
    Ident(String),
    Int(u64),
    Float(f64),
    /// A string literal, unescaped except for `\*` and `\\`, which stay as
    /// written so that a glob pattern can tell a literal star from a
    /// wildcard (see [`crate::glob::Glob::unescape`]).
    Str(String),
    Dot,
    Comma,
    Colon,
    LParen,
    RParen,
    OrOr,
    AndAnd,
    Not,
    EqEq,
    NotEq,
    /// `=*`: glob match (lttng-analyses' spelling).
    GlobEq,
    /// A single `=`, as in `name = $evt.field` in period captures.
    Assign,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Eof,
}

impl Tok {
    /// How the token is named in messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Dollar(w) => format!("`${w}`"),
            Tok::Ident(w) => format!("`{w}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Float(v) => format!("`{v}`"),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Eof => "the end of the expression".into(),
            t => format!("`{}`", t.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::Dot => ".",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::OrOr => "||",
            Tok::AndAnd => "&&",
            Tok::Not => "!",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::GlobEq => "=*",
            Tok::Assign => "=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            _ => "?",
        }
    }
}

/// A token and the byte range `start..end` it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub fn lex(text: &str) -> Result<Vec<Token>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = |s: &[u8]| b[i..].starts_with(s);
        let tok = if c == b'$' {
            i += 1;
            let w = i;
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            if w == i {
                return Err(ExprError::new(
                    start,
                    "expected a name after `$` (`$evt`, `$name`, `$payload`, ...)",
                ));
            }
            Tok::Dollar(text[w..i].to_string())
        } else if is_word_start(c) {
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            Tok::Ident(text[start..i].to_string())
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (tok, n) = number(text, i)?;
            i += n;
            tok
        } else if c == b'"' {
            let (s, n) = string(text, i)?;
            i += n;
            Tok::Str(s)
        } else {
            let (tok, n) = if two(b"||") {
                (Tok::OrOr, 2)
            } else if two(b"&&") {
                (Tok::AndAnd, 2)
            } else if two(b"==") {
                (Tok::EqEq, 2)
            } else if two(b"!=") {
                (Tok::NotEq, 2)
            } else if two(b"=*") {
                (Tok::GlobEq, 2)
            } else if two(b"<=") {
                (Tok::Le, 2)
            } else if two(b">=") {
                (Tok::Ge, 2)
            } else {
                let t = match c {
                    b'.' => Tok::Dot,
                    b',' => Tok::Comma,
                    b':' => Tok::Colon,
                    b'(' => Tok::LParen,
                    b')' => Tok::RParen,
                    b'!' => Tok::Not,
                    b'=' => Tok::Assign,
                    b'<' => Tok::Lt,
                    b'>' => Tok::Gt,
                    b'+' => Tok::Plus,
                    b'-' => Tok::Minus,
                    b'*' => Tok::Star,
                    b'/' => Tok::Slash,
                    b'%' => Tok::Percent,
                    b'&' | b'|' => {
                        let d = c as char;
                        return Err(ExprError::new(
                            start,
                            format!("unexpected `{d}`: did you mean `{d}{d}`?"),
                        ));
                    }
                    _ => {
                        let ch = text[i..].chars().next().unwrap_or('?');
                        return Err(ExprError::new(
                            start,
                            format!("unexpected character `{ch}`"),
                        ));
                    }
                };
                (t, 1)
            };
            i += n;
            tok
        };
        out.push(Token { tok, start, end: i });
    }
    out.push(Token {
        tok: Tok::Eof,
        start: b.len(),
        end: b.len(),
    });
    Ok(out)
}

/// A number at `text[at..]`: decimal or `0x` hexadecimal integer, or a
/// decimal float (`1.5`, `.5`, `2e-3`). Returns the token and its length.
fn number(text: &str, at: usize) -> Result<(Tok, usize), ExprError> {
    let b = text.as_bytes();
    let mut i = at;
    if b[i..].starts_with(b"0x") || b[i..].starts_with(b"0X") {
        i += 2;
        let d = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if d == i {
            return Err(ExprError::new(at, "expected hexadecimal digits after `0x`"));
        }
        if i < b.len() && is_word(b[i]) {
            return Err(ExprError::new(i, "unexpected character in a number"));
        }
        return u64::from_str_radix(&text[d..i], 16)
            .map(|v| (Tok::Int(v), i - at))
            .map_err(|_| ExprError::new(at, "integer does not fit in 64 bits"));
    }
    let mut float = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' && b.get(i + 1).is_none_or(|c| !is_word_start(*c)) {
        float = true;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            float = true;
            i = j;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < b.len() && is_word(b[i]) {
        return Err(ExprError::new(i, "unexpected character in a number"));
    }
    let s = &text[at..i];
    if float {
        s.parse::<f64>()
            .map(|v| (Tok::Float(v), i - at))
            .map_err(|_| ExprError::new(at, "malformed number"))
    } else {
        s.parse::<u64>()
            .map(|v| (Tok::Int(v), i - at))
            .map_err(|_| ExprError::new(at, "integer does not fit in 64 bits"))
    }
}

/// A string literal at `text[at..]` (which is `"`): escapes `\"`, `\\`,
/// `\n`, `\t`, `\r`; `\*` is kept as written (see [`Tok::Str`]).
fn string(text: &str, at: usize) -> Result<(String, usize), ExprError> {
    let mut out = String::new();
    let mut chars = text[at + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => return Ok((out, k + 2)),
            '\\' => match chars.next() {
                Some((_, '"')) => out.push('"'),
                Some((_, '\\')) => out.push_str("\\\\"),
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, '*')) => out.push_str("\\*"),
                Some((j, e)) => {
                    return Err(ExprError::new(
                        at + 1 + j - 1,
                        format!("unknown escape `\\{e}` (expected \\\" \\\\ \\n \\t \\r or \\*)"),
                    ))
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(ExprError::new(at, "string is not closed (missing `\"`)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn operators_and_words() {
        assert_eq!(
            toks("$evt.$name =* \"a\\*b*\" && !(x<=1.5e1)"),
            vec![
                Tok::Dollar("evt".into()),
                Tok::Dot,
                Tok::Dollar("name".into()),
                Tok::GlobEq,
                Tok::Str("a\\*b*".into()),
                Tok::AndAnd,
                Tok::Not,
                Tok::LParen,
                Tok::Ident("x".into()),
                Tok::Le,
                Tok::Float(15.0),
                Tok::RParen,
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("0x1F 7 .5"),
            vec![Tok::Int(31), Tok::Int(7), Tok::Float(0.5), Tok::Eof]
        );
    }

    #[test]
    fn errors_have_positions() {
        assert_eq!(lex("a & b").unwrap_err().pos, 2);
        assert_eq!(lex("a == \"abc").unwrap_err().pos, 5);
        assert_eq!(lex("$ x").unwrap_err().pos, 0);
        assert_eq!(lex("1 # 2").unwrap_err().pos, 2);
        assert_eq!(lex("99999999999999999999").unwrap_err().pos, 0);
        assert_eq!(lex("12ab").unwrap_err().pos, 2);
    }
}
