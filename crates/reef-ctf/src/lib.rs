//! `reef-ctf`: the CTF 1.8 library at the heart of reef.
//!
//! - [`metadata`] turns TSDL text (plain or packetized) into a validated
//!   [`model::Metadata`], with `line:column` errors.
//! - [`model`] is that resolved trace model: clocks, env, stream and event
//!   classes, field classes.
//!
//! The library does no I/O beyond the bytes it is handed, prints nothing and
//! never exits the process.

pub mod metadata;
pub mod model;

pub use metadata::{parse_metadata, MetadataError};
pub use model::*;
