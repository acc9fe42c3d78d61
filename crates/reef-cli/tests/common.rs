//! Shared helpers for the CLI's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// `../shared/conformance`, relative to the workspace root.
pub fn conformance() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance")
}

pub fn reef(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reef"))
        .args(args)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("run reef")
}

/// Checks that a finished reef process did not crash: no signal, no Rust
/// panic (exit status 101 / "panicked" on stderr).
pub fn assert_no_crash(what: &str, out: &Output) -> Result<(), String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        None => Err(format!("{what}: killed by a signal")),
        Some(101) => Err(format!("{what}: panicked: {stderr}")),
        _ if stderr.contains("panicked") => Err(format!("{what}: panicked: {stderr}")),
        _ => Ok(()),
    }
}
