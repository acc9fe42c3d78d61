//! The viewer side of lttng-relayd's live protocol, version 2.4 (what
//! lttng-relayd 2.13 speaks, and what babeltrace2 2.0 asks for): requests
//! as bytes, replies decoded from bytes. Every structure is packed and
//! big-endian; every command is a 16-byte header (size of what follows,
//! command number, command version 0) and a fixed request.
//!
//! Decoding never trusts a count or a length of the reply to size an
//! allocation: callers read fixed-size records one at a time and check
//! lengths against what they asked for ([`MAX_METADATA`]).

/// Commands (`enum lttng_viewer_command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Connect = 1,
    ListSessions = 2,
    AttachSession = 3,
    GetNextIndex = 4,
    GetPacket = 5,
    GetMetadata = 6,
    GetNewStreams = 7,
    CreateSession = 8,
    DetachSession = 9,
}

impl Cmd {
    pub fn name(self) -> &'static str {
        match self {
            Cmd::Connect => "CONNECT",
            Cmd::ListSessions => "LIST_SESSIONS",
            Cmd::AttachSession => "ATTACH_SESSION",
            Cmd::GetNextIndex => "GET_NEXT_INDEX",
            Cmd::GetPacket => "GET_PACKET",
            Cmd::GetMetadata => "GET_METADATA",
            Cmd::GetNewStreams => "GET_NEW_STREAMS",
            Cmd::CreateSession => "CREATE_SESSION",
            Cmd::DetachSession => "DETACH_SESSION",
        }
    }
}

/// The protocol version asked for: 2.4, whose session and stream records
/// have fixed-size names.
pub const MAJOR: u32 = 2;
pub const MINOR: u32 = 4;

pub const HOST_NAME_MAX: usize = 64;
pub const NAME_MAX: usize = 255;
pub const PATH_MAX: usize = 4096;

/// Sizes of the fixed replies and records.
pub const CONNECT_LEN: usize = 20;
pub const SESSION_LEN: usize = 8 + 4 + 4 + 4 + HOST_NAME_MAX + NAME_MAX;
pub const STREAM_LEN: usize = 8 + 8 + 4 + PATH_MAX + NAME_MAX;
pub const INDEX_LEN: usize = 7 * 8 + 4 + 4;
pub const PACKET_REPLY_LEN: usize = 12;
pub const METADATA_REPLY_LEN: usize = 12;
pub const STATUS_COUNT_LEN: usize = 8;

/// The largest metadata reply accepted (lttng-relayd sends at most what
/// it has received, a few KiB to a few MiB).
pub const MAX_METADATA: u64 = 64 << 20;
/// The largest data packet accepted.
pub const MAX_PACKET: u64 = 256 << 20;

/// `LTTNG_VIEWER_FLAG_*`.
pub const FLAG_NEW_METADATA: u32 = 1;
pub const FLAG_NEW_STREAM: u32 = 2;

/// Connection type: a command connection.
const CLIENT_COMMAND: u32 = 1;
/// Attach: from the packets being written now (babeltrace2's choice).
pub const SEEK_LAST: u32 = 2;

/// A request: the command header and its fixed part.
pub fn request(cmd: Cmd, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + body.len());
    b.extend_from_slice(&(body.len() as u64).to_be_bytes());
    b.extend_from_slice(&(cmd as u32).to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(body);
    b
}

pub fn connect_request() -> Vec<u8> {
    let mut body = Vec::with_capacity(CONNECT_LEN);
    body.extend_from_slice(&u64::MAX.to_be_bytes());
    body.extend_from_slice(&MAJOR.to_be_bytes());
    body.extend_from_slice(&MINOR.to_be_bytes());
    body.extend_from_slice(&CLIENT_COMMAND.to_be_bytes());
    request(Cmd::Connect, &body)
}

pub fn id_request(cmd: Cmd, id: u64) -> Vec<u8> {
    request(cmd, &id.to_be_bytes())
}

pub fn attach_request(session: u64) -> Vec<u8> {
    let mut body = Vec::with_capacity(20);
    body.extend_from_slice(&session.to_be_bytes());
    body.extend_from_slice(&0u64.to_be_bytes());
    body.extend_from_slice(&SEEK_LAST.to_be_bytes());
    request(Cmd::AttachSession, &body)
}

pub fn packet_request(stream: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(20);
    body.extend_from_slice(&stream.to_be_bytes());
    body.extend_from_slice(&offset.to_be_bytes());
    body.extend_from_slice(&len.to_be_bytes());
    request(Cmd::GetPacket, &body)
}

/// A reply that does not decode: what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad(pub String);

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A big-endian reader over one fixed-size reply.
struct Be<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Be<'a> {
    fn new(b: &'a [u8], len: usize, what: &str) -> Result<Be<'a>, Bad> {
        if b.len() != len {
            return Err(Bad(format!(
                "{what}: expected {len} bytes, got {}",
                b.len()
            )));
        }
        Ok(Be { b, at: 0 })
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        // Lengths were checked by `new`.
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        s
    }
    fn u32(&mut self) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4));
        u32::from_be_bytes(a)
    }
    fn u64(&mut self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8));
        u64::from_be_bytes(a)
    }
    /// A fixed-size, NUL-padded name (the last byte is forced to NUL, as
    /// the relay's peers do).
    fn name(&mut self, n: usize) -> String {
        let s = self.take(n);
        let s = &s[..n - 1];
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end]).into_owned()
    }
}

/// The relay's answer to CONNECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    pub viewer_session: u64,
    pub major: u32,
    pub minor: u32,
}

pub fn connected(b: &[u8]) -> Result<Connected, Bad> {
    let mut r = Be::new(b, CONNECT_LEN, "CONNECT reply")?;
    let c = Connected {
        viewer_session: r.u64(),
        major: r.u32(),
        minor: r.u32(),
    };
    if c.major != MAJOR {
        return Err(Bad(format!(
            "CONNECT reply: the relay speaks version {}.{}, expected major version {MAJOR}",
            c.major, c.minor
        )));
    }
    Ok(c)
}

/// One session of LIST_SESSIONS (`lttng_viewer_session`, 2.4 layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: u64,
    pub live_timer: u32,
    pub clients: u32,
    pub streams: u32,
    pub hostname: String,
    pub name: String,
}

pub fn session(b: &[u8]) -> Result<SessionInfo, Bad> {
    let mut r = Be::new(b, SESSION_LEN, "session record")?;
    Ok(SessionInfo {
        id: r.u64(),
        live_timer: r.u32(),
        clients: r.u32(),
        streams: r.u32(),
        hostname: r.name(HOST_NAME_MAX),
        name: r.name(NAME_MAX),
    })
}

pub fn count(b: &[u8], what: &str) -> Result<u32, Bad> {
    let mut r = Be::new(b, 4, what)?;
    Ok(r.u32())
}

/// A status and a count of stream records following (ATTACH_SESSION,
/// GET_NEW_STREAMS).
pub fn status_count(b: &[u8], what: &str) -> Result<(u32, u32), Bad> {
    let mut r = Be::new(b, STATUS_COUNT_LEN, what)?;
    Ok((r.u32(), r.u32()))
}

/// One stream record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    pub id: u64,
    pub ctf_trace: u64,
    pub metadata: bool,
    pub path: String,
    pub channel: String,
}

pub fn stream(b: &[u8]) -> Result<StreamInfo, Bad> {
    let mut r = Be::new(b, STREAM_LEN, "stream record")?;
    Ok(StreamInfo {
        id: r.u64(),
        ctf_trace: r.u64(),
        metadata: r.u32() != 0,
        path: r.name(PATH_MAX),
        channel: r.name(NAME_MAX),
    })
}

/// `enum lttng_viewer_next_index_return_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexStatus {
    Ok,
    Retry,
    Hup,
    Err,
    Inactive,
    Eof,
}

/// GET_NEXT_INDEX's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub offset: u64,
    /// Bits.
    pub packet_size: u64,
    pub content_size: u64,
    pub ts_begin: u64,
    /// For [`IndexStatus::Inactive`]: the stream has no event before this.
    pub ts_end: u64,
    pub events_discarded: u64,
    /// The CTF stream class id.
    pub stream_class: u64,
    pub status: IndexStatus,
    pub flags: u32,
}

pub fn index(b: &[u8]) -> Result<Index, Bad> {
    let mut r = Be::new(b, INDEX_LEN, "GET_NEXT_INDEX reply")?;
    let (offset, packet_size, content_size, ts_begin, ts_end, events_discarded, stream_class) = (
        r.u64(),
        r.u64(),
        r.u64(),
        r.u64(),
        r.u64(),
        r.u64(),
        r.u64(),
    );
    let status = match r.u32() {
        1 => IndexStatus::Ok,
        2 => IndexStatus::Retry,
        3 => IndexStatus::Hup,
        4 => IndexStatus::Err,
        5 => IndexStatus::Inactive,
        6 => IndexStatus::Eof,
        s => {
            return Err(Bad(format!(
                "GET_NEXT_INDEX reply: status {s}, expected 1 to 6 (OK, RETRY, HUP, ERR, INACTIVE, EOF)"
            )))
        }
    };
    let flags = r.u32();
    let i = Index {
        offset,
        packet_size,
        content_size,
        ts_begin,
        ts_end,
        events_discarded,
        stream_class,
        status,
        flags,
    };
    if status == IndexStatus::Ok {
        if i.packet_size == 0 || !i.packet_size.is_multiple_of(8) || i.packet_size / 8 > MAX_PACKET
        {
            return Err(Bad(format!(
                "GET_NEXT_INDEX reply: packet size of {} bits, expected a whole number of bytes between 1 and {MAX_PACKET}",
                i.packet_size
            )));
        }
        if i.content_size > i.packet_size {
            return Err(Bad(format!(
                "GET_NEXT_INDEX reply: content size of {} bits larger than the packet's {} bits",
                i.content_size, i.packet_size
            )));
        }
        if i.ts_end < i.ts_begin {
            return Err(Bad(format!(
                "GET_NEXT_INDEX reply: packet ends (cycle {}) before it begins (cycle {})",
                i.ts_end, i.ts_begin
            )));
        }
    }
    Ok(i)
}

/// `enum lttng_viewer_get_packet_return_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketStatus {
    Ok,
    Retry,
    Err,
    Eof,
}

/// GET_PACKET's reply header: status, length of the data that follows,
/// flags.
pub fn packet_reply(b: &[u8], asked: u32) -> Result<(PacketStatus, u32, u32), Bad> {
    let mut r = Be::new(b, PACKET_REPLY_LEN, "GET_PACKET reply")?;
    let (status, len, flags) = (r.u32(), r.u32(), r.u32());
    let status = match status {
        1 => PacketStatus::Ok,
        2 => PacketStatus::Retry,
        3 => PacketStatus::Err,
        4 => PacketStatus::Eof,
        s => {
            return Err(Bad(format!(
                "GET_PACKET reply: status {s}, expected 1 to 4 (OK, RETRY, ERR, EOF)"
            )))
        }
    };
    if status == PacketStatus::Ok && len != asked {
        return Err(Bad(format!(
            "GET_PACKET reply: {len} bytes of data, expected the {asked} asked for"
        )));
    }
    Ok((status, len, flags))
}

/// `enum lttng_viewer_get_metadata_return_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataStatus {
    Ok,
    NoNew,
    Err,
}

/// GET_METADATA's reply header: length of the text that follows, status.
pub fn metadata_reply(b: &[u8]) -> Result<(u64, MetadataStatus), Bad> {
    let mut r = Be::new(b, METADATA_REPLY_LEN, "GET_METADATA reply")?;
    let (len, status) = (r.u64(), r.u32());
    let status = match status {
        1 => MetadataStatus::Ok,
        2 => MetadataStatus::NoNew,
        3 => MetadataStatus::Err,
        s => {
            return Err(Bad(format!(
                "GET_METADATA reply: status {s}, expected 1 to 3 (OK, NO_NEW_METADATA, ERR)"
            )))
        }
    };
    if status == MetadataStatus::Ok && (len == 0 || len > MAX_METADATA) {
        return Err(Bad(format!(
            "GET_METADATA reply: {len} bytes of metadata, expected between 1 and {MAX_METADATA}"
        )));
    }
    Ok((len, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn index_bytes(status: u32, size_bits: u64, content: u64, b: u64, e: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for x in [0u64, size_bits, content, b, e, 0, 0] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v.extend_from_slice(&status.to_be_bytes());
        v.extend_from_slice(&0u32.to_be_bytes());
        v
    }

    #[test]
    fn requests_are_packed_big_endian() {
        let c = connect_request();
        assert_eq!(c.len(), 16 + CONNECT_LEN);
        assert_eq!(&c[..8], &20u64.to_be_bytes());
        assert_eq!(&c[8..12], &1u32.to_be_bytes());
        assert_eq!(&c[24..28], &2u32.to_be_bytes());
        assert_eq!(&c[28..32], &4u32.to_be_bytes());
        assert_eq!(packet_request(1, 2, 3).len(), 36);
        assert_eq!(attach_request(7).len(), 36);
        assert_eq!(id_request(Cmd::GetNextIndex, 7).len(), 24);
    }

    #[test]
    fn good_replies_decode() {
        let i = index(&index_bytes(1, 4096 * 8, 100 * 8, 5, 9)).unwrap();
        assert_eq!(i.status, IndexStatus::Ok);
        assert_eq!(i.packet_size, 4096 * 8);
        let i = index(&index_bytes(5, 0, 0, 0, 77)).unwrap();
        assert_eq!((i.status, i.ts_end), (IndexStatus::Inactive, 77));
        let mut s = vec![0u8; SESSION_LEN];
        s[7] = 3;
        s[20..24].copy_from_slice(b"host");
        s[20 + HOST_NAME_MAX..20 + HOST_NAME_MAX + 4].copy_from_slice(b"sess");
        let s = session(&s).unwrap();
        assert_eq!(
            (s.id, s.hostname.as_str(), s.name.as_str()),
            (3, "host", "sess")
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        // Statuses out of range, sizes that cannot be, truncations.
        assert!(index(&index_bytes(0, 8, 8, 0, 0)).is_err());
        assert!(index(&index_bytes(7, 8, 8, 0, 0)).is_err());
        assert!(index(&index_bytes(1, 0, 0, 0, 0)).is_err());
        assert!(index(&index_bytes(1, 12, 0, 0, 0)).is_err());
        assert!(index(&index_bytes(1, 8, 16, 0, 0)).is_err());
        assert!(index(&index_bytes(1, u64::MAX - 7, 0, 0, 0)).is_err());
        assert!(index(&index_bytes(1, 8, 8, 9, 1)).is_err());
        let e = index(&index_bytes(1, 8, 8, 0, 0)[..63]).unwrap_err();
        assert_eq!(e.0, "GET_NEXT_INDEX reply: expected 64 bytes, got 63");
        assert!(packet_reply(&[0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0], 4).is_err());
        assert!(packet_reply(&[0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 0], 4).is_err());
        assert!(metadata_reply(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
        assert!(metadata_reply(&[255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
        let mut c = vec![0u8; CONNECT_LEN];
        c[11] = 3;
        assert!(connected(&c).is_err());
    }

    /// Random bytes of every length up to the record's and beyond: each
    /// decoder returns a value or an error, never panics, and accepts
    /// only its exact length.
    #[test]
    fn random_replies_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        type Decoder = fn(&[u8]) -> bool;
        let decoders: [(usize, Decoder); 7] = [
            (CONNECT_LEN, |b| connected(b).is_ok()),
            (SESSION_LEN, |b| session(b).is_ok()),
            (STREAM_LEN, |b| stream(b).is_ok()),
            (INDEX_LEN, |b| index(b).is_ok()),
            (PACKET_REPLY_LEN, |b| packet_reply(b, 4096).is_ok()),
            (METADATA_REPLY_LEN, |b| metadata_reply(b).is_ok()),
            (STATUS_COUNT_LEN, |b| status_count(b, "x").is_ok()),
        ];
        for (len, decode) in decoders {
            for n in 0..len + 3 {
                for _ in 0..if n == len { 2000 } else { 20 } {
                    let b: Vec<u8> = (0..n).map(|_| rng(&mut seed) as u8).collect();
                    let ok = decode(&b);
                    assert!(
                        !ok || n == len,
                        "accepted {n} bytes for a {len}-byte record"
                    );
                }
            }
        }
    }
}
