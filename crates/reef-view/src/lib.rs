//! `reef view`: a web timeline of CTF traces. See `docs/view-api.md` for
//! the HTTP API and ARCHITECTURE.md for how the index is built.

pub mod activities;
pub mod buckets;
pub mod index;
pub mod live;
pub mod model;
mod pass;
pub mod profile;
pub mod query;
pub mod server;

/// Makes the C allocator give large freed blocks back to the system at
/// once: glibc otherwise raises its mmap threshold after the first large
/// free (up to 32 MiB) and keeps such blocks in its heaps, which for the
/// index's pass (large record buffers going back and forth between
/// threads) doubles the peak memory. Call once, before any thread starts.
pub fn tune_allocator() {
    set_mmap_threshold(128 << 10);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
    }
}

/// Blocks of at least `bytes` are mapped and unmapped on their own. Once
/// the index is built, queries' answers (up to a few MiB, made and freed
/// many times a second) are better served from the heap: the pass raises
/// it.
pub(crate) fn set_mmap_threshold(bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}
