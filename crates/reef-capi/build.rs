// The shared library exports the header's functions alone, under its
// soname.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/reef_reader.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libreef_reader.so.0");
    println!("cargo:rerun-if-changed=reef_reader.map");
}
