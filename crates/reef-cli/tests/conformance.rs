//! The CTF 1.8 conformance suite: `reef print` exits 0 on every pass case
//! and fails cleanly (non-zero, a message, no crash) on every fail case.

mod common;

use common::{assert_no_crash, conformance, reef};

#[test]
fn ctf_testsuite_1_8() {
    let root = conformance().join("ctf-testsuite-1.8");
    let mut failures = Vec::new();
    let mut total = 0;
    for kind in ["metadata", "stream"] {
        for verdict in ["pass", "fail"] {
            let dir = root.join(kind).join(verdict);
            let mut cases: Vec<_> = std::fs::read_dir(&dir)
                .expect("suite dir")
                .map(|e| e.expect("entry").path())
                .collect();
            cases.sort();
            for case in cases {
                total += 1;
                let what = format!(
                    "{kind}/{verdict}/{}",
                    case.file_name().unwrap().to_string_lossy()
                );
                let out = reef(&["print", &case.to_string_lossy()]);
                if let Err(e) = assert_no_crash(&what, &out) {
                    failures.push(e);
                    continue;
                }
                let stderr = String::from_utf8_lossy(&out.stderr);
                match (verdict, out.status.success()) {
                    ("pass", false) => failures.push(format!("{what}: failed: {stderr}")),
                    ("fail", true) => failures.push(format!("{what}: succeeded")),
                    ("fail", false) if stderr.trim().is_empty() => {
                        failures.push(format!("{what}: failed without a message"))
                    }
                    _ => {}
                }
            }
        }
    }
    assert_eq!(total, 181, "the suite should have 181 cases");
    assert!(
        failures.is_empty(),
        "{}/{total} passed; failures:\n{}",
        total - failures.len(),
        failures.join("\n")
    );
}
