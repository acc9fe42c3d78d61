//! `reef-engines`: what reef computes over a reading [`reef_read::Source`],
//! as values that front ends render (the CLI as text and JSON; the viewer,
//! the Python module and the converters in their own ways) — so every
//! front end gives the same answers.
//!
//! - [`stats`]: events per name, stream, thread and process; time range,
//!   rates, discarded events and packets (`reef stats`).
//! - [`shape`]: each trace's shape with every field decoded (`reef check`).
//! - [`activities`]: begin/end events paired by key (`reef activities`).
//! - [`periods`]: nested periods with captures and groups (`reef periods`,
//!   lttng-analyses' period commands).
//! - [`intervals`]: the reports of both — statistics, frequency
//!   distribution, longest — and the passes that drive them.
//!
//! The kernel analyses (cputop, syscallstats, ...) are in `reef-analyses`.
//!
//! ```
//! use reef_read::{ReadOptions, Source};
//! let mut opts = ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]);
//! opts.filter = Some(r#"$evt.$name == "sched_switch""#.into());
//! let (stats, stopped) = reef_engines::stats::collect(&mut Source::open(&opts)?);
//! assert!(stopped.is_none());
//! assert_eq!(stats.event_names.len(), 1);
//! assert_eq!(stats.event_names[0].count, stats.events);
//! # Ok::<(), reef_read::Error>(())
//! ```
//!
//! *Invariant*: memory is bounded by streams, event classes, threads, open
//! intervals and groups — never by the number of events. Statistics are
//! running sums; the top N is a bounded heap; a frequency distribution
//! reads the trace twice rather than keep durations.

pub mod activities;
pub mod intervals;
pub mod periods;
pub mod shape;
pub mod stats;
