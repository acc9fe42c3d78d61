//! `/api/profile`: the flame chart of a window — the call tree of the
//! samples (or of function time, or of events by where they were emitted)
//! with time in `[from, to)`, over every row or one, read and symbolized
//! by `reef_profile::collect`, the code of `reef profile`, so that its
//! numbers are `reef profile --folded`'s with the same `--begin`/`--end`.

use std::sync::Mutex;

use reef_profile::collect::Frame;
use reef_profile::collect::{self, Grouping, Measure};
use reef_profile::Symbolizer;
use serde_json::{json, Value};

use crate::index::View;
use crate::query::ApiError;

/// The server's symbolizer: the objects its traces recorded (read once
/// per set of traces: a live trace's grow) and the files and names it has
/// looked up, kept for every later request.
#[derive(Default)]
pub struct Cache {
    sym: Mutex<Option<(Vec<usize>, Symbolizer)>>,
}

/// Frames of an answer: beyond, the smallest are merged into their parent
/// (`"pruned"` says how many were).
pub const MAX_FRAMES: usize = 20_000;

fn frame_json(f: &Frame, min: u64, kept: &mut usize, pruned: &mut u64) -> Value {
    let mut kids = Vec::new();
    for c in &f.children {
        if c.total < min {
            *pruned += 1;
            continue;
        }
        *kept += 1;
        kids.push(frame_json(c, min, kept, pruned));
    }
    json!({"name": f.name, "total": f.total, "self": f.own, "children": kids})
}

/// The smallest total a frame needs to be kept among at most `max`.
fn threshold(root: &Frame, max: usize) -> u64 {
    let mut totals = Vec::new();
    let mut stack = vec![root];
    while let Some(f) = stack.pop() {
        for c in &f.children {
            totals.push(c.total);
            stack.push(c);
        }
    }
    if totals.len() <= max {
        return 0;
    }
    totals.sort_unstable_by(|a, b| b.cmp(a));
    // Strictly above the first one left out, so that equal frames are all
    // kept or all left out.
    totals[max] + 1
}

/// The profile of `[from, to)` (ns from the first event), of row `row`'s
/// events only when given (`events`: `reef profile --events`).
pub fn profile(
    view: &View,
    cache: &Cache,
    from: i64,
    to: i64,
    row: Option<u32>,
    events: bool,
) -> Result<Value, ApiError> {
    let (origin, model) = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        let origin = b
            .origin
            .ok_or_else(|| ApiError::not_found("no event indexed yet"))?;
        let model = match row {
            Some(r) if r as usize >= b.model.rows.rows.len() => {
                return Err(ApiError::bad(format!("no row {r}")));
            }
            Some(_) => Some(b.model.clone()),
            None => None,
        };
        (origin, model)
    };
    let mut read = view.opts.clone();
    read.begin = Some(reef_read::TimeSpec::Ns(origin.saturating_add(from)));
    read.end = Some(reef_read::TimeSpec::Ns(origin.saturating_add(to) - 1));
    // The row of each event, as the index's model finds it.
    let mut model = model;
    let mut keep = |m: &reef_read::Msg| match (&mut model, row) {
        (Some(md), Some(r)) => md.locate(m.trace, m.stream, m.cursor).row == Some(r),
        _ => true,
    };
    let c = collect::collect(&read, Grouping::default(), &mut keep)
        .map_err(|e| ApiError::bad(e.to_string()))?;
    let measure = c.measure(events);

    let traces: Vec<usize> = view
        .traces()
        .iter()
        .map(|t| std::sync::Arc::as_ptr(t) as usize)
        .collect();
    let mut guard = cache.sym.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_none_or(|(k, _)| *k != traces) {
        // The files and names already looked up stay.
        let mut sym = match guard.take() {
            Some((_, s)) => s,
            None => Symbolizer::new(&[]),
        };
        collect::read_objects(&view.opts, &mut sym).map_err(|e| ApiError::bad(e.to_string()))?;
        *guard = Some((traces, sym));
    }
    let Some((_, sym)) = guard.as_mut() else {
        unreachable!("set above")
    };
    let stacks = measure.map(|m| c.stacks(m, sym)).unwrap_or_default();
    let mut missing = sym.missing.clone();
    drop(guard);
    missing.sort();
    missing.dedup();
    missing.retain(|p| !p.is_empty() && !p.starts_with("linux-vdso"));

    let root = stacks.frames();
    let min = threshold(&root, MAX_FRAMES);
    let (mut kept, mut pruned) = (0, 0);
    let tree = frame_json(&root, min, &mut kept, &mut pruned);
    Ok(json!({
        "from": from,
        "to": to,
        "row": row,
        "measure": measure.map(|m| match m {
            Measure::Samples => "samples",
            Measure::Time => "time",
            Measure::Events => "events",
        }),
        "unit": measure.map(Measure::unit),
        "total": root.total,
        "samples": c.nsamples,
        "function_events": c.nfunc,
        "unmatched_exits": c.tree.unmatched_exits,
        "unfinished": c.tree.unfinished,
        "missing_objects": missing,
        "frames": kept,
        "pruned": pruned,
        "root": tree,
        "error": c.stopped.map(|e| e.to_string()),
    }))
}
