//! `reef-sql`: SQL over the Parquet datasets of `reef convert --to
//! parquet`, on DataFusion, embedded. `reef sql` runs it (after converting
//! any trace it is given into a temporary dataset); it is its own binary
//! so that building `reef` does not build a query engine (docs/export.md, "SQL").
//!
//! Tables, from every dataset directory given (their files together):
//! each top-level directory of Parquet files (`events`, `sched_slices`,
//! `thread_states`, `syscalls`, `irqs`, …) and, in the schema `class`,
//! one table per event class (`class."lttng_ust_tracef:event"`); an event
//! class table is also reachable unqualified when no top-level table has
//! its name. The Hive partitions `host` and `trace` are columns of every
//! table (their `%XX` escapes decoded).
//!
//! Output: the result as an aligned text table, CSV with a header line,
//! or a JSON array of objects (nulls written). CSV and JSON are written
//! batch by batch as the engine produces them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// A JSON array of objects, one per row (nulls written).
    Json,
}

/// SQL over reef's Parquet datasets (`reef convert --to parquet`).
#[derive(clap::Parser)]
#[command(
    name = "reef-sql",
    override_usage = "reef-sql [OPTIONS] DATASET... QUERY"
)]
struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Dataset directories (made by `reef convert --to parquet`), then
    /// the query.
    #[arg(required = true, num_args = 2.., value_name = "DATASET... QUERY")]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let args = <Args as clap::Parser>::parse();
    let (query, roots) = args.args.split_last().expect("clap requires 2 values");
    let roots: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("reef-sql: error: starting the query engine's threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&roots, query, args.format)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `reef sql … | head`: a closed pipe is not an error (the CSV
            // and JSON writers give it back as their own error's text).
            let pipe = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                || format!("{e:#}").contains("Broken pipe (os error 32)");
            if pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("reef-sql: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(roots: &[PathBuf], query: &str, format: Format) -> anyhow::Result<()> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_information_schema(true));
    register(&ctx, roots).await?;
    let df = ctx.sql(query).await.map_err(strip)?;
    let schema: Arc<Schema> = Arc::new(df.schema().as_arrow().clone());
    let mut stream = df.execute_stream().await.map_err(strip)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        Format::Table => {
            let mut batches = Vec::new();
            while let Some(b) = stream.next().await {
                batches.push(b.map_err(strip)?);
            }
            let text = datafusion::arrow::util::pretty::pretty_format_batches_with_schema(
                schema, &batches,
            )?;
            writeln!(out, "{text}")?;
        }
        Format::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            let mut any = false;
            while let Some(b) = stream.next().await {
                w.write(&b.map_err(strip)?)?;
                any = true;
            }
            drop(w);
            if !any {
                // No rows: the header alone.
                let empty = RecordBatch::new_empty(schema);
                let mut w = datafusion::arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut out);
                w.write(&empty)?;
            }
        }
        Format::Json => {
            let mut w = datafusion::arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, datafusion::arrow::json::writer::JsonArray>(&mut out);
            while let Some(b) = stream.next().await {
                w.write(&b.map_err(strip)?)?;
            }
            w.finish()?;
            drop(w);
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// DataFusion's errors, with their context but without the backtrace
/// hint text.
fn strip(e: datafusion::error::DataFusionError) -> anyhow::Error {
    anyhow::anyhow!("{}", e.strip_backtrace())
}

/// A table's directory in each dataset that has it.
type Tables = BTreeMap<String, Vec<PathBuf>>;

/// Registers the tables found under `roots`.
async fn register(ctx: &SessionContext, roots: &[PathBuf]) -> anyhow::Result<()> {
    let mut top: Tables = BTreeMap::new();
    let mut class: Tables = BTreeMap::new();
    for root in roots {
        let meta = std::fs::metadata(root).with_context(|| format!("{}", root.display()))?;
        if !meta.is_dir() {
            bail!(
                "{}: not a directory (a dataset is the directory `reef convert --to parquet` writes)",
                root.display()
            );
        }
        let mut found = false;
        for (name, dir) in subdirs(root)? {
            if name == "class" {
                for (cname, cdir) in subdirs(&dir)? {
                    class.entry(unescape(&cname)).or_default().push(cdir);
                }
                found = true;
            } else if has_parquet(&dir)? {
                top.entry(name).or_default().push(dir);
                found = true;
            }
        }
        if !found {
            bail!(
                "{}: no Parquet tables in it (a dataset is the directory `reef convert --to parquet` writes: events/, class/, …)",
                root.display()
            );
        }
    }
    let class_schema = Arc::new(MemorySchemaProvider::new());
    ctx.catalog("datafusion")
        .context("the default catalog")?
        .register_schema("class", class_schema)?;
    for (name, dirs) in &top {
        let t = listing_table(ctx, dirs)
            .await
            .with_context(|| format!("table {name}"))?;
        ctx.register_table(TableReference::bare(name.as_str()), t)?;
    }
    let mut left_out = Vec::new();
    for (name, dirs) in &class {
        // Traces may disagree on a class's columns (one name, other
        // types): that table is left out, the others stay queryable.
        let t = match listing_table(ctx, dirs).await {
            Ok(t) => t,
            Err(e) => {
                left_out.push((name.as_str(), e));
                continue;
            }
        };
        ctx.register_table(TableReference::partial("class", name.as_str()), t.clone())?;
        if !top.contains_key(name) {
            ctx.register_table(TableReference::bare(name.as_str()), t)?;
        }
    }
    if let Some((first, e)) = left_out.first() {
        let names: Vec<&str> = left_out.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "reef-sql: note: {} class table(s) left out, the datasets' traces disagree on their columns ({}: {e:#}): {}",
            names.len(),
            first,
            names.join(", ")
        );
    }
    Ok(())
}

/// A table over the Parquet files under `dirs`, partitioned by `host` and
/// `trace`; its schema is the merge of every file's.
async fn listing_table(
    ctx: &SessionContext,
    dirs: &[PathBuf],
) -> anyhow::Result<Arc<ListingTable>> {
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(vec![
            ("host".to_string(), DataType::Utf8),
            ("trace".to_string(), DataType::Utf8),
        ]);
    let state = ctx.state();
    let mut urls = Vec::new();
    let mut schemas = Vec::new();
    for d in dirs {
        let abs = std::path::absolute(d).with_context(|| format!("{}", d.display()))?;
        let url = ListingTableUrl::parse(format!("{}/", abs.display())).map_err(strip)?;
        schemas.push(
            options
                .infer_schema(&state, &url)
                .await
                .map_err(strip)?
                .as_ref()
                .clone(),
        );
        urls.push(url);
    }
    let schema = Schema::try_merge(schemas).context("the datasets disagree on its columns")?;
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(Arc::new(schema));
    Ok(Arc::new(ListingTable::try_new(config).map_err(strip)?))
}

/// The subdirectories of `dir`, by name.
fn subdirs(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let e = e.with_context(|| format!("{}", dir.display()))?;
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            if let Some(name) = e.file_name().to_str() {
                v.push((name.to_string(), e.path()));
            }
        }
    }
    v.sort();
    Ok(v)
}

/// Whether a `.parquet` file is somewhere under `dir`.
fn has_parquet(dir: &Path) -> anyhow::Result<bool> {
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let e = e.with_context(|| format!("{}", dir.display()))?;
        let t = e.file_type()?;
        if (t.is_file() && e.file_name().to_string_lossy().ends_with(".parquet"))
            || (t.is_dir() && has_parquet(&e.path())?)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A path component of the dataset (`%XX` escapes) as the name it stands
/// for.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(b[i + 1]) << 4 | hex(b[i + 2]));
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn unescape() {
        assert_eq!(super::unescape("a%3Ab"), "a:b");
        assert_eq!(super::unescape("%3A"), ":");
        assert_eq!(super::unescape("a%3"), "a%3");
        assert_eq!(super::unescape("a%zzb"), "a%zzb");
        assert_eq!(super::unescape("plain_name.x-1"), "plain_name.x-1");
    }
}
