//! `reef periods` against tests/periods/reference.py (babeltrace2's text +
//! an independent implementation of the period rules).

mod intervals_common;

use intervals_common::*;

#[test]
fn kernel_traces() {
    let cases = kernel_cases();
    let mut n = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !name.starts_with("periods-") {
            continue;
        }
        let args = case["args"].as_array().unwrap();
        let trace = kernel_dir().join(args.last().unwrap().as_str().unwrap());
        check(name, case, &trace);
        n += 1;
    }
    assert_eq!(n, 4);
}

#[test]
fn libreef_pattern() {
    let (trace, cases) = pattern();
    let mut n = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !name.starts_with("periods-") {
            continue;
        }
        let got = check(name, case, trace);
        // Known by construction of pattern.c (3 threads, 50 rounds).
        let count = |p: &str, g: &str| {
            got["stats"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == p && s["group"] == g)
                .map(|s| s["count"].as_u64().unwrap())
        };
        match name.as_str() {
            "periods-nested" => {
                assert_eq!(count("sect", ""), Some(150));
                assert_eq!(count("sub", ""), Some(300));
                assert_eq!(count("sub", "d = 1"), Some(150));
                assert_eq!(count("sub", "d = 2"), Some(150));
            }
            "periods-rounds" => {
                assert_eq!(count("round", ""), Some(49));
                assert_eq!(got["unfinished"]["round"], 1);
            }
            "periods-strings" => {
                // 25 odd rounds per thread; the last has no next round.
                assert_eq!(count("lab", ""), Some(72));
                assert_eq!(got["unfinished"]["lab"], 3);
            }
            _ => {}
        }
        n += 1;
    }
    assert_eq!(n, 3);
}

#[test]
fn bad_expressions() {
    let t = kernel_dir().join("bug446190");
    let t = t.to_str().unwrap();
    let e = "x : $evt.$name == \"a\" : $evt.a ==";
    bad_expression(&["periods", "--period", e, t], e, e.len());
    let e = "x : $evt.$name == \"a\" : $parent.$begin.$evt.a == 1";
    bad_expression(&["periods", "--period", e, t], e, 24);
    let e = "y(nope) : $evt.$name == \"a\"";
    bad_expression(&["periods", "--period", e, t], e, 2);
    let e = "x : $begin.$evt.a == 1 && $evt.b = 2";
    bad_expression(&["periods", "--period", e, t], e, 33);
    let e = "x : $evt.$bogus.a == 1";
    bad_expression(&["periods", "--period", e, t], e, 9);
    let e = "nope : a = $evt.x";
    bad_expression(
        &[
            "periods",
            "--period",
            "x : a == 1",
            "--period-captures",
            e,
            t,
        ],
        e,
        0,
    );
}

#[test]
fn help_has_an_example() {
    let out = reef().args(["periods", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("reef periods --period"), "{help}");
}

/// Statistics, frequency distribution and top 10 against lttng-analyses
/// 0.6.1's own output (tests/periods/lttng-analyses/make-references.sh).
#[test]
fn lttng_analyses_references() {
    let dir = root().join("tests/periods/lttng-analyses");
    let load = |name: &str, tool: &str| -> serde_json::Value {
        let p = dir.join(format!("{name}.{tool}.json"));
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    for name in ["irq", "tick", "sys"] {
        let stats = load(name, "stats");
        let freq = load(name, "freq");
        let top = load(name, "top");
        let trace = kernel_dir().join(stats["trace"].as_str().unwrap());
        let out = reef()
            .args(["periods", "--period", stats["period"].as_str().unwrap()])
            .args(["--stats", "--freq", "--top", "10", "--json"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(out.status.success());
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // [name, count, min, avg, max, stdev, total]
        let want = &stats["rows"][0];
        let s = got["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == want[0] && s["group"] == "")
            .unwrap();
        assert_eq!(s["count"], want[1], "{name}: count");
        assert_eq!(s["min_ns"], want[2], "{name}: min");
        assert!(close(
            s["avg_ns"].as_f64().unwrap(),
            want[3].as_f64().unwrap()
        ));
        assert_eq!(s["max_ns"], want[4], "{name}: max");
        assert!(close(
            s["stdev_ns"].as_f64().unwrap(),
            want[5].as_f64().unwrap()
        ));
        assert_eq!(s["total_ns"], want[6], "{name}: total");
        // [lower ns, upper ns, count]
        let buckets = got["freq"][0][1].as_array().unwrap();
        let rows = freq["rows"].as_array().unwrap();
        assert_eq!(buckets.len(), rows.len(), "{name}: buckets");
        for (b, r) in buckets.iter().zip(rows) {
            assert!(close(
                b["lower_us"].as_f64().unwrap() * 1e3,
                r[0].as_f64().unwrap()
            ));
            assert!(close(
                b["upper_us"].as_f64().unwrap() * 1e3,
                r[1].as_f64().unwrap()
            ));
            assert_eq!(b["count"], r[2], "{name}: bucket {r}");
        }
        // [begin, end, duration, name, begin captures, end captures]
        let longest = got["top"].as_array().unwrap();
        let rows = top["rows"].as_array().unwrap();
        assert_eq!(longest.len(), rows.len(), "{name}: top");
        for (l, r) in longest.iter().zip(rows) {
            assert_eq!(l["begin_ns"], r[0], "{name}: top {r}");
            assert_eq!(l["end_ns"], r[1], "{name}: top {r}");
            assert_eq!(l["duration_ns"], r[2], "{name}: top {r}");
        }
    }
}

/// A decoding error ends the reading: the periods found until then are
/// reported, then the error, exit status 1.
#[test]
fn corrupted_trace_reports_what_was_read() {
    let dir = corrupted_copy("periods");
    let out = reef()
        .args(["periods", "--period"])
        .arg("irq : $name == \"irq_handler_entry\" : $name == \"irq_handler_exit\" && irq == $begin.$evt.irq")
        .args(["--log", "--stats", "--freq", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("channel0_1"));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = got["log"].as_array().unwrap().len();
    assert!(n > 0 && n < 1357, "{n} periods");
    assert_eq!(got["stats"][0]["count"], n);
}
