//! Activities for the page (`/api/activities`): the intervals `reef
//! activities` finds for a definition (begin and end conditions, a key),
//! computed once over the command line's reading and kept, with the rows
//! of their begin and end events, for the windows the page asks.

use std::sync::{Arc, Mutex};

use reef_engines::activities::{Activities, ActivitySpec};
use reef_engines::intervals::{run as run_intervals, Acc, Freq, ReportSpec, Summary};
use serde_json::{json, Value};

use crate::index::{Phase, View};
use crate::query::ApiError;

/// Activities kept per definition: beyond, the first ones (in time) are
/// kept and the answer says `truncated` (the whole trace's statistics
/// still count every one).
pub const MAX_KEPT: usize = 2_000_000;
/// Definitions whose activities are kept at once.
const CACHED: usize = 4;

/// One activity: page times (ns from the first event), the rows of its
/// begin and end events (`u32::MAX`: none), its group.
#[derive(Debug, Clone, Copy)]
pub struct Iv {
    pub begin: i64,
    pub end: i64,
    pub rows: [u32; 2],
    pub group: u32,
}

/// The activities of one definition.
pub struct Set {
    pub spec: (String, String, Option<String>),
    /// By begin time (then end time).
    pub ivs: Vec<Iv>,
    pub groups: Vec<String>,
    /// The longest activity (bounds the search for those overlapping a
    /// window).
    pub longest: i64,
    /// Every activity's statistics, as `reef activities` reports them.
    pub total: Option<Summary>,
    pub unfinished: u64,
    pub unmatched_ends: u64,
    pub unkeyed: u64,
    pub truncated: bool,
    /// The reading stopped at a damaged part of the traces.
    pub error: Option<String>,
}

/// The cache of [`Set`]s, most recent last.
#[derive(Default)]
pub struct Cache(Mutex<Vec<Arc<Set>>>);

/// The activities of a definition: from the cache, or computed (a pass
/// over the traces at the activities engine's speed).
pub fn get(view: &View, begin: &str, end: &str, key: Option<&str>) -> Result<Arc<Set>, ApiError> {
    let spec = (begin.to_string(), end.to_string(), key.map(str::to_string));
    {
        let mut c = view.activities.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = c.iter().position(|s| s.spec == spec) {
            let s = c.remove(i);
            c.push(s.clone());
            return Ok(s);
        }
    }
    let set = Arc::new(compute(view, spec)?);
    let mut c = view.activities.0.lock().unwrap_or_else(|e| e.into_inner());
    c.push(set.clone());
    if c.len() > CACHED {
        c.remove(0);
    }
    Ok(set)
}

fn compute(view: &View, spec: (String, String, Option<String>)) -> Result<Set, ApiError> {
    // Rows: the base index's, as its model found them.
    let (origin, model, rows) = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        if b.marks.phase == Phase::Building {
            return Err(ApiError::conflict("activities: once the index is built"));
        }
        let origin = b
            .origin
            .ok_or_else(|| ApiError::not_found("no event indexed"))?;
        (origin, b.model.clone(), b.model.rows.rows.len() as u32)
    };
    let def = ActivitySpec {
        begin: spec.0.clone(),
        end: spec.1.clone(),
        key: spec.2.clone(),
    };
    let report = ReportSpec {
        stats: true,
        log: true,
        ..Default::default()
    };
    let mut ivs = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut group_ids = std::collections::HashMap::new();
    let (mut truncated, mut longest) = (false, 0i64);
    let out = run_intervals::<_, ApiError>(
        &view.opts,
        &report,
        |src| {
            let mut a = Activities::new(&def, src).map_err(ApiError::located)?;
            let mut m = model.clone();
            a.set_tagger(Box::new(move |msg| {
                match m.locate(msg.trace, msg.stream, msg.cursor).row {
                    Some(r) if r < rows => r as u64 + 1,
                    _ => 0,
                }
            }));
            Ok(a)
        },
        |iv| {
            if ivs.len() >= MAX_KEPT {
                truncated = true;
                return Ok(());
            }
            let row = |t: u64| if t == 0 { u32::MAX } else { (t - 1) as u32 };
            let next = groups.len() as u32;
            let group = *group_ids.entry(iv.group.clone()).or_insert_with(|| {
                groups.push(iv.group.clone());
                next
            });
            longest = longest.max(iv.duration_ns);
            ivs.push(Iv {
                begin: iv.begin_ns - origin,
                end: iv.end_ns - origin,
                rows: [row(iv.tags[0]), row(iv.tags[1])],
                group,
            });
            Ok(())
        },
    )?;
    ivs.sort_by_key(|i| (i.begin, i.end));
    let total = out
        .report
        .stats
        .into_iter()
        .find(|g| g.group.is_empty())
        .map(|g| g.summary);
    Ok(Set {
        spec,
        ivs,
        groups,
        longest,
        total,
        unfinished: out.report.unfinished.values().sum(),
        unmatched_ends: out.engine.unmatched_ends,
        unkeyed: out.engine.unkeyed,
        truncated,
        error: out.stopped.map(|e| e.to_string()),
    })
}

/// How `/api/activities` lists a window's activities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Begin,
    /// Longest first, then earliest.
    Duration,
}

/// The answer of `/api/activities` for `[from, to)`: the activities that
/// overlap it (begin before `to`, end at or after `from`), their
/// statistics and a histogram of their durations, and at most `limit` of
/// them in `order`.
pub fn window(set: &Set, from: i64, to: i64, limit: usize, order: Order, bins: usize) -> Value {
    // Those beginning before `from - longest` end before `from`.
    let lo = set
        .ivs
        .partition_point(|i| i.begin < from.saturating_sub(set.longest));
    let hi = set.ivs.partition_point(|i| i.begin < to);
    let over: Vec<&Iv> = set.ivs[lo..hi.max(lo)]
        .iter()
        .filter(|i| i.end >= from)
        .collect();
    let mut acc = Acc::new();
    for i in &over {
        acc.add(i.end - i.begin);
    }
    let range = acc.summary();
    let histogram = range.as_ref().map(|s| {
        let mut f = Freq::new(s.min_ns, s.max_ns, bins);
        for i in &over {
            f.add(i.end - i.begin);
        }
        f.buckets()
    });
    let mut shown = over.clone();
    if order == Order::Duration {
        shown.sort_by_key(|i| (std::cmp::Reverse(i.end - i.begin), i.begin));
    }
    let more = shown.len() > limit;
    shown.truncate(limit);
    let row = |r: u32| if r == u32::MAX { Value::Null } else { json!(r) };
    let list: Vec<Value> = shown
        .iter()
        .map(|i| {
            json!({
                "begin": i.begin,
                "end": i.end,
                "duration": i.end - i.begin,
                "group": set.groups.get(i.group as usize),
                "rows": [row(i.rows[0]), row(i.rows[1])],
            })
        })
        .collect();
    let mut v = json!({
        "total": set.total,
        "unfinished": set.unfinished,
        "unmatched_ends": set.unmatched_ends,
        "unkeyed": set.unkeyed,
        "truncated": set.truncated,
        "count": over.len(),
        "range": range,
        "histogram": histogram,
        "activities": list,
        "more": more,
    });
    if let Some(e) = &set.error {
        v["error"] = json!(e);
    }
    v
}
