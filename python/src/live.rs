//! `reef.listen("HOST:PORT")`: the events of a running program's libreef
//! stream (`REEF_LISTEN`), as `reef listen --print` receives them: a
//! receiving thread decodes each burst of packets (`reef_read::live`) into
//! a batch of the same messages `reef.open` gives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

use reef_ctf::Item;
use reef_read::live::{Burst, Listener};

use crate::{notice, Batch, Reading, Rec, RecKind, Sent, Shared, StreamDesc, Views};

/// Events of a live stream; iterate it (it ends when the program ends
/// its trace or the connection closes).
#[pyclass(module = "reef._reef")]
pub struct Live {
    reading: Mutex<Reading>,
}

#[pymethods]
impl Live {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        crate::lock(py, &self.reading, "reading")?.next(py, true)
    }
}

/// Why receiving stopped early.
enum Stop {
    Read(reef_read::Error),
    /// The Python side dropped its iterator.
    Gone,
}

impl From<reef_read::Error> for Stop {
    fn from(e: reef_read::Error) -> Stop {
        Stop::Read(e)
    }
}

/// One burst as a batch: its streams numbered in the order they appear.
fn batch_of(burst: &mut Burst) -> Result<Batch, reef_read::Error> {
    let mut streams: Vec<StreamDesc> = Vec::new();
    let mut packets = crate::Packets::default();
    let mut pkts = Vec::new();
    let mut recs = Vec::new();
    let mut values = Vec::new();
    let label = burst.label.clone();
    let labels = vec![label];
    let probe = Shared {
        streams: Vec::new(),
        labels: labels.clone(),
        views: Mutex::new(Views::new(0)),
    };
    while let Some(m) = burst.next()? {
        let c = m.cursor;
        let i = match streams
            .iter()
            .position(|s| Arc::ptr_eq(&s.trace, &c.trace) && s.source == c.source)
        {
            Some(i) => i,
            None => {
                streams.push(StreamDesc {
                    trace: c.trace.clone(),
                    source: c.source,
                    trace_idx: 0,
                });
                streams.len() - 1
            }
        };
        let pkt = packets.index(i, c, &mut pkts);
        let ev = &c.event;
        let start = values.len();
        let kind = match m.item {
            Item::Event => {
                values.extend_from_slice(&ev.values[..ev.bounds[3].min(ev.values.len())]);
                RecKind::Event(ev.event)
            }
            item => RecKind::Discarded(Box::new(notice(&probe, 0, c, item))),
        };
        let is_event = matches!(kind, RecKind::Event(_));
        recs.push(Rec {
            stream: i as u32,
            kind,
            ns: m.ns,
            ts: ev.ts,
            start,
            bounds: if is_event { ev.bounds } else { [0; 4] },
            offset: ev.offset,
            body: ev.body,
            end: ev.end,
            pkt,
        });
    }
    let n = streams.len();
    Ok(Batch {
        shared: Arc::new(Shared {
            streams,
            labels,
            views: Mutex::new(Views::new(n)),
        }),
        recs,
        values,
        pkts,
        pool: None,
    })
}

/// Connects to `addr` (retrying for up to `wait` seconds) and receives
/// on a thread of its own; `output`: also write the trace there.
#[pyfunction]
#[pyo3(signature = (addr, wait=0.0, output=None))]
fn listen(
    py: Python<'_>,
    addr: String,
    wait: f64,
    output: Option<std::path::PathBuf>,
) -> PyResult<Live> {
    let wait = Duration::from_secs_f64(wait.clamp(0.0, 86400.0));
    let listener = py
        .detach(|| Listener::connect(&addr, wait, output.as_deref(), true))
        .map_err(|e| crate::py_err(py, &e))?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Sent>(crate::AHEAD);
    std::thread::Builder::new()
        .name("reef-listen".into())
        .spawn(move || {
            let mut listener = listener;
            let r = listener.receive(|b| {
                let batch = batch_of(b)?;
                tx.send(Ok(batch)).map_err(|_| Stop::Gone)
            });
            if let Err(Stop::Read(e)) = r {
                let _ = tx.send(Err(e));
            }
        })
        .map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("starting the receiving thread: {e}"))
        })?;
    Ok(Live {
        reading: Mutex::new(Reading::new(rx, 0, true)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Live>()?;
    m.add_function(wrap_pyfunction!(listen, m)?)?;
    Ok(())
}
