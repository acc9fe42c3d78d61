//! The reading options every reading command flattens into its
//! arguments (turned into [`reef_read::ReadOptions`]), and the progress
//! bar drawn from the reading library's byte counter.

use std::path::PathBuf;
use std::sync::Arc;

use reef_read::{ReadOptions, Source, TimeSpec};

/// Options shared by every command that reads traces.
#[derive(clap::Args, Debug, Clone)]
pub struct ReadOpts {
    /// Trace directories, or directories searched recursively for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Skip messages before this time: `YYYY-MM-DD HH:II[:SS[.NANO]]`,
    /// `HH:II[:SS[.NANO]]` (on the first message's date) or `[-]SEC[.NANO]`
    /// (from the clock's origin), as babeltrace2's --begin.
    #[arg(long, value_name = "TIME")]
    pub begin: Option<TimeSpec>,
    /// Stop after this time (same formats as --begin).
    #[arg(long, value_name = "TIME")]
    pub end: Option<TimeSpec>,
    /// Decode streams on this many worker threads (default: the number of
    /// CPUs, at most 8; 1 decodes on the main thread). The analyses write
    /// a long log's text on as many threads (at most 4).
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    /// Keep only the events for which this expression is true, e.g.
    /// `$evt.$name == "sched_*" && $evt.cpu_id == 1` (see docs/filter.md,
    /// "The filter language"). Discarded-events notices are kept.
    #[arg(long, value_name = "EXPR", value_parser = parse_filter)]
    pub filter: Option<String>,
    /// Keep only the events for which the Python file's `keep(event)` is
    /// true (after --filter); run by the reef Python package (`pip install
    /// ./python`; `REEF_PYTHON` chooses the interpreter).
    #[arg(long, value_name = "FILE.py")]
    pub script: Option<PathBuf>,
    /// Load this plugin (a shared object built against reef_plugin.h, or
    /// a Python module of reef.plugin classes; docs/plugins.md), besides
    /// those in $REEF_PLUGIN_PATH and ~/.local/share/reef/plugins.
    /// Repeatable.
    #[arg(long = "plugin", value_name = "FILE.so|FILE.py")]
    pub plugins: Vec<PathBuf>,
    /// Keep only the events the filter plugin NAME keeps (after --filter
    /// and --script), its arguments after `=`. Repeatable: all must keep.
    #[arg(long, value_name = "NAME[=ARGS]")]
    pub plugin_filter: Vec<String>,
    /// The inputs' format: `ctf` (trace directories; the default),
    /// `lttng-live` (a `net://HOST[:PORT]/host/TARGET_HOST/SESSION` read
    /// from lttng-relayd as it is recorded; `net://HOST[:PORT]` lists the
    /// relay's sessions), or a source's name (`ftrace`, `perf`, a source
    /// plugin's; `reef plugins` lists them) to read every input file that
    /// is not CTF with it. Without it, files are recognised by their
    /// content and a `net://` input is live.
    #[arg(short = 'i', long, value_name = "FORMAT")]
    pub input_format: Option<String>,
    /// For a live session: what to do when it is not, or no longer, on the
    /// relay — end the reading (the default, as `babeltrace2 -i
    /// lttng-live`), fail, or keep looking (`continue`) — as babeltrace2's
    /// `session-not-found-action`.
    #[arg(long, value_name = "ACTION", default_value = "end",
        value_parser = ["continue", "fail", "end"])]
    pub session_not_found_action: String,
}

/// The live session a command reads (`net://.../host/H/S`), if any.
pub fn live_session(r: &ReadOpts) -> anyhow::Result<Option<reef_read::lttng_live::LiveUrl>> {
    use reef_read::lttng_live::{is_live, LiveUrl};
    let live = r.paths.iter().any(|p| is_live(p));
    if r.input_format.as_deref() == Some("lttng-live") || live {
        let [p] = r.paths.as_slice() else {
            anyhow::bail!("a live reading takes one net:// address and no other input");
        };
        let url = LiveUrl::parse(&p.to_string_lossy())?;
        return Ok(Some(url));
    }
    Ok(None)
}

/// With a bare relay address (`net://HOST[:PORT]`), prints the relay's
/// sessions as babeltrace2 does and gives the exit code.
pub fn list_sessions(r: &ReadOpts) -> anyhow::Result<Option<std::process::ExitCode>> {
    let Some(url) = live_session(r)? else {
        return Ok(None);
    };
    if url.target.is_some() {
        return Ok(None);
    }
    let text = reef_read::lttng_live::list_sessions(&url)?;
    use std::io::Write;
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(Some(std::process::ExitCode::SUCCESS))
}

/// An expression option checked when the command line is parsed, so that
/// a bad one is a usage error (exit status 2) showing where it is wrong.
pub fn checked(
    s: &str,
    check: impl Fn(&str) -> Result<(), reef_filter::ExprError>,
) -> Result<String, String> {
    check(s).map(|()| s.to_string()).map_err(|e| e.render(s))
}

/// A `--filter` expression, checked.
pub fn parse_filter(s: &str) -> Result<String, String> {
    checked(s, |s| reef_filter::EventFilter::new(s).map(|_| ()))
}

/// Makes the source plugins among `plugins` and in the search path
/// readable, and reads every file with the source `input` when it names
/// one (`-i NAME`; an unknown name is a usage error, exit status 2).
pub fn use_sources(plugins: &[PathBuf], input: Option<&str>) {
    reef_plugin::install_sources(plugins);
    if let Some(f) = input {
        if f != "ctf" && f != "lttng-live" {
            if let Err(e) = reef_ctf::source::force(Some(f)) {
                eprintln!("reef: error: -i {f}: {e}");
                std::process::exit(2);
            }
        }
    }
}

impl ReadOpts {
    /// The library's options (wall-clock times in local time); a command
    /// that reads its traces once and exits sets `keep_traces`, and the
    /// analyses `lazy_plans`.
    pub fn options(&self) -> ReadOptions {
        use_sources(&self.plugins, self.input_format.as_deref());
        ReadOptions {
            paths: self.paths.clone(),
            begin: self.begin,
            end: self.end,
            gmt: false,
            workers: self.workers,
            filter: self.filter.clone(),
            script: self.script.clone(),
            keepers: reef_read::keeper::Keepers(
                self.plugin_filter
                    .iter()
                    .map(|spec| {
                        std::sync::Arc::new(reef_plugin::FilterSpec::new(
                            self.plugins.clone(),
                            spec.clone(),
                        ))
                            as std::sync::Arc<dyn reef_read::keeper::MakeKeeper>
                    })
                    .collect(),
            ),
            live_action: self.session_not_found_action.parse().unwrap_or_default(),
            keep_traces: false,
            lazy_plans: false,
        }
    }
}

/// A progress bar on stderr fed by the cursors' shared byte counter,
/// redrawn by its own thread (the reading loop does nothing for it).
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn none() -> Progress {
        Progress {
            bar: None,
            stop: Default::default(),
            thread: None,
        }
    }

    /// Shows a progress bar on stderr while `src` is read, when stderr is
    /// a terminal and `stdout_busy` is false (a command whose output goes
    /// to the same terminal gets none). Call before the first message; the
    /// bar goes when the value is dropped.
    pub fn start(src: &mut Source, stdout_busy: bool) -> Progress {
        use std::io::IsTerminal;
        if stdout_busy || !std::io::stderr().is_terminal() {
            return Progress::none();
        }
        let reef_read::Progress {
            total,
            done: counter,
        } = src.progress();
        Progress::bar(total, counter)
    }

    pub fn bar(total: u64, counter: Arc<std::sync::atomic::AtomicU64>) -> Progress {
        use std::sync::atomic::Ordering;
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr_with_hz(5),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
        ) {
            bar.set_style(style);
        }
        let stop: Arc<std::sync::atomic::AtomicBool> = Default::default();
        let (b, s) = (bar.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            // Short reads show nothing: the bar appears after a second.
            let t0 = std::time::Instant::now();
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if t0.elapsed().as_millis() >= 1000 {
                    b.set_position(counter.load(Ordering::Relaxed));
                }
            }
        });
        Progress {
            bar: Some(bar),
            stop,
            thread: Some(thread),
        }
    }

    /// Runs `f` (writing to stderr, say) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
