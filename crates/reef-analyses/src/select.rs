//! lttng-analyses' selection options: `--cpu`, `--tid`, `--procname`,
//! `--min`/`--max` and `--irq`/`--softirq`, applied where lttng-analyses
//! applies them.
//!
//! [`Selected`] wraps an analysis and drops the model's notifications
//! that the options leave out, which is what lttng-analyses' analyses do
//! first thing in their handlers:
//! - a system call's exit, a page allocation or free: its thread and CPU;
//! - a switch (scheduling latency): the woken thread, the CPU, then the
//!   latency from its wakeup;
//! - an IRQ's or softirq's end: its CPU, its duration, and the `--irq`/
//!   `--softirq` lists (given only one list, the other kind is left out).
//!
//! `cputop` applies the thread and CPU choice itself (a switch to a
//! thread left out still ends the one before it).

use crate::event::Text;
use crate::lami::{Metadata, Table};
use crate::state::{BlockRq, Disk, HardIrq, IoRq, Listener, Proc, SoftIrq, State, Switch, Syscall};
use crate::Analysis;

/// What to keep; `None` keeps everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Select {
    pub cpus: Option<Vec<i64>>,
    pub tids: Option<Vec<i64>>,
    pub procnames: Option<Vec<String>>,
    /// Durations, ns.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub irqs: Option<Vec<i64>>,
    pub softirqs: Option<Vec<i64>>,
}

impl Select {
    pub fn cpu(&self, cpu: i64) -> bool {
        self.cpus.as_ref().is_none_or(|c| c.contains(&cpu))
    }

    /// lttng-analyses' process filter: its name, then its thread id.
    pub fn proc(&self, p: &Proc) -> bool {
        self.procnames.as_ref().is_none_or(|n| n.contains(&p.comm))
            && self.tids.as_ref().is_none_or(|t| t.contains(&p.tid))
    }

    pub fn duration(&self, d: i64) -> bool {
        let d = d as f64;
        self.min.is_none_or(|m| d >= m) && self.max.is_none_or(|m| d <= m)
    }

    /// Whether `--irq`/`--softirq` keep this interrupt.
    pub fn irq(&self, hard: bool, nr: i64) -> bool {
        let (mine, other) = match hard {
            true => (&self.irqs, &self.softirqs),
            false => (&self.softirqs, &self.irqs),
        };
        match mine {
            Some(l) => l.contains(&nr),
            None => other.is_none(),
        }
    }
}

/// An analysis seeing only what a [`Select`] keeps.
#[derive(Debug)]
pub struct Selected<A> {
    pub inner: A,
    pub select: Select,
}

impl<A> Selected<A> {
    pub fn new(inner: A, select: Select) -> Selected<A> {
        Selected { inner, select }
    }
}

impl<A: Listener> Listener for Selected<A> {
    fn sched_switch(&mut self, sw: &Switch) {
        let s = &self.select;
        if !s.proc(sw.wakee) || !s.cpu(sw.cpu) {
            return;
        }
        if let Some(w) = sw.wakee.last_wakeup {
            if !s.duration(sw.ts - w) {
                return;
            }
        }
        self.inner.sched_switch(sw)
    }
    fn migrate(&mut self, proc: &Proc, cpu: i64) {
        self.inner.migrate(proc, cpu)
    }
    fn prio_changed(&mut self, ts: i64, tid: i64, prio: i64) {
        self.inner.prio_changed(ts, tid, prio)
    }
    fn syscall_exit(&mut self, proc: &Proc, call: &Syscall, cpu: i64) {
        if self.select.proc(proc) && self.select.cpu(cpu) {
            self.inner.syscall_exit(proc, call, cpu)
        }
    }
    fn irq_entry(&mut self, irq: i64, name: Text) {
        self.inner.irq_entry(irq, name)
    }
    fn irq_exit(&mut self, irq: &HardIrq) {
        let s = &self.select;
        if s.cpu(irq.cpu) && s.duration(irq.end - irq.begin) && s.irq(true, irq.irq) {
            self.inner.irq_exit(irq)
        }
    }
    fn softirq_exit(&mut self, irq: &SoftIrq) {
        let s = &self.select;
        let d = irq.begin.map_or(0, |b| irq.end - b);
        if s.cpu(irq.cpu) && s.duration(d) && s.irq(false, irq.vec) {
            self.inner.softirq_exit(irq)
        }
    }
    fn net(&mut self, send: bool, name: &str, len: i64) {
        self.inner.net(send, name, len)
    }
    fn block_rq_complete(&mut self, rq: &BlockRq, proc: Option<&Proc>, dev: i64, disk: &Disk) {
        self.inner.block_rq_complete(rq, proc, dev, disk)
    }
    fn block_device(&mut self, dev: i64, name: &str) {
        self.inner.block_device(dev, name)
    }
    fn page_alloc(&mut self, proc: &Proc, cpu: i64) {
        if self.select.proc(proc) && self.select.cpu(cpu) {
            self.inner.page_alloc(proc, cpu)
        }
    }
    fn page_free(&mut self, proc: &Proc, cpu: i64) {
        if self.select.proc(proc) && self.select.cpu(cpu) {
            self.inner.page_free(proc, cpu)
        }
    }
    fn create_fd(&mut self, parent: &Proc, fd: i64) {
        self.inner.create_fd(parent, fd)
    }
    fn close_fd(&mut self, parent_tid: i64, fd: i64) {
        self.inner.close_fd(parent_tid, fd)
    }
    fn update_fd(&mut self, parent: &Proc, fd: i64) {
        self.inner.update_fd(parent, fd)
    }
    fn create_parent_proc(&mut self, proc: &Proc, parent: &Proc) {
        self.inner.create_parent_proc(proc, parent)
    }
    fn io_rq_entry(&mut self, parent: (i64, usize), fd: i64) {
        self.inner.io_rq_entry(parent, fd)
    }
    fn io_rq_exit(&mut self, proc: (&Proc, usize), parent: (&Proc, usize), rq: &IoRq) {
        self.inner.io_rq_exit(proc, parent, rq)
    }
}

impl<A: Analysis> Analysis for Selected<A> {
    fn metadata() -> &'static Metadata {
        A::metadata()
    }
    fn metadata_of(&self) -> &'static Metadata {
        self.inner.metadata_of()
    }
    fn interest(&self) -> crate::event::Interest {
        self.inner.interest()
    }
    fn range(&mut self, begin: Option<i64>, end: Option<i64>) {
        self.inner.range(begin, end)
    }
    fn begin(&mut self, ts: i64) {
        self.inner.begin(ts)
    }
    #[inline]
    fn event(&mut self, ts: i64) {
        self.inner.event(ts)
    }
    fn tables(&mut self, state: &State, begin: i64, end: i64) -> Vec<Table> {
        self.inner.tables(state, begin, end)
    }
    fn emit<'s>(
        &'s mut self,
        state: &'s State,
        begin: i64,
        end: i64,
    ) -> Vec<crate::lami::Emitted<'s>> {
        self.inner.emit(state, begin, end)
    }
}
