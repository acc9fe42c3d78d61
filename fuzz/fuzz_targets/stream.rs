//! Stream decoding: the input is one stream file of a trace whose metadata is
//! fixed and valid (an LTTng UST trace from the conformance suite, with
//! variants, enums, sequences and strings). The trace is opened and every
//! stream is walked to its end or first error; nothing may panic.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

/// The metadata every input is decoded against.
static METADATA: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/conformance/babeltrace-traces/succeed/session-rotation/3/ust/pid/10352/metadata"
));

/// A per-process trace directory (on tmpfs when available) holding the
/// metadata; each input overwrites its stream file.
fn trace_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("reef-fuzz-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create fuzz trace dir");
        std::fs::write(dir.join("metadata"), METADATA).expect("write metadata");
        dir
    })
}

/// The fixed metadata, parsed once.
fn metadata() -> &'static reef_ctf::Metadata {
    static META: OnceLock<reef_ctf::Metadata> = OnceLock::new();
    META.get_or_init(|| {
        let text = reef_ctf::metadata_text(METADATA).expect("fixed metadata unpacks");
        reef_ctf::parse_metadata(&text).expect("fixed metadata parses")
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = trace_dir();
    // Write to a fresh file and rename it into place, so a previous input's
    // memory map (already dropped) is never truncated under it.
    let tmp = dir.join(".chan_0.tmp");
    std::fs::write(&tmp, data).expect("write stream file");
    std::fs::rename(&tmp, dir.join("chan_0")).expect("rename stream file");

    // Same as `reef_ctf::Trace::open(dir)`, but the metadata is parsed once
    // per process (re-parsing it per input made this target ~30x slower).
    let class = match reef_ctf::TraceClass::new(metadata().clone()) {
        Ok(c) => c,
        Err(_) => return,
    };
    let trace = match reef_ctf::Trace::from_class(class, std::slice::from_ref(dir)) {
        Ok(t) => Arc::new(t),
        Err(_) => return,
    };
    for i in 0..trace.sources.len() {
        let mut cursor = reef_ctf::StreamCursor::new(trace.clone(), i);
        loop {
            match cursor.next() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
});
