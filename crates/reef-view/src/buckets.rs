//! Bucket summaries of one row (see `docs/view-api.md`, *Buckets*): built
//! incrementally from marks and value changes in time order at one
//! resolution, kept sparse (only buckets where something happens),
//! coarsened by merging pairs when the index outgrows its budget, and
//! merged again into any coarser resolution when a window is asked for.
//! Every operation is exact: a coarse bucket equals what the fine
//! events would give.

use crate::model::{OnRule, UNKNOWN};

/// A stored bucket `[j·2^k, (j+1)·2^k)`. Its on-time is `on_closed` (the
/// on-time of `[start, start + last)`) plus the tail from `last` to the
/// end, during which the value is `v_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub j: i64,
    pub count: u32,
    pub first: i32,
    pub v: i32,
    pub v_end: i32,
    pub changes: u32,
    /// Offset in the bucket of the last change (0 without a change).
    pub last: u64,
    pub on_closed: u64,
}

impl Bucket {
    fn plain(j: i64, v: i32) -> Bucket {
        Bucket {
            j,
            count: 0,
            first: -1,
            v,
            v_end: v,
            changes: 0,
            last: 0,
            on_closed: 0,
        }
    }

    /// The bucket's on-time, at resolution `res`.
    pub fn on(&self, rule: OnRule, res: u64) -> u64 {
        self.on_closed
            + if rule.on(self.v_end) {
                res - self.last
            } else {
                0
            }
    }
}

/// What a window answer holds for one bucket: `[j, count, first, v,
/// changes, on]`.
pub type Summary = [i64; 6];

/// One row's buckets at a resolution `2^k`, with the value changes not
/// yet committed (several events at one time count as one change, or
/// none if they end where they began).
#[derive(Debug, Clone)]
pub struct Track {
    pub buckets: Vec<Bucket>,
    pub rule: OnRule,
    /// value(t) for every `t` before the pending time.
    committed: i32,
    /// The value after every event applied so far.
    cur: i32,
    /// Time of the changes not committed yet (`i64::MIN`: none).
    pend: i64,
}

impl Track {
    pub fn new(rule: OnRule, value: i32) -> Track {
        Track {
            buckets: Vec::new(),
            rule,
            committed: value,
            cur: value,
            pend: i64::MIN,
        }
    }

    /// The value after every event applied so far.
    pub fn current(&self) -> i32 {
        self.cur
    }

    fn bucket_at(&mut self, t: i64, k: u32) -> &mut Bucket {
        let j = t >> k;
        if self.buckets.last().is_none_or(|b| b.j != j) {
            self.buckets.push(Bucket::plain(j, self.committed));
        }
        self.buckets.last_mut().expect("just pushed")
    }

    /// An event of this row at `t`, of class `class`.
    pub fn mark(&mut self, t: i64, class: u32, k: u32) {
        if self.pend != i64::MIN && t > self.pend {
            self.commit(k);
        }
        let b = self.bucket_at(t, k);
        if b.count == 0 {
            b.first = class as i32;
        }
        b.count = b.count.saturating_add(1);
    }

    /// `n` events of this row from `t0` to `t1`, all in one bucket at
    /// `2^k`, the first of class `class`: as many [`Track::mark`]s.
    pub fn mark_n(&mut self, t0: i64, t1: i64, class: u32, n: u32, k: u32) {
        // A change pending before `t1` is in this bucket or an earlier
        // one: committed first, as the marks after it would.
        if self.pend != i64::MIN && t1 > self.pend {
            self.commit(k);
        }
        let b = self.bucket_at(t0, k);
        if b.count == 0 {
            b.first = class as i32;
        }
        b.count = b.count.saturating_add(n);
    }

    /// The row's value becomes `v` at `t`.
    pub fn set(&mut self, t: i64, v: i32, k: u32) {
        if t != self.pend {
            self.commit(k);
            self.pend = t;
        }
        self.cur = v;
    }

    /// Records the pending change, if the value at its time differs from
    /// the value just before.
    pub fn commit(&mut self, k: u32) {
        let t = self.pend;
        self.pend = i64::MIN;
        if t == i64::MIN || self.cur == self.committed {
            return;
        }
        let (before, after, rule) = (self.committed, self.cur, self.rule);
        let b = self.bucket_at(t, k);
        let off = (t - (b.j << k)) as u64;
        if rule.on(before) {
            b.on_closed += off - b.last;
        }
        b.last = off;
        b.v_end = after;
        b.changes = b.changes.saturating_add(1);
        if off == 0 {
            b.v = after;
        }
        self.committed = after;
    }

    /// Halves the resolution: from `2^k` to `2^(k+1)`.
    pub fn coarsen(&mut self, k: u32) {
        let res = 1u64 << k;
        let rule = self.rule;
        // In place: the merged bucket `w` is written where `w ≤ i`.
        let old = &mut self.buckets;
        let mut w = 0;
        let mut prev_end = UNKNOWN;
        let mut i = 0;
        while i < old.len() {
            let a = old[i];
            let pj = a.j >> 1;
            let merged = if a.j & 1 == 0 {
                match old.get(i + 1) {
                    Some(b) if b.j == a.j + 1 => {
                        i += 1;
                        join(a, *b, res, rule)
                    }
                    _ => join(a, Bucket::plain(a.j + 1, a.v_end), res, rule),
                }
            } else {
                join(Bucket::plain(a.j - 1, prev_end), a, res, rule)
            };
            prev_end = merged.v_end;
            old[w] = Bucket { j: pj, ..merged };
            w += 1;
            i += 1;
        }
        old.truncate(w);
        old.shrink_to_fit();
    }
}

/// `a` followed by `b`, both of resolution `res`: one bucket of `2·res`
/// (its `j` is left to the caller).
fn join(a: Bucket, b: Bucket, res: u64, rule: OnRule) -> Bucket {
    let (on_closed, last) = if b.changes > 0 {
        (a.on(rule, res) + b.on_closed, res + b.last)
    } else {
        (a.on_closed, a.last)
    };
    Bucket {
        j: a.j,
        count: a.count.saturating_add(b.count),
        first: if a.count > 0 { a.first } else { b.first },
        v: a.v,
        v_end: b.v_end,
        changes: a.changes.saturating_add(b.changes),
        last,
        on_closed,
    }
}

/// The summaries at resolution `2^k` (`k ≥ ks`) of the buckets stored at
/// `2^ks` in `stored`: those intersecting `[from, to)` that are not plain,
/// and always the first one; each with the value at its end. `initial`
/// is the value before the first stored bucket.
pub fn extract(
    stored: &[Bucket],
    rule: OnRule,
    ks: u32,
    k: u32,
    from: i64,
    to: i64,
    initial: i32,
) -> Vec<(Summary, i32)> {
    debug_assert!(k >= ks);
    let d = k - ks;
    let res = 1u64 << k;
    let first_j = from >> k;
    let last_j = (to - 1).max(from) >> k;
    // Stored children of the first parent onwards.
    let start = stored.partition_point(|b| b.j < (first_j << d));
    let mut value = if start > 0 {
        stored[start - 1].v_end
    } else {
        initial
    };
    let mut out = Vec::new();
    let mut i = start;
    let mut pj = first_j;
    loop {
        // Parent `pj`, starting with `value`.
        let mut p = Bucket::plain(pj, value);
        let base = pj << d;
        while i < stored.len() && (stored[i].j >> d) == pj {
            let c = &stored[i];
            let off = ((c.j - base) as u64) << ks;
            if off == 0 {
                p.v = c.v;
            }
            if c.changes > 0 {
                if rule.on(p.v_end) {
                    p.on_closed += off - p.last;
                }
                p.on_closed += c.on_closed;
                p.last = off + c.last;
                p.v_end = c.v_end;
            }
            if p.count == 0 && c.count > 0 {
                p.first = c.first;
            }
            p.count = p.count.saturating_add(c.count);
            p.changes = p.changes.saturating_add(c.changes);
            i += 1;
        }
        if pj == first_j || p.count > 0 || p.changes > 0 {
            out.push((
                [
                    pj,
                    p.count as i64,
                    p.first as i64,
                    p.v as i64,
                    p.changes as i64,
                    p.on(rule, res) as i64,
                ],
                p.v_end,
            ));
        }
        value = p.v_end;
        // Next parent with a stored child, if within the window.
        match stored.get(i) {
            Some(c) if (c.j >> d) <= last_j => pj = c.j >> d,
            _ => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: value per ns, marks per ns.
    fn brute(
        changes: &[(i64, i32)],
        marks: &[(i64, u32)],
        rule: OnRule,
        k: u32,
        from: i64,
        to: i64,
    ) -> Vec<Summary> {
        let value = |t: i64| {
            changes
                .iter()
                .rev()
                .find(|c| c.0 <= t)
                .map_or(UNKNOWN, |c| c.1)
        };
        let res = 1i64 << k;
        let mut out = Vec::new();
        for j in (from >> k)..=((to - 1) >> k) {
            let (a, b) = (j * res, (j + 1) * res);
            let ms: Vec<_> = marks.iter().filter(|m| m.0 >= a && m.0 < b).collect();
            let ch = (a..b).filter(|&t| value(t) != value(t - 1)).count();
            let on = (a..b).filter(|&t| rule.on(value(t))).count();
            if j == from >> k || !ms.is_empty() || ch > 0 {
                out.push([
                    j,
                    ms.len() as i64,
                    ms.first().map_or(-1, |m| m.1 as i64),
                    value(a) as i64,
                    ch as i64,
                    on as i64,
                ]);
            }
        }
        out
    }

    #[test]
    fn tracks_equal_brute_force_at_every_resolution() {
        let mut seed = 12345u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..200 {
            let rule = if round % 2 == 0 {
                OnRule::Thread
            } else {
                OnRule::Cpu
            };
            // Events in time order: (t, Some(value) | None for a mark).
            let mut t = rnd(5) as i64;
            let mut evs = Vec::new();
            for _ in 0..rnd(40) {
                t += rnd(7) as i64;
                if rnd(2) == 0 {
                    evs.push((t, Some(rnd(4) as i32)));
                } else {
                    evs.push((t, None));
                }
            }
            // The value function applies every event at one time.
            let mut changes: Vec<(i64, i32)> = Vec::new();
            let mut marks = Vec::new();
            for (i, &(t, e)) in evs.iter().enumerate() {
                match e {
                    Some(v) => changes.push((t, v)),
                    None => marks.push((t, i as u32)),
                }
            }
            let k0 = rnd(3) as u32;
            let mut tr = Track::new(rule, UNKNOWN);
            for (i, &(t, e)) in evs.iter().enumerate() {
                match e {
                    Some(v) => tr.set(t, v, k0),
                    None => tr.mark(t, i as u32, k0),
                }
            }
            tr.commit(k0);
            // The same with runs of marks in one bucket given at once.
            let mut tn = Track::new(rule, UNKNOWN);
            let mut run: Option<(i64, u32, u32, i64)> = None;
            for (i, &(t, e)) in evs.iter().enumerate() {
                if let Some((t0, c, n, t1)) = run {
                    if e.is_some() || t >> k0 != t0 >> k0 {
                        tn.mark_n(t0, t1, c, n, k0);
                        run = None;
                    }
                }
                match (e, &mut run) {
                    (Some(v), _) => tn.set(t, v, k0),
                    (None, Some(x)) => (x.2, x.3) = (x.2 + 1, t),
                    (None, None) => run = Some((t, i as u32, 1, t)),
                }
            }
            if let Some((t0, c, n, t1)) = run {
                tn.mark_n(t0, t1, c, n, k0);
            }
            tn.commit(k0);
            assert_eq!(tn.buckets, tr.buckets, "mark_n, round {round}");
            let end = t + 10;
            for ks in k0..k0 + 3 {
                for k in ks..ks + 4 {
                    for _ in 0..5 {
                        let from = rnd(end as u64) as i64;
                        let to = from + 1 + rnd(end as u64) as i64;
                        let got: Vec<Summary> =
                            extract(&tr.buckets, rule, ks, k, from, to, UNKNOWN)
                                .into_iter()
                                .map(|s| s.0)
                                .collect();
                        let want = brute(&changes, &marks, rule, k, from, to);
                        assert_eq!(
                            got, want,
                            "round {round} ks {ks} k {k} [{from},{to}) {evs:?}"
                        );
                    }
                }
                tr.coarsen(ks);
            }
        }
    }
}
