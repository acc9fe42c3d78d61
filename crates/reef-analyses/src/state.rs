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
//! - File descriptors belong to processes (a thread uses its process's,
//!   known from the state dump, fork or a `pid` context). They come from
//!   the state dump, fork (copied), and the successful exit of an I/O call
//!   whose descriptor is not known yet (opens, but also reads, writes,
//!   closes and syncs on unknown descriptors); they go at a successful
//!   close, at exec (close-on-exec ones) and when dup2/dup3 reuse them.
//!   Only lttng-analyses' I/O calls make requests; `splice` and
//!   `sendfile64`, though on its list, make none.
//! - A descriptor is named by its `open` (the path), `socket`
//!   (`socket`), the descriptor a dup copies, the state dump, or an IPv4
//!   `connect` (`a.b.c.d:port`); it leads to a disk (open), the network
//!   (socket, or written to during a `net_dev_xmit`) or is unknown.
//! - Block requests run from `block_rq_issue` to a `block_rq_complete` of
//!   the same device, sector and sector count (devices followed through
//!   `block_bio_remap`, dropped at `block_bio_backmerge`); disks are named
//!   by `lttng_statedump_block_device`.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use crate::event::{Event, IoArgs, IoCall, IoIn, Kind, Text};

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
    /// Open file descriptors (of a process; threads use their process's).
    pub fds: Fds,
}

/// A process's open descriptors ([`FdTable`] of [`Fd`]).
pub type Fds = FdTable<Fd>;

/// A value per descriptor number, and the order the numbers appeared in
/// (that of a Python dict, which lttng-analyses' ties follow: a descriptor
/// removed and added again goes last), with removal in constant time.
///
/// Numbers below 1024 (the kernel hands out the lowest free number, and
/// 1024 is Linux's default limit of a process's open files: nearly all of
/// them) are held in a table indexed by number, one memory access away;
/// others in a map.
#[derive(Debug, Clone)]
pub struct FdTable<T> {
    dense: Vec<Option<(u64, T)>>,
    far: HashMap<i64, (u64, T)>,
    next: u64,
}

/// Asks for every cache line of `value`, to be read soon (a hint: where
/// the processor has no such instruction, nothing).
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let at = (value as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch only hints the cache; the addresses are
            // inside `value`, and a prefetch never faults anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    at.wrapping_add(off),
                )
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

impl<T> Default for FdTable<T> {
    fn default() -> Self {
        FdTable {
            dense: Vec::new(),
            far: HashMap::default(),
            next: 0,
        }
    }
}

impl<T> FdTable<T> {
    /// Numbers held in the table.
    const DENSE: i64 = 1 << 10;

    /// The table's index of `fd`, if it is held there.
    fn dense_at(fd: i64) -> Option<usize> {
        usize::try_from(fd).ok().filter(|_| fd < Self::DENSE)
    }

    fn slot(&self, fd: i64) -> Option<&(u64, T)> {
        match Self::dense_at(fd) {
            Some(i) => self.dense.get(i)?.as_ref(),
            None => self.far.get(&fd),
        }
    }

    fn slot_mut(&mut self, fd: i64) -> Option<&mut (u64, T)> {
        match Self::dense_at(fd) {
            Some(i) => self.dense.get_mut(i)?.as_mut(),
            None => self.far.get_mut(&fd),
        }
    }

    pub fn get(&self, fd: &i64) -> Option<&T> {
        self.slot(*fd).map(|e| &e.1)
    }

    pub fn get_mut(&mut self, fd: &i64) -> Option<&mut T> {
        self.slot_mut(*fd).map(|e| &mut e.1)
    }

    pub fn contains_key(&self, fd: &i64) -> bool {
        self.slot(*fd).is_some()
    }

    /// Asks the processor to bring `fd`'s slot into its cache, if the
    /// table holds it: a system call's entry does, so that its exit finds
    /// the slot there (a process with many descriptors misses the cache
    /// on each).
    pub fn prefetch(&self, fd: i64) {
        if let Some(slot) = Self::dense_at(fd).and_then(|i| self.dense.get(i)) {
            // (`io`'s slots span two cache lines)
            prefetch(slot);
        }
    }

    /// The value of `fd`, added last with `f` unless it is there; and
    /// whether it was added.
    pub fn get_or_add(&mut self, fd: i64, f: impl FnOnce() -> T) -> (&mut T, bool) {
        let seq = self.next;
        let (e, added) = match Self::dense_at(fd) {
            Some(i) => {
                if i >= self.dense.len() {
                    self.dense.resize_with(i + 1, || None);
                }
                let e = &mut self.dense[i];
                let added = e.is_none();
                (e.get_or_insert_with(|| (seq, f())), added)
            }
            None => match self.far.entry(fd) {
                std::collections::hash_map::Entry::Occupied(e) => (e.into_mut(), false),
                std::collections::hash_map::Entry::Vacant(e) => (e.insert((seq, f())), true),
            },
        };
        self.next += u64::from(added);
        (&mut e.1, added)
    }

    /// Adds `fd` last, unless it is there: whether it was added.
    pub fn add(&mut self, fd: i64, f: impl FnOnce() -> T) -> bool {
        self.get_or_add(fd, f).1
    }

    pub fn remove(&mut self, fd: &i64) -> Option<T> {
        match Self::dense_at(*fd) {
            Some(i) => self.dense.get_mut(i)?.take().map(|e| e.1),
            None => self.far.remove(fd).map(|e| e.1),
        }
    }

    /// The descriptors in the order they appeared.
    pub fn ordered(&self) -> Vec<(i64, &T)> {
        let dense = self.dense.iter().enumerate();
        let dense = dense.filter_map(|(i, e)| e.as_ref().map(|e| (e.0, i as i64, &e.1)));
        let far = self.far.iter().map(|(k, e)| (e.0, *k, &e.1));
        let mut v: Vec<(u64, i64, &T)> = dense.chain(far).collect();
        v.sort_unstable_by_key(|e| e.0);
        v.into_iter().map(|e| (e.1, e.2)).collect()
    }

    /// Takes them all, in the order they appeared.
    pub fn take(&mut self) -> Vec<(i64, T)> {
        let dense = std::mem::take(&mut self.dense).into_iter().enumerate();
        let dense = dense.filter_map(|(i, e)| e.map(|e| (e.0, i as i64, e.1)));
        let far = self.far.drain().map(|(k, e)| (e.0, k, e.1));
        let mut v: Vec<(u64, i64, T)> = dense.chain(far).collect();
        v.sort_unstable_by_key(|e| e.0);
        v.into_iter().map(|e| (e.1, e.2)).collect()
    }
}

/// What a descriptor is known to lead to (lttng-analyses' FD types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FdType {
    #[default]
    Unknown,
    Disk,
    Net,
    /// Written to while the kernel sent a network packet.
    MaybeNet,
}

/// An open file descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct Fd {
    /// (shared: a descriptor's copies, its lives, and `dup`s name it)
    pub filename: Arc<str>,
    pub kind: FdType,
    pub cloexec: bool,
}

impl Fd {
    /// A descriptor first seen in use: nothing is known of it.
    fn unknown(names: &mut Names) -> Fd {
        Fd {
            filename: names.get("unknown"),
            kind: FdType::Unknown,
            cloexec: false,
        }
    }
}

/// The descriptors' file names, each held once: the descriptors of a file
/// share its name, so closing one touches a name in the cache, not one of
/// its own (a trace opens the same files again and again). At most
/// `Names::MAX` distinct names are held; others are not shared.
#[derive(Debug, Default)]
pub struct Names {
    held: rustc_hash::FxHashSet<Arc<str>>,
}

impl Names {
    const MAX: usize = 1 << 16;

    pub fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.held.get(name) {
            return Arc::clone(n);
        }
        let n: Arc<str> = name.into();
        if self.held.len() < Self::MAX {
            self.held.insert(Arc::clone(&n));
        }
        n
    }
}

/// A block device as the model knows it: its name (from the state dump)
/// and its requests issued and not completed, by sector.
#[derive(Debug, Clone, Default)]
pub struct Disk {
    pub name: Option<String>,
    pending: HashMap<i64, BlockRq>,
}

/// A block I/O request (lttng-analyses' `BlockIORequest`).
#[derive(Debug, Clone, Copy)]
pub struct BlockRq {
    pub begin: i64,
    pub end: i64,
    /// The thread the issuing event names.
    pub tid: i64,
    pub write: bool,
    pub sector: i64,
    pub nr_sector: i64,
}

impl BlockRq {
    /// Bytes, counting 512-byte sectors as the kernel does.
    pub fn size(&self) -> i64 {
        self.nr_sector * 512
    }
}

/// A bio remapped from (`old_dev`, `old_sector`) to (`dev`, `sector`).
#[derive(Debug, Clone, Copy)]
struct Remap {
    dev: i64,
    sector: i64,
    old_dev: i64,
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
    /// Its name, shared by every call of its event class.
    pub name: Arc<str>,
    pub begin: i64,
    pub end: i64,
    pub ret: Option<i64>,
    /// The I/O request of an I/O system call.
    pub io: Option<IoRq>,
}

/// What an I/O request does (lttng-analyses' operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    Open,
    Read,
    Write,
    Close,
    Sync,
}

/// An I/O system call in progress or just ended.
#[derive(Debug, Clone)]
pub struct IoRq {
    pub op: IoOp,
    /// The system call's name (set when it ends).
    pub name: Arc<str>,
    /// The descriptor acted on (for an open: the one returned).
    pub fd: Option<i64>,
    /// What an open opens (its path, `socket`, or what a dup duplicates).
    pub opens: Option<Fd>,
    pub begin: i64,
    pub end: i64,
    /// `-ret` of a failed call.
    pub errno: Option<i64>,
    /// Bytes a successful read or write moved.
    pub size: Option<i64>,
}

/// `O_CLOEXEC` on Linux (x86 and ARM alike).
const O_CLOEXEC: i64 = 0o2000000;
/// `AF_INET`.
const AF_INET: i64 = 2;

#[derive(Debug, Clone, Default)]
pub struct Cpu {
    /// The thread running, `None` for idle or unknown.
    pub current_tid: Option<i64>,
    /// Where the thread running is in [`State::tids`] (with `current_tid`):
    /// the events of the running thread find it without a lookup.
    current: usize,
    hard_irq: Option<HardIrq>,
    softirqs: SoftIrqs,
}

/// A CPU's softirqs raised or running, by vector: Linux's vectors (10 of
/// them) in a table, others in a map.
#[derive(Debug, Clone, Default)]
struct SoftIrqs {
    near: [Vec<SoftIrq>; SOFTIRQ_TABLE],
    far: HashMap<i64, Vec<SoftIrq>>,
}

/// Softirq vectors below this are kept in [`SoftIrqs`]' table.
const SOFTIRQ_TABLE: usize = 16;

impl SoftIrqs {
    /// Those of `vec` (none yet: empty).
    #[inline]
    fn entry(&mut self, vec: i64) -> &mut Vec<SoftIrq> {
        match usize::try_from(vec) {
            Ok(i) if i < SOFTIRQ_TABLE => &mut self.near[i],
            _ => self.far.entry(vec).or_default(),
        }
    }

    /// Those of `vec`, if any was ever kept (may be empty).
    #[inline]
    fn get_mut(&mut self, vec: i64) -> Option<&mut Vec<SoftIrq>> {
        match usize::try_from(vec) {
            Ok(i) if i < SOFTIRQ_TABLE => Some(&mut self.near[i]),
            _ => self.far.get_mut(&vec),
        }
    }
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
    pub prev_comm: Text<'a>,
    pub next_tid: i64,
    pub next_comm: Text<'a>,
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
    fn irq_entry(&mut self, irq: i64, name: Text) {}
    fn irq_exit(&mut self, irq: &HardIrq) {}
    fn softirq_exit(&mut self, irq: &SoftIrq) {}
    /// `len` bytes sent (`send`) or received on network interface `name`.
    fn net(&mut self, send: bool, name: &str, len: i64) {}
    /// A block request completed on device `dev`, issued by `proc` if
    /// the model knows that thread.
    fn block_rq_complete(&mut self, rq: &BlockRq, proc: Option<&Proc>, dev: i64, disk: &Disk) {}
    /// The state dump names block device `dev`.
    fn block_device(&mut self, dev: i64, name: &str) {}
    fn page_alloc(&mut self, proc: &Proc, cpu: i64) {}
    fn page_free(&mut self, proc: &Proc, cpu: i64) {}
    /// Descriptor `fd` appears in process `parent`.
    fn create_fd(&mut self, parent: &Proc, fd: i64) {}
    /// Descriptor `fd` of process `parent_tid` is closed.
    fn close_fd(&mut self, parent_tid: i64, fd: i64) {}
    /// Descriptor `fd`, which `parent` has, is described again.
    fn update_fd(&mut self, parent: &Proc, fd: i64) {}
    /// Thread `proc` turns out to belong to process `parent`.
    fn create_parent_proc(&mut self, proc: &Proc, parent: &Proc) {}
    /// An I/O system call on descriptor `fd` of process `parent` (its
    /// tid, and its index in [`State::tids`], which never changes) began
    /// (a hint: its exit follows, through `io_rq_exit`).
    fn io_rq_entry(&mut self, parent: (i64, usize), fd: i64) {}
    /// An I/O system call of `proc` (of process `parent`) ended; each
    /// comes with its index in [`State::tids`].
    fn io_rq_exit(&mut self, proc: (&Proc, usize), parent: (&Proc, usize), rq: &IoRq) {}
}

/// A listener that ignores everything (the model still runs).
pub struct Nobody;
impl Listener for Nobody {}

/// The CPUs the model knows, by number: a table for the small numbers
/// CPUs have (a lookup per event), a map for others.
#[derive(Debug, Default)]
pub struct Cpus {
    table: Vec<Option<Cpu>>,
    other: HashMap<i64, Cpu>,
    len: usize,
}

/// CPU numbers below this are kept in [`Cpus`]' table.
const CPU_TABLE: i64 = 1 << 12;

impl Cpus {
    /// Number of CPUs known.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, id: i64) -> Option<&Cpu> {
        match usize::try_from(id) {
            Ok(i) if id < CPU_TABLE => self.table.get(i)?.as_ref(),
            _ => self.other.get(&id),
        }
    }

    /// CPU `id`, known from now on.
    #[inline]
    fn entry(&mut self, id: i64) -> &mut Cpu {
        let slot = match usize::try_from(id) {
            Ok(i) if id < CPU_TABLE => {
                if i >= self.table.len() {
                    self.table.resize_with(i + 1, || None);
                }
                &mut self.table[i]
            }
            _ => {
                if !self.other.contains_key(&id) {
                    self.len += 1;
                }
                return self.other.entry(id).or_default();
            }
        };
        if slot.is_none() {
            self.len += 1;
        }
        slot.get_or_insert_with(Cpu::default)
    }

    /// Every CPU known.
    pub fn values(&self) -> impl Iterator<Item = &Cpu> {
        self.table.iter().flatten().chain(self.other.values())
    }
}

/// The model.
#[derive(Debug, Default)]
pub struct State {
    pub cpus: Cpus,
    /// The threads, in the order the model first saw them. None is ever
    /// removed: a thread's index stays its own.
    pub tids: Procs,
    /// Pages allocated minus freed, never below 0.
    pub page_count: u64,
    pub disks: HashMap<i64, Disk>,
    remaps: Vec<Remap>,
    /// The descriptors' file names.
    names: Names,
}

/// The model's threads by id.
pub type Procs = indexmap::IndexMap<i64, Proc, rustc_hash::FxBuildHasher>;

/// The index of thread `tid` in `tids`, added if it is not there.
#[inline]
fn slot_in(tids: &mut Procs, tid: i64) -> usize {
    if let Some(i) = tids.get_index_of(&tid) {
        return i;
    }
    let mut p = Proc::new(tid);
    if tid == 0 {
        p.pid = Some(0);
    }
    tids.insert_full(tid, p).0
}

/// Thread `tid` of `tids`, added if it is not there.
fn proc_in(tids: &mut Procs, tid: i64) -> &mut Proc {
    let i = slot_in(tids, tid);
    &mut tids[i]
}

/// Thread `tid` (`p`; not the idle one, 0) has priority `prio` at `ts`:
/// `l` is told when that changes it.
fn prio_seen(p: &mut Proc, tid: i64, ts: i64, prio: i64, l: &mut impl Listener) {
    if tid != 0 && p.prio != Some(prio) {
        p.prio = Some(prio);
        l.prio_changed(ts, tid, prio);
    }
}

impl State {
    pub fn new() -> State {
        State::default()
    }

    fn cpu(&mut self, id: i64) -> &mut Cpu {
        self.cpus.entry(id)
    }

    fn proc(&mut self, tid: i64) -> &mut Proc {
        proc_in(&mut self.tids, tid)
    }

    /// The thread running on `cpu`, if known.
    fn running(&self, cpu: Option<i64>) -> Option<i64> {
        self.cpus.get(cpu?)?.current_tid
    }

    /// The thread running on `cpu`, if known, and its index in `tids`.
    #[inline]
    fn running_slot(&self, cpu: Option<i64>) -> Option<(i64, usize)> {
        let c = self.cpus.get(cpu?)?;
        Some((c.current_tid?, c.current))
    }

    fn check_prio(&mut self, ts: i64, tid: i64, prio: i64, l: &mut impl Listener) {
        if let Some(p) = self.tids.get_mut(&tid) {
            prio_seen(p, tid, ts, prio, l);
        }
    }

    /// The process whose descriptors thread `tid` uses.
    fn parent_of(&self, tid: i64) -> i64 {
        match self.tids.get(&tid).and_then(|p| p.pid) {
            Some(pid) if pid != tid && self.tids.contains_key(&pid) => pid,
            _ => tid,
        }
    }

    /// [`State::parent_of`] of thread `tid`, at index `i` of `tids`: the
    /// index of its process.
    fn parent_slot(&self, tid: i64, i: usize) -> usize {
        match self.tids[i].pid {
            Some(pid) if pid != tid => self.tids.get_index_of(&pid).unwrap_or(i),
            _ => i,
        }
    }

    fn close_fd(&mut self, tid: i64, fd: i64, l: &mut impl Listener) {
        let parent = self.parent_of(tid);
        l.close_fd(parent, fd);
        self.proc(parent).fds.remove(&fd);
    }

    /// `net_dev_xmit` during a write system call: the descriptor written
    /// to, if of unknown type, is taken for a network one.
    fn net_send(&mut self, cpu: Option<i64>) {
        let Some((tid, i)) = self.running_slot(cpu) else {
            return;
        };
        let Some(call) = &self.tids[i].syscall else {
            return;
        };
        if IoCall::of(&call.name) != IoCall::Write {
            return;
        }
        let fd = call.io.as_ref().and_then(|rq| rq.fd);
        let parent = self.parent_of(tid);
        if let Some(f) = fd.and_then(|fd| self.proc(parent).fds.get_mut(&fd)) {
            if f.kind == FdType::Unknown {
                f.kind = FdType::MaybeNet;
            }
        }
    }

    /// Thread `tid`'s process is `pid` (from a `pid` context), unless the
    /// model knew it.
    fn set_pid(&mut self, tid: i64, pid: i64) {
        let p = self.proc(tid);
        if p.pid.is_none() {
            p.pid = Some(pid);
            if pid != tid {
                let (comm, prio) = (p.comm.clone(), p.prio);
                self.tids.insert(
                    pid,
                    Proc {
                        tid: pid,
                        pid: Some(pid),
                        comm,
                        prio,
                        ..Proc::default()
                    },
                );
            }
        }
    }

    /// An I/O system call entry: the request it starts (lttng-analyses'
    /// I/O state provider).
    fn io_entry(
        &mut self,
        (tid, i): (i64, usize),
        call_name: &Arc<str>,
        a: &IoArgs,
        ts: i64,
        l: &mut impl Listener,
    ) {
        if a.connect {
            // The address of an AF_INET connect names the descriptor.
            if a.family == Some(AF_INET) {
                if let Some(fd) = a.fd {
                    let parent = self.parent_of(tid);
                    let fds = &mut proc_in(&mut self.tids, parent).fds;
                    if let (Some(f), Some(addr)) = (fds.get_mut(&fd), &a.v4addr) {
                        f.filename = self.names.get(addr);
                    }
                    // (lttng-analyses tells the thread, not its process)
                    let p = &self.tids[&tid];
                    if p.fds.contains_key(&fd) {
                        l.update_fd(p, fd);
                    }
                }
            }
            return;
        }
        let rq = |op, fd| IoRq {
            op,
            name: Arc::clone(call_name),
            fd,
            opens: None,
            begin: ts,
            end: ts,
            errno: None,
            size: None,
        };
        let open = |f: Fd| IoRq {
            opens: Some(f),
            ..rq(IoOp::Open, None)
        };
        let cloexec = |f: Option<i64>| f.is_some_and(|f| f & O_CLOEXEC != 0);
        let io = match a.call {
            IoCall::Other => return,
            IoCall::Open => Some(open(Fd {
                filename: self.names.get(a.filename.as_deref().unwrap_or("unknown")),
                kind: FdType::Disk,
                cloexec: cloexec(a.flags),
            })),
            IoCall::Socket => Some(open(Fd {
                filename: self.names.get("socket"),
                kind: FdType::Net,
                cloexec: false,
            })),
            IoCall::Dup | IoCall::Dup2 | IoCall::Dup3 | IoCall::Fcntl => {
                let parent = self.parent_of(tid);
                if matches!(a.call, IoCall::Dup2 | IoCall::Dup3) {
                    if let Some(newfd) = a.newfd {
                        if self.tids[&parent].fds.contains_key(&newfd) {
                            self.close_fd(parent, newfd, l);
                        }
                    }
                }
                if a.call == IoCall::Fcntl && a.cmd != Some(0) {
                    None // only F_DUPFD opens a descriptor
                } else {
                    let old = match a.call {
                        IoCall::Dup => a.fildes,
                        IoCall::Fcntl => a.fd,
                        _ => a.oldfd,
                    };
                    let mut f = old
                        .and_then(|o| self.tids[&parent].fds.get(&o))
                        .cloned()
                        .unwrap_or_else(|| Fd::unknown(&mut self.names));
                    f.cloexec = a.call == IoCall::Dup3 && cloexec(a.flags);
                    Some(open(f))
                }
            }
            IoCall::Close => Some(rq(IoOp::Close, a.fd)),
            // lttng-analyses lists them as I/O calls but builds no request
            // for them (they are in neither its read nor its write list).
            IoCall::Unrequested => None,
            IoCall::Read => Some(rq(IoOp::Read, a.fd)),
            IoCall::Write => Some(rq(IoOp::Write, a.fd)),
            IoCall::Sync => Some(rq(IoOp::Sync, None)),
            IoCall::SyncFd => Some(rq(IoOp::Sync, a.fd)),
        };
        // The exit reads the descriptor's slot, here and in the listener:
        // asked for now, it arrives while other events are read.
        if let Some(fd) = io.as_ref().and_then(|r| r.fd) {
            let slot = self.parent_slot(tid, i);
            if let Some((&parent, p)) = self.tids.get_index(slot) {
                p.fds.prefetch(fd);
                l.io_rq_entry((parent, slot), fd);
            }
        }
        if let Some(call) = &mut self.tids[i].syscall {
            call.io = io;
        }
    }

    /// The exit of an I/O system call: new descriptors, the request's
    /// notification, a successful close.
    fn io_exit(
        &mut self,
        (tid, i): (i64, usize),
        mut rq: IoRq,
        ts: i64,
        ret: i64,
        l: &mut impl Listener,
    ) {
        rq.end = ts;
        if ret < 0 {
            rq.errno = Some(-ret);
        } else if rq.op == IoOp::Open {
            rq.fd = Some(ret);
        } else if matches!(rq.op, IoOp::Read | IoOp::Write) {
            rq.size = Some(ret);
        }
        let parent = self.parent_slot(tid, i);
        if ret >= 0 {
            if let Some(fd) = rq.fd {
                let (opens, names) = (&rq.opens, &mut self.names);
                let fds = &mut self.tids[parent].fds;
                if fds.add(fd, || opens.clone().unwrap_or_else(|| Fd::unknown(names))) {
                    l.create_fd(&self.tids[parent], fd);
                }
            }
        }
        l.io_rq_exit((&self.tids[i], i), (&self.tids[parent], parent), &rq);
        if rq.op == IoOp::Close && ret == 0 {
            if let Some(fd) = rq.fd {
                self.close_fd(tid, fd, l);
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
                // (one lookup per thread: `check_prio` of each, in order;
                // none for the thread leaving when the CPU's was it)
                let prev = match self.running_slot(Some(cpu)) {
                    Some((t, i)) if t == prev_tid => i,
                    _ => slot_in(&mut self.tids, prev_tid),
                };
                prio_seen(&mut self.tids[prev], prev_tid, ts, *prev_prio, l);
                let n = slot_in(&mut self.tids, next_tid);
                let c = self.cpu(cpu);
                c.current_tid = (next_tid != 0).then_some(next_tid);
                c.current = n;
                let next = &mut self.tids[n];
                if !next_comm.is(&next.comm) {
                    next.comm = next_comm.to_str().into_owned();
                }
                prio_seen(next, next_tid, ts, *next_prio, l);
                let wakee = &self.tids[n];
                let waker = wakee.last_waker.and_then(|w| self.tids.get(&w));
                l.sched_switch(&Switch {
                    ts,
                    cpu,
                    prev_tid,
                    prev_comm: *prev_comm,
                    next_tid,
                    next_comm: *next_comm,
                    wakee,
                    waker,
                });
                let wakee = &mut self.tids[n];
                wakee.last_wakeup = None;
                wakee.last_waker = None;
            }
            Kind::MigrateTask { comm, tid, prio } => {
                let Some(cpu) = ev.cpu else { return };
                let p = self.tids.entry(*tid).or_insert_with(|| Proc {
                    tid: *tid,
                    comm: comm.to_str().into_owned(),
                    ..Proc::default()
                });
                l.migrate(p, cpu);
                prio_seen(p, *tid, ts, *prio, l);
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
                let waker = self.running(Some(cpu));
                let p = self.tids.entry(*tid).or_insert_with(|| Proc::new(*tid));
                prio_seen(p, *tid, ts, *prio, l);
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
                let mut child = Proc {
                    tid: *child_tid,
                    pid: *child_pid,
                    comm: child_comm.to_string(),
                    ..Proc::default()
                };
                // The child inherits the parent's descriptors.
                child.fds = parent.fds.clone();
                for (fd, _) in child.fds.ordered() {
                    l.create_fd(&child, fd);
                }
                self.tids.insert(*child_tid, child);
            }
            Kind::Exec { tid, procname } => {
                let p = self.tids.entry(*tid).or_insert_with(|| Proc::new(*tid));
                if let Some(n) = procname {
                    p.comm = n.to_string();
                }
                // Close-on-exec descriptors of the thread itself.
                let closing: Vec<i64> = p
                    .fds
                    .ordered()
                    .into_iter()
                    .filter(|f| f.1.cloexec)
                    .map(|f| f.0)
                    .collect();
                for fd in closing {
                    l.close_fd(*tid, fd);
                    p.fds.remove(&fd);
                }
            }
            Kind::PiSetprio { tid, newprio } => self.check_prio(ts, *tid, *newprio, l),
            Kind::SyscallEntry { name, ctx_pid, io } => {
                if let Some((tid, i)) = self.running_slot(ev.cpu) {
                    self.tids[i].syscall = Some(Syscall {
                        name: Arc::clone(name),
                        begin: ts,
                        end: ts,
                        ret: None,
                        io: None,
                    });
                    // A `pid` context tells the thread's process.
                    if let Some(pid) = *ctx_pid {
                        self.set_pid(tid, pid);
                    }
                    match io {
                        Some(IoIn::Args(args)) => self.io_entry((tid, i), name, args, ts, l),
                        Some(IoIn::Fd(call, fd)) => {
                            let args = IoArgs {
                                call: *call,
                                fd: *fd,
                                ..IoArgs::default()
                            };
                            self.io_entry((tid, i), name, &args, ts, l)
                        }
                        None => {}
                    }
                }
            }
            Kind::SyscallExit { ret } => {
                let Some((tid, i)) = self.running_slot(ev.cpu) else {
                    return;
                };
                let p = &mut self.tids[i];
                if let Some(mut call) = p.syscall.take() {
                    call.end = ts;
                    call.ret = *ret;
                    l.syscall_exit(p, &call, ev.cpu.unwrap_or(0));
                    if let (Some(mut rq), Some(ret)) = (call.io, *ret) {
                        rq.name = call.name;
                        self.io_exit((tid, i), rq, ts, ret, l);
                    }
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
                l.irq_entry(*irq, *name);
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
                let q = self.cpu(cpu).softirqs.entry(*vec);
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
                let q = self.cpu(cpu).softirqs.entry(*vec);
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
                let Some(q) = self.cpu(cpu).softirqs.get_mut(*vec) else {
                    return;
                };
                if q.is_empty() {
                    return;
                }
                let mut s = q.remove(0);
                s.end = ts;
                l.softirq_exit(&s);
            }
            Kind::Cpu => {
                // (as every IRQ event does)
                if let Some(cpu) = ev.cpu {
                    self.cpu(cpu);
                }
            }
            Kind::PageAlloc => {
                self.page_count += 1;
                if let Some((_, i)) = self.running_slot(ev.cpu) {
                    l.page_alloc(&self.tids[i], ev.cpu.unwrap_or(0));
                }
            }
            Kind::PageFree => {
                if self.page_count == 0 {
                    return;
                }
                self.page_count -= 1;
                if let Some((_, i)) = self.running_slot(ev.cpu) {
                    l.page_free(&self.tids[i], ev.cpu.unwrap_or(0));
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
                    // The thread's descriptors are its process's.
                    let moved = self.proc(*tid).fds.take();
                    let parent = self.proc(*pid);
                    for (fd, f) in moved {
                        match parent.fds.get_mut(&fd) {
                            // (lttng-analyses' best effort to fix the name)
                            Some(have) if have.filename.is_empty() => have.filename = f.filename,
                            Some(_) => {}
                            None => {
                                parent.fds.add(fd, || f);
                            }
                        }
                    }
                    l.create_parent_proc(&self.tids[tid], &self.tids[pid]);
                }
            }
            Kind::StatedumpFd {
                pid,
                fd,
                flags,
                filename,
            } => {
                let p = self.tids.entry(*pid).or_insert_with(|| Proc {
                    tid: *pid,
                    pid: Some(*pid),
                    ..Proc::default()
                });
                let filename = self.names.get(filename);
                if let Some(f) = p.fds.get_mut(fd) {
                    f.filename = filename;
                    l.update_fd(p, *fd);
                } else {
                    p.fds.add(*fd, || Fd {
                        filename,
                        kind: FdType::Unknown,
                        cloexec: flags & O_CLOEXEC != 0,
                    });
                    l.create_fd(p, *fd);
                }
            }
            Kind::StatedumpBlockDevice { dev, diskname } => {
                let d = self.disks.entry(*dev).or_default();
                if d.name.is_none() {
                    d.name = Some(diskname.to_string());
                }
                l.block_device(*dev, diskname);
            }
            Kind::Net { send, name, len } => {
                l.net(*send, name, *len);
                if *send {
                    self.net_send(ev.cpu);
                }
            }
            Kind::BlockBioRemap {
                dev,
                sector,
                old_dev,
                old_sector,
            } => {
                let r = Remap {
                    dev: *dev,
                    sector: *sector,
                    old_dev: *old_dev,
                };
                // A remap of a remapped bio moves it further.
                let old = *old_sector;
                match self
                    .remaps
                    .iter_mut()
                    .find(|r| r.dev == *old_dev && r.sector == old)
                {
                    Some(m) => {
                        m.dev = r.dev;
                        m.sector = r.sector;
                    }
                    None => self.remaps.push(r),
                }
            }
            Kind::BlockBioBackmerge { dev, sector } => {
                self.remaps
                    .retain(|r| !(r.dev == *dev && r.sector == *sector));
            }
            Kind::BlockRqIssue {
                dev,
                sector,
                nr_sector,
                tid,
                rwbs,
            } => {
                if *nr_sector == 0 {
                    return;
                }
                let dev = self
                    .remaps
                    .iter()
                    .find(|r| r.dev == *dev && r.sector == *sector)
                    .map_or(*dev, |r| r.old_dev);
                self.disks.entry(dev).or_default().pending.insert(
                    *sector,
                    BlockRq {
                        begin: ts,
                        end: ts,
                        tid: *tid,
                        // an odd rwbs is a write
                        write: rwbs % 2 != 0,
                        sector: *sector,
                        nr_sector: *nr_sector,
                    },
                );
            }
            Kind::BlockRqComplete {
                dev,
                sector,
                nr_sector,
            } => {
                if *nr_sector == 0 {
                    return;
                }
                let mut dev = *dev;
                if let Some(i) = self
                    .remaps
                    .iter()
                    .position(|r| r.dev == dev && r.sector == *sector)
                {
                    dev = self.remaps.remove(i).old_dev;
                }
                let disk = self.disks.entry(dev).or_default();
                // Only a completion of the same sectors as an issue counts.
                if disk
                    .pending
                    .get(sector)
                    .is_none_or(|r| r.nr_sector != *nr_sector)
                {
                    return;
                }
                let Some(mut rq) = disk.pending.remove(sector) else {
                    return;
                };
                rq.end = ts;
                l.block_rq_complete(&rq, self.tids.get(&rq.tid), dev, &self.disks[&dev]);
            }
            Kind::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(name: &str) -> Fd {
        Fd {
            filename: name.into(),
            kind: FdType::Disk,
            cloexec: false,
        }
    }

    /// Descriptors held by number and in the map keep one order, that in
    /// which they were added (one closed and opened again goes last), and
    /// adding one that is there changes nothing.
    #[test]
    fn descriptors_keep_the_order_they_appeared_in() {
        let far = Fds::DENSE + 7;
        let mut fds = Fds::default();
        for (n, name) in [(5, "a"), (far, "b"), (3, "c"), (-1, "d"), (0, "e")] {
            assert!(fds.add(n, || fd(name)));
        }
        assert!(!fds.add(3, || fd("x")));
        assert_eq!(fds.remove(&5).map(|f| f.filename), Some("a".into()));
        assert_eq!(fds.remove(&5), None);
        assert!(!fds.contains_key(&5));
        assert!(fds.add(5, || fd("f")));
        fds.get_mut(&far).unwrap().kind = FdType::Net;
        let names = |v: Vec<(i64, &Fd)>| -> Vec<(i64, String)> {
            v.into_iter()
                .map(|(n, f)| (n, f.filename.to_string()))
                .collect()
        };
        let want = vec![
            (far, "b".to_string()),
            (3, "c".into()),
            (-1, "d".into()),
            (0, "e".into()),
            (5, "f".into()),
        ];
        assert_eq!(names(fds.ordered()), want);
        assert_eq!(fds.get(&far).map(|f| f.kind), Some(FdType::Net));
        let taken: Vec<(i64, String)> = fds
            .take()
            .into_iter()
            .map(|(n, f)| (n, f.filename.to_string()))
            .collect();
        assert_eq!(taken, want);
        assert!(fds.ordered().is_empty() && !fds.contains_key(&3) && !fds.contains_key(&far));
    }

    /// A file name asked for again is the same allocation; past
    /// `Names::MAX` names, new ones are right but not held.
    #[test]
    fn file_names_are_shared() {
        let mut n = Names::default();
        let a = n.get("/etc/passwd");
        assert!(Arc::ptr_eq(&a, &n.get("/etc/passwd")) && &*a == "/etc/passwd");
        for i in 0..Names::MAX {
            n.get(&i.to_string());
        }
        let (c, d) = (n.get("late"), n.get("late"));
        assert!(&*c == "late" && &*d == "late" && !Arc::ptr_eq(&c, &d));
        assert!(Arc::ptr_eq(&a, &n.get("/etc/passwd")));
    }

    /// `get_or_add` gives the value there, or adds one last, near and far.
    #[test]
    fn get_or_add_keeps_what_is_there() {
        let far = FdTable::<Vec<i64>>::DENSE;
        let mut t = FdTable::<Vec<i64>>::default();
        for n in [far, 2, far, 2] {
            let (v, added) = t.get_or_add(n, Vec::new);
            assert_eq!(added, v.is_empty());
            v.push(n);
        }
        let (v, added) = t.get_or_add(0, || vec![9]);
        assert!(added && *v == [9]);
        let order: Vec<(i64, Vec<i64>)> = t
            .ordered()
            .into_iter()
            .map(|(n, v)| (n, v.clone()))
            .collect();
        assert_eq!(
            order,
            [(far, vec![far, far]), (2, vec![2, 2]), (0, vec![9])]
        );
    }
}
