//! Finding the traces under the user's paths, merging rotation chunks and
//! naming traces as babeltrace2 does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reef_ctf::{EnvValue, Trace, TraceClass};
use reef_iter::{find_traces, TraceLabel};

use crate::Error;

/// babeltrace2's name for a trace: its `hostname` env entry, then its path
/// relative to the input directory it was found under, joined by `/`.
pub fn trace_label(trace: &Trace, input: &Path) -> TraceLabel {
    let mut name = hostname(trace);
    if let Ok(rel) = trace.path.strip_prefix(input) {
        let rel = rel.to_string_lossy();
        if !rel.is_empty() {
            if !name.is_empty() {
                name.push('/');
            }
            name.push_str(&rel);
        }
    }
    TraceLabel { name }
}

fn hostname(trace: &Trace) -> String {
    match trace.meta().env_get("hostname") {
        Some(EnvValue::Str(s)) => s.clone(),
        _ => String::new(),
    }
}

/// Finds and opens the traces under `paths` (recursively; live capture
/// files too), with their labels. Trace directories that share a trace
/// UUID (LTTng rotation chunks) are merged into one trace, named by its
/// hostname alone, as babeltrace2 does. A path under which no trace is
/// found is an error.
pub fn open_traces(paths: &[PathBuf]) -> Result<(Vec<Arc<Trace>>, Vec<TraceLabel>), Error> {
    open_traces_with(paths, false)
}

/// [`open_traces`]; with `lazy`, the event classes' plans are compiled
/// when first needed ([`TraceClass::load_lazy`]).
pub fn open_traces_with(
    paths: &[PathBuf],
    lazy: bool,
) -> Result<(Vec<Arc<Trace>>, Vec<TraceLabel>), Error> {
    struct Found {
        class: TraceClass,
        dirs: Vec<PathBuf>,
        input: PathBuf,
    }
    let mut found: Vec<Found> = Vec::new();
    for input in paths {
        let dirs = find_traces(std::slice::from_ref(input))?;
        if dirs.is_empty() {
            return Err(Error::NoTrace {
                path: input.clone(),
            });
        }
        for dir in dirs {
            let class = if lazy {
                TraceClass::load_lazy(&dir)?
            } else {
                TraceClass::load(&dir)?
            };
            let same = class
                .meta
                .uuid
                .and_then(|u| found.iter_mut().find(|f| f.class.meta.uuid == Some(u)));
            match same {
                Some(f) => f.dirs.push(dir),
                None => found.push(Found {
                    class,
                    dirs: vec![dir],
                    input: input.clone(),
                }),
            }
        }
    }
    let mut traces = Vec::new();
    let mut labels = Vec::new();
    for f in found {
        let merged = f.dirs.len() > 1;
        let t = Arc::new(Trace::from_class(f.class, &f.dirs)?);
        labels.push(if merged {
            TraceLabel { name: hostname(&t) }
        } else {
            trace_label(&t, &f.input)
        });
        traces.push(t);
    }
    Ok((traces, labels))
}
