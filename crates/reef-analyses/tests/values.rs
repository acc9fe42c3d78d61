//! Event classes whose fields the model reads only in their values (a
//! sequence before them: their place in the bytes varies): the skim
//! reader reads such an event with its values, as the last record of its
//! stream's batch, or as the first (the event that starts a batch), and
//! must read the values of that event, not of a later one. Here a trace
//! whose `sched_switch` events are all of that kind, between events the
//! model ignores, gives the same cputop tables through the skim reader
//! (on the calling thread and on a second one) as through `Source`.

use reef_analyses::cputop::Cputop;
use reef_analyses::lami::results_json;
use reef_read::ReadOptions;

const METADATA: &str = r#"/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 8; align = 8; signed = true; encoding = UTF8; } := char_t;
trace {
    major = 1; minor = 8; byte_order = le;
    packet.header := struct { uint32_t magic; uint32_t stream_id; };
};
env { domain = "kernel"; tracer_name = "lttng-modules"; tracer_major = 2; tracer_minor = 12; };
clock { name = "monotonic"; freq = 1000000000; offset = 1500000000000000000; };
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clock_t;
stream {
    id = 0;
    event.header := struct { uint32_t id; clock_t timestamp; };
    packet.context := struct {
        clock_t timestamp_begin; clock_t timestamp_end;
        uint64_t content_size; uint64_t packet_size; uint32_t cpu_id;
    };
};
event {
    name = "sched_switch"; id = 0; stream_id = 0;
    fields := struct {
        uint8_t _n; uint8_t _pad[_n];
        char_t _prev_comm[16]; int32_t _prev_tid; int32_t _prev_prio; int64_t _prev_state;
        char_t _next_comm[16]; int32_t _next_tid; int32_t _next_prio;
    };
};
event { name = "foo"; id = 1; stream_id = 0; fields := struct { uint32_t _x; }; };
"#;

fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

/// One packet of CPU `cpu`'s events: switches between threads, each with
/// 0-2 ignored events after it.
fn stream(cpu: u32, tids: &[i32]) -> Vec<u8> {
    let mut events = Vec::new();
    let mut t: u64 = 1_000_000 + u64::from(cpu) * 7;
    let mut prev = tids[0];
    let mut first = 0;
    for (i, &next) in tids.iter().cycle().skip(1).take(40).enumerate() {
        t += 1_000 + (i as u64 * 37) % 500;
        first = if first == 0 { t } else { first };
        events.extend_from_slice(&0u32.to_le_bytes());
        events.extend_from_slice(&t.to_le_bytes());
        let n = (i % 3) as u8;
        events.push(n);
        events.extend(std::iter::repeat_n(0xAA, n as usize));
        events.extend_from_slice(&comm(&format!("t{prev}")));
        events.extend_from_slice(&prev.to_le_bytes());
        events.extend_from_slice(&20i32.to_le_bytes());
        events.extend_from_slice(&1i64.to_le_bytes());
        events.extend_from_slice(&comm(&format!("t{next}")));
        events.extend_from_slice(&next.to_le_bytes());
        events.extend_from_slice(&20i32.to_le_bytes());
        for _ in 0..i % 3 {
            t += 100;
            events.extend_from_slice(&1u32.to_le_bytes());
            events.extend_from_slice(&t.to_le_bytes());
            events.extend_from_slice(&(i as u32).to_le_bytes());
        }
        prev = next;
    }
    let header = 8 + 36;
    let content = header + events.len();
    let size = content.next_multiple_of(8);
    let mut p = Vec::with_capacity(size);
    p.extend_from_slice(&0xC1FC_1FC1u32.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(&first.to_le_bytes());
    p.extend_from_slice(&t.to_le_bytes());
    p.extend_from_slice(&((content * 8) as u64).to_le_bytes());
    p.extend_from_slice(&((size * 8) as u64).to_le_bytes());
    p.extend_from_slice(&cpu.to_le_bytes());
    p.extend_from_slice(&events);
    p.resize(size, 0);
    p
}

#[test]
fn events_read_with_their_values_are_their_own() {
    let dir = std::env::temp_dir().join(format!("reef-values-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("metadata"), METADATA).unwrap();
    std::fs::write(dir.join("cpu0"), stream(0, &[11, 12, 13])).unwrap();
    std::fs::write(dir.join("cpu1"), stream(1, &[21, 22, 23, 24])).unwrap();
    let read = ReadOptions::new([dir.clone()]);
    let run = |workers: usize, filter: bool| {
        let mut r = read.clone();
        r.workers = Some(workers);
        if filter {
            // (a filter: every event handed over by `Source`, in order)
            r.filter = Some("$evt.$name =* \"*\"".into());
        }
        let (tables, stopped) = reef_analyses::analyse(&r, Cputop::new(100), true).unwrap();
        assert!(stopped.is_none(), "{stopped:?}");
        results_json(&tables).to_string()
    };
    let reference = run(1, true);
    // Every thread's time is there (the model read each switch's own
    // values).
    for tid in [11, 12, 13, 21, 22, 23, 24] {
        assert!(reference.contains(&format!("\"t{tid}\"")), "{reference}");
    }
    assert_eq!(run(1, false), reference, "on the calling thread");
    assert_eq!(run(2, false), reference, "on a second thread");
    std::fs::remove_dir_all(&dir).ok();
}
