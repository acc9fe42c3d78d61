//! `reef.SourceOut`: what a Python source plugin's `read(path, out)`
//! delivers its events to (python/reef/plugin.py), a
//! [`reef_ctf::source::Builder`] writing a CTF directory that the `reef`
//! binary, which started the plugin, reads as the conversion of `path`.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};

use reef_ctf::source::{Builder, FieldType, Value};

#[pyclass(module = "reef._reef", unsendable)]
pub struct SourceOut {
    b: Option<Builder>,
}

impl SourceOut {
    fn b(&mut self) -> PyResult<&mut Builder> {
        self.b
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the source's output is finished"))
    }
}

fn err(m: String) -> PyErr {
    PyValueError::new_err(m)
}

#[pymethods]
impl SourceOut {
    /// `SourceOut(path, tracer, dir)`: the trace of the file `path`, its
    /// `tracer_name` `tracer`, written into the directory `dir`.
    #[new]
    fn new(path: PathBuf, tracer: &str, dir: PathBuf) -> SourceOut {
        SourceOut {
            b: Some(Builder::in_dir(&path, tracer, &dir)),
        }
    }

    /// The clock: `frequency` Hz, its zero `offset_ns` after the Unix
    /// epoch (default 1 GHz, 0: timestamps in ns since the epoch).
    #[pyo3(signature = (frequency, offset_ns = 0))]
    fn clock(&mut self, frequency: u64, offset_ns: i64) -> PyResult<()> {
        self.b()?.clock(frequency, offset_ns).map_err(err)
    }

    /// Declares an event class: `fields` a list of `(name, type)`, types
    /// `u8`…`u64`, `s8`…`s64`, `f32`, `f64`, `string`. Its id.
    fn event_class(&mut self, name: &str, fields: Vec<(String, String)>) -> PyResult<u32> {
        let mut list = Vec::with_capacity(fields.len());
        for (n, t) in &fields {
            let ty = FieldType::parse(t).ok_or_else(|| {
                err(format!(
                    "event class '{name}', field '{n}': type '{t}' (expected u8, u16, u32, u64, \
                     s8, s16, s32, s64, f32, f64 or string)"
                ))
            })?;
            list.push((n.as_str(), ty));
        }
        self.b()?.class(name, &list).map_err(err)
    }

    /// Declares a stream; its id.
    fn stream(&mut self, name: &str) -> PyResult<u32> {
        self.b()?.stream(name).map_err(err)
    }

    /// An event of class `class_id` in `stream` at `timestamp` (the
    /// clock's cycles), its field values in the class's order: int, float,
    /// str (or bytes of UTF-8), bool as an int.
    fn event(
        &mut self,
        stream: u32,
        class_id: u32,
        timestamp: u64,
        values: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        let b = self.b()?;
        b.begin(stream, class_id, timestamp).map_err(err)?;
        for v in values.iter() {
            if let Ok(s) = v.cast::<PyString>() {
                b.value(Value::Str(s.to_cow()?.as_bytes())).map_err(err)?;
            } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyBool>() {
                match v.extract::<i64>() {
                    Ok(x) if x < 0 => b.value(Value::Int(x)),
                    Ok(x) => b.value(Value::Uint(x as u64)),
                    Err(_) => match v.extract::<u64>() {
                        Ok(x) => b.value(Value::Uint(x)),
                        Err(_) => {
                            b.fail_with(format!("the integer {v} does not fit 64 bits"));
                            return Err(err(format!("the integer {v} does not fit 64 bits")));
                        }
                    },
                }
                .map_err(err)?;
            } else if v.is_instance_of::<PyFloat>() {
                b.value(Value::Float(v.extract::<f64>()?)).map_err(err)?;
            } else if let Ok(bytes) = v.extract::<&[u8]>() {
                b.value(Value::Str(bytes)).map_err(err)?;
            } else {
                let t = v.get_type().name()?.to_string();
                let m = format!("a value of type {t}: expected int, float or str");
                b.fail_with(m.clone());
                return Err(err(m));
            }
        }
        b.end().map_err(err)
    }

    /// Where in its file the source is (a byte offset): errors name it.
    fn offset(&mut self, offset: u64) -> PyResult<()> {
        self.b()?.set_offset(offset);
        Ok(())
    }

    /// Ends the conversion early with `message` (after the events given).
    fn fail(&mut self, message: String) -> PyResult<()> {
        self.b()?.fail_with(message);
        Ok(())
    }

    /// Writes the last packets and the metadata.
    fn finish(&mut self) -> PyResult<()> {
        match self.b.take() {
            Some(b) => b.finish_dir().map_err(|e| err(e.to_string())),
            None => Ok(()),
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SourceOut>()?;
    Ok(())
}
