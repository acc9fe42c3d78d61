//! `reef activities`: intervals between a begin event and the matching end
//! event with the same key (per thread by default), e.g. a mutex held from
//! `lock:ACQUIRE` to `lock:RELEASE` of the same lock address.
//!
//! Pairing: an event that matches `--end` closes the most recent open
//! interval with the same key (nesting is last-in, first-out); an event
//! that matches `--begin` opens one. An event matching both closes first.
//! Ends with no open interval are counted, not reported; intervals still
//! open at the end of the trace are counted as unfinished.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reef_ctf::access::{Field, Scopes};
use reef_ctf::{Item, StreamCursor};
use reef_filter::ast::{Ctx, Expr};
use reef_filter::{parse_expr, EventRefs, ExprError, Program, Val};
use reef_iter::time::TimeSpec;

use crate::intervals::{Interval, ReportOpts, Reporter};
use crate::source::{ReadOpts, Source};

#[derive(clap::Args)]
#[command(
    after_help = "Example (the mutex of examples/demo.c, keyed by its address):
  reef activities --begin '$evt.$name == \"lock:ACQUIRE\"' \\
      --end '$evt.$name == \"lock:RELEASE\"' --key mutex --log examples/build/trace"
)]
pub struct ActivitiesArgs {
    /// Trace directories, or directories searched recursively for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Condition on an event that begins an activity, e.g.
    /// `$evt.$name == "lock:ACQUIRE"`.
    #[arg(long, value_name = "EXPR", value_parser = check_expr)]
    pub begin: String,
    /// Condition on an event that ends an activity.
    #[arg(long, value_name = "EXPR", value_parser = check_expr)]
    pub end: String,
    /// Fields whose values pair a begin with an end (`mutex`,
    /// `$evt.$ctx.vtid,$evt.irq`, ...). Default: the thread (context
    /// `vtid`/`tid`, or libreef's packet context `tid`), else the stream
    /// (one per CPU in kernel traces).
    #[arg(long, value_name = "FIELD[,FIELD]", value_parser = check_key)]
    pub key: Option<String>,
    /// Keep only the events for which this expression is true (before
    /// pairing).
    #[arg(long, value_name = "EXPR", value_parser = check_filter)]
    pub filter: Option<String>,
    /// Skip events before this time (the formats of `reef print --begin`).
    #[arg(long, value_name = "TIME")]
    pub from: Option<TimeSpec>,
    /// Stop after this time.
    #[arg(long, value_name = "TIME")]
    pub to: Option<TimeSpec>,
    /// Decode streams on this many worker threads.
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    #[command(flatten)]
    pub report: ReportOpts,
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

fn check_expr(s: &str) -> Result<String, String> {
    compile(s, &mut EventRefs::new())
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
}

fn check_filter(s: &str) -> Result<String, String> {
    reef_filter::EventFilter::new(s)
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
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

fn check_key(s: &str) -> Result<String, String> {
    compile_key(s, &mut EventRefs::new())
        .map(|_| s.to_string())
        .map_err(|e| e.render(s))
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

pub fn run(a: &ActivitiesArgs) -> anyhow::Result<ExitCode> {
    let read = ReadOpts {
        paths: a.paths.clone(),
        begin: a.from,
        end: a.to,
        workers: a.workers,
        filter: a.filter.clone(),
    };
    // By default, each activity and the statistics.
    let mut opts = a.report.clone();
    if !(opts.log || opts.stats || opts.freq || opts.top.is_some()) {
        opts.log = true;
        opts.stats = true;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut rep = Reporter::new(&opts, &mut out, false);
    let mut notes = (0, 0, 0, None);
    for pass in 0..rep.passes() {
        rep.start_pass(pass)?;
        // Everything is rebuilt per pass: field caches belong to the
        // traces they were filled on.
        notes = one_pass(a, &read, &mut rep)?;
        if notes.3.is_some() {
            break;
        }
    }
    let (left, unmatched_ends, unkeyed, failure) = notes;
    rep.finish(&BTreeMap::from([(String::new(), left)]))?;
    out.flush()?;
    if unmatched_ends > 0 {
        eprintln!(
            "reef: note: {unmatched_ends} end event(s) with no open activity of the same key"
        );
    }
    if unkeyed > 0 {
        eprintln!("reef: note: {unkeyed} begin/end event(s) lack a key field and were skipped");
    }
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Reads the traces once, giving each activity to `rep`. Returns the
/// activities left open, the ends with nothing open, the events with no
/// key, and the error that stopped the reading, if any.
fn one_pass(
    a: &ActivitiesArgs,
    read: &ReadOpts,
    rep: &mut Reporter,
) -> anyhow::Result<(u64, u64, u64, Option<reef_ctf::Error>)> {
    let located = |what: &str, text: &str, err: ExprError| reef_filter::LocatedError {
        what: what.into(),
        text: text.into(),
        err,
    };
    let mut refs = EventRefs::new();
    let begin = compile(&a.begin, &mut refs).map_err(|e| located("--begin", &a.begin, e))?;
    let end = compile(&a.end, &mut refs).map_err(|e| located("--end", &a.end, e))?;
    let mut key_of = match &a.key {
        Some(k) => KeyOf::Fields(compile_key(k, &mut refs).map_err(|e| located("--key", k, e))?),
        None => KeyOf::Thread(Box::new([
            Field::in_scopes("vtid", Scopes::Context),
            Field::in_scopes("tid", Scopes::Context),
            Field::in_scopes("tid", Scopes::PacketContext),
        ])),
    };
    let mut src = Source::open(read)?;
    let streams: Vec<String> = src
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
    // Per key seen: its group text and the begin times of its open
    // activities, most recent last.
    let mut open: HashMap<Vec<KeyPart>, (String, Vec<i64>)> = HashMap::new();
    let mut unmatched_ends = 0u64;
    let mut unkeyed = 0u64;
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
        let env = refs.env(m.cursor);
        let is_end = end.matches(&env);
        let is_begin = begin.matches(&env);
        if !is_end && !is_begin {
            continue;
        }
        let Some(key) = key_of.key(&refs, m.cursor, m.stream) else {
            unkeyed += 1;
            continue;
        };
        if is_end {
            match open
                .get_mut(&key)
                .and_then(|(g, v)| Some((g.clone(), v.pop()?)))
            {
                Some((group, b)) => rep.push(Interval {
                    name: String::new(),
                    begin_ns: b,
                    end_ns: ns,
                    duration_ns: ns - b,
                    group,
                    captures: Vec::new(),
                })?,
                None => unmatched_ends += 1,
            }
        }
        if is_begin {
            match open.get_mut(&key) {
                Some((_, v)) => v.push(ns),
                None => {
                    let group = key_of.show(&key, &streams);
                    open.insert(key, (group, vec![ns]));
                }
            }
        }
    }
    let left: u64 = open.values().map(|(_, v)| v.len() as u64).sum();
    Ok((left, unmatched_ends, unkeyed, failure))
}
