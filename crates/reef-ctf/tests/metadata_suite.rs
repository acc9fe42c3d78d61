//! The TSDL parser against the conformance data: the CTF 1.8 test suite's
//! `metadata/{pass,fail}` cases, the stream `pass` cases, Babeltrace's own
//! test traces and the LTTng kernel traces.

use std::fs;
use std::path::{Path, PathBuf};

use reef_ctf::metadata::{metadata_text, parse_metadata, MetadataError};
use reef_ctf::Metadata;

const CONFORMANCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/conformance");

fn conformance(rel: &str) -> PathBuf {
    Path::new(CONFORMANCE).join(rel)
}

fn parse_file(path: &Path) -> Result<Metadata, MetadataError> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = metadata_text(&bytes)?;
    parse_metadata(&text)
}

/// Case directories (holding a `metadata` file) directly under `dir`.
fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("metadata").is_file())
        .collect();
    out.sort();
    out
}

/// Every `metadata` file below `dir`.
fn metadata_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            metadata_files(&p, out);
        } else if p.file_name().is_some_and(|n| n == "metadata") {
            out.push(p);
        }
    }
}

fn all_parse(files: &[PathBuf]) {
    assert!(!files.is_empty());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| parse_file(f).err().map(|e| format!("{}: {e}", f.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "failed to parse:\n{}",
        failures.join("\n")
    );
}

#[test]
fn ctf_testsuite_metadata_pass() {
    let files: Vec<PathBuf> = cases(&conformance("ctf-testsuite-1.8/metadata/pass"))
        .into_iter()
        .map(|c| c.join("metadata"))
        .collect();
    assert_eq!(files.len(), 53);
    all_parse(&files);
}

/// Fail cases that are accepted at the metadata level because their defect
/// only shows when decoding streams. (None at the moment.)
const FAIL_ACCEPTED: &[&str] = &[];

#[test]
fn ctf_testsuite_metadata_fail() {
    let dirs = cases(&conformance("ctf-testsuite-1.8/metadata/fail"));
    assert_eq!(dirs.len(), 78);
    let mut wrongly_accepted = Vec::new();
    for d in &dirs {
        let name = d.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let res = parse_file(&d.join("metadata"));
        match (&res, FAIL_ACCEPTED.contains(&name)) {
            (Ok(_), false) => wrongly_accepted.push(name.to_string()),
            (Err(e), true) => panic!("{name} is listed as accepted but fails: {e}"),
            _ => {}
        }
        if let Err(e) = &res {
            assert!(!e.message.is_empty());
        }
    }
    assert!(
        wrongly_accepted.is_empty(),
        "fail cases accepted: {wrongly_accepted:?}"
    );
}

#[test]
fn ctf_testsuite_stream_pass() {
    let files: Vec<PathBuf> = cases(&conformance("ctf-testsuite-1.8/stream/pass"))
        .into_iter()
        .map(|c| c.join("metadata"))
        .collect();
    all_parse(&files);
}

/// The stream `fail` cases have valid metadata: their defects are in the
/// stream data.
#[test]
fn ctf_testsuite_stream_fail_metadata_is_valid() {
    let files: Vec<PathBuf> = cases(&conformance("ctf-testsuite-1.8/stream/fail"))
        .into_iter()
        .map(|c| c.join("metadata"))
        .collect();
    all_parse(&files);
}

#[test]
fn babeltrace_succeed() {
    let mut files = Vec::new();
    metadata_files(&conformance("babeltrace-traces/succeed"), &mut files);
    all_parse(&files);
}

#[test]
fn babeltrace_other_valid_traces() {
    let mut files = Vec::new();
    for d in [
        "babeltrace-traces/intersection",
        "babeltrace-traces/packet-seq-num",
        "babeltrace-traces/deterministic-ordering",
        "babeltrace-traces/live",
    ] {
        metadata_files(&conformance(d), &mut files);
    }
    all_parse(&files);
}

#[test]
fn babeltrace_metadata_syntax_error() {
    let e = parse_file(&conformance(
        "babeltrace-traces/fail/metadata-syntax-error/metadata",
    ))
    .expect_err("metadata-syntax-error must fail");
    assert_eq!((e.line, e.column), (3, 58), "{e}");
}

#[test]
fn kernel_traces() {
    let mut files = Vec::new();
    metadata_files(&conformance("kernel-traces"), &mut files);
    all_parse(&files);
    for f in &files {
        let md = parse_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let events: usize = md.streams.iter().map(|s| s.events.len()).sum();
        assert!(events > 100, "{}: only {events} event classes", f.display());
    }
}
