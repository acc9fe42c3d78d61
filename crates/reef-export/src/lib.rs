//! `reef-export`: traces written for other tools.
//!
//! - [`parquet`]: a Parquet dataset (Hive-style partitions
//!   `TABLE/host=HOST/trace=TRACE/`), the tables of `reef-arrow` plus the
//!   derived kernel tables of [`kernel`]; what `reef sql`, DuckDB and
//!   Spark query. Schema: `docs/parquet.md`.
//! - [`ctf`]: CTF traces again, cut to a time window and a filter
//!   (whole packets copied byte for byte, cut ones written again).
//! - [`chrome`]: the Trace Event format (JSON) Chrome's `about:tracing`
//!   and Perfetto's UI open.
//! - [`perfetto`]: Perfetto's protobuf trace (tracks per process,
//!   thread and CPU; kernel scheduling as ftrace events).

pub mod activity;
pub mod chrome;
pub mod counter;
pub mod ctf;
pub mod kernel;
pub mod parquet;
pub mod perfetto;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] reef_read::Error),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parquet {
        path: std::path::PathBuf,
        source: ::parquet::errors::ParquetError,
    },
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("{0}")]
    Usage(String),
}

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
