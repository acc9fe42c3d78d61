//! `reef print` against babeltrace2 2.0.4's output on Babeltrace's test
//! traces (../shared/conformance/golden/index.tsv, generated with TZ=UTC).
//!
//! Where babeltrace2 failed, reef must fail too and print at least what
//! babeltrace2 printed (its text is a prefix of reef's): reef reads a
//! damaged trace up to the damage (a stream file cut inside a packet, see
//! `damaged.rs`) where babeltrace2 prints nothing. The rows where reef
//! prints more are listed on stderr (`--nocapture` shows them).

mod common;

use common::{assert_no_crash, conformance, first_difference, reef};

#[test]
fn golden_index() {
    let root = conformance();
    let index = std::fs::read_to_string(root.join("golden/index.tsv")).expect("index.tsv");
    let mut failures = Vec::new();
    let mut more_than_babeltrace2 = Vec::new();
    let mut rows = 0;
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [trace, options, exit, _events, golden] = cols[..] else {
            panic!("bad index row: {line}");
        };
        rows += 1;
        let trace_path = root.join("babeltrace-traces").join(trace);
        let mut args = vec!["print"];
        args.extend(options.split_whitespace());
        let tp = trace_path.to_string_lossy().into_owned();
        args.push(&tp);
        let out = reef(&args);
        let what = format!("{trace} [{options}]");
        if let Err(e) = assert_no_crash(&what, &out) {
            failures.push(e);
            continue;
        }
        let expected = std::fs::read(root.join(golden)).expect("golden file");
        let ok_exit = out.status.success();
        if trace == "succeed/meta-ctx-sequence" {
            // babeltrace2 2.0.4 aborts on this trace (a known bug); a
            // correct reader succeeds and prints its events — none, as its
            // only stream file is empty.
            if !ok_exit || !out.stdout.is_empty() {
                failures.push(format!(
                    "{what}: expected success with no event, got {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            continue;
        }
        if exit != "0"
            && !ok_exit
            && out.stdout.len() > expected.len()
            && out.stdout.starts_with(&expected)
        {
            let more = out.stdout[expected.len()..]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            let why = String::from_utf8_lossy(&out.stderr);
            more_than_babeltrace2.push(format!(
                "{what}: {more} more lines; reef: {}",
                why.trim_end()
            ));
            continue;
        }
        compare_row(&what, &out, ok_exit, exit, &expected, &mut failures);
    }
    assert!(rows >= 150, "index.tsv has only {rows} rows");
    eprintln!(
        "{} rows where babeltrace2 failed and reef prints more before failing too:\n{}",
        more_than_babeltrace2.len(),
        more_than_babeltrace2.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} of {rows} golden rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `reef print` against babeltrace2 2.1.2's output on CTF 2 traces
/// (../shared/conformance/ctf2/golden/index.tsv: Babeltrace's own CTF 2
/// test traces and CTF 2 conversions of its CTF 1.8 ones): the same
/// output byte for byte, and failure where babeltrace2 failed.
#[test]
fn golden_index_ctf2() {
    let root = conformance().join("ctf2");
    let index = std::fs::read_to_string(root.join("golden/index.tsv")).expect("ctf2 index.tsv");
    let mut failures = Vec::new();
    let mut rows = 0;
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [trace, options, exit, _events, golden] = cols[..] else {
            panic!("bad index row: {line}");
        };
        rows += 1;
        let trace_path = root.join("traces").join(trace);
        let mut args = vec!["print"];
        args.extend(options.split_whitespace());
        let tp = trace_path.to_string_lossy().into_owned();
        args.push(&tp);
        let out = reef(&args);
        let what = format!("{trace} [{options}]");
        if let Err(e) = assert_no_crash(&what, &out) {
            failures.push(e);
            continue;
        }
        let expected = std::fs::read(root.join(golden)).expect("golden file");
        compare_row(
            &what,
            &out,
            out.status.success(),
            exit,
            &expected,
            &mut failures,
        );
    }
    assert!(rows >= 150, "ctf2 index.tsv has only {rows} rows");
    assert!(
        failures.is_empty(),
        "{} of {rows} CTF 2 golden rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The exit status (success or not, as babeltrace2's `exit`) and the
/// output of one golden row; what differs goes to `failures`.
fn compare_row(
    what: &str,
    out: &std::process::Output,
    ok_exit: bool,
    exit: &str,
    expected: &[u8],
    failures: &mut Vec<String>,
) {
    if ok_exit != (exit == "0") {
        failures.push(format!(
            "{what}: exit {:?}, babeltrace2 exited {exit}; stderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    if out.stdout != expected {
        let got = String::from_utf8_lossy(&out.stdout);
        let want = String::from_utf8_lossy(expected);
        let (n, g, w) = first_difference(&got, &want);
        failures.push(format!(
            "{what}: output differs at line {}:\n   got: {}\n  want: {}",
            n + 1,
            g.unwrap_or("<end>").chars().take(300).collect::<String>(),
            w.unwrap_or("<end>").chars().take(300).collect::<String>()
        ));
    }
}
