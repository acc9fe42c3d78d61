//! CTF 2 field classes the shared conformance traces do not exercise
//! (LEB128 integers, booleans, optionals, BLOBs, UTF-16/32 strings, bit
//! maps, static-length strings, integer mappings), on a trace written here
//! byte by byte from CTF2-SPEC-2.0. The expected lines were worked out by
//! hand from the bytes and babeltrace2 2.1.2's formats (a bit map as
//! `0x…` then its active flags sorted, a BLOB as `{ de ad }`, an optional
//! as `{ v }` or `<none>`, a boolean as `true`/`false`, a CTF 2 member name
//! shown as written, leading underscore included); and metadata errors:
//! which fragment, where in it, what was expected, and no panic.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_no_crash, reef};

const RS: &str = "\u{1e}";

fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reef-ctf2-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn write_trace(dir: &Path, fragments: &[&str], stream: &[u8]) {
    let mut meta = String::new();
    for f in fragments {
        meta.push_str(RS);
        meta.push_str(f);
        meta.push('\n');
    }
    std::fs::write(dir.join("metadata"), meta).expect("metadata");
    std::fs::write(dir.join("stream"), stream).expect("stream");
}

const PREAMBLE: &str = r#"{"type": "preamble", "version": 2}"#;
const TRACE: &str = r#"{"type": "trace-class"}"#;
const STREAM: &str = r#"{"type": "data-stream-class"}"#;

fn u8fc(extra: &str) -> String {
    format!(
        r#"{{"type": "fixed-length-unsigned-integer", "length": 8, "byte-order": "little-endian", "alignment": 8{extra}}}"#
    )
}

fn member(name: &str, fc: &str) -> String {
    format!(r#"{{"name": "{name}", "field-class": {fc}}}"#)
}

fn event_class() -> String {
    let bool8 = r#"{"type": "fixed-length-boolean", "length": 8, "byte-order": "little-endian", "alignment": 8}"#;
    let members = [
        member("flag", bool8),
        member("flag2", bool8),
        member("u", r#"{"type": "variable-length-unsigned-integer"}"#),
        member("s", r#"{"type": "variable-length-signed-integer"}"#),
        member(
            "bm",
            r#"{"type": "fixed-length-bit-map", "length": 8, "byte-order": "little-endian",
                "flags": {"A": [[0, 0]], "B": [[1, 2]], "C": [[7, 7]]}}"#,
        ),
        member("ss", r#"{"type": "static-length-string", "length": 8}"#),
        member("blen", &u8fc("")),
        member(
            "blob",
            r#"{"type": "dynamic-length-blob", "length-field-location": {"path": ["blen"]}}"#,
        ),
        member(
            "u16",
            r#"{"type": "null-terminated-string", "encoding": "utf-16le"}"#,
        ),
        member("u32len", &u8fc("")),
        member(
            "u32",
            r#"{"type": "dynamic-length-string", "encoding": "utf-32be",
                "length-field-location": {"origin": "event-record-payload", "path": ["u32len"]}}"#,
        ),
        member("has", bool8),
        member(
            "opt",
            r#"{"type": "optional", "selector-field-location": {"path": ["has"]},
                "field-class": {"type": "fixed-length-unsigned-integer", "length": 16,
                                "byte-order": "little-endian", "alignment": 8}}"#,
        ),
        member("sel", &u8fc("")),
        member(
            "opt2",
            &format!(
                r#"{{"type": "optional", "selector-field-location": {{"path": ["sel"]}},
                    "selector-field-ranges": [[1, 5]], "field-class": {}}}"#,
                u8fc("")
            ),
        ),
        member(
            "e",
            r#"{"type": "fixed-length-signed-integer", "length": 8, "byte-order": "little-endian",
                "mappings": {"NEG": [[-10, -1]], "ZERO": [[0, 0]]}}"#,
        ),
        member(
            "hex",
            r#"{"type": "fixed-length-unsigned-integer", "length": 16, "byte-order": "big-endian",
                "preferred-display-base": 16}"#,
        ),
        member("sblob", r#"{"type": "static-length-blob", "length": 2}"#),
        member(
            "v",
            &format!(
                r#"{{"type": "variant", "selector-field-location": {{"path": ["sel"]}},
                    "options": [
                      {{"name": "a", "selector-field-ranges": [[0, 0]],
                        "field-class": {{"type": "null-terminated-string"}}}},
                      {{"name": "b", "selector-field-ranges": [[1, 1]], "field-class": {}}}]}}"#,
                u8fc("")
            ),
        ),
        member("_under", &u8fc("")),
    ];
    format!(
        r#"{{"type": "event-record-class", "name": "ev",
            "payload-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
        members.join(",\n")
    )
}

/// The two events' bytes, field by field (see `event_class`).
fn stream_bytes() -> Vec<u8> {
    let mut s = Vec::new();
    // Event 1.
    s.extend([0x01, 0x00]); // flag, flag2
    s.extend([0xe5, 0x8e, 0x26]); // u = 624485 (LEB128)
    s.extend([0xc0, 0xbb, 0x78]); // s = -123456 (signed LEB128)
    s.push(0x05); // bm: bits 0 and 2
    s.extend(b"hi\0xxxxx"); // ss: 8 bytes, "hi" then NUL
    s.push(3); // blen
    s.extend([0xde, 0xad, 0xbe]); // blob
    s.extend([0x68, 0x00, 0xe9, 0x00, 0x00, 0x00]); // u16: "hé" NUL
    s.push(8); // u32len (bytes)
    s.extend([0, 0, 0, 0x41, 0, 0x01, 0xf6, 0x00]); // u32: "A", U+1F600
    s.push(1); // has
    s.extend([0x34, 0x12]); // opt = 0x1234
    s.push(0); // sel: opt2 absent, variant option a
    s.push(0xfd); // e = -3
    s.extend([0xbe, 0xef]); // hex (big-endian)
    s.extend([0x01, 0x02]); // sblob
    s.extend(b"ok\0"); // v: option a, a string
    s.push(7); // _under
               // Event 2.
    s.extend([0x00, 0x01]); // flag, flag2
    s.push(0x00); // u = 0
    s.push(0x7f); // s = -1
    s.push(0x80); // bm: bit 7
    s.extend(b"abcdefgh"); // ss: 8 bytes, no NUL
    s.push(0); // blen: empty blob
    s.extend([0x00, 0x00]); // u16: ""
    s.push(0); // u32len: ""
    s.push(0); // has: opt absent
    s.push(1); // sel: opt2 present, variant option b
    s.push(9); // opt2
    s.push(0x00); // e = 0
    s.extend([0x00, 0x01]); // hex
    s.extend([0xff, 0x00]); // sblob
    s.push(42); // v: option b
    s.push(0); // _under
    s
}

#[test]
fn ctf2_field_classes_print_as_babeltrace2() {
    let dir = scratch("fields");
    let ec = event_class();
    write_trace(&dir, &[PREAMBLE, TRACE, STREAM, &ec], &stream_bytes());
    let out = reef(&["print", dir.to_str().unwrap()]);
    assert_no_crash("print", &out).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = concat!(
        "ev: { flag = true, flag2 = false, u = 624485, s = -123456, ",
        "bm = 0x5 { \"A\", \"B\" }, ss = \"hi\", blen = 3, blob = { de ad be }, ",
        "u16 = \"h\u{e9}\", u32len = 8, u32 = \"A\u{1f600}\", has = true, opt = { 4660 }, ",
        "sel = 0, opt2 = <none>, e = ( \"NEG\" : container = -3 ), hex = 0xBEEF, ",
        "sblob = { 01 02 }, v = { \"ok\" }, _under = 7 }\n",
        "ev: { flag = false, flag2 = true, u = 0, s = -1, ",
        "bm = 0x80 { \"C\" }, ss = \"abcdefgh\", blen = 0, blob = { }, ",
        "u16 = \"\", u32len = 0, u32 = \"\", has = false, opt = <none>, ",
        "sel = 1, opt2 = { 9 }, e = ( \"ZERO\" : container = 0 ), hex = 0x1, ",
        "sblob = { ff 00 }, v = { 42 }, _under = 0 }\n",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    // The same trace through a computing command.
    let out = reef(&["stats", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A metadata error: non-zero exit, no panic, and stderr naming each of
/// `needles` (fragment, JSON path, what was expected).
fn metadata_error(what: &str, fragments: &[&str], needles: &[&str]) {
    let dir = scratch(what);
    write_trace(&dir, fragments, b"");
    let out = reef(&["print", dir.to_str().unwrap()]);
    assert_no_crash(what, &out).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what}: succeeded");
    for n in needles {
        assert!(err.contains(n), "{what}: `{n}` not in: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctf2_metadata_errors_name_fragment_and_path() {
    metadata_error(
        "bad-json",
        &[PREAMBLE, TRACE, r#"{"type": "data-stream-class",}"#],
        &["fragment 3", "invalid JSON"],
    );
    metadata_error(
        "missing-length",
        &[
            PREAMBLE,
            TRACE,
            STREAM,
            r#"{"type": "event-record-class", "payload-field-class": {"type": "structure",
                "member-classes": [{"name": "x", "field-class":
                  {"type": "fixed-length-unsigned-integer", "byte-order": "little-endian"}}]}}"#,
        ],
        &[
            "fragment 4",
            "/payload-field-class/member-classes/0/field-class",
            "expected a `length` property",
        ],
    );
    metadata_error(
        "bad-location",
        &[
            PREAMBLE,
            TRACE,
            STREAM,
            r#"{"type": "event-record-class", "payload-field-class": {"type": "structure",
                "member-classes": [{"name": "x", "field-class":
                  {"type": "dynamic-length-blob", "length-field-location": {"path": ["nope"]}}}]}}"#,
        ],
        &[
            "fragment 4",
            "/payload-field-class/member-classes/0/field-class/length-field-location",
            "no field `nope`",
        ],
    );
    metadata_error(
        "length-after",
        &[
            PREAMBLE,
            TRACE,
            STREAM,
            &format!(
                r#"{{"type": "event-record-class", "payload-field-class": {{"type": "structure",
                "member-classes": [{}, {}]}}}}"#,
                member(
                    "b",
                    r#"{"type": "dynamic-length-blob", "length-field-location": {"path": ["n"]}}"#
                ),
                member("n", &u8fc(""))
            ),
        ],
        &["fragment 4", "is not decoded before this field"],
    );
    metadata_error(
        "extension",
        &[
            r#"{"type": "preamble", "version": 2, "extensions": {"vendor.com,2024": {}}}"#,
            TRACE,
            STREAM,
        ],
        &["fragment 1", "/extensions", "unsupported extension"],
    );
    metadata_error(
        "no-preamble",
        &[TRACE, STREAM],
        &["fragment 1", "expected the preamble"],
    );
    metadata_error(
        "unknown-type",
        &[
            PREAMBLE,
            TRACE,
            STREAM,
            r#"{"type": "event-record-class", "payload-field-class": {"type": "structure",
                "member-classes": [{"name": "x", "field-class": {"type": "float"}}]}}"#,
        ],
        &["fragment 4", "unknown field class type `float`"],
    );
}

/// `reef convert --ctf-version 1.8` on a trace with field classes TSDL
/// lacks: refused before anything is written, the error naming the event
/// record class, the field and the field class; `--ctf-version 2` keeps
/// it as it is (and it prints the same).
#[test]
fn ctf2_to_tsdl_refuses_what_tsdl_lacks() {
    let dir = scratch("to18");
    let ec = event_class();
    write_trace(&dir, &[PREAMBLE, TRACE, STREAM, &ec], &stream_bytes());
    let out_dir = dir.join("out");
    let out = reef(&[
        "convert",
        "--ctf-version",
        "1.8",
        dir.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_no_crash("convert", &out).unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "cannot write this CTF 2 trace as CTF 1.8",
        "event record class `ev`",
        "`flag`",
        "a boolean",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!out_dir.join("metadata").exists());
    let out = reef(&[
        "convert",
        "--ctf-version",
        "2",
        dir.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = reef(&["print", dir.to_str().unwrap()]);
    let b = reef(&["print", out_dir.to_str().unwrap()]);
    assert_eq!(a.stdout, b.stdout);
    let out = reef(&[
        "convert",
        "--ctf-version",
        "3",
        dir.to_str().unwrap(),
        "-o",
        dir.join("o3").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected 1.8 or 2"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A packet whose end time lies after the next packet's beginning, with
/// events discarded between them (LTTng-UST writes such packets: the
/// tracecompass-test-traces `hello-lost` trace, converted to CTF 2 by
/// babeltrace2 2.1.2's `sink.ctf.fs`, holds hundreds). babeltrace2 2.1.2
/// prints every event in stream order and warns of the discarded events
/// between the first packet's end and the second's; the expected lines
/// are its output on this trace.
#[test]
fn ctf2_discarded_events_before_an_earlier_packet() {
    let dir = scratch("overlap");
    let u64fc = |role: &str| {
        format!(
            r#"{{"type": "fixed-length-unsigned-integer", "length": 64, "byte-order": "little-endian", "alignment": 8, "roles": ["{role}"]}}"#
        )
    };
    let stream = format!(
        r#"{{"type": "data-stream-class", "default-clock-class-id": "c",
        "packet-context-field-class": {{"type": "structure", "member-classes": [{}, {}, {}, {}, {}]}},
        "event-record-header-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
        member("packet_size", &u64fc("packet-total-length")),
        member("content_size", &u64fc("packet-content-length")),
        member("timestamp_begin", &u64fc("default-clock-timestamp")),
        member(
            "timestamp_end",
            &u64fc("packet-end-default-clock-timestamp")
        ),
        member(
            "events_discarded",
            &u64fc("discarded-event-record-counter-snapshot")
        ),
        member("timestamp", &u64fc("default-clock-timestamp")),
    );
    let clock =
        r#"{"type": "clock-class", "id": "c", "frequency": 1000000000, "origin": "unix-epoch"}"#;
    let event = format!(
        r#"{{"type": "event-record-class", "name": "ev",
        "payload-field-class": {{"type": "structure", "member-classes": [{}]}}}}"#,
        member("v", &u8fc(""))
    );
    const BASE: u64 = 1_000_000_000_000_000_000;
    let packet = |begin: u64, end: u64, discarded: u64, events: &[(u64, u8)]| {
        let mut body = Vec::new();
        for (ts, v) in events {
            body.extend((BASE + ts).to_le_bytes());
            body.push(*v);
        }
        let mut p = Vec::new();
        for x in [
            1024,
            (40 + body.len() as u64) * 8,
            BASE + begin,
            BASE + end,
            discarded,
        ] {
            p.extend(x.to_le_bytes());
        }
        p.extend(body);
        p.resize(128, 0);
        p
    };
    let mut bytes = packet(100, 500, 0, &[(100, 1), (200, 2)]);
    bytes.extend(packet(300, 900, 5, &[(300, 3), (400, 4)]));
    write_trace(&dir, &[PREAMBLE, TRACE, clock, &stream, &event], &bytes);
    let out = reef(&["print", dir.to_str().unwrap()]);
    assert_no_crash("print", &out).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        concat!(
            "[01:46:40.000000100] (+?.?????????) ev: { v = 1 }\n",
            "[01:46:40.000000200] (+0.000000100) ev: { v = 2 }\n",
            "[01:46:40.000000300] (+0.000000100) ev: { v = 3 }\n",
            "[01:46:40.000000400] (+0.000000100) ev: { v = 4 }\n",
        )
    );
    assert!(
        err.contains(
            "Tracer discarded 5 events between [01:46:40.000000500] and [01:46:40.000000900]"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
