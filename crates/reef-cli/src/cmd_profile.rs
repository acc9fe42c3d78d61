//! `reef profile`: sampled call stacks (`reef:sample`) and function
//! entry/exit (`reef:func_entry/exit`, LTTng-UST's
//! `lttng_ust_cyg_profile*:func_entry/func_exit`), symbolized with the
//! objects the trace recorded (`reef:object`, `lttng_ust_statedump:*`),
//! as folded stacks, speedscope JSON, pprof, an SVG flame graph or a
//! call tree with self and total time.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reef_profile::collect::{self, Grouping, Measure};
use reef_profile::{CallTree, Node, Symbolizer};

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
    /// Name each address by its function alone, without the functions
    /// DWARF says were inlined there (as `perf script` and `perf report
    /// --no-inline` do).
    #[arg(long)]
    pub no_inline: bool,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    // The objects from the whole trace first (a window or a filter must
    // not hide them), then the reading's samples and calls.
    let mut sym = Symbolizer::new(&a.debug_dir);
    sym.inline = !a.no_inline;
    collect::read_objects(&a.read.options(), &mut sym)?;
    let grouping = Grouping {
        per_thread: a.per_thread,
        per_process: a.per_process,
    };
    let c = collect::collect(&a.read.options(), grouping, &mut |_| true)?;
    let (nsamples, nfunc, tree) = (c.nsamples, c.nfunc, &c.tree);

    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let use_events = a.events || (!a.tree && nsamples == 0 && nfunc == 0 && !c.emitted.is_empty());
    let use_tree = !use_events && (a.tree || (nsamples == 0 && nfunc > 0));
    if nsamples == 0 && nfunc == 0 && c.emitted.is_empty() {
        eprintln!(
            "reef profile: no samples (reef:sample), no function entry/exit events and no event with an ip context in the trace"
        );
    }
    let formatted = a.folded || a.speedscope || a.pprof || a.svg;
    if a.tree || (use_tree && !formatted) {
        write_tree(&mut out, tree, &mut sym, a.per_thread || a.per_process)?;
    } else {
        let measure = if use_events {
            Measure::Events
        } else if use_tree {
            Measure::Time
        } else {
            Measure::Samples
        };
        let stacks = c.stacks(measure, &mut sym);
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
    match c.stopped {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn fn_name(sym: &mut Symbolizer, addr: u64) -> String {
    sym.names(addr).pop().unwrap_or_default()
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
