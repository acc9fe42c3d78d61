//! Periods: the engine of `reef periods` (lttng-periodlog / -periodstats /
//! -periodfreq / -periodtop).
//!
//! A period definition is `NAME[(PARENT)] : BEGIN [: END]`. On every event,
//! open periods are tested for their end first (children before parents),
//! then definitions for a new begin (parents before children, so a child
//! may begin on the event that begins its parent). Any number of periods of
//! one definition may be open at once; each event that matches BEGIN opens
//! one. Without END, the begin condition also ends the period (so
//! successive matches delimit back-to-back periods). In END, `$begin.$evt`
//! is the event that began the period; in either expression of a child,
//! `$parent.$begin.$evt` is the event that began the enclosing parent
//! period. A child period only exists within an open parent; when the
//! parent ends, the children still open are dropped, as are the periods
//! still open at the end of the trace (both counted as unfinished).

//!
//! ```
//! use reef_engines::intervals::{run, ReportSpec};
//! use reef_engines::periods::{PeriodSpec, Periods};
//! use reef_read::ReadOptions;
//!
//! let read = ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]);
//! let spec = PeriodSpec {
//!     periods: vec![r#"switch : $evt.$name == "sched_switch""#.into()],
//!     ..Default::default()
//! };
//! let report = ReportSpec { stats: true, ..Default::default() };
//! let out = run::<_, Box<dyn std::error::Error>>(
//!     &read,
//!     &report,
//!     |_src| Ok(Periods::new(&spec)?), // an engine per pass
//!     |_interval| Ok(()),               // the log, as found
//! )?;
//! // Back-to-back periods between successive sched_switch events.
//! assert_eq!(out.report.stats[0].name, "switch");
//! assert!(out.report.stats[0].summary.count > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use reef_ctf::StreamCursor;
use reef_filter::ast::{Ctx, Expr, Ref};
use reef_filter::{
    parse_captures, parse_period, EventRefs, ExprError, LocatedError, Lookup, Owned, Program, Val,
};
use reef_read::Msg;

use crate::intervals::{Interval, IntervalEngine, TagOf, Tagger};

/// Period definitions, as the user writes them.
#[derive(Debug, Clone, Default)]
pub struct PeriodSpec {
    /// `NAME[(PARENT)] : BEGIN_EXPR [: END_EXPR]`; a parent is defined
    /// before its children.
    pub periods: Vec<String>,
    /// `NAME : [N =] REF, ... [: [N =] REF, ...]`: what to record of each
    /// period of NAME from its begin event, then its end event.
    pub captures: Vec<String>,
    /// Capture names whose values split the statistics into groups.
    pub group_by: Vec<String>,
}

/// Slots at or above these read a saved begin event (this period's, the
/// parent period's); below, the current event.
const BEGIN_BASE: u32 = 1 << 20;
const PARENT_BASE: u32 = 1 << 21;

struct Def {
    name: String,
    children: Vec<usize>,
    begin: Program,
    end: Program,
    /// Current-event slots to save when a period of this definition begins:
    /// what its END and its children's `$parent` references read.
    saved: Vec<u32>,
    saved_refs: Vec<Ref>,
    begin_caps: Vec<(String, Program)>,
    end_caps: Vec<(String, Program)>,
}

struct Open {
    def: usize,
    begin_ns: i64,
    /// The tagger's word on the begin event.
    tag: u64,
    saved: Vec<Owned>,
    begin_caps: Vec<(String, Owned)>,
    children: Vec<Open>,
}

struct Env<'a> {
    refs: &'a EventRefs,
    cur: &'a StreamCursor,
    begin: &'a [Owned],
    parent: &'a [Owned],
}

impl Lookup for Env<'_> {
    fn get(&self, slot: u32) -> Val<'_> {
        if slot >= PARENT_BASE {
            self.parent
                .get((slot - PARENT_BASE) as usize)
                .map_or(Val::Missing, Owned::val)
        } else if slot >= BEGIN_BASE {
            self.begin
                .get((slot - BEGIN_BASE) as usize)
                .map_or(Val::Missing, Owned::val)
        } else {
            self.refs.get(slot, self.cur)
        }
    }
}

/// Which expression is being compiled: decides what `$begin` means.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Begin,
    End,
}

struct Builder {
    refs: EventRefs,
    defs: Vec<Def>,
}

impl Builder {
    /// The slot of a saved reference of definition `d`.
    fn saved_slot(&mut self, d: usize, r: &Ref, pos: usize) -> Result<u32, ExprError> {
        let mut plain = r.clone();
        plain.ctx = Ctx::Evt;
        let def = &mut self.defs[d];
        if let Some(i) = def.saved_refs.iter().position(|s| *s == plain) {
            return Ok(i as u32);
        }
        let slot = self.refs.slot(&plain, pos)?;
        let def = &mut self.defs[d];
        def.saved_refs.push(plain);
        def.saved.push(slot);
        Ok((def.saved.len() - 1) as u32)
    }

    fn compile(
        &mut self,
        e: &Expr,
        d: usize,
        parent: Option<usize>,
        role: Role,
    ) -> Result<Program, ExprError> {
        // The resolver needs `self` mutably: find the slots first.
        let mut slots = Vec::new();
        for (r, pos) in e.refs() {
            let s = match (r.ctx, role) {
                (Ctx::Evt, _) | (Ctx::Begin, Role::Begin) => {
                    let mut plain = r.clone();
                    plain.ctx = Ctx::Evt;
                    self.refs.slot(&plain, pos)?
                }
                (Ctx::Begin, Role::End) => BEGIN_BASE + self.saved_slot(d, r, pos)?,
                (Ctx::ParentBegin, _) => match parent {
                    Some(p) => PARENT_BASE + self.saved_slot(p, r, pos)?,
                    None => {
                        return Err(ExprError::new(
                            pos,
                            "`$parent` needs a parent period: `NAME(PARENT) : ...`",
                        ))
                    }
                },
            };
            slots.push((pos, s));
        }
        // References are told apart by their position in the text.
        Program::compile(e, &mut |_, pos| {
            Ok(slots
                .iter()
                .find(|(p, _)| *p == pos)
                .map_or(u32::MAX, |(_, s)| *s))
        })
    }
}

fn located(what: &str, text: &str, err: ExprError) -> LocatedError {
    LocatedError {
        what: what.into(),
        text: text.into(),
        err,
    }
}

/// Checks and compiles the definitions and captures.
fn build(a: &PeriodSpec) -> Result<Builder, LocatedError> {
    let mut b = Builder {
        refs: EventRefs::new(),
        defs: Vec::new(),
    };
    let mut parents = Vec::new();
    for text in &a.periods {
        let pd = parse_period(text).map_err(|e| located("--period", text, e))?;
        let name = pd.name.clone().unwrap_or_default();
        if b.defs.iter().any(|d| d.name == name) {
            return Err(located(
                "--period",
                text,
                ExprError::new(0, format!("period `{name}` is defined twice")),
            ));
        }
        let parent = match &pd.parent {
            Some((p, pos)) => match b.defs.iter().position(|d| d.name == *p) {
                Some(i) => Some(i),
                None => {
                    return Err(located(
                        "--period",
                        text,
                        ExprError::new(
                            *pos,
                            format!("no period named `{p}` is defined before this one"),
                        ),
                    ))
                }
            },
            None => None,
        };
        let d = b.defs.len();
        b.defs.push(Def {
            name,
            children: Vec::new(),
            begin: Program::compile(&Expr::Int { v: 0, pos: 0 }, &mut |_, _| Ok(0))
                .map_err(|e| located("--period", text, e))?,
            end: Program::compile(&Expr::Int { v: 0, pos: 0 }, &mut |_, _| Ok(0))
                .map_err(|e| located("--period", text, e))?,
            saved: Vec::new(),
            saved_refs: Vec::new(),
            begin_caps: Vec::new(),
            end_caps: Vec::new(),
        });
        let begin = b
            .compile(&pd.begin, d, parent, Role::Begin)
            .map_err(|e| located("--period", text, e))?;
        // Without END, BEGIN ends the period too, `$begin` then meaning the
        // event that began it.
        let end_expr = pd.end.as_ref().unwrap_or(&pd.begin);
        let end = b
            .compile(end_expr, d, parent, Role::End)
            .map_err(|e| located("--period", text, e))?;
        b.defs[d].begin = begin;
        b.defs[d].end = end;
        if let Some(p) = parent {
            b.defs[p].children.push(d);
        }
        parents.push(parent);
    }
    for text in &a.captures {
        let cd = parse_captures(text).map_err(|e| located("--period-captures", text, e))?;
        let Some(d) = b.defs.iter().position(|d| d.name == cd.name) else {
            return Err(located(
                "--period-captures",
                text,
                ExprError::new(cd.name_pos, format!("no period named `{}`", cd.name)),
            ));
        };
        for (list, role) in [(&cd.begin, Role::Begin), (&cd.end, Role::End)] {
            for c in list {
                let e = Expr::Ref {
                    r: c.r.clone(),
                    pos: c.pos,
                };
                let p = b
                    .compile(&e, d, parents[d], role)
                    .map_err(|e| located("--period-captures", text, e))?;
                let caps = if role == Role::Begin {
                    &mut b.defs[d].begin_caps
                } else {
                    &mut b.defs[d].end_caps
                };
                if caps.iter().any(|(n, _)| *n == c.name) {
                    return Err(located(
                        "--period-captures",
                        text,
                        ExprError::new(c.pos, format!("capture `{}` is defined twice", c.name)),
                    ));
                }
                caps.push((c.name.clone(), p));
            }
        }
    }
    Ok(b)
}

/// The period engine: definitions compiled against the traces of one
/// reading, and the periods open.
pub struct Periods {
    b: Builder,
    roots: Vec<usize>,
    group_by: Vec<String>,
    opens: Vec<Open>,
    unfinished: BTreeMap<String, u64>,
    tagger: Option<Tagger>,
}

impl Periods {
    /// Compiles the definitions and captures of `spec`; errors show where.
    pub fn new(spec: &PeriodSpec) -> Result<Periods, LocatedError> {
        let b = build(spec)?;
        let roots: Vec<usize> = (0..b.defs.len())
            .filter(|&d| !b.defs.iter().any(|p| p.children.contains(&d)))
            .collect();
        let mut group_by = spec.group_by.clone();
        group_by.sort();
        Ok(Periods {
            b,
            roots,
            group_by,
            opens: Vec::new(),
            unfinished: BTreeMap::new(),
            tagger: None,
        })
    }

    /// Has `tagger` tag the begin and end events of every period.
    pub fn set_tagger(&mut self, tagger: Tagger) {
        self.tagger = Some(tagger);
    }

    fn count_unfinished_in(unfinished: &mut BTreeMap<String, u64>, b: &Builder, o: &Open) {
        *unfinished.entry(b.defs[o.def].name.clone()).or_default() += 1;
        for c in &o.children {
            Self::count_unfinished_in(unfinished, b, c);
        }
    }

    /// Ends the periods of `opens` (children first) that `cur` ends.
    fn end(
        &mut self,
        opens: &mut Vec<Open>,
        parent: &[Owned],
        cur: &StreamCursor,
        ns: i64,
        found: &mut Vec<Interval>,
        tag: &mut TagOf,
    ) {
        let mut i = 0;
        while i < opens.len() {
            {
                let o = &mut opens[i];
                let mut kids = std::mem::take(&mut o.children);
                self.end(&mut kids, &o.saved, cur, ns, found, tag);
                opens[i].children = kids;
            }
            let o = &opens[i];
            let def = &self.b.defs[o.def];
            let env = Env {
                refs: &self.b.refs,
                cur,
                begin: &o.saved,
                parent,
            };
            if def.end.matches(&env) {
                let mut captures: Vec<(String, String)> = o
                    .begin_caps
                    .iter()
                    .map(|(n, v)| (n.clone(), v.to_string()))
                    .collect();
                for (n, p) in &def.end_caps {
                    captures.push((n.clone(), Owned::of(p.value(&env)).to_string()));
                }
                let mut group = String::new();
                for k in &self.group_by {
                    if let Some((_, v)) = captures.iter().find(|(n, _)| n == k) {
                        if !group.is_empty() {
                            group.push_str(", ");
                        }
                        group.push_str(&format!("{k} = {v}"));
                    }
                }
                let o = opens.remove(i);
                for c in &o.children {
                    Self::count_unfinished_in(&mut self.unfinished, &self.b, c);
                }
                found.push(Interval {
                    name: def.name.clone(),
                    begin_ns: o.begin_ns,
                    end_ns: ns,
                    duration_ns: ns - o.begin_ns,
                    group,
                    captures,
                    tags: [o.tag, tag.get()],
                });
            } else {
                i += 1;
            }
        }
    }

    /// Begins the periods of definitions `defs` that `cur` begins, then
    /// does the same within each open period.
    fn begin(
        b: &Builder,
        opens: &mut Vec<Open>,
        defs: &[usize],
        parent: &[Owned],
        cur: &StreamCursor,
        ns: i64,
        tag: &mut TagOf,
    ) {
        for &d in defs {
            let def = &b.defs[d];
            let env = Env {
                refs: &b.refs,
                cur,
                begin: &[],
                parent,
            };
            if def.begin.matches(&env) {
                opens.push(Open {
                    def: d,
                    begin_ns: ns,
                    tag: tag.get(),
                    saved: def
                        .saved
                        .iter()
                        .map(|&s| Owned::of(b.refs.get(s, cur)))
                        .collect(),
                    begin_caps: def
                        .begin_caps
                        .iter()
                        .map(|(n, p)| (n.clone(), Owned::of(p.value(&env))))
                        .collect(),
                    children: Vec::new(),
                });
            }
        }
        for o in opens.iter_mut() {
            let kids = &b.defs[o.def].children;
            if !kids.is_empty() {
                Self::begin(b, &mut o.children, kids, &o.saved, cur, ns, tag);
            }
        }
    }
}

impl IntervalEngine for Periods {
    fn event(&mut self, m: &Msg<'_>, ns: i64, found: &mut Vec<Interval>) {
        let mut opens = std::mem::take(&mut self.opens);
        let mut tagger = self.tagger.take();
        let mut tag = TagOf::new(tagger.as_mut(), m);
        if !opens.is_empty() {
            self.end(&mut opens, &[], m.cursor, ns, found, &mut tag);
        }
        Self::begin(
            &self.b,
            &mut opens,
            &self.roots,
            &[],
            m.cursor,
            ns,
            &mut tag,
        );
        self.opens = opens;
        self.tagger = tagger;
    }

    fn unfinished(&self) -> BTreeMap<String, u64> {
        let mut u = self.unfinished.clone();
        for o in &self.opens {
            Self::count_unfinished_in(&mut u, &self.b, o);
        }
        u
    }
}

/// Checks a period definition alone (its syntax; references are checked
/// by [`Periods::new`]).
pub fn check_period(s: &str) -> Result<(), ExprError> {
    parse_period(s).map(|_| ())
}

/// Checks a captures definition alone.
pub fn check_captures(s: &str) -> Result<(), ExprError> {
    parse_captures(s).map(|_| ())
}
