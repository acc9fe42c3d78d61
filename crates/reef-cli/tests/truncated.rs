//! Stream files that shrink while reef has them mapped: a tracer
//! re-recording into the directory a viewer has open, a rotated file, a
//! copy overwritten. Reading a mapped page past a file's new end raises
//! `SIGBUS`; reef must instead stop with an error naming the file, after
//! the events it read before (reef_ctf::guard).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RS: &str = "\u{1e}";

fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reef-truncated-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// A CTF 2 trace of one stream: `packets` packets of 64 KiB, each of
/// 7,000 events (a 64-bit timestamp and an 8-bit value), so that the
/// stream file spans many pages reef maps as it reads.
fn write_trace(dir: &Path, packets: u64) -> PathBuf {
    let u64fc = |role: &str| {
        format!(
            r#"{{"type": "fixed-length-unsigned-integer", "length": 64, "byte-order": "little-endian", "alignment": 8, "roles": ["{role}"]}}"#
        )
    };
    let member = |name: &str, fc: &str| format!(r#"{{"name": "{name}", "field-class": {fc}}}"#);
    let fragments = [
        r#"{"type": "preamble", "version": 2}"#.to_string(),
        r#"{"type": "trace-class"}"#.to_string(),
        r#"{"type": "clock-class", "id": "c", "frequency": 1000000000, "origin": "unix-epoch"}"#
            .to_string(),
        format!(
            r#"{{"type": "data-stream-class", "default-clock-class-id": "c",
            "packet-context-field-class": {{"type": "structure", "member-classes": [{}, {}, {}]}},
            "event-record-header-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
            member("packet_size", &u64fc("packet-total-length")),
            member("content_size", &u64fc("packet-content-length")),
            member("timestamp_begin", &u64fc("default-clock-timestamp")),
            member("timestamp", &u64fc("default-clock-timestamp")),
        ),
        format!(
            r#"{{"type": "event-record-class", "name": "ev",
            "payload-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
            member(
                "v",
                r#"{"type": "fixed-length-unsigned-integer", "length": 8, "byte-order": "little-endian", "alignment": 8}"#
            )
        ),
    ];
    let mut meta = String::new();
    for f in &fragments {
        meta.push_str(RS);
        meta.push_str(f);
        meta.push('\n');
    }
    std::fs::write(dir.join("metadata"), meta).unwrap();
    const PACKET: usize = 64 << 10;
    const EVENTS: u64 = 7000;
    let mut bytes = Vec::with_capacity(PACKET * packets as usize);
    let mut ts = 1_000_000_000_000_000_000u64;
    for _ in 0..packets {
        let start = bytes.len();
        let content = (24 + EVENTS * 9) * 8;
        for x in [(PACKET * 8) as u64, content, ts] {
            bytes.extend(x.to_le_bytes());
        }
        for i in 0..EVENTS {
            bytes.extend(ts.to_le_bytes());
            bytes.push(i as u8);
            ts += 10;
        }
        bytes.resize(start + PACKET, 0);
    }
    let stream = dir.join("stream");
    std::fs::write(&stream, bytes).unwrap();
    stream
}

fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// `reef print`, its output read slowly (a pipe: reef decodes a bounded
/// way ahead of what it has written), the stream file truncated after
/// the first lines: the lines before come out, then an error naming the
/// file and exit status 1, not a signal.
#[test]
fn print_of_a_file_truncated_while_read() {
    let dir = scratch("print");
    let stream = write_trace(&dir, 400);
    let mut child = Command::new(env!("CARGO_BIN_EXE_reef"))
        .args(["print", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run reef");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("ev: { v = 0 }"), "{first}");
    truncate(&stream, 4096);
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    let lines = 1 + rest.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(
        status.code(),
        Some(1),
        "exit status {status:?} (a signal means the fault killed reef); stderr: {err}"
    );
    assert!(
        err.contains(stream.to_str().unwrap()) && err.contains("truncated while being read"),
        "{err}"
    );
    // Not every event was printed, and no event after the damage was
    // made up from the zeros that replace the missing pages.
    assert!(lines < 400 * 7000, "{lines} lines");
    let text = String::from_utf8_lossy(&rest);
    assert!(
        !text.contains("[01:46:40.000000000]") && !text.contains("1970-"),
        "an event decoded from the zero pages"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One HTTP/1.1 GET on `port`: (status code, body).
fn get(port: u16, path: &str) -> (u32, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (code, body)
}

/// `reef view`: the index built, the stream file truncated to 4 KiB, then
/// a window request over the whole trace: an error response naming the
/// file, and the server still answers.
#[test]
fn view_window_after_the_file_was_truncated() {
    let dir = scratch("view");
    let stream = write_trace(&dir, 64);
    let mut child = Command::new(env!("CARGO_BIN_EXE_reef"))
        .args(["view", "--port", "0", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run reef view");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut port = None;
    let started = Instant::now();
    while port.is_none() && started.elapsed() < Duration::from_secs(60) {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            port = digits.parse::<u16>().ok();
        }
    }
    let port = port.expect("reef view printed its address");
    // The index is ready once /api/info says so.
    let mut info = String::new();
    while started.elapsed() < Duration::from_secs(60) {
        let (code, body) = get(port, "/api/info");
        if code == 200 && body.replace(' ', "").contains("\"state\":\"ready\"") {
            info = body;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!info.is_empty(), "the index never got ready");
    truncate(&stream, 4096);
    let (code, body) = get(port, "/api/events?from=1000000&count=1000");
    assert!(
        code >= 400 && body.contains("truncated while being read"),
        "{code}: {}",
        &body[..body.len().min(500)]
    );
    // Still serving.
    let (code, _) = get(port, "/api/info");
    assert_eq!(code, 200);
    assert!(child.try_wait().unwrap().is_none(), "reef view exited");
    let _ = child.kill();
    let status = child.wait().unwrap();
    assert!(
        status.code().is_some() || status.signal_is_kill(),
        "{status:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

trait KillSignal {
    fn signal_is_kill(&self) -> bool;
}

impl KillSignal for std::process::ExitStatus {
    fn signal_is_kill(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.signal() == Some(9)
    }
}
