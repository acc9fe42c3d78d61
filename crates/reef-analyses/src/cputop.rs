//! CPU usage per thread, per CPU and in total, as `lttng-cputop`.
//!
//! - A thread's CPU time runs from its being switched in to its being
//!   switched out. A thread first seen being switched out is taken to have
//!   run since the start of the period (so the idle thread 0 appears with
//!   the time up to its first switch-out, and never again: being switched
//!   in, thread 0 is not counted).
//! - A CPU is busy from a switch to a non-idle thread until its next
//!   switch, and from the start of the period until its first switch.
//! - At the end, threads and CPUs still running are counted up to the last
//!   event. Usage is time / period length. The total is the sum of CPU
//!   usages divided by the number of CPUs the model knows (any CPU seen in
//!   a switch, wakeup or interrupt event), not only those with a switch.
//! - Threads are listed by usage, highest first (ties in order of first
//!   appearance), at most `limit` (0: all); name and priorities are those
//!   the thread had when the analysis first saw it, then its priority
//!   changes.
//! - With a [`Select`] (`--cpu`, `--tid`, `--procname`), switches on other
//!   CPUs are ignored, and a thread left out is not counted once switched
//!   in (its CPU is then not busy), as lttng-cputop.

use crate::IndexMap;

use crate::event::Interest;
use crate::lami::{self, col, col_unit, Metadata, Table, TableClass};
use crate::select::Select;
use crate::state::{Listener, Proc, State, Switch};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "Top CPU usage",
    description: "Per-TID, per-CPU, and total top CPU usage",
    tags: &["cpu", "top"],
    tables: &[
        TableClass {
            name: "per-process",
            title: "Per-TID top CPU usage",
            columns: &[
                col("Process", "process"),
                col_unit("Migration count", "number", "migrations"),
                col("Chronological priorities", "string"),
                col("CPU usage", "ratio"),
            ],
        },
        TableClass {
            name: "per-cpu",
            title: "Per-CPU top CPU usage",
            columns: &[col("CPU", "cpu"), col("CPU usage", "ratio")],
        },
        TableClass {
            name: "total",
            title: "Total CPU usage",
            columns: &[col("CPU usage", "ratio")],
        },
    ],
};

#[derive(Debug)]
struct ThreadStats {
    comm: String,
    cpu_time: i64,
    running_since: Option<i64>,
    migrations: i64,
    prios: Vec<i64>,
}

#[derive(Debug)]
struct CpuStats {
    busy: i64,
    busy_since: Option<i64>,
}

/// The cputop analysis; `limit` caps the per-thread table (0: no cap).
#[derive(Debug)]
pub struct Cputop {
    limit: usize,
    begin: i64,
    tids: IndexMap<i64, ThreadStats>,
    cpus: IndexMap<i64, CpuStats>,
    select: Select,
}

impl Cputop {
    pub fn new(limit: usize) -> Cputop {
        Cputop::with_select(limit, Select::default())
    }

    pub fn with_select(limit: usize, select: Select) -> Cputop {
        Cputop {
            limit,
            begin: 0,
            tids: IndexMap::default(),
            cpus: IndexMap::default(),
            select,
        }
    }
}

impl Listener for Cputop {
    fn sched_switch(&mut self, sw: &Switch) {
        if !self.select.cpu(sw.cpu) {
            return;
        }
        let keep_next = sw.next_tid != 0 && self.select.proc(sw.wakee);
        let begin = self.begin;
        // Per CPU.
        let cpu = self.cpus.entry(sw.cpu).or_insert(CpuStats {
            busy: 0,
            busy_since: Some(begin),
        });
        if let Some(s) = cpu.busy_since {
            cpu.busy += sw.ts - s;
        }
        cpu.busy_since = keep_next.then_some(sw.ts);
        // Per thread: the one switched out...
        let prev = self.tids.entry(sw.prev_tid).or_insert_with(|| ThreadStats {
            comm: sw.prev_comm.to_str().into_owned(),
            cpu_time: 0,
            running_since: Some(begin),
            migrations: 0,
            prios: Vec::new(),
        });
        if let Some(s) = prev.running_since.take() {
            prev.cpu_time += sw.ts - s;
        }
        // ... and the one switched in, unless idle or left out.
        if !keep_next {
            return;
        }
        let next = self.tids.entry(sw.next_tid).or_insert_with(|| ThreadStats {
            comm: sw.next_comm.to_str().into_owned(),
            cpu_time: 0,
            running_since: None,
            migrations: 0,
            prios: sw.wakee.prio.into_iter().collect(),
        });
        next.running_since = Some(sw.ts);
    }

    fn migrate(&mut self, proc: &Proc, cpu: i64) {
        if proc.tid == 0 || !self.select.proc(proc) || !self.select.cpu(cpu) {
            return;
        }
        self.tids
            .entry(proc.tid)
            .or_insert_with(|| ThreadStats {
                comm: proc.comm.clone(),
                cpu_time: 0,
                running_since: None,
                migrations: 0,
                prios: Vec::new(),
            })
            .migrations += 1;
    }

    fn prio_changed(&mut self, _ts: i64, tid: i64, prio: i64) {
        if let Some(t) = self.tids.get_mut(&tid) {
            t.prios.push(prio);
        }
    }
}

/// `part / whole` as lttng-analyses computes a usage ratio: a percentage
/// (`part * 100 / whole`) divided by 100, 0 for an empty period.
fn usage_percent(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as i128 * 100) as f64 / whole as f64
    }
}

impl Analysis for Cputop {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    /// Its total divides by the number of CPUs the model knows, which IRQ
    /// events add to; it has no IRQ notification.
    fn interest(&self) -> Interest {
        Interest {
            irq_cpus: true,
            ..Interest::SCHED
        }
    }
    fn begin(&mut self, ts: i64) {
        self.begin = ts;
        self.tids.clear();
        self.cpus.clear();
    }

    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        let duration = end - begin;
        let m = &METADATA;
        let mut threads: Vec<(f64, i64, &ThreadStats)> = self
            .tids
            .iter()
            .map(|(tid, t)| {
                let time = t.cpu_time + t.running_since.map_or(0, |s| end - s);
                (usage_percent(time, duration), *tid, t)
            })
            .collect();
        // Stable: ties keep the order of first appearance.
        threads.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut per_tid = Table::new(&m.tables[0], begin, end);
        for (pct, tid, t) in threads {
            if self.limit > 0 && per_tid.rows.len() >= self.limit {
                break;
            }
            per_tid.rows.push(vec![
                lami::process(Some(&t.comm), None, Some(tid)),
                lami::number(t.migrations),
                lami::string(&crate::stats::prio_list(&t.prios)),
                lami::ratio(pct / 100.0),
            ]);
        }
        let mut cpus: Vec<(i64, f64)> = self
            .cpus
            .iter()
            .map(|(id, c)| {
                let busy = c.busy + c.busy_since.map_or(0, |s| end - s);
                (*id, usage_percent(busy, duration))
            })
            .collect();
        let mut per_cpu = Table::new(&m.tables[1], begin, end);
        cpus.sort_by_key(|c| c.0);
        for (id, pct) in &cpus {
            per_cpu
                .rows
                .push(vec![lami::cpu(*id), lami::ratio(pct / 100.0)]);
        }
        let mut tables = vec![per_tid, per_cpu];
        if !state.cpus.is_empty() {
            // Summed from the highest usage down, as lttng-analyses does.
            let mut pcts: Vec<f64> = cpus.iter().map(|c| c.1).collect();
            pcts.sort_by(|a, b| b.total_cmp(a));
            let sum: f64 = pcts.iter().sum();
            let mut total = Table::new(&m.tables[2], begin, end);
            total
                .rows
                .push(vec![lami::ratio(sum / state.cpus.len() as f64 / 100.0)]);
            tables.push(total);
        }
        tables
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, Kind, Text};
    use crate::Runner;

    fn switch(ts: i64, cpu: i64, prev: i64, next: i64) -> Event<'static> {
        // (a test's few names live as long as it)
        let name = |t: i64| Text::new(Box::leak(format!("t{t}").into_bytes().into_boxed_slice()));
        Event {
            ts,
            cpu: Some(cpu),
            kind: Kind::SchedSwitch {
                prev_comm: name(prev),
                prev_tid: prev,
                prev_prio: 20,
                next_comm: name(next),
                next_tid: next,
                next_prio: 20,
            },
        }
    }

    /// Usage worked out by hand for a 40 ns period on two CPUs.
    #[test]
    fn usage_by_hand() {
        let other = |ts| Event {
            ts,
            cpu: Some(0),
            kind: Kind::Other,
        };
        let mut run = Runner::new(Cputop::new(0), None, None);
        for ev in [
            other(0),
            switch(10, 0, 0, 100),   // idle → 100 on CPU 0
            switch(30, 0, 100, 200), // 100 ran 20 ns
            switch(35, 1, 300, 0),   // 300 ran since the start: 35 ns
            other(40),
        ] {
            assert!(run.event(&ev));
        }
        let t = run.finish();
        let value = |c: &crate::lami::Cell| c.to_value()["value"].as_f64().unwrap();
        let rows: Vec<(i64, f64)> = t[0]
            .rows
            .iter()
            .map(|r| (r[0].to_value()["tid"].as_i64().unwrap(), value(&r[3])))
            .collect();
        // 300: 35/40; 100: 20/40; 0 (switched out at 10, never counted
        // again): 10/40; 200: 30..40. Ties in order of appearance.
        assert_eq!(rows, vec![(300, 0.875), (100, 0.5), (0, 0.25), (200, 0.25)]);
        // CPU 0 busy all along (from the start until its first switch, then
        // threads 100 and 200); CPU 1 until its switch to idle at 35.
        let cpus: Vec<f64> = t[1].rows.iter().map(|r| value(&r[1])).collect();
        assert_eq!(cpus, vec![1.0, 0.875]);
        assert_eq!(value(&t[2].rows[0][0]), 0.9375);
    }
}
