//! `reef cputop`, `syscallstats`, `irqstats`, `irqlog`, `irqfreq`,
//! `schedstats`, `schedlog`, `schedtop`, `schedfreq`, `memtop`,
//! `iolatency`, `iolatencyfreq`, `iolatencytop`, `iolog`, `iousagetop`: the
//! kernel analyses of `reef-analyses`, as text tables or LAMI 1.0 JSON.
//!
//! LAMI mode (`--lami`) follows the protocol Trace Compass uses for
//! external analyses: `--mi-version` prints the version, `--metadata` the
//! analysis description, `--test-compatibility` checks the trace, and a
//! plain run prints `{"results": [...]}`; errors are `{"error-message":
//! ...}` on standard output as well.

use std::io::Write;
use std::process::ExitCode;

use reef_analyses::lami::{self, Table};
use reef_analyses::schedstats::Groups;
use reef_analyses::io::{self, Mode};
use reef_analyses::{cputop, irqstats, memtop, schedstats, syscallstats, Analysis};
use reef_read::{Source, TimeSpec};

use crate::render::fmt_dur;
use crate::source::ReadOpts;

/// Options every analysis takes.
#[derive(clap::Args, Debug)]
pub struct CommonArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print LAMI 1.0 JSON results (for Trace Compass) instead of text.
    #[arg(long)]
    pub lami: bool,
    /// Print the analysis' LAMI metadata (title, tables, columns) and exit.
    #[arg(long)]
    pub metadata: bool,
    /// Print the LAMI version spoken (1.0) and exit.
    #[arg(long)]
    pub mi_version: bool,
    /// Check that the trace can be analysed (a readable kernel trace) and
    /// exit.
    #[arg(long)]
    pub test_compatibility: bool,
    /// Accepted for LAMI compatibility; reef prints no progress lines.
    #[arg(long, hide = true)]
    pub output_progress: bool,
    /// Read wall-clock --begin/--end times as UTC rather than local time.
    #[arg(long)]
    pub gmt: bool,
    /// Analyse every event, not only the time range all streams cover (the
    /// stream intersection, which lttng-analyses uses by default).
    #[arg(long)]
    pub no_intersection: bool,
}

#[derive(clap::Args, Debug)]
pub struct CputopArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Show at most this many threads (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
}

#[derive(clap::Args, Debug)]
pub struct SyscallstatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(clap::Args, Debug)]
pub struct IrqstatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(clap::Args, Debug)]
pub struct SchedstatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub groups: GroupArgs,
}

/// The groups of `schedstats` and `schedfreq`, as lttng-analyses'.
#[derive(clap::Args, Debug)]
pub struct GroupArgs {
    /// Over all wakeups.
    #[arg(long)]
    pub total: bool,
    /// Per woken thread (the default when neither --total nor
    /// --per-prio is given).
    #[arg(long)]
    pub per_tid: bool,
    /// Per priority of the woken thread.
    #[arg(long)]
    pub per_prio: bool,
}

impl GroupArgs {
    fn groups(&self) -> Groups {
        Groups {
            total: self.total,
            per_tid: self.per_tid || !(self.total || self.per_prio),
            per_prio: self.per_prio,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SchedtopArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Show at most this many latencies (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
}

#[derive(clap::Args, Debug)]
pub struct SchedfreqArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub groups: GroupArgs,
    /// Buckets of each distribution.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq_resolution: u32,
}

#[derive(clap::Args, Debug)]
pub struct IrqfreqArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Buckets of each distribution.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq_resolution: u32,
}

/// lttng-analyses' `--min`/`--max`.
#[derive(clap::Args, Debug)]
pub struct DurationArgs {
    /// Leave out durations shorter than MIN microseconds.
    #[arg(long, value_name = "MIN")]
    pub min: Option<f64>,
    /// Leave out durations longer than MAX microseconds.
    #[arg(long, value_name = "MAX")]
    pub max: Option<f64>,
}

/// The I/O commands' options.
#[derive(clap::Args, Debug)]
pub struct IoArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub durations: DurationArgs,
    /// Leave out reads and writes of fewer than MINSIZE bytes.
    #[arg(long, value_name = "MINSIZE")]
    pub minsize: Option<f64>,
    /// Leave out reads and writes of more than MAXSIZE bytes.
    #[arg(long, value_name = "MAXSIZE")]
    pub maxsize: Option<f64>,
}

#[derive(clap::Args, Debug)]
pub struct IoTopArgs {
    #[command(flatten)]
    pub io: IoArgs,
    /// Show at most this many rows per table (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
}

#[derive(clap::Args, Debug)]
pub struct IoFreqArgs {
    #[command(flatten)]
    pub io: IoArgs,
    /// Buckets of each distribution.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq_resolution: u32,
}

#[derive(clap::Args, Debug)]
pub struct MemtopArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Show at most this many threads per table (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
}

pub fn cputop(a: &CputopArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, cputop::Cputop::new(a.limit))
}

pub fn syscallstats(a: &SyscallstatsArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, syscallstats::Syscallstats::new())
}

pub fn irqstats(a: &IrqstatsArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, irqstats::Irqstats::new())
}

pub fn irqlog(a: &IrqstatsArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, irqstats::Irqlog::new())
}

pub fn schedlog(a: &IrqstatsArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, reef_analyses::schedlog::Schedlog::new())
}

pub fn schedtop(a: &SchedtopArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, reef_analyses::schedlog::Schedlog::top(a.limit))
}

pub fn schedfreq(a: &SchedfreqArgs) -> anyhow::Result<ExitCode> {
    run(
        &a.common,
        reef_analyses::schedlog::Schedlog::freq(a.groups.groups(), a.freq_resolution as usize),
    )
}

pub fn irqfreq(a: &IrqfreqArgs) -> anyhow::Result<ExitCode> {
    run(
        &a.common,
        irqstats::Irqlog::freq(a.freq_resolution as usize),
    )
}

pub fn schedstats(a: &SchedstatsArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, schedstats::Schedstats::new(a.groups.groups()))
}

/// One of the I/O commands.
pub fn io(a: &IoArgs, mode: Mode) -> anyhow::Result<ExitCode> {
    let us = |v: Option<f64>| v.map(|v| v * 1000.0);
    let filter = io::Filter {
        min: us(a.durations.min),
        max: us(a.durations.max),
        minsize: a.minsize,
        maxsize: a.maxsize,
    };
    run(&a.common, io::Io::with_filter(mode, filter))
}

pub fn memtop(a: &MemtopArgs) -> anyhow::Result<ExitCode> {
    run(&a.common, memtop::Memtop::new(a.limit))
}

fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

fn run<A: Analysis>(a: &CommonArgs, analysis: A) -> anyhow::Result<ExitCode> {
    let lami_mode = a.lami || a.metadata || a.mi_version || a.test_compatibility;
    if a.mi_version {
        println!("1.0");
        return Ok(ExitCode::SUCCESS);
    }
    if a.metadata {
        print_json(&analysis.metadata_of().to_json())?;
        return Ok(ExitCode::SUCCESS);
    }
    let r = analyse(a, analysis);
    match r {
        Ok((tables, err)) => {
            if !a.test_compatibility {
                if lami_mode {
                    print_json(&lami::results_json(&tables))?;
                } else {
                    print_text(&tables)?;
                }
            }
            match err {
                None => Ok(ExitCode::SUCCESS),
                Some(e) => {
                    // The tables above cover the events before the error.
                    eprintln!("reef: error: {e:#}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Err(e) => {
            if lami_mode {
                print_json(&serde_json::json!({ "error-message": format!("{e:#}") }))?;
            }
            Err(e)
        }
    }
}

/// Runs the analysis (or only checks the trace, for
/// `--test-compatibility`); a trace error after the start is returned
/// beside the results computed up to it.
fn analyse<A: Analysis>(
    a: &CommonArgs,
    analysis: A,
) -> anyhow::Result<(Vec<Table>, Option<reef_read::Error>)> {
    let mut opts = a.read.options();
    opts.gmt = a.gmt;
    if a.test_compatibility {
        anyhow::ensure!(
            reef_analyses::is_kernel_trace(&Source::open(&opts)?),
            "not an LTTng kernel trace (no env.domain = \"kernel\")"
        );
        return Ok((Vec::new(), None));
    }
    Ok(reef_analyses::analyse(&opts, analysis, !a.no_intersection)?)
}

fn print_text(tables: &[Table]) -> anyhow::Result<()> {
    let mut s = String::new();
    if let Some(t) = tables.first() {
        s.push_str(&format!(
            "Time range: [{}, {}] ({} s)\n\n",
            fmt_dur(t.begin),
            fmt_dur(t.end),
            fmt_dur(t.end - t.begin)
        ));
    } else {
        s.push_str(
            "No results: no event in the time range, or none of those this analysis reports.\n",
        );
    }
    for t in tables {
        if t.rows.is_empty() {
            continue;
        }
        lami::table_text(t, &mut s);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `--begin`/`--end`: babeltrace2's formats, and also LAMI's `--begin=TS`
/// in nanoseconds (what Trace Compass passes): a plain integer too large
/// to be a number of seconds is taken as nanoseconds from the origin.
pub fn lami_time(a: clap::Arg) -> clap::Arg {
    a.value_parser(|s: &str| -> Result<TimeSpec, String> {
        match s.parse::<TimeSpec>() {
            Ok(t) => Ok(t),
            Err(e) => match s.trim().parse::<i64>() {
                Ok(ns) if ns.checked_mul(1_000_000_000).is_none() => Ok(TimeSpec::Ns(ns)),
                _ => Err(e.to_string()),
            },
        }
    })
}

/// `--limit`: a number of rows, or `unlimited` (LAMI) / 0 for all.
fn parse_limit(s: &str) -> Result<usize, String> {
    if s == "unlimited" {
        return Ok(0);
    }
    s.parse()
        .map_err(|_| format!("`{s}`: expected a number of rows or `unlimited`"))
}

/// The trace paths, required except for `--metadata` and `--mi-version`
/// (Trace Compass asks for those without a trace).
pub fn paths_optional(a: clap::Arg) -> clap::Arg {
    a.required(false)
        .required_unless_present_any(["metadata", "mi_version"])
}
