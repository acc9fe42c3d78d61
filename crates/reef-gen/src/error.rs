//! The one error type of the crate.

use std::path::PathBuf;

/// A position in a schema file: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// A problem in the schema text, located at `pos`.
///
/// `Display` gives the conventional `file:line:column: message` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}:{}: {message}", pos.line, pos.column)]
pub struct SchemaError {
    /// The file name as given by the caller (for messages only).
    pub file: String,
    pub pos: Pos,
    /// What was expected or what is wrong, e.g. "expected `;`, found `}`".
    pub message: String,
}

/// Everything that can go wrong in [`crate::generate`].
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The schema text is malformed or inconsistent.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Reading the schema or writing an output failed.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}
