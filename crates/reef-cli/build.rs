//! Links `reef` as a position-dependent executable: the dynamic loader
//! then has almost no relocation to apply at start-up (a PIE `reef` has
//! about 24,000, whose writes copy pages of the binary): `reef --version`
//! went from 2.60 M to 2.29 M instructions and from 334 to 263 page
//! faults. Only this crate's executables are linked so (not its tests,
//! nor proc-macros).
//!
//! The executable also exports the C reading API (the functions listed in
//! reef-capi's version script) and reef_plugin.h's `reef_source_*`:
//! plugins call them, and link nothing.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let map = format!("{dir}/../reef-capi/reef_reader.map");
        println!("cargo:rerun-if-changed={map}");
        let text = std::fs::read_to_string(&map).unwrap_or_default();
        let mut syms: Vec<String> = text
            .lines()
            .map(|l| l.trim().trim_end_matches(';'))
            .filter(|l| l.starts_with("reef_") && !l.contains(' '))
            .map(str::to_owned)
            .collect();
        // And the functions source plugins deliver their events with
        // (declared in reef_plugin.h, not part of libreef_reader).
        let header = format!("{dir}/../reef-capi/include/reef_plugin.h");
        println!("cargo:rerun-if-changed={header}");
        let text = std::fs::read_to_string(&header).unwrap_or_default();
        for l in text.lines() {
            if let Some(i) = l.find("reef_source_") {
                let rest = &l[i..];
                if let Some(end) = rest.find('(') {
                    let name = &rest[..end];
                    if l.starts_with("reef_status")
                        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    {
                        syms.push(name.to_owned());
                    }
                }
            }
        }
        for sym in syms {
            println!("cargo:rustc-link-arg-bins=-Wl,-u,{sym}");
            println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={sym}");
        }
    }
}
