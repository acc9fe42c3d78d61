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
