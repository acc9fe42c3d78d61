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
    /// CTF: the version to write (1: CTF 1.8, 2: CTF 2); default: the
    /// input's.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub ctf_version: Option<u32>,
    /// Parquet: rows per row group.
    #[arg(long, default_value_t = 256 * 1024, value_name = "N")]
    pub row_group_rows: usize,
    /// Parquet: leave out the derived kernel tables (sched_slices,
    /// thread_states, syscalls, irqs).
    #[arg(long)]
    pub no_kernel_tables: bool,
    /// Perfetto, Chrome JSON: also write the activities that begin at the
    /// events matching this condition as slices (`reef activities
    /// --begin`).
    #[arg(long, value_name = "EXPR", value_parser = check_expr, requires = "activity_end")]
    pub activity_begin: Option<String>,
    /// The activities' end condition (`reef activities --end`).
    #[arg(long, value_name = "EXPR", value_parser = check_expr, requires = "activity_begin")]
    pub activity_end: Option<String>,
    /// The activities' key (`reef activities --key`; default: the thread).
    #[arg(long, value_name = "FIELD[,FIELD]", value_parser = check_key, requires = "activity_begin")]
    pub activity_key: Option<String>,
    /// The activities' slice name.
    #[arg(long, value_name = "NAME", default_value = "activity")]
    pub activity_name: String,
}

fn check_expr(s: &str) -> Result<String, String> {
    crate::source::checked(s, reef_engines::activities::check_expr)
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
            if matches!(a.to, Format::Parquet | Format::Ctf) {
                anyhow::bail!("--activity-begin/--activity-end: activities are written to --to perfetto and --to chrome-json only");
            }
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
    let stopped = match a.to {
        Format::Parquet => {
            let opts = reef_export::parquet::Options {
                row_group_rows: a.row_group_rows.max(1),
                kernel_tables: !a.no_kernel_tables,
                ..Default::default()
            };
            let (summary, stopped) = reef_export::parquet::write(src, &a.output, &opts)?;
            eprintln!(
                "reef: wrote {} events in {} files under {}",
                summary.events,
                summary.files.len(),
                a.output.display()
            );
            stopped
        }
        Format::Ctf => unreachable!("written by ctf()"),
        Format::ChromeJson => {
            let (events, stopped) =
                reef_export::chrome::write(src, &a.output, activities.as_mut())?;
            eprintln!("reef: wrote {events} events to {}", a.output.display());
            if let Some(act) = &activities {
                eprintln!("reef: wrote {} activities", act.count);
            }
            stopped
        }
        Format::Perfetto => {
            let (sum, stopped) = reef_export::perfetto::write(src, &a.output, activities.as_mut())?;
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

/// `--to ctf`: the filter is applied per stream by the writer, which
/// reads each stream on its own.
fn ctf(a: &ConvertArgs) -> anyhow::Result<ExitCode> {
    if a.activity_begin.is_some() {
        anyhow::bail!("--activity-begin/--activity-end: activities are written to --to perfetto and --to chrome-json only");
    }
    let mut opts = a.read.options();
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
    let (sum, stopped) = reef_export::ctf::write(
        src,
        filter,
        &inputs,
        &a.output,
        &reef_export::ctf::Options {
            ctf_version: a.ctf_version,
        },
    )?;
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
