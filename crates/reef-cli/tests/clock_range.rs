//! A clock whose offset puts event times past the 64-bit range of
//! nanoseconds from the origin: babeltrace2 refuses the stream ("Cannot
//! convert clock cycles to nanoseconds from origin") and prints nothing;
//! every reef reader stops with an error naming the file and offset,
//! rather than printing events without a time.

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_no_crash, conformance, reef};

fn copy_with_offset(dir: &Path, offset_s: &str) {
    let from = conformance().join("babeltrace-traces/succeed/barectf-event-before-packet");
    std::fs::create_dir_all(dir).unwrap();
    for f in ["metadata", "stream"] {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    let meta = std::fs::read_to_string(dir.join("metadata")).unwrap();
    let line = meta
        .lines()
        .find(|l| l.trim_start().starts_with("offset_s = "))
        .expect("the trace's clock has an offset_s");
    let patched = meta.replace(line, &format!("\toffset_s = {offset_s};"));
    std::fs::write(dir.join("metadata"), patched).unwrap();
}

#[test]
fn times_past_the_range_are_an_error_as_in_babeltrace2() {
    let dir = std::env::temp_dir().join(format!("reef-clock-range-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_with_offset(&dir, "9795461114");
    let t = dir.to_str().unwrap();
    // The independent reference, when babeltrace2 is there (CI installs it).
    if let Ok(bt) = Command::new("babeltrace2").arg(t).output() {
        assert!(
            !bt.status.success(),
            "babeltrace2 reads it: the test's premise fails"
        );
        assert!(bt.stdout.is_empty(), "babeltrace2 printed events");
    }
    for args in [
        vec!["print", t],
        vec!["print", "-j", "1", t],
        vec!["print", "-j", "4", t],
        vec!["check", t],
        vec!["stats", t],
        vec!["cputop", t],
    ] {
        let out = reef(&args);
        let what = args.join(" ");
        assert_no_crash(&what, &out).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.contains("stream: at byte ") && err.contains("cannot convert clock cycles"),
            "{what}: {err}"
        );
        if args[0] == "print" {
            assert!(
                out.stdout.is_empty(),
                "{what} printed events without a time"
            );
        }
    }
    // The same trace with its own offset reads as before.
    copy_with_offset(&dir, "1434072888");
    let out = reef(&["print", t]);
    assert!(out.status.success() && !out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
