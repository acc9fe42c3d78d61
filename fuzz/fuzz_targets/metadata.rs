//! Metadata: raw bytes (plain TSDL or packetized) -> text -> parsed model.
//! Any input must give `Ok` or `Err`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = reef_ctf::metadata_text(data) {
        let _ = reef_ctf::parse_metadata(&text);
    }
});
