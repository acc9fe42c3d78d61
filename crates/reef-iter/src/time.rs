//! babeltrace2's trimming time formats (`--begin`, `--end`):
//!
//! - `YYYY-MM-DD HH:II[:SS[.NANO]]` — a wall-clock date and time,
//! - `HH:II[:SS[.NANO]]` — a time of day on the date of the first message,
//! - `[-]SEC[.NANO]` — seconds from the clock's origin (the Epoch for LTTng).
//!
//! Wall-clock forms are in the local time zone (`TZ`), or UTC when asked,
//! as babeltrace2's trimmer with `gmt=yes`.

use std::fmt;

/// A parsed time bound, not yet resolved to nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    /// Nanoseconds from the origin.
    Ns(i64),
    /// A date and time of day.
    DateTime {
        year: i32,
        mon: u32,
        day: u32,
        tod: TimeOfDay,
    },
    /// A time of day, on the date of the first message.
    TimeOfDay(TimeOfDay),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeOfDay {
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    pub nsec: u32,
}

/// A malformed time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeError(pub String);

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "invalid time `{}`: expected `YYYY-MM-DD HH:II[:SS[.NANO]]`, `HH:II[:SS[.NANO]]` or `[-]SEC[.NANO]`",
            self.0
        )
    }
}

impl std::error::Error for TimeError {}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// Up to nine digits of a fraction of a second, as nanoseconds.
fn nanos(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u32 = s.parse().ok()?;
    Some(v * 10u32.pow(9 - s.len() as u32))
}

fn time_of_day(s: &str) -> Option<TimeOfDay> {
    let mut parts = s.splitn(3, ':');
    let hour = digits(parts.next()?, 2)?;
    let min = digits(parts.next()?, 2)?;
    let (sec, nsec) = match parts.next() {
        None => (0, 0),
        Some(rest) => match rest.split_once('.') {
            Some((sec, frac)) => (digits(sec, 2)?, nanos(frac)?),
            None => (digits(rest, 2)?, 0),
        },
    };
    (hour < 24 && min < 60 && sec < 61).then_some(TimeOfDay {
        hour,
        min,
        sec,
        nsec,
    })
}

/// The text [`TimeSpec`]'s parser reads back as the same value.
impl fmt::Display for TimeSpec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let tod = |f: &mut fmt::Formatter, t: &TimeOfDay| {
            write!(f, "{:02}:{:02}:{:02}.{:09}", t.hour, t.min, t.sec, t.nsec)
        };
        match self {
            TimeSpec::Ns(ns) => {
                let sign = if *ns < 0 { "-" } else { "" };
                let a = ns.unsigned_abs();
                write!(f, "{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
            }
            TimeSpec::DateTime {
                year,
                mon,
                day,
                tod: t,
            } => {
                write!(f, "{year:04}-{mon:02}-{day:02} ")?;
                tod(f, t)
            }
            TimeSpec::TimeOfDay(t) => tod(f, t),
        }
    }
}

impl std::str::FromStr for TimeSpec {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<TimeSpec, TimeError> {
        let bad = || TimeError(s.to_string());
        let t = s.trim();
        if let Some((date, tod)) = t.split_once(' ') {
            let mut d = date.splitn(3, '-');
            let year = digits(d.next().ok_or_else(bad)?, 4).ok_or_else(bad)? as i32;
            let mon = digits(d.next().ok_or_else(bad)?, 2).ok_or_else(bad)?;
            let day = digits(d.next().ok_or_else(bad)?, 2).ok_or_else(bad)?;
            if !(1..=12).contains(&mon) || !(1..=31).contains(&day) {
                return Err(bad());
            }
            let tod = time_of_day(tod.trim()).ok_or_else(bad)?;
            return Ok(TimeSpec::DateTime {
                year,
                mon,
                day,
                tod,
            });
        }
        if t.contains(':') {
            return time_of_day(t).map(TimeSpec::TimeOfDay).ok_or_else(bad);
        }
        let (neg, num) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t),
        };
        let (sec, frac) = match num.split_once('.') {
            Some((s, f)) => (s, nanos(f).ok_or_else(bad)?),
            None => (num, 0),
        };
        if sec.is_empty() || !sec.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let sec: i64 = sec.parse().map_err(|_| bad())?;
        let ns = sec
            .checked_mul(1_000_000_000)
            .and_then(|v| v.checked_add(frac as i64))
            .ok_or_else(bad)?;
        Ok(TimeSpec::Ns(if neg { -ns } else { ns }))
    }
}

/// Seconds since the Epoch of a broken-down time (local time zone unless
/// `gmt`), from the C library so that `TZ` applies as for babeltrace2.
fn epoch_secs(year: i32, mon: u32, day: u32, tod: &TimeOfDay, gmt: bool) -> Option<i64> {
    // SAFETY: `tm` is plain data; mktime/timegm only read and normalise it.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = year - 1900;
        tm.tm_mon = mon as i32 - 1;
        tm.tm_mday = day as i32;
        tm.tm_hour = tod.hour as i32;
        tm.tm_min = tod.min as i32;
        tm.tm_sec = tod.sec as i32;
        tm.tm_isdst = -1;
        let t = if gmt {
            libc::timegm(&mut tm)
        } else {
            libc::mktime(&mut tm)
        };
        (t != -1 || (tod.hour == 23 && tod.min == 59)).then_some(t as i64)
    }
}

/// The date (year, month, day) of `ns` from the Epoch.
fn date_of(ns: i64, gmt: bool) -> Option<(i32, u32, u32)> {
    let t = ns.div_euclid(1_000_000_000) as libc::time_t;
    // SAFETY: `tm` is plain data, fully written on success.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let r = if gmt {
            libc::gmtime_r(&t, &mut tm)
        } else {
            libc::localtime_r(&t, &mut tm)
        };
        (!r.is_null()).then_some((tm.tm_year + 1900, tm.tm_mon as u32 + 1, tm.tm_mday as u32))
    }
}

impl TimeSpec {
    /// Nanoseconds from the origin; `first_ns` (the first message's time)
    /// gives the date of a bare time of day.
    pub fn resolve(&self, first_ns: Option<i64>, gmt: bool) -> Option<i64> {
        let at = |year, mon, day, tod: &TimeOfDay| {
            let s = epoch_secs(year, mon, day, tod, gmt)?;
            s.checked_mul(1_000_000_000)?.checked_add(tod.nsec as i64)
        };
        match *self {
            TimeSpec::Ns(ns) => Some(ns),
            TimeSpec::DateTime {
                year,
                mon,
                day,
                ref tod,
            } => at(year, mon, day, tod),
            TimeSpec::TimeOfDay(ref tod) => {
                let (y, m, d) = date_of(first_ns?, gmt)?;
                at(y, m, d, tod)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<TimeSpec, TimeError> {
        s.parse()
    }

    #[test]
    fn display_reads_back_as_the_same_value() {
        for s in [
            "0",
            "12.5",
            "-3.000000001",
            "-0.25",
            "1234567890.123456789",
            "2012-01-03 04:05",
            "1999-12-31 23:59:60.999999999",
            "07:08:09.01",
            "00:00",
        ] {
            let t = p(s).unwrap();
            assert_eq!(p(&t.to_string()), Ok(t), "{s} -> {t}");
        }
        assert_eq!(p("-0.25").unwrap().to_string(), "-0.250000000");
        assert_eq!(
            p("2012-01-03 04:05").unwrap().to_string(),
            "2012-01-03 04:05:00.000000000"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(p("12.5"), Ok(TimeSpec::Ns(12_500_000_000)));
        assert_eq!(p("-1.000000001"), Ok(TimeSpec::Ns(-1_000_000_001)));
        assert_eq!(p("7"), Ok(TimeSpec::Ns(7_000_000_000)));
        let tod = TimeOfDay {
            hour: 13,
            min: 5,
            sec: 9,
            nsec: 120_000_000,
        };
        assert_eq!(p("13:05:09.12"), Ok(TimeSpec::TimeOfDay(tod)));
        assert_eq!(
            p("2024-02-29 13:05"),
            Ok(TimeSpec::DateTime {
                year: 2024,
                mon: 2,
                day: 29,
                tod: TimeOfDay {
                    sec: 0,
                    nsec: 0,
                    ..tod
                }
            })
        );
        for bad in [
            "",
            "1:2",
            "13:5",
            "25:00",
            "1.",
            "x",
            "2024-2-29 13:05",
            "1.0123456789",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolve_utc() {
        // 2024-02-29 13:05:09 UTC = 1709211909 s (worked out: 19782 days
        // from 1970-01-01 to 2024-02-29, * 86400 + 13*3600 + 5*60 + 9).
        let dt = p("2024-02-29 13:05:09.5").unwrap();
        assert_eq!(dt.resolve(None, true), Some(1_709_211_909_500_000_000));
        // A time of day takes the first message's date.
        let tod = p("00:00:01").unwrap();
        assert_eq!(
            tod.resolve(Some(1_709_211_909_500_000_000), true),
            Some(1_709_164_801_000_000_000)
        );
        assert_eq!(tod.resolve(None, true), None);
    }
}
