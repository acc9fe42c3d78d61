//! `reef profile`: sampled call stacks (`reef:sample`) and function
//! entry/exit (`reef:func_entry/exit`, LTTng-UST's
//! `lttng_ust_cyg_profile*:func_entry/func_exit`), symbolized with the
//! objects the trace recorded (`reef:object`, `lttng_ust_statedump:*`),
//! as folded stacks, speedscope JSON, pprof, an SVG flame graph or a
//! call tree with self and total time.

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use reef_ctf::access::{Field, Scopes};
use reef_ctf::decode::Value;
use reef_ctf::model::EnvValue;
use reef_profile::{CallTree, Mapping, Node, Stacks, Symbolizer};
use reef_read::{Msg, Source};

use crate::source::ReadOpts;

#[derive(clap::Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Folded stacks, `a;b;c N` (the default): N samples, or for function
    /// entry/exit traces N ns of self time.
    #[arg(long, conflicts_with_all = ["speedscope", "tree", "pprof", "svg"])]
    pub folded: bool,
    /// speedscope JSON (<https://www.speedscope.app>) instead.
    #[arg(long, conflicts_with_all = ["tree", "pprof", "svg"])]
    pub speedscope: bool,
    /// pprof's profile.proto, gzipped (`go tool pprof`), instead; groups
    /// as `thread` or `process` labels.
    #[arg(long, conflicts_with_all = ["tree", "svg"])]
    pub pprof: bool,
    /// An SVG flame graph instead.
    #[arg(long, conflicts_with = "tree")]
    pub svg: bool,
    /// Where the events were emitted: every event with an instruction
    /// pointer context (`ip`: LTTng-UST's `lttng add-context -u -t ip`)
    /// counted under the function holding that address, its name as the
    /// innermost frame (the default when the trace has neither samples
    /// nor function entry/exit events).
    #[arg(long, conflicts_with = "tree")]
    pub events: bool,
    /// The call tree of function entry/exit events: calls, total and self
    /// time per path.
    #[arg(long)]
    pub tree: bool,
    /// One profile per thread (the thread's first frame: `procname-tid`).
    #[arg(long, conflicts_with = "per_process")]
    pub per_thread: bool,
    /// One profile per process (`procname-pid`).
    #[arg(long)]
    pub per_process: bool,
    /// Also look for debug files here (`.build-id/xx/yyyy.debug`,
    /// `.gnu_debuglink` names), before /usr/lib/debug.
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

const OBJECTS_FILTER: &str =
    r#"$evt.$name == "reef:object" || $evt.$name == "lttng_ust_statedump:*""#;

/// The unsigned integers of an event's payload, in order.
fn payload_u64(m: &Msg) -> Vec<u64> {
    m.cursor
        .event
        .payload()
        .iter()
        .filter_map(|v| match v {
            Value::U(u) => Some(*u),
            Value::I(i) => Some(*i as u64),
            _ => None,
        })
        .collect()
}

/// The payload's first string (or byte run).
fn payload_str(m: &Msg) -> Option<String> {
    m.cursor.event.payload().iter().find_map(|v| match v {
        Value::Bytes { off, len } => m
            .cursor
            .data()
            .get(*off..off + len)
            .map(|b| String::from_utf8_lossy(b).into_owned()),
        _ => None,
    })
}

/// A sequence after `skip` leading integers: its elements (the length, when
/// decoded as an integer, is dropped).
fn sequence(vals: &[u64], skip: usize) -> &[u64] {
    let rest = vals.get(skip..).unwrap_or(&[]);
    match rest.first() {
        Some(&n) if n as usize == rest.len() - 1 => &rest[1..],
        _ => rest,
    }
}

struct Groups {
    tid: Field,
    vtid: Field,
    vpid: Field,
    procname: Field,
    per_thread: bool,
    per_process: bool,
}

impl Groups {
    fn key(&mut self, m: &Msg) -> String {
        if !self.per_thread && !self.per_process {
            return String::new();
        }
        let meta = &m.cursor.trace.class.meta;
        let env = |k: &str| match meta.env_get(k) {
            Some(EnvValue::Int(i)) => Some(i.to_string()),
            Some(EnvValue::Str(s)) => Some(s.clone()),
            None => None,
        };
        let proc_ = self
            .procname
            .get(m.cursor)
            .and_then(|v| v.as_str().map(|s| s.into_owned()))
            .or_else(|| env("procname"))
            .unwrap_or_else(|| "?".into());
        if self.per_process {
            let pid = self
                .vpid
                .get(m.cursor)
                .and_then(|v| v.as_i64())
                .map(|v| v.to_string())
                .or_else(|| env("vpid"))
                .unwrap_or_else(|| "?".into());
            return format!("{proc_}-{pid}");
        }
        let tid = self
            .vtid
            .get(m.cursor)
            .or_else(|| self.tid.get(m.cursor))
            .and_then(|v| v.as_i64())
            .map_or("?".into(), |v| v.to_string());
        format!("{proc_}-{tid}")
    }
}

/// Objects from the statedump events, read from the whole trace first (a
/// window or a filter must not hide them).
fn read_objects(a: &ProfileArgs, sym: &mut Symbolizer) -> anyhow::Result<()> {
    let mut opts = a.read.options();
    opts.begin = None;
    opts.end = None;
    opts.filter = Some(OBJECTS_FILTER.into());
    opts.script = None;
    let mut src = Source::open(&opts)?;
    // LTTng gives the build id in its own event, keyed by base address.
    let mut lttng: HashMap<u64, Mapping> = HashMap::new();
    let mut path_f = Field::new("path");
    let stopped = src.for_each_event(|m, _| {
        let name = m.cursor.event_name();
        let v = payload_u64(m);
        if name == "reef:object" && v.len() >= 5 {
            let build_id: Vec<u8> = sequence(&v, 4).iter().map(|b| *b as u8).collect();
            sym.add(Mapping {
                start: v[2],
                end: v[2].saturating_add(v[3]),
                bias: v[1],
                path: payload_str(m).unwrap_or_default(),
                build_id,
            });
        } else if name == "lttng_ust_statedump:bin_info" && v.len() >= 2 {
            let path = path_f
                .get(m.cursor)
                .and_then(|p| p.as_str().map(|s| s.into_owned()))
                .unwrap_or_default();
            let e = lttng.entry(v[0]).or_insert_with(|| Mapping {
                start: v[0],
                end: v[0] + v[1],
                bias: v[0],
                path: String::new(),
                build_id: Vec::new(),
            });
            e.end = v[0] + v[1];
            e.path = path;
            // A position-dependent executable: addresses are the file's.
            if v.get(2) == Some(&0) {
                e.bias = 0;
            }
        } else if name == "lttng_ust_statedump:build_id" && !v.is_empty() {
            let id: Vec<u8> = sequence(&v, 1).iter().map(|b| *b as u8).collect();
            lttng
                .entry(v[0])
                .or_insert_with(|| Mapping {
                    start: v[0],
                    end: v[0],
                    bias: v[0],
                    path: String::new(),
                    build_id: Vec::new(),
                })
                .build_id = id;
        }
        Ok::<_, anyhow::Error>(ControlFlow::Continue(()))
    })?;
    if let Some(e) = stopped {
        return Err(e.into());
    }
    for (_, m) in lttng {
        if !m.path.is_empty() {
            sym.add(m);
        }
    }
    Ok(())
}

pub fn run(a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    let mut sym = Symbolizer::new(&a.debug_dir);
    read_objects(a, &mut sym)?;

    let mut groups = Groups {
        tid: Field::new("tid"),
        vtid: Field::new("vtid"),
        vpid: Field::new("vpid"),
        procname: Field::new("procname"),
        per_thread: a.per_thread,
        per_process: a.per_process,
    };
    let mut samples: HashMap<(String, Vec<u64>), u64> = HashMap::new();
    let mut tree = CallTree::default();
    let mut nsamples = 0u64;
    let mut nfunc = 0u64;
    let mut addr_f = Field::new("addr");
    let mut ip_f = Field::in_scopes("ip", Scopes::Context);
    // (group, ip, event name) → events.
    let mut emitted: HashMap<(String, u64, String), u64> = HashMap::new();
    let mut src = Source::open(&a.read.options())?;
    let stopped = src.for_each_event(|m, ns| {
        let name = m.cursor.event_name();
        if !name.starts_with("lttng_ust_statedump:") && !name.starts_with("reef:") {
            if let Some(ip) = ip_f.get(m.cursor).and_then(|v| v.as_u64()) {
                *emitted
                    .entry((groups.key(m), ip, name.to_string()))
                    .or_default() += 1;
            }
        }
        if name == "reef:sample" {
            let v = payload_u64(m);
            let stack = sequence(&v, 1).to_vec();
            nsamples += 1;
            *samples.entry((groups.key(m), stack)).or_default() += 1;
        } else if name == "reef:func_entry"
            || (name.starts_with("lttng_ust_cyg_profile") && name.ends_with(":func_entry"))
        {
            if let Some(addr) = addr_f.get(m.cursor).and_then(|v| v.as_u64()) {
                nfunc += 1;
                tree.entry(&groups_key_thread(&mut groups, m), addr, ns);
            }
        } else if name == "reef:func_exit"
            || (name.starts_with("lttng_ust_cyg_profile") && name.ends_with(":func_exit"))
        {
            if let Some(addr) = addr_f.get(m.cursor).and_then(|v| v.as_u64()) {
                nfunc += 1;
                tree.exit(&groups_key_thread(&mut groups, m), addr, ns);
            }
        }
        Ok::<_, anyhow::Error>(ControlFlow::Continue(()))
    })?;
    tree.finish();

    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let use_events = a.events || (!a.tree && nsamples == 0 && nfunc == 0 && !emitted.is_empty());
    let use_tree = !use_events && (a.tree || (nsamples == 0 && nfunc > 0));
    if nsamples == 0 && nfunc == 0 && emitted.is_empty() {
        eprintln!(
            "reef profile: no samples (reef:sample), no function entry/exit events and no event with an ip context in the trace"
        );
    }
    let formatted = a.folded || a.speedscope || a.pprof || a.svg;
    if a.tree || (use_tree && !formatted) {
        write_tree(&mut out, &tree, &mut sym, a.per_thread || a.per_process)?;
    } else {
        let mut stacks = Stacks::default();
        if use_events {
            for ((g, ip, name), n) in &emitted {
                // `ip` is the return address of the probe's call.
                let mut stack = sym.names(ip.saturating_sub(1));
                stack.push(name.clone());
                stacks.add(g, stack, *n);
            }
        } else if use_tree {
            // Self time per path, in ns.
            for (g, root) in &tree.roots {
                let label = group_label(g, a.per_thread || a.per_process, a.per_process);
                fold_tree(&mut stacks, &label, root, &mut Vec::new(), &mut sym);
            }
        } else {
            for ((g, stack), n) in &samples {
                stacks.add(g, symbolize_stack(&mut sym, stack), *n);
            }
        }
        if a.speedscope {
            let unit = if use_tree && !use_events {
                "nanoseconds"
            } else {
                "none"
            };
            stacks.write_speedscope(&mut out, "reef profile", unit)?;
        } else if a.pprof {
            let kind = if use_events {
                reef_profile::pprof::Kind {
                    sample_type: "events",
                    unit: "count",
                    period_ns: None,
                }
            } else if use_tree {
                reef_profile::pprof::Kind {
                    sample_type: "time",
                    unit: "nanoseconds",
                    period_ns: None,
                }
            } else {
                reef_profile::pprof::Kind {
                    sample_type: "samples",
                    unit: "count",
                    period_ns: None,
                }
            };
            let key = if a.per_process { "process" } else { "thread" };
            reef_profile::pprof::write(&stacks, key, &kind, &mut out)?;
        } else if a.svg {
            let (title, unit) = if use_events {
                ("reef profile: events by where they were emitted", "events")
            } else if use_tree {
                ("reef profile: self time", "ns")
            } else {
                ("reef profile: samples", "samples")
            };
            reef_profile::svg::write(&stacks, title, unit, &mut out)?;
        } else {
            stacks.write_folded(&mut out)?;
        }
    }
    out.flush()?;
    if tree.unmatched_exits > 0 || tree.unfinished > 0 {
        eprintln!(
            "reef profile: {} function exits without an entry, {} calls unfinished at the end",
            tree.unmatched_exits, tree.unfinished
        );
    }
    let mut missing = sym.missing.clone();
    missing.sort();
    missing.dedup();
    for p in missing
        .iter()
        .filter(|p| !p.starts_with("linux-vdso") && !p.is_empty())
    {
        eprintln!("reef profile: {p}: not found or not readable (same build id); its addresses are shown as offsets");
    }
    match stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Function events pair per thread whatever the grouping asked.
fn groups_key_thread(g: &mut Groups, m: &Msg) -> String {
    let (t, p) = (g.per_thread, g.per_process);
    if !t && !p {
        g.per_thread = true;
    }
    let k = g.key(m);
    g.per_thread = t;
    if p {
        // The process, then the thread: pairing stays per thread.
        g.per_thread = false;
        let pk = g.key(m);
        g.per_thread = t;
        g.per_process = true;
        return format!("{pk}\u{1}{k}");
    }
    k
}

fn group_label(g: &str, grouped: bool, per_process: bool) -> String {
    if !grouped {
        return String::new();
    }
    match g.split_once('\u{1}') {
        Some((p, t)) => {
            if per_process {
                p.to_string()
            } else {
                t.to_string()
            }
        }
        None => g.to_string(),
    }
}

/// Innermost-first addresses to outermost-first names; return addresses
/// (all but the first) are looked up one byte back, inside their call.
fn symbolize_stack(sym: &mut Symbolizer, stack: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, &a) in stack.iter().enumerate().rev() {
        let probe = if i == 0 { a } else { a.saturating_sub(1) };
        out.extend(sym.names(probe));
    }
    out
}

fn fn_name(sym: &mut Symbolizer, addr: u64) -> String {
    sym.names(addr).pop().unwrap_or_default()
}

fn fold_tree(stacks: &mut Stacks, g: &str, n: &Node, path: &mut Vec<String>, sym: &mut Symbolizer) {
    for (addr, c) in &n.children {
        path.push(fn_name(sym, *addr));
        if c.own > 0 {
            stacks.add(g, path.clone(), c.own);
        }
        fold_tree(stacks, g, c, path, sym);
        path.pop();
    }
}

fn write_tree(
    out: &mut dyn Write,
    tree: &CallTree,
    sym: &mut Symbolizer,
    grouped: bool,
) -> std::io::Result<()> {
    fn walk(
        out: &mut dyn Write,
        n: &Node,
        depth: usize,
        sym: &mut Symbolizer,
    ) -> std::io::Result<()> {
        let mut kids: Vec<(&u64, &Node)> = n.children.iter().collect();
        kids.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
        for (addr, c) in kids {
            writeln!(
                out,
                "{:>14} {:>14} {:>8}  {}{}",
                c.total,
                c.own,
                c.calls,
                "  ".repeat(depth),
                fn_name(sym, *addr)
            )?;
            walk(out, c, depth + 1, sym)?;
        }
        Ok(())
    }
    writeln!(
        out,
        "{:>14} {:>14} {:>8}  function",
        "total ns", "self ns", "calls"
    )?;
    // Without grouping, the threads' trees are merged into one.
    let mut merged = Node::default();
    for (g, root) in &tree.roots {
        if grouped {
            writeln!(out, "# {}", g.replace('\u{1}', " "))?;
            walk(out, root, 0, sym)?;
        } else {
            merge(&mut merged, root);
        }
    }
    if !grouped {
        walk(out, &merged, 0, sym)?;
    }
    Ok(())
}

fn merge(into: &mut Node, from: &Node) {
    into.calls += from.calls;
    into.total += from.total;
    into.own += from.own;
    for (a, c) in &from.children {
        merge(into.children.entry(*a).or_default(), c);
    }
}
