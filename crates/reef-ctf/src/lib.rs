//! `reef-ctf`: the CTF library at the heart of reef (CTF 1.8 and CTF 2).
//!
//! - [`metadata`] turns TSDL text (plain or packetized) or CTF 2 JSON
//!   metadata ([`metadata::json`]) into a validated
//!   [`model::Metadata`], with `line:column` errors.
//! - [`model`] is that resolved trace model: clocks, env, stream and event
//!   classes, field classes.
//! - [`plan`] compiles each dynamic scope of the model once into a flat
//!   decode plan; [`decode`] runs plans over packet bytes with no per-event
//!   allocation.
//! - [`trace`] opens a trace directory (metadata + memory-mapped stream
//!   files); [`stream`] walks one stream's packets and events.
//!
//! ```
//! use std::sync::Arc;
//! let dir = "../../../shared/conformance/kernel-traces/bug446190";
//! let trace = Arc::new(reef_ctf::Trace::open(dir.as_ref())?);
//! let mut cursor = reef_ctf::StreamCursor::new(trace.clone(), 0);
//! let (mut events, mut last) = (0, 0);
//! while let Some(item) = cursor.next()? {
//!     if item == reef_ctf::Item::Event {
//!         let ts = cursor.event.ts.unwrap_or(0); // clock cycles
//!         assert!(ts >= last, "one stream is in time order");
//!         (events, last) = (events + 1, ts);
//!     }
//! }
//! assert!(events > 0);
//! # Ok::<(), reef_ctf::Error>(())
//! ```
//!
//! A trace copied while it was being recorded, cut by a full disk or left
//! by a crash opens all the same: a stream file whose last packet is cut is
//! read up to its last complete event ([`FileCut`]), a metadata file cut
//! inside a declaration with the declarations before the cut
//! ([`read_metadata_cut`]); [`Trace::damage`] says what is missing, for
//! readers to report once they have read the rest.
//!
//! The library does no I/O beyond reading the trace it is pointed at, prints
//! nothing and never exits the process.

pub mod access;
pub mod bits;
pub mod capture;
pub mod decode;
pub mod ftrace;
pub mod guard;
pub mod index;
pub mod metadata;
pub mod model;
pub mod plan;
pub mod prog;
pub mod source;
pub mod stream;
pub mod trace;
pub mod walk;

use std::path::{Path, PathBuf};

pub use access::{Field, FieldVal, Scopes};
pub use decode::{DecodeError, DecodeErrorKind, Value};
pub use metadata::{
    metadata_text, parse_metadata, read_metadata, read_metadata_cut, MetadataCut, MetadataError,
};
pub use model::*;
pub use stream::{EventData, Item, PacketInfo, Place, StreamCursor};
pub use trace::{FileCut, FileScan, Trace, TraceClass};

/// Everything that can go wrong reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // The cause is shown here, not chained as a `source` too: a reporter
    // that prints the chain would show it twice.
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{}:{err}", path.display())]
    Metadata { path: PathBuf, err: MetadataError },
    #[error("{}: packet at byte {packet_offset}: {err}", path.display())]
    Decode {
        path: PathBuf,
        packet_offset: u64,
        err: DecodeError,
    },
    #[error("{}: at byte {offset}: {msg}", path.display())]
    Stream {
        path: PathBuf,
        offset: u64,
        msg: String,
    },
    /// A damaged trace read as far as it goes (see [`Damage`]): each
    /// damage, after the error that stopped the reading first, if any.
    #[error("{}", damaged_text(stop.as_deref(), damage))]
    Damaged {
        stop: Option<Box<Error>>,
        damage: Vec<Damage>,
    },
}

fn damaged_text(stop: Option<&Error>, damage: &[Damage]) -> String {
    let mut lines: Vec<String> = stop.map(|e| e.to_string()).into_iter().collect();
    lines.extend(damage.iter().map(|d| d.to_string()));
    lines.join("\n")
}

/// Where a trace is damaged but readable up to the damage: a stream file
/// whose last packet is cut (a trace copied while recording, a full disk,
/// a crash: see [`FileCut`]), a metadata file cut inside a declaration
/// (read with the declarations before the cut), a live capture cut inside
/// a record. Readers deliver everything before the damage, then report it
/// as an error ([`Error::with_damage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub path: PathBuf,
    /// Byte offset in `path` of the damaged packet, record or declaration.
    pub offset: u64,
    /// What is missing and what was read or ignored.
    pub msg: String,
}

impl Damage {
    /// The damage as an error on its own.
    pub fn error(&self) -> Error {
        Error::Stream {
            path: self.path.clone(),
            offset: self.offset,
            msg: self.msg.clone(),
        }
    }
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: at byte {}: {}",
            self.path.display(),
            self.offset,
            self.msg
        )
    }
}

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            err: source,
        }
    }

    /// What a reader reports at the end of a damaged trace: `stop`, the
    /// error that ended the reading (if any), with every damage of the
    /// input; `stop` alone when there is no damage.
    pub fn with_damage<'a>(
        stop: Option<Error>,
        damage: impl IntoIterator<Item = &'a Damage>,
    ) -> Option<Error> {
        let damage: Vec<Damage> = damage.into_iter().cloned().collect();
        match (stop, damage.len()) {
            (stop, 0) => stop,
            (None, 1) => Some(damage[0].error()),
            (stop, _) => Some(Error::Damaged {
                stop: stop.map(Box::new),
                damage,
            }),
        }
    }

    /// This error, which stopped a reading, with the damage of the input
    /// ([`Error::with_damage`]).
    pub fn and_damage<'a>(self, damage: impl IntoIterator<Item = &'a Damage>) -> Error {
        let damage: Vec<Damage> = damage.into_iter().cloned().collect();
        if damage.is_empty() {
            return self;
        }
        Error::Damaged {
            stop: Some(Box::new(self)),
            damage,
        }
    }
}
