//! `StreamCursor::place` / `go_to`: a cursor moved to a place taken
//! before any item of a stream reads the same events from there as the
//! cursor that took it (class, time, offset, values), over every trace of
//! the shared conformance material that opens (LTTng kernel and user
//! space traces, barectf's, the CTF test suite's).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reef_ctf::{Item, Place, StreamCursor, Trace};

fn trace_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            trace_dirs(&p, out);
        } else if p.file_name().is_some_and(|n| n == "metadata") {
            if let Some(d) = p.parent() {
                out.push(d.to_path_buf());
            }
        }
    }
}

/// An event as compared: class, time, offset and values.
fn summary(c: &StreamCursor) -> String {
    format!(
        "{} {:?} {} {:?}",
        c.event.event, c.event.ts, c.event.offset, c.event.values
    )
}

/// The events of `c` from where it stands to the end or the first error.
fn rest(c: &mut StreamCursor) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(Some(item)) = c.next() {
        if item == Item::Event {
            out.push(summary(c));
        }
    }
    out
}

#[test]
fn going_back_to_a_place_reads_the_same_events() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance");
    let mut dirs = Vec::new();
    trace_dirs(&root, &mut dirs);
    assert!(!dirs.is_empty(), "no trace under {}", root.display());
    let (mut traces, mut places_tried) = (0, 0);
    let mut inside = 0;
    for dir in dirs {
        let Ok(trace) = Trace::open(&dir) else {
            continue;
        };
        let trace = Arc::new(trace);
        traces += 1;
        for source in 0..trace.sources.len() {
            // Every item, with the place before it.
            let mut c = StreamCursor::new(trace.clone(), source);
            let mut seen: Vec<(Place, Option<String>)> = Vec::new();
            loop {
                let place = c.place();
                match c.next() {
                    Ok(Some(Item::Event)) => seen.push((place, Some(summary(&c)))),
                    Ok(Some(_)) => seen.push((place, None)),
                    Ok(None) => {
                        seen.push((c.place(), None));
                        break;
                    }
                    Err(_) => break,
                }
            }
            let events_from = |k: usize| -> Vec<String> {
                seen[k..].iter().filter_map(|(_, e)| e.clone()).collect()
            };
            if seen.is_empty() {
                continue;
            }
            // Places spread over the stream (all of them in short ones).
            let step = (seen.len() / 40).max(1);
            for k in (0..seen.len()).step_by(step).chain([seen.len() - 1]) {
                let place = seen[k].0;
                let mut d = StreamCursor::new(trace.clone(), source);
                d.go_to(&place).unwrap_or_else(|e| {
                    panic!("{} stream {source}: go_to({place:?}): {e}", dir.display())
                });
                let got = rest(&mut d);
                let want = match place {
                    Place::Ended => Vec::new(),
                    _ => events_from(k),
                };
                assert_eq!(
                    got,
                    want,
                    "{} stream {source}: events after item {k} ({place:?})",
                    dir.display()
                );
                places_tried += 1;
                if matches!(place, Place::At { .. }) && k > 0 {
                    inside += 1;
                }
            }
        }
    }
    assert!(traces >= 20, "only {traces} traces opened");
    assert!(inside >= 100, "only {inside} places inside packets");
    eprintln!("{traces} traces, {places_tried} places ({inside} inside packets)");
}
