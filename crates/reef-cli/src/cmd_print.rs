//! `reef print`: babeltrace2's pretty output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use reef_ctf::{EnvValue, Item, Trace, TraceClass};
use reef_iter::{find_traces, Muxer};
use reef_print::{ClockOptions, Fields, Names, Options, Pretty, TraceLabel};

use crate::output::ColorWhen;

#[derive(clap::Args)]
pub struct PrintArgs {
    /// Trace directories, or directories searched recursively for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print timestamps in seconds since the Epoch.
    #[arg(long)]
    pub clock_seconds: bool,
    /// Print the date as well as the time of day.
    #[arg(long)]
    pub clock_date: bool,
    /// Print times in UTC rather than the local time zone (TZ).
    #[arg(long)]
    pub clock_gmt: bool,
    /// Print timestamps in clock cycles.
    #[arg(long)]
    pub clock_cycles: bool,
    /// Do not print the time since the previous event.
    #[arg(long)]
    pub no_delta: bool,
    /// Which field names to print: payload, context, scope, header, all, none.
    #[arg(short = 'n', long, value_delimiter = ',')]
    pub names: Option<Vec<String>>,
    /// Which optional fields to print: trace, trace:hostname, trace:domain,
    /// trace:procname, trace:vpid, loglevel, emf, callsite, all.
    #[arg(short = 'f', long, value_delimiter = ',')]
    pub fields: Option<Vec<String>>,
    /// When to colour the output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorWhen,
}

pub fn options(a: &PrintArgs) -> anyhow::Result<Options> {
    let mut names = Names::default();
    if let Some(list) = &a.names {
        names = Names {
            payload: false,
            context: false,
            scope: false,
            header: false,
        };
        for n in list {
            match n.as_str() {
                "payload" | "arg" | "args" => names.payload = true,
                "context" | "ctx" => names.context = true,
                "scope" => names.scope = true,
                "header" => names.header = true,
                "all" => {
                    names = Names {
                        payload: true,
                        context: true,
                        scope: true,
                        header: true,
                    }
                }
                "none" => {}
                other => bail!("unknown field name kind `{other}` in --names (expected payload, context, scope, header, all or none)"),
            }
        }
    }
    let mut fields = Fields::default();
    if let Some(list) = &a.fields {
        fields = Fields {
            trace: false,
            hostname: false,
            domain: false,
            procname: false,
            vpid: false,
            loglevel: false,
            emf: false,
            callsite: false,
        };
        for f in list {
            match f.as_str() {
                "trace" => fields.trace = true,
                "trace:hostname" => fields.hostname = true,
                "trace:domain" => fields.domain = true,
                "trace:procname" => fields.procname = true,
                "trace:vpid" => fields.vpid = true,
                "loglevel" => fields.loglevel = true,
                "emf" => fields.emf = true,
                "callsite" => fields.callsite = true,
                "all" => {
                    fields = Fields {
                        trace: true,
                        hostname: true,
                        domain: true,
                        procname: true,
                        vpid: true,
                        loglevel: true,
                        emf: true,
                        callsite: true,
                    }
                }
                other => bail!("unknown field `{other}` in --fields (expected trace, trace:hostname, trace:domain, trace:procname, trace:vpid, loglevel, emf, callsite or all)"),
            }
        }
    }
    Ok(Options {
        names,
        fields,
        clock: ClockOptions {
            seconds: a.clock_seconds,
            date: a.clock_date,
            gmt: a.clock_gmt,
            cycles: a.clock_cycles,
            delta: !a.no_delta,
        },
        color: a.color.enabled(),
    })
}

/// babeltrace2's name for a trace: its `hostname` env entry, then its path
/// relative to the input directory it was found under, joined by `/`.
pub fn trace_label(trace: &Trace, input: &Path) -> TraceLabel {
    let mut name = match trace.meta().env_get("hostname") {
        Some(EnvValue::Str(s)) => s.clone(),
        _ => String::new(),
    };
    if let Ok(rel) = trace.path.strip_prefix(input) {
        let rel = rel.to_string_lossy();
        if !rel.is_empty() {
            if !name.is_empty() {
                name.push('/');
            }
            name.push_str(&rel);
        }
    }
    TraceLabel { name }
}

/// Finds and opens the traces under `paths`, with their labels. Trace
/// directories that share a trace UUID are merged into one trace, named by
/// its hostname alone, as babeltrace2 does.
pub fn open_all(paths: &[PathBuf]) -> anyhow::Result<(Vec<Arc<Trace>>, Vec<TraceLabel>)> {
    struct Found {
        class: TraceClass,
        dirs: Vec<PathBuf>,
        input: PathBuf,
    }
    let mut found: Vec<Found> = Vec::new();
    for input in paths {
        let dirs = find_traces(std::slice::from_ref(input))?;
        if dirs.is_empty() {
            bail!(
                "no CTF trace (a directory holding a `metadata` file) found under {}",
                input.display()
            );
        }
        for dir in dirs {
            let class = TraceClass::load(&dir)?;
            let same = class
                .meta
                .uuid
                .and_then(|u| found.iter_mut().find(|f| f.class.meta.uuid == Some(u)));
            match same {
                Some(f) => f.dirs.push(dir),
                None => found.push(Found {
                    class,
                    dirs: vec![dir],
                    input: input.clone(),
                }),
            }
        }
    }
    let mut traces = Vec::new();
    let mut labels = Vec::new();
    for f in found {
        let merged = f.dirs.len() > 1;
        let t = Arc::new(Trace::from_class(f.class, &f.dirs)?);
        labels.push(if merged {
            TraceLabel {
                name: match t.meta().env_get("hostname") {
                    Some(EnvValue::Str(s)) => s.clone(),
                    _ => String::new(),
                },
            }
        } else {
            trace_label(&t, &f.input)
        });
        traces.push(t);
    }
    Ok((traces, labels))
}

pub fn run(a: &PrintArgs) -> anyhow::Result<ExitCode> {
    let opts = options(a)?;
    let (traces, labels) = open_all(&a.paths)?;
    let names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
    let mut mux = Muxer::with_names(&traces, &names);
    // Which label each cursor's trace has.
    let label_of: Vec<usize> = mux
        .cursors()
        .iter()
        .map(|c| {
            traces
                .iter()
                .position(|t| Arc::ptr_eq(t, &c.trace))
                .unwrap_or(0)
        })
        .collect();
    let warn_color = crate::output::term_color_support();
    let mut pretty = Pretty::new(opts);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    let result = (|| -> anyhow::Result<()> {
        while let Some(i) = mux.next()? {
            let c = mux.cursor(i);
            let label = &labels[label_of[i]];
            match mux.item(i) {
                Item::Event => pretty.event(&mut buf, label, c, mux.time_ns(i)),
                notice => {
                    out.write_all(&buf)?;
                    buf.clear();
                    out.flush()?;
                    let mut w = Vec::new();
                    pretty.discarded(&mut w, label, c, notice, warn_color);
                    std::io::stderr().write_all(&w)?;
                }
            }
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        Ok(())
    })();
    out.write_all(&buf).context("writing output")?;
    out.flush()?;
    result?;
    Ok(ExitCode::SUCCESS)
}
