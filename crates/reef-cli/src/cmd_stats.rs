//! `reef stats`: what a trace holds — events per name, per stream/CPU, per
//! thread and process; time range and rates; discarded events and packets
//! (computed by `reef_engines::stats`).

use std::io::Write;
use std::process::ExitCode;

use reef_engines::stats;
use reef_read::Source;

use crate::render::{fmt_dur, fmt_rate, fmt_time, limit, table};
use crate::source::ReadOpts;

#[derive(clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show at most this many rows per table (0: all).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub top: usize,
}

pub fn run(a: &StatsArgs) -> anyhow::Result<ExitCode> {
    let (st, failure) = stats::collect(&mut Source::open(&reef_read::ReadOptions {
        keep_traces: true,
        ..a.read.options()
    })?);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &st)?;
        writeln!(out)?;
        return done(failure);
    }
    writeln!(out, "events             {}", st.events)?;
    writeln!(out, "first              {}", fmt_time(st.first_ns))?;
    writeln!(out, "last               {}", fmt_time(st.last_ns))?;
    writeln!(
        out,
        "duration           {} s",
        st.duration_ns.map_or("-".into(), fmt_dur)
    )?;
    writeln!(
        out,
        "rate               {} events/s",
        fmt_rate(st.rate_per_s)
    )?;
    writeln!(out, "packets            {}", st.packets)?;
    writeln!(out, "discarded events   {}", st.discarded_events)?;
    writeln!(out, "discarded packets  {}", st.discarded_packets)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = limit(&st.event_names, a.top)
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.count.to_string(),
                format!("{:.2}", r.count as f64 * 100.0 / st.events.max(1) as f64),
                fmt_rate(r.rate_per_s),
            ]
        })
        .collect();
    table(&mut out, &["event", "count", "%", "per second"], &rows)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = limit(&st.streams, a.top)
        .iter()
        .map(|r| {
            vec![
                r.path.clone(),
                r.cpu_id.map_or("-".into(), |c| c.to_string()),
                r.events.to_string(),
                r.packets.to_string(),
                r.discarded_events.to_string(),
                r.discarded_packets.to_string(),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "stream",
            "cpu",
            "events",
            "packets",
            "discarded events",
            "discarded packets",
        ],
        &rows,
    )?;
    if !st.threads.is_empty() {
        writeln!(out)?;
        let rows: Vec<Vec<String>> = limit(&st.threads, a.top)
            .iter()
            .map(|r| {
                vec![
                    r.tid.to_string(),
                    r.pid.map_or("-".into(), |p| p.to_string()),
                    r.events.to_string(),
                    r.name.clone().unwrap_or_default(),
                ]
            })
            .collect();
        table(&mut out, &["tid", "pid", "events", "name "], &rows)?;
    }
    if !st.processes.is_empty() {
        writeln!(out)?;
        let rows: Vec<Vec<String>> = limit(&st.processes, a.top)
            .iter()
            .map(|r| {
                vec![
                    r.pid.to_string(),
                    r.events.to_string(),
                    r.name.clone().unwrap_or_default(),
                ]
            })
            .collect();
        table(&mut out, &["pid", "events", "name "], &rows)?;
    }
    done(failure)
}

/// Success, or the error that stopped the reading (after the report).
fn done(failure: Option<reef_read::Error>) -> anyhow::Result<ExitCode> {
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
