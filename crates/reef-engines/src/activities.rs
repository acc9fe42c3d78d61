//! Activities, the engine of `reef activities`: intervals between a begin event and the matching end
//! event with the same key (per thread by default), e.g. a mutex held from
//! `lock:ACQUIRE` to `lock:RELEASE` of the same lock address.
//!
//! Pairing: an event that matches `--end` closes the most recent open
//! interval with the same key (nesting is last-in, first-out); an event
//! that matches `--begin` opens one. An event matching both closes first.
//! Ends with no open interval are counted, not reported; intervals still
//! open at the end of the trace are counted as unfinished.

//!
//! ```
//! use reef_engines::activities::{Activities, ActivitySpec};
//! use reef_engines::intervals::{run, IntervalEngine, ReportSpec};
//! use reef_read::ReadOptions;
//!
//! // Hard IRQ handlers, keyed by IRQ line and CPU.
//! let read = ReadOptions::new(["../../../shared/conformance/kernel-traces/bug446190"]);
//! let spec = ActivitySpec {
//!     begin: r#"$name == "irq_handler_entry""#.into(),
//!     end: r#"$name == "irq_handler_exit""#.into(),
//!     key: Some("irq,cpu_id".into()),
//! };
//! let report = ReportSpec { stats: true, top: Some(3), ..Default::default() };
//! let out = run::<_, Box<dyn std::error::Error>>(
//!     &read,
//!     &report,
//!     |src| Ok(Activities::new(&spec, src)?), // an engine per pass
//!     |_interval| Ok(()),                      // the log, as found
//! )?;
//! let top = out.report.top.unwrap();
//! assert!(!top.is_empty() && top.len() <= 3);
//! assert!(top.windows(2).all(|w| w[0].duration_ns >= w[1].duration_ns));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};

use reef_ctf::access::{Field, Scopes};
use reef_ctf::StreamCursor;
use reef_filter::ast::{Ctx, Expr};
use reef_filter::{parse_expr, EventRefs, ExprError, LocatedError, Program, Val};
use reef_read::{Msg, Source};

use crate::intervals::{Interval, IntervalEngine};

/// An activity definition, as the user writes it.
#[derive(Debug, Clone, Default)]
pub struct ActivitySpec {
    /// Condition on an event that begins an activity (`$evt` only).
    pub begin: String,
    /// Condition on an event that ends one.
    pub end: String,
    /// Fields whose values pair a begin with an end (`mutex`,
    /// `$evt.$ctx.vtid,$evt.irq`, ...). `None`: the thread (context
    /// `vtid`/`tid`, or libreef's packet context `tid`), else the stream.
    pub key: Option<String>,
}

fn only_evt(e: &Expr) -> Result<(), ExprError> {
    for (r, pos) in e.refs() {
        if r.ctx != Ctx::Evt {
            return Err(ExprError::new(
                pos,
                "activities see `$evt` only (pairing is by --key); use `reef periods` for `$begin`",
            ));
        }
    }
    Ok(())
}

fn compile(text: &str, refs: &mut EventRefs) -> Result<Program, ExprError> {
    let e = parse_expr(text)?;
    only_evt(&e)?;
    Program::compile(&e, &mut |r, pos| refs.slot(r, pos))
}

/// Checks a begin or end condition alone.
pub fn check_expr(s: &str) -> Result<(), ExprError> {
    compile(s, &mut EventRefs::new()).map(|_| ())
}

/// The key's parts: each a reference, separated by commas at top level.
fn key_parts(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c == ',' {
            out.push((start, &s[start..i]));
            start = i + 1;
        }
    }
    out.push((start, &s[start..]));
    out
}

fn compile_key(s: &str, refs: &mut EventRefs) -> Result<Vec<(String, Program)>, ExprError> {
    let mut out = Vec::new();
    for (at, part) in key_parts(s) {
        let shift = |e: ExprError| ExprError::new(e.pos + at, e.message);
        let e = parse_expr(part).map_err(shift)?;
        if !matches!(e, Expr::Ref { .. }) {
            return Err(ExprError::new(
                at + e.pos(),
                "a key is a field reference such as `mutex` or `$evt.$ctx.vtid`",
            ));
        }
        only_evt(&e).map_err(shift)?;
        let p = Program::compile(&e, &mut |r, pos| refs.slot(r, pos)).map_err(shift)?;
        out.push((part.trim().to_string(), p));
    }
    Ok(out)
}

/// Checks a key alone.
pub fn check_key(s: &str) -> Result<(), ExprError> {
    compile_key(s, &mut EventRefs::new()).map(|_| ())
}

/// A hashable key value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum KeyPart {
    Int(i128),
    Float(u64),
    Str(Box<[u8]>),
}

impl KeyPart {
    fn of(v: Val<'_>) -> Option<KeyPart> {
        Some(match v {
            Val::Missing => return None,
            Val::Bool(b) => KeyPart::Int(b as i128),
            Val::Int(i) => KeyPart::Int(i),
            Val::Float(f) => KeyPart::Float(f.to_bits()),
            Val::Str(s) => KeyPart::Str(s.into()),
        })
    }

    fn show(&self) -> String {
        match self {
            KeyPart::Int(i) => i.to_string(),
            KeyPart::Float(b) => f64::from_bits(*b).to_string(),
            KeyPart::Str(s) => format!("\"{}\"", String::from_utf8_lossy(s)),
        }
    }
}

/// How the key of an event is found.
enum KeyOf {
    Fields(Vec<(String, Program)>),
    /// The thread if the trace says, else the stream.
    Thread(Box<[Field; 3]>),
}

impl KeyOf {
    fn key(&mut self, refs: &EventRefs, cur: &StreamCursor, stream: usize) -> Option<Vec<KeyPart>> {
        match self {
            KeyOf::Fields(progs) => {
                let env = refs.env(cur);
                progs
                    .iter()
                    .map(|(_, p)| KeyPart::of(p.value(&env)))
                    .collect()
            }
            KeyOf::Thread(fields) => {
                let tid = fields
                    .iter_mut()
                    .find_map(|f: &mut Field| f.get(cur).and_then(|v| v.as_i64()));
                Some(match tid {
                    Some(t) => vec![KeyPart::Int(0), KeyPart::Int(t as i128)],
                    None => vec![KeyPart::Int(1), KeyPart::Int(stream as i128)],
                })
            }
        }
    }

    fn show(&self, k: &[KeyPart], streams: &[String]) -> String {
        match self {
            KeyOf::Fields(progs) => progs
                .iter()
                .zip(k)
                .map(|((n, _), v)| format!("{n} = {}", v.show()))
                .collect::<Vec<_>>()
                .join(", "),
            KeyOf::Thread(_) => match k {
                [KeyPart::Int(0), KeyPart::Int(t)] => format!("tid = {t}"),
                [_, KeyPart::Int(s)] => format!(
                    "stream = {}",
                    streams.get(*s as usize).map_or("?", String::as_str)
                ),
                _ => String::new(),
            },
        }
    }
}

/// An open activity: its begin time and tag.
type Begun = (i64, u64);

pub use crate::intervals::Tagger;

/// The activity engine: conditions compiled against the traces of one
/// reading, and the activities open per key.
pub struct Activities {
    refs: EventRefs,
    begin: Program,
    end: Program,
    key_of: KeyOf,
    /// Stream file names, for the default key's text.
    streams: Vec<String>,
    /// Per key seen: its group text and the begin times (and tags) of its
    /// open activities, most recent last.
    open: HashMap<Vec<KeyPart>, (String, Vec<Begun>)>,
    tagger: Option<Tagger>,
    /// End events with no open activity of their key.
    pub unmatched_ends: u64,
    /// Begin or end events that lack a key field (skipped).
    pub unkeyed: u64,
}

impl Activities {
    /// Compiles `spec` for the traces of `src`; errors show where.
    pub fn new(spec: &ActivitySpec, src: &Source) -> Result<Activities, LocatedError> {
        let located = |what: &str, text: &str, err: ExprError| LocatedError {
            what: what.into(),
            text: text.into(),
            err,
        };
        let mut refs = EventRefs::new();
        let begin =
            compile(&spec.begin, &mut refs).map_err(|e| located("--begin", &spec.begin, e))?;
        let end = compile(&spec.end, &mut refs).map_err(|e| located("--end", &spec.end, e))?;
        let key_of = match &spec.key {
            Some(k) => {
                KeyOf::Fields(compile_key(k, &mut refs).map_err(|e| located("--key", k, e))?)
            }
            None => KeyOf::Thread(Box::new([
                Field::in_scopes("vtid", Scopes::Context),
                Field::in_scopes("tid", Scopes::Context),
                Field::in_scopes("tid", Scopes::PacketContext),
            ])),
        };
        let streams = src
            .cursors()
            .iter()
            .map(|c| {
                c.trace.sources[c.source]
                    .files
                    .first()
                    .and_then(|f| f.path.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        Ok(Activities {
            refs,
            begin,
            end,
            key_of,
            streams,
            open: HashMap::new(),
            tagger: None,
            unmatched_ends: 0,
            unkeyed: 0,
        })
    }
}

impl Activities {
    /// Has `tagger` tag the begin and end events of every activity.
    pub fn set_tagger(&mut self, tagger: Tagger) {
        self.tagger = Some(tagger);
    }
}

impl IntervalEngine for Activities {
    fn event(&mut self, m: &Msg<'_>, ns: i64, found: &mut Vec<Interval>) {
        let env = self.refs.env(m.cursor);
        let is_end = self.end.matches(&env);
        let is_begin = self.begin.matches(&env);
        if !is_end && !is_begin {
            return;
        }
        let Some(key) = self.key_of.key(&self.refs, m.cursor, m.stream) else {
            self.unkeyed += 1;
            return;
        };
        let tag = self.tagger.as_mut().map_or(0, |t| t(m));
        if is_end {
            match self
                .open
                .get_mut(&key)
                .and_then(|(g, v)| Some((g.clone(), v.pop()?)))
            {
                Some((group, (b, btag))) => found.push(Interval {
                    name: String::new(),
                    begin_ns: b,
                    end_ns: ns,
                    duration_ns: ns - b,
                    group,
                    captures: Vec::new(),
                    tags: [btag, tag],
                }),
                None => self.unmatched_ends += 1,
            }
        }
        if is_begin {
            match self.open.get_mut(&key) {
                Some((_, v)) => v.push((ns, tag)),
                None => {
                    let group = self.key_of.show(&key, &self.streams);
                    self.open.insert(key, (group, vec![(ns, tag)]));
                }
            }
        }
    }

    /// Activities still open (under the empty name).
    fn unfinished(&self) -> BTreeMap<String, u64> {
        let left: u64 = self.open.values().map(|(_, v)| v.len() as u64).sum();
        BTreeMap::from([(String::new(), left)])
    }
}
