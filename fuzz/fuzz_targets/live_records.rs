//! `reef listen`'s checking of what a peer sends (`reef_read::live::Check`):
//! the input's records (`reef_ctf::capture::Reader`), after a fixed valid
//! metadata record, each checked as `reef listen` checks it; the records
//! it accepts are written as a trace directory (the last accepted
//! metadata, one file per stream), which is opened and walked. Nothing may
//! panic; when every accepted packet was checked against the metadata
//! written, the directory's framing must read (`Trace::open` succeeds).
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use reef_ctf::capture::{Kind, Reader};

static METADATA: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/conformance/babeltrace-traces/succeed/session-rotation/3/ust/pid/10352/metadata"
));

fn dir() -> &'static PathBuf {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        base.join(format!("reef-fuzz-live-{}", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let name = Path::new("peer:1");
    let mut check = reef_read::live::Check::default();
    check
        .metadata(METADATA, name)
        .expect("the fixed metadata parses");
    let mut meta: Vec<u8> = METADATA.to_vec();
    // Whether a packet was accepted before the metadata it was checked
    // against was replaced.
    let mut mixed = false;
    let mut streams: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut rd = Reader::new(data, name.to_path_buf());
    let mut buf = Vec::new();
    while let Ok(Some(rec)) = rd.next(&mut buf) {
        match rec.kind {
            Kind::Metadata => {
                if check.metadata(&buf, name).is_ok() {
                    mixed |= !streams.is_empty();
                    meta = buf.clone();
                }
            }
            Kind::Packet => {
                if check.packet(&buf, name) == Ok(true) {
                    streams
                        .entry(rec.stream % 64)
                        .or_default()
                        .extend_from_slice(&buf);
                }
            }
            Kind::End => break,
        }
    }
    let d = dir();
    let _ = std::fs::remove_dir_all(d);
    std::fs::create_dir_all(d).expect("create the fuzz directory");
    std::fs::write(d.join("metadata"), &meta).expect("write metadata");
    for (id, bytes) in &streams {
        std::fs::write(d.join(format!("stream_{id}")), bytes).expect("write a stream");
    }
    let trace = match reef_ctf::Trace::open(d) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            assert!(
                mixed || streams.is_empty(),
                "accepted packets do not read: {e}"
            );
            return;
        }
    };
    for i in 0..trace.sources.len() {
        let mut c = reef_ctf::StreamCursor::new(trace.clone(), i);
        while let Ok(Some(_)) = c.next() {}
    }
});
