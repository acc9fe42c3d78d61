//! `reef activities`: intervals between a begin event and the matching end
//! event with the same key (per thread by default), e.g. a mutex held from
//! `lock:ACQUIRE` to `lock:RELEASE` of the same lock address (the engine:
//! `reef_engines::activities`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reef_engines::activities::{Activities, ActivitySpec};
use reef_engines::intervals::{run as run_intervals, ReportSpec};
use reef_read::{ReadOptions, TimeSpec};

use crate::report::{Printer, ReportOpts};
use crate::source::checked;

#[derive(clap::Args)]
#[command(
    after_help = "Example (the mutex of examples/demo.c, keyed by its address):
  reef activities --begin '$evt.$name == \"lock:ACQUIRE\"' \\
      --end '$evt.$name == \"lock:RELEASE\"' --key mutex --log examples/build/trace"
)]
pub struct ActivitiesArgs {
    /// Trace directories, or directories searched recursively for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Condition on an event that begins an activity, e.g.
    /// `$evt.$name == "lock:ACQUIRE"`.
    #[arg(long, value_name = "EXPR", value_parser = check_expr, required_unless_present = "script")]
    pub begin: Option<String>,
    /// Condition on an event that ends an activity.
    #[arg(long, value_name = "EXPR", value_parser = check_expr, required_unless_present = "script")]
    pub end: Option<String>,
    /// A Python script, run by the reef Python package (`python3 -m
    /// reef`): its `keep(event)` keeps the events the activities see, as
    /// --filter does (after it); without --begin/--end, its activity
    /// decoder class finds the activities (reports as JSON).
    #[arg(long, value_name = "FILE.py")]
    pub script: Option<PathBuf>,
    /// Fields whose values pair a begin with an end (`mutex`,
    /// `$evt.$ctx.vtid,$evt.irq`, ...). Default: the thread (context
    /// `vtid`/`tid`, or libreef's packet context `tid`), else the stream
    /// (one per CPU in kernel traces).
    #[arg(long, value_name = "FIELD[,FIELD]", value_parser = check_key)]
    pub key: Option<String>,
    /// Keep only the events for which this expression is true (before
    /// pairing).
    #[arg(long, value_name = "EXPR", value_parser = crate::source::parse_filter)]
    pub filter: Option<String>,
    /// Skip events before this time (the formats of `reef print --begin`).
    #[arg(long, value_name = "TIME")]
    pub from: Option<TimeSpec>,
    /// Stop after this time.
    #[arg(long, value_name = "TIME")]
    pub to: Option<TimeSpec>,
    /// Decode streams on this many worker threads.
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    /// Load this plugin (docs/plugins.md): a source plugin reads inputs
    /// in its format. Repeatable.
    #[arg(long = "plugin", value_name = "FILE.so")]
    pub plugins: Vec<PathBuf>,
    /// Read every input file that is not CTF with this source (`reef
    /// plugins` lists them).
    #[arg(short = 'i', long, value_name = "SOURCE")]
    pub input_format: Option<String>,
    #[command(flatten)]
    pub report: ReportOpts,
}

fn check_expr(s: &str) -> Result<String, String> {
    checked(s, reef_engines::activities::check_expr)
}

fn check_key(s: &str) -> Result<String, String> {
    checked(s, reef_engines::activities::check_key)
}

/// With `--script` and no `--begin`/`--end`/`--key`: the script's activity
/// decoder finds the activities (run by the Python package).
pub fn decoded_by_script(a: &ActivitiesArgs) -> bool {
    a.script.is_some() && a.begin.is_none() && a.end.is_none() && a.key.is_none()
}

pub fn run(a: &ActivitiesArgs) -> anyhow::Result<ExitCode> {
    if a.begin.is_none() || a.end.is_none() {
        anyhow::bail!(
            "--begin and --end define the activities together \
             (with --script alone, the script's decoder class finds them)"
        );
    }
    crate::source::use_sources(&a.plugins, a.input_format.as_deref());
    let read = ReadOptions {
        paths: a.paths.clone(),
        begin: a.from,
        end: a.to,
        gmt: false,
        workers: a.workers,
        filter: a.filter.clone(),
        // The script's keep(event), applied after --filter.
        script: a.script.clone(),
        ..Default::default()
    };
    let spec = ActivitySpec {
        begin: a.begin.clone().unwrap_or_default(),
        end: a.end.clone().unwrap_or_default(),
        key: a.key.clone(),
    };
    // By default, each activity and the statistics.
    let report = a.report.spec(ReportSpec {
        log: true,
        stats: true,
        ..Default::default()
    });
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut printer = Printer::new(&report, a.report.json, &mut out, false)?;
    let done = run_intervals(
        &read,
        &report,
        |src| Ok(Activities::new(&spec, src)?),
        |iv| printer.log(iv),
    )?;
    printer.finish(&done.report, done.passes)?;
    out.flush()?;
    let (unmatched, unkeyed) = (done.engine.unmatched_ends, done.engine.unkeyed);
    if unmatched > 0 {
        eprintln!("reef: note: {unmatched} end event(s) with no open activity of the same key");
    }
    if unkeyed > 0 {
        eprintln!("reef: note: {unkeyed} begin/end event(s) lack a key field and were skipped");
    }
    match done.stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
