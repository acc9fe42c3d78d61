//! `reef listen`: receive a running program's trace from libreef's
//! `REEF_LISTEN` socket, write it as a CTF trace directory and/or print its
//! events as they arrive (receiving, checking, writing and bursts:
//! `reef_read::live`). A record that does not match what came before (a
//! metadata record that does not parse, a packet that does not decode
//! with the metadata or is not its declared size) is left out and named;
//! the rest is kept, and the command exits 1.
//!
//! Events of one burst are merged in time order; an event older than one
//! already printed (another stream's packet closed earlier) is printed
//! with an unknown delta. Times printed live can differ from a later
//! `reef print DIR` by a few nanoseconds per second (libreef's final
//! metadata, re-measuring its clock, arrives last).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use reef_ctf::Item;
use reef_print::{ClockOptions, Fields, Names, Options, Pretty};
use reef_read::live::{Burst, Listener};

use crate::output::ColorWhen;

#[derive(clap::Args)]
pub struct ListenArgs {
    /// The traced program's address: HOST:PORT, [IPV6]:PORT, :PORT or PORT
    /// (host 127.0.0.1).
    pub addr: String,
    /// Write what is received to this directory as a CTF trace (metadata and
    /// one `stream_<id>` file per stream; an earlier trace there is replaced).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Print events as they arrive, as `reef print` does (the default
    /// without -o).
    #[arg(long)]
    pub print: bool,
    /// Retry connecting for up to this many seconds.
    #[arg(long, value_name = "SECONDS", default_value = "0")]
    pub wait: f64,
    /// Print timestamps in seconds since the Epoch.
    #[arg(long)]
    pub clock_seconds: bool,
    /// Print the date as well as the time of day.
    #[arg(long)]
    pub clock_date: bool,
    /// Print times in UTC rather than the local time zone (TZ).
    #[arg(long)]
    pub clock_gmt: bool,
    /// Do not print the time since the previous event.
    #[arg(long)]
    pub no_delta: bool,
    /// When to colour the output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorWhen,
}

/// Prints the events of each burst as `reef print` does.
struct LivePrinter {
    pretty: Pretty,
    opts: Options,
    last_ns: Option<i64>,
    warn_color: bool,
}

impl LivePrinter {
    fn burst(&mut self, burst: &mut Burst) -> anyhow::Result<()> {
        let mut out = Vec::with_capacity(1 << 16);
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        let label = burst.label.clone();
        loop {
            let (item, c, ns) = match burst.next() {
                Ok(Some(m)) => (m.item, m.cursor, m.ns),
                Ok(None) => break,
                Err(e) => {
                    // What decoded before the error is shown first.
                    lock.write_all(&out)?;
                    lock.flush()?;
                    return Err(e.into());
                }
            };
            match item {
                Item::Event => {
                    if let (Some(n), Some(l)) = (ns, self.last_ns) {
                        if n < l {
                            self.pretty = Pretty::new(self.opts.clone());
                        }
                    }
                    if ns.is_some() {
                        self.last_ns = ns;
                    }
                    self.pretty.event(&mut out, &label, c, ns);
                }
                notice => {
                    lock.write_all(&out)?;
                    out.clear();
                    lock.flush()?;
                    let mut w = Vec::new();
                    self.pretty
                        .discarded(&mut w, &label, c, notice, self.warn_color);
                    std::io::stderr().write_all(&w)?;
                }
            }
            if out.len() >= 1 << 16 {
                lock.write_all(&out)?;
                out.clear();
            }
        }
        lock.write_all(&out)?;
        lock.flush()?;
        Ok(())
    }
}

pub fn run(a: &ListenArgs) -> anyhow::Result<ExitCode> {
    let print = a.print || a.output.is_none();
    let wait = Duration::from_secs_f64(a.wait.clamp(0.0, 86400.0));
    let mut listener = Listener::connect(&a.addr, wait, a.output.as_deref(), print)?;
    let opts = Options {
        names: Names::default(),
        fields: Fields::default(),
        clock: ClockOptions {
            seconds: a.clock_seconds,
            date: a.clock_date,
            gmt: a.clock_gmt,
            cycles: false,
            delta: !a.no_delta,
        },
        color: a.color.enabled(),
    };
    let mut printer = LivePrinter {
        pretty: Pretty::new(opts.clone()),
        opts,
        last_ns: None,
        warn_color: crate::output::term_color_support(),
    };
    // Whatever was received is printed and written, even after an error.
    let result = listener.receive(|b| printer.burst(b));
    let got = listener.received();
    let what = match &a.output {
        Some(d) => format!(", written to {}", d.display()),
        None => String::new(),
    };
    eprintln!(
        "reef listen: {} packets ({} bytes) of {} streams received{what}{}",
        got.packets,
        got.bytes,
        got.streams,
        if got.ended || result.is_err() {
            ""
        } else {
            "; the connection closed before the end of the trace"
        }
    );
    result?;
    if !listener.received_any() {
        bail!(
            "{}: the connection closed before any data",
            listener.name().display()
        );
    }
    let refused = listener.refused();
    if !refused.is_empty() {
        bail!(
            "{} records left out (named above){}",
            refused.len(),
            match &a.output {
                Some(d) => format!("; everything else is written to {}", d.display()),
                None => String::new(),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
