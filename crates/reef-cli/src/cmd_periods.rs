//! `reef periods`: lttng-periodlog / -periodstats / -periodfreq /
//! -periodtop in one command (the engine: `reef_engines::periods`).

use std::io::Write;
use std::process::ExitCode;

use reef_engines::intervals::{run as run_intervals, ReportSpec};
use reef_engines::periods::{PeriodSpec, Periods};

use crate::report::{Printer, ReportOpts};
use crate::source::{checked, ReadOpts};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  # time from each irq_handler_entry to the exit of the same IRQ on the same CPU
  reef periods --period 'irq : $evt.$name == \"irq_handler_entry\" : \\
      $evt.$name == \"irq_handler_exit\" && $evt.irq == $begin.$evt.irq && \\
      $evt.cpu_id == $begin.$evt.cpu_id' --freq TRACE
  # a parent period per worker, a child per lock hold of that worker's thread
  reef periods --period 'work : $evt.$name == \"worker:BEGIN\" : $evt.$name == \"worker:END\" && $evt.id == $begin.$evt.id' \\
      --period 'hold(work) : $evt.$name == \"lock:ACQUIRE\" && $evt.id == $parent.$begin.$evt.id : \\
      $evt.$name == \"lock:RELEASE\" && $evt.id == $begin.$evt.id' \\
      --period-captures 'hold : id = $evt.id' --group-by id --stats TRACE")]
pub struct PeriodsArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// A period: `NAME[(PARENT)] : BEGIN_EXPR [: END_EXPR]` (repeatable;
    /// a parent must be defined before its children).
    #[arg(long, required = true, value_name = "DEF", value_parser = check_period)]
    pub period: Vec<String>,
    /// What to record of each period of NAME: `NAME : [N =] REF, ... [:
    /// [N =] REF, ...]`, from its begin event then its end event.
    #[arg(long, value_name = "CAPTURES", value_parser = check_captures)]
    pub period_captures: Vec<String>,
    /// Group the statistics by these capture names.
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    pub group_by: Vec<String>,
    #[command(flatten)]
    pub report: ReportOpts,
}

fn check_period(s: &str) -> Result<String, String> {
    checked(s, reef_engines::periods::check_period)
}

fn check_captures(s: &str) -> Result<String, String> {
    checked(s, reef_engines::periods::check_captures)
}

pub fn run(a: &PeriodsArgs) -> anyhow::Result<ExitCode> {
    let spec = PeriodSpec {
        periods: a.period.clone(),
        captures: a.period_captures.clone(),
        group_by: a.group_by.clone(),
    };
    // Definitions are checked before anything is printed.
    Periods::new(&spec)?;
    let report = a.report.spec(ReportSpec {
        stats: true,
        ..Default::default()
    });
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut printer = Printer::new(&report, a.report.json, &mut out, true)?;
    let done = run_intervals(
        &a.read.options(),
        &report,
        |_| Ok(Periods::new(&spec)?),
        |iv| printer.log(iv),
    )?;
    printer.finish(&done.report, done.passes)?;
    out.flush()?;
    match done.stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
