//! Each analysis on the kernel traces of ../shared/conformance/kernel-traces
//! against lttng-analyses 0.6.1's own LAMI output on the same traces
//! (tests/analyses/references/, made by tests/analyses/make-references.sh
//! with lttng-analyses itself): every cell compared, integers exactly,
//! non-integer numbers to 1e-9 relative.

use std::path::{Path, PathBuf};

use reef_analyses::cputop::Cputop;
use reef_analyses::irqstats::Irqstats;
use reef_analyses::lami::{results_json, Table};
use reef_analyses::memtop::Memtop;
use reef_analyses::schedstats::{Groups, Schedstats};
use reef_analyses::syscallstats::Syscallstats;
use reef_analyses::Analysis;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trace_dir(name: &str) -> PathBuf {
    root()
        .join("../shared/conformance/kernel-traces")
        .join(name)
}

/// Through the library's driver, as every front end runs an analysis:
/// the stream intersection, the whole trace.
fn run<A: Analysis>(dir: &Path, a: A) -> Value {
    let read = reef_read::ReadOptions::new([dir]);
    let (tables, stopped): (Vec<Table>, _) = reef_analyses::analyse(&read, a, true).unwrap();
    assert!(stopped.is_none(), "{}: {stopped:?}", dir.display());
    results_json(&tables)
}

/// Compares `got` with `want`, collecting differences with their JSON path.
fn compare(path: &str, got: &Value, want: &Value, diffs: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in w.keys().chain(g.keys().filter(|k| !w.contains_key(*k))) {
                match (g.get(k), w.get(k)) {
                    (Some(gv), Some(wv)) => compare(&format!("{path}.{k}"), gv, wv, diffs),
                    (None, _) => diffs.push(format!("{path}.{k}: missing")),
                    (_, None) => diffs.push(format!("{path}.{k}: unexpected")),
                }
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            if g.len() != w.len() {
                diffs.push(format!("{path}: {} items, want {}", g.len(), w.len()));
            }
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                compare(&format!("{path}[{i}]"), gv, wv, diffs);
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            let ok = match (w.as_i64(), g.as_i64()) {
                // Counts, durations and timestamps: exact.
                (Some(wi), Some(gi)) => wi == gi,
                (Some(_), None) => false,
                _ => {
                    let (gf, wf) = (g.as_f64().unwrap(), w.as_f64().unwrap());
                    let scale = wf.abs().max(f64::MIN_POSITIVE);
                    (gf - wf).abs() / scale <= 1e-9
                }
            };
            if !ok {
                diffs.push(format!("{path}: {g}, want {w}"));
            }
        }
        _ => {
            if got != want {
                diffs.push(format!("{path}: {got}, want {want}"));
            }
        }
    }
}

fn check<A: Analysis>(trace: &str, analysis: &str, a: A) {
    let dir = trace_dir(trace);
    assert!(
        dir.exists(),
        "{} missing (the shared conformance data)",
        dir.display()
    );
    let reference = root().join(format!("tests/analyses/references/{trace}.{analysis}.json"));
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&reference).unwrap()).unwrap();
    let got = run(&dir, a);
    let mut diffs = Vec::new();
    compare("", &got, &want, &mut diffs);
    let n = want["results"].as_array().map_or(0, |r| r.len());
    assert!(
        diffs.is_empty(),
        "{trace} {analysis}: {} differences from lttng-analyses, e.g.:\n{}",
        diffs.len(),
        diffs[..diffs.len().min(20)].join("\n")
    );
    eprintln!("{trace} {analysis}: {n} tables identical");
}

#[test]
fn cputop_uneven_streams() {
    check("uneven-streams", "cputop", Cputop::new(10));
}

#[test]
fn cputop_bug446190() {
    check("bug446190", "cputop", Cputop::new(10));
}

#[test]
fn syscallstats_uneven_streams() {
    check("uneven-streams", "syscallstats", Syscallstats::new());
}

#[test]
fn syscallstats_bug446190() {
    check("bug446190", "syscallstats", Syscallstats::new());
}

#[test]
fn irqstats_uneven_streams() {
    check("uneven-streams", "irqstats", Irqstats::new());
}

#[test]
fn irqstats_bug446190() {
    check("bug446190", "irqstats", Irqstats::new());
}

const ALL: Groups = Groups {
    total: true,
    per_tid: true,
    per_prio: true,
};

#[test]
fn schedstats_uneven_streams() {
    check("uneven-streams", "schedstats", Schedstats::new(ALL));
}

#[test]
fn schedstats_bug446190() {
    check("bug446190", "schedstats", Schedstats::new(ALL));
}

#[test]
fn memtop_uneven_streams() {
    check("uneven-streams", "memtop", Memtop::new(10));
}

#[test]
fn memtop_bug446190() {
    check("bug446190", "memtop", Memtop::new(10));
}

#[test]
fn iolatency_uneven_streams() {
    check(
        "uneven-streams",
        "iolatency",
        reef_analyses::io::Io::new(reef_analyses::io::Mode::Stats),
    );
}

#[test]
fn iolatency_bug446190() {
    check(
        "bug446190",
        "iolatency",
        reef_analyses::io::Io::new(reef_analyses::io::Mode::Stats),
    );
}
