//! What `reef periods` and `reef activities` report about the intervals
//! they find: the log, statistics (count, min, avg, max, stdev, total) per
//! group, a frequency distribution of durations and the longest intervals —
//! as text tables or JSON. Durations are nanoseconds; tables show
//! microseconds with three decimals, as lttng-analyses does.

use std::collections::BTreeMap;
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
#[derive(Serialize, Debug, Clone)]
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

pub fn summarize(durations: &[i64]) -> Option<Summary> {
    let n = durations.len();
    if n == 0 {
        return None;
    }
    let total: i64 = durations.iter().sum();
    let avg = total as f64 / n as f64;
    let stdev = (n >= 2).then(|| {
        let ss: f64 = durations.iter().map(|&d| (d as f64 - avg).powi(2)).sum();
        (ss / (n - 1) as f64).sqrt()
    });
    Some(Summary {
        count: n as u64,
        min_ns: *durations.iter().min().unwrap_or(&0),
        avg_ns: avg,
        max_ns: *durations.iter().max().unwrap_or(&0),
        stdev_ns: stdev,
        total_ns: total,
    })
}

/// One bucket of a frequency distribution, bounds in µs.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Bucket {
    pub lower_us: f64,
    pub upper_us: f64,
    pub count: u64,
}

/// `resolution` equal buckets from the shortest to the longest duration;
/// the longest falls in the last bucket. Empty when all durations are equal
/// (no width to split), as lttng-analyses.
pub fn frequency(durations: &[i64], resolution: usize) -> Vec<Bucket> {
    let (Some(&min), Some(&max)) = (durations.iter().min(), durations.iter().max()) else {
        return Vec::new();
    };
    let (min, max) = (min as f64 / 1000.0, max as f64 / 1000.0);
    let res = resolution.max(1);
    let step = (max - min) / res as f64;
    if step == 0.0 {
        return Vec::new();
    }
    let mut counts = vec![0u64; res];
    for &d in durations {
        let us = d as f64 / 1000.0;
        let i = ((us - min) / step) as usize;
        counts[i.min(res - 1)] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bucket {
            lower_us: i as f64 * step + min,
            upper_us: (i + 1) as f64 * step + min,
            count,
        })
        .collect()
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
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<&'a [Interval]>,
    stats: Vec<GroupReport<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    freq: Option<Vec<(&'a str, Vec<Bucket>)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top: Option<Vec<&'a Interval>>,
    /// Begins with no end by the end of the trace, per name.
    unfinished: &'a BTreeMap<String, u64>,
}

fn us(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

fn us_f(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// Prints the reports asked for by `o` about `intervals` (in end order).
/// `unfinished` counts the begins left open at the end of the trace.
pub fn report(
    out: &mut dyn Write,
    o: &ReportOpts,
    intervals: &[Interval],
    unfinished: &BTreeMap<String, u64>,
) -> anyhow::Result<()> {
    let show_stats = o.stats || !(o.log || o.freq || o.top.is_some());
    // Per (name, group), then per name over all groups.
    let mut groups: BTreeMap<(&str, &str), Vec<i64>> = BTreeMap::new();
    for iv in intervals {
        groups
            .entry((&iv.name, ""))
            .or_default()
            .push(iv.duration_ns);
        if !iv.group.is_empty() {
            groups
                .entry((&iv.name, &iv.group))
                .or_default()
                .push(iv.duration_ns);
        }
    }
    let stats: Vec<GroupReport> = groups
        .iter()
        .filter_map(|((name, group), d)| {
            Some(GroupReport {
                name,
                group,
                summary: summarize(d)?,
            })
        })
        .collect();
    let freq = o.freq.then(|| {
        groups
            .iter()
            .filter(|((_, g), _)| g.is_empty())
            .map(|((name, _), d)| (*name, frequency(d, o.freq_resolution)))
            .collect::<Vec<_>>()
    });
    let top = o.top.map(|n| {
        let mut v: Vec<&Interval> = intervals.iter().collect();
        v.sort_by(|a, b| {
            b.duration_ns
                .cmp(&a.duration_ns)
                .then(a.begin_ns.cmp(&b.begin_ns))
        });
        v.truncate(n);
        v
    });
    if o.json {
        let r = Report {
            log: o.log.then_some(intervals),
            stats: if show_stats { stats } else { Vec::new() },
            freq,
            top,
            unfinished,
        };
        serde_json::to_writer_pretty(&mut *out, &r)?;
        writeln!(out)?;
        return Ok(());
    }
    let named = intervals.iter().any(|i| !i.name.is_empty());
    let row = |iv: &Interval| {
        let mut r = vec![
            fmt_time(Some(iv.begin_ns)),
            fmt_time(Some(iv.end_ns)),
            us(iv.duration_ns),
        ];
        if named {
            r.push(iv.name.clone());
        }
        let mut extra = iv.group.clone();
        for (k, v) in &iv.captures {
            if !extra.is_empty() {
                extra.push_str(", ");
            }
            extra.push_str(&format!("{k} = {v}"));
        }
        r.push(extra);
        r
    };
    let mut head = vec!["begin ", "end ", "duration (us)"];
    if named {
        head.push("period ");
    }
    head.push("group, captures ");
    let mut first = true;
    let mut section = |out: &mut dyn Write, title: &str| -> std::io::Result<()> {
        if !first {
            writeln!(out)?;
        }
        first = false;
        writeln!(out, "{title}")
    };
    if o.log {
        section(out, "Log")?;
        let rows: Vec<Vec<String>> = intervals.iter().map(row).collect();
        table(out, &head, &rows)?;
    }
    if let Some(top) = &top {
        section(out, "Longest")?;
        let rows: Vec<Vec<String>> = top.iter().map(|iv| row(iv)).collect();
        table(out, &head, &rows)?;
    }
    if show_stats {
        section(out, "Statistics")?;
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
        table(out, &head[usize::from(!named)..], &rows)?;
        for (name, n) in unfinished {
            if *n > 0 {
                let what = if name.is_empty() { "interval" } else { name };
                writeln!(
                    out,
                    "{n} {what}(s) begun but not ended by the end of the trace"
                )?;
            }
        }
    }
    if let Some(freq) = &freq {
        for (name, buckets) in freq {
            section(
                out,
                &format!(
                    "Frequency distribution{}",
                    if name.is_empty() {
                        String::new()
                    } else {
                        format!(" of {name}")
                    }
                ),
            )?;
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
            table(out, &["lower (us)", "upper (us)", "count"], &rows)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn frequency_by_hand() {
        // 1..=5 µs in 4 buckets of 1 µs: [1,2) [2,3) [3,4) [4,5]; 5 goes in
        // the last.
        let f = frequency(&[1000, 2000, 3000, 4000, 5000, 1500], 4);
        let counts: Vec<u64> = f.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![2, 1, 1, 2]);
        assert_eq!((f[0].lower_us, f[3].upper_us), (1.0, 5.0));
        assert!(frequency(&[7, 7], 4).is_empty());
    }
}
