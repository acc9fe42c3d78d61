// The shared library exports the header's functions alone, under its
// soname. The version script is copied into OUT_DIR and linked from
// there: cargo keeps a path crate's build-script output across clones
// that share a target directory, so a path into the clone that ran the
// script would outlive that clone.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let map = format!("{out}/reef_reader.map");
    if let Err(e) = std::fs::copy(format!("{dir}/reef_reader.map"), &map) {
        panic!("copying reef_reader.map into {out}: {e}");
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={map}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libreef_reader.so.0");
    println!("cargo:rerun-if-changed=reef_reader.map");
    println!("cargo:rerun-if-changed=build.rs");
}
