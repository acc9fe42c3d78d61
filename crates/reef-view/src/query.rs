//! The answers of the API (`docs/view-api.md`): windows from the index or
//! decoded from a checkpoint, the event list, search, statistics, arrows.
//! Every function here runs on a blocking thread and holds an index lock
//! only while copying what it needs out of it.

use std::ops::ControlFlow;
use std::sync::Arc;

use reef_ctf::Item;
use reef_print::{ClockOptions, Options, Pretty};
use reef_read::Msg;
use serde::Serialize;
use serde_json::{json, Value};

use crate::buckets::{extract, Summary, Track};
use crate::index::{Checkpoint, FilterIx, Phase, Pred, View};
use crate::model::{Arrow, Model, OnRule, Seen, Sink, UNKNOWN};

/// An answer that is not a 200.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub position: Option<usize>,
    /// Which of the request's expressions `position` is in (`begin`,
    /// `end`, `key`, `period`), when there are several, and its text.
    pub expr: Option<String>,
    pub text: Option<String>,
}

impl ApiError {
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            position: None,
            expr: None,
            text: None,
        }
    }
    /// Not now: the index is still being built.
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 409,
            message: message.into(),
            position: None,
            expr: None,
            text: None,
        }
    }
    /// An error in one of the request's expressions (`what`: `--begin`, ...).
    pub fn located(e: reef_filter::LocatedError) -> ApiError {
        ApiError {
            status: 400,
            message: e.err.message,
            position: Some(e.err.pos),
            expr: Some(e.what.trim_start_matches('-').to_string()),
            text: Some(e.text),
        }
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 404,
            message: message.into(),
            position: None,
            expr: None,
            text: None,
        }
    }
    fn expr(e: reef_filter::ExprError) -> ApiError {
        ApiError {
            status: 400,
            message: e.message,
            position: Some(e.pos),
            expr: None,
            text: None,
        }
    }
}

type R<T> = Result<T, ApiError>;

impl From<reef_read::Error> for ApiError {
    fn from(e: reef_read::Error) -> ApiError {
        ApiError::bad(e.to_string())
    }
}

/// Per row: its summaries, each with the value at its end.
type RowSummaries = Vec<(u32, Vec<(Summary, i32)>)>;

fn pretty() -> Pretty {
    Pretty::new(Options {
        clock: ClockOptions {
            delta: true,
            ..ClockOptions::default()
        },
        ..Options::default()
    })
}

fn phase_text(p: &Phase) -> (&'static str, Option<String>) {
    match p {
        Phase::Building => ("building", None),
        Phase::Ready => ("ready", None),
        Phase::Error(e) => ("error", Some(e.clone())),
    }
}

/// `/api/info`.
pub fn info(view: &View) -> Value {
    let b = view.base.read().unwrap_or_else(|e| e.into_inner());
    let (state, error) = phase_text(&b.marks.phase);
    json!({
        "traces": view.labels.iter().zip(&view.traces()).map(|(l, t)| json!({
            "name": l.name, "path": t.path.display().to_string()})).collect::<Vec<_>>(),
        "kernel": b.model.kernel_trace.iter().any(|&k| k),
        "origin_ns": b.origin.map(|o| o.to_string()),
        "end": b.end,
        "events": b.marks.events,
        "classes": b.model.classes.names,
        "class_groups": b.model.classes.groups,
        "state": state,
        "error": error,
        "progress": {"done": b.marks.done.load(std::sync::atomic::Ordering::Relaxed).min(view.total), "total": view.total},
        "finest": 1u64 << b.marks.k,
        "rows": b.model.rows.rows.len(),
    })
}

/// `/api/rows`.
pub fn rows(view: &View) -> Value {
    let b = view.base.read().unwrap_or_else(|e| e.into_inner());
    serde_json::to_value(b.model.rows.labelled()).unwrap_or(Value::Null)
}

/// Validated window parameters.
pub struct Window {
    pub from: i64,
    pub to: i64,
    pub width: u32,
    pub rows: Option<Vec<u32>>,
    pub filter: Option<u32>,
}

/// The resolution of a window: the largest `k` with `2^k ≤ max(1, (to −
/// from) / width)`.
pub fn resolution(from: i64, to: i64, width: u32) -> u32 {
    let px = ((to - from) / width as i64).max(1) as u64;
    63 - px.leading_zeros()
}

fn filter_of(view: &View, id: Option<u32>) -> R<Option<Arc<FilterIx>>> {
    match id {
        None | Some(0) => Ok(None),
        Some(i) => view
            .filter(i)
            .map(Some)
            .ok_or_else(|| ApiError::bad(format!("no filter {i}: make one with /api/filter"))),
    }
}

fn pred_of(view: &View, f: Option<&FilterIx>) -> R<Pred> {
    let cli = view.opts.filter.as_deref().unwrap_or("");
    match f {
        None => Pred::new(&[cli], &[], &[]),
        Some(f) => Pred::new(&[cli, &f.expr], &f.hide_classes, &f.hide_rows),
    }
    .map_err(ApiError::expr)
}

struct RowSink<'a> {
    tracks: &'a mut [Option<Track>],
    k: u32,
    /// The arrows, and the number of marks in `range`.
    arrows: Option<(&'a mut Vec<Arrow>, &'a mut u64)>,
    range: (i64, i64),
    /// The start of the window's first bucket: what comes before only
    /// sets the values the window starts with (no bucket is kept for it).
    start: i64,
}

impl Sink for RowSink<'_> {
    fn mark(&mut self, row: u32, t: i64, class: u32) {
        if let Some((_, n)) = &mut self.arrows {
            if t >= self.range.0 && t < self.range.1 {
                **n += 1;
            }
        }
        if t < self.start {
            return;
        }
        if let Some(Some(tr)) = self.tracks.get_mut(row as usize) {
            tr.mark(t, class, self.k);
        }
    }
    fn value(&mut self, row: u32, t: i64, v: i32, _rule: OnRule) {
        if let Some(Some(tr)) = self.tracks.get_mut(row as usize) {
            tr.set(t, v, self.k);
            // Before the window only the last bucket matters (its value at
            // the end).
            let n = tr.buckets.len();
            if t < self.start && n > 1 {
                tr.buckets.drain(..n - 1);
            }
        }
    }
    fn arrow(&mut self, a: Arrow) {
        if let Some((v, _)) = &mut self.arrows {
            v.push(a);
        }
    }
}

/// What a decoding from a checkpoint starts with.
struct Replay {
    origin: i64,
    cp: Checkpoint,
    model: Model,
    values: Vec<i32>,
    rules: Vec<OnRule>,
    places: Arc<[reef_ctf::Place]>,
}

fn replay_from(view: &View, from: i64) -> R<Replay> {
    let b = view.base.read().unwrap_or_else(|e| e.into_inner());
    let origin = b
        .origin
        .ok_or_else(|| ApiError::not_found("no event indexed yet"))?;
    let i = b
        .marks
        .checkpoints
        .partition_point(|c| c.t <= from)
        .saturating_sub(1);
    let cp = *b
        .marks
        .checkpoints
        .get(i)
        .ok_or_else(|| ApiError::not_found("no event indexed yet"))?;
    let mut model = b.model.clone();
    model.kernel = crate::model::Kernel::from_point(&b.points[i].kernel);
    let rules = b.marks.tracks.iter().map(|t| t.rule).collect();
    Ok(Replay {
        origin,
        cp,
        values: b.points[i].values.clone(),
        places: b.points[i].places.clone(),
        model,
        rules,
    })
}

/// Decodes `[from, to)` again from the checkpoint before it: the buckets
/// at `2^k` of `rows`, and the wakeup arrows if asked.
fn decode_window(
    view: &View,
    w: &Window,
    k: u32,
    rows: &[u32],
    pred: &Pred,
    arrows: Option<(&mut Vec<Arrow>, &mut u64)>,
) -> R<RowSummaries> {
    // Whole buckets: from the start of the first to the end of the last.
    let start = (w.from >> k) << k;
    let end = ((((w.to - 1).max(w.from) >> k) + 1) << k).max(w.to);
    let Replay {
        origin,
        cp,
        mut model,
        values,
        rules,
        places,
    } = replay_from(view, start)?;
    let nrows = model.rows.rows.len();
    let mut tracks: Vec<Option<Track>> = vec![None; nrows];
    let initial = |r: usize| values.get(r).copied().unwrap_or(UNKNOWN);
    for &r in rows {
        if let Some(slot) = tracks.get_mut(r as usize) {
            *slot = Some(Track::new(
                rules.get(r as usize).copied().unwrap_or(OnRule::Never),
                initial(r as usize),
            ));
        }
    }
    let mut src = view
        .source(origin, cp.t, Some(end))
        .map_err(|e| ApiError::bad(e.to_string()))?;
    // Each stream from where the checkpoint left it.
    src.go_to(&places)
        .map_err(|e| ApiError::bad(e.to_string()))?;
    if !pred.needs_values() {
        // Only what the model reads.
        let keys = model.x.keys.clone();
        let trace_of = src.trace_of.clone();
        for (c, t) in src.cursors_mut().iter_mut().zip(trace_of) {
            keys.model_values(t, c);
        }
    }
    let mut sink = RowSink {
        tracks: &mut tracks,
        k,
        arrows,
        range: (w.from, w.to),
        start,
    };
    let _stopped = src.for_each_event(|m, ns| {
        model.event(
            m.trace,
            m.stream,
            m.cursor,
            ns - origin,
            |seen| pred.keep(m.cursor, seen),
            &mut sink,
        );
        Ok::<_, ApiError>(ControlFlow::Continue(()))
    })?;
    let mut out = Vec::new();
    for &r in rows {
        if let Some(Some(tr)) = tracks.get_mut(r as usize) {
            tr.commit(k);
            out.push((
                r,
                extract(
                    &tr.buckets,
                    tr.rule,
                    k,
                    k,
                    w.from,
                    w.to,
                    initial(r as usize),
                ),
            ));
        }
    }
    Ok(out)
}

/// Marks of a filter laid over the states of the base index.
fn combine(
    states: Vec<(Summary, i32)>,
    marks: Vec<(Summary, i32)>,
    rule: OnRule,
    res: i64,
) -> Vec<(Summary, i32)> {
    let first_j = states.first().map(|s| s.0[0]);
    let mut out = Vec::with_capacity(states.len().max(marks.len()));
    let (mut i, mut m) = (0, 0);
    let mut value = states.first().map_or(UNKNOWN, |s| s.0[3] as i32);
    loop {
        let sj = states.get(i).map_or(i64::MAX, |s| s.0[0]);
        let mj = marks.get(m).map_or(i64::MAX, |s| s.0[0]);
        let j = sj.min(mj);
        if j == i64::MAX {
            return out;
        }
        let (mut sum, v_end) = if sj == j {
            i += 1;
            states[i - 1]
        } else {
            let on = if rule.on(value) { res } else { 0 };
            ([j, 0, -1, value as i64, 0, on], value)
        };
        sum[1] = 0;
        sum[2] = -1;
        if mj == j {
            sum[1] = marks[m].0[1];
            sum[2] = marks[m].0[2];
            m += 1;
        }
        value = v_end;
        if Some(j) == first_j || sum[1] > 0 || sum[4] > 0 {
            out.push((sum, v_end));
        }
    }
}

/// One row of a `/api/window` answer (the `i`th) as JSON.
fn write_row(out: &mut String, i: usize, id: u32, b: &[(Summary, i32)]) {
    use std::fmt::Write;
    let _ = write!(out, "{}{{\"id\":{id},\"b\":[", if i > 0 { "," } else { "" });
    for (n, (s, _)) in b.iter().enumerate() {
        let _ = write!(
            out,
            "{}[{},{},{},{},{},{}]",
            if n > 0 { "," } else { "" },
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            s[5]
        );
    }
    out.push_str("]}");
}

/// `/api/window`.
pub fn window(view: &View, w: &Window) -> R<Answer> {
    let mut k = resolution(w.from, w.to, w.width);
    let f = filter_of(view, w.filter)?;
    let (all_rows, base_k) = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        (b.model.rows.rows.len() as u32, b.marks.k)
    };
    let rows: Vec<u32> = match &w.rows {
        Some(r) => {
            if let Some(bad) = r.iter().find(|&&r| r >= all_rows) {
                return Err(ApiError::bad(format!("no row {bad}")));
            }
            r.clone()
        }
        None => (0..all_rows).collect(),
    };
    let filter_k = f
        .as_ref()
        .map(|f| f.marks.read().unwrap_or_else(|e| e.into_inner()).k);
    let finest = base_k.max(filter_k.unwrap_or(0));
    if k < finest {
        // Decoding costs what the window holds: past a bound, the answer
        // is the index's finest instead.
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        let marks: i64 = b
            .marks
            .tracks
            .iter()
            .map(|t| {
                extract(&t.buckets, t.rule, b.marks.k, finest, w.from, w.to, UNKNOWN)
                    .iter()
                    .map(|s| s.0[1])
                    .sum::<i64>()
            })
            .sum();
        if marks > view.decode_marks as i64 {
            k = finest;
        }
    }
    let res = 1i64 << k;
    let from_index = k >= base_k && filter_k.is_none_or(|fk| k >= fk);
    // Written directly, a row at a time: a whole-trace answer over
    // hundreds of rows holds hundreds of thousands of numbers, and only
    // its text is kept.
    let source = if from_index { "index" } else { "decoded" };
    let mut out = format!("{{\"res\":{res},\"k\":{k},\"source\":\"{source}\",\"rows\":[");
    if from_index {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        let fm = f
            .as_ref()
            .map(|f| f.marks.read().unwrap_or_else(|e| e.into_inner()));
        for (i, &r) in rows.iter().enumerate() {
            let empty = Track::new(OnRule::Never, UNKNOWN);
            let tr = b.marks.tracks.get(r as usize).unwrap_or(&empty);
            let states = extract(&tr.buckets, tr.rule, b.marks.k, k, w.from, w.to, UNKNOWN);
            let s = match &fm {
                None => states,
                Some(fm) => {
                    let mt = fm.tracks.get(r as usize).unwrap_or(&empty);
                    let marks = extract(&mt.buckets, OnRule::Never, fm.k, k, w.from, w.to, UNKNOWN);
                    combine(states, marks, tr.rule, res)
                }
            };
            write_row(&mut out, i, r, &s);
        }
    } else {
        let pred = pred_of(view, f.as_deref())?;
        for (i, (r, s)) in decode_window(view, w, k, &rows, &pred, None)?
            .iter()
            .enumerate()
        {
            write_row(&mut out, i, *r, s);
        }
    }
    out.push_str("]}");
    Ok(Answer::Text(out))
}

/// An answer: a JSON value, or JSON text already written.
pub enum Answer {
    Value(Value),
    Text(String),
}

impl From<Value> for Answer {
    fn from(v: Value) -> Answer {
        Answer::Value(v)
    }
}

/// The list's context: checkpoints, total and predicate of the base
/// index or of a filter.
struct List {
    origin: i64,
    checkpoints: Vec<Checkpoint>,
    /// Where each stream stood at each checkpoint (the base list only).
    places: Vec<Arc<[reef_ctf::Place]>>,
    total: u64,
    pred: Pred,
    model: Model,
}

fn list_of(view: &View, filter: Option<u32>) -> R<List> {
    let f = filter_of(view, filter)?;
    let pred = pred_of(view, f.as_deref())?;
    let b = view.base.read().unwrap_or_else(|e| e.into_inner());
    let origin = b
        .origin
        .ok_or_else(|| ApiError::not_found("no event indexed yet"))?;
    let model = b.model.clone();
    // The base list starts each stream where its checkpoint left it.
    let places = match &f {
        None => b.points.iter().map(|p| p.places.clone()).collect(),
        Some(_) => Vec::new(),
    };
    let (checkpoints, total) = match &f {
        None => (b.marks.checkpoints.clone(), b.marks.events),
        Some(f) => {
            let m = f.marks.read().unwrap_or_else(|e| e.into_inner());
            if m.checkpoints.is_empty() {
                // Not started: read from the beginning.
                (
                    vec![Checkpoint {
                        t: 0,
                        before: 0,
                        prev_ns: None,
                        prev_cycles: None,
                    }],
                    m.events,
                )
            } else {
                (m.checkpoints.clone(), m.events)
            }
        }
    };
    Ok(List {
        origin,
        checkpoints,
        places,
        total,
        pred,
        model,
    })
}

/// An event of the list as a walk sees it.
struct At<'m, 'a> {
    m: &'m Msg<'a>,
    ns: i64,
    t: i64,
    /// Its index among the list's events at the same time.
    same: u64,
    seen: Seen,
}

impl List {
    fn checkpoint_at(&self, t: i64) -> usize {
        self.checkpoints
            .partition_point(|c| c.t <= t)
            .saturating_sub(1)
    }

    /// Reads the list's events from checkpoint `i` on, giving each to `f`
    /// with the printer (its previous time already set: call
    /// [`Pretty::event`] to format the event, or nothing).
    fn walk(
        &mut self,
        view: &View,
        i: usize,
        pretty: &mut Pretty,
        mut f: impl FnMut(&At<'_, '_>, &mut Pretty) -> ControlFlow<()>,
    ) -> R<()> {
        let cp = self.checkpoints[i];
        pretty.set_previous(cp.prev_ns, cp.prev_cycles);
        let mut src = view
            .source(self.origin, cp.t, None)
            .map_err(|e| ApiError::bad(e.to_string()))?;
        if let Some(places) = self.places.get(i) {
            src.go_to(places)
                .map_err(|e| ApiError::bad(e.to_string()))?;
        }
        let (origin, pred, model) = (self.origin, &self.pred, &mut self.model);
        let mut last_t = i64::MIN;
        let mut same = 0;
        let stopped = src.for_each_event(|m, ns| {
            let mut keep = false;
            let seen = model.locate(m.trace, m.stream, m.cursor);
            if pred.keep(m.cursor, seen) {
                keep = true;
            }
            if !keep {
                return Ok::<_, ApiError>(ControlFlow::Continue(()));
            }
            let t = ns - origin;
            if t != last_t {
                last_t = t;
                same = 0;
            }
            let at = At {
                m,
                ns,
                t,
                same,
                seen,
            };
            same += 1;
            let flow = f(&at, pretty);
            if flow.is_continue() {
                pretty.set_previous(Some(ns), m.cursor.event.ts);
            }
            Ok(flow)
        })?;
        // Damage the index met is served up to where it lies; a file
        // changed since it was indexed is an error of the request.
        if let Some(e) = stopped {
            let msg = e.to_string();
            if msg.contains(reef_ctf::guard::CHANGED) {
                return Err(ApiError {
                    status: 500,
                    ..ApiError::bad(msg)
                });
            }
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct Line {
    t: i64,
    skip: u64,
    row: Option<u32>,
    line: String,
}

fn line_of(at: &At<'_, '_>, p: &mut Pretty) -> Line {
    let mut out = Vec::new();
    p.event(&mut out, at.m.label, at.m.cursor, Some(at.ns));
    while out.last() == Some(&b'\n') {
        out.pop();
    }
    Line {
        t: at.t,
        skip: at.same,
        row: at.seen.row,
        line: String::from_utf8_lossy(&out).into_owned(),
    }
}

/// The list's index of the `skip`-th event at or after `from`.
fn position(view: &View, list: &mut List, from: i64, skip: u64) -> R<u64> {
    if from <= 0 {
        // Every event is at or after the origin.
        return Ok(skip.min(list.total));
    }
    let i = list.checkpoint_at(from);
    let mut before = list.checkpoints[i].before;
    let mut skipped = 0;
    let mut p = pretty();
    list.walk(view, i, &mut p, |at, _| {
        if at.t >= from {
            if skipped >= skip {
                return ControlFlow::Break(());
            }
            skipped += 1;
        }
        before += 1;
        ControlFlow::Continue(())
    })?;
    Ok(before)
}

/// `/api/events`.
pub fn events(
    view: &View,
    from: i64,
    skip: u64,
    count: usize,
    back: bool,
    filter: Option<u32>,
) -> R<Value> {
    let mut list = list_of(view, filter)?;
    let pos = position(view, &mut list, from, skip)?;
    let start = if back {
        pos.saturating_sub(count as u64)
    } else {
        pos
    };
    let want = if back { (pos - start) as usize } else { count };
    let i = list
        .checkpoints
        .partition_point(|c| c.before <= start)
        .saturating_sub(1);
    let mut idx = list.checkpoints[i].before;
    let mut lines = Vec::new();
    let mut p = pretty();
    if want > 0 {
        list.walk(view, i, &mut p, |at, p| {
            if idx >= start {
                lines.push(line_of(at, p));
                if lines.len() >= want {
                    return ControlFlow::Break(());
                }
            }
            idx += 1;
            ControlFlow::Continue(())
        })?;
    }
    Ok(json!({"events": lines, "total": list.total, "before": start}))
}

/// `/api/event`: the first mark of `row` in `[from, to)`.
pub fn event(view: &View, row: u32, from: i64, to: i64, filter: Option<u32>) -> R<Value> {
    let mut list = list_of(view, filter)?;
    if row as usize >= list.model.rows.rows.len() {
        return Err(ApiError::bad(format!("no row {row}")));
    }
    let i = list.checkpoint_at(from);
    let mut found = None;
    let mut p = pretty();
    list.walk(view, i, &mut p, |at, p| {
        if at.t >= to {
            return ControlFlow::Break(());
        }
        if at.t >= from && at.seen.row == Some(row) {
            found = Some(line_of(at, p));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    match found {
        Some(l) => Ok(serde_json::to_value(l).unwrap_or(Value::Null)),
        None => Err(ApiError::not_found("no event of that row in that range")),
    }
}

/// `/api/search`.
pub fn search(
    view: &View,
    expr: &str,
    from: i64,
    skip: u64,
    back: bool,
    filter: Option<u32>,
) -> R<Value> {
    let what = reef_filter::EventFilter::new(expr).map_err(ApiError::expr)?;
    let mut list = list_of(view, filter)?;
    let mut p = pretty();
    if !back {
        let i = list.checkpoint_at(from);
        let mut at_from = 0u64;
        let mut found = None;
        list.walk(view, i, &mut p, |at, p| {
            if at.t < from {
                return ControlFlow::Continue(());
            }
            at_from += 1;
            if at_from > skip && what.matches(at.m.cursor) {
                found = Some(line_of(at, p));
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })?;
        return Ok(match found {
            Some(l) => serde_json::to_value(l).unwrap_or(Value::Null),
            None => json!({"found": false}),
        });
    }
    // Backwards: the last match before (from, skip), one checkpoint
    // interval at a time.
    let mut limit = (from, skip);
    let mut i = list.checkpoint_at(from);
    loop {
        let mut found: Option<Line> = None;
        let mut at_from = 0u64;
        list.walk(view, i, &mut p, |at, p| {
            if at.t >= limit.0 {
                if at_from >= limit.1 {
                    return ControlFlow::Break(());
                }
                at_from += 1;
            }
            if what.matches(at.m.cursor) {
                found = Some(line_of(at, p));
            }
            ControlFlow::Continue(())
        })?;
        if let Some(l) = found {
            return Ok(serde_json::to_value(l).unwrap_or(Value::Null));
        }
        if i == 0 {
            return Ok(json!({"found": false}));
        }
        limit = (list.checkpoints[i].t, 0);
        i -= 1;
    }
}

/// `/api/stats`: what `reef stats` counts over `[from, to)`.
pub fn stats(view: &View, from: i64, to: i64, filter: Option<u32>) -> R<Value> {
    let mut list = list_of(view, filter)?;
    let mut src = view
        .source(list.origin, from, Some(to))
        .map_err(|e| ApiError::bad(e.to_string()))?;
    let mut c = reef_engines::stats::StatsCollector::new(&src);
    let (pred, model) = (&list.pred, &mut list.model);
    let stopped = src.for_each_message(|m| {
        let keep = match m.item {
            Item::Event => pred.keep(m.cursor, model.locate(m.trace, m.stream, m.cursor)),
            _ => true,
        };
        if keep {
            c.message(m);
        }
        Ok::<_, ApiError>(ControlFlow::Continue(()))
    })?;
    let mut v = serde_json::to_value(c.stats(&src)).unwrap_or(Value::Null);
    if let (Some(e), Some(o)) = (stopped, v.as_object_mut()) {
        o.insert("error".into(), Value::String(e.to_string()));
    }
    Ok(v)
}

/// More events than this in a window: no arrows (`more`).
pub const ARROW_EVENTS: i64 = 200_000;

/// `/api/arrows`.
pub fn arrows(view: &View, w: &Window) -> R<Value> {
    // The marks in the window: at least those of the index's buckets that
    // lie inside it.
    let inside_lower: i64 = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        let k = b.marks.k;
        b.marks
            .tracks
            .iter()
            .map(|t| {
                extract(&t.buckets, t.rule, k, k, w.from, w.to, UNKNOWN)
                    .iter()
                    .filter(|s| s.0[0] << k >= w.from && (s.0[0] + 1) << k <= w.to)
                    .map(|s| s.0[1])
                    .sum::<i64>()
            })
            .sum()
    };
    if inside_lower > ARROW_EVENTS {
        return Ok(json!({"arrows": [], "more": true}));
    }
    let pred = pred_of(view, None)?;
    let mut all = Vec::new();
    let mut marks = 0u64;
    decode_window(view, w, 0, &[], &pred, Some((&mut all, &mut marks)))?;
    if marks > ARROW_EVENTS as u64 {
        return Ok(json!({"arrows": [], "more": true}));
    }
    let mut inside: Vec<Arrow> = all
        .into_iter()
        .filter(|a| a.to_t >= w.from && a.to_t < w.to)
        .collect();
    let more = inside.len() > w.width as usize;
    inside.truncate(w.width as usize);
    Ok(json!({"arrows": inside, "more": more}))
}

/// `/api/filter`.
pub fn make_filter(
    view: &Arc<View>,
    expr: &str,
    hide_classes: Vec<u32>,
    hide_rows: Vec<u32>,
) -> R<Value> {
    {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        let (nc, nr) = (b.model.classes.names.len(), b.model.rows.rows.len());
        if let Some(c) = hide_classes.iter().find(|&&c| c as usize >= nc) {
            return Err(ApiError::bad(format!("no class {c}")));
        }
        if let Some(r) = hide_rows.iter().find(|&&r| r as usize >= nr) {
            return Err(ApiError::bad(format!("no row {r}")));
        }
    }
    let f = view
        .make_filter(expr, hide_classes, hide_rows)
        .map_err(ApiError::expr)?;
    let m = f.marks.read().unwrap_or_else(|e| e.into_inner());
    let (state, error) = phase_text(&m.phase);
    Ok(json!({
        "id": f.id,
        "finest": 1u64 << m.k,
        "state": state,
        "error": error,
        "events": m.events,
        "progress": {"done": m.done.load(std::sync::atomic::Ordering::Relaxed).min(view.total), "total": view.total},
    }))
}

/// The kernel analyses `/api/analysis` runs, as the commands of the same
/// names.
pub const ANALYSES: [&str; 6] = [
    "cputop",
    "syscallstats",
    "irqstats",
    "schedstats",
    "iolatency",
    "memtop",
];

/// What `/api/analysis` asks beside the analysis and the range.
#[derive(Debug, Clone, Default)]
pub struct AnalysisOpts {
    /// `cputop`, `memtop`: rows per table (default 10).
    pub limit: Option<usize>,
    /// `schedstats`: the groups (default per thread).
    pub total: bool,
    pub per_tid: bool,
    pub per_prio: bool,
}

/// `/api/analysis`: the analysis `name` over `[from, to)` (ns from the
/// first event), as `reef NAME --lami --begin B --end E` gives it over the
/// same traces: `{"results": [...]}` (LAMI 1.0 result tables), with
/// `"error"` beside them when the trace is damaged after the start (the
/// tables then cover the events before).
pub fn analysis(view: &View, name: &str, from: i64, to: i64, o: &AnalysisOpts) -> R<Value> {
    use reef_analyses::{cputop, io, irqstats, memtop, schedstats, syscallstats};
    let origin = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        b.origin
            .ok_or_else(|| ApiError::not_found("no event indexed yet"))?
    };
    let kernel = view.traces().iter().any(
        |t| matches!(t.meta().env_get("domain"), Some(reef_ctf::EnvValue::Str(d)) if d == "kernel"),
    );
    if !kernel {
        return Err(ApiError::bad(
            "the kernel analyses need an LTTng kernel trace (env.domain = \"kernel\")",
        ));
    }
    let mut read = view.opts.clone();
    read.begin = Some(reef_read::TimeSpec::Ns(origin.saturating_add(from)));
    read.end = Some(reef_read::TimeSpec::Ns(origin.saturating_add(to) - 1));
    let limit = o.limit.unwrap_or(10);
    match name {
        "cputop" => lami(&read, cputop::Cputop::new(limit)),
        "syscallstats" => lami(&read, syscallstats::Syscallstats::new()),
        "irqstats" => lami(&read, irqstats::Irqstats::new()),
        "schedstats" => {
            let groups = schedstats::Groups {
                total: o.total,
                per_tid: o.per_tid || !(o.total || o.per_prio),
                per_prio: o.per_prio,
            };
            lami(&read, schedstats::Schedstats::new(groups))
        }
        "iolatency" => lami(&read, io::Io::new(io::Mode::Stats)),
        "memtop" => lami(&read, memtop::Memtop::new(limit)),
        _ => Err(ApiError::bad(format!(
            "no analysis {name:?}: one of {}",
            ANALYSES.join(", ")
        ))),
    }
}

/// `analysis` over `read` as `reef NAME --lami` prints it, with `"error"`
/// beside the results when a reading error stopped it.
fn lami<A: reef_analyses::Analysis>(read: &reef_read::ReadOptions, analysis: A) -> R<Value> {
    let (tables, err) =
        reef_analyses::analyse(read, analysis, true).map_err(|e| ApiError::bad(e.to_string()))?;
    let mut v = reef_analyses::lami::results_json(&tables);
    // The table classes' titles and columns, as `--metadata` gives them.
    v["table-classes"] = A::metadata().to_json()["table-classes"].take();
    if let Some(e) = err {
        v["error"] = json!(e.to_string());
    }
    Ok(v)
}
