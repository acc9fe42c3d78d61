//! What is reported about the intervals that activities and periods find:
//! statistics per name and group (count, min, average, max, sample
//! standard deviation, total), a frequency distribution of durations and
//! the longest intervals. Durations are nanoseconds.
//!
//! [`Reports`] takes intervals as they are found and keeps running sums,
//! not the intervals: the top N is a bounded heap, and the frequency
//! distribution, which needs the range of durations before it can count,
//! takes a second pass over the trace ([`Reports::passes`]). So memory does
//! not grow with the trace. [`run`] drives an [`IntervalEngine`] (activities,
//! periods) over a source for as many passes as the reports need, giving
//! each interval to a log callback as it is found.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::ControlFlow;

use reef_read::{Msg, ReadOptions, Source};
use serde::Serialize;

/// Which reports to compute.
#[derive(Debug, Clone, Default)]
pub struct ReportSpec {
    /// The caller logs every interval (given to [`run`]'s callback in
    /// the first pass).
    pub log: bool,
    /// Statistics per name and group.
    pub stats: bool,
    /// A frequency distribution of durations in this many buckets, per
    /// name (a second pass over the trace).
    pub freq: Option<usize>,
    /// The N longest intervals.
    pub top: Option<usize>,
}

/// Says something of an event that begins or ends an interval (a front
/// end's row for it, say), kept in [`Interval::tags`].
pub type Tagger = Box<dyn FnMut(&Msg<'_>) -> u64 + Send>;

/// The current event's tag, asked of the tagger once at most.
pub(crate) struct TagOf<'a, 'm> {
    tagger: Option<&'a mut Tagger>,
    m: &'a Msg<'m>,
    tag: Option<u64>,
}

impl<'a, 'm> TagOf<'a, 'm> {
    pub(crate) fn new(tagger: Option<&'a mut Tagger>, m: &'a Msg<'m>) -> Self {
        TagOf {
            tagger,
            m,
            tag: None,
        }
    }

    pub(crate) fn get(&mut self) -> u64 {
        if let Some(t) = self.tag {
            return t;
        }
        let t = self.tagger.as_mut().map_or(0, |f| f(self.m));
        self.tag = Some(t);
        t
    }
}

/// One interval found in the trace.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// The period's name (activities: empty).
    pub name: String,
    /// ns from the clock's origin.
    pub begin_ns: i64,
    pub end_ns: i64,
    pub duration_ns: i64,
    /// The group the interval is counted in (`key = value, ...`), or empty.
    pub group: String,
    /// Captured values, `name = value`.
    pub captures: Vec<(String, String)>,
    /// What the engine's tagger said of the begin and end events (see
    /// [`Tagger`]; 0 without one).
    #[serde(skip)]
    pub tags: [u64; 2],
}

/// Statistics of a set of durations (ns). `stdev` is the sample standard
/// deviation (n − 1), absent for fewer than two values.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    pub stdev_ns: Option<f64>,
    pub total_ns: i64,
}

/// Running sums of durations: exact (128-bit) while the sum of squares
/// fits, Welford's method beyond.
#[derive(Debug, Clone, Default)]
pub struct Acc {
    n: u64,
    min: i64,
    max: i64,
    sum: i128,
    sumsq: Option<u128>,
    mean: f64,
    m2: f64,
}

impl Acc {
    pub fn new() -> Acc {
        Acc {
            sumsq: Some(0),
            ..Acc::default()
        }
    }

    pub fn add(&mut self, d: i64) {
        if self.n == 0 || d < self.min {
            self.min = d;
        }
        if self.n == 0 || d > self.max {
            self.max = d;
        }
        self.n += 1;
        self.sum += d as i128;
        let sq = (d as i128)
            .unsigned_abs()
            .checked_mul((d as i128).unsigned_abs());
        self.sumsq = self.sumsq.zip(sq).and_then(|(a, b)| a.checked_add(b));
        let delta = d as f64 - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (d as f64 - self.mean);
    }

    pub fn summary(&self) -> Option<Summary> {
        if self.n == 0 {
            return None;
        }
        let n = self.n as i128;
        let stdev = (self.n >= 2).then(|| {
            // n·Σd² − (Σd)², exactly, over n(n − 1).
            let exact = self.sumsq.and_then(|sq| {
                let sq = i128::try_from(sq).ok()?;
                n.checked_mul(sq)?
                    .checked_sub(self.sum.checked_mul(self.sum)?)
            });
            match exact {
                Some(num) => (num as f64 / (n * (n - 1)) as f64).sqrt(),
                None => (self.m2 / (self.n - 1) as f64).sqrt(),
            }
        });
        Some(Summary {
            count: self.n,
            min_ns: self.min,
            avg_ns: self.sum as f64 / self.n as f64,
            max_ns: self.max,
            stdev_ns: stdev,
            total_ns: i64::try_from(self.sum).unwrap_or(i64::MAX),
        })
    }
}

/// One bucket of a frequency distribution, bounds in µs.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Bucket {
    pub lower_us: f64,
    pub upper_us: f64,
    pub count: u64,
}

/// `resolution` equal buckets from `min` to `max` (ns) — the longest
/// duration falls in the last bucket — or none when all durations are
/// equal (no width to split), as lttng-analyses.
#[derive(Debug, Clone)]
pub struct Freq {
    min_us: f64,
    step: f64,
    counts: Vec<u64>,
}

impl Freq {
    pub fn new(min: i64, max: i64, resolution: usize) -> Freq {
        let (min_us, max_us) = (min as f64 / 1000.0, max as f64 / 1000.0);
        let res = resolution.max(1);
        let step = (max_us - min_us) / res as f64;
        Freq {
            min_us,
            step,
            counts: if step > 0.0 { vec![0; res] } else { Vec::new() },
        }
    }

    pub fn add(&mut self, d: i64) {
        if self.counts.is_empty() {
            return;
        }
        let i = ((d as f64 / 1000.0 - self.min_us) / self.step) as usize;
        let last = self.counts.len() - 1;
        self.counts[i.min(last)] += 1;
    }

    pub fn buckets(&self) -> Vec<Bucket> {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &count)| Bucket {
                lower_us: i as f64 * self.step + self.min_us,
                upper_us: (i + 1) as f64 * self.step + self.min_us,
                count,
            })
            .collect()
    }
}

/// Statistics of one name and group.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct GroupReport {
    pub name: String,
    /// `key = value, ...`; empty for every interval of the name.
    pub group: String,
    #[serde(flatten)]
    pub summary: Summary,
}

/// Everything reported but the log.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Report {
    /// Per name then group (names and groups in byte order; group "" first).
    pub stats: Vec<GroupReport>,
    /// Per name, its buckets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freq: Option<Vec<(String, Vec<Bucket>)>>,
    /// Longest first, then earliest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top: Option<Vec<Interval>>,
    /// Begins with no end by the end of the trace, per name.
    pub unfinished: BTreeMap<String, u64>,
}

/// Orders intervals for the top N: longer first, then earlier.
#[derive(PartialEq, Eq)]
struct ByLength(Interval);

impl ByLength {
    /// Longer first, then earlier.
    fn key(iv: &Interval) -> (i64, Reverse<i64>) {
        (iv.duration_ns, Reverse(iv.begin_ns))
    }
}

impl Ord for ByLength {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        ByLength::key(&self.0).cmp(&ByLength::key(&o.0))
    }
}

impl PartialOrd for ByLength {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Running sums of the intervals of one or two passes.
pub struct Reports {
    spec: ReportSpec,
    pass: usize,
    /// Per name, then per group; group "" is every interval of the name.
    stats: BTreeMap<String, BTreeMap<String, Acc>>,
    top: BinaryHeap<Reverse<ByLength>>,
    /// Per name, in the second pass.
    freq: BTreeMap<String, Freq>,
}

impl Reports {
    pub fn new(spec: &ReportSpec) -> Reports {
        Reports {
            spec: spec.clone(),
            pass: 0,
            stats: BTreeMap::new(),
            top: BinaryHeap::new(),
            freq: BTreeMap::new(),
        }
    }

    /// How many times the trace must be read: 2 for a frequency
    /// distribution.
    pub fn passes(&self) -> usize {
        if self.spec.freq.is_some() {
            2
        } else {
            1
        }
    }

    /// Starts pass `p` (0-based): call before giving it its intervals.
    pub fn start_pass(&mut self, p: usize) {
        self.pass = p;
        if p > 0 {
            let res = self.spec.freq.unwrap_or(20);
            self.freq = self
                .stats
                .iter()
                .filter_map(|(name, groups)| {
                    let a = groups.get("")?;
                    Some((name.clone(), Freq::new(a.min, a.max, res)))
                })
                .collect();
        }
    }

    /// One interval found (in the order they end). Returns whether it is
    /// new (first pass): the one to log.
    pub fn add(&mut self, iv: &Interval) -> bool {
        if self.pass > 0 {
            if let Some(f) = self.freq.get_mut(&iv.name) {
                f.add(iv.duration_ns);
            }
            return false;
        }
        let d = iv.duration_ns;
        // Keys are allocated only for a new name or group.
        if !self.stats.contains_key(&iv.name) {
            self.stats.insert(iv.name.clone(), BTreeMap::new());
        }
        if let Some(groups) = self.stats.get_mut(&iv.name) {
            let own = (!iv.group.is_empty()).then_some(iv.group.as_str());
            for g in std::iter::once("").chain(own) {
                match groups.get_mut(g) {
                    Some(a) => a.add(d),
                    None => {
                        let mut a = Acc::new();
                        a.add(d);
                        groups.insert(g.to_string(), a);
                    }
                }
            }
        }
        if let Some(n) = self.spec.top.filter(|n| *n > 0) {
            let longer = |min: &Reverse<ByLength>| ByLength::key(iv) > ByLength::key(&min.0 .0);
            if self.top.len() < n {
                self.top.push(Reverse(ByLength(iv.clone())));
            } else if self.top.peek().is_some_and(longer) {
                self.top.pop();
                self.top.push(Reverse(ByLength(iv.clone())));
            }
        }
        true
    }

    /// The reports; `unfinished` counts the begins left open at the end
    /// of the trace, per name.
    pub fn finish(self, unfinished: BTreeMap<String, u64>) -> Report {
        let stats = if self.spec.stats {
            self.stats
                .iter()
                .flat_map(|(name, groups)| {
                    groups.iter().filter_map(move |(group, a)| {
                        Some(GroupReport {
                            name: name.clone(),
                            group: group.clone(),
                            summary: a.summary()?,
                        })
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let freq = self.spec.freq.map(|_| {
            self.freq
                .iter()
                .map(|(n, f)| (n.clone(), f.buckets()))
                .collect()
        });
        let top = self.spec.top.map(|_| {
            let mut v: Vec<ByLength> = self.top.into_iter().map(|Reverse(b)| b).collect();
            v.sort_by(|a, b| b.cmp(a));
            v.into_iter().map(|b| b.0).collect()
        });
        Report {
            stats,
            freq,
            top,
            unfinished,
        }
    }
}

/// Something that finds intervals in a time-ordered sequence of events:
/// activities, periods.
pub trait IntervalEngine {
    /// Reads one event (ns from the origin), pushing the intervals it ends
    /// onto `found`.
    fn event(&mut self, m: &Msg<'_>, ns: i64, found: &mut Vec<Interval>);
    /// Intervals begun and not ended, per name.
    fn unfinished(&self) -> BTreeMap<String, u64>;
}

/// What [`run`] found.
pub struct Outcome<T> {
    pub report: Report,
    /// The engine of the last pass (its own counts).
    pub engine: T,
    /// The reading error that stopped the last pass, if any: the report
    /// covers the events before it.
    pub stopped: Option<reef_read::Error>,
    /// How many times the trace was read.
    pub passes: usize,
}

/// Reads `read` once per pass [`Reports::passes`] needs, each time with a
/// new engine from `make` (engines cache field lookups per trace, and each
/// pass opens the traces anew), and gives each interval of the first pass
/// to `log`. An error of `make` or `log` stops everything; a reading
/// error stops the reading and is returned in the [`Outcome`].
pub fn run<T: IntervalEngine, E: From<reef_read::Error>>(
    read: &ReadOptions,
    spec: &ReportSpec,
    mut make: impl FnMut(&Source) -> Result<T, E>,
    mut log: impl FnMut(&Interval) -> Result<(), E>,
) -> Result<Outcome<T>, E> {
    let mut reports = Reports::new(spec);
    let mut pass = 0;
    loop {
        reports.start_pass(pass);
        let mut src = Source::open(read)?;
        let mut engine = make(&src)?;
        let mut found = Vec::new();
        let stopped = src.for_each_event(|m, ns| {
            engine.event(m, ns, &mut found);
            for iv in found.drain(..) {
                if reports.add(&iv) && spec.log {
                    log(&iv)?;
                }
            }
            Ok::<_, E>(ControlFlow::Continue(()))
        })?;
        pass += 1;
        if stopped.is_some() || pass >= reports.passes() {
            let report = reports.finish(engine.unfinished());
            return Ok(Outcome {
                report,
                engine,
                stopped,
                passes: pass,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summarize(d: &[i64]) -> Option<Summary> {
        let mut a = Acc::new();
        d.iter().for_each(|&x| a.add(x));
        a.summary()
    }

    #[test]
    fn summary_by_hand() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squares 32, sample
        // variance 32/7.
        let s = summarize(&[2, 4, 4, 4, 5, 5, 7, 9]).unwrap();
        assert_eq!((s.count, s.min_ns, s.max_ns, s.total_ns), (8, 2, 9, 40));
        assert_eq!(s.avg_ns, 5.0);
        assert!((s.stdev_ns.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(summarize(&[3]).unwrap().stdev_ns, None);
        assert!(summarize(&[]).is_none());
        // Squares beyond 128 bits: Welford, same value.
        let big = summarize(&[i64::MAX / 2, i64::MAX / 2 + 2]).unwrap();
        assert!((big.stdev_ns.unwrap() - 2f64.sqrt()).abs() < 1e3);
    }

    #[test]
    fn frequency_by_hand() {
        // 1..=5 µs in 4 buckets of 1 µs: [1,2) [2,3) [3,4) [4,5]; 5 goes in
        // the last.
        let mut f = Freq::new(1000, 5000, 4);
        for d in [1000, 2000, 3000, 4000, 5000, 1500] {
            f.add(d);
        }
        let b = f.buckets();
        let counts: Vec<u64> = b.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![2, 1, 1, 2]);
        assert_eq!((b[0].lower_us, b[3].upper_us), (1.0, 5.0));
        assert!(Freq::new(7, 7, 4).buckets().is_empty());
    }
}
