//! `reef periods`: lttng-periodlog / -periodstats / -periodfreq /
//! -periodtop in one command.
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

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use reef_ctf::{Item, StreamCursor};
use reef_filter::ast::{Ctx, Expr, Ref};
use reef_filter::{
    parse_captures, parse_period, EventRefs, ExprError, LocatedError, Lookup, Owned, Program, Val,
};

use crate::intervals::{Interval, ReportOpts, Reporter};
use crate::source::{ReadOpts, Source};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  # time from each irq_handler_entry to the exit of the same IRQ on the same CPU
  reef periods --period 'irq : $evt.$name == \"irq_handler_entry\" : \\
      $evt.$name == \"irq_handler_exit\" && $evt.irq == $begin.$evt.irq && \\
      $evt.cpu_id == $begin.$evt.cpu_id' --freq TRACE
  # a parent period per worker, a child per lock hold of that worker's thread
  reef periods --period 'work : $evt.$name == \"worker:BEGIN\" : $evt.$name == \"worker:END\" && $evt.id == $begin.$evt.id' \\
      --period 'hold(work) : $evt.$name == \"lock:ACQUIRE\" && $evt.id == $parent.$begin.$evt.id : \\
      $evt.$name == \"lock:RELEASE\" && $evt.id == $begin.$evt.id' \\
      --period-captures 'hold : id = $evt.id' --group-by id --stats TRACE")]
pub struct PeriodsArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// A period: `NAME[(PARENT)] : BEGIN_EXPR [: END_EXPR]` (repeatable;
    /// a parent must be defined before its children).
    #[arg(long, required = true, value_name = "DEF", value_parser = check_period)]
    pub period: Vec<String>,
    /// What to record of each period of NAME: `NAME : [N =] REF, ... [:
    /// [N =] REF, ...]`, from its begin event then its end event.
    #[arg(long, value_name = "CAPTURES", value_parser = check_captures)]
    pub period_captures: Vec<String>,
    /// Group the statistics by these capture names.
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    pub group_by: Vec<String>,
    #[command(flatten)]
    pub report: ReportOpts,
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

fn located(what: &str, text: &str, err: ExprError) -> anyhow::Error {
    LocatedError {
        what: what.into(),
        text: text.into(),
        err,
    }
    .into()
}

/// Checks and compiles the definitions and captures.
fn build(a: &PeriodsArgs) -> anyhow::Result<Builder> {
    let mut b = Builder {
        refs: EventRefs::new(),
        defs: Vec::new(),
    };
    let mut parents = Vec::new();
    for text in &a.period {
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
    for text in &a.period_captures {
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

/// Checks a period definition alone (when the command line is parsed).
pub fn check_period(s: &str) -> Result<String, String> {
    parse_period(s)
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
}

/// Checks a captures definition alone (when the command line is parsed).
pub fn check_captures(s: &str) -> Result<String, String> {
    parse_captures(s)
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
}

struct Run<'a, 'w> {
    b: &'a Builder,
    group_by: &'a [String],
    rep: &'a mut Reporter<'w>,
    unfinished: BTreeMap<String, u64>,
}

impl Run<'_, '_> {
    fn count_unfinished(&mut self, o: &Open) {
        *self
            .unfinished
            .entry(self.b.defs[o.def].name.clone())
            .or_default() += 1;
        for c in &o.children {
            self.count_unfinished(c);
        }
    }

    /// Ends the periods of `opens` (children first) that `cur` ends.
    fn end(
        &mut self,
        opens: &mut Vec<Open>,
        parent: &[Owned],
        cur: &StreamCursor,
        ns: i64,
    ) -> anyhow::Result<()> {
        let mut i = 0;
        while i < opens.len() {
            {
                let o = &mut opens[i];
                let mut kids = std::mem::take(&mut o.children);
                self.end(&mut kids, &o.saved, cur, ns)?;
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
                let mut keys: Vec<&String> = self.group_by.iter().collect();
                keys.sort();
                for k in keys {
                    if let Some((_, v)) = captures.iter().find(|(n, _)| n == k) {
                        if !group.is_empty() {
                            group.push_str(", ");
                        }
                        group.push_str(&format!("{k} = {v}"));
                    }
                }
                let o = opens.remove(i);
                for c in &o.children {
                    self.count_unfinished(c);
                }
                self.rep.push(Interval {
                    name: def.name.clone(),
                    begin_ns: o.begin_ns,
                    end_ns: ns,
                    duration_ns: ns - o.begin_ns,
                    group,
                    captures,
                })?;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Begins the periods of definitions `defs` that `cur` begins, then
    /// does the same within each open period.
    fn begin(
        &mut self,
        opens: &mut Vec<Open>,
        defs: &[usize],
        parent: &[Owned],
        cur: &StreamCursor,
        ns: i64,
    ) {
        let b = self.b;
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
                self.begin(&mut o.children, kids, &o.saved, cur, ns);
            }
        }
    }
}

pub fn run(a: &PeriodsArgs) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut rep = Reporter::new(&a.report, &mut out, true);
    let mut unfinished = BTreeMap::new();
    let mut stopped = None;
    for pass in 0..rep.passes() {
        rep.start_pass(pass)?;
        // Everything is rebuilt per pass: field caches belong to the
        // traces they were filled on.
        let b = build(a)?;
        let roots: Vec<usize> = (0..b.defs.len())
            .filter(|&d| !b.defs.iter().any(|p| p.children.contains(&d)))
            .collect();
        let mut src = Source::open(&a.read)?;
        let mut run = Run {
            b: &b,
            group_by: &a.group_by,
            rep: &mut rep,
            unfinished: BTreeMap::new(),
        };
        let mut opens: Vec<Open> = Vec::new();
        // A decoding error ends the reading; what was read is still reported.
        let mut failure = None;
        loop {
            let m = match src.next() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            if m.item != Item::Event {
                continue;
            }
            let Some(ns) = m.ns else { continue };
            if !opens.is_empty() {
                run.end(&mut opens, &[], m.cursor, ns)?;
            }
            run.begin(&mut opens, &roots, &[], m.cursor, ns);
        }
        for o in &opens {
            run.count_unfinished(o);
        }
        unfinished = run.unfinished;
        if let Some(e) = failure {
            stopped = Some(e);
            break;
        }
    }
    rep.finish(&unfinished)?;
    out.flush()?;
    match stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
