//! The scheduling latency log, as `lttng-schedlog`: one row per latency
//! [`crate::schedstats`] counts (a thread's first wakeup to its being
//! switched in), in the order of the switches: wakeup and switch times,
//! the latency, the woken thread's priority when switched in, the CPU it
//! was switched in on, the woken thread and the thread that woke it (null
//! when the wakeup came from an interrupt or was not seen).
//!
//! Threads are named as lttng-analyses names them in its log: with the
//! name and process id they have at the end of the analysed period (its
//! log holds the model's thread objects, read when the table is made).

use crate::lami::{self, col, Metadata, Table, TableClass};
use crate::state::{Listener, State, Switch};
use crate::Analysis;

pub static METADATA: Metadata = Metadata {
    title: "Scheduling latencies analysis",
    description: "Scheduling latencies log",
    tags: &["sched", "log"],
    tables: &[TableClass {
        name: "log",
        title: "Scheduling log",
        columns: &[
            col("Wakeup timestamp", "timestamp"),
            col("Switch timestamp", "timestamp"),
            col("Scheduling latency", "duration"),
            col("Priority", "number"),
            col("Target CPU", "cpu"),
            col("Wakee process", "process"),
            col("Waker process", "process"),
        ],
    }],
};

/// One latency: wakeup and switch times, priority, CPU, wakee and waker
/// (tid, and name and pid as known then).
#[derive(Debug, Clone)]
pub struct SchedLatency {
    pub wakeup: i64,
    pub switch: i64,
    pub prio: Option<i64>,
    pub cpu: i64,
    pub wakee: (i64, String, Option<i64>),
    pub waker: Option<(i64, String, Option<i64>)>,
}

#[derive(Debug, Default)]
pub struct Schedlog {
    pub log: Vec<SchedLatency>,
}

impl Schedlog {
    pub fn new() -> Schedlog {
        Schedlog::default()
    }
}

impl Listener for Schedlog {
    fn sched_switch(&mut self, sw: &Switch) {
        let Some(wakeup) = sw.wakee.last_wakeup else {
            return;
        };
        let who = |p: &crate::state::Proc| (p.tid, p.comm.clone(), p.pid);
        self.log.push(SchedLatency {
            wakeup,
            switch: sw.ts,
            prio: sw.wakee.prio,
            cpu: sw.cpu,
            wakee: who(sw.wakee),
            waker: sw.waker.map(who),
        });
    }
}

/// A thread as the log names it: as the model knows it at the end, else
/// as it was known then.
fn process(state: &State, t: &(i64, String, Option<i64>)) -> serde_json::Value {
    match state.tids.get(&t.0) {
        Some(p) => lami::process(Some(&p.comm), p.pid, Some(p.tid)),
        None => lami::process(Some(&t.1), t.2, Some(t.0)),
    }
}

impl Analysis for Schedlog {
    fn metadata() -> &'static Metadata {
        &METADATA
    }

    fn begin(&mut self, _ts: i64) {
        self.log.clear();
    }

    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        let mut t = Table::new(&METADATA.tables[0], begin, end);
        for l in &self.log {
            t.rows.push(vec![
                lami::timestamp(l.wakeup),
                lami::timestamp(l.switch),
                lami::duration(l.switch - l.wakeup),
                l.prio.map_or(serde_json::Value::Null, lami::number),
                lami::cpu(l.cpu),
                process(state, &l.wakee),
                l.waker
                    .as_ref()
                    .map_or(serde_json::Value::Null, |w| process(state, w)),
            ]);
        }
        vec![t]
    }
}
