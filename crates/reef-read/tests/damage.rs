//! A damaged trace through the library: a copy of a shared kernel trace
//! with stream files cut inside a packet (events, then header), read by a
//! [`Source`]. The events before the cuts are given, the other streams
//! are read to their end, and the reading ends with an error naming
//! every cut (even when a window's end stops it first). Which events
//! those are is checked against babeltrace2 by `reef-cli`'s
//! `tests/damaged.rs`; here, the library's behaviour.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use reef_read::{Item, ReadOptions, Source};

fn kernel_trace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/kernel-traces/bug446190")
}

/// A copy of the trace with `cuts` (file name, length) applied.
fn cut_copy(name: &str, cuts: &[(&str, usize)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reef-read-damage-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(kernel_trace()).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let mut bytes = std::fs::read(&p).unwrap();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(&(_, len)) = cuts.iter().find(|c| c.0 == n) {
                bytes.truncate(len);
            }
            std::fs::write(dir.join(n), bytes).unwrap();
        }
    }
    dir
}

/// Events per stream file, and the error the reading ended with.
fn read(opts: &ReadOptions) -> (Vec<(String, u64)>, Option<String>) {
    let mut src = Source::open(opts).unwrap();
    let mut per_file: Vec<(String, u64)> = Vec::new();
    let mut last = i64::MIN;
    let stopped = src
        .for_each_event(|m, ns| {
            assert!(ns >= last, "merged in time order");
            last = ns;
            let f = m.cursor.file_path().unwrap().file_name().unwrap();
            let f = f.to_string_lossy().into_owned();
            match per_file.iter_mut().find(|(n, _)| *n == f) {
                Some((_, k)) => *k += 1,
                None => per_file.push((f, 1)),
            }
            Ok::<_, std::convert::Infallible>(ControlFlow::Continue(()))
        })
        .unwrap();
    per_file.sort();
    (per_file, stopped.map(|e| e.to_string()))
}

#[test]
fn cut_streams_end_at_their_last_complete_event() {
    let (intact, none) = read(&ReadOptions::new([kernel_trace()]));
    assert_eq!(none, None);
    // channel0_1 cut among the events of its first packet, channel0_2
    // inside the header of its first packet (nothing of it is left).
    let dir = cut_copy("two", &[("channel0_1", 100_000), ("channel0_2", 30)]);
    let (got, err) = read(&ReadOptions::new([&dir]));
    let err = err.expect("the damage is reported");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].ends_with(
            "channel0_1: at byte 0: the file ends inside this packet: 100000 of its 262144 bytes are present, \
             162144 missing; read up to its last complete event (4418 events of this packet, up to byte 99992); \
             ignored the 8 bytes after it, an incomplete event (a field of 32 bits, 0 left at the end of the file)"
        ),
        "{err}"
    );
    assert!(
        lines[1].ends_with(
            "channel0_2: at byte 0: the file ends inside this packet's header or context \
             (a field of 64 bits, 48 left at the end of the file): ignored its 30 bytes"
        ),
        "{err}"
    );
    // The other streams whole; channel0_1 up to its cut; channel0_2 gone.
    let count = |v: &[(String, u64)], f: &str| v.iter().find(|(n, _)| n == f).map_or(0, |x| x.1);
    for f in ["channel0_0", "channel0_3"] {
        assert_eq!(count(&got, f), count(&intact, f), "{f}");
    }
    assert_eq!(count(&got, "channel0_1"), 4418);
    assert_eq!(count(&got, "channel0_2"), 0);
    // A window ending before the cuts: the damage is still reported.
    let mut opts = ReadOptions::new([&dir]);
    opts.end = Some("1412670962".parse().unwrap());
    let (_, err) = read(&opts);
    assert!(err.is_some_and(|e| e.contains("channel0_1")));
    // A consumer that stops early is told too.
    let mut src = Source::open(&ReadOptions::new([&dir])).unwrap();
    let stopped = src
        .for_each_message(|m| {
            assert!(matches!(
                m.item,
                Item::Event | Item::DiscardedEvents { .. } | Item::DiscardedPackets { .. }
            ));
            Ok::<_, std::convert::Infallible>(ControlFlow::Break(()))
        })
        .unwrap();
    assert!(stopped.is_some_and(|e| e.to_string().contains("channel0_2")));
    assert_eq!(src.damage().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
