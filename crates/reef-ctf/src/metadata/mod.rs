//! TSDL (CTF 1.8 metadata) lexing, parsing and resolution into [`crate::model`].

use crate::model::Metadata;

/// A metadata error: where (1-based line and column in the TSDL text; 0:0
/// when it concerns the packetized container) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct MetadataError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Returns the TSDL text of a metadata file, unpacking packetized metadata
/// (magic 0x75D11D57, either byte order) when needed.
pub fn metadata_text(bytes: &[u8]) -> Result<String, MetadataError> {
    let _ = bytes;
    todo!("metadata_text")
}

/// Parses TSDL text into a resolved, validated [`Metadata`].
pub fn parse_metadata(text: &str) -> Result<Metadata, MetadataError> {
    let _ = text;
    todo!("parse_metadata")
}
