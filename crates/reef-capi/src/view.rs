//! Handles a host gives plugins: a `reef_reader` that reads nothing itself
//! but shows the event (or notice) the host's reading is on, so that a
//! plugin reads it with the functions of `reef_reader.h`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use reef_ctf::{Item, StreamCursor};

use super::{reef_reader, Backing, Current, Paths, CLOSED, LIVE, MAGIC};

/// A plugin's handle on its host's current message. Between
/// [`EventView::show`] and [`EventView::hide`] the getters read the
/// message; otherwise they answer `REEF_ERR_STATE`, so a handle a plugin
/// kept reads nothing stale. `reef_reader_next` and `reef_reader_close`
/// refuse it.
pub struct EventView {
    p: *mut reef_reader,
}

// SAFETY: the handle is used by one thread at a time (the host's reading
// thread); the reader it points to is checked on every call anyway.
unsafe impl Send for EventView {}

impl Default for EventView {
    fn default() -> Self {
        Self::new()
    }
}

impl EventView {
    pub fn new() -> EventView {
        let r = Box::new(reef_reader {
            magic: MAGIC,
            busy: AtomicBool::new(false),
            src: Backing::View(std::ptr::null()),
            cur: None,
            names: HashMap::new(),
            paths: Paths::default(),
            broken: false,
        });
        let p = Box::into_raw(r);
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p as usize);
        EventView { p }
    }

    /// The handle to give the plugin.
    pub fn handle(&self) -> *const reef_reader {
        self.p
    }

    /// Shows `cursor`'s current message; the cursor must stay where it is
    /// until [`EventView::hide`].
    pub fn show(
        &mut self,
        cursor: &StreamCursor,
        stream: usize,
        trace: usize,
        item: Item,
        ns: Option<i64>,
    ) {
        // SAFETY: ours, alive until drop; the plugin's calls have returned
        // (the host calls this between them, on its own thread).
        let r = unsafe { &mut *self.p };
        r.src = Backing::View(cursor);
        r.cur = Some(Current {
            stream,
            trace,
            item,
            ns,
        });
    }

    /// Shows nothing any more.
    pub fn hide(&mut self) {
        // SAFETY: as in `show`.
        let r = unsafe { &mut *self.p };
        r.cur = None;
        r.src = Backing::View(std::ptr::null());
    }
}

impl Drop for EventView {
    fn drop(&mut self) {
        {
            let mut l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = l.iter().position(|&x| x == self.p as usize) {
                l.swap_remove(i);
            }
            CLOSED.fetch_add(1, Ordering::AcqRel);
        }
        // SAFETY: made by `new`, now out of the registry.
        let mut r = unsafe { Box::from_raw(self.p) };
        r.magic = 0;
    }
}
