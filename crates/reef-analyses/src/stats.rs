//! Small statistics shared by the analyses.

/// Count, min, max, total and standard deviation of integer durations, in
/// constant memory. The sums are exact (128-bit), so the standard deviation
/// is the exact sample standard deviation rounded once or twice.
#[derive(Debug, Clone, Copy, Default)]
pub struct Durations {
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub total: i128,
    sum_sq: i128,
    /// The exact sums overflowed (durations of ~10^19 ns): fall back to a
    /// floating-point running variance.
    overflow: bool,
    mean_f: f64,
    m2_f: f64,
}

impl Durations {
    pub fn add(&mut self, d: i64) {
        if self.count == 0 || d < self.min {
            self.min = d;
        }
        if self.count == 0 || d > self.max {
            self.max = d;
        }
        self.count += 1;
        self.total += d as i128;
        match (d as i128)
            .checked_mul(d as i128)
            .and_then(|sq| self.sum_sq.checked_add(sq))
        {
            Some(s) => self.sum_sq = s,
            None => self.overflow = true,
        }
        // Welford, kept alongside for the overflow case.
        let x = d as f64;
        let delta = x - self.mean_f;
        self.mean_f += delta / self.count as f64;
        self.m2_f += delta * (x - self.mean_f);
    }

    /// Count, min, average, max and sample standard deviation as LAMI
    /// cells (the deviation `unknown` under 2 values).
    pub fn cells(&self) -> [crate::lami::Cell; 5] {
        use crate::lami;
        [
            lami::number(self.count as i64),
            lami::duration(self.min),
            lami::duration_f(self.mean()),
            lami::duration(self.max),
            lami::duration_opt(self.stdev()),
        ]
    }

    /// The mean, as `total / count` in floating point.
    pub fn mean(&self) -> f64 {
        self.total as f64 / self.count as f64
    }

    /// The sample standard deviation (n − 1), `None` under 2 values.
    pub fn stdev(&self) -> Option<f64> {
        if self.count < 2 {
            return None;
        }
        let n = self.count as i128;
        let exact = n
            .checked_mul(self.sum_sq)
            .and_then(|a| a.checked_sub(self.total.checked_mul(self.total)?))
            .filter(|_| !self.overflow);
        Some(match exact {
            // var = (n·Σx² − (Σx)²) / (n(n − 1))
            Some(num) => (num as f64 / (n * (n - 1)) as f64).sqrt(),
            None => (self.m2_f / (self.count - 1) as f64).sqrt(),
        })
    }
}

/// Formats a chronological list of priorities as lttng-analyses does: the
/// distinct values in increasing order, with ` (N times)` after those seen
/// more than once: `[20, 120 (2 times)]`.
pub fn prio_list(prios: &[i64]) -> String {
    let mut sorted = prios.to_vec();
    sorted.sort_unstable();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let p = sorted[i];
        let n = sorted[i..].iter().take_while(|&&q| q == p).count();
        parts.push(if n > 1 {
            format!("{p} ({n} times)")
        } else {
            p.to_string()
        });
        i += n;
    }
    format!("[{}]", parts.join(", "))
}

/// The symbolic name of a Linux errno value, as Python's `errno.errorcode`
/// gives it (Linux numbering, shared by x86 and ARM).
pub fn errno_name(e: i64) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "",
        "EPERM",
        "ENOENT",
        "ESRCH",
        "EINTR",
        "EIO",
        "ENXIO",
        "E2BIG",
        "ENOEXEC",
        "EBADF",
        "ECHILD",
        "EAGAIN",
        "ENOMEM",
        "EACCES",
        "EFAULT",
        "ENOTBLK",
        "EBUSY",
        "EEXIST",
        "EXDEV",
        "ENODEV",
        "ENOTDIR",
        "EISDIR",
        "EINVAL",
        "ENFILE",
        "EMFILE",
        "ENOTTY",
        "ETXTBSY",
        "EFBIG",
        "ENOSPC",
        "ESPIPE",
        "EROFS",
        "EMLINK",
        "EPIPE",
        "EDOM",
        "ERANGE",
        "EDEADLOCK",
        "ENAMETOOLONG",
        "ENOLCK",
        "ENOSYS",
        "ENOTEMPTY",
        "ELOOP",
        "",
        "ENOMSG",
        "EIDRM",
        "ECHRNG",
        "EL2NSYNC",
        "EL3HLT",
        "EL3RST",
        "ELNRNG",
        "EUNATCH",
        "ENOCSI",
        "EL2HLT",
        "EBADE",
        "EBADR",
        "EXFULL",
        "ENOANO",
        "EBADRQC",
        "EBADSLT",
        "",
        "EBFONT",
        "ENOSTR",
        "ENODATA",
        "ETIME",
        "ENOSR",
        "ENONET",
        "ENOPKG",
        "EREMOTE",
        "ENOLINK",
        "EADV",
        "ESRMNT",
        "ECOMM",
        "EPROTO",
        "EMULTIHOP",
        "EDOTDOT",
        "EBADMSG",
        "EOVERFLOW",
        "ENOTUNIQ",
        "EBADFD",
        "EREMCHG",
        "ELIBACC",
        "ELIBBAD",
        "ELIBSCN",
        "ELIBMAX",
        "ELIBEXEC",
        "EILSEQ",
        "ERESTART",
        "ESTRPIPE",
        "EUSERS",
        "ENOTSOCK",
        "EDESTADDRREQ",
        "EMSGSIZE",
        "EPROTOTYPE",
        "ENOPROTOOPT",
        "EPROTONOSUPPORT",
        "ESOCKTNOSUPPORT",
        "ENOTSUP",
        "EPFNOSUPPORT",
        "EAFNOSUPPORT",
        "EADDRINUSE",
        "EADDRNOTAVAIL",
        "ENETDOWN",
        "ENETUNREACH",
        "ENETRESET",
        "ECONNABORTED",
        "ECONNRESET",
        "ENOBUFS",
        "EISCONN",
        "ENOTCONN",
        "ESHUTDOWN",
        "ETOOMANYREFS",
        "ETIMEDOUT",
        "ECONNREFUSED",
        "EHOSTDOWN",
        "EHOSTUNREACH",
        "EALREADY",
        "EINPROGRESS",
        "ESTALE",
        "EUCLEAN",
        "ENOTNAM",
        "ENAVAIL",
        "EISNAM",
        "EREMOTEIO",
        "EDQUOT",
        "ENOMEDIUM",
        "EMEDIUMTYPE",
        "ECANCELED",
        "ENOKEY",
        "EKEYEXPIRED",
        "EKEYREVOKED",
        "EKEYREJECTED",
        "EOWNERDEAD",
        "ENOTRECOVERABLE",
        "ERFKILL",
    ];
    let n = NAMES.get(usize::try_from(e).ok()?)?;
    (!n.is_empty()).then_some(*n)
}

/// Python's `repr` of a string (the quoting lttng-analyses' return-value
/// counts show): single quotes unless the text has one and no double quote.
pub fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// A system call of a log: begin, end, name, thread id and name.
pub type LoggedCall = (i64, i64, String, i64, String);

/// A log of calls as table rows: time range, system call, thread.
pub fn call_rows(t: &mut crate::lami::Table, log: &[LoggedCall]) {
    use crate::lami;
    for (b, e, name, tid, comm) in log {
        t.rows.push(vec![
            lami::time_range_cell(*b, *e),
            lami::syscall(name),
            lami::process(Some(comm), None, Some(*tid)),
        ]);
    }
}

/// How distributions are drawn beyond their number of buckets:
/// lttng-analyses' `--min`/`--max` (ns), `--freq-uniform` and
/// `--freq-series`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FreqOpts {
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// One range for all distributions of a group.
    pub uniform: bool,
    /// The distributions of a group side by side in one table (implies
    /// `uniform`).
    pub series: bool,
}

impl FreqOpts {
    /// The range of every distribution of a group whose durations are
    /// `all`: `--min`/`--max` or each distribution's own, or with
    /// `--freq-uniform` the group's (then [0, 0], no rows, when there is
    /// nothing). lttng-analyses 0.6.1 reads `--min`/`--max` there as µs
    /// although it converted them to ns already (a range 1000 times too
    /// wide, whose durations then land in buckets counted from the end):
    /// reef takes them as given.
    /// A group's distributions as shown: as they are, or with `series`
    /// side by side in one table (see [`crate::lami::Table::series`]).
    pub fn arrange(
        &self,
        tables: Vec<crate::lami::Table>,
        class: &'static crate::lami::TableClass,
        title: &'static str,
        unit: &'static str,
    ) -> Vec<crate::lami::Table> {
        if !self.series {
            return tables;
        }
        crate::lami::Table::series(class, title, unit, &tables)
            .into_iter()
            .collect()
    }

    pub fn range(&self, all: &[i64]) -> (Option<f64>, Option<f64>) {
        if !(self.uniform || self.series) {
            return (self.min, self.max);
        }
        let ext = |m: Option<f64>, f: fn(&[i64]) -> Option<&i64>| match m {
            Some(m) => m,
            None => f(all).map_or(0.0, |&d| d as f64),
        };
        (
            Some(ext(self.min, |a| a.iter().min())),
            Some(ext(self.max, |a| a.iter().max())),
        )
    }
}

/// A frequency distribution of `durations` (ns) as lttng-analyses makes
/// its `freq` tables: `resolution` buckets of equal width from `min` to
/// `max` (ns; by default the durations' own), computed in microseconds
/// with its floating-point steps; a duration equal to `max` goes in the
/// last bucket. Rows of (lower bound, upper bound, count), in ns; none
/// when `min` equals `max`.
pub fn freq_rows(
    durations: &[i64],
    min: Option<f64>,
    max: Option<f64>,
    resolution: usize,
) -> Vec<Vec<crate::lami::Cell>> {
    use crate::lami;
    let min = min.unwrap_or_else(|| durations.iter().min().map_or(0.0, |&m| m as f64));
    let max = max.unwrap_or_else(|| durations.iter().max().map_or(0.0, |&m| m as f64));
    let (lo, hi) = (min / 1000.0, max / 1000.0);
    let step = (hi - lo) / resolution as f64;
    if step == 0.0 || resolution == 0 {
        return Vec::new();
    }
    let mut counts = vec![0i64; resolution];
    for &d in durations {
        let us = d as f64 / 1000.0;
        let i = ((us - lo) / step) as usize;
        if i >= resolution {
            if us == hi {
                counts[resolution - 1] += 1;
            }
            continue;
        }
        counts[i] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            vec![
                lami::duration_f((i as f64 * step + lo) * 1000.0),
                lami::duration_f(((i + 1) as f64 * step + lo) * 1000.0),
                lami::number(n),
            ]
        })
        .collect()
}

/// The values with the `n` smallest keys among those offered, kept as
/// they come: memory bounded by `n`, not by what is offered (a top's
/// longest latencies). The keys must all differ (a total order, so that
/// which are kept does not depend on ties).
#[derive(Debug)]
pub struct Smallest<K: Ord, V> {
    /// The kept, the largest key on top.
    heap: std::collections::BinaryHeap<Keyed<K, V>>,
}

/// A value ordered by its key alone.
#[derive(Debug)]
struct Keyed<K, V> {
    key: K,
    value: V,
}

impl<K: Ord, V> PartialEq for Keyed<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<K: Ord, V> Eq for Keyed<K, V> {}
impl<K: Ord, V> PartialOrd for Keyed<K, V> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, V> Ord for Keyed<K, V> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<K: Ord, V> Default for Smallest<K, V> {
    fn default() -> Self {
        Smallest {
            heap: std::collections::BinaryHeap::new(),
        }
    }
}

impl<K: Ord, V> Smallest<K, V> {
    /// Offers the value `make` makes (made only if kept) with `key`,
    /// keeping at most `n`.
    pub fn offer(&mut self, n: usize, key: K, make: impl FnOnce() -> V) {
        if self.heap.len() < n {
            self.heap.push(Keyed { key, value: make() });
        } else if let Some(mut last) = self.heap.peek_mut() {
            if key < last.key {
                *last = Keyed { key, value: make() };
            }
        }
    }

    pub fn clear(&mut self) {
        self.heap.clear();
    }

    /// The kept values, by key.
    pub fn sorted(&self) -> Vec<&V> {
        let mut kept: Vec<&Keyed<K, V>> = self.heap.iter().collect();
        kept.sort_unstable();
        kept.into_iter().map(|k| &k.value).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_keeps_the_n_smallest_keys() {
        // (xorshift keys, all different with their place)
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut all = Vec::new();
        let mut kept: Smallest<(u64, usize), usize> = Smallest::default();
        let mut made = 0;
        for i in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 50, i);
            all.push(key);
            kept.offer(10, key, || {
                made += 1;
                i
            });
        }
        all.sort();
        let want: Vec<usize> = all[..10].iter().map(|k| k.1).collect();
        assert_eq!(kept.sorted().into_iter().copied().collect::<Vec<_>>(), want);
        // (a value is made only when kept, if only for a while)
        assert!((10..1000).contains(&made), "{made}");
        let mut none: Smallest<u64, ()> = Smallest::default();
        none.offer(0, 1, || ());
        assert!(none.sorted().is_empty());
    }

    #[test]
    fn stdev_by_hand() {
        let mut d = Durations::default();
        for x in [2, 4, 4, 4, 5, 5, 7, 9] {
            d.add(x);
        }
        // Σ(x − 5)² = 32, n − 1 = 7.
        assert_eq!(d.count, 8);
        assert_eq!((d.min, d.max, d.total), (2, 9, 40));
        assert!((d.stdev().unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        let mut one = Durations::default();
        one.add(3);
        assert_eq!(one.stdev(), None);
    }

    #[test]
    fn prio_lists() {
        assert_eq!(prio_list(&[]), "[]");
        assert_eq!(prio_list(&[20]), "[20]");
        assert_eq!(prio_list(&[120, 20, 120]), "[20, 120 (2 times)]");
    }

    #[test]
    fn errno_and_repr() {
        assert_eq!(errno_name(11), Some("EAGAIN"));
        assert_eq!(errno_name(41), None);
        assert_eq!(errno_name(132), Some("ERFKILL"));
        assert_eq!(errno_name(-1), None);
        assert_eq!(py_repr("success"), "'success'");
        assert_eq!(py_repr("-512"), "'-512'");
    }
}
