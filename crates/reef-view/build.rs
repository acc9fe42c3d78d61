//! Points rust-embed at the bundled front end (`web/dist`, made by
//! `scripts/build-web.sh`), or at a one-page placeholder saying how to
//! build it when it is missing, so that `cargo build` alone still works.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dist = manifest.join("../../web/dist");
    // A missing path would make cargo run this again at every build: watch
    // its parent until it exists (making it changes the parent).
    let watch = if dist.exists() {
        dist.clone()
    } else {
        manifest.join("../../web")
    };
    println!("cargo:rerun-if-changed={}", watch.display());
    let dir = if dist.join("index.html").is_file() {
        dist.canonicalize().unwrap()
    } else {
        let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("placeholder");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join("index.html"),
            "<!doctype html><title>reef view</title><p>The page was not built \
             into this binary: run <code>bash scripts/build-web.sh</code>, then \
             <code>cargo build --release</code> again. The API (docs/view-api.md) \
             works without it.</p>\n",
        )
        .unwrap();
        out
    };
    println!("cargo:rustc-env=REEF_WEB_DIST={}", dir.display());
}
