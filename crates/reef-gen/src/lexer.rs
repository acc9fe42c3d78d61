//! Tokenizer for `.reef` files.
//!
//! Comments are `// ...` and `/* ... */`. Identifiers are C identifiers;
//! integers are decimal or `0x` hexadecimal; strings are double-quoted with
//! `\"`, `\\`, `\n` and `\t` escapes.

use crate::error::Pos;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    /// An unsigned integer literal (a leading `-` is a separate token).
    Int(u64),
    Str(String),
    Punct(char),
    Eof,
}

impl Tok {
    /// How the token is named in "found ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Str(_) => "a string".to_string(),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// A lexing failure: where and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    pub pos: Pos,
    pub message: String,
}

pub fn tokenize(text: &str) -> Result<Vec<Token>, LexError> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut line = 1u32;
    let mut col = 1u32;
    let mut out = Vec::new();

    // Advances over one character, keeping line/column true.
    macro_rules! bump {
        () => {{
            if chars[i] == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
            i += 1;
        }};
    }

    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, column: col };
        if c.is_whitespace() {
            bump!();
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                bump!();
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            bump!();
            bump!();
            loop {
                if i >= chars.len() {
                    return Err(LexError {
                        pos,
                        message: "expected `*/` to close this comment".into(),
                    });
                }
                if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    bump!();
                    bump!();
                    break;
                }
                bump!();
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                s.push(chars[i]);
                bump!();
            }
            out.push(Token {
                tok: Tok::Ident(s),
                pos,
            });
        } else if c.is_ascii_digit() {
            let mut s = String::new();
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                s.push(chars[i]);
                bump!();
            }
            let parsed = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16)
            } else {
                s.parse::<u64>()
            };
            let v = parsed.map_err(|_| LexError {
                pos,
                message: format!("expected an integer, found `{s}`"),
            })?;
            out.push(Token {
                tok: Tok::Int(v),
                pos,
            });
        } else if c == '"' {
            bump!();
            let mut s = String::new();
            loop {
                if i >= chars.len() || chars[i] == '\n' {
                    return Err(LexError {
                        pos,
                        message: "expected `\"` to close this string".into(),
                    });
                }
                let ch = chars[i];
                if ch == '"' {
                    bump!();
                    break;
                }
                if ch == '\\' {
                    let epos = Pos { line, column: col };
                    bump!();
                    let esc = chars.get(i).copied();
                    let r = match esc {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('n') => '\n',
                        Some('t') => '\t',
                        _ => {
                            return Err(LexError {
                                pos: epos,
                                message: "expected one of `\\\"`, `\\\\`, `\\n`, `\\t`".into(),
                            })
                        }
                    };
                    s.push(r);
                    bump!();
                    continue;
                }
                s.push(ch);
                bump!();
            }
            out.push(Token {
                tok: Tok::Str(s),
                pos,
            });
        } else if "{}()[];:,=-".contains(c) {
            out.push(Token {
                tok: Tok::Punct(c),
                pos,
            });
            bump!();
        } else {
            return Err(LexError {
                pos,
                message: format!("expected a declaration, found unexpected character `{c}`"),
            });
        }
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: Pos { line, column: col },
    });
    Ok(out)
}
