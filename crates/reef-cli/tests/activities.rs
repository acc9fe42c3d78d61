//! `reef activities` against tests/periods/reference.py (babeltrace2's
//! text + an independent implementation of the pairing rules).

mod intervals_common;

use intervals_common::*;

#[test]
fn kernel_traces() {
    let cases = kernel_cases();
    let mut n = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !name.starts_with("activities-") {
            continue;
        }
        let args = case["args"].as_array().unwrap();
        let trace = kernel_dir().join(args.last().unwrap().as_str().unwrap());
        check(name, case, &trace);
        n += 1;
    }
    assert_eq!(n, 2);
}

#[test]
fn libreef_pattern() {
    let (trace, cases) = pattern();
    let mut n = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !name.starts_with("activities-") {
            continue;
        }
        let got = check(name, case, trace);
        let stats = got["stats"].as_array().unwrap();
        let all = stats.iter().find(|s| s["group"] == "").unwrap();
        // Known by construction of pattern.c (3 threads, 50 rounds).
        match name.as_str() {
            "activities-sections" => {
                assert_eq!(all["count"], 450);
                assert_eq!(stats.len(), 1 + 3, "one group per thread");
                assert_eq!(got["unfinished"][""], 3);
            }
            "activities-mutex" => {
                assert_eq!(all["count"], 300);
                assert_eq!(stats.len(), 1 + 2, "one group per mutex");
                assert_eq!(got["unfinished"][""], 0);
            }
            _ => unreachable!(),
        }
        n += 1;
    }
    assert_eq!(n, 2);
}

#[test]
fn bad_expressions() {
    let t = kernel_dir().join("bug446190");
    let t = t.to_str().unwrap();
    let e = "$evt.$name == \"a\" &&";
    bad_expression(
        &["activities", "--begin", e, "--end", "a == 1", t],
        e,
        e.len(),
    );
    let e = "$begin.$evt.a == 1";
    bad_expression(&["activities", "--begin", "a == 1", "--end", e, t], e, 0);
    let e = "irq,3";
    bad_expression(
        &[
            "activities",
            "--begin",
            "a == 1",
            "--end",
            "b == 1",
            "--key",
            e,
            t,
        ],
        e,
        4,
    );
}

#[test]
fn help_has_an_example() {
    let out = reef().args(["activities", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("reef activities --begin"), "{help}");
}
