//! `reef view`: builds the index of the traces and serves the web page
//! and its API (crates/reef-view, docs/view-api.md).

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use reef_view::index::{Phase, View};
use reef_view::live::Slot;

use crate::source::{Progress, ReadOpts};

#[derive(clap::Args)]
#[command(mut_arg("paths", |a| a.required(false)))]
pub struct ViewArgs {
    #[command(flatten)]
    pub read: ReadOpts,
    /// Address to listen on. Anything but a loopback address makes the
    /// traces readable by whoever reaches this machine.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8400)]
    pub port: u16,
    /// Also open the page in the default browser.
    #[arg(long)]
    pub open: bool,
    /// Memory for the index's buckets, in MiB (default: 1.25 % of the
    /// traces' size, from 4 to 32 MiB); finer windows are decoded from the
    /// trace on demand.
    #[arg(long, value_name = "MIB")]
    pub index_memory: Option<f64>,
    /// Decode a window finer than the index only when the index's finest
    /// buckets over it hold at most this many events; answer coarser
    /// past that.
    #[arg(long, value_name = "N", default_value_t = reef_view::index::DECODE_MARKS, hide = true)]
    pub decode_marks: u64,
    /// Stream data between the index's checkpoints, in bytes (default:
    /// 1/512 of the traces, at least 2 MiB); for tests.
    #[arg(long, value_name = "BYTES", hide = true)]
    pub checkpoint_bytes: Option<u64>,
    /// Show a running program's trace as it arrives: connect to its
    /// libreef `REEF_LISTEN` address (HOST:PORT, [IPV6]:PORT, :PORT or
    /// PORT), or follow an LTTng live session
    /// (net://HOST[:PORT]/host/TARGET_HOST/SESSION, also given as the
    /// path), instead of reading trace paths.
    #[arg(long, value_name = "ADDR", conflicts_with = "paths")]
    pub live: Option<String>,
    /// Live: keep what is received in this directory, as `reef listen
    /// -o` (default: a temporary directory, removed when reef view exits).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<std::path::PathBuf>,
    /// Live: retry connecting (libreef), or wait for the session's
    /// metadata (LTTng; at least 10 s), for up to this many seconds.
    #[arg(long, value_name = "SECONDS", default_value = "0")]
    pub wait: f64,
}

pub fn run(a: &ViewArgs) -> anyhow::Result<ExitCode> {
    let budget = a.index_memory.map(|m| (m * 1048576.0).max(0.0) as u64);
    reef_view::tune_allocator();
    let sizes = reef_view::index::Sizes {
        budget,
        decode_marks: a.decode_marks,
        spacing: a.checkpoint_bytes,
    };
    // An LTTng live session: `reef view net://...` as `reef print
    // net://...`, or `--live net://...`.
    let mut ropts = a.read.clone();
    if let Some(l) = a.live.as_deref().filter(|l| l.starts_with("net://")) {
        ropts.paths = vec![l.into()];
    }
    if let Some(code) = crate::source::list_sessions(&ropts)? {
        return Ok(code);
    }
    let lttng = crate::source::live_session(&ropts)?;
    if (a.output.is_some() || a.wait != 0.0) && a.live.is_none() && lttng.is_none() {
        anyhow::bail!("-o and --wait apply to a live view (--live ADDR or a net:// session)");
    }
    // A script sees the events in time order, the index is built stream
    // by stream: the traces are cut to the script's events first (`reef
    // convert --to ctf --script`), into a directory removed at exit.
    let mut scripted: Option<ScriptedDir> = None;
    let mut read = a.read.options();
    if read.script.is_some() || !read.keepers.is_empty() {
        anyhow::ensure!(
            a.live.is_none() && lttng.is_none(),
            "--script and --plugin-filter do not apply to a live view"
        );
        let top = std::env::temp_dir().join(format!("reef-view-script-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let guard = ScriptedDir(top.clone());
        // One input that is a trace is written as the directory itself:
        // under its own name, so that the view names it as before.
        let out = match read.paths.as_slice() {
            [one] => top.join(one.file_name().unwrap_or(std::ffi::OsStr::new("trace"))),
            _ => top.join("traces"),
        };
        eprintln!("reef view: running the script or plugin filters over the traces ...");
        let (sum, stopped) = crate::cmd_convert::write_ctf(read.clone(), &out, None)?;
        eprintln!(
            "reef view: the traces cut to the events kept ({} packets copied, {} written again)",
            sum.packets_copied, sum.packets_written
        );
        if let Some(e) = stopped {
            eprintln!("reef view: showing the events before this error: {e}");
        }
        read = reef_read::ReadOptions {
            workers: read.workers,
            ..reef_read::ReadOptions::new([out])
        };
        scripted = Some(guard);
    }
    let (slot, live) = match (&a.live, lttng) {
        (_, Some(url)) => {
            let wait = Duration::from_secs_f64(a.wait.clamp(0.0, 86400.0));
            let slot =
                reef_view::live::start_lttng(&url, a.output.clone(), wait, ropts.options(), sizes)?;
            (slot, true)
        }
        (Some(addr), None) => {
            let wait = Duration::from_secs_f64(a.wait.clamp(0.0, 86400.0));
            let slot =
                reef_view::live::start(addr, a.output.clone(), wait, a.read.options(), sizes)?;
            (slot, true)
        }
        (None, None) => {
            if a.read.paths.is_empty() {
                anyhow::bail!("give trace paths, or --live ADDR");
            }
            (Slot::new(View::open(read, sizes)?, None), false)
        }
    };
    let view = slot.view();
    let addr = SocketAddr::new(a.bind, a.port);
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let host = match local.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let url = format!("http://{host}:{}/", local.port());
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{url}")?;
        out.flush()?;
    }
    if a.open {
        let _ = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    if let Some(l) = &slot.live {
        let s = l.status();
        eprintln!(
            "reef view: receiving {} into {}{}",
            s.addr,
            s.dir,
            if s.kept {
                ""
            } else {
                " (removed when reef view exits)"
            }
        );
    }
    // The terminal shows the index being built, then its end.
    let v = view.clone();
    std::thread::spawn(move || {
        if live {
            return;
        }
        use std::io::IsTerminal;
        let done = v.base.read().map(|b| b.marks.done.clone());
        let bar = match done {
            Ok(d) if std::io::stderr().is_terminal() => Some(Progress::bar(v.total, d)),
            _ => None,
        };
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let phase = v
                .base
                .read()
                .map(|b| (b.marks.phase.clone(), b.marks.events));
            match phase {
                Ok((Phase::Building, _)) => continue,
                Ok((Phase::Ready, n)) => {
                    drop(bar);
                    eprintln!("reef view: {n} events indexed");
                }
                Ok((Phase::Error(e), n)) => {
                    drop(bar);
                    eprintln!("reef view: {n} events indexed, then: {e}");
                }
                Err(_) => {}
            }
            return;
        }
    });
    let served = reef_view::server::serve(slot.clone(), listener);
    if let Some(d) = slot.live.as_ref().and_then(|l| l.temporary_dir()) {
        let _ = std::fs::remove_dir_all(d);
    }
    drop(scripted);
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The traces cut to a script's events, removed when dropped.
struct ScriptedDir(std::path::PathBuf);

impl Drop for ScriptedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
