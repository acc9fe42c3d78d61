//! Files that shrink while they are mapped.
//!
//! Reading a page of a file mapping past the file's end raises `SIGBUS`,
//! which kills the process: a trace file truncated while reef reads it
//! (a tracer re-recording into the directory a viewer has open, a rotated
//! file) would lose everything decoded so far. Every stream file reef maps
//! is registered here ([`Guard::new`]); a `SIGBUS` handler, installed with
//! the first registration, finds the mapping the faulting address lies in
//! and maps zero-filled anonymous pages over the rest of it, so that the
//! faulting read returns and reads zeros. The mapping is marked: readers
//! check [`tripped`] (one relaxed load, false until a fault happened
//! anywhere in the process) after each event and [`Guard::faulted`] when
//! it is true, and report the truncation instead of what the zeros
//! decode to.
//!
//! A fault in memory that is not a registered mapping goes to the handler
//! that was installed before (Rust's stack-overflow handler, Python's
//! faulthandler), or to the default action: the process dies as it would
//! have.
//!
//! *Architecture Invariant:* the handler only reads atomics and calls
//! `mmap`; it allocates nothing and takes no lock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

/// In the message of every error that reports a file truncated or
/// changed while it was read (for front ends that tell it from damage).
pub const CHANGED: &str = "while being read";

/// Mappings guarded at once; one more is read unguarded (as before).
const SLOTS: usize = 8192;

static BASE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LEN: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static HIT: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// Slots up to this one may be in use (the handler scans no further).
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// Faults the handler recovered from, in the whole process.
static FAULTS: AtomicU64 = AtomicU64::new(0);

static INSTALL: Once = Once::new();

struct Prev(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);
// SAFETY: written once, inside `INSTALL`, before the handler that reads it
// is installed; read-only afterwards.
unsafe impl Sync for Prev {}
static PREV: Prev = Prev(std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()));

/// Whether a mapped file was found truncated anywhere in this process:
/// readers then ask their own mapping ([`Guard::faulted`]).
#[inline(always)]
pub fn tripped() -> bool {
    FAULTS.load(Ordering::Relaxed) != 0
}

/// A mapping registered with the handler; unregistered when dropped (drop
/// it before unmapping).
#[derive(Debug)]
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Registers `len` bytes mapped at `base`.
    pub fn new(base: *const u8, len: usize) -> Guard {
        if len == 0 {
            return Guard { slot: None };
        }
        install();
        for i in 0..SLOTS {
            if BASE[i]
                .compare_exchange(0, base as usize, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                HIT[i].store(false, Ordering::Relaxed);
                LEN[i].store(len, Ordering::Release);
                HIGH.fetch_max(i + 1, Ordering::AcqRel);
                return Guard { slot: Some(i) };
            }
        }
        Guard { slot: None }
    }

    /// Registers the bytes of `map`.
    pub fn of(map: &[u8]) -> Guard {
        Guard::new(map.as_ptr(), map.len())
    }

    /// Whether a read of this mapping faulted: the file ended before it
    /// (its bytes from the faulting page on read as zeros).
    pub fn faulted(&self) -> bool {
        self.slot.is_some_and(|i| HIT[i].load(Ordering::Acquire))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            LEN[i].store(0, Ordering::Release);
            HIT[i].store(false, Ordering::Relaxed);
            BASE[i].store(0, Ordering::Release);
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a handler that is async-signal-safe (it
        // reads atomics and calls mmap); the previous action is stored
        // before the new one can run.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            let prev = (*PREV.0.get()).as_mut_ptr();
            libc::sigaction(libc::SIGBUS, &sa, prev);
        }
    });
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: `info` is the kernel's siginfo for this signal.
    let addr = unsafe { (*info).si_addr() } as usize;
    let code = unsafe { (*info).si_code };
    if code > 0 {
        let high = HIGH.load(Ordering::Acquire).min(SLOTS);
        for i in 0..high {
            let len = LEN[i].load(Ordering::Acquire);
            let base = BASE[i].load(Ordering::Acquire);
            if len == 0 || base == 0 || addr < base || addr >= base + len {
                continue;
            }
            // SAFETY: sysconf is async-signal-safe.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
            let from = addr & !(page - 1);
            let to = (base + len).div_ceil(page) * page;
            HIT[i].store(true, Ordering::Release);
            FAULTS.fetch_add(1, Ordering::AcqRel);
            // SAFETY: replaces pages of a mapping this process made and
            // still holds (registered, not yet unregistered) with zeros;
            // every reference into it stays valid.
            let r = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    to - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                return;
            }
            break;
        }
    } else {
        // Sent, not raised by a fault (a handler before this one raising
        // the signal again): the faulting instruction runs again when the
        // handlers return, and its fault comes here.
        return;
    }
    // Not a guarded mapping: what would have happened without this handler.
    // SAFETY: PREV was written before this handler was installed.
    unsafe {
        let prev = &*(*PREV.0.get()).as_ptr();
        let h = prev.sa_sigaction;
        if prev.sa_flags & libc::SA_SIGINFO != 0 && h != libc::SIG_DFL && h != libc::SIG_IGN {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(h);
            f(sig, info, ctx);
        } else if h != libc::SIG_DFL && h != libc::SIG_IGN {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        } else {
            // The default action: the fault happens again on return and
            // kills the process.
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_truncated_mapping_reads_zeros_and_is_marked() {
        let dir = std::env::temp_dir().join(format!("reef-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![0xabu8; 64 << 10]).unwrap();
        drop(f);
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: the test truncates the file on purpose.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let g = Guard::of(&map);
        assert_eq!(map[100], 0xab);
        assert!(!g.faulted());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // A page past the new end: SIGBUS without the guard.
        let v = unsafe { std::ptr::read_volatile(&map[40 << 10]) };
        assert_eq!(v, 0);
        assert!(g.faulted());
        assert!(tripped());
        // The page within the file still reads the file.
        assert_eq!(map[100], 0xab);
        drop(g);
        drop(map);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
