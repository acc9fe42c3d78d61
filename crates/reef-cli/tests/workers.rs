//! Parallel decoding changes nothing: every trace read with one worker
//! (decoding on the main thread) and with several worker threads prints
//! the same bytes on stdout and stderr, with the same exit status — for
//! single-stream traces, multi-stream ones (the kernel traces: one stream
//! per CPU), several traces merged, discarded-event warnings, tracefile
//! rotation, session rotation, and with a time window.

mod common;

use common::{conformance, reef};

fn same(args: &[&str]) {
    let one = reef(&[&["print", "-j", "1"], args].concat());
    assert!(
        !one.stdout.is_empty() || !one.stderr.is_empty(),
        "{args:?}: no output at all"
    );
    for n in ["2", "3", "8"] {
        let many = reef(&[&["print", "-j", n], args].concat());
        assert_eq!(
            one.status.code(),
            many.status.code(),
            "{args:?} -j {n}: status"
        );
        assert!(one.stdout == many.stdout, "{args:?} -j {n}: stdout differs");
        assert!(one.stderr == many.stderr, "{args:?} -j {n}: stderr differs");
    }
}

#[test]
fn one_and_several_workers_print_the_same() {
    let c = conformance();
    let bt = c.join("babeltrace-traces/succeed");
    let kernel = c.join("kernel-traces");
    let traces = [
        kernel.join("bug446190"),
        kernel.join("uneven-streams"),
        kernel.clone(),
        bt.join("multi-domains"),
        bt.join("lttng-tracefile-rotation"),
        bt.join("session-rotation"),
        bt.join("warnings"),
        bt.join("wk-heartbeat-u"),
        bt.join("smalltrace"),
        bt.join("succeed1"),
        c.join("babeltrace-traces/fail"),
    ];
    let mut streams = 0;
    for t in &traces {
        assert!(t.is_dir(), "{} is missing", t.display());
        let t = t.to_str().unwrap();
        same(&[t]);
        same(&["--clock-cycles", "--no-delta", t]);
        streams += std::fs::read_dir(t).map(|d| d.count()).unwrap_or(0);
    }
    assert!(streams > 10);
    // A window inside a multi-stream trace (times from babeltrace2's
    // output of multi-domains: its 50th and 150th events).
    let md = bt.join("multi-domains");
    let md = md.to_str().unwrap();
    same(&[
        "--begin",
        "19:16:02.352534613",
        "--end",
        "19:16:02.352603687",
        md,
    ]);
    let win = reef(&[
        "print",
        "--begin",
        "19:16:02.352534613",
        "--end",
        "19:16:02.352603687",
        md,
    ]);
    let lines = win.stdout.iter().filter(|&&b| b == b'\n').count();
    // babeltrace2 2.0.4 prints 101 events for this window.
    assert_eq!(lines, 101);
}
