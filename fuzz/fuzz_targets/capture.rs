//! Live captures (`reef_ctf::capture`): the record framing over the raw
//! input, then the input's records after a fixed, valid metadata record,
//! opened as a trace (`TraceClass::load` + `Trace::from_class` on the
//! capture file, as `reef print CAPTURE` does) and every stream walked to
//! its end or first error. Nothing may panic.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use reef_ctf::capture::{Reader, MAGIC};

/// The metadata record every capture starts with (as in the `stream` target).
static METADATA: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/conformance/babeltrace-traces/succeed/session-rotation/3/ust/pid/10352/metadata"
));

fn capture_path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        base.join(format!("reef-fuzz-capture-{}", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data, PathBuf::from("fuzz"));
    let mut buf = Vec::new();
    while let Ok(Some(_)) = r.next(&mut buf) {}

    let mut file = Vec::with_capacity(24 + METADATA.len() + data.len());
    file.extend_from_slice(&MAGIC.to_le_bytes());
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&0u64.to_le_bytes());
    file.extend_from_slice(&(METADATA.len() as u64).to_le_bytes());
    file.extend_from_slice(METADATA);
    file.extend_from_slice(data);
    let path = capture_path();
    std::fs::write(path, &file).expect("write capture");
    let Ok(class) = reef_ctf::TraceClass::load(path) else {
        return;
    };
    let Ok(trace) = reef_ctf::Trace::from_class(class, std::slice::from_ref(path)) else {
        return;
    };
    let trace = Arc::new(trace);
    for i in 0..trace.sources.len() {
        let mut cursor = reef_ctf::StreamCursor::new(trace.clone(), i);
        while let Ok(Some(_)) = cursor.next() {}
    }
});
