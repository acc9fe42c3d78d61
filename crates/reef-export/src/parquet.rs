//! A reading written as a Parquet dataset.
//!
//! Layout under the output directory, one partition per trace:
//!
//! ```text
//! events/host=HOST/trace=TRACE/part-0.parquet
//! class/EVENT_NAME/host=HOST/trace=TRACE/part-0.parquet   (one table per event class)
//! sched_slices/…  thread_states/…  syscalls/…  irqs/…      (LTTng kernel traces)
//! activities/…                                            (an activity definition)
//! ```
//!
//! `HOST` is the trace's `hostname` environment entry (`unknown` without
//! one), `TRACE` its name as `reef print` gives it; both, and event names
//! in directory names, keep `[A-Za-z0-9._-]` and write any other byte as
//! `%XX` (Hive's escaping, which Spark undoes). Files are zstd-compressed,
//! with row groups of [`Options::row_group_rows`] rows; rows arrive in
//! batches, so memory is bounded by the number of tables, not by the
//! trace.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use reef_arrow::{Batcher, Table};
use reef_ctf::{EnvValue, Item};
use reef_read::Source;

use crate::activity::{ActivitySlices, Rows};
use crate::kernel::Kernel;
use crate::Error;

/// How the dataset is written.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows per row group.
    pub row_group_rows: usize,
    /// Rows handed from the reader to a writer at a time.
    pub batch_rows: usize,
    /// Write the derived kernel tables of LTTng kernel traces.
    pub kernel_tables: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            row_group_rows: 256 * 1024,
            batch_rows: 16 * 1024,
            kernel_tables: true,
        }
    }
}

/// What was written.
#[derive(Debug, Default)]
pub struct Summary {
    pub events: u64,
    /// Rows per table name (`events`, `class/NAME`, derived tables).
    pub rows: BTreeMap<String, u64>,
    pub files: Vec<PathBuf>,
}

/// `s` as a path component: `[A-Za-z0-9._-]` kept, other bytes `%XX`.
pub fn escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"._-".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() || out == "." || out == ".." {
        out = out.replace('.', "%2E");
        if out.is_empty() {
            out.push_str("%00");
        }
    }
    out
}

struct Writer {
    path: PathBuf,
    w: ArrowWriter<File>,
}

/// The open files of a dataset, by (trace, table).
struct Files {
    out: PathBuf,
    props: WriterProperties,
    /// Partition directory of each trace, below a table's directory.
    parts: Vec<String>,
    open: BTreeMap<(usize, Table, &'static str), Writer>,
    used: BTreeMap<PathBuf, usize>,
    summary: Summary,
}

impl Files {
    fn write(
        &mut self,
        trace: usize,
        table: Table,
        derived: &'static str,
        b: &RecordBatch,
    ) -> Result<(), Error> {
        let dir_name = match (&table, derived) {
            (_, d) if !d.is_empty() => d.to_string(),
            (Table::Events, _) => "events".to_string(),
            (Table::Class { name, .. }, _) => format!("class/{}", escape(name)),
        };
        *self.summary.rows.entry(dir_name.clone()).or_default() += b.num_rows() as u64;
        let key = (trace, table, derived);
        if !self.open.contains_key(&key) {
            let dir = self.out.join(&dir_name).join(&self.parts[trace]);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let n = self.used.entry(dir.clone()).or_default();
            let path = dir.join(format!("part-{n}.parquet"));
            *n += 1;
            let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
            let w = ArrowWriter::try_new(f, b.schema(), Some(self.props.clone())).map_err(|e| {
                Error::Parquet {
                    path: path.clone(),
                    source: e,
                }
            })?;
            self.open.insert(key.clone(), Writer { path, w });
        }
        let w = self.open.get_mut(&key).expect("opened above");
        w.w.write(b).map_err(|e| Error::Parquet {
            path: w.path.clone(),
            source: e,
        })
    }

    fn close(mut self) -> Result<Summary, Error> {
        for (_, w) in std::mem::take(&mut self.open) {
            w.w.close().map_err(|e| Error::Parquet {
                path: w.path.clone(),
                source: e,
            })?;
            self.summary.files.push(w.path);
        }
        Ok(self.summary)
    }
}

/// Writes every event of `src` (its window and filter applied) under
/// `out`, and the activities of `activities` (an `activities` table, in
/// the partition of the trace whose event ended each). Returns what was
/// written and the reading error that stopped it, if any: everything read
/// before it is written.
pub fn write(
    mut src: Source,
    out: &Path,
    opts: &Options,
    mut activities: Option<&mut ActivitySlices>,
) -> Result<(Summary, Option<reef_read::Error>), Error> {
    let mut parts: Vec<String> = Vec::new();
    let mut kernel: Vec<Option<Kernel>> = Vec::new();
    for (t, label) in src.traces.iter().zip(&src.labels) {
        let host = match t.meta().env_get("hostname") {
            Some(EnvValue::Str(h)) if !h.is_empty() => h.clone(),
            _ => "unknown".to_string(),
        };
        let mut part = format!("host={}/trace={}", escape(&host), escape(&label.name));
        // Two traces of one name (copies under other paths): numbered.
        let base = part.clone();
        let mut k = 2;
        while parts.contains(&part) {
            part = format!("{base}-{k}");
            k += 1;
        }
        let d = out.join("events").join(&part);
        if d.exists() {
            return Err(Error::Usage(format!(
                "{}: already exists: this trace was converted into this dataset before (remove it, or choose another directory)",
                d.display()
            )));
        }
        parts.push(part);
        let is_kernel =
            matches!(t.meta().env_get("domain"), Some(EnvValue::Str(d)) if d == "kernel");
        kernel.push((opts.kernel_tables && is_kernel).then(Kernel::new));
    }
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).expect("a valid level"),
        ))
        .set_max_row_group_row_count(Some(opts.row_group_rows));
    // Times and ranks are nearly all distinct and increasing: deltas, not
    // a dictionary (whose hash table would only grow and be thrown away).
    for col in ["seq", "ts", "dur"] {
        props = props
            .set_column_dictionary_enabled(ColumnPath::from(col), false)
            .set_column_encoding(ColumnPath::from(col), Encoding::DELTA_BINARY_PACKED);
    }
    let props = props.build();
    let parts_n = parts.len();
    let mut files = Files {
        out: out.to_path_buf(),
        props,
        parts,
        open: BTreeMap::new(),
        used: BTreeMap::new(),
        summary: Summary::default(),
    };
    // Encoding and compressing run on a thread of their own, beside the
    // reading: batches go to it through a short queue.
    type Job = (usize, Table, &'static str, RecordBatch);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(8);
    let writer = std::thread::spawn(move || -> Result<Summary, Error> {
        let mut written = vec![false; parts_n];
        for (trace, table, derived, b) in rx {
            if table == Table::Events && derived.is_empty() {
                written[trace] = true;
            }
            files.write(trace, table, derived, &b)?;
        }
        // A trace without events still has its (empty) events table.
        for (t, w) in written.iter().enumerate() {
            if !w {
                files.write(t, Table::Events, "", &reef_arrow::empty_events(false)?)?;
            }
        }
        files.close()
    });
    let mut batcher = Batcher::new(reef_arrow::Options {
        batch_rows: opts.batch_rows,
        trace_column: false,
    });
    // A send fails only when the writer stopped on an error: the join
    // below reports it.
    let send = |job: Job| tx.send(job).map_err(|_| Error::Usage(String::new()));
    let mut act_rows: Vec<Rows> = (0..parts_n).map(|_| Rows::default()).collect();
    let read = src.for_each_message(|m| {
        if m.item != Item::Event {
            return Ok(ControlFlow::Continue(()));
        }
        batcher.push(m)?;
        for b in batcher.take_ready() {
            send((b.trace, b.table, "", b.batch))?;
        }
        if let (Some(k), Some(ns)) = (kernel[m.trace].as_mut(), m.ns) {
            k.event(m.cursor, ns);
            for (name, b) in k.take(opts.batch_rows)? {
                send((m.trace, Table::Events, name, b))?;
            }
        }
        if let (Some(a), Some(ns)) = (activities.as_deref_mut(), m.ns) {
            let rows = &mut act_rows[m.trace];
            for p in a.event(m, ns) {
                rows.push(&a.name, &p);
            }
            if rows.rows >= opts.batch_rows {
                if let Some(b) = rows.take()? {
                    send((m.trace, Table::Events, "activities", b))?;
                }
            }
        }
        Ok::<_, Error>(ControlFlow::Continue(()))
    });
    let finished = read.and_then(|stopped| {
        for b in batcher.finish()? {
            send((b.trace, b.table, "", b.batch))?;
        }
        for (t, k) in kernel.iter_mut().enumerate() {
            if let Some(k) = k {
                for (name, b) in k.take(0)? {
                    send((t, Table::Events, name, b))?;
                }
            }
        }
        for (t, rows) in act_rows.iter_mut().enumerate() {
            if let Some(b) = rows.take()? {
                send((t, Table::Events, "activities", b))?;
            }
        }
        Ok(stopped)
    });
    drop(tx);
    let summary = writer
        .join()
        .map_err(|_| Error::Usage("the Parquet writer thread panicked".into()))?;
    // The writer's error first: a failed send only follows from it.
    let mut summary = summary?;
    let stopped = finished?;
    summary.events = batcher.events();
    Ok((summary, stopped))
}
