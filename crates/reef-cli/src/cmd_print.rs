//! `reef print`: babeltrace2's pretty output.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use reef_ctf::Item;
use reef_print::{ClockOptions, Fields, Names, Options, Pretty, TraceLabel};
use reef_read::Source;

use crate::output::ColorWhen;
use crate::source::{Progress, ReadOpts};

#[derive(clap::Args)]
pub struct PrintArgs {
    #[command(flatten)]
    pub read: ReadOpts,
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
    let names = match &a.names {
        Some(list) => Names::parse(list).map_err(anyhow::Error::msg)?,
        None => Names::default(),
    };
    let fields = match &a.fields {
        Some(list) => Fields::parse(list).map_err(anyhow::Error::msg)?,
        None => Fields::default(),
    };
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

pub fn run(a: &PrintArgs) -> anyhow::Result<ExitCode> {
    if let Some(code) = crate::source::list_sessions(&a.read)? {
        return Ok(code);
    }
    let opts = options(a)?;
    let mut read = a.read.options();
    read.gmt = a.clock_gmt;
    read.keep_traces = true;
    let warn_color = crate::output::term_color_support();
    let mut pretty = Pretty::new(opts.clone());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Some(url) = crate::source::live_session(&a.read)? {
        // A live session: each epoch's events as soon as they are known
        // to come before any later one (see `reef_read::lttng_live`).
        let mut live = reef_read::lttng_live::LiveRead::open(&url, read.live_action, &read)?;
        while let Some(mut src) = live.next_source()? {
            print_source(&mut src, &opts, &mut pretty, &mut out, warn_color, false)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut src = Source::open(&read)?;
    print_source(&mut src, &opts, &mut pretty, &mut out, warn_color, true)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints every message of `src` (`pretty` keeps the previous event's
/// time for the deltas across sources).
fn print_source(
    src: &mut Source,
    opts: &Options,
    pretty: &mut Pretty,
    out: &mut std::io::StdoutLock<'_>,
    warn_color: bool,
    bar: bool,
) -> anyhow::Result<()> {
    let progress = if bar {
        Progress::start(src, std::io::IsTerminal::is_terminal(&std::io::stdout()))
    } else {
        Progress::start(src, true)
    };
    // Worker threads format the events; this thread adds the timestamps
    // and deltas (which depend on the merged order) and writes.
    let label_of: std::collections::HashMap<usize, TraceLabel> = src
        .traces
        .iter()
        .zip(&src.labels)
        .map(|(t, l)| (std::sync::Arc::as_ptr(t) as usize, l.clone()))
        .collect();
    let (body_opts, label_of) = (opts.clone(), std::sync::Arc::new(label_of));
    src.render_with(std::sync::Arc::new(move || {
        Box::new(Body {
            pretty: Pretty::new(body_opts.clone()),
            labels: label_of.clone(),
            last: None,
        }) as Box<dyn reef_iter::parallel::Render>
    }));
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    let result = (|| -> anyhow::Result<()> {
        while let Some(m) = src.next()? {
            match m.item {
                Item::Event => match m.text {
                    Some(text) => {
                        pretty.event_head(&mut buf, m.cursor.event.ts, m.ns);
                        buf.extend_from_slice(text);
                    }
                    None => pretty.event(&mut buf, m.label, m.cursor, m.ns),
                },
                notice => {
                    out.write_all(&buf)?;
                    buf.clear();
                    out.flush()?;
                    let mut w = Vec::new();
                    pretty.discarded(&mut w, m.label, m.cursor, notice, warn_color);
                    progress.suspend(|| std::io::stderr().write_all(&w))?;
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
    result
}

/// Formats the part of an event line that does not depend on the
/// previous event, on a worker thread.
struct Body {
    pretty: Pretty,
    labels: std::sync::Arc<std::collections::HashMap<usize, TraceLabel>>,
    last: Option<(usize, TraceLabel)>,
}

impl reef_iter::parallel::Render for Body {
    fn render(&mut self, c: &reef_ctf::StreamCursor, ns: Option<i64>, out: &mut Vec<u8>) {
        // The label of the last trace rendered, kept: no look-up per event.
        let key = std::sync::Arc::as_ptr(&c.trace) as usize;
        if self.last.as_ref().is_none_or(|(k, _)| *k != key) {
            let label = self.labels.get(&key).cloned().unwrap_or_default();
            self.last = Some((key, label));
        }
        let label = self.last.as_ref().map(|(_, l)| l);
        let stamped = c.event.ts.is_some() && ns.is_some();
        self.pretty
            .event_body(out, label.unwrap_or(&TraceLabel::default()), c, stamped);
    }
}
