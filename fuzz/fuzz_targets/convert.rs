//! `reef convert --to ctf` on a damaged stream: the input is one stream
//! file of a trace whose metadata is fixed and valid (the `stream`
//! target's), converted with `reef_export::ctf::write`. Whatever the
//! outcome (written cleanly, written up to a reported damage, refused),
//! nothing may panic, and whatever was written must read again without
//! any error to its end.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use reef_read::{ReadOptions, Source};

static METADATA: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/conformance/babeltrace-traces/succeed/session-rotation/3/ust/pid/10352/metadata"
));

fn base() -> &'static PathBuf {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let b = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        b.join(format!("reef-fuzz-convert-{}", std::process::id()))
    })
}

/// Every message of the trace under `dir`, or the first error.
fn read_all(dir: &Path) -> Result<u64, String> {
    let src = Source::open(&ReadOptions::new([dir])).map_err(|e| e.to_string())?;
    let mut streams = src.into_streams().map_err(|e| e.to_string())?;
    let mut n = 0;
    for c in streams.cursors.iter_mut() {
        loop {
            match c.next() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(n)
}

fuzz_target!(|data: &[u8]| {
    let (input, out) = (base().join("in"), base().join("out"));
    let _ = std::fs::remove_dir_all(base());
    std::fs::create_dir_all(&input).expect("create the input directory");
    std::fs::write(input.join("metadata"), METADATA).expect("write metadata");
    std::fs::write(input.join("chan_0"), data).expect("write the stream");
    let opts = ReadOptions::new([&input]);
    let Ok(src) = Source::open(&opts) else {
        return;
    };
    let written = reef_export::ctf::write(
        src,
        None,
        std::slice::from_ref(&input),
        &out,
        &reef_export::ctf::Options::default(),
    );
    if written.is_ok() && out.join("metadata").is_file() {
        if let Err(e) = read_all(&out) {
            panic!("reef convert wrote a trace that does not read: {e}");
        }
    }
});
