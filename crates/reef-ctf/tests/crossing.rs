//! The skimming loops (`StreamCursor::skim_bodies`, `skim_run`) cross the
//! events of classes they learnt by their id alone when the stream's event
//! header is an `(id, timestamp)` pair or LTTng's compact and extended
//! header. Here they read random streams of
//! such traces, garbled or not, and must give what the decoder gives one
//! event at a time (`next_skimmed`): the same events (class, time, offset,
//! body, end), the same values for the classes asked for, the same error
//! at the same place.

use std::path::Path;
use std::sync::Arc;

use reef_ctf::{Item, StreamCursor, Trace};

mod common;
use common::Rng;

/// Metadata of a trace whose event header is `(id, timestamp)` of
/// `id_bits` and `ts_bits`, or LTTng's compact and extended header when
/// `id_bits` is 0; classes: 0 fixed ints, 1 a string then a byte, 2 a
/// sequence (no skim), 3 two ints and a string, 4 an aligned int and a
/// string (a skim, but no quick one).
fn metadata(id_bits: u32, ts_bits: u32) -> String {
    let header = if id_bits == 0 {
        "enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
        variant <id> {
            struct { integer { size = 27; align = 1; signed = false; map = clock.c.value; } timestamp; } compact;
            struct { uint32_t id; clock64_t timestamp; } extended;
        } v;"
            .to_string()
    } else {
        format!(
            "integer {{ size = {id_bits}; align = 8; signed = false; }} id; clockh_t timestamp;"
        )
    };
    format!(
        r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
trace {{
    major = 1; minor = 8; byte_order = le;
    packet.header := struct {{ uint32_t magic; uint32_t stream_id; }};
}};
clock {{ name = "c"; freq = 1000000000; }};
typealias integer {{ size = 64; align = 8; signed = false; map = clock.c.value; }} := clock64_t;
typealias integer {{ size = {ts}; align = 8; signed = false; map = clock.c.value; }} := clockh_t;
stream {{
    id = 0;
    event.header := struct {{ {header} }} align(8);
    packet.context := struct {{
        clock64_t timestamp_begin; clock64_t timestamp_end;
        uint64_t content_size; uint64_t packet_size;
    }};
}};
event {{ name = "ints"; id = 0; stream_id = 0; fields := struct {{ uint32_t a; uint64_t b; }}; }};
event {{ name = "text"; id = 1; stream_id = 0; fields := struct {{ string s; uint8_t c; }}; }};
event {{ name = "seq"; id = 2; stream_id = 0; fields := struct {{ uint8_t n; uint32_t v[n]; }}; }};
event {{ name = "mixed"; id = 3; stream_id = 0; fields := struct {{ uint8_t x; uint32_t y; string s; }}; }};
event {{ name = "aligned"; id = 4; stream_id = 0; fields := struct {{ uint8_t x; integer {{ size = 32; align = 32; signed = false; }} y; string s; uint8_t z; }}; }};
"#,
        ts = ts_bits.max(8)
    )
}

/// A stream file of `packets` packets of random events, with, when
/// `garble`, a few wrong bytes (an unknown id, a string without its end, a
/// time that goes back, a cut packet).
fn stream(
    rng: &mut Rng,
    id_bytes: usize,
    ts_bytes: usize,
    packets: usize,
    garble: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut t: u64 = 1_000;
    for _ in 0..packets {
        let mut events = Vec::new();
        let begin = t;
        for _ in 0..(1 + rng.below(300)) {
            t += rng.below(3000);
            if garble && rng.below(200) == 0 {
                t -= rng.below(5000).min(t);
            }
            let id = rng.below(5);
            let id = if garble && rng.below(300) == 0 { 9 } else { id };
            if id_bytes > 0 {
                events.extend_from_slice(&id.to_le_bytes()[..id_bytes]);
                events.extend_from_slice(&t.to_le_bytes()[..ts_bytes]);
            } else if rng.below(8) > 0 {
                // compact: a 5-bit id, the time's low 27 bits
                let w = id as u32 | ((t as u32) << 5);
                events.extend_from_slice(&w.to_le_bytes());
            } else {
                // extended: id 31, then the id and the whole time
                events.push(31);
                events.extend_from_slice(&(id as u32).to_le_bytes());
                events.extend_from_slice(&t.to_le_bytes());
            }
            match id {
                0 => {
                    events.extend_from_slice(&(rng.next() as u32).to_le_bytes());
                    events.extend_from_slice(&rng.next().to_le_bytes());
                }
                1 | 3 => {
                    if id == 3 {
                        events.push(rng.next() as u8);
                        events.extend_from_slice(&(rng.next() as u32).to_le_bytes());
                    }
                    for _ in 0..rng.below(40) {
                        events.push(b'a' + rng.below(26) as u8);
                    }
                    if !(garble && rng.below(300) == 0) {
                        events.push(0);
                    }
                    if id == 1 {
                        events.push(rng.next() as u8);
                    }
                }
                4 => {
                    // (the packet's header and context take 40 bytes; the
                    // payload is aligned as its int)
                    let align = |events: &mut Vec<u8>| {
                        while !(40 + events.len()).is_multiple_of(4) {
                            events.push(0);
                        }
                    };
                    align(&mut events);
                    events.push(rng.next() as u8);
                    align(&mut events);
                    events.extend_from_slice(&(rng.next() as u32).to_le_bytes());
                    events.push(b'x');
                    events.push(0);
                    events.push(rng.next() as u8);
                }
                2 => {
                    let n = rng.below(5) as u8;
                    events.push(n);
                    for _ in 0..n {
                        events.extend_from_slice(&(rng.next() as u32).to_le_bytes());
                    }
                }
                _ => {}
            }
        }
        let header = 8 + 32;
        let content = header + events.len();
        let cut = if garble && rng.below(8) == 0 {
            rng.below(events.len() as u64) as usize
        } else {
            0
        };
        let size = (content + 7 + rng.below(64) as usize) / 8 * 8;
        let mut p = Vec::with_capacity(size);
        p.extend_from_slice(&0xC1FC_1FC1u32.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&begin.to_le_bytes());
        p.extend_from_slice(&t.to_le_bytes());
        p.extend_from_slice(&(((content - cut) * 8) as u64).to_le_bytes());
        p.extend_from_slice(&((size * 8) as u64).to_le_bytes());
        p.extend_from_slice(&events);
        p.resize(size, 0);
        out.extend_from_slice(&p);
    }
    out
}

/// What a reader saw: each event (class, cycles, offset, body, end, the
/// values it kept), each notice, and how it ended.
#[derive(Debug, PartialEq)]
enum Seen {
    Event(usize, Option<u64>, u64, u64, u64, String),
    Notice,
    Error(String),
}

fn cursor(dir: &Path, want: &Option<Arc<[bool]>>) -> StreamCursor {
    let trace = Arc::new(Trace::open(dir).expect("the trace opens"));
    let mut cur = StreamCursor::new(trace, 0);
    cur.skip_values(true);
    cur.values_of(want.clone());
    cur
}

fn event_of(cur: &StreamCursor) -> Seen {
    let e = &cur.event;
    Seen::Event(
        e.event,
        e.ts,
        e.offset,
        e.body,
        e.end,
        format!("{:?}", e.values),
    )
}

/// One event at a time, by the decoder.
fn by_decoder(dir: &Path, want: &Option<Arc<[bool]>>) -> Vec<Seen> {
    let mut cur = cursor(dir, want);
    let mut seen = Vec::new();
    loop {
        match cur.next_skimmed() {
            Ok(Some(Item::Event)) => seen.push(event_of(&cur)),
            Ok(Some(_)) => seen.push(Seen::Notice),
            Ok(None) => return seen,
            Err(e) => {
                seen.push(Seen::Error(e.to_string()));
                return seen;
            }
        }
    }
}

/// As the analyses read: after each event of the decoder, the skimming
/// loop, `max` events at a time.
fn by_skim(dir: &Path, want: &Option<Arc<[bool]>>, max: usize) -> Vec<Seen> {
    let mut cur = cursor(dir, want);
    let mut seen = Vec::new();
    loop {
        match cur.next_skimmed() {
            Ok(Some(Item::Event)) => {
                seen.push(event_of(&cur));
                let mut last = cur.event.ts.unwrap_or(0);
                loop {
                    let mut crossed = Vec::new();
                    let r = cur.skim_bodies(&mut last, u64::MAX, max, |e| crossed.push(e));
                    let n = crossed.len();
                    for e in crossed {
                        seen.push(Seen::Event(
                            e.class,
                            Some(e.cycles),
                            e.offset,
                            e.body.body as u64,
                            e.body.end as u64,
                            // (a crossed event keeps no values)
                            "[]".into(),
                        ));
                    }
                    match r {
                        Ok(true) => seen.push(event_of(&cur)),
                        Ok(false) if n == max => continue,
                        Ok(false) => {}
                        Err(e) => {
                            seen.push(Seen::Error(e.to_string()));
                            return seen;
                        }
                    }
                    break;
                }
            }
            Ok(Some(_)) => seen.push(Seen::Notice),
            Ok(None) => return seen,
            Err(e) => {
                seen.push(Seen::Error(e.to_string()));
                return seen;
            }
        }
    }
}

/// As `reef check` counts: the events, and the error.
fn by_run(dir: &Path) -> (u64, Option<String>) {
    let mut cur = cursor(dir, &None);
    let mut n = 0;
    loop {
        match cur.next_skimmed() {
            Ok(Some(Item::Event)) => {
                n += 1;
                let mut last = cur.event.ts.unwrap_or(0);
                if let Err(e) = cur.skim_run(&mut last, 0, u64::MAX, &mut n) {
                    return (n, Some(e.to_string()));
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return (n, None),
            Err(e) => return (n, Some(e.to_string())),
        }
    }
}

#[test]
fn crossing_by_id_reads_as_the_decoder_does() {
    let root = std::env::temp_dir().join(format!("reef-crossing-{}", std::process::id()));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut crossed = 0;
    let mut last = None;
    for (round, (id_bytes, ts_bytes)) in [(4, 8), (0, 0), (1, 4), (2, 8), (8, 8), (4, 4)]
        .into_iter()
        .cycle()
        .take(48)
        .enumerate()
    {
        let dir = root.join(round.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("metadata"),
            metadata(id_bytes as u32 * 8, ts_bytes as u32 * 8),
        )
        .unwrap();
        let garble = round % 2 == 1;
        let data = stream(&mut rng, id_bytes, ts_bytes, 1 + round % 4, garble);
        std::fs::write(dir.join("stream_0"), data).unwrap();
        for want in [
            None,
            Some(Arc::from(vec![false, true, false, false, false])),
        ] {
            let reference = by_decoder(&dir, &want);
            assert!(!reference.is_empty(), "round {round}: {reference:?}");
            for max in [1, 7, usize::MAX] {
                let skimmed = by_skim(&dir, &want, max);
                assert_eq!(
                    skimmed, reference,
                    "round {round}, want {want:?}, max {max}"
                );
            }
            let events = reference
                .iter()
                .filter(|s| matches!(s, Seen::Event(..)))
                .count() as u64;
            crossed += events;
            last = reference.last().map(|s| format!("{s:?}"));
            if want.is_none() {
                let error = match reference.last() {
                    Some(Seen::Error(e)) => Some(e.clone()),
                    _ => None,
                };
                assert_eq!(by_run(&dir), (events, error), "round {round}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(crossed > 10_000, "{crossed} events read: {last:?}");
}
