//! The index and the decoder agree: the same windows asked of a view whose
//! index keeps every nanosecond (everything answered from the index) and
//! of one squeezed into the smallest budget (most windows decoded again
//! from checkpoints) give the same summaries. The answers themselves are
//! checked against babeltrace2's output by tests/view/api.

use std::sync::Arc;
use std::time::Duration;

use reef_read::ReadOptions;
use reef_view::index::{Phase, Sizes, View};
use reef_view::query::{self, Window};

fn ready(opts: &ReadOptions, budget: u64) -> Arc<View> {
    let sizes = Sizes {
        budget: Some(budget),
        // The tight index's checkpoints a few packets apart: decoding
        // again starts inside packets.
        spacing: (budget < 1 << 20).then_some(16 << 10),
        ..Sizes::default()
    };
    let v = View::open(opts.clone(), sizes).expect("open");
    loop {
        if v.base.read().unwrap().marks.phase != Phase::Building {
            return v;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn options(path: &str) -> ReadOptions {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    if !dir.exists() {
        panic!("missing {}", dir.display());
    }
    ReadOptions::new([dir])
}

fn check(path: &str, filter: Option<&str>) {
    let mut opts = options(path);
    opts.filter = filter.map(str::to_string);
    check_opts(&opts);
}

fn check_opts(opts: &ReadOptions) {
    let opts = opts.clone();
    let wide = ready(&opts, 1 << 30);
    let tight = ready(&opts, 1);
    let end = wide.base.read().unwrap().end;
    assert_eq!(end, tight.base.read().unwrap().end);
    {
        // The pass keeps where each stream stood at its checkpoints.
        let b = tight.base.read().unwrap();
        let inside = b
            .points
            .iter()
            .filter(|p| {
                p.places
                    .iter()
                    .any(|pl| matches!(pl, reef_ctf::Place::At { .. }))
            })
            .count();
        assert!(
            inside >= 5,
            "{inside} of {} checkpoints inside packets",
            b.points.len()
        );
    }
    let (k_wide, k_tight) = (
        wide.base.read().unwrap().marks.k,
        tight.base.read().unwrap().marks.k,
    );
    assert!(
        k_tight > k_wide + 4,
        "the tight index must be coarser ({k_tight} vs {k_wide})"
    );
    let mut seed = 7u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let (mut decoded, mut indexed) = (0, 0);
    for i in 0..150 {
        // Half the windows wide (the tight index answers them), half down
        // to a few ns (decoded).
        let span = (end as u64 + 1) >> rnd(if i % 2 == 0 { 4 } else { 28 });
        let from = rnd(end as u64) as i64;
        let w = Window {
            from,
            to: from + span.max(1) as i64,
            width: 1 + rnd(if i % 2 == 0 { 100 } else { 3000 }) as u32,
            rows: None,
            filter: None,
        };
        let json = |a: query::Answer| match a {
            query::Answer::Text(t) => serde_json::from_str::<serde_json::Value>(&t).expect("JSON"),
            query::Answer::Value(v) => v,
        };
        let mut a = json(query::window(&wide, &w).expect("wide"));
        let mut b = json(query::window(&tight, &w).expect("tight"));
        assert_eq!(a["source"], "index");
        if b["source"] == "decoded" {
            decoded += 1;
        } else {
            indexed += 1;
        }
        a["source"] = "".into();
        b["source"] = "".into();
        assert_eq!(a, b, "window [{}, {}) width {}", w.from, w.to, w.width);
    }
    assert!(
        decoded > 20 && indexed > 20,
        "decoded {decoded}, indexed {indexed}"
    );
}

#[test]
fn kernel_trace_index_equals_decoding() {
    check("../shared/conformance/kernel-traces/bug446190", None);
}

#[test]
fn kernel_trace_uneven_streams() {
    check("../shared/conformance/kernel-traces/uneven-streams", None);
}

#[test]
fn with_a_filter() {
    check(
        "../shared/conformance/kernel-traces/bug446190",
        Some("$evt.$name =* \"sched_*\""),
    );
}

#[test]
fn with_a_time_window() {
    // The middle half of the trace, as --begin/--end give it: the pass
    // trims each stream as the merged reading trims them all.
    let path = "../shared/conformance/kernel-traces/bug446190";
    let whole = ready(&options(path), 1 << 30);
    let (origin, end) = {
        let b = whole.base.read().unwrap();
        (b.origin.expect("events"), b.end)
    };
    let mut opts = options(path);
    opts.begin = Some(reef_read::TimeSpec::Ns(origin + end / 4));
    opts.end = Some(reef_read::TimeSpec::Ns(origin + end * 3 / 4));
    let part = ready(&opts, 1 << 30);
    let b = part.base.read().unwrap();
    assert_eq!(b.origin.map(|o| o >= origin + end / 4), Some(true));
    assert!(b.end <= end / 2 && b.marks.events > 0);
    drop(b);
    check_opts(&opts);
}
