//! Links `reef` as a position-dependent executable: the dynamic loader
//! then has almost no relocation to apply at start-up (a PIE `reef` has
//! about 24,000, whose writes copy pages of the binary): `reef --version`
//! went from 2.60 M to 2.29 M instructions and from 334 to 263 page
//! faults. Only this crate's executables are linked so (not its tests,
//! nor proc-macros).
//!
//! The executable also exports the C reading API (the functions listed in
//! reef-capi's version script): plugins call them, and link nothing.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let map = format!("{dir}/../reef-capi/reef_reader.map");
        println!("cargo:rerun-if-changed={map}");
        let text = std::fs::read_to_string(&map).unwrap_or_default();
        for sym in text
            .lines()
            .map(|l| l.trim().trim_end_matches(';'))
            .filter(|l| l.starts_with("reef_") && !l.contains(' '))
        {
            println!("cargo:rustc-link-arg-bins=-Wl,-u,{sym}");
            println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={sym}");
        }
    }
}
