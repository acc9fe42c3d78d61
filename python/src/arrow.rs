//! `to_arrow()`: the tables of `reef_arrow` handed to Python through the
//! Arrow C stream interface (`__arrow_c_stream__`, a PyCapsule named
//! `arrow_array_stream`), so pyarrow, polars and pandas read the batches
//! without a copy. The stream reads the traces as its consumer pulls
//! batches: memory is bounded by `reef_arrow`'s batches, not the trace.

use std::collections::VecDeque;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use reef_arrow::{Batcher, Options};
use reef_read::{ReadOptions, Source};

/// Batches of one table, read as they are pulled.
struct Reader {
    src: Source,
    batcher: Batcher,
    table: String,
    schema: SchemaRef,
    queue: VecDeque<RecordBatch>,
    done: bool,
}

impl Reader {
    /// Reads until a batch of the table is ready (or the end).
    fn fill(&mut self) -> Result<(), ArrowError> {
        let ext = |e: reef_read::Error| ArrowError::ExternalError(Box::new(e));
        while self.queue.is_empty() && !self.done {
            let ready = match self.src.next().map_err(ext)? {
                Some(m) => {
                    self.batcher.push(&m)?;
                    self.batcher.take_ready()
                }
                None => {
                    self.done = true;
                    self.batcher.finish()?
                }
            };
            for b in ready {
                if b.table.name() == self.table {
                    self.queue.push_back(b.batch);
                }
            }
        }
        Ok(())
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Err(e) = self.fill() {
            self.done = true;
            return Some(Err(e));
        }
        let b = self.queue.pop_front()?;
        if b.schema() != self.schema {
            // The same class name in two traces, with other fields.
            self.done = true;
            return Some(Err(ArrowError::SchemaError(format!(
                "table `{}`: a batch's columns differ from the first's ({} traces hold this name with other fields)",
                self.table, "several"
            ))));
        }
        Some(Ok(b))
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// One table of a reading as an Arrow stream: pass it to
/// `pyarrow.RecordBatchReader.from_stream`, `pyarrow.table`,
/// `polars.DataFrame`, or anything that takes `__arrow_c_stream__`.
#[pyclass(module = "reef._reef")]
pub struct ArrowStream {
    reader: Mutex<Option<Reader>>,
}

#[pymethods]
impl ArrowStream {
    /// The Arrow C stream (once: the stream reads the trace as it goes).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let r = self
            .reader
            .lock()
            .map_err(|_| PyValueError::new_err("stream poisoned"))?
            .take()
            .ok_or_else(|| PyValueError::new_err("this Arrow stream was consumed already"))?;
        let stream = FFI_ArrowArrayStream::new(Box::new(r));
        let name = CString::new("arrow_array_stream").expect("no NUL");
        PyCapsule::new(py, stream, Some(name))
    }
}

/// `to_arrow`'s stream of table `table` over the reading `opts`: the
/// first batch is read now (its schema is the stream's).
#[pyfunction]
#[pyo3(signature = (paths, begin=None, end=None, filter=None, workers=None, table="events".to_string(), batch_rows=65536))]
#[allow(clippy::too_many_arguments)]
fn arrow_stream(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    filter: Option<String>,
    workers: Option<usize>,
    table: String,
    batch_rows: usize,
) -> PyResult<ArrowStream> {
    let opts: ReadOptions = crate::read_options(paths, begin, end, filter, workers)?;
    stream(py, opts, table, batch_rows)
}

pub(crate) fn stream(
    py: Python<'_>,
    opts: ReadOptions,
    table: String,
    batch_rows: usize,
) -> PyResult<ArrowStream> {
    let src = crate::open_source(py, &opts)?;
    let several = src.traces.len() > 1;
    let mut r = Reader {
        src,
        batcher: Batcher::new(Options {
            batch_rows: batch_rows.max(1),
            trace_column: several,
        }),
        table,
        schema: Arc::new(arrow_schema::Schema::empty()),
        queue: VecDeque::new(),
        done: false,
    };
    let err = |e: ArrowError| match e {
        ArrowError::ExternalError(b) => match b.downcast::<reef_read::Error>() {
            Ok(e) => crate::py_err(py, &e),
            Err(b) => PyValueError::new_err(b.to_string()),
        },
        e => PyValueError::new_err(e.to_string()),
    };
    py.detach(|| r.fill()).map_err(err)?;
    match r.queue.front() {
        Some(b) => r.schema = b.schema(),
        None => {
            return Err(PyValueError::new_err(format!(
                "no table `{}` in this reading (no event of that name)",
                r.table
            )))
        }
    }
    Ok(ArrowStream {
        reader: Mutex::new(Some(r)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(arrow_stream, m)?)?;
    Ok(())
}
