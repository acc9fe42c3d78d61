//! `reef sql`: SQL over the tables of `reef convert --to parquet`. The
//! query engine (DataFusion) is the separate binary `reef-sql`
//! (crates/reef-sql), so that building `reef` does not build it: this
//! command converts the traces it is given into a temporary dataset (the
//! reading options apply), then runs `reef-sql` over that and over the
//! datasets it is given, and removes the temporary dataset.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use reef_read::Source;

use crate::source::ReadOpts;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SqlFormat {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// A JSON array of objects, one per row.
    Json,
}

#[derive(clap::Args)]
pub struct SqlArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: SqlFormat,
}

/// The positional arguments' help: traces or datasets, then the query.
pub fn paths_then_query(a: clap::Arg) -> clap::Arg {
    a.value_name("TRACE_OR_DATASET... QUERY")
        .num_args(2..)
        .help(
            "Traces (or directories searched for traces) and datasets written by \
             `reef convert --to parquet`, then the query. Tables: events, \
             sched_slices, thread_states, syscalls, irqs, one per event class \
             (class.\"NAME\", or NAME alone); columns host and trace in each",
        )
}

/// Removes the temporary dataset when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory `reef convert --to parquet` wrote: tables, no trace.
fn is_dataset(p: &Path) -> bool {
    p.is_dir()
        && !p.join("metadata").exists()
        && (p.join("events").is_dir() || p.join("class").is_dir())
}

/// The engine binary: `$REEF_SQL`, else `reef-sql` beside this `reef`,
/// else where `cargo build --profile sql -p reef-sql` puts it next to a
/// `reef` in `target/release` (`target/sql`), else on the `PATH`.
fn engine() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REEF_SQL") {
        return Some(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        for p in [dir.join("reef-sql"), dir.join("../sql/reef-sql")] {
            if p.is_file() {
                return Some(p);
            }
        }
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("reef-sql"))
            .find(|p| p.is_file())
    })
}

pub fn run(a: &SqlArgs) -> anyhow::Result<ExitCode> {
    let (query, paths) = a
        .read
        .paths
        .split_last()
        .ok_or_else(|| anyhow::anyhow!("a query is needed after the traces or datasets"))?;
    let query = query
        .to_str()
        .ok_or_else(|| anyhow::anyhow!("the query is not valid UTF-8"))?;
    if paths.is_empty() {
        anyhow::bail!("give the traces or datasets to query, then the query");
    }
    let mut traces = Vec::new();
    let mut datasets = Vec::new();
    for p in paths {
        if !p.exists() {
            anyhow::bail!("{}: no such file or directory", p.display());
        }
        if is_dataset(p) {
            datasets.push(p.clone());
        } else {
            traces.push(p.clone());
        }
    }
    let windowed = a.read.begin.is_some() || a.read.end.is_some() || a.read.filter.is_some();
    if windowed && !datasets.is_empty() {
        anyhow::bail!(
            "{}: a dataset: --begin, --end and --filter apply to traces only (select rows with WHERE)",
            datasets[0].display()
        );
    }
    let Some(engine) = engine() else {
        anyhow::bail!(
            "reef sql runs its query engine, the `reef-sql` binary, which is not beside this reef ({}) nor on the PATH; \
             it is built separately because it takes minutes to build: \
             cargo build --profile sql -p reef-sql (then target/release/reef finds it in target/sql), \
             or cargo install --profile sql --path crates/reef-sql; REEF_SQL=/path/to/reef-sql chooses it",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
    };
    let mut tmp = None;
    let mut stopped = None;
    if !traces.is_empty() {
        let dir = std::env::temp_dir().join(format!(
            "reef-sql-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        let guard = TempDir(dir.clone());
        let mut opts = a.read.clone();
        opts.paths = traces;
        let src = Source::open(&opts.options())?;
        let (_, err) = reef_export::parquet::write(
            src,
            &dir,
            &reef_export::parquet::Options::default(),
            None,
        )?;
        stopped = err;
        datasets.push(dir);
        tmp = Some(guard);
    }
    let format = match a.format {
        SqlFormat::Table => "table",
        SqlFormat::Csv => "csv",
        SqlFormat::Json => "json",
    };
    let status = Command::new(&engine)
        .arg("--format")
        .arg(format)
        .args(&datasets)
        .arg(query)
        .status()
        .map_err(|e| anyhow::anyhow!("{}: cannot start the query engine: {e}", engine.display()))?;
    drop(tmp);
    // A damaged trace: the query ran over everything read before the
    // damage; the damage is reported and the exit status is 1.
    if let Some(e) = stopped {
        return Err(e.into());
    }
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
