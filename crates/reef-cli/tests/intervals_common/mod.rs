//! Shared by the `periods` and `activities` tests: runs `reef` on a case
//! made by tests/periods/reference.py (babeltrace2's text + an independent
//! Python implementation of the pairing rules) and compares.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn kernel_dir() -> PathBuf {
    root().join("../shared/conformance/kernel-traces")
}

pub fn reef() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reef"))
}

/// The committed expectations for the kernel traces.
pub fn kernel_cases() -> Value {
    let p = root().join("tests/periods/expected/kernel.json");
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// Records tests/periods/pattern.c once per test binary and computes its
/// expectations with reference.py; returns (trace dir, cases).
pub fn pattern() -> &'static (PathBuf, Value) {
    static P: OnceLock<(PathBuf, Value)> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "reef-pattern-{}-{}",
            std::process::id(),
            std::thread::current()
                .name()
                .unwrap_or("t")
                .replace("::", "-")
        ));
        let st = Command::new("bash")
            .arg(root().join("tests/periods/record.sh"))
            .arg(&dir)
            .env("REEF_BIN", env!("CARGO_BIN_EXE_reef"))
            .status()
            .expect("bash");
        assert!(st.success(), "tests/periods/record.sh failed");
        let trace = dir.join("trace");
        let out = Command::new("python3")
            .arg(root().join("tests/periods/reference.py"))
            .arg("pattern")
            .arg(&trace)
            .output()
            .expect("python3 (and babeltrace2) are needed: scripts/install-deps.sh");
        assert!(
            out.status.success(),
            "reference.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (trace, serde_json::from_slice(&out.stdout).unwrap())
    })
}

#[path = "../../../../tests/periods/log_hash.rs"]
mod log_hash;
use log_hash::log_hash;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Runs the case (its last argument is the trace, replaced by `trace`)
/// and compares log, statistics and unfinished counts. Returns reef's
/// JSON report.
pub fn check(name: &str, case: &Value, trace: &Path) -> Value {
    let mut args: Vec<String> = case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let last = args.len() - 1;
    if args[last].starts_with('-') || args.len() < 3 || !trace.ends_with(&args[last]) {
        args.push(trace.display().to_string());
    } else {
        args[last] = trace.display().to_string();
    }
    let out = reef()
        .args(&args)
        .args(["--log", "--stats", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: reef {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut log: Vec<(String, i64, i64, String)> = got["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_string(),
                i["begin_ns"].as_i64().unwrap(),
                i["end_ns"].as_i64().unwrap(),
                i["group"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    log.sort_by(|a, b| (a.1, a.2, &a.0, &a.3).cmp(&(b.1, b.2, &b.0, &b.3)));
    let exp = &case["log"];
    let as_tuple = |v: &Value| {
        (
            v[0].as_str().unwrap().to_string(),
            v[1].as_i64().unwrap(),
            v[2].as_i64().unwrap(),
            v[3].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        log.len() as u64,
        exp["count"].as_u64().unwrap(),
        "{name}: count"
    );
    let head: Vec<_> = exp["head"]
        .as_array()
        .unwrap()
        .iter()
        .map(as_tuple)
        .collect();
    let tail: Vec<_> = exp["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(as_tuple)
        .collect();
    assert_eq!(log[..head.len()], head[..], "{name}: first intervals");
    assert_eq!(
        log[log.len() - tail.len()..],
        tail[..],
        "{name}: last intervals"
    );
    assert_eq!(
        log_hash(&log),
        exp["hash"].as_u64().unwrap(),
        "{name}: log hash"
    );
    let stats = got["stats"].as_array().unwrap();
    let want = case["stats"].as_array().unwrap();
    assert_eq!(stats.len(), want.len(), "{name}: groups");
    for w in want {
        let g = stats
            .iter()
            .find(|s| s["name"] == w["name"] && s["group"] == w["group"])
            .unwrap_or_else(|| panic!("{name}: no group {} / {}", w["name"], w["group"]));
        for k in ["count", "min_ns", "max_ns", "total_ns"] {
            assert_eq!(
                g[k].as_i64(),
                w[k].as_i64(),
                "{name}: {k} of {}",
                w["group"]
            );
        }
        assert!(
            close(g["avg_ns"].as_f64().unwrap(), w["avg_ns"].as_f64().unwrap()),
            "{name}: avg"
        );
        match (g["stdev_ns"].as_f64(), w["stdev_ns"].as_f64()) {
            (Some(a), Some(b)) => assert!(close(a, b), "{name}: stdev {a} vs {b}"),
            (a, b) => assert_eq!(a, b, "{name}: stdev"),
        }
    }
    let mut unfinished = serde_json::Map::new();
    for (k, v) in got["unfinished"].as_object().unwrap() {
        if v.as_u64() != Some(0) {
            unfinished.insert(k.clone(), v.clone());
        }
    }
    assert_eq!(
        Value::Object(unfinished),
        case["unfinished"],
        "{name}: unfinished"
    );
    got
}

/// Runs reef with `args` and expects a usage error (exit 2) whose message
/// shows a caret under column `col` (0-based) of the expression.
pub fn bad_expression(args: &[&str], expr: &str, col: usize) {
    let out = reef().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start() == expr.trim_start() && l.ends_with(expr))
        .unwrap_or_else(|| panic!("expression not shown in {err}"));
    let caret = lines[i + 1];
    let indent = lines[i].len() - expr.len();
    assert_eq!(
        caret.trim_end(),
        format!("{}^", " ".repeat(indent + col)),
        "{err}"
    );
}

/// A copy of kernel trace bug446190 whose `channel0_1` holds an undeclared
/// event id in the middle of its first packet (after some 6000 events).
pub fn corrupted_copy(tag: &str) -> PathBuf {
    let src = kernel_dir().join("bug446190");
    let dir = std::env::temp_dir().join(format!("reef-cut-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        "metadata",
        "channel0_0",
        "channel0_1",
        "channel0_2",
        "channel0_3",
    ] {
        let mut data = std::fs::read(src.join(f)).unwrap();
        if f == "channel0_1" {
            data[100_000..100_064].fill(0xFF);
        }
        std::fs::write(dir.join(f), data).unwrap();
    }
    dir
}
