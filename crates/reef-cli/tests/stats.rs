//! `reef stats --json` against tests/filter/expected.py's counts over
//! babeltrace2's output (events per name and per thread, first/last time,
//! discarded events and packets from its warnings).

mod intervals_common;

use std::path::Path;
use std::process::Command;

use intervals_common::*;
use serde_json::Value;

fn check(trace: &Path) -> Value {
    let out = Command::new("python3")
        .arg(root().join("tests/filter/expected.py"))
        .arg("stats")
        .arg(trace)
        .output()
        .expect("python3 (and babeltrace2) are needed: scripts/install-deps.sh");
    assert!(out.status.success());
    let want: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = reef()
        .args(["stats", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(out.status.success());
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = trace.display();
    for k in [
        "events",
        "first_ns",
        "last_ns",
        "discarded_events",
        "discarded_packets",
    ] {
        assert_eq!(got[k], want[k], "{t}: {k}");
    }
    let names = want["names"].as_object().unwrap();
    let rows = got["event_names"].as_array().unwrap();
    assert_eq!(rows.len(), names.len(), "{t}: event names");
    for r in rows {
        assert_eq!(
            r["count"],
            names[r["name"].as_str().unwrap()],
            "{t}: {}",
            r["name"]
        );
    }
    let sum: u64 = got["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["events"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(sum), got["events"].as_u64(), "{t}: streams add up");
    got
}

#[test]
fn kernel_traces() {
    for t in ["bug446190", "uneven-streams"] {
        let got = check(&kernel_dir().join(t));
        // Per CPU: LTTng kernel streams carry cpu_id in the packet context.
        for s in got["streams"].as_array().unwrap() {
            assert!(s["cpu_id"].is_u64(), "{t}: {s}");
        }
    }
}

#[test]
fn discarded_events_and_packets() {
    let bt = root().join("../shared/conformance/babeltrace-traces");
    let got = check(&bt.join("packet-seq-num/2-streams-lost-in-1"));
    assert_eq!(got["discarded_packets"], 2);
    let got = check(&bt.join("succeed/ev-disc-no-ts-begin-end"));
    assert_eq!(got["discarded_events"], 17);
}

#[test]
fn libreef_threads() {
    let (trace, _) = pattern();
    let got = check(trace);
    let out = Command::new("python3")
        .arg(root().join("tests/filter/expected.py"))
        .arg("stats")
        .arg(trace)
        .output()
        .unwrap();
    let want: Value = serde_json::from_slice(&out.stdout).unwrap();
    let threads = got["threads"].as_array().unwrap();
    // pattern.c: 3 threads, 602 events each (50 rounds of 12, plus 2).
    assert_eq!(threads.len(), 3);
    for t in threads {
        assert_eq!(t["events"], 602);
        assert_eq!(t["events"], want["threads"][t["tid"].to_string()]);
    }
}

/// A stream corrupted in the middle of a packet: the statistics of what was
/// read are printed, then the error (naming the file), exit status 1.
#[test]
fn corrupted_trace_reports_what_was_read() {
    let dir = corrupted_copy("stats");
    let out = reef().args(["stats", "--json"]).arg(&dir).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("channel0_1"), "{err}");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = got["events"].as_u64().unwrap();
    assert!(n > 1000 && n < 31556, "{n} events");
}
