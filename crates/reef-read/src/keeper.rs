//! Keepers brought by the caller ([`ReadOptions::keepers`]): filters that
//! are code rather than an expression (a plugin's filter), applied after
//! `filter` and `script` to every event, in time order.
//!
//! A reading makes its own keeper from each [`MakeKeeper`], so a command
//! that reads several times (an analysis's passes) starts each pass with a
//! fresh state, and a keeper's error stops the reading once every message
//! before the event it failed on was given.
//!
//! [`ReadOptions::keepers`]: crate::ReadOptions::keepers

use std::sync::Arc;

use reef_ctf::StreamCursor;

/// The event a keeper is asked about.
pub struct KeepAt<'a> {
    /// Its stream's cursor, on the event (values decoded).
    pub cursor: &'a StreamCursor,
    /// The stream's index among the source's streams.
    pub stream: usize,
    /// The trace's index among the source's traces.
    pub trace: usize,
    /// Its time in ns from the origin (None: a stream without a clock).
    pub ns: Option<i64>,
}

/// One reading's keeper.
pub trait Keeper: Send {
    /// Whether the event is kept; `Err` stops the reading with the message.
    fn keep(&mut self, at: &KeepAt<'_>) -> Result<bool, String>;
}

/// What makes a keeper for each reading (a loaded plugin and its arguments).
pub trait MakeKeeper: Send + Sync {
    /// How errors name it (`plugin NAME`).
    fn name(&self) -> String;
    /// A keeper with a fresh state.
    fn make(&self) -> Result<Box<dyn Keeper>, String>;
}

/// The keepers of a reading, in the order they apply.
#[derive(Clone, Default)]
pub struct Keepers(pub Vec<Arc<dyn MakeKeeper>>);

impl Keepers {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Keepers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|k| k.name()))
            .finish()
    }
}

/// A reading's keeper, with its name for errors.
pub(crate) type Named = (Box<dyn Keeper>, String);

/// One reading's keepers made from `keepers`.
pub(crate) fn make_all(keepers: &Keepers) -> Result<Vec<Named>, crate::Error> {
    keepers
        .0
        .iter()
        .map(|k| {
            let name = k.name();
            match k.make() {
                Ok(keeper) => Ok((keeper, name)),
                Err(msg) => Err(crate::Error::Keeper { name, msg }),
            }
        })
        .collect()
}

/// Whether every keeper keeps the event (stopping at the first that does
/// not), or the first one's error.
pub(crate) fn keep_all(keepers: &mut [Named], at: &KeepAt<'_>) -> Result<bool, crate::Error> {
    for (k, name) in keepers {
        match k.keep(at) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(msg) => {
                return Err(crate::Error::Keeper {
                    name: name.clone(),
                    msg,
                })
            }
        }
    }
    Ok(true)
}
