//! The kernel events the analyses understand, read by name from a
//! [`StreamCursor`]'s current event.
//!
//! [`Decoder::decode`] classifies an event by its class name once per
//! (trace, stream class, event class) and then reads only the fields that
//! kind needs. An event whose required fields are missing or not integers
//! becomes [`Kind::Other`]: it still moves time forward, but no state.

use std::borrow::Cow;
use std::sync::Arc;

use reef_ctf::{EnvValue, Field, FieldVal, Scopes, StreamCursor, Trace};
use rustc_hash::FxHashMap as HashMap;

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

/// What an event says, for the events that change the kernel model.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind<'a> {
    SchedSwitch {
        prev_comm: Cow<'a, str>,
        prev_tid: i64,
        prev_prio: i64,
        next_comm: Cow<'a, str>,
        next_tid: i64,
        next_prio: i64,
    },
    MigrateTask {
        comm: Cow<'a, str>,
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
        child_pid: i64,
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
    /// `syscall_entry_NAME` or `sys_NAME`: `name` is NAME; `io` holds the
    /// arguments of the I/O system calls lttng-analyses tracks.
    SyscallEntry {
        name: &'a str,
        io: Option<IoArgs<'a>>,
    },
    /// `syscall_exit_NAME` or `exit_syscall`.
    SyscallExit {
        ret: Option<i64>,
    },
    IrqEntry {
        irq: i64,
        name: Cow<'a, str>,
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
    Other,
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
    /// A `pid` context (not payload) field, when the trace has one.
    pub ctx_pid: Option<i64>,
    /// This is `syscall_entry_connect`.
    pub connect: bool,
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
    Fork,
    Exec,
    PiSetprio,
    /// Byte length of the prefix before the system call's name, and
    /// whether it is an I/O call (or `syscall_entry_connect`).
    SyscallEntry(u8, bool),
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
    Other,
}

fn classify(name: &str, old_prio: bool) -> Class {
    match name {
        "sched_switch" => Class::SchedSwitch,
        "sched_migrate_task" => Class::MigrateTask,
        "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => Class::Wakeup(old_prio),
        "sched_process_fork" => Class::Fork,
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
        n if n.starts_with("sys_") => Class::SyscallEntry(4, IO_SYSCALLS.contains(&&n[4..])),
        n if n.starts_with("syscall_entry_") => Class::SyscallEntry(
            14,
            n == "syscall_entry_connect" || IO_SYSCALLS.contains(&&n[14..]),
        ),
        n if n.starts_with("exit_syscall") || n.starts_with("syscall_exit_") => Class::SyscallExit,
        _ => Class::Other,
    }
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

/// Reads [`Event`]s out of cursors. Keep one for a whole run: it caches
/// each event class's kind and each field's location.
pub struct Decoder {
    classes: HashMap<(usize, usize, usize), Class>,
    old_prio: HashMap<usize, bool>,
    last: Option<((usize, usize, usize), Class)>,
    cpu_id: Field,
    f: [Field; 23],
    io: [Field; 12],
    blk: [Field; 7],
}

// Indices into `Decoder::f`.
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
const DISKNAME: usize = 22;
// Indices into `Decoder::blk`.
const DEV: usize = 0;
const SECTOR: usize = 1;
const NR_SECTOR: usize = 2;
const RWBS: usize = 3;
const OLD_DEV: usize = 4;
const OLD_SECTOR: usize = 5;
const LEN: usize = 6;

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    pub fn new() -> Decoder {
        let names = [
            "prev_comm",
            "prev_tid",
            "prev_prio",
            "next_comm",
            "next_tid",
            "next_prio",
            "comm",
            "tid",
            "prio",
            "target_cpu",
            "parent_pid",
            "parent_comm",
            "child_tid",
            "child_pid",
            "child_comm",
            "procname",
            "newprio",
            "ret",
            "irq",
            "name",
            "vec",
            "pid",
            "diskname",
        ];
        Decoder {
            classes: HashMap::default(),
            old_prio: HashMap::default(),
            last: None,
            cpu_id: Field::new("cpu_id"),
            f: names.map(Field::new),
            io: [
                Field::in_scopes("fd", Scopes::Payload),
                Field::in_scopes("flags", Scopes::Payload),
                Field::in_scopes("fildes", Scopes::Payload),
                Field::in_scopes("oldfd", Scopes::Payload),
                Field::in_scopes("newfd", Scopes::Payload),
                Field::in_scopes("cmd", Scopes::Payload),
                Field::in_scopes("family", Scopes::Payload),
                Field::in_scopes("pid", Scopes::Context),
                Field::in_scopes("pid", Scopes::Payload),
                Field::in_scopes("filename", Scopes::Payload),
                Field::in_scopes("v4addr", Scopes::Payload),
                Field::in_scopes("dport", Scopes::Payload),
            ],
            blk: [
                "dev",
                "sector",
                "nr_sector",
                "rwbs",
                "old_dev",
                "old_sector",
                "len",
            ]
            .map(|n| Field::in_scopes(n, Scopes::Payload)),
        }
    }

    fn class(&mut self, cur: &StreamCursor) -> Class {
        let key = (
            Arc::as_ptr(&cur.trace) as usize,
            cur.stream,
            cur.event.event,
        );
        if let Some((k, c)) = self.last {
            if k == key {
                return c;
            }
        }
        let c = match self.classes.get(&key) {
            Some(c) => *c,
            None => {
                let old = *self
                    .old_prio
                    .entry(key.0)
                    .or_insert_with(|| old_wakeup_prio(&cur.trace));
                let c = classify(cur.event_name(), old);
                self.classes.insert(key, c);
                c
            }
        };
        self.last = Some((key, c));
        c
    }

    /// The current event of `cur` (call after `cur` produced an event),
    /// whose time is `ts`.
    pub fn decode<'c>(&mut self, cur: &'c StreamCursor, ts: i64) -> Event<'c> {
        let class = self.class(cur);
        let cpu = if class == Class::Other {
            None
        } else {
            self.cpu_id.get(cur).and_then(|v| v.as_i64())
        };
        let kind = self.kind(class, cur).unwrap_or(Kind::Other);
        Event { ts, cpu, kind }
    }

    fn int(&mut self, i: usize, cur: &StreamCursor) -> Option<i64> {
        self.f[i].get(cur).and_then(|v| v.as_i64())
    }

    fn text<'c>(&mut self, i: usize, cur: &'c StreamCursor) -> Option<Cow<'c, str>> {
        self.f[i].get(cur).and_then(|v: FieldVal<'c>| v.as_str())
    }

    fn kind<'c>(&mut self, class: Class, cur: &'c StreamCursor) -> Option<Kind<'c>> {
        Some(match class {
            Class::Other => Kind::Other,
            Class::SchedSwitch => Kind::SchedSwitch {
                prev_comm: self.text(PREV_COMM, cur)?,
                prev_tid: self.int(PREV_TID, cur)?,
                prev_prio: self.int(PREV_PRIO, cur)?,
                next_comm: self.text(NEXT_COMM, cur)?,
                next_tid: self.int(NEXT_TID, cur)?,
                next_prio: self.int(NEXT_PRIO, cur)?,
            },
            Class::MigrateTask => Kind::MigrateTask {
                comm: self.text(COMM, cur)?,
                tid: self.int(TID, cur)?,
                prio: self.int(PRIO, cur)?,
            },
            Class::Wakeup(old) => Kind::Wakeup {
                tid: self.int(TID, cur)?,
                prio: self.int(PRIO, cur)? - if old { 100 } else { 0 },
                target_cpu: self.int(TARGET_CPU, cur)?,
            },
            Class::Fork => Kind::Fork {
                parent_pid: self.int(PARENT_PID, cur)?,
                parent_comm: self.text(PARENT_COMM, cur)?,
                child_tid: self.int(CHILD_TID, cur)?,
                child_pid: self.int(CHILD_PID, cur)?,
                child_comm: self.text(CHILD_COMM, cur)?,
            },
            Class::Exec => Kind::Exec {
                tid: self.int(TID, cur)?,
                procname: self.text(PROCNAME, cur),
            },
            Class::PiSetprio => Kind::PiSetprio {
                tid: self.int(TID, cur)?,
                newprio: self.int(NEWPRIO, cur)?,
            },
            Class::SyscallEntry(skip, io) => Kind::SyscallEntry {
                name: &cur.event_name()[skip as usize..],
                io: io.then(|| self.io_args(cur)),
            },
            Class::SyscallExit => Kind::SyscallExit {
                ret: self.int(RET, cur),
            },
            Class::IrqEntry => Kind::IrqEntry {
                irq: self.int(IRQ_OR_VEC, cur)?,
                name: self.text(NAME, cur)?,
            },
            Class::IrqExit => Kind::IrqExit {
                irq: self.int(IRQ_OR_VEC, cur)?,
            },
            Class::SoftirqRaise | Class::SoftirqEntry | Class::SoftirqExit => {
                let vec = self.int(VEC, cur)?;
                match class {
                    Class::SoftirqRaise => Kind::SoftirqRaise { vec },
                    Class::SoftirqEntry => Kind::SoftirqEntry { vec },
                    _ => Kind::SoftirqExit { vec },
                }
            }
            Class::PageAlloc => Kind::PageAlloc,
            Class::PageFree => Kind::PageFree,
            Class::StatedumpProcess => Kind::StatedumpProcess {
                tid: self.int(TID, cur)?,
                pid: self.int(PID, cur)?,
                name: self.text(NAME, cur)?,
                prio: self.int(PRIO, cur),
            },
            Class::StatedumpFd => Kind::StatedumpFd {
                pid: self.int(PID, cur)?,
                fd: self.io_int(0, cur)?,
                flags: self.io_int(1, cur).unwrap_or(0),
                filename: self.io[9].get(cur).and_then(|v| v.as_str())?,
            },
            Class::StatedumpBlockDevice => Kind::StatedumpBlockDevice {
                dev: self.blk_int(DEV, cur)?,
                diskname: self.text(DISKNAME, cur)?,
            },
            Class::Net(send) => Kind::Net {
                send,
                name: self.text(NAME, cur)?,
                len: self.blk_int(LEN, cur)?,
            },
            Class::BlockRqIssue => Kind::BlockRqIssue {
                dev: self.blk_int(DEV, cur)?,
                sector: self.blk_int(SECTOR, cur)?,
                nr_sector: self.blk_int(NR_SECTOR, cur)?,
                tid: self.int(TID, cur)?,
                rwbs: self.blk_int(RWBS, cur)?,
            },
            Class::BlockRqComplete => Kind::BlockRqComplete {
                dev: self.blk_int(DEV, cur)?,
                sector: self.blk_int(SECTOR, cur)?,
                nr_sector: self.blk_int(NR_SECTOR, cur)?,
            },
            Class::BlockBioRemap => Kind::BlockBioRemap {
                dev: self.blk_int(DEV, cur)?,
                sector: self.blk_int(SECTOR, cur)?,
                old_dev: self.blk_int(OLD_DEV, cur)?,
                old_sector: self.blk_int(OLD_SECTOR, cur)?,
            },
            Class::BlockBioBackmerge => Kind::BlockBioBackmerge {
                dev: self.blk_int(DEV, cur)?,
                sector: self.blk_int(SECTOR, cur)?,
            },
        })
    }

    fn blk_int(&mut self, i: usize, cur: &StreamCursor) -> Option<i64> {
        self.blk[i].get(cur).and_then(|v| v.as_i64())
    }

    fn io_int(&mut self, i: usize, cur: &StreamCursor) -> Option<i64> {
        self.io[i].get(cur).and_then(|v| v.as_i64())
    }

    fn io_args<'c>(&mut self, cur: &'c StreamCursor) -> IoArgs<'c> {
        // lttng-analyses takes a context `pid` only when the payload has none.
        let ctx_pid = if self.io[8].get(cur).is_some() {
            None
        } else {
            self.io_int(7, cur)
        };
        let name = cur.event_name();
        let connect = name == "syscall_entry_connect";
        let opens = name.ends_with("open") || name.ends_with("openat");
        let v4addr = if connect {
            // (lttng-modules >= 2.6 records it as an array, which the
            // field access does not read.)
            self.io_int(10, cur).map(|a| {
                let [a, b, c, d] = (a as u32).to_be_bytes();
                match self.io_int(11, cur) {
                    Some(p) => format!("{a}.{b}.{c}.{d}:{p}"),
                    None => format!("{a}.{b}.{c}.{d}"),
                }
            })
        } else {
            None
        };
        IoArgs {
            fd: self.io_int(0, cur),
            filename: if opens {
                self.io[9].get(cur).and_then(|v| v.as_str())
            } else {
                None
            },
            v4addr,
            flags: self.io_int(1, cur),
            fildes: self.io_int(2, cur),
            oldfd: self.io_int(3, cur),
            newfd: self.io_int(4, cur),
            cmd: self.io_int(5, cur),
            family: self.io_int(6, cur),
            ctx_pid,
            connect,
        }
    }
}
