//! `reef-ctf`: the CTF 1.8 library at the heart of reef.
//!
//! - [`metadata`] turns TSDL text (plain or packetized) into a validated
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
//! The library does no I/O beyond reading the trace it is pointed at, prints
//! nothing and never exits the process.

pub mod access;
pub mod bits;
pub mod capture;
pub mod decode;
pub mod index;
pub mod metadata;
pub mod model;
pub mod plan;
pub mod prog;
pub mod stream;
pub mod trace;

use std::path::{Path, PathBuf};

pub use access::{Field, FieldVal, Scopes};
pub use decode::{DecodeError, DecodeErrorKind, Value};
pub use metadata::{metadata_text, parse_metadata, read_metadata, MetadataError};
pub use model::*;
pub use stream::{EventData, Item, PacketInfo, Place, StreamCursor};
pub use trace::{FileScan, Trace, TraceClass};

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
}

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            err: source,
        }
    }
}
