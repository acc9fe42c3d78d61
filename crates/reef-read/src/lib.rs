//! `reef-read`: the reading library every reef front end stands on (the
//! CLI, the viewer, the Python module, the converters).
//!
//! Give it paths and options ([`ReadOptions`]): it finds the traces under
//! the paths (recursively; `reef listen` capture files too), merges
//! directories that share a trace UUID (LTTng rotation chunks), names each
//! trace as babeltrace2 does, and hands out one [`Source`] of messages —
//! events, discarded-events and discarded-packets notices — in
//! babeltrace2's order, trimmed to a time window (streams are first moved
//! to the packet holding its beginning) and filtered by an expression of
//! `reef_filter`'s language. With several workers, streams are decoded on
//! threads; the order and content of messages do not depend on their
//! number.
//!
//! Counting events per name in one of the shared conformance traces,
//! keeping the scheduler's events of CPU 0 only:
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::ops::ControlFlow;
//! use reef_read::{ReadOptions, Source};
//!
//! let mut opts = ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]);
//! opts.filter = Some(r#"$evt.$name == "sched_*" && $evt.cpu_id == 0"#.into());
//! let mut src = Source::open(&opts)?;
//! let mut counts: BTreeMap<String, u64> = BTreeMap::new();
//! let stopped = src.for_each_event(|m, _ns| {
//!     *counts.entry(m.cursor.event_name().to_string()).or_default() += 1;
//!     Ok::<_, std::convert::Infallible>(ControlFlow::Continue(()))
//! });
//! // A damaged trace stops the loop; what was counted before stands.
//! assert!(matches!(stopped, Ok(None)));
//! assert!(counts.keys().all(|n| n.starts_with("sched_")));
//! assert!(counts["sched_switch"] > 0);
//! # Ok::<(), reef_read::Error>(())
//! ```
//!
//! A damaged input — a stream file whose last packet is cut, a metadata
//! file cut inside a declaration ([`reef_ctf::Damage`]) — is read up to the
//! damage: every event before it is given, in order, then the reading
//! ends with an error that names each damage ([`Ending`]).
//!
//! *API boundary*: the library prints nothing and never exits the process;
//! every failure is an [`Error`] that names the file, the byte offset and
//! what was expected. Progress is a byte counter ([`Source::progress`]);
//! drawing a bar is the front end's business.
//!
//! *Invariant*: memory is bounded by the number of streams, not by the
//! number of events: a [`Source`] holds one cursor per stream (and, with
//! workers, a few batches per stream).

mod error;
pub mod keeper;
pub mod live;
pub mod lttng_live;
mod open;
mod scan;
pub mod script;
mod source;

pub use error::Error;
pub use open::{open_traces, trace_label};
pub use reef_ctf::Item;
pub use reef_iter::time::TimeSpec;
pub use reef_iter::TraceLabel;
pub use scan::StreamScan;
pub use source::{Ending, Msg, Progress, ReadOptions, Source, Streams};

// A `Source` moves between threads (a server's worker, a Python object):
// this stops compiling if it no longer can.
const _: () = {
    fn send<T: Send>() {}
    let _ = send::<Source>;
};
