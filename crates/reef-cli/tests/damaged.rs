//! Damaged traces: stream files cut at random offsets, metadata
//! files cut at random offsets, of a real LTTng kernel trace
//! (`../shared/conformance/kernel-traces/bug446190`, four stream files)
//! and of a libreef trace recorded here (`tests/periods/pattern.c`, three
//! threads). reef must print every event babeltrace2 prints on the intact
//! trace except those of the cut stream that do not lie wholly before the
//! cut, in the same order and text, exit 1 with a message naming the cut
//! file, and never panic.
//!
//! # Where the expected output comes from
//!
//! Only from babeltrace2 and from the bytes of the trace, never from reef:
//!
//! - the text and order of every event: babeltrace2 on the intact trace;
//! - which stream file and which packet each printed event comes from:
//!   babeltrace2's `sink.text.details` on the intact trace (the same
//!   source and muxer, so the same messages in the same order; each event
//!   message names its stream, whose beginning message names its file,
//!   and follows its packet's beginning message); the event names of both
//!   outputs are checked to agree line by line;
//! - where the packets of a file lie: each packet starts with the CTF
//!   magic and its context holds `content_size` then `packet_size` as
//!   64-bit integers (the test checks that the metadata, as babeltrace2
//!   prints it, declares them so); the walk from packet to packet must
//!   end exactly at the end of the file, find as many packets as
//!   babeltrace2's details show, and, for LTTng, agree with the packet
//!   index LTTng wrote (`index/*.idx`);
//! - how many events of the cut packet lie wholly before the cut: the
//!   packet's bytes before the cut, alone in a file, with its
//!   `content_size` and `packet_size` set to the bytes present, read by
//!   babeltrace2 with the same metadata: babeltrace2 decodes exactly the
//!   events that end within the packet's content, i.e. before the cut
//!   (their text, delta aside, is checked against the intact output). In
//!   that copy of the metadata an LTTng `tracer_name` is renamed (same
//!   length), only so that babeltrace2 does not apply its workaround for
//!   an LTTng bug, which decodes a stream's last packet when the trace is
//!   opened and gives up on a packet whose last event is incomplete; the
//!   workaround concerns packet end times, not which events decode;
//! - the `(+delta)` column of the expected output is recomputed from the
//!   printed timestamps, the events that are left out being gone;
//! - babeltrace2 2.0.4 prints the previous value of a string field where
//!   the trace holds an empty string (a bug of that version, see
//!   `../shared/conformance/README.md`: three events of bug446190); such
//!   lines are taken from babeltrace 1.5, which prints `""` there, only
//!   where the two differ by exactly that (`fix_stale_strings`).
//!
//! A cut exactly at a packet boundary leaves a valid, shorter file: reef
//! cannot tell it from an intact one, so it must print the events of the
//! packets before the cut and exit 0.
//!
//! The seed is printed; `REEF_DAMAGED_SEED=N` reproduces a run,
//! `REEF_DAMAGED_CUTS=N` changes the number of cuts (200 per trace).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::{assert_no_crash, conformance, first_difference, Rng};

fn seed() -> u64 {
    std::env::var("REEF_DAMAGED_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_0021)
}

fn cuts_per_trace() -> usize {
    std::env::var("REEF_DAMAGED_CUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn babeltrace2(args: &[&str]) -> Output {
    Command::new("babeltrace2")
        .args(args)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("babeltrace2 is needed (scripts/install-deps.sh)")
}

fn reef(args: &[&str]) -> Output {
    common::reef(args)
}

fn lines(b: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(b)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A unique scratch directory.
fn scratch(what: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("reef-damaged-{}-{what}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copies the regular files of `from` (and its `index/` directory) to `to`.
fn copy_trace(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_trace(&p, &to.join(e.file_name()));
        } else {
            std::fs::write(to.join(e.file_name()), std::fs::read(&p).unwrap()).unwrap();
        }
    }
}

fn u32le(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn u64le(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(at..at + 8)?.try_into().ok()?))
}

const CTF_MAGIC: u32 = 0xC1FC_1FC1;

#[derive(Debug, Clone)]
struct Packet {
    /// Byte offset in the file, size in bytes.
    off: u64,
    size: u64,
    /// Offset in the packet of `content_size` (`packet_size` follows).
    sizes_at: usize,
    /// Events babeltrace2 printed from it.
    events: usize,
}

#[derive(Debug)]
struct StreamFile {
    name: String,
    data: Vec<u8>,
    packets: Vec<Packet>,
}

impl StreamFile {
    /// The packet holding byte `at`.
    fn packet_at(&self, at: u64) -> usize {
        self.packets
            .iter()
            .rposition(|p| p.off <= at)
            .expect("a packet at 0")
    }
}

/// A trace and what babeltrace2 says about it.
struct Prepared {
    label: &'static str,
    dir: PathBuf,
    /// babeltrace2's output on the intact trace.
    lines: Vec<String>,
    /// For each line: the stream file (index into `files`) and the rank
    /// of the event in that file.
    owner: Vec<(usize, usize)>,
    files: Vec<StreamFile>,
    /// The metadata for babeltrace2's reading of a cut packet alone.
    packet_metadata: Vec<u8>,
    kernel: bool,
}

/// The packets of `data`, from packet to packet (see the module doc).
fn walk_packets(name: &str, data: &[u8]) -> Vec<Packet> {
    let len = data.len() as u64;
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < len {
        let o = off as usize;
        assert_eq!(
            u32le(data, o),
            Some(CTF_MAGIC),
            "{name}: no packet magic at byte {off}"
        );
        let magic_at = |at: u64| at == len || u32le(data, at as usize) == Some(CTF_MAGIC);
        let found: Vec<(usize, u64)> = (16..256usize)
            .step_by(8)
            .filter_map(|p| {
                let size = u64le(data, o + p)?;
                let content = u64le(data, o + p - 8)?;
                let ok = size > 0
                    && size.is_multiple_of(8)
                    && off + size / 8 <= len
                    && magic_at(off + size / 8)
                    && content <= size
                    && content >= 8 * (p as u64 + 8);
                ok.then_some((p - 8, size / 8))
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{name}: packet at byte {off}: content_size/packet_size candidates {found:?}"
        );
        let (sizes_at, size) = found[0];
        out.push(Packet {
            off,
            size,
            sizes_at,
            events: 0,
        });
        off += size;
    }
    out
}

/// LTTng's packet index of a stream file: (offset, packet size in bytes).
fn lttng_index(path: &Path) -> Option<Vec<(u64, u64)>> {
    let d = std::fs::read(path).ok()?;
    let be32 = |at: usize| u32::from_be_bytes(d[at..at + 4].try_into().unwrap());
    let be64 = |at: usize| u64::from_be_bytes(d[at..at + 8].try_into().unwrap());
    assert_eq!(be32(0), 0xC1F1_DCC1, "{}: index magic", path.display());
    let entry = be32(12) as usize;
    let n = (d.len() - 16) / entry;
    Some(
        (0..n)
            .map(|i| {
                let e = 16 + i * entry;
                (be64(e), be64(e + 8) / 8)
            })
            .collect(),
    )
}

/// Reads babeltrace2's details of the intact trace: for each event, its
/// stream's file name, its packet (rank in the stream) and its name; and
/// the number of packets of each file.
#[allow(clippy::type_complexity)]
fn details(dir: &Path) -> (Vec<(String, usize, String)>, HashMap<String, usize>) {
    let out = babeltrace2(&["-c", "sink.text.details", &dir.to_string_lossy()]);
    assert!(out.status.success(), "babeltrace2 details failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stream_file: HashMap<String, String> = HashMap::new();
    let mut packets: HashMap<String, usize> = HashMap::new();
    let mut events = Vec::new();
    let mut it = text.lines();
    while let Some(l) = it.next() {
        let Some(rest) = l.strip_prefix("{Trace ") else {
            continue;
        };
        let stream = rest
            .rsplit_once("Stream ID ")
            .map(|(_, s)| s.trim_end_matches('}').to_string())
            .expect("stream id");
        let Some(kind) = it.next() else { break };
        if kind == "Stream beginning:" {
            for l in it.by_ref() {
                if let Some(p) = l.trim_start().strip_prefix("Name: ") {
                    let name = Path::new(p).file_name().unwrap().to_string_lossy();
                    stream_file.insert(stream.clone(), name.into_owned());
                    break;
                }
                if l.is_empty() {
                    break;
                }
            }
        } else if kind == "Packet beginning:" {
            *packets.entry(stream).or_default() += 1;
        } else if let Some(ev) = kind.strip_prefix("Event `") {
            let name = ev.split('`').next().unwrap().to_string();
            let file = stream_file[&stream].clone();
            events.push((file, packets[&stream] - 1, name));
        }
    }
    let per_file = packets
        .into_iter()
        .map(|(s, n)| (stream_file[&s].clone(), n))
        .collect();
    (events, per_file)
}

fn prepare(label: &'static str, dir: &Path) -> Prepared {
    let dir_s = dir.to_string_lossy().into_owned();
    let intact = babeltrace2(&[&dir_s]);
    assert!(intact.status.success(), "babeltrace2 on the intact {label}");
    let mut text_lines = lines(&intact.stdout);
    let stale = fix_stale_strings(&mut text_lines, dir);
    let (events, packets_per_file) = details(dir);
    assert_eq!(
        events.len(),
        text_lines.len(),
        "{label}: details and pretty output disagree on the number of events"
    );
    // The metadata declares content_size then packet_size, 64-bit.
    let tsdl =
        String::from_utf8_lossy(&babeltrace2(&["-o", "ctf-metadata", &dir_s]).stdout).into_owned();
    let squeezed: String = tsdl.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        squeezed.contains("uint64_t content_size; uint64_t packet_size;"),
        "{label}: the packet context does not declare content_size then packet_size as uint64_t"
    );
    let u64_decl = squeezed
        .split(';')
        .map(str::trim)
        .collect::<Vec<_>>()
        .windows(4)
        .any(|w| {
            w[0].ends_with("typealias integer { size = 64")
                && w[1].starts_with("align = ")
                && w[2] == "signed = false"
                && w[3] == "} := uint64_t"
        });
    assert!(
        u64_decl && squeezed.contains("byte_order = le;"),
        "{label}: uint64_t is not a 64-bit unsigned integer of a little-endian trace"
    );
    let kernel = tsdl.contains("tracer_name = \"lttng-modules\"");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "metadata" && !n.starts_with('.'))
        .collect();
    names.sort();
    let mut files: Vec<StreamFile> = names
        .iter()
        .map(|n| {
            let data = std::fs::read(dir.join(n)).unwrap();
            let packets = walk_packets(n, &data);
            assert_eq!(
                packets.len(),
                packets_per_file.get(n).copied().unwrap_or(0),
                "{label}/{n}: packets found by the walk vs babeltrace2's packet beginnings"
            );
            if let Some(idx) = lttng_index(&dir.join("index").join(format!("{n}.idx"))) {
                let walked: Vec<(u64, u64)> = packets.iter().map(|p| (p.off, p.size)).collect();
                assert_eq!(walked, idx, "{label}/{n}: walk vs LTTng's index");
            }
            StreamFile {
                name: n.clone(),
                data,
                packets,
            }
        })
        .collect();
    let file_of: HashMap<String, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), i))
        .collect();
    let mut owner = Vec::new();
    let mut rank = vec![0usize; files.len()];
    for (i, (file, packet, name)) in events.iter().enumerate() {
        assert!(
            text_lines[i].contains(&format!(" {name}: ")),
            "{label}: line {} is not a `{name}` event: {}",
            i + 1,
            text_lines[i]
        );
        let f = file_of[file];
        files[f].packets[*packet].events += 1;
        owner.push((f, rank[f]));
        rank[f] += 1;
    }
    // babeltrace2's LTTng workarounds off for the packet-alone readings
    // (see the module doc); same length, so packetized metadata stays valid.
    let mut packet_metadata = std::fs::read(dir.join("metadata")).unwrap();
    for (from, to) in [
        (&b"\"lttng-modules\""[..], &b"\"lttng-modulez\""[..]),
        (b"\"lttng-ust\"", b"\"lttng-usz\""),
    ] {
        let mut i = 0;
        while let Some(p) = packet_metadata[i..]
            .windows(from.len())
            .position(|w| w == from)
        {
            packet_metadata[i + p..i + p + to.len()].copy_from_slice(to);
            i += p + 1;
        }
    }
    eprintln!(
        "{label}: {} events ({stale} with babeltrace 1.5's empty strings), {} stream files, {} packets",
        text_lines.len(),
        files.len(),
        files.iter().map(|f| f.packets.len()).sum::<usize>()
    );
    Prepared {
        label,
        dir: dir.to_path_buf(),
        lines: text_lines,
        owner,
        files,
        packet_metadata,
        kernel,
    }
}

/// Replaces in `lines` (babeltrace2 2.0.4's) the events where a string
/// field shows a stale value that babeltrace 1.5 prints as `""` (see the
/// module doc): a line babeltrace 1.5 does not print, for which it prints
/// a line of the same time and event that differs only by such fields.
/// Returns how many were replaced.
fn fix_stale_strings(text: &mut [String], dir: &Path) -> usize {
    let out = Command::new("babeltrace")
        .arg(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("babeltrace (1.5) is needed (scripts/install-deps.sh)");
    assert!(out.status.success(), "babeltrace 1.5 on {}", dir.display());
    let mut left: HashMap<String, usize> = HashMap::new();
    // (A string holding a newline is printed raw by babeltrace 1.5: its
    // pieces are no event lines.)
    for l in lines(&out.stdout).iter().filter(|l| l.starts_with('[')) {
        *left.entry(without_delta(l)).or_default() += 1;
    }
    let mut stale = Vec::new();
    for (i, l) in text.iter().enumerate() {
        match left.get_mut(&without_delta(l)) {
            Some(n) if *n > 0 => *n -= 1,
            _ => stale.push(i),
        }
    }
    // babeltrace 1.5's lines babeltrace2 does not print, by their first
    // field (time, trace, event name, first context field).
    let mut others: HashMap<String, Vec<String>> = HashMap::new();
    for (l, n) in left {
        let key = fields(&l)[0].clone();
        others
            .entry(key)
            .or_default()
            .extend(std::iter::repeat_n(l, n));
    }
    let mut fixed = 0;
    for i in stale {
        let l = without_delta(&text[i]);
        let a = fields(&l);
        let Some(candidates) = others.get_mut(&a[0]) else {
            continue;
        };
        let found = candidates.iter().position(|c| stale_of(&l, c));
        if let Some(k) = found {
            let c = candidates.remove(k);
            let close = text[i].find(']').unwrap();
            let delta_end = text[i][close..].find(") ").map_or(close, |d| close + d + 1);
            let rest = &c[c.find(']').unwrap() + 1..];
            text[i] = format!("{}{}", &text[i][..delta_end], rest);
            fixed += 1;
        }
    }
    fixed
}

/// The `, `-separated fields of a line.
fn fields(l: &str) -> Vec<String> {
    l.split(", ").map(str::to_string).collect()
}

/// Whether babeltrace2's line `x` is `y` but for string fields that show
/// a value where `y` shows `""` (babeltrace2 2.0.4's stale strings).
fn stale_of(x: &str, y: &str) -> bool {
    let stale_pair = |x: &str, y: &str| -> bool {
        let (Some((xn, xv)), Some((yn, yv))) = (x.split_once(" = \""), y.split_once(" = \""))
        else {
            return false;
        };
        let Some(after) = yv.strip_prefix('"') else {
            return false;
        };
        xn == yn && xv.len() > after.len() + 1 && xv.ends_with(&format!("\"{after}"))
    };
    let (a, b) = (fields(x), fields(y));
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x == y || stale_pair(x, y))
}

/// A pretty line's timestamp (ns of the day) and the text after `(+delta) `.
fn split_line(l: &str) -> (i64, &str) {
    let close = l.find(']').expect("a timestamp");
    let ts = &l[1..close];
    let (hms, frac) = ts.split_once('.').expect("ns");
    let mut it = hms.split(':').map(|v| v.parse::<i64>().unwrap());
    let (h, m, s) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    let ns = ((h * 60 + m) * 60 + s) * 1_000_000_000 + frac.parse::<i64>().unwrap();
    let rest = l[close + 1..].trim_start();
    let rest = match rest.strip_prefix("(+") {
        Some(r) => &r[r.find(") ").expect("delta") + 2..],
        None => rest,
    };
    (ns, rest)
}

/// The line without its `(+delta)` column.
fn without_delta(l: &str) -> String {
    let close = l.find(']').expect("a timestamp");
    format!("{} {}", &l[..=close], split_line(l).1)
}

/// `lines` as babeltrace2 prints them one after the other: the delta of
/// each from the one before (none for the first).
fn with_deltas(lines: &[&String]) -> String {
    let mut out = String::new();
    let mut prev: Option<i64> = None;
    for l in lines {
        let (mut ns, rest) = split_line(l);
        let close = l.find(']').unwrap();
        let delta = match prev {
            None => "+?.?????????".to_string(),
            Some(p) => {
                if ns < p {
                    ns += 86_400_000_000_000; // past midnight
                }
                let d = ns - p;
                format!("+{}.{:09}", d / 1_000_000_000, d % 1_000_000_000)
            }
        };
        prev = Some(ns % 86_400_000_000_000);
        out.push_str(&format!("{} ({delta}) {rest}\n", &l[..=close]));
    }
    out
}

/// What one cut should give.
struct Expected {
    lines: Vec<usize>,
    boundary: bool,
    /// Whether babeltrace2 read the cut packet alone (the cut is past its
    /// size fields), and how many of its events it printed.
    read: Option<usize>,
}

/// Decides, with babeltrace2, which events survive cutting file `f` at
/// byte `at` (see the module doc). Returns indexes into `p.lines`.
fn expected_for(p: &Prepared, f: usize, at: u64, work: &Path) -> Result<Expected, String> {
    let file = &p.files[f];
    let j = file.packet_at(at);
    let pk = &file.packets[j];
    let before: usize = file.packets[..j].iter().map(|q| q.events).sum();
    let boundary = at == pk.off;
    let rel = (at - pk.off) as usize;
    let mut read = None;
    let k = if boundary || rel < pk.sizes_at + 16 {
        // The cut is before the end of the packet's size fields: no event
        // of it lies before the cut.
        0
    } else {
        let dir = work.join("packet");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("metadata"), &p.packet_metadata).unwrap();
        let mut bytes = file.data[pk.off as usize..at as usize].to_vec();
        // The content ends at the cut, or before it when the cut falls in
        // the packet's padding.
        let bits = rel as u64 * 8;
        let content = u64le(&bytes, pk.sizes_at).unwrap_or(0).min(bits);
        bytes[pk.sizes_at..pk.sizes_at + 8].copy_from_slice(&content.to_le_bytes());
        bytes[pk.sizes_at + 8..pk.sizes_at + 16].copy_from_slice(&bits.to_le_bytes());
        std::fs::write(dir.join(&file.name), bytes).unwrap();
        let out = babeltrace2(&[&dir.to_string_lossy()]);
        let got = lines(&out.stdout);
        // babeltrace2's events of the packet alone are the first ones of
        // that packet in the intact output (the delta aside).
        let of_packet: Vec<&String> = p
            .lines
            .iter()
            .zip(&p.owner)
            .filter(|(_, &(o, r))| o == f && r >= before)
            .map(|(l, _)| l)
            .take(got.len().max(1))
            .collect();
        for (g, w) in got.iter().zip(&of_packet) {
            let (g, w) = (without_delta(g), without_delta(w));
            if g != w && !stale_of(&g, &w) {
                return Err(format!(
                    "{}/{} cut at {at}: babeltrace2 on the packet alone printed\n  {g}\nwhere the intact trace has\n  {w}",
                    p.label, file.name
                ));
            }
        }
        if got.len() > pk.events {
            return Err(format!(
                "{}/{} cut at {at}: babeltrace2 printed {} events of a packet of {}",
                p.label,
                file.name,
                got.len(),
                pk.events
            ));
        }
        read = Some(got.len());
        got.len()
    };
    let keep = before + k;
    Ok(Expected {
        lines: p
            .owner
            .iter()
            .enumerate()
            .filter(|(_, &(o, r))| o != f || r < keep)
            .map(|(i, _)| i)
            .collect(),
        boundary,
        read,
    })
}

/// The `events: N` line of `reef check`.
fn check_events(out: &Output) -> Option<usize> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("events: ")?.parse().ok())
}

/// Cuts one file of `p` at `at`, runs reef, compares. `deep`: more
/// commands and options.
/// Returns what kind of cut it was: 0 at a packet boundary, 1 before the
/// end of a packet's size fields, 2 after its last event (babeltrace2
/// printed all its events), 3 among its events.
fn run_cut(p: &Prepared, f: usize, at: u64, deep: bool, work: &Path) -> Result<usize, String> {
    let file = &p.files[f];
    let what = format!(
        "{}: {} cut at byte {at} of {}",
        p.label,
        file.name,
        file.data.len()
    );
    let exp = expected_for(p, f, at, work)?;
    let pk = &file.packets[file.packet_at(at)];
    let kind = match exp.read {
        _ if exp.boundary => 0,
        None => 1,
        Some(k) if k == pk.events => 2,
        Some(_) => 3,
    };
    let trace = work.join("trace");
    let _ = std::fs::remove_dir_all(&trace);
    copy_trace(&p.dir, &trace);
    std::fs::write(trace.join(&file.name), &file.data[..at as usize]).unwrap();
    let t = trace.to_string_lossy().into_owned();
    let want_lines: Vec<&String> = exp.lines.iter().map(|&i| &p.lines[i]).collect();
    let want = with_deltas(&want_lines);
    let want_status = if exp.boundary { 0 } else { 1 };
    let status_ok = |out: &Output, cmd: &str| -> Result<(), String> {
        assert_no_crash(&format!("{what}: {cmd}"), out)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(want_status) {
            return Err(format!(
                "{what}: {cmd} exited {:?}, expected {want_status}: {stderr}",
                out.status.code()
            ));
        }
        if want_status == 1 && !(stderr.contains(&file.name) && stderr.contains("at byte")) {
            return Err(format!(
                "{what}: {cmd}: the message does not name the file and offset: {stderr}"
            ));
        }
        Ok(())
    };
    let compare = |out: &Output, want: &str, cmd: &str| -> Result<(), String> {
        status_ok(out, cmd)?;
        if out.stdout != want.as_bytes() {
            let got = String::from_utf8_lossy(&out.stdout);
            let (n, g, w) = first_difference(&got, want);
            return Err(format!(
                "{what}: {cmd}: {} lines, expected {}; first difference at line {}:\n   got: {}\n  want: {}",
                got.lines().count(),
                want.lines().count(),
                n + 1,
                g.unwrap_or("<end>"),
                w.unwrap_or("<end>")
            ));
        }
        Ok(())
    };
    compare(&reef(&["print", &t]), &want, "print")?;
    let check = reef(&["check", &t]);
    status_ok(&check, "check")?;
    if check_events(&check) != Some(want_lines.len()) {
        return Err(format!(
            "{what}: check counts {:?} events, expected {}",
            check_events(&check),
            want_lines.len()
        ));
    }
    if !deep {
        return Ok(kind);
    }
    compare(&reef(&["print", "-j", "1", &t]), &want, "print -j 1")?;
    let stats = reef(&["stats", "--json", &t]);
    status_ok(&stats, "stats")?;
    let json: serde_json::Value =
        serde_json::from_slice(&stats.stdout).map_err(|e| format!("{what}: stats --json: {e}"))?;
    if json["events"].as_u64() != Some(want_lines.len() as u64) {
        return Err(format!(
            "{what}: stats counts {}, expected {}",
            json["events"],
            want_lines.len()
        ));
    }
    // A window in the middle of the intact trace: --begin and --end as
    // babeltrace2 takes them (times of day, UTC).
    let n = p.lines.len();
    let (b, e) = (&p.lines[n / 3], &p.lines[2 * n / 3]);
    let stamp = |l: &String| l[1..l.find(']').unwrap()].to_string();
    let (bs, es) = (stamp(b), stamp(e));
    let (bn, en) = (split_line(b).0, split_line(e).0);
    let window: Vec<&String> = want_lines
        .iter()
        .copied()
        .filter(|l| (bn..=en).contains(&split_line(l).0))
        .collect();
    let args = ["print", "--begin", &bs, "--end", &es, &t];
    compare(&reef(&args), &with_deltas(&window), "print --begin --end")?;
    let check = reef(&["check", "--begin", &bs, "--end", &es, &t]);
    status_ok(&check, "check --begin --end")?;
    if check_events(&check) != Some(window.len()) {
        return Err(format!(
            "{what}: check --begin --end counts {:?} events, expected {}",
            check_events(&check),
            window.len()
        ));
    }
    if p.kernel {
        status_ok(&reef(&["cputop", &t]), "cputop")?;
        status_ok(&reef(&["cputop", "--lami", &t]), "cputop --lami")?;
    }
    Ok(kind)
}

/// 200 cuts of the stream files of `p` (some near packet starts, where the
/// header and context are) and a cut at each packet boundary, two at a
/// time.
fn cut_streams(p: &Prepared, rng: &mut Rng) {
    let n = cuts_per_trace();
    let cuts: Vec<(usize, u64)> = (0..n)
        .map(|_| {
            let f = rng.below(p.files.len());
            let file = &p.files[f];
            let len = file.data.len() as u64;
            let at = if rng.below(8) == 0 {
                let pk = &file.packets[rng.below(file.packets.len())];
                pk.off + rng.below(160) as u64
            } else {
                rng.below(len as usize) as u64
            };
            (f, at.clamp(1, len - 1))
        })
        .collect();
    // And every packet boundary: a valid, shorter file.
    let mut cuts = cuts;
    for (f, file) in p.files.iter().enumerate() {
        cuts.extend(file.packets.iter().skip(1).map(|pk| (f, pk.off)));
    }
    let n = cuts.len();
    let failures = Mutex::new(Vec::new());
    let kinds = Mutex::new([0usize; 4]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for w in 0..2 {
            let (cuts, failures, next, kinds) = (&cuts, &failures, &next, &kinds);
            s.spawn(move || {
                let work = scratch(&format!("{}-w{w}", p.label));
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(f, at)) = cuts.get(i) else { break };
                    match run_cut(p, f, at, i % 8 == 0, &work) {
                        Ok(k) => kinds.lock().unwrap()[k] += 1,
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                }
                let _ = std::fs::remove_dir_all(&work);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let k = kinds.into_inner().unwrap();
    eprintln!(
        "{}: {} of {n} stream cuts as expected ({:.1} s): {} at a packet boundary, {} in a packet's header or context, {} after a packet's last event, {} among its events",
        p.label,
        n - failures.len(),
        started.elapsed().as_secs_f64(),
        k[0],
        k[1],
        k[2],
        k[3]
    );
    assert!(
        failures.is_empty(),
        "{} of {n} cuts failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The libreef trace, recorded once per test binary.
fn libreef_trace() -> PathBuf {
    static T: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let dir = scratch("libreef");
        // 600 rounds: three 64 KiB packets per thread.
        let st = Command::new("bash")
            .arg(root().join("tests/periods/record.sh"))
            .arg(&dir)
            .env("REEF_BIN", env!("CARGO_BIN_EXE_reef"))
            .arg("600")
            .status()
            .expect("bash");
        assert!(st.success(), "tests/periods/record.sh failed");
        dir.join("trace")
    })
    .clone()
}

fn kernel_trace() -> PathBuf {
    conformance().join("kernel-traces/bug446190")
}

#[test]
fn stream_files_cut_at_random_offsets() {
    let seed = seed();
    eprintln!("seed {seed} (REEF_DAMAGED_SEED={seed} reproduces this run)");
    let mut rng = Rng(seed);
    let kernel = prepare("lttng-kernel", &kernel_trace());
    let libreef = prepare("libreef", &libreef_trace());
    cut_streams(&kernel, &mut rng);
    cut_streams(&libreef, &mut rng);
}

/// Two files cut at once: both damages are reported, every other event
/// is printed.
#[test]
fn two_files_cut() {
    let p = prepare("lttng-kernel", &kernel_trace());
    let work = scratch("two");
    let trace = work.join("trace");
    copy_trace(&p.dir, &trace);
    let cuts = [(0usize, 100_001u64), (3, 50_003)];
    let mut keep = Vec::new();
    for &(f, at) in &cuts {
        let exp = expected_for(&p, f, at, &work).unwrap();
        std::fs::write(
            trace.join(&p.files[f].name),
            &p.files[f].data[..at as usize],
        )
        .unwrap();
        keep.push(exp.lines);
    }
    let want: Vec<&String> = (0..p.lines.len())
        .filter(|i| keep.iter().all(|k| k.binary_search(i).is_ok()))
        .map(|i| &p.lines[i])
        .collect();
    let out = reef(&["print", &trace.to_string_lossy()]);
    assert_no_crash("two cuts", &out).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for &(f, _) in &cuts {
        assert!(stderr.contains(&p.files[f].name), "{stderr}");
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), with_deltas(&want));
    let _ = std::fs::remove_dir_all(&work);
}

/// `text` without its `/* */` comments.
fn uncommented(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        match rest[i + 2..].find("*/") {
            Some(e) => rest = &rest[i + 2 + e + 2..],
            // An unterminated comment stays: it is text cut off.
            None => return out + &rest[i..],
        }
    }
    out.push_str(rest);
    out
}

/// Where each top-level declaration of TSDL `text` ends (after its `;`),
/// with its keyword and, for events, its name: braces counted outside
/// strings and comments.
fn declarations(text: &str) -> Vec<(usize, String, Option<String>)> {
    const KEYWORDS: [&str; 10] = [
        "trace",
        "stream",
        "event",
        "env",
        "clock",
        "typealias",
        "enum",
        "struct",
        "callsite",
        "typedef",
    ];
    let b = text.as_bytes();
    let (mut i, mut depth, mut start) = (0usize, 0i32, 0usize);
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 1);
            }
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b';' if depth == 0 => {
                let decl = uncommented(&text[start..=i]);
                let kw = decl
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .find(|w| KEYWORDS.contains(w))
                    .unwrap_or("")
                    .to_string();
                let name = (kw == "event").then(|| {
                    let n = &decl[decl.find("name = ").expect("event name") + 7..];
                    n[..n.find(';').unwrap()]
                        .trim()
                        .trim_matches('"')
                        .to_string()
                });
                out.push((i + 1, kw, name));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Metadata cut at random offsets. For libreef's plain-text metadata the
/// outcome is predicted from the declarations wholly before the cut
/// (counted by `declarations`, not by reef's parser): nothing can be read
/// before the stream class is whole; once it is, every event is printed
/// when the event classes the trace uses are all declared, else what
/// comes before an event of a missing class (a prefix of babeltrace2's
/// output). For LTTng's packetized metadata, whatever reef prints is a
/// prefix of babeltrace2's output, all of it when the metadata's cut is
/// the only error. Never a panic; exit 1 whenever something is missing.
#[test]
fn metadata_cut_at_random_offsets() {
    let seed = seed() ^ 0x4D45_5441;
    eprintln!("seed {seed}");
    let mut rng = Rng(seed);
    for (label, dir) in [
        ("libreef", libreef_trace()),
        ("lttng-kernel", kernel_trace()),
    ] {
        let intact = lines(&babeltrace2(&[&dir.to_string_lossy()]).stdout);
        let used: std::collections::BTreeSet<String> = intact
            .iter()
            .map(|l| {
                let r = split_line(l).1;
                let r = &r[r.find(' ').unwrap() + 1..];
                r[..r.find(": ").unwrap()].to_string()
            })
            .collect();
        let meta = std::fs::read(dir.join("metadata")).unwrap();
        let plain = !meta.starts_with(&[0x57, 0x1d, 0xd1, 0x75]);
        let decls = if plain {
            declarations(&String::from_utf8_lossy(&meta))
        } else {
            Vec::new()
        };
        let work = scratch(&format!("meta-{label}"));
        let trace = work.join("trace");
        copy_trace(&dir, &trace);
        let t = trace.to_string_lossy().into_owned();
        // Random cuts, and one inside the declaration that follows the
        // last event class the trace uses (when one follows): every event
        // must be printed, the cut reported.
        let find = |from: usize, what: &[u8]| {
            meta[from..]
                .windows(what.len())
                .position(|w| w == what)
                .map(|p| from + p)
        };
        let after_last_used = used
            .iter()
            .filter_map(|u| find(0, format!("name = \"{u}\";").as_bytes()))
            .max()
            .and_then(|p| find(p, b"event {"))
            .map(|p| p + 10);
        let n = 60;
        let mut cuts: Vec<usize> = (0..n).map(|_| 1 + rng.below(meta.len() - 1)).collect();
        cuts.extend(after_last_used);
        let mut full = 0;
        for (i, &at) in cuts.iter().enumerate() {
            std::fs::write(trace.join("metadata"), &meta[..at]).unwrap();
            let what = format!("{label}: metadata cut at byte {at} of {}", meta.len());
            let out = reef(&["print", &t]);
            assert_no_crash(&what, &out).unwrap();
            let got = lines(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                intact.starts_with(&got),
                "{what}: not a prefix of babeltrace2's output"
            );
            if got.len() == intact.len() {
                full += 1;
            }
            if plain {
                let text = String::from_utf8_lossy(&meta[..at]).into_owned();
                let whole: Vec<&(usize, String, Option<String>)> =
                    decls.iter().filter(|d| d.0 <= at).collect();
                let stream_whole = whole.iter().any(|d| d.1 == "stream");
                let declared: std::collections::BTreeSet<&str> =
                    whole.iter().filter_map(|d| d.2.as_deref()).collect();
                let all_declared = used.iter().all(|u| declared.contains(u.as_str()));
                // Cut between two declarations: a valid, shorter metadata
                // (reef cannot see the cut).
                let last_end = whole.last().map_or(0, |d| d.0);
                let between = uncommented(&text[last_end..]).trim().is_empty();
                let cut_msg = stderr.contains("the metadata ends inside a declaration");
                if !stream_whole {
                    assert!(
                        got.is_empty(),
                        "{what}: events printed without a stream class"
                    );
                    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                } else if all_declared && between {
                    assert!(out.status.success(), "{what}: {stderr}");
                    assert_eq!(got.len(), intact.len(), "{what}");
                } else if all_declared {
                    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                    assert_eq!(
                        got.len(),
                        intact.len(),
                        "{what}: every class used is declared: {stderr}"
                    );
                    assert!(cut_msg, "{what}: {stderr}");
                } else {
                    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                    assert!(got.len() < intact.len(), "{what}");
                    assert!(stderr.contains("is not declared"), "{what}: {stderr}");
                    assert_eq!(cut_msg, !between, "{what}: {stderr}");
                }
                continue;
            }
            if i == n {
                assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                assert_eq!(got.len(), intact.len(), "{what}: {stderr}");
                assert!(
                    stderr.contains("the metadata ends inside a declaration"),
                    "{what}: {stderr}"
                );
            }
            if out.status.success() {
                // Nothing read is missing: the cut fell in the padding of
                // the last metadata packet (or between declarations).
                assert_eq!(
                    got.len(),
                    intact.len(),
                    "{what}: exit 0 with events missing"
                );
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
            if stderr.lines().count() == 1 && stderr.contains("the metadata ends inside") {
                assert_eq!(
                    got.len(),
                    intact.len(),
                    "{what}: only the metadata's cut reported, events missing: {stderr}"
                );
            }
        }
        eprintln!(
            "{label}: {} metadata cuts, {full} with every event printed",
            cuts.len()
        );
        let _ = std::fs::remove_dir_all(&work);
    }
}
