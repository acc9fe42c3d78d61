//! Scripts: a Python `keep(event) -> bool` applied like `--filter`
//! (`reef.open(..., keep=f)`), and activity decoders — a class whose
//! `event(ev)` receives every event in order and returns (or yields) the
//! activities it completes — whose activities get `reef activities`'
//! reports (`reef_engines::intervals::Reports`: log, statistics per name
//! and row, frequency distributions, longest).

use std::collections::BTreeMap;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use reef_engines::intervals::{Interval, ReportSpec, Reports};

use crate::engines::loads;
use crate::{Event, Messages};

/// Adds a note naming the event a script failed on (its `reef print`
/// line) to the script's exception, which keeps its traceback.
pub(crate) fn note_event(py: Python<'_>, err: PyErr, ev: &Bound<'_, PyAny>) -> PyErr {
    let line = ev.str().map(|s| s.to_string()).unwrap_or_default();
    let v = err.value(py);
    // PEP 678 notes (3.11+); older Pythons get the attribute only.
    if v.hasattr("add_note").unwrap_or(false) {
        let _ = v.call_method1("add_note", (format!("while handling event: {line}"),));
    }
    let _ = v.setattr("reef_event", line);
    err
}

/// One activity from a decoder: a tuple `(name, begin, end[, row[,
/// attributes]])`, or a dict / object with those names.
fn activity(a: &Bound<'_, PyAny>) -> PyResult<Interval> {
    let get = |k: &str, i: usize| -> PyResult<Option<Bound<'_, PyAny>>> {
        if let Ok(t) = a.cast::<PyTuple>() {
            return Ok(t.get_item(i).ok());
        }
        if let Ok(d) = a.cast::<PyDict>() {
            return d.get_item(k);
        }
        Ok(a.getattr(k).ok())
    };
    let need = |k: &str, i: usize| {
        get(k, i)?
            .filter(|v| !v.is_none())
            .ok_or_else(|| PyTypeError::new_err(format!("an activity needs `{k}`: {a}")))
    };
    let name: String = match get("name", 0)? {
        Some(v) if !v.is_none() => v.str()?.to_string(),
        _ => String::new(),
    };
    let begin: i64 = need("begin", 1)?.extract()?;
    let end: i64 = need("end", 2)?.extract()?;
    let group = match get("row", 3)? {
        Some(v) if !v.is_none() => v.str()?.to_string(),
        _ => String::new(),
    };
    let mut captures = Vec::new();
    if let Some(attrs) = get("attributes", 4)?.filter(|v| !v.is_none()) {
        let d = attrs.cast::<PyDict>()?;
        for (k, v) in d.iter() {
            captures.push((k.str()?.to_string(), v.str()?.to_string()));
        }
    }
    Ok(Interval {
        name,
        begin_ns: begin,
        end_ns: end,
        duration_ns: end - begin,
        group,
        captures,
        tags: [0, 0],
    })
}

/// What `event()` or `finish()` returned: None, one activity, or an
/// iterable of them.
fn activities(out: &Bound<'_, PyAny>, found: &mut Vec<Interval>) -> PyResult<()> {
    if out.is_none() {
        return Ok(());
    }
    if out.is_instance_of::<PyTuple>() || out.is_instance_of::<PyDict>() {
        found.push(activity(out)?);
        return Ok(());
    }
    for a in out.try_iter()? {
        found.push(activity(&a?)?);
    }
    Ok(())
}

/// The `keep` of a decoder's reading: the script's function on the first
/// pass, whose verdicts (one bit an event) the later passes replay, so
/// that a script that counts or remembers runs once, as the CLI's
/// `--script` does (`reef_read::script`).
#[pyclass(module = "reef._reef")]
struct Verdicts {
    /// The script's function, until the first pass ends.
    keep: Option<Py<PyAny>>,
    bits: Vec<u64>,
    len: u64,
    /// The next event's verdict, when replaying.
    at: u64,
}

#[pymethods]
impl Verdicts {
    fn __call__(&mut self, py: Python<'_>, ev: &Bound<'_, PyAny>) -> PyResult<bool> {
        if let Some(keep) = &self.keep {
            let kept = keep.bind(py).call1((ev,))?.is_truthy()?;
            if self.len.is_multiple_of(64) {
                self.bits.push(0);
            }
            self.bits[(self.len / 64) as usize] |= (kept as u64) << (self.len % 64);
            self.len += 1;
            return Ok(kept);
        }
        if self.at >= self.len {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the reading had {} events on its first pass and more on this one \
                 (did the traces change?)",
                self.len
            )));
        }
        let kept = self.bits[(self.at / 64) as usize] >> (self.at % 64) & 1 == 1;
        self.at += 1;
        Ok(kept)
    }
}

/// Runs decoders made by `factory` over the reading (once per pass the
/// reports need) and gives `reef activities --json`'s output. The
/// reading's `keep` applies to every pass (run on the first).
#[pyfunction]
#[pyo3(signature = (messages, factory, log=true, stats=true, freq=None, top=None))]
fn decode_activities(
    py: Python<'_>,
    messages: PyRef<'_, Messages>,
    factory: Bound<'_, PyAny>,
    log: bool,
    stats: bool,
    freq: Option<usize>,
    top: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let spec = ReportSpec {
        log,
        stats,
        freq,
        top,
    };
    let opts = messages.opts.clone();
    let verdicts = match &messages.keep {
        Some(k) => Some(Py::new(
            py,
            Verdicts {
                keep: Some(k.clone_ref(py)),
                bits: Vec::new(),
                len: 0,
                at: 0,
            },
        )?),
        None => None,
    };
    drop(messages);
    let mut reports = Reports::new(&spec);
    let mut logged: Vec<Interval> = Vec::new();
    let mut found = Vec::new();
    let mut pass = 0;
    loop {
        reports.start_pass(pass);
        let dec = factory.call0()?;
        let mut reading = Messages::from_opts(opts.clone());
        if let Some(v) = &verdicts {
            if pass > 0 {
                let mut v = v.borrow_mut(py);
                v.keep = None;
                v.at = 0;
            }
            reading.keep = Some(v.clone_ref(py).into_any());
        }
        let mut stopped: Option<PyErr> = None;
        loop {
            let m = match reading.__next__(py) {
                Ok(Some(m)) => m.into_bound(py),
                Ok(None) => break,
                Err(e) if e.is_instance_of::<crate::Error>(py) => {
                    stopped = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            };
            if !m.is_instance_of::<Event>() {
                continue;
            }
            let out = dec
                .call_method1("event", (&m,))
                .map_err(|e| note_event(py, e, &m))?;
            activities(&out, &mut found).map_err(|e| note_event(py, e, &m))?;
            for iv in found.drain(..) {
                if reports.add(&iv) && log {
                    logged.push(iv);
                }
            }
        }
        if dec.hasattr("finish")? {
            activities(&dec.call_method0("finish")?, &mut found)?;
            for iv in found.drain(..) {
                if reports.add(&iv) && log {
                    logged.push(iv);
                }
            }
        }
        pass += 1;
        if stopped.is_some() || pass >= reports.passes() {
            let unfinished: BTreeMap<String, u64> = if dec.hasattr("unfinished")? {
                dec.call_method0("unfinished")?.extract()?
            } else {
                BTreeMap::new()
            };
            let report = reports.finish(unfinished);
            let mut obj = serde_json::Map::new();
            let js = |e: serde_json::Error| pyo3::exceptions::PyValueError::new_err(e.to_string());
            if log {
                obj.insert("log".into(), serde_json::to_value(&logged).map_err(js)?);
            }
            if let serde_json::Value::Object(m) = serde_json::to_value(&report).map_err(js)? {
                obj.extend(m);
            }
            let text = serde_json::to_string(&obj).map_err(js)?;
            let v = loads(py, &text)?;
            return match stopped {
                None => Ok(v),
                Some(e) => {
                    e.value(py).setattr("partial", v)?;
                    Err(e)
                }
            };
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_activities, m)?)?;
    Ok(())
}
