//! The writers' path ([`Runner::emit`]: a log's rows made as they are
//! written) gives the bytes of the tables every front end gets
//! ([`reef_analyses::analyse_model`], rows held), in LAMI and in text, for
//! the logs and for analyses whose rows are held, on the shared kernel
//! traces, and so does the text several threads write of a log. (Both
//! paths are also checked against lttng-analyses' own output: the tables
//! by `references.rs`, the CLI's by tests/analyses/check-cli.py.)

use std::path::PathBuf;

use reef_analyses::io::{Io, Mode};
use reef_analyses::irqstats::{Irqlog, Irqstats};
use reef_analyses::lami::{table_text, table_text_in, write_results, Emitted};
use reef_analyses::schedlog::Schedlog;
use reef_analyses::Analysis;

fn trace_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/kernel-traces")
        .join(name)
}

/// LAMI and text of `tables`.
fn written(tables: &[Emitted]) -> (String, String) {
    let mut lami = Vec::new();
    write_results(tables, &mut lami).unwrap();
    let mut text = Vec::new();
    for t in tables {
        table_text(t, &mut text).unwrap();
    }
    (
        String::from_utf8(lami).unwrap(),
        String::from_utf8(text).unwrap(),
    )
}

/// Compares both paths for the analysis `mk` makes; the number of rows
/// made on demand.
fn same<A: Analysis>(trace: &str, mk: impl Fn() -> A) -> usize {
    let read = reef_read::ReadOptions::new([trace_dir(trace)]);
    let held = reef_analyses::analyse_model(&read, mk(), true).unwrap();
    assert!(held.stopped.is_none());
    let held: Vec<Emitted> = held.tables.into_iter().map(Emitted::held).collect();
    let mut run = reef_analyses::run_model(&read, mk(), true).unwrap();
    assert!(run.tables.is_empty());
    let model = run.model.as_mut().expect("events read");
    let emitted = model.emit();
    assert_eq!(emitted.len(), held.len());
    let made: usize = emitted
        .iter()
        .filter(|e| e.is_made())
        .map(Emitted::len)
        .sum();
    for (e, h) in emitted.iter().zip(&held) {
        assert_eq!(e.len(), h.len());
    }
    let (lami, text) = written(&emitted);
    let (want_lami, want_text) = written(&held);
    assert!(lami == want_lami, "{trace}: LAMI differs");
    assert!(text == want_text, "{trace}: text differs");
    // A log's text written by several threads, in chunks of a few rows
    // (the CLI shares only large logs' among threads).
    let mut shared = Vec::new();
    for e in &emitted {
        table_text_in(e, &mut shared, 3, 7).unwrap();
    }
    assert!(
        shared == want_text.as_bytes(),
        "{trace}: shared text differs"
    );
    made
}

#[test]
fn emitted_tables_are_the_tables() {
    for trace in ["bug446190", "uneven-streams"] {
        let logs = [
            same(trace, Irqlog::new),
            same(trace, Schedlog::new),
            same(trace, || Io::new(Mode::Log)),
        ];
        // (the logs' rows made on demand: all three have some on
        // bug446190; uneven-streams' interrupt log is empty, as
        // lttng-irqlog's, tests/analyses/references)
        let with_rows = logs.iter().filter(|&&n| n > 0).count();
        assert!(with_rows >= 2, "{trace}: {logs:?}");
        // Held rows go through as they are.
        assert_eq!(same(trace, Irqstats::new), 0);
        assert_eq!(same(trace, || Schedlog::top(5)), 0);
        assert_eq!(same(trace, || Io::new(Mode::Top(3))), 0);
    }
}
