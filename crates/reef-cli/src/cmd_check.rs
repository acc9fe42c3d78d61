//! `reef check`: decode everything, report the shape of each trace.

use std::process::ExitCode;

use reef_ctf::Item;

use crate::source::{ReadOpts, Source};

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub read: ReadOpts,
}

#[derive(Default)]
struct Shape {
    streams: usize,
    event_classes: usize,
    events: u64,
    first_ns: Option<i64>,
    last_ns: Option<i64>,
    discarded_events: u64,
    discarded_packets: u64,
    packets: u64,
}

pub fn run(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    let mut src = Source::open(&a.read)?;
    let _progress = src.progress(false);
    let mut shapes: Vec<Shape> = src
        .traces
        .iter()
        .map(|t| Shape {
            streams: t.sources.len(),
            event_classes: t.meta().streams.iter().map(|s| s.events.len()).sum(),
            ..Default::default()
        })
        .collect();
    let (traces, labels, trace_of) = (src.traces.clone(), src.labels.clone(), src.trace_of.clone());
    let cut = src.cut().cloned();
    // Without a filter, every stream is decoded on its own (in parallel
    // with -j): the results are per trace, the order across streams does
    // not matter.
    let r = match src.scan_streams(a.read.worker_count()) {
        Some(scans) => {
            let mut first_err: Option<(i64, reef_ctf::Error)> = None;
            for (i, sc) in scans.into_iter().enumerate() {
                let s = &mut shapes[trace_of[i]];
                s.events += sc.events;
                s.packets += sc.packets;
                s.discarded_events += sc.discarded_events;
                s.discarded_packets += sc.discarded_packets;
                if let Some(f) = sc.first_ns {
                    s.first_ns = Some(s.first_ns.map_or(f, |x| x.min(f)));
                }
                if let Some(l) = sc.last_ns {
                    s.last_ns = Some(s.last_ns.map_or(l, |x| x.max(l)));
                }
                if let Some((at, e)) = sc.error {
                    if first_err.as_ref().is_none_or(|(t, _)| at < *t) {
                        first_err = Some((at, e));
                    }
                }
            }
            match first_err {
                Some((_, e)) => Err(e),
                // All read: a capture's cut is an error (without --end,
                // which may stop before it).
                None => match (&a.read.end, cut) {
                    (None, Some(c)) => Err(c.error()),
                    _ => Ok(()),
                },
            }
        }
        None => {
            let mut src = Source::open(&a.read)?;
            let r = (|| -> Result<(), reef_ctf::Error> {
                while let Some(m) = src.next()? {
                    let s = &mut shapes[m.trace];
                    match m.item {
                        Item::Event => {
                            s.events += 1;
                            if let Some(ns) = m.ns {
                                s.first_ns = Some(s.first_ns.map_or(ns, |f| f.min(ns)));
                                s.last_ns = Some(s.last_ns.map_or(ns, |l| l.max(ns)));
                            }
                        }
                        Item::DiscardedEvents { count, .. } => {
                            s.discarded_events += count.unwrap_or(0)
                        }
                        Item::DiscardedPackets { count, .. } => s.discarded_packets += count,
                    }
                }
                Ok(())
            })();
            for (i, c) in src.cursors().iter().enumerate() {
                shapes[src.trace_of[i]].packets += c.packets_read;
            }
            r
        }
    };
    for ((t, l), s) in traces.iter().zip(&labels).zip(&shapes) {
        println!(
            "trace {} ({})",
            t.path.display(),
            if l.name.is_empty() {
                "unnamed"
            } else {
                &l.name
            }
        );
        println!(
            "  streams: {}, packets: {}, event classes: {}",
            s.streams, s.packets, s.event_classes
        );
        println!("  events: {}", s.events);
        match (s.first_ns, s.last_ns) {
            (Some(f), Some(l)) => println!(
                "  time range: {} .. {} ({} s)",
                secs(f),
                secs(l),
                secs(l - f)
            ),
            _ => println!("  time range: none (no clock)"),
        }
        println!(
            "  discarded: {} events, {} packets",
            s.discarded_events, s.discarded_packets
        );
    }
    r?;
    Ok(ExitCode::SUCCESS)
}

fn secs(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}
