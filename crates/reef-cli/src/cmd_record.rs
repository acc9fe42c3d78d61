//! `reef record --kernel`: the kernel recorded through tracefs (ftrace's
//! per-CPU ring buffers, no LTTng modules) into a CTF trace directory.
//!
//! The events are enabled in tracefs' `set_event`, the trace clock set to
//! `mono` (CLOCK_MONOTONIC, so that the process state dump written first
//! shares the events' clock), and one thread per CPU reads that CPU's
//! `trace_pipe_raw` page by page while the command runs, converting each
//! page into a CTF packet of `DIR/cpuN` as a `.dat` file's pages are
//! (`reef_ctf::ftrace::convert`): memory stays bounded by a page per CPU.
//! The metadata is written last (the event classes met). tracefs' settings
//! are restored when it ends, on an error too.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context};
use reef_ctf::ftrace::convert::{self, CpuFeed, Writer};
use reef_ctf::ftrace::dat::Dat;
use reef_ctf::ftrace::format::{self, FieldFmt, FieldKind, Format};

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Record the kernel (through tracefs); the only source `reef record`
    /// has: programs record themselves with libreef.
    #[arg(long)]
    pub kernel: bool,
    /// Event systems (`sched`) or events (`sched:sched_switch`),
    /// comma-separated, as tracefs' `set_event` names them.
    #[arg(short = 'e', long = "events", default_value = "sched,irq")]
    pub events: String,
    /// The trace directory to write (must not exist).
    #[arg(short = 'o', long = "output", default_value = "reef-kernel-trace")]
    pub output: PathBuf,
    /// The ring buffer of each CPU, in KiB.
    #[arg(long = "buffer-size", default_value_t = 4096)]
    pub buffer_kb: u64,
    /// Record for this many seconds (without a command; Ctrl-C ends it
    /// sooner).
    #[arg(long)]
    pub duration: Option<f64>,
    /// The command to run while recording (after `--`).
    #[arg(last = true)]
    pub command: Vec<String>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// tracefs, with the settings to put back.
struct Tracefs {
    dir: PathBuf,
    saved: Vec<(&'static str, String)>,
}

impl Tracefs {
    fn open() -> anyhow::Result<Tracefs> {
        for d in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            if Path::new(d).join("events").is_dir() {
                return Tracefs::with(PathBuf::from(d));
            }
        }
        let d = "/sys/kernel/tracing";
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", d])
            .status()
            .is_ok_and(|s| s.success());
        if !ok || !Path::new(d).join("events").is_dir() {
            bail!(
                "tracefs is not mounted and cannot be (mount -t tracefs nodev {d}; root is needed)"
            );
        }
        Tracefs::with(PathBuf::from(d))
    }

    fn with(dir: PathBuf) -> anyhow::Result<Tracefs> {
        let mut t = Tracefs {
            dir,
            saved: Vec::new(),
        };
        for f in ["tracing_on", "buffer_size_kb", "trace_clock", "set_event"] {
            let v = t.read(f)?;
            let v = match f {
                "trace_clock" => v
                    .split_whitespace()
                    .find_map(|c| c.strip_prefix('[').and_then(|c| c.strip_suffix(']')))
                    .unwrap_or("local")
                    .to_string(),
                "buffer_size_kb" => v.split_whitespace().next().unwrap_or("1408").to_string(),
                _ => v,
            };
            t.saved.push((f, v));
        }
        Ok(t)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }

    fn read(&self, f: &str) -> anyhow::Result<String> {
        std::fs::read_to_string(self.path(f)).with_context(|| format!("{}", self.path(f).display()))
    }

    fn write(&self, f: &str, v: &str) -> anyhow::Result<()> {
        std::fs::write(self.path(f), v)
            .with_context(|| format!("writing {v:?} to {}", self.path(f).display()))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        for (f, v) in self.saved.iter().rev() {
            let _ = std::fs::write(
                self.path(f),
                if *f == "set_event" && v.trim().is_empty() {
                    "\n"
                } else {
                    v
                },
            );
        }
    }
}

fn now_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn uname() -> Option<String> {
    // SAFETY: utsname is plain data, filled by uname(2).
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    Some(format!(
        "{} {} {} {}",
        s(&u.sysname),
        s(&u.nodename),
        s(&u.release),
        s(&u.machine)
    ))
}

/// The statedump's event: LTTng's `lttng_statedump_process_state` names
/// (`tid`, `pid`, `ppid`, `name`), on ftrace's common fields.
fn statedump_format(id: u32, common: &[FieldFmt]) -> Format {
    let base = common.iter().map(|f| f.offset + f.size).max().unwrap_or(8);
    let int = |name: &str, offset: usize| FieldFmt {
        ty: "int".into(),
        name: name.into(),
        offset,
        size: 4,
        signed: true,
        kind: FieldKind::Scalar,
    };
    Format {
        system: "reef".into(),
        name: "lttng_statedump_process_state".into(),
        id,
        common: common.to_vec(),
        fields: vec![
            int("tid", base),
            int("pid", base + 4),
            int("ppid", base + 8),
            FieldFmt {
                ty: "char".into(),
                name: "name".into(),
                offset: base + 12,
                size: 16,
                signed: false,
                kind: FieldKind::Array(16),
            },
        ],
    }
}

/// Every thread now: (tid, pid, ppid, name).
fn processes() -> Vec<(i32, i32, i32, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(tid) = t.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read(t.path().join("stat")) else {
                continue;
            };
            // "TID (COMM) STATE PPID ...": the name may hold spaces and ')'.
            let (Some(a), Some(b)) = (
                stat.iter().position(|&c| c == b'('),
                stat.iter().rposition(|&c| c == b')'),
            ) else {
                continue;
            };
            let name = stat[a + 1..b].to_vec();
            let rest = String::from_utf8_lossy(&stat[b + 1..]);
            let ppid = rest
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            out.push((tid, pid, ppid, name));
        }
    }
    out.sort();
    out
}

pub fn run(a: &RecordArgs) -> anyhow::Result<ExitCode> {
    if !a.kernel {
        bail!("reef record records the kernel (--kernel); a program records its own events with libreef (docs/recording.md)");
    }
    if a.command.is_empty() && a.duration.is_none() {
        bail!("give a command to run while recording (reef record --kernel -- CMD ...) or --duration SECONDS");
    }
    if a.output.exists() {
        bail!(
            "{}: already exists; choose another output directory",
            a.output.display()
        );
    }
    let t = Tracefs::open()?;
    t.write("tracing_on", "0")?;
    t.write("set_event", "\n")?;
    t.write("trace", "")?;
    t.write("trace_clock", "mono")?;
    t.write("buffer_size_kb", &a.buffer_kb.to_string())?;
    let mut sel = String::new();
    for e in a.events.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        sel.push_str(&if e.contains(':') {
            e.to_string()
        } else {
            format!("{e}:*")
        });
        sel.push('\n');
    }
    t.write("set_event", &sel).with_context(|| {
        format!(
            "enabling {:?} (see {})",
            a.events,
            t.path("available_events").display()
        )
    })?;
    let enabled = t.read("set_event")?;
    if enabled.trim().is_empty() {
        bail!("no event enabled by {:?}", a.events);
    }

    // The formats of the enabled events, and the page layout.
    let mut formats = Vec::new();
    for e in enabled.lines() {
        let Some((sys, name)) = e.trim().split_once(':') else {
            continue;
        };
        let p = t.path(&format!("events/{sys}/{name}/format"));
        let text = std::fs::read_to_string(&p).with_context(|| format!("{}", p.display()))?;
        formats
            .push(format::parse(sys, &text).map_err(|m| anyhow::anyhow!("{}: {m}", p.display()))?);
    }
    let header = t.read("events/header_page")?;
    let (mut page_size, mut data_offset, mut kernel_long) = (4096, 16, 8);
    for l in header.lines().filter(|l| l.trim().starts_with("field:")) {
        if let Ok(f) = format::parse("header_page", &format!("name: h\nID: 0\n{}\n", l.trim())) {
            for f in f.fields.iter().chain(&f.common) {
                match f.name.as_str() {
                    "commit" => kernel_long = f.size,
                    "data" => {
                        data_offset = f.offset;
                        page_size = f.offset + f.size;
                    }
                    _ => {}
                }
            }
        }
    }
    let common = formats
        .iter()
        .find(|f| !f.common.is_empty())
        .map(|f| f.common.clone())
        .unwrap_or_default();
    let sd_id = formats.iter().map(|f| f.id).max().unwrap_or(0) + 1;
    if sd_id > 0xFFFF {
        bail!("event ids above 65534: no id left for the state dump");
    }
    formats.push(statedump_format(sd_id, &common));
    let mono0 = now_ns(libc::CLOCK_MONOTONIC);
    let real0 = now_ns(libc::CLOCK_REALTIME);
    let dat = Dat {
        version: 0,
        big_endian: cfg!(target_endian = "big"),
        page_size,
        compression: None,
        kernel_long,
        data_offset,
        formats,
        cmdlines: Vec::new(),
        clock: "mono".into(),
        uname: uname(),
        tool_version: Some(format!("reef record {}", env!("CARGO_PKG_VERSION"))),
        // The clock's origin is the Epoch: printed times are times of day.
        offset_ns: real0 - mono0,
        cpus: Vec::new(),
        buffer_compressed: false,
    };
    let (common, classes) = convert::classes(&dat).map_err(|m| anyhow::anyhow!("{m}"))?;
    let w = Writer {
        dat: &dat,
        common: &common,
        classes: &classes,
    };

    let mut cpus: Vec<u32> = std::fs::read_dir(t.path("per_cpu"))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("cpu")?
                .parse()
                .ok()
        })
        .collect();
    cpus.sort();
    std::fs::create_dir_all(&a.output).with_context(|| format!("{}", a.output.display()))?;
    let mut outs = Vec::new();
    for &c in &cpus {
        let p = a.output.join(format!("cpu{c}"));
        outs.push(std::io::BufWriter::with_capacity(
            1 << 16,
            std::fs::File::create(&p).with_context(|| format!("{}", p.display()))?,
        ));
    }

    // The state dump: every thread, at the start, in CPU 0's stream.
    let mut used = BTreeSet::new();
    {
        let ts = now_ns(libc::CLOCK_MONOTONIC) as u64;
        let mut pkt = Vec::new();
        convert::start_packet(
            &mut pkt,
            dat.big_endian,
            ts,
            0,
            cpus.first().copied().unwrap_or(0),
        );
        let me = std::process::id() as i32;
        let base = common_len(&dat);
        for (tid, pid, ppid, name) in processes() {
            let mut rec = vec![0u8; base + 28];
            put_field(&mut rec, &dat, "common_type", i64::from(sd_id));
            put_field(&mut rec, &dat, "common_pid", i64::from(me));
            rec[base..base + 4].copy_from_slice(&tid.to_ne_bytes());
            rec[base + 4..base + 8].copy_from_slice(&pid.to_ne_bytes());
            rec[base + 8..base + 12].copy_from_slice(&ppid.to_ne_bytes());
            let n = name.len().min(15);
            rec[base + 12..base + 12 + n].copy_from_slice(&name[..n]);
            w.event(&rec, ts, dat.big_endian, &mut pkt, &mut used)
                .map_err(|m| anyhow::anyhow!("{m}"))?;
        }
        convert::finish_packet(&mut pkt, dat.big_endian, ts);
        if let Some(o) = outs.first_mut() {
            o.write_all(&pkt)?;
        }
        // Every other CPU's stream starts then too, with an empty packet:
        // the streams' common time range (the analyses' intersection)
        // then holds the state dump.
        for (&c, o) in cpus.iter().zip(outs.iter_mut()).skip(1) {
            pkt.clear();
            convert::start_packet(&mut pkt, dat.big_endian, ts, 0, c);
            convert::finish_packet(&mut pkt, dat.big_endian, ts);
            o.write_all(&pkt)?;
        }
    }

    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let done = AtomicBool::new(false);
    let mut status = ExitCode::SUCCESS;
    type Read = (BTreeSet<u32>, convert::Counts, Option<String>);
    let results: Vec<anyhow::Result<Read>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .zip(outs.iter_mut())
            .map(|(&cpu, out)| {
                let (w, done, path) = (
                    &w,
                    &done,
                    t.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw")),
                );
                s.spawn(move || -> anyhow::Result<Read> {
                    use std::os::unix::fs::OpenOptionsExt;
                    let mut f = std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(&path)
                        .with_context(|| format!("{}", path.display()))?;
                    let mut feed = CpuFeed::new(cpu);
                    let mut used = BTreeSet::new();
                    let mut page = vec![0u8; page_size];
                    let mut damage = None;
                    loop {
                        match f.read(&mut page) {
                            Ok(n) if n == page_size => {
                                if let Some(e) = feed.page(w, &page, out, &mut used)? {
                                    damage.get_or_insert(format!(
                                        "CPU {cpu}: page {}: {}",
                                        feed.counts().pages,
                                        e.msg
                                    ));
                                }
                            }
                            Ok(n) if n > 0 => bail!(
                                "{}: a read of {n} bytes, a page ({page_size}) expected",
                                path.display()
                            ),
                            Ok(_) => {
                                if done.load(Ordering::Acquire) {
                                    break;
                                }
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                if done.load(Ordering::Acquire) {
                                    break;
                                }
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
                        }
                    }
                    out.flush()?;
                    Ok((used, feed.counts(), damage))
                })
            })
            .collect();
        let run = (|| -> anyhow::Result<()> {
            t.write("tracing_on", "1")?;
            if a.command.is_empty() {
                let end = std::time::Instant::now()
                    + Duration::from_secs_f64(a.duration.unwrap_or(0.0).max(0.0));
                while std::time::Instant::now() < end && !STOP.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            } else {
                let st = std::process::Command::new(&a.command[0])
                    .args(&a.command[1..])
                    .status()
                    .with_context(|| format!("running {}", a.command[0]))?;
                if !st.success() {
                    status = ExitCode::from(st.code().unwrap_or(1).clamp(1, 255) as u8);
                }
            }
            Ok(())
        })();
        let _ = t.write("tracing_on", "0");
        done.store(true, Ordering::Release);
        let r: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a reading thread panicked")))
            })
            .collect();
        if let Err(e) = run {
            return vec![Err(e)];
        }
        r
    });
    let (mut events, mut lost) = (0u64, 0u64);
    for r in results {
        let (u, c, damage) = r?;
        used.extend(u);
        events += c.events;
        lost += c.lost;
        if let Some(d) = damage {
            eprintln!("reef: warning: {d}");
        }
    }
    let sel: std::collections::BTreeMap<u32, &convert::Class> = used
        .iter()
        .filter_map(|id| classes.get(id).map(|c| (*id, c)))
        .collect();
    let meta = a.output.join("metadata");
    std::fs::write(&meta, convert::metadata(&dat, &common, &sel))
        .with_context(|| format!("{}", meta.display()))?;
    eprintln!(
        "reef: recorded {events} kernel events on {} CPUs ({lost} lost) into {}",
        cpus.len(),
        a.output.display()
    );
    Ok(status)
}

/// The byte length of the common fields.
fn common_len(dat: &Dat) -> usize {
    dat.formats
        .iter()
        .find(|f| !f.common.is_empty())
        .map(|f| {
            f.common
                .iter()
                .map(|c| c.offset + c.size)
                .max()
                .unwrap_or(8)
        })
        .unwrap_or(8)
}

/// Sets common field `name` of a record.
fn put_field(rec: &mut [u8], dat: &Dat, name: &str, v: i64) {
    let Some(f) = dat
        .formats
        .iter()
        .find_map(|f| f.common.iter().find(|c| c.name == name))
    else {
        return;
    };
    let b = v.to_ne_bytes();
    let n = f.size.min(8);
    if let Some(dst) = rec.get_mut(f.offset..f.offset + n) {
        if cfg!(target_endian = "big") {
            dst.copy_from_slice(&b[8 - n..]);
        } else {
            dst.copy_from_slice(&b[..n]);
        }
    }
}
