//! `reef convert`: the traces read (window, filter) written again as CTF
//! traces (`reef_export::ctf`, the default), or for other tools: a
//! Parquet dataset (`reef_export::parquet`), a Chrome trace, a Perfetto
//! trace.

use std::path::PathBuf;
use std::process::ExitCode;

use reef_read::Source;

use crate::source::ReadOpts;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// CTF traces (a directory): the traces cut to the window and the
    /// filter, whole packets copied byte for byte.
    Ctf,
    /// A Parquet dataset (a directory; see docs/parquet.md).
    Parquet,
    /// Chrome's Trace Event format (a JSON file) for about:tracing and
    /// Perfetto's UI.
    ChromeJson,
    /// Perfetto's protobuf trace (a file) for Perfetto's UI and trace
    /// processor.
    Perfetto,
}

#[derive(clap::Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// What to write.
    #[arg(long, value_enum, default_value = "ctf")]
    pub to: Format,
    /// Where: a directory (ctf: created, one trace per input trace, at
    /// its path relative to its input; parquet: created, and added to
    /// when it holds other traces) or a file.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: PathBuf,
    /// CTF: the version to write (1.8 or 2); default: each input trace's
    /// own. A trace written in the other version gets its metadata
    /// translated (its stream files keep their bytes); what CTF 1.8 cannot
    /// express is refused.
    #[arg(long, value_name = "VERSION", value_parser = ctf_version)]
    pub ctf_version: Option<u32>,
    /// Parquet: rows per row group.
    #[arg(long, default_value_t = 256 * 1024, value_name = "N")]
    pub row_group_rows: usize,
    /// Parquet: leave out the derived kernel tables (sched_slices,
    /// thread_states, syscalls, irqs).
    #[arg(long)]
    pub no_kernel_tables: bool,
    /// Also write the activities that begin at the events matching this
    /// condition (`reef activities --begin`): slices on lanes (Perfetto,
    /// Chrome JSON), or the `activities` table (Parquet).
    #[arg(long, value_name = "EXPR", value_parser = check_expr, requires = "activity_end")]
    pub activity_begin: Option<String>,
    /// The activities' end condition (`reef activities --end`).
    #[arg(long, value_name = "EXPR", value_parser = check_expr, requires = "activity_begin")]
    pub activity_end: Option<String>,
    /// The activities' key (`reef activities --key`; default: the thread).
    #[arg(long, value_name = "FIELD[,FIELD]", value_parser = check_key, requires = "activity_begin")]
    pub activity_key: Option<String>,
    /// Perfetto, Chrome JSON: a counter track of an event's numeric field,
    /// `[NAME=]EVENT:FIELD` (e.g. `depth=my_app:queue:depth`), one track
    /// per process; repeat for more.
    #[arg(long = "counter", value_name = "[NAME=]EVENT:FIELD", value_parser = check_counter)]
    pub counters: Vec<String>,
    /// The activities' slice name.
    #[arg(long, value_name = "NAME", default_value = "activity")]
    pub activity_name: String,
}

fn check_expr(s: &str) -> Result<String, String> {
    crate::source::checked(s, reef_engines::activities::check_expr)
}

fn check_counter(s: &str) -> Result<String, String> {
    reef_export::counter::Counter::parse(s).map(|_| s.to_string())
}

fn check_key(s: &str) -> Result<String, String> {
    crate::source::checked(s, reef_engines::activities::check_key)
}

pub fn run(a: &ConvertArgs) -> anyhow::Result<ExitCode> {
    if a.to == Format::Ctf {
        return ctf(a);
    }
    let src = Source::open(&a.read.options())?;
    let mut activities = match (&a.activity_begin, &a.activity_end) {
        (Some(begin), Some(end)) => {
            let spec = reef_engines::activities::ActivitySpec {
                begin: begin.clone(),
                end: end.clone(),
                key: a.activity_key.clone(),
            };
            let engine = reef_engines::activities::Activities::new(&spec, &src)?;
            Some(reef_export::activity::ActivitySlices::new(
                engine,
                &a.activity_name,
            ))
        }
        _ => None,
    };
    let mut counters = a
        .counters
        .iter()
        .map(|s| reef_export::counter::Counter::parse(s).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !counters.is_empty() && a.to == Format::Parquet {
        anyhow::bail!("--counter: counters are written to --to perfetto and --to chrome-json (in Parquet, the event class's table holds the field)");
    }
    let stopped = match a.to {
        Format::Parquet => {
            let opts = reef_export::parquet::Options {
                row_group_rows: a.row_group_rows.max(1),
                kernel_tables: !a.no_kernel_tables,
                ..Default::default()
            };
            let (summary, stopped) =
                reef_export::parquet::write(src, &a.output, &opts, activities.as_mut())?;
            eprintln!(
                "reef: wrote {} events in {} files under {}",
                summary.events,
                summary.files.len(),
                a.output.display()
            );
            if let Some(act) = &activities {
                eprintln!("reef: wrote {} activities", act.count);
            }
            stopped
        }
        Format::Ctf => unreachable!("written by ctf()"),
        Format::ChromeJson => {
            let (events, stopped) =
                reef_export::chrome::write(src, &a.output, activities.as_mut(), &mut counters)?;
            eprintln!("reef: wrote {events} events to {}", a.output.display());
            if let Some(act) = &activities {
                eprintln!("reef: wrote {} activities", act.count);
            }
            stopped
        }
        Format::Perfetto => {
            let (sum, stopped) =
                reef_export::perfetto::write(src, &a.output, activities.as_mut(), &mut counters)?;
            eprintln!(
                "reef: wrote {} events ({} ftrace events, {} system call slices) to {}",
                sum.events,
                sum.ftrace_events,
                sum.syscall_slices,
                a.output.display()
            );
            if sum.activity_slices > 0 {
                eprintln!("reef: wrote {} activities", sum.activity_slices);
            }
            if sum.counter_values > 0 {
                eprintln!("reef: wrote {} counter values", sum.counter_values);
            }
            if sum.skipped > 0 {
                eprintln!(
                    "reef: left out {} events without a time or before the clock's origin",
                    sum.skipped
                );
            }
            stopped
        }
    };
    match stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The reading `opts` describes written as CTF traces under `out` (see
/// `reef_export::ctf::write`): the filter is applied per stream by the
/// writer, which reads each stream on its own.
pub fn write_ctf(
    mut opts: reef_read::ReadOptions,
    out: &std::path::Path,
    ctf_version: Option<u32>,
) -> anyhow::Result<(reef_export::ctf::Summary, Option<reef_read::Error>)> {
    // A script's verdicts (given in time order, after the window and the
    // filter) are sorted out per stream first.
    let verdicts = reef_read::script::per_stream(&opts)?;
    opts.script = None;
    opts.keepers = Default::default();
    let filter =
        match opts.filter.take() {
            Some(text) => Some(reef_filter::EventFilter::new(&text).map_err(|err| {
                reef_filter::LocatedError {
                    what: "filter".into(),
                    text: text.clone(),
                    err,
                }
            })?),
            None => None,
        };
    let inputs = opts.paths.clone();
    let src = Source::open(&opts)?;
    let opts = reef_export::ctf::Options {
        ctf_version,
        verdicts,
    };
    Ok(reef_export::ctf::write(src, filter, &inputs, out, &opts)?)
}

/// `--ctf-version`: `1.8` (or `1`) and `2` (or `2.0`) as the major version.
fn ctf_version(s: &str) -> Result<u32, String> {
    match s {
        "1" | "1.8" => Ok(1),
        "2" | "2.0" => Ok(2),
        _ => Err(format!("expected 1.8 or 2, got `{s}`")),
    }
}

/// `--to ctf`.
fn ctf(a: &ConvertArgs) -> anyhow::Result<ExitCode> {
    if a.activity_begin.is_some() || !a.counters.is_empty() {
        anyhow::bail!("--activity-begin/--activity-end, --counter: not written to CTF (--to parquet, perfetto or chrome-json write them)");
    }
    let (sum, stopped) = write_ctf(a.read.options(), &a.output, a.ctf_version)?;
    eprintln!(
        "reef: wrote {} trace{} ({} stream files, {} bytes) under {}: {} packets copied, {} written again ({} events, {} laid out anew; {} packets split)",
        sum.traces,
        if sum.traces == 1 { "" } else { "s" },
        sum.files,
        sum.bytes,
        a.output.display(),
        sum.packets_copied,
        sum.packets_written,
        sum.events_written,
        sum.events_relaid,
        sum.splits
    );
    match stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
