//! The one error type of the crate: a message at a byte position of the
//! expression text.

use std::fmt;

/// A malformed or ill-typed expression. `pos` is a byte offset into the
/// expression text; [`ExprError::render`] shows the text with a caret under
/// that position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at column {}: {message}", pos + 1)]
pub struct ExprError {
    pub pos: usize,
    pub message: String,
}

impl ExprError {
    pub fn new(pos: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            pos,
            message: message.into(),
        }
    }

    /// The message, then the expression, then a caret under the position:
    ///
    /// ```text
    /// at column 15: expected an operand, found the end of the expression
    ///   $evt.a == 1 &&
    ///                 ^
    /// ```
    pub fn render(&self, text: &str) -> String {
        // The caret goes under the character at `pos`; columns count
        // characters, not bytes, and tabs are shown as spaces so the caret
        // lines up.
        let shown: String = text
            .chars()
            .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
            .collect();
        let col = text
            .char_indices()
            .take_while(|(i, _)| *i < self.pos)
            .count();
        format!("{self}\n  {shown}\n  {}^", " ".repeat(col))
    }
}

/// An [`ExprError`] together with the text it is about, so that `Display`
/// can show the caret. What the CLI reports.
#[derive(Debug, Clone, thiserror::Error)]
pub struct LocatedError {
    /// What the expression is (`--filter`, `--period`, ...), for the message.
    pub what: String,
    pub text: String,
    pub err: ExprError,
}

impl fmt::Display for LocatedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.err.render(&self.text))
    }
}
