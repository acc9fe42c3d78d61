//! `reef print --filter` against tests/filter/expected.py: the same
//! conditions written as Python predicates over babeltrace2's text.

mod intervals_common;

use std::path::Path;
use std::process::Command;

use intervals_common::*;

/// The events of a babeltrace2 / `reef print --clock-seconds --no-delta`
/// line list as `[time] trace name:` (what identifies each event; the
/// fields' text is `reef print`'s own business, tested elsewhere).
fn heads(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| l.find(": ").map_or(l, |i| &l[..i]))
        .collect()
}

fn check_trace(trace: &Path, tag: &str) -> usize {
    let dir = std::env::temp_dir().join(format!("reef-filter-{}-{tag}", std::process::id()));
    let st = Command::new("python3")
        .arg(root().join("tests/filter/expected.py"))
        .arg("filter")
        .arg(trace)
        .arg(&dir)
        .status()
        .expect("python3 (and babeltrace2) are needed: scripts/install-deps.sh");
    assert!(st.success());
    let mut selected = 0;
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "expr") {
            continue;
        }
        let expr = std::fs::read_to_string(&p).unwrap();
        let want = std::fs::read_to_string(p.with_extension("txt")).unwrap();
        let out = reef()
            .args(["print", "--clock-seconds", "--no-delta", "--filter", &expr])
            .arg(trace)
            .output()
            .unwrap();
        assert!(out.status.success(), "{expr}");
        let got = String::from_utf8(out.stdout).unwrap();
        let (g, w) = (heads(&got), heads(&want));
        assert_eq!(g.len(), w.len(), "{tag}: {expr}: number of events");
        assert_eq!(g, w, "{tag}: {expr}");
        selected += w.len();
        cases += 1;
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(cases >= 15);
    selected
}

#[test]
fn kernel_traces() {
    for t in ["bug446190", "uneven-streams"] {
        let n = check_trace(&kernel_dir().join(t), t);
        assert!(n > 10_000, "{t}: only {n} events selected in all");
    }
}

#[test]
fn libreef_pattern() {
    let (trace, _) = pattern();
    let n = check_trace(trace, "pattern");
    assert!(n > 300, "only {n} events selected in all");
}

#[test]
fn bad_expressions() {
    let t = kernel_dir().join("bug446190");
    let t = t.to_str().unwrap();
    for (e, col) in [
        ("$evt.$name == \"sched_*\" &&", 26),
        ("prev_tid > 0 & next_tid", 13),
        ("(a == 1", 7),
        ("a == \"x", 5),
        ("\"a\" + 1 == 2", 0),
        ("$begin.$evt.a == 1", 0),
        ("$evt.$pkt_header.magic == 1", 0),
        ("a.b == 1", 0),
    ] {
        bad_expression(&["print", "--filter", e, t], e, col);
        bad_expression(&["stats", "--filter", e, t], e, col);
    }
}
