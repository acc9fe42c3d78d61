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

use reef_analyses::io::{self, Mode};
use reef_analyses::lami::{self, Emitted};
use reef_analyses::schedstats::Groups;
use reef_analyses::select::{Select, Selected};
use reef_analyses::{cputop, irqstats, memtop, schedstats, syscallstats, Analysis, Runner};
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
    /// Only these CPUs (comma-separated ids), as lttng-analyses' --cpu.
    #[arg(long, value_name = "CPUS", value_delimiter = ',')]
    pub cpu: Option<Vec<i64>>,
}

/// lttng-analyses' `--tid`/`--procname`.
#[derive(clap::Args, Debug)]
pub struct ProcArgs {
    /// Only these threads (comma-separated ids).
    #[arg(long, value_name = "TIDS", value_delimiter = ',')]
    pub tid: Option<Vec<i64>>,
    /// Only threads of these names (comma-separated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub procname: Option<Vec<String>>,
}

/// lttng-analyses' `--irq`/`--softirq`.
#[derive(clap::Args, Debug)]
pub struct IrqSelArgs {
    /// Only these hard IRQs (comma-separated numbers; without --softirq,
    /// no softirq).
    #[arg(long, value_name = "IRQS", value_delimiter = ',')]
    pub irq: Option<Vec<i64>>,
    /// Only these softirqs (comma-separated vectors; without --irq, no
    /// hard IRQ).
    #[arg(long, value_name = "VECS", value_delimiter = ',')]
    pub softirq: Option<Vec<i64>>,
}

/// The choice of what to analyse, from the options a command has.
fn select(
    c: &CommonArgs,
    p: Option<&ProcArgs>,
    d: Option<&DurationArgs>,
    i: Option<&IrqSelArgs>,
) -> Select {
    let us = |v: Option<f64>| v.map(|v| v * 1000.0);
    Select {
        cpus: c.cpu.clone(),
        tids: p.and_then(|p| p.tid.clone()),
        procnames: p.and_then(|p| p.procname.clone()),
        min: d.and_then(|d| us(d.min)),
        max: d.and_then(|d| us(d.max)),
        irqs: i.and_then(|i| i.irq.clone()),
        softirqs: i.and_then(|i| i.softirq.clone()),
    }
}

#[derive(clap::Args, Debug)]
pub struct CputopArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub procs: ProcArgs,
    /// Show at most this many threads (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
    /// Accepted as lttng-analyses accepts it; no effect (its cputop and
    /// memtop always show their top).
    #[arg(long)]
    pub top: bool,
}

#[derive(clap::Args, Debug)]
pub struct SyscallstatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub procs: ProcArgs,
}

#[derive(clap::Args, Debug)]
pub struct IrqstatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub durations: DurationArgs,
    #[command(flatten)]
    pub irqs: IrqSelArgs,
}

/// The scheduling commands' selection.
#[derive(clap::Args, Debug)]
pub struct SchedArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub procs: ProcArgs,
    #[command(flatten)]
    pub durations: DurationArgs,
}

impl SchedArgs {
    fn select(&self) -> Select {
        select(&self.common, Some(&self.procs), Some(&self.durations), None)
    }
}

#[derive(clap::Args, Debug)]
pub struct SchedstatsArgs {
    #[command(flatten)]
    pub sched: SchedArgs,
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
    pub sched: SchedArgs,
    /// Show at most this many latencies (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
}

/// lttng-analyses' frequency distribution options.
#[derive(clap::Args, Debug)]
pub struct FreqArgs {
    /// Buckets of each distribution.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq_resolution: u32,
    /// One range for all distributions: --min/--max if given, else from
    /// the shortest to the longest of all.
    #[arg(long)]
    pub freq_uniform: bool,
    /// The distributions side by side in one table (implies
    /// --freq-uniform).
    #[arg(long)]
    pub freq_series: bool,
}

impl FreqArgs {
    fn resolution(&self) -> usize {
        self.freq_resolution as usize
    }

    fn opts(&self, sel: &Select) -> reef_analyses::stats::FreqOpts {
        reef_analyses::stats::FreqOpts {
            min: sel.min,
            max: sel.max,
            uniform: self.freq_uniform,
            series: self.freq_series,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SchedfreqArgs {
    #[command(flatten)]
    pub sched: SchedArgs,
    #[command(flatten)]
    pub groups: GroupArgs,
    #[command(flatten)]
    pub freq: FreqArgs,
}

#[derive(clap::Args, Debug)]
pub struct IrqfreqArgs {
    #[command(flatten)]
    pub irq: IrqstatsArgs,
    #[command(flatten)]
    pub freq: FreqArgs,
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
    /// Accepted as lttng-iolatencyfreq 0.6.1 accepts it; no effect there
    /// (each distribution keeps its own range).
    #[arg(long)]
    pub freq_uniform: bool,
    /// Accepted as lttng-iolatencyfreq 0.6.1 accepts it; no effect there.
    #[arg(long)]
    pub freq_series: bool,
}

#[derive(clap::Args, Debug)]
pub struct MemtopArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub procs: ProcArgs,
    /// Show at most this many threads per table (0 or `unlimited`: all).
    #[arg(long, default_value = "10", value_parser = parse_limit)]
    pub limit: usize,
    /// Accepted as lttng-analyses accepts it; no effect (its cputop and
    /// memtop always show their top).
    #[arg(long)]
    pub top: bool,
}

pub fn cputop(a: &CputopArgs) -> anyhow::Result<ExitCode> {
    let sel = select(&a.common, Some(&a.procs), None, None);
    run(&a.common, cputop::Cputop::with_select(a.limit, sel))
}

pub fn syscallstats(a: &SyscallstatsArgs) -> anyhow::Result<ExitCode> {
    let sel = select(&a.common, Some(&a.procs), None, None);
    run(
        &a.common,
        Selected::new(syscallstats::Syscallstats::new(), sel),
    )
}

impl IrqstatsArgs {
    fn select(&self) -> Select {
        select(&self.common, None, Some(&self.durations), Some(&self.irqs))
    }
}

pub fn irqstats(a: &IrqstatsArgs) -> anyhow::Result<ExitCode> {
    run(
        &a.common,
        Selected::new(irqstats::Irqstats::new(), a.select()),
    )
}

pub fn irqlog(a: &IrqstatsArgs) -> anyhow::Result<ExitCode> {
    run(
        &a.common,
        Selected::new(irqstats::Irqlog::new(), a.select()),
    )
}

pub fn schedlog(a: &SchedArgs) -> anyhow::Result<ExitCode> {
    let an = reef_analyses::schedlog::Schedlog::new();
    run(&a.common, Selected::new(an, a.select()))
}

pub fn schedtop(a: &SchedtopArgs) -> anyhow::Result<ExitCode> {
    let an = reef_analyses::schedlog::Schedlog::top(a.limit);
    run(&a.sched.common, Selected::new(an, a.sched.select()))
}

pub fn schedfreq(a: &SchedfreqArgs) -> anyhow::Result<ExitCode> {
    let sel = a.sched.select();
    let an = reef_analyses::schedlog::Schedlog::freq(a.groups.groups(), a.freq.resolution())
        .with_freq(a.freq.opts(&sel));
    run(&a.sched.common, Selected::new(an, sel))
}

pub fn irqfreq(a: &IrqfreqArgs) -> anyhow::Result<ExitCode> {
    let mut sel = a.irq.select();
    // (the lists choose what is shown, not what a uniform range spans)
    let only = Select {
        irqs: sel.irqs.take(),
        softirqs: sel.softirqs.take(),
        ..Select::default()
    };
    let an = irqstats::Irqlog::freq(a.freq.resolution()).with_freq(a.freq.opts(&sel), only);
    run(&a.irq.common, Selected::new(an, sel))
}

pub fn schedstats(a: &SchedstatsArgs) -> anyhow::Result<ExitCode> {
    let an = schedstats::Schedstats::new(a.groups.groups());
    run(&a.sched.common, Selected::new(an, a.sched.select()))
}

/// One of the I/O commands.
pub fn io(a: &IoArgs, mode: Mode) -> anyhow::Result<ExitCode> {
    if a.common.cpu.is_some() {
        // (as lttng-analyses' I/O analysis)
        eprintln!("reef: warning: --cpu does not apply to the I/O analyses");
    }
    let sel = select(&a.common, None, Some(&a.durations), None);
    let filter = io::Filter {
        min: sel.min,
        max: sel.max,
        minsize: a.minsize,
        maxsize: a.maxsize,
    };
    let io = io::Io::with_filter(mode, filter).on_workers(a.common.read.workers);
    run(&a.common, io)
}

pub fn memtop(a: &MemtopArgs) -> anyhow::Result<ExitCode> {
    let sel = select(&a.common, Some(&a.procs), None, None);
    run(&a.common, Selected::new(memtop::Memtop::new(a.limit), sel))
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
        Ok((mut model, err)) => {
            // (a log's rows are made as they are written)
            let tables = model.as_mut().map(|m| m.emit()).unwrap_or_default();
            if !a.test_compatibility {
                if lami_mode {
                    let mut out =
                        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                    lami::write_results(&tables, &mut out)?;
                    out.write_all(b"\n")?;
                    out.flush()?;
                } else {
                    print_text(&tables, a.read.workers)?;
                }
            }
            // The process ends here: its memory goes back whole. Freeing
            // a log's records, or the model's threads and descriptors,
            // one by one took a few percent of the run on 10 M events.
            std::mem::forget(tables);
            std::mem::forget(model);
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
/// `--test-compatibility`: no model then); a trace error after the start
/// is returned beside the model as it was then.
fn analyse<A: Analysis>(
    a: &CommonArgs,
    analysis: A,
) -> anyhow::Result<(Option<Runner<A>>, Option<reef_read::Error>)> {
    let mut opts = a.read.options();
    opts.gmt = a.gmt;
    opts.keep_traces = true;
    opts.lazy_plans = true;
    if a.test_compatibility {
        anyhow::ensure!(
            reef_analyses::is_kernel_trace(&Source::open(&opts)?),
            "not an LTTng kernel trace (no env.domain = \"kernel\")"
        );
        return Ok((None, None));
    }
    let done = reef_analyses::run_model(&opts, analysis, !a.no_intersection)?;
    for m in &done.missing {
        eprintln!("reef: note: {m}");
    }
    Ok((done.model, done.stopped))
}

fn print_text(tables: &[Emitted], workers: Option<usize>) -> anyhow::Result<()> {
    // (written as it is made: a log's text is as large as its trace)
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if let Some(t) = tables.first().map(|e| &e.table) {
        writeln!(
            out,
            "Time range: [{}, {}] ({} s)\n",
            fmt_dur(t.begin),
            fmt_dur(t.end),
            fmt_dur(t.end - t.begin)
        )?;
    } else {
        writeln!(
            out,
            "No results: no event in the time range, or none of those this analysis reports."
        )?;
    }
    for t in tables {
        if t.is_empty() {
            continue;
        }
        lami::table_text_on(t, &mut out, workers)?;
    }
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
