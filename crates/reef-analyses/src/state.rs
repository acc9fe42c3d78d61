//! The kernel model: which thread runs on each CPU, what each thread is
//! called, its priority, its pending system call, and the interrupts in
//! progress — rebuilt from events as lttng-analyses 0.6.1's "automaton"
//! does, and reporting what happens to a [`Listener`].
//!
//! Conventions that decide the numbers (all those of lttng-analyses):
//! - A CPU's current thread comes only from `sched_switch`; `next_tid` 0
//!   (the idle "swapper") means no thread. Events before a CPU's first
//!   switch have no current thread and are not attributed to anyone.
//! - Threads are created on first sight (switch, wakeup, migration, fork,
//!   statedump) with whatever is known then; `sched_switch` renames its
//!   `next_tid`, `lttng_statedump_process_state` sets name and pid, fork
//!   creates the child afresh.
//! - A priority change is reported when a switch, migration, wakeup or
//!   `sched_pi_setprio` shows a thread with another priority than it had
//!   (thread 0 excluded).
//! - A wakeup of a thread already running on some CPU is ignored; only a
//!   thread's first wakeup before it is switched in counts, and its waker
//!   is the thread running on the waking CPU.
//! - A system call is the entry seen while a thread runs on the CPU, ended
//!   by the next exit seen on a CPU while that thread runs there.
//! - Hard IRQs: one in progress per CPU, ended by an exit of the same IRQ
//!   number. Soft IRQs: per CPU and vector, a queue of raised ones (a raise
//!   while one is raised but not entered is merged into it); an entry
//!   starts the first, an exit ends it.
//! - Page frees are reported only while the global count of allocated
//!   pages seen is positive.

use rustc_hash::FxHashMap as HashMap;

use crate::event::{Event, Kind};

/// A thread as the model knows it.
#[derive(Debug, Clone, Default)]
pub struct Proc {
    pub tid: i64,
    pub pid: Option<i64>,
    pub comm: String,
    pub prio: Option<i64>,
    pub syscall: Option<Syscall>,
    /// Time of the first wakeup since it last ran.
    pub last_wakeup: Option<i64>,
    /// The thread that woke it then.
    pub last_waker: Option<i64>,
}

impl Proc {
    fn new(tid: i64) -> Proc {
        Proc {
            tid,
            ..Proc::default()
        }
    }
}

/// A system call in progress or just ended.
#[derive(Debug, Clone)]
pub struct Syscall {
    pub name: String,
    pub begin: i64,
    pub end: i64,
    pub ret: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Cpu {
    /// The thread running, `None` for idle or unknown.
    pub current_tid: Option<i64>,
    hard_irq: Option<HardIrq>,
    softirqs: HashMap<i64, Vec<SoftIrq>>,
}

#[derive(Debug, Clone, Copy)]
pub struct HardIrq {
    pub irq: i64,
    pub cpu: i64,
    pub begin: i64,
    pub end: i64,
}

#[derive(Debug, Clone, Copy)]
pub struct SoftIrq {
    pub vec: i64,
    pub cpu: i64,
    pub raise: Option<i64>,
    pub begin: Option<i64>,
    pub end: i64,
}

/// What a `sched_switch` tells the listeners, after the model was updated.
pub struct Switch<'a> {
    pub ts: i64,
    pub cpu: i64,
    pub prev_tid: i64,
    pub prev_comm: &'a str,
    pub next_tid: i64,
    pub next_comm: &'a str,
    /// The thread switched in, as the model now knows it.
    pub wakee: &'a Proc,
    /// Who woke it, if its wakeup was seen.
    pub waker: Option<&'a Proc>,
}

/// Receives the model's notifications. Every method does nothing by default.
#[allow(unused_variables)]
pub trait Listener {
    fn sched_switch(&mut self, sw: &Switch) {}
    fn migrate(&mut self, proc: &Proc, cpu: i64) {}
    fn prio_changed(&mut self, ts: i64, tid: i64, prio: i64) {}
    fn syscall_exit(&mut self, proc: &Proc, call: &Syscall, cpu: i64) {}
    fn irq_entry(&mut self, irq: i64, name: &str) {}
    fn irq_exit(&mut self, irq: &HardIrq) {}
    fn softirq_exit(&mut self, irq: &SoftIrq) {}
    fn page_alloc(&mut self, proc: &Proc, cpu: i64) {}
    fn page_free(&mut self, proc: &Proc, cpu: i64) {}
}

/// A listener that ignores everything (the model still runs).
pub struct Nobody;
impl Listener for Nobody {}

/// The model.
#[derive(Debug, Default)]
pub struct State {
    pub cpus: HashMap<i64, Cpu>,
    pub tids: HashMap<i64, Proc>,
    /// Pages allocated minus freed, never below 0.
    pub page_count: u64,
}

impl State {
    pub fn new() -> State {
        State::default()
    }

    fn cpu(&mut self, id: i64) -> &mut Cpu {
        self.cpus.entry(id).or_default()
    }

    fn proc(&mut self, tid: i64) -> &mut Proc {
        self.tids.entry(tid).or_insert_with(|| {
            let mut p = Proc::new(tid);
            if tid == 0 {
                p.pid = Some(0);
            }
            p
        })
    }

    /// The thread running on `cpu`, if known.
    fn running(&self, cpu: Option<i64>) -> Option<i64> {
        self.cpus.get(&cpu?)?.current_tid
    }

    fn check_prio(&mut self, ts: i64, tid: i64, prio: i64, l: &mut impl Listener) {
        if tid == 0 {
            return;
        }
        if let Some(p) = self.tids.get_mut(&tid) {
            if p.prio != Some(prio) {
                p.prio = Some(prio);
                l.prio_changed(ts, tid, prio);
            }
        }
    }

    /// Updates the model with `ev`, telling `l` what happened.
    pub fn process(&mut self, ev: &Event, l: &mut impl Listener) {
        let ts = ev.ts;
        match &ev.kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_tid,
                prev_prio,
                next_comm,
                next_tid,
                next_prio,
            } => {
                let Some(cpu) = ev.cpu else { return };
                let (prev_tid, next_tid) = (*prev_tid, *next_tid);
                self.cpu(cpu).current_tid = (next_tid != 0).then_some(next_tid);
                self.proc(prev_tid);
                let next = self.proc(next_tid);
                if next.comm != **next_comm {
                    next.comm = next_comm.to_string();
                }
                self.check_prio(ts, prev_tid, *prev_prio, l);
                self.check_prio(ts, next_tid, *next_prio, l);
                let wakee = &self.tids[&next_tid];
                let waker = wakee.last_waker.and_then(|w| self.tids.get(&w));
                l.sched_switch(&Switch {
                    ts,
                    cpu,
                    prev_tid,
                    prev_comm,
                    next_tid,
                    next_comm,
                    wakee,
                    waker,
                });
                let wakee = self.proc(next_tid);
                wakee.last_wakeup = None;
                wakee.last_waker = None;
            }
            Kind::MigrateTask { comm, tid, prio } => {
                let Some(cpu) = ev.cpu else { return };
                let p = self.tids.entry(*tid).or_insert_with(|| Proc {
                    tid: *tid,
                    comm: comm.to_string(),
                    ..Proc::default()
                });
                l.migrate(p, cpu);
                self.check_prio(ts, *tid, *prio, l);
            }
            Kind::Wakeup {
                tid,
                prio,
                target_cpu,
            } => {
                let Some(cpu) = ev.cpu else { return };
                self.cpu(*target_cpu);
                self.cpu(cpu);
                if self.cpus.values().any(|c| c.current_tid == Some(*tid)) {
                    return;
                }
                self.tids.entry(*tid).or_insert_with(|| Proc::new(*tid));
                self.check_prio(ts, *tid, *prio, l);
                let waker = self.cpus[&cpu].current_tid;
                let p = self.proc(*tid);
                if p.last_wakeup.is_none() {
                    p.last_wakeup = Some(ts);
                    if waker.is_some() {
                        p.last_waker = waker;
                    }
                }
            }
            Kind::Fork {
                parent_pid,
                parent_comm,
                child_tid,
                child_pid,
                child_comm,
            } => {
                // lttng-analyses keys the parent by its pid.
                let parent = self.tids.entry(*parent_pid).or_insert_with(|| Proc {
                    tid: *parent_pid,
                    ..Proc::default()
                });
                parent.pid = Some(*parent_pid);
                parent.comm = parent_comm.to_string();
                self.tids.insert(
                    *child_tid,
                    Proc {
                        tid: *child_tid,
                        pid: Some(*child_pid),
                        comm: child_comm.to_string(),
                        ..Proc::default()
                    },
                );
            }
            Kind::Exec { tid, procname } => {
                let p = self.tids.entry(*tid).or_insert_with(|| Proc::new(*tid));
                if let Some(n) = procname {
                    p.comm = n.to_string();
                }
            }
            Kind::PiSetprio { tid, newprio } => self.check_prio(ts, *tid, *newprio, l),
            Kind::SyscallEntry { name } => {
                if let Some(tid) = self.running(ev.cpu) {
                    self.proc(tid).syscall = Some(Syscall {
                        name: name.to_string(),
                        begin: ts,
                        end: ts,
                        ret: None,
                    });
                }
            }
            Kind::SyscallExit { ret } => {
                let Some(tid) = self.running(ev.cpu) else {
                    return;
                };
                let p = self.proc(tid);
                if let Some(mut call) = p.syscall.take() {
                    call.end = ts;
                    call.ret = *ret;
                    l.syscall_exit(p, &call, ev.cpu.unwrap_or(0));
                }
            }
            Kind::IrqEntry { irq, name } => {
                let Some(cpu) = ev.cpu else { return };
                self.cpu(cpu).hard_irq = Some(HardIrq {
                    irq: *irq,
                    cpu,
                    begin: ts,
                    end: ts,
                });
                l.irq_entry(*irq, name);
            }
            Kind::IrqExit { irq } => {
                let Some(cpu) = ev.cpu else { return };
                if let Some(mut h) = self.cpu(cpu).hard_irq.take() {
                    if h.irq == *irq {
                        h.end = ts;
                        l.irq_exit(&h);
                    }
                }
            }
            Kind::SoftirqRaise { vec } => {
                let Some(cpu) = ev.cpu else { return };
                let q = self.cpu(cpu).softirqs.entry(*vec).or_default();
                // Raised and not yet entered: the new raise is the same one.
                if q.first().is_some_and(|s| s.begin.is_none()) {
                    return;
                }
                q.push(SoftIrq {
                    vec: *vec,
                    cpu,
                    raise: Some(ts),
                    begin: None,
                    end: ts,
                });
            }
            Kind::SoftirqEntry { vec } => {
                let Some(cpu) = ev.cpu else { return };
                let q = self.cpu(cpu).softirqs.entry(*vec).or_default();
                match q.first_mut() {
                    Some(s) => s.begin = Some(ts),
                    None => q.push(SoftIrq {
                        vec: *vec,
                        cpu,
                        raise: None,
                        begin: Some(ts),
                        end: ts,
                    }),
                }
            }
            Kind::SoftirqExit { vec } => {
                let Some(cpu) = ev.cpu else { return };
                let Some(q) = self.cpu(cpu).softirqs.get_mut(vec) else {
                    return;
                };
                if q.is_empty() {
                    return;
                }
                let mut s = q.remove(0);
                s.end = ts;
                l.softirq_exit(&s);
            }
            Kind::PageAlloc => {
                self.page_count += 1;
                if let Some(tid) = self.running(ev.cpu) {
                    l.page_alloc(&self.tids[&tid], ev.cpu.unwrap_or(0));
                }
            }
            Kind::PageFree => {
                if self.page_count == 0 {
                    return;
                }
                self.page_count -= 1;
                if let Some(tid) = self.running(ev.cpu) {
                    l.page_free(&self.tids[&tid], ev.cpu.unwrap_or(0));
                }
            }
            Kind::StatedumpProcess {
                tid,
                pid,
                name,
                prio,
            } => {
                let p = self.tids.entry(*tid).or_insert_with(|| Proc::new(*tid));
                p.pid = Some(*pid);
                p.comm = name.to_string();
                if p.prio.is_none() {
                    p.prio = *prio;
                }
                if pid != tid {
                    self.tids.entry(*pid).or_insert_with(|| Proc {
                        tid: *pid,
                        pid: Some(*pid),
                        comm: name.to_string(),
                        ..Proc::default()
                    });
                }
            }
            Kind::Other => {}
        }
    }
}
