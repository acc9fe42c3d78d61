//! How `reef periods` and `reef activities` print the intervals they find
//! and their reports (`reef_engines::intervals`): text tables, durations
//! in microseconds with three decimals as lttng-analyses, or JSON
//! (durations in ns). The log is written as intervals are found.

use std::io::Write;

use reef_engines::intervals::{Interval, Report, ReportSpec};

use crate::render::{fmt_time, table};

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

impl ReportOpts {
    /// What to compute; with no report asked for, `default`'s.
    pub fn spec(&self, default: ReportSpec) -> ReportSpec {
        if !(self.log || self.stats || self.freq || self.top.is_some()) {
            return default;
        }
        ReportSpec {
            log: self.log,
            stats: self.stats,
            freq: self.freq.then_some(self.freq_resolution),
            top: self.top,
        }
    }
}

fn us(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

fn us_f(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// Writes the reports of one command to `out`.
pub struct Printer<'w> {
    spec: ReportSpec,
    json: bool,
    out: &'w mut dyn Write,
    /// Periods have names (a column); activities do not.
    named: bool,
    /// Something was written: sections are separated by a blank line.
    written: bool,
    logged: u64,
}

impl<'w> Printer<'w> {
    /// Starts the output (the log's heading).
    pub fn new(
        spec: &ReportSpec,
        json: bool,
        out: &'w mut dyn Write,
        named: bool,
    ) -> std::io::Result<Printer<'w>> {
        let mut p = Printer {
            spec: spec.clone(),
            json,
            out,
            named,
            written: false,
            logged: 0,
        };
        if spec.log {
            if json {
                write!(p.out, "{{\n  \"log\": [")?;
            } else {
                p.section("Log")?;
            }
        }
        Ok(p)
    }

    fn section(&mut self, title: &str) -> std::io::Result<()> {
        if self.written {
            writeln!(self.out)?;
        }
        self.written = true;
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

    /// Logs one interval (in the order they end).
    pub fn log(&mut self, iv: &Interval) -> anyhow::Result<()> {
        if self.json {
            let sep = if self.logged == 0 {
                "\n    "
            } else {
                ",\n    "
            };
            self.out.write_all(sep.as_bytes())?;
            serde_json::to_writer(&mut *self.out, iv)?;
        } else {
            let line = self.log_line(iv);
            writeln!(self.out, "{line}")?;
        }
        self.logged += 1;
        Ok(())
    }

    /// Prints the rest. `passes`: how many times the trace was read (a
    /// second pass starts the sections with a blank line, as it always has).
    pub fn finish(mut self, r: &Report, passes: usize) -> anyhow::Result<()> {
        if passes > 1 {
            self.written = true;
        }
        if self.json {
            let text = serde_json::to_string_pretty(r)?;
            if self.spec.log {
                // The log was streamed: close it and append the rest.
                write!(self.out, "\n  ],")?;
                self.out
                    .write_all(text.trim_start_matches('{').as_bytes())?;
            } else {
                self.out.write_all(text.as_bytes())?;
            }
            writeln!(self.out)?;
            return Ok(());
        }
        let named = self.named;
        if let Some(top) = &r.top {
            self.section("Longest")?;
            for iv in top {
                let line = self.log_line(iv);
                writeln!(self.out, "{line}")?;
            }
        }
        if self.spec.stats {
            self.section("Statistics")?;
            let rows: Vec<Vec<String>> = r
                .stats
                .iter()
                .map(|g| {
                    let s = &g.summary;
                    let mut row = vec![
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
                        row.remove(0);
                    }
                    row
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
            for (name, n) in &r.unfinished {
                if *n > 0 {
                    let what = if name.is_empty() { "interval" } else { name };
                    writeln!(
                        self.out,
                        "{n} {what}(s) begun but not ended by the end of the trace"
                    )?;
                }
            }
        }
        for (name, buckets) in r.freq.iter().flatten() {
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
        Ok(())
    }
}
