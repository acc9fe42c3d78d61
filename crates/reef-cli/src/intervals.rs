//! What `reef periods` and `reef activities` report about the intervals
//! they find: the log, statistics (count, min, avg, max, stdev, total) per
//! group, a frequency distribution of durations and the longest intervals —
//! as text tables or JSON. Durations are nanoseconds; tables show
//! microseconds with three decimals, as lttng-analyses does.
//!
//! A [`Reporter`] takes intervals as they are found and keeps running sums,
//! not the intervals: the log is written as it goes, the top N in a bounded
//! heap, and the frequency distribution, which needs the range of durations
//! before it can count, takes a second pass over the trace
//! ([`Reporter::passes`]). So memory does not grow with the trace.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Write;

use serde::Serialize;

use crate::cmd_stats::{fmt_time, table};

/// Which reports to print.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportOpts {
    /// Print every interval (begin, end, duration, group, captures); with
    /// no report option, activities prints the log and the statistics.
    #[arg(long)]
    pub log: bool,
    /// Print the statistics per group (the default when no other report is
    /// asked for).
    #[arg(long)]
    pub stats: bool,
    /// Print the frequency distribution of durations.
    #[arg(long)]
    pub freq: bool,
    /// Number of buckets of the frequency distribution.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub freq_resolution: usize,
    /// Print the N longest intervals.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Print the reports as one JSON object.
    #[arg(long)]
    pub json: bool,
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

#[derive(Serialize)]
struct GroupReport<'a> {
    name: &'a str,
    group: &'a str,
    #[serde(flatten)]
    summary: Summary,
}

#[derive(Serialize)]
struct Report<'a> {
    stats: Vec<GroupReport<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    freq: Option<Vec<(&'a str, Vec<Bucket>)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top: Option<Vec<Interval>>,
    /// Begins with no end by the end of the trace, per name.
    unfinished: &'a BTreeMap<String, u64>,
}

/// Orders intervals for the top N: longer first, then earlier.
#[derive(PartialEq, Eq)]
struct ByLength(Interval);

impl Ord for ByLength {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0
            .duration_ns
            .cmp(&o.0.duration_ns)
            .then(o.0.begin_ns.cmp(&self.0.begin_ns))
    }
}

impl PartialOrd for ByLength {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

fn us(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

fn us_f(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// Takes the intervals a command finds and prints the reports `opts` asks
/// for.
pub struct Reporter<'w> {
    opts: ReportOpts,
    out: &'w mut dyn Write,
    /// Periods have names (a column); activities do not.
    named: bool,
    pass: usize,
    /// Per name, then per group; group "" is every interval of the name.
    stats: BTreeMap<String, BTreeMap<String, Acc>>,
    top: BinaryHeap<Reverse<ByLength>>,
    /// Per name, in the second pass.
    freq: BTreeMap<String, Freq>,
    logged: u64,
}

impl<'w> Reporter<'w> {
    pub fn new(opts: &ReportOpts, out: &'w mut dyn Write, named: bool) -> Reporter<'w> {
        let mut opts = opts.clone();
        if !(opts.log || opts.stats || opts.freq || opts.top.is_some()) {
            opts.stats = true;
        }
        Reporter {
            opts,
            out,
            named,
            pass: 0,
            stats: BTreeMap::new(),
            top: BinaryHeap::new(),
            freq: BTreeMap::new(),
            logged: 0,
        }
    }

    /// How many times the trace must be read: 2 for a frequency
    /// distribution.
    pub fn passes(&self) -> usize {
        if self.opts.freq {
            2
        } else {
            1
        }
    }

    /// Starts pass `p` (0-based): call before giving it its intervals.
    pub fn start_pass(&mut self, p: usize) -> std::io::Result<()> {
        self.pass = p;
        if p == 0 {
            if self.opts.log {
                if self.opts.json {
                    write!(self.out, "{{\n  \"log\": [")?;
                } else {
                    self.section("Log")?;
                }
            }
        } else {
            self.freq = self
                .stats
                .iter()
                .filter_map(|(name, groups)| {
                    let a = groups.get("")?;
                    Some((
                        name.clone(),
                        Freq::new(a.min, a.max, self.opts.freq_resolution),
                    ))
                })
                .collect();
        }
        Ok(())
    }

    fn section(&mut self, title: &str) -> std::io::Result<()> {
        if self.logged > 0 || self.pass > 0 {
            writeln!(self.out)?;
        }
        self.logged = 1;
        writeln!(self.out, "{title}")
    }

    fn log_line(&self, iv: &Interval) -> String {
        let mut s = format!(
            "{}  {}  {:>14}",
            fmt_time(Some(iv.begin_ns)),
            fmt_time(Some(iv.end_ns)),
            us(iv.duration_ns)
        );
        if self.named {
            s.push_str("  ");
            s.push_str(&iv.name);
        }
        let mut extra = iv.group.clone();
        for (k, v) in &iv.captures {
            if !extra.is_empty() {
                extra.push_str(", ");
            }
            extra.push_str(&format!("{k} = {v}"));
        }
        if !extra.is_empty() {
            s.push_str("  ");
            s.push_str(&extra);
        }
        s
    }

    /// One interval found (in the order they end).
    pub fn push(&mut self, iv: Interval) -> anyhow::Result<()> {
        if self.pass > 0 {
            if let Some(f) = self.freq.get_mut(&iv.name) {
                f.add(iv.duration_ns);
            }
            return Ok(());
        }
        let d = iv.duration_ns;
        // Keys are allocated only for a new name or group.
        if !self.stats.contains_key(&iv.name) {
            self.stats.insert(iv.name.clone(), BTreeMap::new());
        }
        let groups = self.stats.get_mut(&iv.name).expect("inserted above");
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
        if self.opts.log {
            if self.opts.json {
                let sep = if self.logged == 0 {
                    "\n    "
                } else {
                    ",\n    "
                };
                self.out.write_all(sep.as_bytes())?;
                serde_json::to_writer(&mut *self.out, &iv)?;
            } else {
                let line = self.log_line(&iv);
                writeln!(self.out, "{line}")?;
            }
            self.logged += 1;
        }
        if let Some(n) = self.opts.top {
            if n > 0 {
                let item = Reverse(ByLength(iv));
                if self.top.len() < n {
                    self.top.push(item);
                } else if self.top.peek().is_some_and(|min| item < *min) {
                    self.top.pop();
                    self.top.push(item);
                }
            }
        }
        Ok(())
    }

    /// Prints what is left to print; `unfinished` counts the begins left
    /// open at the end of the trace, per name.
    pub fn finish(mut self, unfinished: &BTreeMap<String, u64>) -> anyhow::Result<()> {
        let o = self.opts.clone();
        let stats_acc = std::mem::take(&mut self.stats);
        let freq_acc = std::mem::take(&mut self.freq);
        let stats: Vec<GroupReport> = if o.stats {
            stats_acc
                .iter()
                .flat_map(|(name, groups)| {
                    groups.iter().filter_map(move |(group, a)| {
                        Some(GroupReport {
                            name,
                            group,
                            summary: a.summary()?,
                        })
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let freq: Option<Vec<(&str, Vec<Bucket>)>> = o.freq.then(|| {
            freq_acc
                .iter()
                .map(|(n, f)| (n.as_str(), f.buckets()))
                .collect()
        });
        let top: Option<Vec<Interval>> = o.top.map(|_| {
            let mut v: Vec<ByLength> = std::mem::take(&mut self.top)
                .into_iter()
                .map(|Reverse(b)| b)
                .collect();
            v.sort_by(|a, b| b.cmp(a));
            v.into_iter().map(|b| b.0).collect()
        });
        if o.json {
            let r = serde_json::to_string_pretty(&Report {
                stats,
                freq,
                top,
                unfinished,
            })?;
            if o.log {
                // The log was streamed: close it and append the rest.
                write!(self.out, "\n  ],")?;
                self.out.write_all(r.trim_start_matches('{').as_bytes())?;
            } else {
                self.out.write_all(r.as_bytes())?;
            }
            writeln!(self.out)?;
            return Ok(());
        }
        let named = self.named;
        if let Some(top) = &top {
            self.section("Longest")?;
            for iv in top {
                let line = self.log_line(iv);
                writeln!(self.out, "{line}")?;
            }
        }
        if o.stats {
            self.section("Statistics")?;
            let rows: Vec<Vec<String>> = stats
                .iter()
                .map(|g| {
                    let s = &g.summary;
                    let mut r = vec![
                        g.name.to_string(),
                        if g.group.is_empty() {
                            "(all)".to_string()
                        } else {
                            g.group.to_string()
                        },
                        s.count.to_string(),
                        us(s.min_ns),
                        us_f(s.avg_ns),
                        us(s.max_ns),
                        s.stdev_ns.map_or("-".into(), us_f),
                        us(s.total_ns),
                    ];
                    if !named {
                        r.remove(0);
                    }
                    r
                })
                .collect();
            let head = [
                "period ",
                "group ",
                "count",
                "min (us)",
                "avg (us)",
                "max (us)",
                "stdev (us)",
                "total (us)",
            ];
            table(&mut *self.out, &head[usize::from(!named)..], &rows)?;
            for (name, n) in unfinished {
                if *n > 0 {
                    let what = if name.is_empty() { "interval" } else { name };
                    writeln!(
                        self.out,
                        "{n} {what}(s) begun but not ended by the end of the trace"
                    )?;
                }
            }
        }
        if let Some(freq) = &freq {
            for (name, buckets) in freq {
                let title = if name.is_empty() {
                    "Frequency distribution".to_string()
                } else {
                    format!("Frequency distribution of {name}")
                };
                self.section(&title)?;
                let rows: Vec<Vec<String>> = buckets
                    .iter()
                    .map(|b| {
                        vec![
                            format!("{:.3}", b.lower_us),
                            format!("{:.3}", b.upper_us),
                            b.count.to_string(),
                        ]
                    })
                    .collect();
                table(
                    &mut *self.out,
                    &["lower (us)", "upper (us)", "count"],
                    &rows,
                )?;
            }
        }
        Ok(())
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
