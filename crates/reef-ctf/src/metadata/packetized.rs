//! Packetized metadata: a sequence of packets, each with a 37-byte header
//! (magic 0x75D11D57, UUID, checksum, content and packet sizes in bits,
//! compression/encryption/checksum schemes, major, minor) followed by a
//! chunk of TSDL text.

use super::MetadataError;

pub(crate) const MAGIC: u32 = 0x75D1_1D57;
pub(crate) const HEADER_LEN: usize = 37;

fn perr(msg: impl Into<String>) -> MetadataError {
    MetadataError {
        line: 0,
        column: 0,
        message: msg.into(),
    }
}

/// Byte order of the packetized metadata starting with `bytes`, if it is
/// packetized at all: `Some(true)` for little-endian, `Some(false)` for
/// big-endian.
pub(crate) fn detect(bytes: &[u8]) -> Option<bool> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(head) == MAGIC {
        Some(true)
    } else if u32::from_be_bytes(head) == MAGIC {
        Some(false)
    } else {
        None
    }
}

fn rd_u32(b: &[u8], off: usize, le: bool) -> Option<u32> {
    let a: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(if le {
        u32::from_le_bytes(a)
    } else {
        u32::from_be_bytes(a)
    })
}

/// Where packetized metadata is cut: the file ends inside a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PacketCut {
    /// The packet's index and byte offset in the file.
    pub index: usize,
    pub offset: usize,
    /// Bytes of it in the file, and its size (the packet header's, when
    /// the header is whole).
    pub present: usize,
    pub size: Option<usize>,
}

/// The payloads of packetized metadata, concatenated.
pub(crate) struct Unpacked {
    pub text: Vec<u8>,
    /// Where each packet's payload starts: (offset in `text`, offset in
    /// the file).
    pub starts: Vec<(usize, usize)>,
    /// With `cut_ok`: where the file ends inside a packet (the bytes of
    /// its payload before the cut are in `text`).
    pub cut: Option<PacketCut>,
}

/// Concatenates the payloads of every packet of packetized metadata.
pub(crate) fn unpack(bytes: &[u8], le: bool) -> Result<Vec<u8>, MetadataError> {
    unpack_cut(bytes, le, false).map(|u| u.text)
}

/// [`unpack`]; with `cut_ok`, a file that ends inside a packet (its
/// header, or its content) is no error: [`Unpacked::cut`] says where.
pub(crate) fn unpack_cut(bytes: &[u8], le: bool, cut_ok: bool) -> Result<Unpacked, MetadataError> {
    // The payloads are most of the bytes, unless packets are padded.
    let mut out = Vec::with_capacity(bytes.len());
    let mut starts = Vec::new();
    let mut cut = None;
    let mut off = 0usize;
    let mut uuid: Option<[u8; 16]> = None;
    let mut index = 0usize;
    while off < bytes.len() {
        let at = |m: &str| perr(format!("metadata packet {index} (at byte {off}): {m}"));
        let Some(hdr) = bytes.get(off..).and_then(|b| b.get(..HEADER_LEN)) else {
            if cut_ok {
                cut = Some(PacketCut {
                    index,
                    offset: off,
                    present: bytes.len() - off,
                    size: None,
                });
                break;
            }
            return Err(at("truncated packet header"));
        };
        let magic = rd_u32(hdr, 0, le).ok_or_else(|| at("truncated packet header"))?;
        if magic != MAGIC {
            let swapped = rd_u32(hdr, 0, !le) == Some(MAGIC);
            return Err(at(if swapped {
                "byte order differs from the first packet's"
            } else {
                "bad magic number"
            }));
        }
        let mut this_uuid = [0u8; 16];
        this_uuid.copy_from_slice(&hdr[4..20]);
        match uuid {
            None => uuid = Some(this_uuid),
            Some(u) if u != this_uuid => return Err(at("UUID differs from the first packet's")),
            Some(_) => {}
        }
        let content_bits = rd_u32(hdr, 24, le).ok_or_else(|| at("truncated packet header"))?;
        let packet_bits = rd_u32(hdr, 28, le).ok_or_else(|| at("truncated packet header"))?;
        let (compression, encryption, checksum) = (hdr[32], hdr[33], hdr[34]);
        let (major, minor) = (hdr[35], hdr[36]);
        if major != 1 || minor != 8 {
            return Err(at(&format!(
                "unsupported metadata packet version {major}.{minor} (expected 1.8)"
            )));
        }
        if compression != 0 || encryption != 0 || checksum != 0 {
            return Err(at(
                "compressed, encrypted or checksummed metadata is not supported",
            ));
        }
        if !content_bits.is_multiple_of(8) || !packet_bits.is_multiple_of(8) {
            return Err(at("content or packet size is not a multiple of 8 bits"));
        }
        let content = (content_bits / 8) as usize;
        let packet = (packet_bits / 8) as usize;
        if content < HEADER_LEN {
            return Err(at("content size is smaller than the packet header"));
        }
        if packet < content {
            return Err(at("content size is larger than the packet size"));
        }
        starts.push((out.len(), off + HEADER_LEN));
        match bytes
            .get(off + HEADER_LEN..)
            .and_then(|b| b.get(..content - HEADER_LEN))
        {
            Some(payload) => out.extend_from_slice(payload),
            None if cut_ok => {
                out.extend_from_slice(&bytes[off + HEADER_LEN..]);
                cut = Some(PacketCut {
                    index,
                    offset: off,
                    present: bytes.len() - off,
                    size: Some(packet),
                });
                break;
            }
            None => return Err(at("content extends past the end of the metadata file")),
        }
        // The last packet's padding may be missing from the file.
        off = off.saturating_add(packet);
        index += 1;
    }
    Ok(Unpacked {
        text: out,
        starts,
        cut,
    })
}
