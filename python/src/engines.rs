//! The engines from Python: `stats`, `activities`, `periods` and the
//! kernel analyses give what the CLI's `--json` / `--lami` output holds,
//! built from the same serde values and turned into Python objects by
//! `json.loads` (so the numbers are the CLI's, to the last digit).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use reef_analyses::io::{self, Mode};
use reef_analyses::schedstats::Groups;
use reef_analyses::select::{Select, Selected};
use reef_analyses::stats::FreqOpts;
use reef_analyses::{cputop, irqstats, memtop, schedlog, schedstats, syscallstats, Analysis};
use reef_engines::activities::{Activities, ActivitySpec};
use reef_engines::intervals::{run as run_intervals, Interval, IntervalEngine, ReportSpec};
use reef_engines::periods::{PeriodSpec, Periods};

use crate::{open_source, py_err, read_options};

/// `json.loads(text)`.
pub(crate) fn loads(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

/// The result, or — when a reading error stopped the reading — a
/// `reef.Error` whose `partial` holds the result computed up to it.
pub(crate) fn finish(
    py: Python<'_>,
    value: Py<PyAny>,
    stopped: Option<reef_read::Error>,
) -> PyResult<Py<PyAny>> {
    match stopped {
        None => Ok(value),
        Some(e) => {
            let err = py_err(py, &e);
            err.value(py).setattr("partial", value)?;
            Err(err)
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `reef stats --json`.
#[pyfunction]
#[pyo3(signature = (paths, begin=None, end=None, filter=None, workers=None))]
fn stats(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    filter: Option<String>,
    workers: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let opts = read_options(paths, begin, end, filter, workers)?;
    let mut src = open_source(py, &opts)?;
    let (st, stopped) = reef_engines::stats::collect(&mut src);
    let v = loads(py, &to_json(&st)?)?;
    finish(py, v, stopped)
}

/// Which reports, as `reef activities`/`periods` take them.
fn report_spec(log: bool, stats: bool, freq: Option<usize>, top: Option<usize>) -> ReportSpec {
    ReportSpec {
        log,
        stats,
        freq,
        top,
    }
}

/// Runs an interval engine as the CLI does, and gives its `--json` output
/// (`log` first when asked for, then the report's members).
pub(crate) fn intervals<T: IntervalEngine>(
    py: Python<'_>,
    read: &reef_read::ReadOptions,
    spec: &ReportSpec,
    make: impl FnMut(&reef_read::Source) -> Result<T, reef_read::Error>,
) -> PyResult<(Py<PyAny>, T)> {
    let mut log: Vec<Interval> = Vec::new();
    let done = run_intervals(read, spec, make, |iv| {
        log.push(iv.clone());
        Ok::<_, reef_read::Error>(())
    });
    let done = match done {
        Ok(d) => d,
        Err(reef_read::Error::Filter(f)) => return Err(PyValueError::new_err(f.to_string())),
        Err(e) => return Err(py_err(py, &e)),
    };
    let report =
        serde_json::to_value(&done.report).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut obj = serde_json::Map::new();
    if spec.log {
        obj.insert(
            "log".into(),
            serde_json::to_value(&log).map_err(|e| PyValueError::new_err(e.to_string()))?,
        );
    }
    if let serde_json::Value::Object(m) = report {
        obj.extend(m);
    }
    let v = loads(py, &to_json(&obj)?)?;
    let v = finish(py, v, done.stopped)?;
    Ok((v, done.engine))
}

/// `reef activities --json`.
#[pyfunction]
#[pyo3(signature = (paths, begin, end, key=None, filter=None, start=None, stop=None,
    workers=None, log=true, stats=true, freq=None, top=None))]
#[allow(clippy::too_many_arguments)]
fn activities(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    begin: String,
    end: String,
    key: Option<String>,
    filter: Option<String>,
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    workers: Option<usize>,
    log: bool,
    stats: bool,
    freq: Option<usize>,
    top: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let read = read_options(paths, start, stop, filter, workers)?;
    let spec = ActivitySpec { begin, end, key };
    let (v, _) = intervals(py, &read, &report_spec(log, stats, freq, top), |src| {
        Ok(Activities::new(&spec, src)?)
    })?;
    Ok(v)
}

/// `reef periods --json`.
#[pyfunction]
#[pyo3(signature = (paths, periods, captures=Vec::new(), group_by=Vec::new(), begin=None,
    end=None, filter=None, workers=None, log=false, stats=true, freq=None, top=None))]
#[allow(clippy::too_many_arguments)]
fn periods(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    periods: Vec<String>,
    captures: Vec<String>,
    group_by: Vec<String>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    filter: Option<String>,
    workers: Option<usize>,
    log: bool,
    stats: bool,
    freq: Option<usize>,
    top: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let read = read_options(paths, begin, end, filter, workers)?;
    let spec = PeriodSpec {
        periods,
        captures,
        group_by,
    };
    Periods::new(&spec).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (v, _) = intervals(py, &read, &report_spec(log, stats, freq, top), |_| {
        Ok(Periods::new(&spec)?)
    })?;
    Ok(v)
}

/// The options of the kernel analyses, as the CLI's.
#[derive(Default)]
struct AnOpts {
    cpu: Option<Vec<i64>>,
    tid: Option<Vec<i64>>,
    procname: Option<Vec<String>>,
    /// µs, as the CLI's `--min`/`--max`.
    min: Option<f64>,
    max: Option<f64>,
    irq: Option<Vec<i64>>,
    softirq: Option<Vec<i64>>,
    minsize: Option<f64>,
    maxsize: Option<f64>,
    /// Rows (0: all); the CLI's default 10.
    limit: Option<usize>,
    freq_resolution: Option<usize>,
    freq_uniform: bool,
    freq_series: bool,
    total: bool,
    per_tid: bool,
    per_prio: bool,
    no_intersection: bool,
}

impl AnOpts {
    /// From the Python side's keyword arguments; an unknown one is an error.
    fn from_dict(d: Option<&Bound<'_, PyDict>>) -> PyResult<AnOpts> {
        let mut o = AnOpts::default();
        let Some(d) = d else { return Ok(o) };
        for (k, v) in d.iter() {
            if v.is_none() {
                continue;
            }
            let k: String = k.extract()?;
            match k.as_str() {
                "cpu" => o.cpu = Some(v.extract()?),
                "tid" => o.tid = Some(v.extract()?),
                "procname" => o.procname = Some(v.extract()?),
                "min" => o.min = Some(v.extract()?),
                "max" => o.max = Some(v.extract()?),
                "irq" => o.irq = Some(v.extract()?),
                "softirq" => o.softirq = Some(v.extract()?),
                "minsize" => o.minsize = Some(v.extract()?),
                "maxsize" => o.maxsize = Some(v.extract()?),
                "limit" => o.limit = Some(v.extract()?),
                "freq_resolution" => o.freq_resolution = Some(v.extract()?),
                "freq_uniform" => o.freq_uniform = v.extract()?,
                "freq_series" => o.freq_series = v.extract()?,
                "total" => o.total = v.extract()?,
                "per_tid" => o.per_tid = v.extract()?,
                "per_prio" => o.per_prio = v.extract()?,
                "no_intersection" => o.no_intersection = v.extract()?,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "`{other}`: no such analysis option"
                    )))
                }
            }
        }
        Ok(o)
    }

    fn select(&self, procs: bool, durations: bool, irqs: bool) -> Select {
        let us = |v: Option<f64>| v.map(|v| v * 1000.0);
        Select {
            cpus: self.cpu.clone(),
            tids: self.tid.clone().filter(|_| procs),
            procnames: self.procname.clone().filter(|_| procs),
            min: us(self.min).filter(|_| durations),
            max: us(self.max).filter(|_| durations),
            irqs: self.irq.clone().filter(|_| irqs),
            softirqs: self.softirq.clone().filter(|_| irqs),
        }
    }

    fn groups(&self) -> Groups {
        Groups {
            total: self.total,
            per_tid: self.per_tid || !(self.total || self.per_prio),
            per_prio: self.per_prio,
        }
    }

    fn freq(&self, sel: &Select) -> FreqOpts {
        FreqOpts {
            min: sel.min,
            max: sel.max,
            uniform: self.freq_uniform,
            series: self.freq_series,
        }
    }

    fn limit(&self) -> usize {
        self.limit.unwrap_or(10)
    }

    fn resolution(&self) -> usize {
        self.freq_resolution.unwrap_or(20)
    }
}

fn analyse<A: Analysis>(
    py: Python<'_>,
    read: &reef_read::ReadOptions,
    an: A,
    intersection: bool,
) -> PyResult<Py<PyAny>> {
    match reef_analyses::analyse(read, an, intersection) {
        Ok((tables, stopped)) => {
            let v = reef_analyses::lami::results_json(&tables);
            let v = loads(py, &to_json(&v)?)?;
            finish(py, v, stopped)
        }
        Err(e) => Err(crate::Error::new_err(e.to_string())),
    }
}

/// A kernel analysis by its command's name: the `--lami` results.
#[pyfunction]
#[pyo3(signature = (name, paths, begin=None, end=None, options=None))]
fn analysis(
    py: Python<'_>,
    name: &str,
    paths: Vec<std::path::PathBuf>,
    begin: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let o = AnOpts::from_dict(options)?;
    let read = read_options(paths, begin, end, None, None)?;
    let ix = !o.no_intersection;
    let io_filter = |o: &AnOpts| {
        let sel = o.select(false, true, false);
        io::Filter {
            min: sel.min,
            max: sel.max,
            minsize: o.minsize,
            maxsize: o.maxsize,
        }
    };
    match name {
        "cputop" => analyse(
            py,
            &read,
            cputop::Cputop::with_select(o.limit(), o.select(true, false, false)),
            ix,
        ),
        "syscallstats" => analyse(
            py,
            &read,
            Selected::new(
                syscallstats::Syscallstats::new(),
                o.select(true, false, false),
            ),
            ix,
        ),
        "irqstats" => analyse(
            py,
            &read,
            Selected::new(irqstats::Irqstats::new(), o.select(false, true, true)),
            ix,
        ),
        "irqlog" => analyse(
            py,
            &read,
            Selected::new(irqstats::Irqlog::new(), o.select(false, true, true)),
            ix,
        ),
        "irqfreq" => {
            let mut sel = o.select(false, true, true);
            let only = Select {
                irqs: sel.irqs.take(),
                softirqs: sel.softirqs.take(),
                ..Select::default()
            };
            let an = irqstats::Irqlog::freq(o.resolution()).with_freq(o.freq(&sel), only);
            analyse(py, &read, Selected::new(an, sel), ix)
        }
        "schedstats" => analyse(
            py,
            &read,
            Selected::new(
                schedstats::Schedstats::new(o.groups()),
                o.select(true, true, false),
            ),
            ix,
        ),
        "schedlog" => analyse(
            py,
            &read,
            Selected::new(schedlog::Schedlog::new(), o.select(true, true, false)),
            ix,
        ),
        "schedtop" => analyse(
            py,
            &read,
            Selected::new(
                schedlog::Schedlog::top(o.limit()),
                o.select(true, true, false),
            ),
            ix,
        ),
        "schedfreq" => {
            let sel = o.select(true, true, false);
            let an = schedlog::Schedlog::freq(o.groups(), o.resolution()).with_freq(o.freq(&sel));
            analyse(py, &read, Selected::new(an, sel), ix)
        }
        "memtop" => analyse(
            py,
            &read,
            Selected::new(memtop::Memtop::new(o.limit()), o.select(true, false, false)),
            ix,
        ),
        "iolatency" => analyse(
            py,
            &read,
            io::Io::with_filter(Mode::Stats, io_filter(&o)),
            ix,
        ),
        "iolatencyfreq" => analyse(
            py,
            &read,
            io::Io::with_filter(Mode::Freq(o.resolution()), io_filter(&o)),
            ix,
        ),
        "iolatencytop" => analyse(
            py,
            &read,
            io::Io::with_filter(Mode::Top(o.limit()), io_filter(&o)),
            ix,
        ),
        "iolog" => analyse(py, &read, io::Io::with_filter(Mode::Log, io_filter(&o)), ix),
        "iousagetop" => analyse(
            py,
            &read,
            io::Io::with_filter(Mode::Usage(o.limit()), io_filter(&o)),
            ix,
        ),
        other => Err(PyValueError::new_err(format!(
            "`{other}`: no such analysis"
        ))),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(activities, m)?)?;
    m.add_function(wrap_pyfunction!(periods, m)?)?;
    m.add_function(wrap_pyfunction!(analysis, m)?)?;
    Ok(())
}
