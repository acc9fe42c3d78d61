//! Times one analysis over a trace, for profiling without the CLI:
//! `cargo run --release -p reef-analyses --example speed -- cputop TRACE [RUNS]`
//! prints the best run's wall-clock and CPU time (Linux: the thread's
//! time on a CPU, which a loaded machine does not inflate).

use std::time::Instant;

use reef_analyses::io::{Io, Mode};
use reef_analyses::schedstats::{Groups, Schedstats};
use reef_analyses::{analyse, cputop, irqstats, memtop, syscallstats, Analysis};
use reef_read::ReadOptions;

/// This thread's time on a CPU so far, in seconds.
fn cpu_time() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: f64 = s
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    ns / 1e9
}

fn time<A: Analysis>(read: &ReadOptions, runs: usize, mk: impl Fn() -> A) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_time());
        let (tables, err) = analyse(read, mk(), true).expect("analysis");
        assert!(err.is_none() && !tables.is_empty());
        wall = wall.min(t.elapsed().as_secs_f64());
        cpu = cpu.min(cpu_time() - c);
    }
    (wall, cpu)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (name, trace) = (&args[0], &args[1]);
    let runs = args.get(2).map_or(3, |r| r.parse().expect("RUNS"));
    let read = ReadOptions::new([trace.as_str()]);
    let all = Groups {
        total: true,
        per_tid: true,
        per_prio: true,
    };
    let (wall, cpu) = match name.as_str() {
        "cputop" => time(&read, runs, || cputop::Cputop::new(10)),
        "syscallstats" => time(&read, runs, syscallstats::Syscallstats::new),
        "irqstats" => time(&read, runs, irqstats::Irqstats::new),
        "schedstats" => time(&read, runs, || Schedstats::new(all)),
        "memtop" => time(&read, runs, || memtop::Memtop::new(10)),
        "iolatency" => time(&read, runs, || Io::new(Mode::Stats)),
        _ => panic!("unknown analysis {name}"),
    };
    println!("{name}: {wall:.3} s wall, {cpu:.3} s CPU");
}
