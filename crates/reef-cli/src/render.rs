//! Text rendering shared by the commands: UTC times, durations, tables.

use std::io::Write;

/// A time in ns from the origin (the Epoch for LTTng and libreef) as a
/// UTC date and time with nanoseconds.
pub fn fmt_time(ns: Option<i64>) -> String {
    let Some(ns) = ns else { return "-".into() };
    let secs = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{nsec:09} UTC",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// A duration (or a time from the origin) in ns as seconds with 9
/// decimals.
pub fn fmt_dur(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

pub fn fmt_rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.1}"))
}

/// A table with a header row. The first column and those whose header ends
/// with a space are left-aligned, the others right-aligned.
pub fn table(out: &mut dyn Write, head: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let left: Vec<bool> = head.iter().map(|h| h.ends_with(' ')).collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.trim_end().chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: &[String]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(w[i] - c.chars().count());
            if i == 0 || left[i] {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    let head: Vec<String> = head.iter().map(|h| h.trim_end().to_string()).collect();
    line(out, &head)?;
    for r in rows {
        line(out, r)?;
    }
    Ok(())
}

/// The first `top` rows (0: all).
pub fn limit<T>(v: &[T], top: usize) -> &[T] {
    if top == 0 {
        v
    } else {
        &v[..top.min(v.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        assert_eq!(fmt_time(Some(0)), "1970-01-01 00:00:00.000000000 UTC");
        // date -u -d @1400000000.5
        assert_eq!(
            fmt_time(Some(1_400_000_000_500_000_000)),
            "2014-05-13 16:53:20.500000000 UTC"
        );
        // date -u -d @951782400 (a leap day)
        assert_eq!(
            fmt_time(Some(951_782_400_000_000_000)),
            "2000-02-29 00:00:00.000000000 UTC"
        );
        assert_eq!(fmt_time(Some(-1)), "1969-12-31 23:59:59.999999999 UTC");
        assert_eq!(fmt_dur(1_500_000_001), "1.500000001");
    }
}
