//! LTTng packet index files (`<trace>/index/<stream file>.idx`): one entry
//! per packet with its offset, sizes and begin/end timestamps, which let a
//! reader find the packet holding a given time without walking the stream.
//!
//! Layout (all fields big-endian): a 16-byte header — magic `0xC1F1DCC1`,
//! major and minor version, length of one entry in bytes — then one entry
//! per packet: offset (bytes), packet size and content size (bits),
//! timestamp begin and end (clock cycles), events discarded, stream id
//! (version 1.1 adds stream instance id and packet sequence number). reef
//! reads only the first five fields.

use std::fs::File;
use std::path::PathBuf;

use memmap2::Mmap;

use crate::trace::StreamFile;

const MAGIC: u32 = 0xC1F1_DCC1;
const HEADER: usize = 16;
/// Offset, packet size, content size, timestamp begin and end.
const MIN_ENTRY: usize = 40;

/// One packet as the index describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub offset: u64,
    pub packet_bits: u64,
    pub content_bits: u64,
    pub ts_begin: Option<u64>,
    pub ts_end: Option<u64>,
}

/// A memory-mapped, validated index file.
pub struct PacketIndex {
    map: Mmap,
    entry_len: usize,
    len: usize,
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

impl PacketIndex {
    /// Where LTTng puts the index of `stream`.
    pub fn path_for(stream: &StreamFile) -> Option<PathBuf> {
        let dir = stream.path.parent()?;
        let mut name = stream.path.file_name()?.to_os_string();
        name.push(".idx");
        Some(dir.join("index").join(name))
    }

    /// Opens the index of `stream`, if there is one and it agrees with the
    /// stream file: known magic, entries in increasing offset order, every
    /// packet inside the file, end times not decreasing. Anything else
    /// gives `None` (the caller then walks the packets).
    pub fn open(stream: &StreamFile) -> Option<PacketIndex> {
        let f = File::open(PacketIndex::path_for(stream)?).ok()?;
        // SAFETY: read-only mapping of an index file; a concurrent
        // truncation is the only hazard, as for every mmap-based reader.
        let map = unsafe { Mmap::map(&f) }.ok()?;
        PacketIndex::from_map(map, stream.data().len() as u64)
    }

    fn from_map(map: Mmap, file_len: u64) -> Option<PacketIndex> {
        if map.len() < HEADER || be32(&map, 0) != MAGIC || be32(&map, 4) != 1 {
            return None;
        }
        let entry_len = be32(&map, 12) as usize;
        if entry_len < MIN_ENTRY {
            return None;
        }
        let len = (map.len() - HEADER) / entry_len;
        let idx = PacketIndex {
            map,
            entry_len,
            len,
        };
        let mut next = 0u64;
        let mut last_end = 0u64;
        for i in 0..len {
            let e = idx.get(i);
            let bytes = e.packet_bits / 8;
            if e.offset != next
                || e.packet_bits == 0
                || !e.packet_bits.is_multiple_of(8)
                || e.content_bits > e.packet_bits
                || e.offset.checked_add(bytes)? > file_len
            {
                return None;
            }
            let end = e.ts_end?;
            if end < last_end {
                return None;
            }
            last_end = end;
            next = e.offset + bytes;
        }
        (next == file_len).then_some(idx)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i` (`i < len()`).
    pub fn get(&self, i: usize) -> IndexEntry {
        let at = HEADER + i * self.entry_len;
        let b = &self.map[..];
        IndexEntry {
            offset: be64(b, at),
            packet_bits: be64(b, at + 8),
            content_bits: be64(b, at + 16),
            ts_begin: Some(be64(b, at + 24)),
            ts_end: Some(be64(b, at + 32)),
        }
    }

    /// The number of leading entries for which `pred` holds (entries are in
    /// time order, so `pred` must be true then false).
    pub fn partition_point(&self, pred: impl Fn(&IndexEntry) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}
