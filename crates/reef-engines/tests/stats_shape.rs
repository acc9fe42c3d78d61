//! The statistics and shape engines and the filtered reading, called as a
//! library (no CLI), against tests/filter/expected.py: counts computed
//! without reef from babeltrace2's text and warnings (babeltrace2 is
//! installed by scripts/install-deps.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

use reef_engines::{shape, stats};
use reef_read::{ReadOptions, Source};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn conformance(rel: &str) -> PathBuf {
    root().join("../shared/conformance").join(rel)
}

fn expected(args: &[&str], trace: &Path) -> std::process::Output {
    let out = Command::new("python3")
        .arg(root().join("tests/filter/expected.py"))
        .args(args.iter().take(1))
        .arg(trace)
        .args(args.iter().skip(1))
        .output()
        .expect("python3 and babeltrace2 are needed: scripts/install-deps.sh");
    assert!(
        out.status.success(),
        "expected.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const TRACES: [&str; 4] = [
    "kernel-traces/bug446190",
    "kernel-traces/uneven-streams",
    "babeltrace-traces/packet-seq-num/2-streams-lost-in-1",
    "babeltrace-traces/succeed/ev-disc-no-ts-begin-end",
];

#[test]
fn statistics_and_shapes_match_babeltrace2() {
    for rel in TRACES {
        let trace = conformance(rel);
        let want: Value = serde_json::from_slice(&expected(&["stats"], &trace).stdout).unwrap();
        let read = ReadOptions {
            workers: Some(1),
            ..ReadOptions::new([&trace])
        };
        let (st, stopped) = stats::collect(&mut Source::open(&read).unwrap());
        assert!(stopped.is_none(), "{rel}: {stopped:?}");
        let got = serde_json::to_value(&st).unwrap();
        for k in [
            "events",
            "first_ns",
            "last_ns",
            "discarded_events",
            "discarded_packets",
        ] {
            assert_eq!(got[k], want[k], "{rel}: {k}");
        }
        let names = want["names"].as_object().unwrap();
        assert_eq!(st.event_names.len(), names.len(), "{rel}");
        for n in &st.event_names {
            assert_eq!(Some(n.count), names[&n.name].as_u64(), "{rel}: {}", n.name);
        }
        // Decoded on 2 workers, the same statistics (trailing packets
        // without a message counted too).
        let two = ReadOptions {
            workers: Some(2),
            ..read.clone()
        };
        let (st2, _) = stats::collect(&mut Source::open(&two).unwrap());
        assert_eq!(serde_json::to_value(&st2).unwrap(), got, "{rel}: -j 2");
        // The shape, per stream on 1 and 2 workers, gives the same totals.
        for workers in [1, 2] {
            let src = Source::open(&read).unwrap();
            let (shapes, stopped) = shape::check(src, workers);
            assert!(stopped.is_none(), "{rel}: {stopped:?}");
            assert_eq!(shapes.len(), 1, "{rel}");
            let s = &shapes[0];
            assert_eq!(Some(s.events), want["events"].as_u64(), "{rel}");
            assert_eq!(s.first_ns, want["first_ns"].as_i64(), "{rel}");
            assert_eq!(s.last_ns, want["last_ns"].as_i64(), "{rel}");
            assert_eq!(Some(s.discarded_events), want["discarded_events"].as_u64());
            assert_eq!(
                Some(s.discarded_packets),
                want["discarded_packets"].as_u64()
            );
            assert_eq!(s.packets, st.packets, "{rel}: packets");
        }
    }
}

/// The event names of babeltrace2 lines `[time] (+delta) [host] name: ...`.
fn names_of(lines: &str) -> Vec<String> {
    lines
        .lines()
        .map(|l| {
            let name = l.split_whitespace().skip(2).find(|w| w.ends_with(':'));
            name.unwrap_or_default().trim_end_matches(':').to_string()
        })
        .collect()
}

#[test]
fn filtered_reading_keeps_what_babeltrace2s_text_selects() {
    let trace = conformance("kernel-traces/bug446190");
    let dir = std::env::temp_dir().join(format!("reef-engines-filter-{}", std::process::id()));
    expected(&["filter", dir.to_str().unwrap()], &trace);
    let mut cases = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "expr") {
            continue;
        }
        let expr = std::fs::read_to_string(&p).unwrap();
        let want = names_of(&std::fs::read_to_string(p.with_extension("txt")).unwrap());
        for workers in [1, 2] {
            let read = ReadOptions {
                filter: Some(expr.clone()),
                workers: Some(workers),
                ..ReadOptions::new([&trace])
            };
            let mut got = Vec::new();
            let stopped = Source::open(&read)
                .unwrap()
                .for_each_message(|m| {
                    if m.item == reef_read::Item::Event {
                        got.push(m.cursor.event_name().to_string());
                    }
                    Ok::<_, std::convert::Infallible>(std::ops::ControlFlow::Continue(()))
                })
                .unwrap();
            assert!(stopped.is_none());
            assert_eq!(got.len(), want.len(), "{expr}: events kept");
            let first_diff = got.iter().zip(&want).position(|(g, w)| g != w);
            assert_eq!(first_diff, None, "{expr}: names in order");
        }
        cases += 1;
    }
    assert!(cases >= 5, "{cases} cases");
    std::fs::remove_dir_all(&dir).ok();
}

/// A bad filter is a typed error that shows where it is wrong.
#[test]
fn bad_filter_is_an_error() {
    let read = ReadOptions {
        filter: Some("$evt.$name ==".into()),
        ..ReadOptions::new([conformance("kernel-traces/bug446190")])
    };
    match Source::open(&read) {
        Err(reef_read::Error::Filter(e)) => assert_eq!(e.err.pos, 13, "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
    let missing = ReadOptions::new(["/nonexistent"]);
    let e = Source::open(&missing).err().unwrap().to_string();
    assert_eq!(e, "/nonexistent: No such file or directory (os error 2)");
}
