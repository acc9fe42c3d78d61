//! `reef check`: decode everything, report the shape of each trace
//! (computed by `reef_engines::shape`).

use std::process::ExitCode;

use reef_read::Source;

use crate::render::fmt_dur;
use crate::source::{Progress, ReadOpts};

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub read: ReadOpts,
}

pub fn run(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    let opts = reef_read::ReadOptions {
        keep_traces: true,
        ..a.read.options()
    };
    let mut src = Source::open(&opts)?;
    let _progress = Progress::start(&mut src, false);
    let (shapes, stopped) = reef_engines::shape::check(src, opts.worker_count());
    for s in &shapes {
        let name = if s.name.is_empty() {
            "unnamed"
        } else {
            &s.name
        };
        println!("trace {} ({name})", s.path.display());
        println!(
            "  streams: {}, packets: {}, event classes: {}",
            s.streams, s.packets, s.event_classes
        );
        println!("  events: {}", s.events);
        match (s.first_ns, s.last_ns) {
            (Some(f), Some(l)) => println!(
                "  time range: {} .. {} ({} s)",
                fmt_dur(f),
                fmt_dur(l),
                fmt_dur(l - f)
            ),
            _ => println!("  time range: none (no clock)"),
        }
        println!(
            "  discarded: {} events, {} packets",
            s.discarded_events, s.discarded_packets
        );
    }
    match stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
