//! An analysis that has the model follow fewer events than it knows
//! ([`Interest`]: no wakeups, no threads, no I/O events) reports what it
//! reports with the model following every event, on the shared kernel
//! traces, with and without lttng-analyses' selection options. (Both are
//! also checked against lttng-analyses' own output, by `references.rs`
//! and tests/analyses/check-cli.py.)

use std::path::PathBuf;

use reef_analyses::event::{Interest, Text};
use reef_analyses::irqstats::{Irqlog, Irqstats};
use reef_analyses::lami::{results_json, Metadata, Table};
use reef_analyses::memtop::Memtop;
use reef_analyses::select::{Select, Selected};
use reef_analyses::state::{
    BlockRq, Disk, HardIrq, IoRq, Listener, Proc, SoftIrq, State, Switch, Syscall,
};
use reef_analyses::syscallstats::Syscallstats;
use reef_analyses::Analysis;

fn trace_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/kernel-traces")
        .join(name)
}

/// `A`, with the model following every event.
struct Everything<A>(A);

impl<A: Listener> Listener for Everything<A> {
    fn sched_switch(&mut self, sw: &Switch) {
        self.0.sched_switch(sw)
    }
    fn migrate(&mut self, proc: &Proc, cpu: i64) {
        self.0.migrate(proc, cpu)
    }
    fn prio_changed(&mut self, ts: i64, tid: i64, prio: i64) {
        self.0.prio_changed(ts, tid, prio)
    }
    fn syscall_exit(&mut self, proc: &Proc, call: &Syscall, cpu: i64) {
        self.0.syscall_exit(proc, call, cpu)
    }
    fn irq_entry(&mut self, irq: i64, name: Text) {
        self.0.irq_entry(irq, name)
    }
    fn irq_exit(&mut self, irq: &HardIrq) {
        self.0.irq_exit(irq)
    }
    fn softirq_exit(&mut self, irq: &SoftIrq) {
        self.0.softirq_exit(irq)
    }
    fn net(&mut self, send: bool, name: &str, len: i64) {
        self.0.net(send, name, len)
    }
    fn block_rq_complete(&mut self, rq: &BlockRq, proc: Option<&Proc>, dev: i64, disk: &Disk) {
        self.0.block_rq_complete(rq, proc, dev, disk)
    }
    fn block_device(&mut self, dev: i64, name: &str) {
        self.0.block_device(dev, name)
    }
    fn page_alloc(&mut self, proc: &Proc, cpu: i64) {
        self.0.page_alloc(proc, cpu)
    }
    fn page_free(&mut self, proc: &Proc, cpu: i64) {
        self.0.page_free(proc, cpu)
    }
    fn create_fd(&mut self, parent: &Proc, fd: i64) {
        self.0.create_fd(parent, fd)
    }
    fn close_fd(&mut self, parent_tid: i64, fd: i64) {
        self.0.close_fd(parent_tid, fd)
    }
    fn update_fd(&mut self, parent: &Proc, fd: i64) {
        self.0.update_fd(parent, fd)
    }
    fn create_parent_proc(&mut self, proc: &Proc, parent: &Proc) {
        self.0.create_parent_proc(proc, parent)
    }
    fn io_rq_entry(&mut self, parent: (i64, usize), fd: i64) {
        self.0.io_rq_entry(parent, fd)
    }
    fn io_rq_exit(&mut self, proc: (&Proc, usize), parent: (&Proc, usize), rq: &IoRq) {
        self.0.io_rq_exit(proc, parent, rq)
    }
}

impl<A: Analysis> Analysis for Everything<A> {
    fn metadata() -> &'static Metadata {
        A::metadata()
    }
    fn metadata_of(&self) -> &'static Metadata {
        self.0.metadata_of()
    }
    fn interest(&self) -> Interest {
        Interest::ALL
    }
    fn range(&mut self, begin: Option<i64>, end: Option<i64>) {
        self.0.range(begin, end)
    }
    fn begin(&mut self, ts: i64) {
        self.0.begin(ts)
    }
    fn event(&mut self, ts: i64) {
        self.0.event(ts)
    }
    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        self.0.tables(state, begin, end)
    }
}

/// The selections compared: none, and some of each kind.
fn selections() -> Vec<Select> {
    vec![
        Select::default(),
        Select {
            cpus: Some(vec![0]),
            ..Select::default()
        },
        Select {
            tids: Some(vec![496, 403, 1, 7]),
            ..Select::default()
        },
        Select {
            procnames: Some(vec!["sshd".into(), "lttng-consumerd".into()]),
            ..Select::default()
        },
        Select {
            min: Some(1000.0),
            max: Some(1e6),
            ..Select::default()
        },
        Select {
            softirqs: Some(vec![1, 9]),
            ..Select::default()
        },
    ]
}

/// The results of `mk`'s analysis with its own interest and with every
/// event followed, on `trace`, for each selection; the number of rows.
fn same<A: Analysis>(trace: &str, mk: impl Fn() -> A) -> usize {
    assert_ne!(
        mk().interest(),
        Interest::ALL,
        "an analysis that follows less"
    );
    let read = reef_read::ReadOptions::new([trace_dir(trace)]);
    let mut rows = 0;
    fn run<A: Analysis>(read: &reef_read::ReadOptions, a: A) -> Vec<Table> {
        let (tables, stopped) = reef_analyses::analyse(read, a, true).unwrap();
        assert!(stopped.is_none());
        tables
    }
    for select in selections() {
        let got = run(&read, Selected::new(mk(), select.clone()));
        let want = run(&read, Selected::new(Everything(mk()), select.clone()));
        assert!(
            results_json(&got) == results_json(&want),
            "{trace}, {select:?}: the results differ"
        );
        rows += got.iter().map(|t| t.rows.len()).sum::<usize>();
    }
    rows
}

#[test]
fn following_less_changes_nothing() {
    for trace in ["bug446190", "uneven-streams"] {
        let rows = [
            same(trace, Syscallstats::new),
            same(trace, || Memtop::new(0)),
            same(trace, Irqstats::new),
            same(trace, Irqlog::new),
            same(trace, || Irqlog::freq(20)),
        ];
        // (all with something to compare; uneven-streams has no IRQ)
        let with_rows = rows.iter().filter(|&&n| n > 0).count();
        assert!(with_rows >= 2, "{trace}: {rows:?}");
        if trace == "bug446190" {
            assert!(rows.iter().all(|&n| n > 0), "{trace}: {rows:?}");
        }
    }
}
