//! The kernel events the analyses understand, read by name from a
//! [`StreamCursor`]'s current event.
//!
//! [`Decoder::decode`] classifies an event by its class name once per
//! (trace, stream class, event class) and then reads only the fields that
//! kind needs. An event whose required fields are missing or not integers
//! becomes [`Kind::Other`]: it still moves time forward, but no state.

use std::borrow::Cow;
use std::sync::Arc;

use reef_ctf::access::{FieldLoc, Located, RawBody, RawPlace, RawText};
use reef_ctf::{EnvValue, Field, FieldVal, Scopes, StreamCursor, Trace};
use rustc_hash::FxHashMap as HashMap;

/// Text as recorded (a thread name), checked as UTF-8 only when it is
/// kept: most events repeat a name the model already has.
///
/// A text of up to [`Text::SHORT`] bytes (a kernel thread's name has at
/// most 15) is held in the value itself, not as a pointer into the
/// trace: when events are made on a decoding thread, the model's thread
/// then reads it from the event it reads anyway rather than from trace
/// bytes that only the other CPU's cache holds (that miss was 8 % of
/// `reef iolog`'s time on a 10 M-event trace).
#[derive(Clone, Copy)]
pub struct Text<'a>(Held<'a>);

#[derive(Clone, Copy)]
enum Held<'a> {
    Short(u8, [u8; Text::SHORT]),
    Long(&'a [u8]),
}

impl<'a> Text<'a> {
    /// The longest text held in the value.
    pub const SHORT: usize = 22;

    /// The text of `bytes`.
    #[inline(always)]
    pub fn new(bytes: &'a [u8]) -> Self {
        if bytes.len() <= Self::SHORT {
            let mut b = [0; Self::SHORT];
            b[..bytes.len()].copy_from_slice(bytes);
            Text(Held::Short(bytes.len() as u8, b))
        } else {
            Text(Held::Long(bytes))
        }
    }

    /// Its bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Held::Short(n, b) => &b[..*n as usize],
            Held::Long(b) => b,
        }
    }

    /// The text (invalid UTF-8 replaced).
    pub fn to_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.bytes())
    }

    /// Whether it reads `s`.
    #[inline(always)]
    pub fn is(&self, s: &str) -> bool {
        self.bytes() == s.as_bytes()
    }
}

impl PartialEq for Text<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.bytes() == o.bytes()
    }
}

impl Eq for Text<'_> {}

impl std::fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Text({:?})", self.to_str())
    }
}

/// One event as the kernel model sees it: its time, the CPU it was
/// recorded on (the `cpu_id` packet context of LTTng kernel streams), and
/// what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    /// Nanoseconds from the clock's origin (the Epoch for LTTng).
    pub ts: i64,
    pub cpu: Option<i64>,
    pub kind: Kind<'a>,
}

impl Event<'_> {
    /// Whether dropping it may free memory (a kind not listed here as
    /// holding none is taken to).
    pub fn may_own(&self) -> bool {
        let owned = |c: &Cow<str>| matches!(c, Cow::Owned(_));
        match &self.kind {
            Kind::SchedSwitch { .. }
            | Kind::MigrateTask { .. }
            | Kind::Wakeup { .. }
            | Kind::PiSetprio { .. }
            | Kind::SyscallEntry {
                io: None | Some(IoIn::Fd(..)),
                ..
            }
            | Kind::SyscallExit { .. }
            | Kind::IrqEntry { .. }
            | Kind::IrqExit { .. }
            | Kind::SoftirqRaise { .. }
            | Kind::SoftirqEntry { .. }
            | Kind::SoftirqExit { .. }
            | Kind::PageAlloc
            | Kind::PageFree
            | Kind::BlockRqIssue { .. }
            | Kind::BlockRqComplete { .. }
            | Kind::BlockBioRemap { .. }
            | Kind::BlockBioBackmerge { .. }
            | Kind::Cpu
            | Kind::Other => false,
            Kind::Net { name, .. } => owned(name),
            _ => true,
        }
    }
}

/// What an event says, for the events that change the kernel model.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind<'a> {
    SchedSwitch {
        prev_comm: Text<'a>,
        prev_tid: i64,
        prev_prio: i64,
        next_comm: Text<'a>,
        next_tid: i64,
        next_prio: i64,
    },
    MigrateTask {
        comm: Text<'a>,
        tid: i64,
        prio: i64,
    },
    /// `sched_wakeup`, `sched_wakeup_new` or `sched_waking`; `prio` is
    /// already corrected for lttng-modules < 2.7.1, which recorded it with
    /// a +100 offset.
    Wakeup {
        tid: i64,
        prio: i64,
        target_cpu: i64,
    },
    Fork {
        parent_pid: i64,
        parent_comm: Cow<'a, str>,
        child_tid: i64,
        /// `None`: not recorded (ftrace).
        child_pid: Option<i64>,
        child_comm: Cow<'a, str>,
    },
    Exec {
        tid: i64,
        /// The `procname` context, when the trace has it.
        procname: Option<Cow<'a, str>>,
    },
    PiSetprio {
        tid: i64,
        newprio: i64,
    },
    /// `syscall_entry_NAME` or `sys_NAME`: `name` is NAME (one shared
    /// string per event class, so that the model keeps it without
    /// copying); `io` holds the arguments of the I/O system calls
    /// lttng-analyses tracks.
    SyscallEntry {
        name: &'a Arc<str>,
        /// The `pid` context (not payload) field of an I/O call's event,
        /// when the trace has one: it tells the thread's process.
        ctx_pid: Option<i64>,
        io: Option<IoIn<'a>>,
    },
    /// `syscall_exit_NAME` or `exit_syscall`.
    SyscallExit {
        ret: Option<i64>,
    },
    IrqEntry {
        irq: i64,
        name: Text<'a>,
    },
    IrqExit {
        irq: i64,
    },
    SoftirqRaise {
        vec: i64,
    },
    SoftirqEntry {
        vec: i64,
    },
    SoftirqExit {
        vec: i64,
    },
    /// `mm_page_alloc` or `kmem_mm_page_alloc`.
    PageAlloc,
    /// `mm_page_free` or `kmem_mm_page_free`.
    PageFree,
    StatedumpProcess {
        tid: i64,
        pid: i64,
        name: Cow<'a, str>,
        prio: Option<i64>,
    },
    /// `lttng_statedump_file_descriptor`.
    StatedumpFd {
        pid: i64,
        fd: i64,
        flags: i64,
        filename: Cow<'a, str>,
    },
    /// `lttng_statedump_block_device`.
    StatedumpBlockDevice {
        dev: i64,
        diskname: Cow<'a, str>,
    },
    /// `net_dev_xmit` (`send`) or `netif_receive_skb`: `len` bytes on
    /// interface `name`.
    Net {
        send: bool,
        name: Cow<'a, str>,
        len: i64,
    },
    BlockRqIssue {
        dev: i64,
        sector: i64,
        nr_sector: i64,
        tid: i64,
        rwbs: i64,
    },
    BlockRqComplete {
        dev: i64,
        sector: i64,
        nr_sector: i64,
    },
    BlockBioRemap {
        dev: i64,
        sector: i64,
        old_dev: i64,
        old_sector: i64,
    },
    BlockBioBackmerge {
        dev: i64,
        sector: i64,
    },
    /// An IRQ event, read for its CPU alone ([`Interest::irq_cpus`]).
    Cpu,
    Other,
}

/// The arguments of an I/O system call entry, as its event holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum IoIn<'a> {
    /// A call that the model reads for its descriptor alone (read, write,
    /// close, sync, socket and those it builds no request for), held in
    /// the event: made on the decoding thread, a box would be read from
    /// memory only that CPU's cache holds (that first read was 65 % of
    /// `State::io_entry`'s samples on a 10 M-event trace).
    Fd(IoCall, Option<i64>),
    /// The others (open, dup, fcntl, connect).
    Args(Box<IoArgs<'a>>),
}

/// The arguments of an I/O system call entry that the model uses (those
/// the event has; which ones depends on the call).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoArgs<'a> {
    pub fd: Option<i64>,
    /// `open`'s and `openat`'s path.
    pub filename: Option<Cow<'a, str>>,
    /// `connect`'s IPv4 address as `a.b.c.d:port`, when recorded as an
    /// integer (lttng-modules < 2.6).
    pub v4addr: Option<String>,
    pub flags: Option<i64>,
    /// `dup`'s argument.
    pub fildes: Option<i64>,
    pub oldfd: Option<i64>,
    pub newfd: Option<i64>,
    /// `fcntl`'s command.
    pub cmd: Option<i64>,
    /// `connect`'s address family.
    pub family: Option<i64>,
    /// This is `syscall_entry_connect`.
    pub connect: bool,
    /// Which I/O call this is (found once per event class).
    pub call: IoCall,
}

/// The I/O system calls lttng-analyses 0.6.1 tells apart ([`IO_SYSCALLS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoCall {
    /// `open`, `openat`.
    Open,
    Socket,
    Dup,
    Dup2,
    Dup3,
    Fcntl,
    Close,
    /// One of its read calls (`read`, `recvmsg`, `readv`, ...).
    Read,
    /// One of its write calls (`write`, `sendmsg`, `writev`, ...).
    Write,
    /// `sync` (on no descriptor).
    Sync,
    /// `fsync`, `fdatasync`, `sync_file_range`.
    SyncFd,
    /// `splice`, `sendfile64`: I/O calls for which it builds no request.
    Unrequested,
    /// Not one of them (`connect`, for one).
    #[default]
    Other,
}

impl IoCall {
    /// The kind of the system call `name`.
    pub fn of(name: &str) -> IoCall {
        const READ: &[&str] = &[
            "read", "recvmsg", "recvfrom", "readv", "pread", "pread64", "preadv",
        ];
        const WRITE: &[&str] = &[
            "write", "sendmsg", "sendto", "writev", "pwrite", "pwrite64", "pwritev",
        ];
        match name {
            "open" | "openat" => IoCall::Open,
            "socket" => IoCall::Socket,
            "dup" => IoCall::Dup,
            "dup2" => IoCall::Dup2,
            "dup3" => IoCall::Dup3,
            "fcntl" => IoCall::Fcntl,
            "close" => IoCall::Close,
            "sync" => IoCall::Sync,
            "fsync" | "fdatasync" | "sync_file_range" => IoCall::SyncFd,
            "splice" | "sendfile64" => IoCall::Unrequested,
            n if READ.contains(&n) => IoCall::Read,
            n if WRITE.contains(&n) => IoCall::Write,
            _ => IoCall::Other,
        }
    }
}

/// The system calls lttng-analyses 0.6.1 treats as I/O (its names).
pub const IO_SYSCALLS: &[&str] = &[
    "open",
    "openat",
    "socket",
    "fcntl",
    "dup",
    "dup2",
    "dup3",
    "close",
    "read",
    "recvmsg",
    "recvfrom",
    "readv",
    "pread",
    "pread64",
    "preadv",
    "write",
    "sendmsg",
    "sendto",
    "writev",
    "pwrite",
    "pwrite64",
    "pwritev",
    "sync",
    "sync_file_range",
    "fsync",
    "fdatasync",
    "splice",
    "sendfile64",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    SchedSwitch,
    MigrateTask,
    /// The flag: subtract 100 from `prio` (lttng-modules < 2.7.1).
    Wakeup(bool),
    /// The flag: the child's process id is recorded (not by ftrace).
    Fork(bool),
    Exec,
    PiSetprio,
    /// A system call entry (see [`Call`]).
    SyscallEntry(Call),
    SyscallExit,
    IrqEntry,
    IrqExit,
    SoftirqRaise,
    SoftirqEntry,
    SoftirqExit,
    PageAlloc,
    PageFree,
    StatedumpProcess,
    StatedumpFd,
    StatedumpBlockDevice,
    /// `true` for `net_dev_xmit`.
    Net(bool),
    BlockRqIssue,
    BlockRqComplete,
    BlockBioRemap,
    BlockBioBackmerge,
    /// An IRQ class the model reads for its CPU alone
    /// ([`Interest::irq_cpus`]).
    Cpu,
    Other,
}

impl Class {
    fn is_irq(self) -> bool {
        matches!(
            self,
            Class::IrqEntry
                | Class::IrqExit
                | Class::SoftirqRaise
                | Class::SoftirqEntry
                | Class::SoftirqExit
        )
    }
}

/// What a system call entry's class says of its call, found once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call {
    /// Byte length of the prefix before the system call's name.
    skip: u8,
    /// An I/O call (or `syscall_entry_connect`): its arguments are read
    /// (for a model that follows [`Interest::io`]).
    io: bool,
    /// An I/O call (not `connect`): its `pid` context is read.
    pid: bool,
    /// `syscall_entry_connect`.
    connect: bool,
    /// An `open` or `openat` (its `filename` is read).
    opens: bool,
    /// Which I/O call.
    kind: IoCall,
}

impl Call {
    fn class(name: &str, skip: u8) -> Class {
        let call = &name[usize::from(skip)..];
        let connect = name == "syscall_entry_connect";
        Class::SyscallEntry(Call {
            skip,
            io: connect || IO_SYSCALLS.contains(&call),
            pid: IO_SYSCALLS.contains(&call),
            connect,
            opens: name.ends_with("open") || name.ends_with("openat"),
            kind: IoCall::of(call),
        })
    }
}

/// Whether `trace` was read from ftrace (a trace-cmd `.dat` file): its
/// events keep ftrace's names (`sys_enter_read`, `prev_pid`), which
/// [`classify`] and [`ftrace_field`] map onto the model's.
fn is_ftrace(trace: &Trace) -> bool {
    matches!(trace.meta().env_get("tracer_name"), Some(EnvValue::Str(s)) if s == "ftrace")
}

/// The name ftrace gives field `f` (an index into [`FIELDS`]); `None` for
/// a field its events do not have (ftrace's `pid`, `child_pid` and
/// `parent_pid` are thread ids: a thread's process id is not recorded).
fn ftrace_field(f: usize) -> Option<&'static str> {
    Some(match f {
        PREV_TID => "prev_pid",
        NEXT_TID => "next_pid",
        TID => "pid",
        CHILD_TID => "child_pid",
        CHILD_PID | PID | IO_CTX_PID | IO_PAYLOAD_PID => return None,
        _ => FIELDS[f].0,
    })
}

fn classify(name: &str, ftrace: bool, old_prio: impl FnOnce() -> bool) -> Class {
    if ftrace {
        // syscalls:sys_enter_NAME / sys_exit_NAME; raw_syscalls' sys_enter
        // and sys_exit name no call (only its number): not followed.
        if let Some(call) = name.strip_prefix("sys_enter_") {
            if !call.is_empty() {
                return Call::class(name, 10);
            }
        }
        if name.starts_with("sys_exit_") {
            return Class::SyscallExit;
        }
        if name == "sys_enter" || name == "sys_exit" {
            return Class::Other;
        }
    }
    match name {
        "sched_switch" => Class::SchedSwitch,
        "sched_migrate_task" => Class::MigrateTask,
        "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => Class::Wakeup(old_prio()),
        "sched_process_fork" => Class::Fork(!ftrace),
        "sched_process_exec" => Class::Exec,
        "sched_pi_setprio" => Class::PiSetprio,
        "irq_handler_entry" => Class::IrqEntry,
        "irq_handler_exit" => Class::IrqExit,
        "softirq_raise" => Class::SoftirqRaise,
        "softirq_entry" => Class::SoftirqEntry,
        "softirq_exit" => Class::SoftirqExit,
        "mm_page_alloc" | "kmem_mm_page_alloc" => Class::PageAlloc,
        "mm_page_free" | "kmem_mm_page_free" => Class::PageFree,
        "lttng_statedump_process_state" => Class::StatedumpProcess,
        "lttng_statedump_file_descriptor" => Class::StatedumpFd,
        "lttng_statedump_block_device" => Class::StatedumpBlockDevice,
        "net_dev_xmit" => Class::Net(true),
        "netif_receive_skb" => Class::Net(false),
        "block_rq_issue" => Class::BlockRqIssue,
        "block_rq_complete" => Class::BlockRqComplete,
        "block_bio_remap" => Class::BlockBioRemap,
        "block_bio_backmerge" => Class::BlockBioBackmerge,
        n if n.starts_with("sys_") => Call::class(n, 4),
        n if n.starts_with("syscall_entry_") => Call::class(n, 14),
        n if n.starts_with("exit_syscall") || n.starts_with("syscall_exit_") => Class::SyscallExit,
        _ => Class::Other,
    }
}

/// What the kernel traces in `traces` lack of the events an analysis
/// with `interest` needs, each said with the option that records it:
/// without them it would print empty tables and say nothing.
pub fn missing_events(traces: &[Arc<Trace>], interest: Interest) -> Vec<String> {
    let kernel: Vec<&Arc<Trace>> = traces
        .iter()
        .filter(|t| matches!(t.meta().env_get("domain"), Some(EnvValue::Str(d)) if d == "kernel"))
        .collect();
    if kernel.is_empty() {
        return Vec::new();
    }
    let ftrace = kernel.iter().any(|t| is_ftrace(t));
    let mut classes = std::collections::HashSet::new();
    let mut names = std::collections::HashSet::new();
    for t in &kernel {
        let ft = is_ftrace(t);
        for sc in &t.meta().streams {
            for ec in &sc.events {
                names.insert(ec.name.as_str());
                classes.insert(std::mem::discriminant(&classify(&ec.name, ft, || false)));
            }
        }
    }
    let has = |c: Class| classes.contains(&std::mem::discriminant(&c));
    let how = |lttng: &str, ft: &str| {
        if ftrace {
            format!("trace-cmd record {ft}, or those events in tracefs' set_event")
        } else {
            format!("lttng enable-event --kernel {lttng}")
        }
    };
    let mut out = Vec::new();
    if interest.threads && !has(Class::SchedSwitch) {
        out.push(format!(
            "the trace holds no sched_switch event: no thread is seen running (record it: {})",
            how("sched_switch", "-e sched:sched_switch")
        ));
    }
    let call = Class::SyscallEntry(Call {
        skip: 0,
        io: false,
        pid: false,
        connect: false,
        opens: false,
        kind: IoCall::of(""),
    });
    if interest.syscalls && !has(call) {
        let raw = ftrace && names.contains("sys_enter");
        out.push(format!(
            "the trace holds no system call entry{} (record them: {})",
            if raw {
                " the model can name: raw_syscalls' sys_enter and sys_exit carry only a number"
            } else {
                ""
            },
            how("--syscall --all", "-e syscalls")
        ));
    }
    if interest.irqs && !has(Class::IrqEntry) && !has(Class::SoftirqEntry) {
        out.push(format!(
            "the trace holds no IRQ event (record them: {})",
            how("'irq_*'", "-e irq")
        ));
    }
    if interest.pages && !has(Class::PageAlloc) {
        out.push(format!(
            "the trace holds no page allocation event (record them: {})",
            how(
                "'kmem_mm_page_*'",
                "-e kmem:mm_page_alloc -e kmem:mm_page_free"
            )
        ));
    }
    out
}

/// The events an analysis needs the model to follow: the model reads the
/// others as [`Kind::Other`] (they still move time forward). Leaving out a
/// group must change nothing the analysis reports: see each group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    /// Switches, forks, execs and the state dump of processes: which
    /// thread runs on each CPU, its name and its process. Without them no
    /// thread ever runs, so nothing is attributed to one (the IRQ
    /// analyses, which speak of CPUs and interrupts alone).
    pub threads: bool,
    /// Wakeups, migrations and priority changes: the model's priorities
    /// and wakeups (for latencies), and threads first seen there. An
    /// analysis leaves them out when it reads no priority and no wakeup,
    /// and only threads that ran: those the running thread's name and
    /// process come from a switch, a fork, an exec or the state dump,
    /// whatever a wakeup or migration created before. (The I/O analyses
    /// keep them: a process that a wakeup alone made known changes whose
    /// descriptors its threads use.)
    pub wakeups: bool,
    /// System call entries and exits: they make the model's system calls
    /// and I/O requests. An I/O call whose event has a `pid` context is
    /// always followed with `threads` (it tells a thread's process).
    pub syscalls: bool,
    /// Hard and soft IRQs: they make the model's IRQs, and a CPU the model
    /// did not know (which only its number of CPUs shows).
    pub irqs: bool,
    /// Page allocations and frees: they make the model's page count.
    pub pages: bool,
    /// The I/O calls' arguments (with `syscalls`), which make the model's
    /// I/O requests and descriptors, and the events of descriptors, disks,
    /// block requests and network devices (the I/O analyses). Without it,
    /// an I/O call's entry only tells its thread's process (a `pid`
    /// context).
    pub io: bool,
    /// Without `irqs`: IRQ events only for the CPU they make known (an
    /// analysis that counts the model's CPUs and no IRQ). Their classes
    /// are read as [`Kind::Cpu`] when the model would read their events
    /// (their fields present), else as [`Kind::Other`].
    pub irq_cpus: bool,
}

impl Interest {
    /// Every event the model knows.
    pub const ALL: Interest = Interest {
        threads: true,
        wakeups: true,
        syscalls: true,
        irqs: true,
        pages: true,
        io: true,
        irq_cpus: false,
    };
    /// Only the scheduler's events and the state dump of processes.
    pub const SCHED: Interest = Interest {
        threads: true,
        wakeups: true,
        ..Interest::NONE
    };
    /// Which thread runs, with no wakeup or priority (see
    /// [`Interest::wakeups`]).
    pub const THREADS: Interest = Interest {
        threads: true,
        ..Interest::NONE
    };
    /// No event at all: the groups an analysis needs are added to it.
    pub const NONE: Interest = Interest {
        threads: false,
        wakeups: false,
        syscalls: false,
        irqs: false,
        pages: false,
        io: false,
        irq_cpus: false,
    };

    /// Whether the model follows events of `class`.
    fn follows(&self, class: Class) -> bool {
        match class {
            Class::SchedSwitch | Class::Fork(_) | Class::Exec | Class::StatedumpProcess => {
                self.threads
            }
            Class::Wakeup(_) | Class::MigrateTask | Class::PiSetprio => self.wakeups,
            Class::SyscallEntry(..) | Class::SyscallExit => self.syscalls,
            Class::IrqEntry
            | Class::IrqExit
            | Class::SoftirqRaise
            | Class::SoftirqEntry
            | Class::SoftirqExit => self.irqs,
            Class::PageAlloc | Class::PageFree => self.pages,
            Class::StatedumpFd
            | Class::StatedumpBlockDevice
            | Class::Net(_)
            | Class::BlockRqIssue
            | Class::BlockRqComplete
            | Class::BlockBioRemap
            | Class::BlockBioBackmerge => self.io,
            Class::Cpu | Class::Other => true,
        }
    }
}

/// The empty call name of a class that is no system call entry (one
/// string for all: a kernel trace has hundreds of classes).
fn no_call() -> Arc<str> {
    static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from("")).clone()
}

/// Whether the trace was recorded by lttng-modules older than 2.7.1, whose
/// `sched_wak*` events carry the priority with a +100 offset. A trace with
/// no tracer version in its environment is taken as recent.
fn old_wakeup_prio(trace: &Trace) -> bool {
    let num = |k: &str| match trace.meta().env_get(k) {
        Some(EnvValue::Int(i)) => Some(*i),
        Some(EnvValue::Str(s)) => s.trim().parse().ok(),
        _ => None,
    };
    match (
        num("tracer_major"),
        num("tracer_minor"),
        num("tracer_patchlevel"),
    ) {
        (Some(a), Some(b), Some(c)) => (a, b, c) < (2, 7, 1),
        _ => false,
    }
}

/// The fields the kinds read, by index (the constants below), and the
/// scopes each is searched in.
const FIELDS: [(&str, Scopes); 43] = [
    ("prev_comm", Scopes::Any),
    ("prev_tid", Scopes::Any),
    ("prev_prio", Scopes::Any),
    ("next_comm", Scopes::Any),
    ("next_tid", Scopes::Any),
    ("next_prio", Scopes::Any),
    ("comm", Scopes::Any),
    ("tid", Scopes::Any),
    ("prio", Scopes::Any),
    ("target_cpu", Scopes::Any),
    ("parent_pid", Scopes::Any),
    ("parent_comm", Scopes::Any),
    ("child_tid", Scopes::Any),
    ("child_pid", Scopes::Any),
    ("child_comm", Scopes::Any),
    ("procname", Scopes::Any),
    ("newprio", Scopes::Any),
    ("ret", Scopes::Any),
    ("irq", Scopes::Any),
    ("name", Scopes::Any),
    ("vec", Scopes::Any),
    ("pid", Scopes::Any),
    ("cpu_id", Scopes::Any),
    ("fd", Scopes::Payload),
    ("flags", Scopes::Payload),
    ("fildes", Scopes::Payload),
    ("oldfd", Scopes::Payload),
    ("newfd", Scopes::Payload),
    ("cmd", Scopes::Payload),
    ("family", Scopes::Payload),
    ("pid", Scopes::Context),
    ("pid", Scopes::Payload),
    ("diskname", Scopes::Any),
    ("filename", Scopes::Payload),
    ("v4addr", Scopes::Payload),
    ("dport", Scopes::Payload),
    ("dev", Scopes::Payload),
    ("sector", Scopes::Payload),
    ("nr_sector", Scopes::Payload),
    ("rwbs", Scopes::Payload),
    ("old_dev", Scopes::Payload),
    ("old_sector", Scopes::Payload),
    ("len", Scopes::Payload),
];

const PREV_COMM: usize = 0;
const PREV_TID: usize = 1;
const PREV_PRIO: usize = 2;
const NEXT_COMM: usize = 3;
const NEXT_TID: usize = 4;
const NEXT_PRIO: usize = 5;
const COMM: usize = 6;
const TID: usize = 7;
const PRIO: usize = 8;
const TARGET_CPU: usize = 9;
const PARENT_PID: usize = 10;
const PARENT_COMM: usize = 11;
const CHILD_TID: usize = 12;
const CHILD_PID: usize = 13;
const CHILD_COMM: usize = 14;
const PROCNAME: usize = 15;
const NEWPRIO: usize = 16;
const RET: usize = 17;
const IRQ_OR_VEC: usize = 18;
const NAME: usize = 19;
const VEC: usize = 20;
const PID: usize = 21;
const CPU_ID: usize = 22;
const IO_FD: usize = 23;
const IO_FLAGS: usize = 24;
const IO_FILDES: usize = 25;
const IO_OLDFD: usize = 26;
const IO_NEWFD: usize = 27;
const IO_CMD: usize = 28;
const IO_FAMILY: usize = 29;
const IO_CTX_PID: usize = 30;
const IO_PAYLOAD_PID: usize = 31;
const DISKNAME: usize = 32;
const IO_FILENAME: usize = 33;
const IO_V4ADDR: usize = 34;
const IO_DPORT: usize = 35;
const DEV: usize = 36;
const SECTOR: usize = 37;
const NR_SECTOR: usize = 38;
const RWBS: usize = 39;
const OLD_DEV: usize = 40;
const OLD_SECTOR: usize = 41;
const LEN: usize = 42;

/// What [`kind`] reads an event's fields from.
trait Src<'c> {
    /// Field `f` as an integer.
    fn int(&mut self, f: usize) -> Option<i64>;
    /// Field `f` as text.
    fn text(&mut self, f: usize) -> Option<Cow<'c, str>>;
    /// Field `f` as text not checked yet.
    fn bytes(&mut self, f: usize) -> Option<Text<'c>>;
    /// Whether field `f` has a value.
    fn has(&mut self, f: usize) -> bool;
}

/// An event class as the model reads it: its kind, and where the fields
/// its kind reads lie, found once.
#[derive(Debug, Clone)]
pub struct ClassInfo {
    class: Class,
    /// Some field it reads is found only in the event's values (see
    /// [`ClassInfo::needs_values`]).
    needs_values: bool,
    /// Its CPU is the packet context's `cpu_id`.
    cpu_in_packet: bool,
    /// A system call entry's name without its prefix.
    call: Arc<str>,
    /// Where the fields it reads lie; `None` for a class whose fields the
    /// model reads none of (most of a kernel trace's hundreds of classes:
    /// they stay a few words each, not a kilobyte of empty places).
    places: Option<Box<Places>>,
}

/// Where the fields a class's kind reads lie.
#[derive(Debug, Clone)]
struct Places {
    /// By field index: its place in `locs` (`NO_FIELD`: the class has no
    /// such field).
    slot: [u8; FIELDS.len()],
    locs: Vec<FieldLoc>,
    /// By field index: where the field lies when it is a little-endian
    /// integer at a fixed place from the start of the body (most fields of
    /// the kernel's events), read with one load and two shifts.
    ints: [FastInt; FIELDS.len()],
    /// By field index: where the field lies when it is a text array at a
    /// fixed place from the start of the body (the kernel's thread
    /// names), read as a slice.
    texts: [Option<RawText>; FIELDS.len()],
}

/// The places of a class where no field was found.
static NO_PLACES: Places = Places {
    slot: [NO_FIELD; FIELDS.len()],
    locs: Vec::new(),
    ints: [FastInt::NONE; FIELDS.len()],
    texts: [None; FIELDS.len()],
};

const NO_FIELD: u8 = u8::MAX;

/// A little-endian integer field at a fixed place from the start of the
/// body, `64 - 8 × size` bits kept by shifts (`shift` 64: not such a
/// field).
#[derive(Debug, Clone, Copy)]
struct FastInt {
    place: RawPlace,
    shift: u8,
    signed: bool,
}

impl FastInt {
    const NONE: FastInt = FastInt {
        place: RawPlace::BODY,
        shift: 64,
        signed: false,
    };

    /// The value in `data` for the body at `b` (`None`: read it the
    /// general way).
    #[inline(always)]
    fn get(self, data: &[u8], b: RawBody) -> Option<Option<i64>> {
        if self.shift == 64 {
            return None;
        }
        let w = data.get(self.place.at(b)..)?.first_chunk::<8>()?;
        let raw = u64::from_le_bytes(*w) << self.shift;
        Some(if self.signed {
            Some((raw as i64) >> self.shift)
        } else {
            i64::try_from(raw >> self.shift).ok()
        })
    }
}

impl ClassInfo {
    /// Event class `event` (index into the stream class's events) of
    /// stream class `stream` of `trace`, for a model that follows
    /// `interest`. With `raw`, its events are to be read without their
    /// values when the fields its kind reads allow it (see
    /// [`Field::locate`]).
    pub fn new(
        trace: &Trace,
        stream: usize,
        event: usize,
        raw: bool,
        interest: Interest,
    ) -> ClassInfo {
        let sp = &trace.class.streams[stream];
        let name = &trace.class.meta.streams[sp.class].events[sp.events[event].class].name;
        let ftrace = is_ftrace(trace);
        let mut class = classify(name, ftrace, || old_wakeup_prio(trace));
        if class.is_irq() && !interest.irqs && interest.irq_cpus {
            // As the model would read the IRQ event: whether its fields are
            // there (with the values: only where, not what, differs).
            let mut probe = Probe {
                trace,
                stream,
                event,
                raw: false,
                ftrace,
                info: &mut ClassInfo::blank(class),
            };
            class = match kind(class, &mut probe, &no_call()) {
                Some(_) => Class::Cpu,
                None => Class::Other,
            };
        }
        if !interest.follows(class) {
            let tells_pid = interest.threads
                && matches!(class, Class::SyscallEntry(Call { pid: true, .. }))
                && Field::in_scopes(FIELDS[IO_CTX_PID].0, FIELDS[IO_CTX_PID].1)
                    .locate(trace, stream, event, false)
                    != Located::Absent;
            if !tells_pid {
                class = Class::Other;
            }
        }
        if let Class::SyscallEntry(c) = &mut class {
            c.io &= interest.syscalls && interest.io;
        }
        let mut info = ClassInfo::blank(class);
        if let Class::SyscallEntry(c) = class {
            info.call = Arc::from(&name[usize::from(c.skip)..]);
        }
        if class == Class::Other {
            return info;
        }
        // The fields the kind reads, found as `kind` asks for them.
        let mut probe = Probe {
            trace,
            stream,
            event,
            raw,
            ftrace,
            info: &mut info,
        };
        probe.int(CPU_ID);
        let _ = kind(class, &mut probe, &no_call());
        info.cpu_in_packet = info.loc(CPU_ID).is_some_and(|l| l.in_packet());
        let Some(places) = info.places.as_deref_mut() else {
            return info;
        };
        for f in 0..FIELDS.len() {
            if let Some(FieldLoc::Raw(r)) = places.locs.get(usize::from(places.slot[f])) {
                places.texts[f] = r.text_from_start();
                if let Some((place, bytes, signed)) = r.le_int_from_start() {
                    if (1..=8).contains(&bytes) {
                        places.ints[f] = FastInt {
                            place,
                            shift: 64 - 8 * bytes,
                            signed,
                        };
                    }
                }
            }
        }
        info
    }

    /// A class of nothing found yet.
    fn blank(class: Class) -> ClassInfo {
        ClassInfo {
            class,
            needs_values: false,
            cpu_in_packet: false,
            call: no_call(),
            places: None,
        }
    }

    #[inline(always)]
    fn places(&self) -> &Places {
        self.places.as_deref().unwrap_or(&NO_PLACES)
    }

    #[inline(always)]
    fn loc(&self, f: usize) -> Option<&FieldLoc> {
        let p = self.places();
        p.locs.get(usize::from(p.slot[f]))
    }

    /// Whether the CPU of its events is their packet's (see
    /// [`packet_cpu`]).
    pub fn cpu_in_packet(&self) -> bool {
        self.cpu_in_packet
    }

    /// The model reads nothing of this class's events but their time.
    pub fn is_other(&self) -> bool {
        self.class == Class::Other
    }

    /// The model reads only the CPU of this class's events, their packet's
    /// ([`Kind::Cpu`]): once it knows that CPU, they are as ignored ones.
    pub fn is_packet_cpu_only(&self) -> bool {
        self.class == Class::Cpu && self.cpu_in_packet
    }

    /// Whether the class's events must be read with their values (some
    /// field the model reads is not found in their bytes).
    pub fn needs_values(&self) -> bool {
        self.needs_values
    }
}

/// The [`Src`] that finds the fields `kind` asks for, for [`ClassInfo::new`]:
/// each field is found as present (a value for `kind` to go on with) or not.
struct Probe<'a> {
    trace: &'a Trace,
    stream: usize,
    event: usize,
    raw: bool,
    /// The trace keeps ftrace's field names ([`ftrace_field`]).
    ftrace: bool,
    info: &'a mut ClassInfo,
}

impl Probe<'_> {
    fn find(&mut self, f: usize) -> bool {
        if self.info.places().slot[f] != NO_FIELD {
            return true;
        }
        let (mut name, scopes) = FIELDS[f];
        // (`reef record --kernel`'s state dump keeps LTTng's names)
        if self.ftrace && self.info.class != Class::StatedumpProcess {
            match ftrace_field(f) {
                Some(n) => name = n,
                None => return false,
            }
        }
        match Field::in_scopes(name, scopes).locate(self.trace, self.stream, self.event, self.raw) {
            Located::At(loc) => {
                let p = self
                    .info
                    .places
                    .get_or_insert_with(|| Box::new(NO_PLACES.clone()));
                p.slot[f] = p.locs.len() as u8;
                p.locs.push(loc);
                true
            }
            Located::Absent => false,
            Located::NeedsValues => {
                self.info.needs_values = true;
                false
            }
        }
    }
}

impl<'c> Src<'c> for Probe<'_> {
    fn int(&mut self, f: usize) -> Option<i64> {
        self.find(f).then_some(0)
    }
    fn text(&mut self, f: usize) -> Option<Cow<'c, str>> {
        self.find(f).then_some(Cow::Borrowed(""))
    }
    fn bytes(&mut self, f: usize) -> Option<Text<'c>> {
        self.find(f).then_some(Text::new(b""))
    }
    fn has(&mut self, f: usize) -> bool {
        self.find(f)
    }
}

/// The [`Src`] of an event of a known class: its fields at their places.
struct Placed<'a, 'c> {
    info: &'a ClassInfo,
    cur: &'c StreamCursor,
    body: RawBody,
}

impl<'c> Placed<'_, 'c> {
    #[inline(always)]
    fn get(&self, f: usize) -> Option<FieldVal<'c>> {
        self.info.loc(f)?.get(self.cur, self.body)
    }
}

impl<'c> Src<'c> for Placed<'_, 'c> {
    #[inline(always)]
    fn int(&mut self, f: usize) -> Option<i64> {
        match self.info.places().ints[f].get(self.cur.data(), self.body) {
            Some(v) => v,
            None => self.get(f).and_then(|v| v.as_i64()),
        }
    }
    #[inline]
    fn text(&mut self, f: usize) -> Option<Cow<'c, str>> {
        self.get(f).and_then(|v| v.as_str())
    }
    #[inline(always)]
    fn bytes(&mut self, f: usize) -> Option<Text<'c>> {
        match self.info.places().texts[f] {
            Some(t) => t.get(self.cur.data(), self.body).map(Text::new),
            None => self.get(f).and_then(|v| v.as_text_bytes()).map(Text::new),
        }
    }
    fn has(&mut self, f: usize) -> bool {
        self.get(f).is_some()
    }
}

/// The [`Src`] of an event made where its stream is decoded, ahead of
/// the merge ([`event_made`]): the fields in its bytes are read in `data`
/// (its whole file, which outlives the reading), those among the values
/// the cursor keeps through `cur` (integers as they are, texts copied).
/// A text without a copy ([`Text`]) that lies only among those values
/// cannot outlive the cursor: `lost` says so.
struct Made<'f, 'c> {
    info: &'f ClassInfo,
    data: &'f [u8],
    cur: &'c StreamCursor,
    body: RawBody,
    lost: bool,
}

impl<'f> Src<'f> for Made<'f, '_> {
    #[inline(always)]
    fn int(&mut self, f: usize) -> Option<i64> {
        match self.info.places().ints[f].get(self.data, self.body) {
            Some(v) => v,
            None => self.info.loc(f)?.get(self.cur, self.body)?.as_i64(),
        }
    }
    fn text(&mut self, f: usize) -> Option<Cow<'f, str>> {
        match self.info.loc(f)? {
            FieldLoc::Raw(r) => r.get(self.data, self.body)?.as_str(),
            loc => loc
                .get(self.cur, self.body)?
                .as_str()
                .map(|s| Cow::Owned(s.into_owned())),
        }
    }
    #[inline(always)]
    fn bytes(&mut self, f: usize) -> Option<Text<'f>> {
        if let Some(t) = self.info.places().texts[f] {
            return t.get(self.data, self.body).map(Text::new);
        }
        match self.info.loc(f)? {
            FieldLoc::Raw(r) => r.get(self.data, self.body)?.as_text_bytes().map(Text::new),
            FieldLoc::Values(_) => {
                self.lost = true;
                None
            }
        }
    }
    fn has(&mut self, f: usize) -> bool {
        self.info
            .loc(f)
            .is_some_and(|l| l.get(self.cur, self.body).is_some())
    }
}

/// [`event_of`] for an event of `info`'s class read where its stream is
/// decoded, to be handed to the model elsewhere: `data` is the bytes of
/// the file `cur` reads (the event's body lies there, at `body`). `None`
/// when the event reads a text that only the cursor holds (the merge then
/// makes it with [`event_of`], through its view of the stream).
pub(crate) fn event_made<'f>(
    info: &'f ClassInfo,
    data: &'f [u8],
    cur: &StreamCursor,
    body: RawBody,
    ts: i64,
    packet_cpu: Option<i64>,
) -> Option<Event<'f>> {
    let mut src = Made {
        info,
        data,
        cur,
        body,
        lost: false,
    };
    let ev = event_from(info, &mut src, ts, packet_cpu);
    (!src.lost).then_some(ev)
}

/// Reads [`Event`]s out of cursors. Keep one for a whole run: it finds
/// each event class's kind and fields once.
pub struct Decoder {
    classes: HashMap<(usize, usize, usize), ClassInfo>,
    last: Option<(usize, usize, usize)>,
    interest: Interest,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Interest::ALL)
    }
}

impl Decoder {
    /// A decoder for a model that follows `interest`.
    pub fn new(interest: Interest) -> Decoder {
        Decoder {
            classes: HashMap::default(),
            last: None,
            interest,
        }
    }

    /// The current event of `cur` (call after `cur` produced an event
    /// with its values), whose time is `ts`.
    pub fn decode<'c>(&'c mut self, cur: &'c StreamCursor, ts: i64) -> Event<'c> {
        let key = (
            Arc::as_ptr(&cur.trace) as usize,
            cur.stream,
            cur.event.event,
        );
        if self.last != Some(key) {
            self.classes.entry(key).or_insert_with(|| {
                ClassInfo::new(
                    &cur.trace,
                    cur.stream,
                    cur.event.event,
                    false,
                    self.interest,
                )
            });
            self.last = Some(key);
        }
        let info = &self.classes[&key];
        let cpu = if info.cpu_in_packet {
            packet_cpu(cur)
        } else {
            None
        };
        event_of(info, cur, cur.event.event, RawBody::of(cur), ts, cpu)
    }
}

/// The `cpu_id` of `cur`'s current packet (LTTng kernel streams have one
/// per CPU).
pub fn packet_cpu(cur: &StreamCursor) -> Option<i64> {
    packet_cpu_at(cur, packet_cpu_field(&cur.trace, cur.stream))
}

/// Where the packet contexts of stream class `stream` of `trace` hold
/// their `cpu_id` (found once per stream, read per packet with
/// [`packet_cpu_at`]).
pub fn packet_cpu_field(trace: &Trace, stream: usize) -> Option<FieldLoc> {
    let cpu = Field::in_scopes(FIELDS[CPU_ID].0, Scopes::PacketContext);
    match cpu.locate(trace, stream, 0, false) {
        Located::At(loc) => Some(loc),
        _ => None,
    }
}

/// [`packet_cpu`], the field found by [`packet_cpu_field`].
#[inline]
pub fn packet_cpu_at(cur: &StreamCursor, field: Option<FieldLoc>) -> Option<i64> {
    field?.get(cur, RawBody::default())?.as_i64()
}

/// An event of class `info` (index `class` in `cur`'s stream class): the
/// current event of `cur`, or one of its current packet whose body lies
/// at `body`, at time `ts`; `packet_cpu`: the packet's [`packet_cpu`].
#[inline(always)]
pub fn event_of<'c>(
    info: &'c ClassInfo,
    cur: &'c StreamCursor,
    class: usize,
    body: RawBody,
    ts: i64,
    packet_cpu: Option<i64>,
) -> Event<'c> {
    let _ = class;
    event_from(info, &mut Placed { info, cur, body }, ts, packet_cpu)
}

/// The event of `info`'s class whose fields `src` reads, at `ts`
/// (`packet_cpu`: its packet's CPU): [`event_of`] and [`event_made`].
#[inline(always)]
fn event_from<'c>(
    info: &'c ClassInfo,
    src: &mut impl Src<'c>,
    ts: i64,
    packet_cpu: Option<i64>,
) -> Event<'c> {
    if info.class == Class::Other {
        return Event {
            ts,
            cpu: None,
            kind: Kind::Other,
        };
    }
    let cpu = if info.cpu_in_packet {
        packet_cpu
    } else {
        src.int(CPU_ID)
    };
    // (a match: `unwrap_or` would make and drop a `Kind::Other` each time)
    let kind = match kind(info.class, src, &info.call) {
        Some(k) => k,
        None => Kind::Other,
    };
    Event { ts, cpu, kind }
}

/// The kind of an event of `class` (`call`: a system call entry's name).
#[inline(always)]
fn kind<'c>(class: Class, s: &mut impl Src<'c>, call: &'c Arc<str>) -> Option<Kind<'c>> {
    Some(match class {
        Class::Other => Kind::Other,
        Class::Cpu => Kind::Cpu,
        Class::SchedSwitch => Kind::SchedSwitch {
            prev_comm: s.bytes(PREV_COMM)?,
            prev_tid: s.int(PREV_TID)?,
            prev_prio: s.int(PREV_PRIO)?,
            next_comm: s.bytes(NEXT_COMM)?,
            next_tid: s.int(NEXT_TID)?,
            next_prio: s.int(NEXT_PRIO)?,
        },
        Class::MigrateTask => Kind::MigrateTask {
            comm: s.bytes(COMM)?,
            tid: s.int(TID)?,
            prio: s.int(PRIO)?,
        },
        Class::Wakeup(old) => Kind::Wakeup {
            tid: s.int(TID)?,
            prio: s.int(PRIO)? - if old { 100 } else { 0 },
            target_cpu: s.int(TARGET_CPU)?,
        },
        Class::Fork(with_pid) => Kind::Fork {
            parent_pid: s.int(PARENT_PID)?,
            parent_comm: s.text(PARENT_COMM)?,
            child_tid: s.int(CHILD_TID)?,
            child_pid: match with_pid {
                true => Some(s.int(CHILD_PID)?),
                false => None,
            },
            child_comm: s.text(CHILD_COMM)?,
        },
        Class::Exec => Kind::Exec {
            tid: s.int(TID)?,
            procname: s.text(PROCNAME),
        },
        Class::PiSetprio => Kind::PiSetprio {
            tid: s.int(TID)?,
            newprio: s.int(NEWPRIO)?,
        },
        Class::SyscallEntry(c) => Kind::SyscallEntry {
            name: call,
            // lttng-analyses takes a context `pid` only when the payload
            // has none.
            ctx_pid: match c.pid && !s.has(IO_PAYLOAD_PID) {
                true => s.int(IO_CTX_PID),
                false => None,
            },
            io: c.io.then(|| match c.kind {
                IoCall::Read
                | IoCall::Write
                | IoCall::Close
                | IoCall::Sync
                | IoCall::SyncFd
                | IoCall::Socket
                | IoCall::Unrequested
                    if !c.connect =>
                {
                    IoIn::Fd(c.kind, s.int(IO_FD))
                }
                _ => IoIn::Args(Box::new(io_args(s, c))),
            }),
        },
        Class::SyscallExit => Kind::SyscallExit { ret: s.int(RET) },
        Class::IrqEntry => Kind::IrqEntry {
            irq: s.int(IRQ_OR_VEC)?,
            name: s.bytes(NAME)?,
        },
        Class::IrqExit => Kind::IrqExit {
            irq: s.int(IRQ_OR_VEC)?,
        },
        Class::SoftirqRaise | Class::SoftirqEntry | Class::SoftirqExit => {
            let vec = s.int(VEC)?;
            match class {
                Class::SoftirqRaise => Kind::SoftirqRaise { vec },
                Class::SoftirqEntry => Kind::SoftirqEntry { vec },
                _ => Kind::SoftirqExit { vec },
            }
        }
        Class::PageAlloc => Kind::PageAlloc,
        Class::PageFree => Kind::PageFree,
        Class::StatedumpProcess => Kind::StatedumpProcess {
            tid: s.int(TID)?,
            pid: s.int(PID)?,
            name: s.text(NAME)?,
            prio: s.int(PRIO),
        },
        Class::StatedumpFd => Kind::StatedumpFd {
            pid: s.int(PID)?,
            fd: s.int(IO_FD)?,
            flags: s.int(IO_FLAGS).unwrap_or(0),
            filename: s.text(IO_FILENAME)?,
        },
        Class::StatedumpBlockDevice => Kind::StatedumpBlockDevice {
            dev: s.int(DEV)?,
            diskname: s.text(DISKNAME)?,
        },
        Class::Net(send) => Kind::Net {
            send,
            name: s.text(NAME)?,
            len: s.int(LEN)?,
        },
        Class::BlockRqIssue => Kind::BlockRqIssue {
            dev: s.int(DEV)?,
            sector: s.int(SECTOR)?,
            nr_sector: s.int(NR_SECTOR)?,
            tid: s.int(TID)?,
            rwbs: s.int(RWBS)?,
        },
        Class::BlockRqComplete => Kind::BlockRqComplete {
            dev: s.int(DEV)?,
            sector: s.int(SECTOR)?,
            nr_sector: s.int(NR_SECTOR)?,
        },
        Class::BlockBioRemap => Kind::BlockBioRemap {
            dev: s.int(DEV)?,
            sector: s.int(SECTOR)?,
            old_dev: s.int(OLD_DEV)?,
            old_sector: s.int(OLD_SECTOR)?,
        },
        Class::BlockBioBackmerge => Kind::BlockBioBackmerge {
            dev: s.int(DEV)?,
            sector: s.int(SECTOR)?,
        },
    })
}

fn io_args<'c>(s: &mut impl Src<'c>, c: Call) -> IoArgs<'c> {
    let (connect, opens) = (c.connect, c.opens);
    let v4addr = if connect {
        // (lttng-modules >= 2.6 records it as an array, which the field
        // access does not read.)
        s.int(IO_V4ADDR).map(|a| {
            let [a, b, c, d] = (a as u32).to_be_bytes();
            match s.int(IO_DPORT) {
                Some(p) => format!("{a}.{b}.{c}.{d}:{p}"),
                None => format!("{a}.{b}.{c}.{d}"),
            }
        })
    } else {
        None
    };
    IoArgs {
        filename: if opens { s.text(IO_FILENAME) } else { None },
        v4addr,
        fd: s.int(IO_FD),
        flags: s.int(IO_FLAGS),
        fildes: s.int(IO_FILDES),
        oldfd: s.int(IO_OLDFD),
        newfd: s.int(IO_NEWFD),
        cmd: s.int(IO_CMD),
        family: s.int(IO_FAMILY),
        connect,
        call: c.kind,
    }
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn text_held_or_borrowed_reads_the_same() {
        let long = b"a-thread-name-of-23-by!";
        for bytes in [&b""[..], b"swapper/0", &long[..22], &long[..]] {
            let t = Text::new(bytes);
            assert_eq!(t.bytes(), bytes);
            assert!(t.is(std::str::from_utf8(bytes).unwrap()));
            assert_eq!(t.to_str(), std::str::from_utf8(bytes).unwrap());
        }
        assert_ne!(Text::new(&long[..22]), Text::new(long));
        assert!(!Text::new(b"worker-1").is("worker-10"));
        assert_eq!(Text::new(b"\xffx").to_str(), "\u{fffd}x");
    }
}
