//! The one error type of the reading library.

use std::path::PathBuf;

/// What can stop a read: opening the inputs, a bad filter expression, or a
/// trace that cannot be decoded (file, offset and what was expected).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input path holds no trace.
    #[error("no CTF trace (a directory holding a `metadata` file) found under {}", path.display())]
    NoTrace { path: PathBuf },
    /// The filter expression does not parse or compile; shows where.
    #[error(transparent)]
    Filter(#[from] reef_filter::LocatedError),
    /// A live address does not parse.
    #[error("`{addr}`: expected {expected}")]
    Address { addr: String, expected: String },
    /// A live peer cannot be reached.
    #[error("connecting to {addr}: {err}")]
    Connect { addr: String, err: std::io::Error },
    /// A script filter (`--script`) could not start or failed.
    #[error("--script {}: {msg}", script.display())]
    Script { script: PathBuf, msg: String },
    /// A keeper ([`crate::keeper`], a plugin's filter) failed.
    #[error("{name}: {msg}")]
    Keeper { name: String, msg: String },
    /// An LTTng relay failed or sent what the live protocol does not
    /// allow (which command, what was expected).
    #[error("{relay}: {msg}")]
    Live { relay: String, msg: String },
    /// Reading a trace failed: I/O, metadata, or stream data.
    #[error(transparent)]
    Trace(#[from] reef_ctf::Error),
}
