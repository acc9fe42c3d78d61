//! Robustness: corrupt the conformance traces (bit flips, truncation, huge
//! length and size fields, metadata numbers made enormous) and read them the
//! way `reef print` does. Every run must end with a clean success or an
//! error — never a panic — and the peak heap use of a run must stay far
//! below what honouring a corrupted length field would take.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;

use common::Rng;
use reef_ctf::Item;
use reef_print::{Options, Pretty};

/// Counts live and peak heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            if new > l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

fn conformance() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance")
}

/// Reads every trace under `dir` as `reef print -j 1` does (through
/// `reef_read::Source`, so that a damaged trace is read up to its damage
/// and reported at the end), output discarded. Returns the number of
/// events printed, or the error message.
fn read_all(dir: &Path) -> Result<u64, String> {
    let mut opts = reef_read::ReadOptions::new([dir.to_path_buf()]);
    opts.workers = Some(1);
    let mut src = reef_read::Source::open(&opts).map_err(|e| e.to_string())?;
    let mut pretty = Pretty::new(Options {
        clock: reef_print::ClockOptions {
            delta: true,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut buf = Vec::new();
    let mut n = 0;
    while let Some(m) = src.next().map_err(|e| e.to_string())? {
        buf.clear();
        match m.item {
            Item::Event => {
                pretty.event(&mut buf, m.label, m.cursor, m.ns);
                n += 1;
            }
            other => pretty.discarded(&mut buf, m.label, m.cursor, other, false),
        }
    }
    Ok(n)
}

fn copy_dir(src: &Path, dst: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dst).unwrap();
    let mut files = Vec::new();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            let to = dst.join(e.file_name());
            std::fs::copy(e.path(), &to).unwrap();
            files.push(to);
        }
    }
    files.sort();
    files
}

/// Applies one random corruption to one file of the trace copy.
fn mutate(rng: &mut Rng, files: &[PathBuf]) -> String {
    let f = &files[rng.below(files.len())];
    let mut bytes = std::fs::read(f).unwrap();
    let name = f.file_name().unwrap().to_string_lossy().into_owned();
    if bytes.is_empty() {
        return format!("{name}: empty, untouched");
    }
    let is_text_metadata = name == "metadata" && bytes.starts_with(b"/* CTF");
    let what = match rng.below(if is_text_metadata { 5 } else { 4 }) {
        0 => {
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            format!("{flips} bit flip(s)")
        }
        1 => {
            let len = rng.below(bytes.len());
            bytes.truncate(len);
            format!("truncated to {len}")
        }
        2 => {
            // A huge length / size field: 0xFF.. over 4 or 8 aligned bytes.
            let w = if rng.below(2) == 0 { 4 } else { 8 };
            let at = rng.below(bytes.len()) & !(w - 1);
            for b in bytes.iter_mut().skip(at).take(w) {
                *b = 0xff;
            }
            format!("0xff x{w} at {at}")
        }
        3 => {
            let at = rng.below(bytes.len()) & !3;
            let v = (rng.next_u64() as u32).to_le_bytes();
            for (b, v) in bytes.iter_mut().skip(at).zip(v) {
                *b = v;
            }
            format!("random u32 at {at}")
        }
        _ => {
            // Metadata: turn one number into a huge one.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let digits: Vec<usize> = text
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if digits.is_empty() {
                return format!("{name}: no number");
            }
            let at = digits[rng.below(digits.len())];
            let huge = [
                "4294967295",
                "18446744073709551615",
                "99999999999999999999999",
                "0",
            ][rng.below(4)];
            let mut t = text[..at].to_string();
            t.push_str(huge);
            t.push_str(&text[at..]);
            bytes = t.into_bytes();
            format!("number {huge} inserted at {at}")
        }
    };
    std::fs::write(f, &bytes).unwrap();
    format!("{name}: {what}")
}

#[test]
fn corrupted_traces_never_panic_nor_balloon() {
    let root = conformance();
    let mut sources: Vec<PathBuf> = Vec::new();
    for d in [
        root.join("babeltrace-traces/succeed"),
        root.join("ctf-testsuite-1.8/stream/pass"),
    ] {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            // Single-directory traces only (multi-domain ones nest).
            if p.join("metadata").is_file() {
                sources.push(p);
            }
        }
    }
    sources.sort();
    assert!(sources.len() > 30, "found only {} traces", sources.len());

    // Silence the default panic message; panics are collected instead.
    std::panic::set_hook(Box::new(|_| {}));
    let tmp = std::env::temp_dir().join(format!("reef-mutation-{}", std::process::id()));
    let per_trace: usize = std::env::var("REEF_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut ok, mut errors, mut runs) = (0, 0, 0);
    let mut problems = Vec::new();
    for src in &sources {
        let size: usize = std::fs::read_dir(src)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len() as usize)
            .sum();
        for k in 0..per_trace {
            let dst = tmp.join(format!(
                "{}-{k}",
                src.file_name().unwrap().to_string_lossy()
            ));
            let files = copy_dir(src, &dst);
            let what = mutate(&mut rng, &files);
            let base = LIVE.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let r = std::panic::catch_unwind(|| read_all(&dst));
            let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
            runs += 1;
            match r {
                Err(_) => problems.push(format!("{}: PANIC after {what}", src.display())),
                Ok(Ok(_)) => ok += 1,
                Ok(Err(msg)) => {
                    errors += 1;
                    if msg.trim().is_empty() {
                        problems.push(format!("{}: empty error after {what}", src.display()));
                    }
                }
            }
            // Peak heap of one run: bounded by a constant plus a small
            // multiple of the trace's own size, never by a corrupted field.
            let limit = (16 << 20) + 16 * size;
            if peak > limit {
                problems.push(format!(
                    "{}: peak heap {peak} bytes (limit {limit}) after {what}",
                    src.display()
                ));
            }
            let _ = std::fs::remove_dir_all(&dst);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::panic::take_hook();
    println!("mutation runs: {runs}, clean successes: {ok}, clean errors: {errors}");
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
