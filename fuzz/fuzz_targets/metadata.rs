//! Metadata: raw bytes (plain TSDL or packetized) -> text -> parsed model;
//! then as a trace's metadata is read, a cut file being read with the
//! declarations before the cut (`read_metadata_cut`). Any input must give
//! `Ok` or `Err`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = reef_ctf::metadata_text(data) {
        let _ = reef_ctf::parse_metadata(&text);
    }
    let _ = reef_ctf::read_metadata_cut(data);
});
