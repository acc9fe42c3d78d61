//! `reef_read::lttng_live` against an in-process fake lttng-relayd serving
//! a real LTTng-UST trace of the shared conformance material (four
//! streams, packetized metadata) packet by packet:
//!
//! - read whole, the epochs give exactly the events of the trace read
//!   from disk, in the same order, each once;
//! - the conversation cut at any point, or with a byte changed anywhere,
//!   gives an error or an end, never a panic or a hang; cut, the events
//!   given are the trace's, in time order.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;

use reef_read::lttng_live::{LiveRead, LiveUrl, SessionNotFound};
use reef_read::{Item, ReadOptions, Source};

const TRACE: &str = "../../../shared/conformance/babeltrace-traces/succeed/multi-domains/ust";

struct Stream {
    id: u64,
    bytes: Vec<u8>,
    /// (offset, size, end cycles)
    packets: Vec<(u64, u64, u64)>,
}

struct Served {
    metadata: Vec<u8>,
    streams: Vec<Stream>,
}

fn served() -> Arc<Served> {
    let dir = Path::new(TRACE);
    let trace = reef_ctf::Trace::open(dir).unwrap();
    let mut streams = Vec::new();
    for (i, s) in trace.sources.iter().enumerate() {
        for f in &s.files {
            let bytes = std::fs::read(&f.path).unwrap();
            let pk = f.packets.get().expect("packets scanned when opened");
            let mut packets = Vec::new();
            for (j, &(off, end)) in pk.iter().enumerate() {
                let next = pk.get(j + 1).map_or(bytes.len() as u64, |p| p.0);
                packets.push((off, next - off, end));
            }
            streams.push(Stream {
                id: 10 + i as u64,
                bytes,
                packets,
            });
        }
    }
    Arc::new(Served {
        metadata: std::fs::read(dir.join("metadata")).unwrap(),
        streams,
    })
}

/// What the fake relay does to its output: stop after `cut` bytes, or
/// change the byte at `flip`.
#[derive(Clone, Copy, Default)]
struct Damage {
    cut: Option<usize>,
    flip: Option<(usize, u8)>,
}

struct Out {
    sock: TcpStream,
    sent: usize,
    damage: Damage,
}

impl Out {
    fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        let mut b = b.to_vec();
        if let Some((at, x)) = self.damage.flip {
            if at >= self.sent && at < self.sent + b.len() {
                b[at - self.sent] ^= x;
            }
        }
        if let Some(cut) = self.damage.cut {
            if self.sent + b.len() > cut {
                let keep = cut.saturating_sub(self.sent);
                self.sock.write_all(&b[..keep])?;
                let _ = self.sock.shutdown(std::net::Shutdown::Both);
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
        }
        self.sent += b.len();
        self.sock.write_all(&b)
    }
}

fn name(s: &str, n: usize) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.resize(n, 0);
    v
}

fn stream_rec(id: u64, meta: bool) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&1u64.to_be_bytes());
    v.extend_from_slice(&u32::from(meta).to_be_bytes());
    v.extend(name("h/s", 4096));
    v.extend(name("chan", 255));
    v
}

fn serve_one(mut sock: TcpStream, data: &Served, damage: Damage) -> std::io::Result<()> {
    let mut out = Out {
        sock: sock.try_clone()?,
        sent: 0,
        damage,
    };
    let mut next = vec![0usize; data.streams.len()];
    let mut meta_sent = false;
    loop {
        let mut hdr = [0u8; 16];
        sock.read_exact(&mut hdr)?;
        let size = u64::from_be_bytes(hdr[..8].try_into().unwrap()) as usize;
        let cmd = u32::from_be_bytes(hdr[8..12].try_into().unwrap());
        let mut body = vec![0u8; size];
        sock.read_exact(&mut body)?;
        let id = || u64::from_be_bytes(body[..8].try_into().unwrap());
        let mut r = Vec::new();
        match cmd {
            1 => {
                r.extend_from_slice(&1u64.to_be_bytes());
                r.extend_from_slice(&2u32.to_be_bytes());
                r.extend_from_slice(&13u32.to_be_bytes());
                r.extend_from_slice(&1u32.to_be_bytes());
            }
            2 => {
                r.extend_from_slice(&1u32.to_be_bytes());
                r.extend_from_slice(&5u64.to_be_bytes());
                for x in [1000u32, 0, 5] {
                    r.extend_from_slice(&x.to_be_bytes());
                }
                r.extend(name("myhost", 64));
                r.extend(name("mysession", 255));
            }
            8 => r.extend_from_slice(&1u32.to_be_bytes()),
            3 => {
                r.extend_from_slice(&1u32.to_be_bytes());
                r.extend_from_slice(&(data.streams.len() as u32 + 1).to_be_bytes());
                r.extend(stream_rec(1, true));
                for s in &data.streams {
                    r.extend(stream_rec(s.id, false));
                }
            }
            7 => {
                r.extend_from_slice(&4u32.to_be_bytes());
                r.extend_from_slice(&0u32.to_be_bytes());
            }
            6 => {
                if meta_sent {
                    r.extend_from_slice(&0u64.to_be_bytes());
                    r.extend_from_slice(&2u32.to_be_bytes());
                } else {
                    meta_sent = true;
                    r.extend_from_slice(&(data.metadata.len() as u64).to_be_bytes());
                    r.extend_from_slice(&1u32.to_be_bytes());
                    r.extend_from_slice(&data.metadata);
                }
            }
            4 => {
                let Some(i) = data.streams.iter().position(|s| s.id == id()) else {
                    return Ok(());
                };
                let (off, sz, end, status) = match data.streams[i].packets.get(next[i]) {
                    Some(&(o, s, e)) => (o, s, e, 1u32),
                    None => (0, 0, 0, 3),
                };
                next[i] += 1;
                let begin = 0u64;
                for x in [off, sz * 8, sz * 8, begin, end, 0, 0] {
                    r.extend_from_slice(&x.to_be_bytes());
                }
                r.extend_from_slice(&status.to_be_bytes());
                r.extend_from_slice(&0u32.to_be_bytes());
            }
            5 => {
                let Some(s) = data.streams.iter().find(|s| s.id == id()) else {
                    return Ok(());
                };
                let off = u64::from_be_bytes(body[8..16].try_into().unwrap()) as usize;
                let len = u32::from_be_bytes(body[16..20].try_into().unwrap()) as usize;
                r.extend_from_slice(&1u32.to_be_bytes());
                r.extend_from_slice(&(len as u32).to_be_bytes());
                r.extend_from_slice(&0u32.to_be_bytes());
                r.extend_from_slice(&s.bytes[off..off + len]);
            }
            9 => r.extend_from_slice(&1u32.to_be_bytes()),
            _ => return Ok(()),
        }
        out.send(&r)?;
    }
}

/// A relay on a free port serving every connection with `damage`.
fn relay(data: Arc<Served>, damage: Damage) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let d = data.clone();
            std::thread::spawn(move || {
                let _ = serve_one(c, &d, damage);
            });
        }
    });
    port
}

type Events = Vec<(String, Option<i64>)>;

fn events(src: &mut Source, into: &mut Events) -> Result<(), reef_read::Error> {
    while let Some(m) = src.next()? {
        if m.item == Item::Event {
            into.push((m.cursor.event_name().to_string(), m.ns));
        }
    }
    Ok(())
}

/// Reads the fake relay's session live: the events given, and how it ended.
fn read_live(port: u16) -> (Events, Result<(), reef_read::Error>) {
    let url = LiveUrl::parse(&format!("net://127.0.0.1:{port}/host/myhost/mysession")).unwrap();
    let mut got = Vec::new();
    let r = (|| {
        let mut live = LiveRead::open(&url, SessionNotFound::End, &ReadOptions::default())?;
        while let Some(mut src) = live.next_source()? {
            events(&mut src, &mut got)?;
        }
        Ok(())
    })();
    (got, r)
}

fn from_disk() -> Events {
    let mut v = Vec::new();
    events(
        &mut Source::open(&ReadOptions::new([TRACE])).unwrap(),
        &mut v,
    )
    .unwrap();
    v
}

#[test]
fn whole_session_reads_as_the_trace() {
    let data = served();
    let want = from_disk();
    assert!(want.len() > 100);
    let (got, r) = read_live(relay(data, Damage::default()));
    r.unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "live events differ from the trace's");
}

#[test]
fn listing() {
    let port = relay(served(), Damage::default());
    let url = LiveUrl::parse(&format!("net://127.0.0.1:{port}")).unwrap();
    assert_eq!(
        reef_read::lttng_live::list_sessions(&url).unwrap(),
        format!("net://127.0.0.1:{port}/host/myhost/mysession (timer = 1000, 5 stream(s), 0 client(s) connected)\n")
    );
}

/// Total bytes the relay sends in a whole session.
fn total_sent(data: &Arc<Served>) -> usize {
    let meta = data.metadata.len();
    let packets: u64 = data.streams.iter().map(|s| s.bytes.len() as u64).sum();
    meta + packets as usize + 20_000
}

/// Events given before an error: the trace's (each at most as often), in
/// time order. (Not always a prefix of the trace's: after a failure, what
/// was received is given whole, streams that arrived further included.)
fn check_given(got: &Events, want: &Events, what: &str) {
    let mut left: std::collections::HashMap<&(String, Option<i64>), usize> = Default::default();
    for e in want {
        *left.entry(e).or_default() += 1;
    }
    for e in got {
        let n = left
            .get_mut(e)
            .unwrap_or_else(|| panic!("{what}: {e:?} is not in the trace"));
        assert!(*n > 0, "{what}: {e:?} given too often");
        *n -= 1;
    }
    assert!(
        got.windows(2).all(|w| w[0].1 <= w[1].1),
        "{what}: not in time order"
    );
}

#[test]
fn cut_anywhere_is_an_error_not_a_panic() {
    let data = served();
    let want = from_disk();
    let total = total_sent(&data);
    let mut cut = 0;
    let (mut errors, mut kept) = (0, 0);
    while cut < total {
        let (got, r) = read_live(relay(
            data.clone(),
            Damage {
                cut: Some(cut),
                flip: None,
            },
        ));
        check_given(&got, &want, &format!("cut at {cut}"));
        if let Err(e) = r {
            errors += 1;
            kept += usize::from(!got.is_empty());
            let msg = e.to_string();
            assert!(msg.starts_with("net://127.0.0.1:"), "cut at {cut}: {msg}");
        }
        cut += if cut < 2000 { 7 } else { 997 };
    }
    assert!(errors > 100);
    // Cut after some packets: what arrived before the cut was given.
    assert!(kept > 20, "{kept} errors after events");
}

#[test]
fn changed_bytes_never_panic() {
    let data = served();
    let want = from_disk();
    let total = total_sent(&data);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..150 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Mostly in the protocol's replies (the first bytes), some in data.
        let at = if seed.is_multiple_of(3) {
            (seed >> 8) as usize % total
        } else {
            (seed >> 8) as usize % 2500
        };
        let x = ((seed >> 40) as u8).max(1);
        let (got, _r) = read_live(relay(
            data.clone(),
            Damage {
                cut: None,
                flip: Some((at, x)),
            },
        ));
        // A changed byte in the data may change an event (a name, a
        // time): only the count is bounded.
        assert!(got.len() <= want.len() * 2, "flip at {at}");
    }
}

/// `Source::open` on a `net://` session (what every reading command does):
/// the whole session once it ended.
#[test]
fn source_open_reads_the_whole_session() {
    let port = relay(served(), Damage::default());
    let mut o = ReadOptions::new([format!("net://127.0.0.1:{port}/host/myhost/mysession")]);
    o.live_action = SessionNotFound::End;
    let mut got = Vec::new();
    events(&mut Source::open(&o).unwrap(), &mut got).unwrap();
    assert!(got == from_disk());
    // Not there: `fail` fails at once, `end` ends with nothing.
    let mut o = ReadOptions::new([format!("net://127.0.0.1:{port}/host/myhost/other")]);
    o.live_action = SessionNotFound::Fail;
    let e = Source::open(&o).err().expect("no such session");
    assert!(
        e.to_string()
            .contains("no session `other` of host `myhost`"),
        "{e}"
    );
    o.live_action = SessionNotFound::End;
    let mut got = Vec::new();
    events(&mut Source::open(&o).unwrap(), &mut got).unwrap();
    assert!(got.is_empty());
}
