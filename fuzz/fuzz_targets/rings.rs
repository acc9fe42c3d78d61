//! `reef recover`'s reading of its inputs (`crates/reef-cli/src/recover_scan.rs`,
//! included as it is): the input as a crash-safe ring file (with and
//! without a trace UUID, with and without an instance id from the file
//! name) and as a libreef stream file. Nothing may panic, hang or read
//! out of bounds; every packet given back lies within the input and is
//! at least a packet header long.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/reef-cli/src/recover_scan.rs"]
mod scan;

fuzz_target!(|data: &[u8]| {
    let uuid: Option<[u8; 16]> = data.get(4..20).and_then(|s| s.try_into().ok());
    for (name_id, u) in [
        (Some(1), None),
        (None, uuid.as_ref()),
        (Some(0), uuid.as_ref()),
    ] {
        let r = scan::ring(data, name_id, u);
        for p in &r.packets {
            assert!(p.bytes.len() >= scan::HEADER && p.bytes.len() <= data.len());
        }
    }
    let f = scan::stream_file(data, uuid.as_ref(), 0);
    let mut total = 0usize;
    for p in &f.packets {
        assert!(p.bytes.len() >= scan::HEADER);
        total += p.bytes.len();
    }
    for g in &f.gaps {
        assert!(g.start < g.end && g.end as usize <= data.len());
        total += (g.end - g.start) as usize;
    }
    // Packets and gaps tile the file.
    assert_eq!(total, data.len());
});
