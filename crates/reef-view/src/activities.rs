//! Activities and periods for the page (`/api/activities`,
//! `/api/periods`): the intervals `reef activities` finds for a definition
//! (begin and end conditions, a key), or `reef periods` for a set of
//! period definitions, computed once over the command line's reading and
//! kept, with the rows of their begin and end events, for the windows the
//! page asks.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use reef_engines::activities::{Activities, ActivitySpec};
use reef_engines::intervals::{
    run as run_intervals, Acc, Freq, Interval, ReportSpec, Summary, Tagger,
};
use reef_engines::periods::{PeriodSpec, Periods};
use serde_json::{json, Value};

use crate::index::{Phase, View};
use crate::query::ApiError;

/// Intervals kept per definition (32 bytes each): beyond, the first ones
/// to end are kept and the answer says `truncated` (the whole trace's
/// statistics still count every one).
pub const MAX_KEPT: usize = 1_000_000;
/// Definitions whose activities are kept at once.
const CACHED: usize = 3;

/// What is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// `reef activities --begin B --end E [--key K]`.
    Activities {
        begin: String,
        end: String,
        key: Option<String>,
    },
    /// `reef periods --period P...`.
    Periods(Vec<String>),
    /// The log of a kernel analysis: `reef schedlog` (wakeup to
    /// switch-in, named by the woken thread), `reef irqlog` (handler
    /// runs, named by the interrupt, in group `hard` or `soft`) or `iolog`
    /// (the rows of `reef iolog`: named by the system call, grouped by
    /// thread) or `syscalls`
    /// (every call `reef syscallstats` counts, likewise).
    Log(String),
}

/// The kernel analyses' logs [`Spec::Log`] names.
pub const LOGS: [&str; 4] = ["schedlog", "irqlog", "iolog", "syscalls"];

/// One interval: page times (ns from the first event), the rows of its
/// begin and end events (`u32::MAX`: none), its name (periods) and group.
#[derive(Debug, Clone, Copy)]
pub struct Iv {
    pub begin: i64,
    pub end: i64,
    pub rows: [u32; 2],
    pub name: u32,
    pub group: u32,
}

// What MAX_KEPT's memory is counted with.
const _: () = assert!(std::mem::size_of::<Iv>() == 32);

/// The intervals of one definition.
pub struct Set {
    pub spec: Spec,
    /// By begin time (then end time).
    pub ivs: Vec<Iv>,
    pub groups: Vec<String>,
    /// Period names (activities: one, empty).
    pub names: Vec<String>,
    /// The longest activity (bounds the search for those overlapping a
    /// window).
    pub longest: i64,
    /// Every interval's statistics per name, as `reef activities` and
    /// `reef periods` report them.
    pub totals: Vec<(String, Summary)>,
    pub unfinished: u64,
    pub unmatched_ends: u64,
    pub unkeyed: u64,
    pub truncated: bool,
    /// When truncated: the last end kept (page time); the intervals after
    /// it are missing.
    pub kept_until: Option<i64>,
    /// The reading stopped at a damaged part of the traces.
    pub error: Option<String>,
}

/// The cache of [`Set`]s, most recent last, and the definitions being
/// computed (a request for one of those waits for it rather than reading
/// the traces again).
#[derive(Default)]
pub struct Cache {
    state: Mutex<CacheState>,
    done: Condvar,
}

#[derive(Default)]
struct CacheState {
    sets: Vec<Arc<Set>>,
    computing: Vec<Spec>,
}

fn lock(m: &Mutex<CacheState>) -> MutexGuard<'_, CacheState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The intervals of a definition: from the cache, or computed (a pass
/// over the traces at the engine's speed).
pub fn get(view: &View, spec: Spec) -> Result<Arc<Set>, ApiError> {
    let cache = &view.activities;
    {
        let mut c = lock(&cache.state);
        loop {
            if let Some(i) = c.sets.iter().position(|s| s.spec == spec) {
                let s = c.sets.remove(i);
                c.sets.push(s.clone());
                return Ok(s);
            }
            if !c.computing.contains(&spec) {
                c.computing.push(spec.clone());
                break;
            }
            // Another request computes it (if it fails, this one tries).
            c = cache.done.wait(c).unwrap_or_else(|e| e.into_inner());
        }
    }
    // Whatever happens (an error, a panic), the definition is no longer
    // being computed once this is dropped, and the waiting requests wake.
    struct Computing<'a>(&'a Cache, &'a Spec);
    impl Drop for Computing<'_> {
        fn drop(&mut self) {
            lock(&self.0.state).computing.retain(|s| s != self.1);
            self.0.done.notify_all();
        }
    }
    let _computing = Computing(cache, &spec);
    let set = Arc::new(compute(view, spec.clone())?);
    let mut c = lock(&cache.state);
    c.sets.push(set.clone());
    if c.sets.len() > CACHED {
        c.sets.remove(0);
    }
    Ok(set)
}

/// Interns strings.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    ids: std::collections::HashMap<String, u32>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }
}

/// What the log of a pass keeps.
struct Kept {
    origin: i64,
    ivs: Vec<Iv>,
    names: Names,
    groups: Names,
    truncated: bool,
    longest: i64,
}

impl Kept {
    fn add(&mut self, iv: &Interval) {
        if self.ivs.len() >= MAX_KEPT {
            self.truncated = true;
            return;
        }
        let row = |t: u64| if t == 0 { u32::MAX } else { (t - 1) as u32 };
        self.longest = self.longest.max(iv.duration_ns);
        let (name, group) = (self.names.id(&iv.name), self.groups.id(&iv.group));
        self.ivs.push(Iv {
            begin: iv.begin_ns - self.origin,
            end: iv.end_ns - self.origin,
            rows: [row(iv.tags[0]), row(iv.tags[1])],
            name,
            group,
        });
    }
}

fn compute(view: &View, spec: Spec) -> Result<Set, ApiError> {
    // Rows: the base index's, as its model found them (a log needs none).
    let (origin, model, rows) = {
        let b = view.base.read().unwrap_or_else(|e| e.into_inner());
        if b.marks.phase == Phase::Building {
            return Err(ApiError::conflict(
                "activities and periods: once the index is built",
            ));
        }
        let origin = b
            .origin
            .ok_or_else(|| ApiError::not_found("no event indexed"))?;
        if let Spec::Log(name) = &spec {
            drop(b);
            return compute_log(view, origin, name, spec.clone());
        }
        (origin, b.model.clone(), b.model.rows.rows.len() as u32)
    };
    // Each begin and end event's row, as the base index's model finds it.
    let tagger = || -> Tagger {
        let mut m = model.clone();
        Box::new(
            move |msg| match m.locate(msg.trace, msg.stream, msg.cursor).row {
                Some(r) if r < rows => r as u64 + 1,
                _ => 0,
            },
        )
    };
    let report = ReportSpec {
        stats: true,
        log: true,
        ..Default::default()
    };
    let mut kept = Kept {
        origin,
        ivs: Vec::new(),
        names: Names::default(),
        groups: Names::default(),
        truncated: false,
        longest: 0,
    };
    let log = |k: &mut Kept, iv: &Interval| {
        k.add(iv);
        Ok(())
    };
    let (report, stopped, unmatched_ends, unkeyed) = match &spec {
        Spec::Activities { begin, end, key } => {
            let def = ActivitySpec {
                begin: begin.clone(),
                end: end.clone(),
                key: key.clone(),
            };
            let o = run_intervals::<_, ApiError>(
                &view.opts,
                &report,
                |src| {
                    let mut a = Activities::new(&def, src).map_err(ApiError::located)?;
                    a.set_tagger(tagger());
                    Ok(a)
                },
                |iv| log(&mut kept, iv),
            )?;
            (
                o.report,
                o.stopped,
                o.engine.unmatched_ends,
                o.engine.unkeyed,
            )
        }
        Spec::Log(_) => unreachable!("computed above"),
        Spec::Periods(periods) => {
            let def = PeriodSpec {
                periods: periods.clone(),
                captures: Vec::new(),
                group_by: Vec::new(),
            };
            let o = run_intervals::<_, ApiError>(
                &view.opts,
                &report,
                |_| {
                    let mut p = Periods::new(&def).map_err(ApiError::located)?;
                    p.set_tagger(tagger());
                    Ok(p)
                },
                |iv| log(&mut kept, iv),
            )?;
            (o.report, o.stopped, 0, 0)
        }
    };
    let Kept {
        mut ivs,
        names,
        groups,
        truncated,
        longest,
        ..
    } = kept;
    let kept_until = if truncated {
        ivs.iter().map(|i| i.end).max()
    } else {
        None
    };
    ivs.sort_by_key(|i| (i.begin, i.end));
    let totals = report
        .stats
        .into_iter()
        .filter(|g| g.group.is_empty())
        .map(|g| (g.name, g.summary))
        .collect();
    Ok(Set {
        spec,
        ivs,
        groups: groups.list,
        names: names.list,
        longest,
        totals,
        unfinished: report.unfinished.values().sum(),
        unmatched_ends,
        unkeyed,
        truncated,
        kept_until,
        error: stopped.map(|e| e.to_string()),
    })
}

/// A kernel analysis' log ([`Spec::Log`]) over the whole trace, as `reef
/// NAME --lami` gives it (lttng-analyses' time range and stream
/// intersection), its rows as intervals.
fn compute_log(view: &View, origin: i64, name: &str, spec: Spec) -> Result<Set, ApiError> {
    use reef_analyses::{
        analyse,
        io::{Io, Mode},
        irqstats::Irqlog,
        schedlog::Schedlog,
        syscallstats::Syscallstats,
    };
    let read = view.opts.clone();
    let (tables, err) = match name {
        "schedlog" => analyse(&read, Schedlog::new(), true),
        "irqlog" => analyse(&read, Irqlog::new(), true),
        "iolog" => analyse(&read, Io::new(Mode::Log), true),
        "syscalls" => analyse(&read, Syscallstats::with_log(), true).map(|(mut t, e)| {
            t.retain(|t| t.class.name == reef_analyses::syscallstats::CALLS.name);
            (t, e)
        }),
        _ => {
            return Err(ApiError::bad(format!(
                "no log {name:?}: one of {}",
                LOGS.join(", ")
            )))
        }
    }
    .map_err(|e| ApiError::bad(e.to_string()))?;
    let mut names = Names::default();
    let mut groups = Names::default();
    let mut ivs = Vec::new();
    let mut acc = Acc::new();
    let mut longest = 0;
    let mut truncated = false;
    let ns = |v: &Value| v.as_i64().unwrap_or(0);
    for row in tables.iter().flat_map(|t| &t.rows) {
        let (begin, end, n, g) = match name {
            "schedlog" => (
                ns(&row[0].to_value()["value"]),
                ns(&row[1].to_value()["value"]),
                reef_analyses::lami::cell_text(&row[5]),
                String::new(),
            ),
            "iolog" => (
                ns(&row[0].to_value()["begin"]["value"]),
                ns(&row[0].to_value()["end"]["value"]),
                reef_analyses::lami::cell_text(&row[3]),
                reef_analyses::lami::cell_text(&row[5]),
            ),
            "syscalls" => (
                ns(&row[0].to_value()["begin"]["value"]),
                ns(&row[0].to_value()["end"]["value"]),
                reef_analyses::lami::cell_text(&row[1]),
                reef_analyses::lami::cell_text(&row[2]),
            ),
            _ => (
                ns(&row[0].to_value()["begin"]["value"]),
                ns(&row[0].to_value()["end"]["value"]),
                reef_analyses::lami::cell_text(&row[3]),
                if row[3].to_value()["hard"].as_bool() == Some(true) {
                    "hard"
                } else {
                    "soft"
                }
                .to_string(),
            ),
        };
        acc.add(end - begin);
        if ivs.len() >= MAX_KEPT {
            truncated = true;
            continue;
        }
        longest = longest.max(end - begin);
        ivs.push(Iv {
            begin: begin - origin,
            end: end - origin,
            rows: [u32::MAX; 2],
            name: names.id(&n),
            group: groups.id(&g),
        });
    }
    let kept_until = if truncated {
        ivs.iter().map(|i| i.end).max()
    } else {
        None
    };
    ivs.sort_by_key(|i| (i.begin, i.end));
    Ok(Set {
        spec,
        ivs,
        groups: groups.list,
        names: names.list,
        longest,
        totals: acc
            .summary()
            .map(|s| vec![(name.to_string(), s)])
            .unwrap_or_default(),
        unfinished: 0,
        unmatched_ends: 0,
        unkeyed: 0,
        truncated,
        kept_until,
        error: err.map(|e| e.to_string()),
    })
}

/// How `/api/activities` lists a window's intervals.
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
/// With `name`, only the intervals of that name (periods).
pub fn window(
    set: &Set,
    from: i64,
    to: i64,
    name: Option<&str>,
    limit: usize,
    order: Order,
    bins: usize,
) -> Value {
    let name = name.map(|n| set.names.iter().position(|x| x == n).map(|i| i as u32));
    // Those beginning before `from - longest` end before `from`.
    let lo = set
        .ivs
        .partition_point(|i| i.begin < from.saturating_sub(set.longest));
    let hi = set.ivs.partition_point(|i| i.begin < to);
    let over: Vec<&Iv> = set.ivs[lo..hi.max(lo)]
        .iter()
        .filter(|i| i.end >= from && name.is_none_or(|n| Some(i.name) == n))
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
                "name": set.names.get(i.name as usize),
                "group": set.groups.get(i.group as usize),
                "rows": [row(i.rows[0]), row(i.rows[1])],
            })
        })
        .collect();
    let mut v = json!({
        "totals": set
            .totals
            .iter()
            .map(|(n, s)| {
                let mut v = json!(s);
                v["name"] = json!(n);
                v
            })
            .collect::<Vec<_>>(),
        "unfinished": set.unfinished,
        "unmatched_ends": set.unmatched_ends,
        "unkeyed": set.unkeyed,
        "truncated": set.truncated,
        "kept_until": set.kept_until,
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
