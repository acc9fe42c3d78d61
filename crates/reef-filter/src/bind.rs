//! Binding expressions to CTF events: references become
//! [`reef_ctf::access::Field`] lookups in a cursor's current event.
//!
//! [`EventRefs`] collects the distinct `$evt` references of one or more
//! programs; [`EventRefs::env`] is the [`Lookup`] over a cursor's current
//! event. [`EventFilter`] is the whole of `--filter`: one expression over
//! the current event.

use std::cell::RefCell;

use reef_ctf::access::{Field, FieldVal, Scopes};
use reef_ctf::StreamCursor;

use crate::ast::{Ctx, Ref, Scope, Target};
use crate::error::ExprError;
use crate::eval::{Lookup, Program, Val};
use crate::parser::parse_expr;

#[derive(Debug)]
enum Source {
    Name,
    Timestamp,
    Field(RefCell<Field>),
}

/// The distinct current-event references of some programs; slot `i` is
/// the `i`-th.
#[derive(Debug, Default)]
pub struct EventRefs {
    keys: Vec<(Scope, Target)>,
    sources: Vec<Source>,
}

impl EventRefs {
    pub fn new() -> EventRefs {
        EventRefs::default()
    }

    /// The slot of `r` (its `ctx` is ignored: the caller decides which
    /// event it reads), or an error at `pos` for what cannot be looked up.
    pub fn slot(&mut self, r: &Ref, pos: usize) -> Result<u32, ExprError> {
        let key = (r.scope, r.target.clone());
        if let Some(i) = self.keys.iter().position(|k| *k == key) {
            return Ok(i as u32);
        }
        let source = match &r.target {
            Target::Name => Source::Name,
            Target::Timestamp => Source::Timestamp,
            Target::Field(path) => {
                if path.len() > 1 {
                    return Err(ExprError::new(
                        pos,
                        "members of structures (`a.b`) cannot be referenced yet: name a top-level field",
                    ));
                }
                let scopes = match r.scope {
                    Scope::Auto => Scopes::Any,
                    Scope::Payload => Scopes::Payload,
                    Scope::Context | Scope::StreamContext => Scopes::Context,
                    Scope::Header => Scopes::EventHeader,
                    Scope::PacketContext => Scopes::PacketContext,
                    Scope::PacketHeader => {
                        return Err(ExprError::new(
                            pos,
                            "packet header fields (`$pkt_header`) cannot be referenced",
                        ))
                    }
                };
                Source::Field(RefCell::new(Field::in_scopes(&path[0], scopes)))
            }
        };
        self.keys.push(key);
        self.sources.push(source);
        Ok((self.keys.len() - 1) as u32)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The value of slot `slot` in `cur`'s current event.
    pub fn get<'c>(&self, slot: u32, cur: &'c StreamCursor) -> Val<'c> {
        match &self.sources[slot as usize] {
            Source::Name => Val::Str(cur.event_name().as_bytes()),
            Source::Timestamp => cur.event_ns().map_or(Val::Missing, |n| Val::Int(n as i128)),
            Source::Field(f) => match f.borrow_mut().get(cur) {
                Some(v) => field_val(v),
                None => Val::Missing,
            },
        }
    }

    /// A [`Lookup`] of these references in `cur`'s current event.
    pub fn env<'c>(&'c self, cur: &'c StreamCursor) -> EventEnv<'c> {
        EventEnv { refs: self, cur }
    }
}

/// A [`FieldVal`] as a [`Val`]. A text array's value stops at its first
/// NUL, as babeltrace2 shows it.
pub fn field_val(v: FieldVal<'_>) -> Val<'_> {
    match v {
        FieldVal::U(u) => Val::Int(u as i128),
        FieldVal::I(i) => Val::Int(i as i128),
        FieldVal::F(f) => Val::Float(f),
        FieldVal::Str(s) => Val::Str(s.iter().position(|&c| c == 0).map_or(s, |n| &s[..n])),
    }
}

/// [`EventRefs`] over one cursor's current event.
pub struct EventEnv<'c> {
    refs: &'c EventRefs,
    cur: &'c StreamCursor,
}

impl Lookup for EventEnv<'_> {
    fn get(&self, slot: u32) -> Val<'_> {
        self.refs.get(slot, self.cur)
    }
}

/// An owned copy of a [`Val`], to keep a value of an event after the
/// cursor has moved on (period begin events, captures, activity keys).
#[derive(Debug, Clone, PartialEq)]
pub enum Owned {
    Missing,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(Box<[u8]>),
}

impl Owned {
    pub fn of(v: Val<'_>) -> Owned {
        match v {
            Val::Missing => Owned::Missing,
            Val::Bool(b) => Owned::Bool(b),
            Val::Int(i) => Owned::Int(i),
            Val::Float(f) => Owned::Float(f),
            Val::Str(s) => Owned::Str(s.into()),
        }
    }

    pub fn val(&self) -> Val<'_> {
        match self {
            Owned::Missing => Val::Missing,
            Owned::Bool(b) => Val::Bool(*b),
            Owned::Int(i) => Val::Int(*i),
            Owned::Float(f) => Val::Float(*f),
            Owned::Str(s) => Val::Str(s),
        }
    }
}

impl std::fmt::Display for Owned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owned::Missing => f.write_str("?"),
            Owned::Bool(b) => write!(f, "{b}"),
            Owned::Int(i) => write!(f, "{i}"),
            Owned::Float(x) => write!(f, "{x}"),
            Owned::Str(s) => f.write_str(&String::from_utf8_lossy(s)),
        }
    }
}

/// A `--filter` expression: a condition on the current event alone.
#[derive(Debug)]
pub struct EventFilter {
    prog: Program,
    refs: EventRefs,
}

impl EventFilter {
    /// Parses and compiles `text`; `$begin`/`$parent` references are errors.
    pub fn new(text: &str) -> Result<EventFilter, ExprError> {
        let e = parse_expr(text)?;
        let mut refs = EventRefs::new();
        let prog = Program::compile(&e, &mut |r, pos| {
            if r.ctx != Ctx::Evt {
                return Err(ExprError::new(
                    pos,
                    "`$begin`/`$parent` only have a meaning in period and activity expressions; a filter sees `$evt` only",
                ));
            }
            refs.slot(r, pos)
        })?;
        Ok(EventFilter { prog, refs })
    }

    /// Whether `cur`'s current event passes.
    pub fn matches(&self, cur: &StreamCursor) -> bool {
        self.prog.matches(&self.refs.env(cur))
    }
}
