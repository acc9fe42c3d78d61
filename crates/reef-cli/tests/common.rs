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

/// A small deterministic PRNG (xorshift64*), so failures reproduce from
/// their seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// The first line where two texts differ: its 0-based index and both
/// lines (`None`: that text has ended).
pub fn first_difference<'a>(
    got: &'a str,
    want: &'a str,
) -> (usize, Option<&'a str>, Option<&'a str>) {
    let (n, (g, w)) = got
        .lines()
        .map(Some)
        .chain(std::iter::repeat(None))
        .zip(want.lines().map(Some).chain(std::iter::repeat(None)))
        .take_while(|(g, w)| g.is_some() || w.is_some())
        .enumerate()
        .find(|(_, (g, w))| g != w)
        .unwrap_or((0, (None, None)));
    (n, g, w)
}
