//! The skim reader (`skim::for_each_event`, which folds the events the
//! model ignores ahead of the merge) against `reef_read::Source`'s merge
//! (taken with a filter that keeps every event, which hands every event
//! over in order): the same tables and the same error, on the kernel
//! traces whole, over time ranges, and with a stream file cut at offsets
//! spread over it (the reading then stops at the cut, where what the
//! merge reached before it must be what was analysed).

use std::path::{Path, PathBuf};

use reef_analyses::cputop::Cputop;
use reef_analyses::io::{Io, Mode};
use reef_analyses::irqstats::Irqstats;
use reef_analyses::lami::results_json;
use reef_analyses::memtop::Memtop;
use reef_analyses::schedstats::{Groups, Schedstats};
use reef_analyses::syscallstats::Syscallstats;
use reef_analyses::Analysis;
use reef_read::{ReadOptions, TimeSpec};

fn trace_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/kernel-traces")
        .join(name)
}

/// Tables (as LAMI JSON) and the error, through the skim reader decoding
/// on the calling thread, through it decoding on a second thread (both
/// with event plans compiled when first needed, as the `reef` command
/// reads), and through a `Source` (every plan compiled at opening).
fn both<A: Analysis>(read: &ReadOptions, mk: impl Fn() -> A) -> [String; 3] {
    let run = |read: &ReadOptions| match reef_analyses::analyse(read, mk(), true) {
        Ok((tables, stopped)) => format!(
            "{}\n{:?}",
            results_json(&tables),
            stopped.map(|e| e.to_string())
        ),
        Err(e) => format!("error: {e}"),
    };
    let mut here = read.clone();
    here.workers = Some(1);
    here.lazy_plans = true;
    let mut piped = read.clone();
    piped.workers = Some(2);
    piped.lazy_plans = true;
    let mut all = read.clone();
    all.lazy_plans = false;
    all.filter = Some("$evt.$name =* \"*\"".into());
    [run(&here), run(&piped), run(&all)]
}

/// Runs every analysis the three ways: how many, and how many stopped on an
/// error.
fn check(read: &ReadOptions, what: &str) -> (usize, usize) {
    let groups = Groups {
        total: true,
        per_tid: true,
        per_prio: true,
    };
    let runs = [
        ("cputop", both(read, || Cputop::new(0))),
        ("schedstats", both(read, || Schedstats::new(groups))),
        ("irqstats", both(read, Irqstats::new)),
        ("memtop", both(read, || Memtop::new(0))),
        ("syscallstats", both(read, Syscallstats::new)),
        ("iousagetop", both(read, || Io::new(Mode::Usage(0)))),
    ];
    for (name, [skim, piped, source]) in &runs {
        assert_eq!(skim, source, "{name} on {what}: skim reader vs Source");
        assert_eq!(
            piped, source,
            "{name} on {what}: pipelined skim reader vs Source"
        );
    }
    let errors = runs.iter().filter(|r| !r.1[0].ends_with("None")).count();
    (runs.len(), errors)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn whole_and_ranges() {
    for t in ["bug446190", "uneven-streams"] {
        let mut read = ReadOptions::new([trace_dir(t)]);
        assert_eq!(check(&read, t).1, 0);
        // (bug446190 spans 1412670961.2 to 1412670967.2 s)
        read.begin = Some(TimeSpec::Ns(1_412_670_963_000_000_000));
        read.end = Some(TimeSpec::Ns(1_412_670_965_000_000_000));
        assert_eq!(
            check(&read, &format!("{t} from 1412670963 s to 1412670965 s")).1,
            0
        );
    }
}

#[test]
fn cut_streams() {
    let src = trace_dir("bug446190");
    let work = std::env::temp_dir().join(format!("reef-fold-test-{}", std::process::id()));
    let (mut checked, mut errors) = (0, 0);
    for file in ["channel0_0", "channel0_1", "channel0_3"] {
        let len = std::fs::metadata(src.join(file)).unwrap().len();
        for k in 1..8 {
            // (offsets that fall inside packets, not on their bounds)
            let at = len * k / 8 + 997 * k;
            let dir = work.join(format!("{file}-{at}"));
            copy_dir(&src, &dir);
            let path = dir.join(file);
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(at).unwrap();
            let (n, e) = check(&ReadOptions::new([&dir]), &format!("{file} cut at {at}"));
            checked += n;
            errors += e;
            // The same bytes garbled instead: the reading stops with an
            // error there (or reads odd values and times).
            copy_dir(&src, &dir);
            let mut bytes = std::fs::read(&path).unwrap();
            let at = at as usize;
            bytes[at..at + 24].fill(0xa5);
            std::fs::write(&path, bytes).unwrap();
            let (n, e) = check(
                &ReadOptions::new([&dir]),
                &format!("{file} garbled at {at}"),
            );
            checked += n;
            errors += e;
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(checked, 3 * 7 * 2 * 6);
    // (the stops on an error are where the reader's choice matters most)
    assert!(errors >= 6 * 6, "only {errors} runs stopped on an error");
}
