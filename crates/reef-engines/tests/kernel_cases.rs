//! The activity and period engines, called as a library (no CLI), on the
//! two LTTng kernel traces of ../shared/conformance/kernel-traces, against
//! tests/periods/expected/kernel.json: the expectations that
//! tests/periods/reference.py derives from babeltrace2's text with its own
//! implementation of the pairing and period rules (committed; the CLI
//! tests check the same cases through `reef`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use reef_engines::activities::{Activities, ActivitySpec};
use reef_engines::intervals::{run, Interval, Report, ReportSpec};
use reef_engines::periods::{PeriodSpec, Periods};
use reef_read::ReadOptions;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

type Error = Box<dyn std::error::Error>;

/// The options of a case's command line (`activities|periods`, options,
/// then the trace's name).
fn options(args: &[String]) -> (BTreeMap<&str, Vec<String>>, PathBuf) {
    let mut opts: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut i = 1;
    while i + 1 < args.len() {
        opts.entry(args[i].as_str())
            .or_default()
            .push(args[i + 1].clone());
        i += 2;
    }
    let trace = root()
        .join("../shared/conformance/kernel-traces")
        .join(&args[args.len() - 1]);
    (opts, trace)
}

/// Runs the case through the engines, with the log collected.
fn run_case(args: &[String]) -> (Report, Vec<Interval>) {
    let (opts, trace) = options(args);
    let one = |k: &str| opts.get(k).map(|v| v[0].clone());
    let many = |k: &str| opts.get(k).cloned().unwrap_or_default();
    let read = ReadOptions {
        filter: one("--filter"),
        ..ReadOptions::new([trace])
    };
    let spec = ReportSpec {
        log: true,
        stats: true,
        ..Default::default()
    };
    let mut log = Vec::new();
    let keep = |iv: &Interval| {
        log.push(iv.clone());
        Ok(())
    };
    let report = if args[0] == "activities" {
        let a = ActivitySpec {
            begin: one("--begin").unwrap(),
            end: one("--end").unwrap(),
            key: one("--key"),
        };
        let out = run::<_, Error>(&read, &spec, |src| Ok(Activities::new(&a, src)?), keep).unwrap();
        assert!(out.stopped.is_none());
        out.report
    } else {
        let p = PeriodSpec {
            periods: many("--period"),
            captures: many("--period-captures"),
            group_by: many("--group-by"),
        };
        let out = run::<_, Error>(&read, &spec, |_| Ok(Periods::new(&p)?), keep).unwrap();
        assert!(out.stopped.is_none());
        out.report
    };
    (report, log)
}

#[path = "../../../tests/periods/log_hash.rs"]
mod log_hash;
use log_hash::log_hash;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn engines_match_the_independent_reference() {
    let path = root().join("tests/periods/expected/kernel.json");
    let cases: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut n = 0;
    for (name, case) in cases.as_object().unwrap() {
        let args: Vec<String> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let (report, log) = run_case(&args);
        let mut log: Vec<(String, i64, i64, String)> = log
            .into_iter()
            .map(|i| {
                assert_eq!(i.duration_ns, i.end_ns - i.begin_ns, "{name}");
                (i.name, i.begin_ns, i.end_ns, i.group)
            })
            .collect();
        log.sort_by(|a, b| (a.1, a.2, &a.0, &a.3).cmp(&(b.1, b.2, &b.0, &b.3)));
        let exp = &case["log"];
        assert_eq!(log.len() as u64, exp["count"].as_u64().unwrap(), "{name}");
        let tuple = |v: &Value| {
            (
                v[0].as_str().unwrap().to_string(),
                v[1].as_i64().unwrap(),
                v[2].as_i64().unwrap(),
                v[3].as_str().unwrap().to_string(),
            )
        };
        let head: Vec<_> = exp["head"].as_array().unwrap().iter().map(tuple).collect();
        assert_eq!(log[..head.len()], head[..], "{name}: first intervals");
        assert_eq!(log_hash(&log), exp["hash"].as_u64().unwrap(), "{name}");
        let want = case["stats"].as_array().unwrap();
        assert_eq!(report.stats.len(), want.len(), "{name}: groups");
        for w in want {
            let g = report
                .stats
                .iter()
                .find(|g| g.name == w["name"] && g.group == w["group"])
                .unwrap_or_else(|| panic!("{name}: no group {}", w["group"]));
            let s = &g.summary;
            assert_eq!(s.count, w["count"].as_u64().unwrap(), "{name}");
            assert_eq!(s.min_ns, w["min_ns"].as_i64().unwrap(), "{name}");
            assert_eq!(s.max_ns, w["max_ns"].as_i64().unwrap(), "{name}");
            assert_eq!(s.total_ns, w["total_ns"].as_i64().unwrap(), "{name}");
            assert!(close(s.avg_ns, w["avg_ns"].as_f64().unwrap()), "{name}");
            match (s.stdev_ns, w["stdev_ns"].as_f64()) {
                (Some(a), Some(b)) => assert!(close(a, b), "{name}: stdev {a} vs {b}"),
                (a, b) => assert_eq!(a, b, "{name}: stdev"),
            }
        }
        let unfinished: BTreeMap<String, u64> = report
            .unfinished
            .into_iter()
            .filter(|(_, v)| *v > 0)
            .collect();
        let want: BTreeMap<String, u64> =
            serde_json::from_value(case["unfinished"].clone()).unwrap();
        assert_eq!(unfinished, want, "{name}: unfinished");
        n += 1;
    }
    assert_eq!(n, 6);
}

/// The frequency distribution's second pass and the top N agree with the
/// log of the first pass (same engine, same trace).
#[test]
fn second_pass_and_top_agree_with_the_log() {
    let read = ReadOptions::new([root().join("../shared/conformance/kernel-traces/bug446190")]);
    let a = ActivitySpec {
        begin: r#"$name == "irq_handler_entry""#.into(),
        end: r#"$name == "irq_handler_exit""#.into(),
        key: Some("irq,cpu_id".into()),
    };
    let spec = ReportSpec {
        log: true,
        stats: true,
        freq: Some(7),
        top: Some(5),
    };
    let mut log: Vec<Interval> = Vec::new();
    let out = run::<_, Error>(
        &read,
        &spec,
        |src| Ok(Activities::new(&a, src)?),
        |iv| {
            log.push(iv.clone());
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(out.passes, 2);
    assert!(log.len() > 5);
    let freq = out.report.freq.unwrap();
    let total: u64 = freq[0].1.iter().map(|b| b.count).sum();
    assert_eq!((freq[0].1.len(), total), (7, log.len() as u64));
    let mut by_len = log.clone();
    by_len.sort_by(|x, y| (y.duration_ns, x.begin_ns).cmp(&(x.duration_ns, y.begin_ns)));
    assert_eq!(out.report.top.unwrap(), by_len[..5].to_vec());
}
