//! `reef-filter`: the expression language of `reef --filter`, `reef
//! periods` and `reef activities`.
//!
//! Text is split into tokens ([`lexer`]), parsed into an [`ast::Expr`]
//! ([`parser`]), then compiled into a [`Program`] whose references are
//! slots chosen by the caller ([`eval`]). Evaluating a program allocates
//! nothing. Every error carries the byte position it is about
//! ([`ExprError::render`] shows the expression with a caret).
//!
//! ```
//! use reef_filter::{parse_expr, Lookup, Program, Val, ast::Target};
//!
//! struct Event { name: &'static str, tid: i128 }
//! impl Lookup for Event {
//!     fn get(&self, slot: u32) -> Val<'_> {
//!         match slot {
//!             0 => Val::Str(self.name.as_bytes()),
//!             1 => Val::Int(self.tid),
//!             _ => Val::Missing,
//!         }
//!     }
//! }
//!
//! let e = parse_expr(r#"$evt.$name == "sched_*" && $evt.tid > 100"#)?;
//! let p = Program::compile(&e, &mut |r, _pos| Ok(match &r.target {
//!     Target::Name => 0,
//!     Target::Field(path) if path[0] == "tid" => 1,
//!     _ => 2,
//! }))?;
//! assert!(p.matches(&Event { name: "sched_switch", tid: 1234 }));
//! assert!(!p.matches(&Event { name: "irq_handler_entry", tid: 1234 }));
//! # Ok::<(), reef_filter::ExprError>(())
//! ```
//!
//! The language knows nothing of CTF; [`bind`] ties references to a
//! trace's events ([`reef_ctf::access`]), and [`EventFilter`] is the whole
//! of `--filter`.

pub mod ast;
pub mod bind;
pub mod error;
pub mod eval;
pub mod glob;
pub mod lexer;
pub mod parser;

pub use bind::{EventFilter, EventRefs, Owned};
pub use error::{ExprError, LocatedError};
pub use eval::{Lookup, Program, Val};
pub use parser::{parse_captures, parse_expr, parse_period};
